import { defineRule } from '../../core/rule';
import { indentAt, lineEnd, lineStart } from '../../core/edits';
import type { Node } from '../../core/parse';
import { methodName } from '../../core/semantics';
import { autocastCall } from './util';

/** Statements that belong after the forward pass: backward, optimizer and scaler bookkeeping. */
const STEP_STMT = /\.(backward|step|zero_grad|update|unscale_)\(|\b(optimizer_step|clip_grad_norm_|clip_grad_value_)\(/;

export default defineRule({
  id: 'TPU306',
  name: 'autocast-wraps-backward',
  title: 'Autocast region wraps backward or the optimizer step',
  severity: 'info',
  step: 5,
  effort: 1,
  message: 'Autocast should wrap only the forward pass and the loss',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Move backward and the step out of the autocast block' },
  triggers: ['autocast'],
  docs: {
    what:
      'Checks for a `with torch.autocast(...)` / `autocast(...)` block (any spelling: CUDA, `torch.amp`, `torch_xla.amp`, the generated `accel.autocast()`) whose body calls ' +
      '`.backward(`, `optimizer.step(`, `xm.optimizer_step(` or `scaler.step(`.',
    why:
      '"`autocast` should wrap only the forward pass(es) and loss computation(s) of the network. Backward ops run in the same type that autocast used for the corresponding forward ops" (AMP:48-50). ' +
      'Running backward and the optimizer update under autocast adds casts to the traced graph for no benefit; PyTorch\'s own AMP guidance says the same.',
    example: 'with torch.autocast("xla", dtype=torch.bfloat16):\n    loss = crit(model(x), y)\n    loss.backward()\n    optimizer.step()',
    useInstead: 'with torch.autocast("xla", dtype=torch.bfloat16):\n    loss = crit(model(x), y)\nloss.backward()\noptimizer.step()',
    fixSafety:
      'Safe: the fix dedents the trailing backward/step statements (and the `zero_grad`, `clip_grad_norm_`, `scaler.update()` bookkeeping between them) out of the `with` block, ' +
      'keeping their order. It is offered only when those statements end the block, the block keeps at least one statement, and the `with` has no other context manager.',
    sources: ['AMP (docs/source/perf/amp.md:48-50, "AMP for XLA:TPU Best Practices")', 'PT: torch.amp documentation, "Autocasting" (backward passes under autocast are not recommended)'],
    torchtpu: 'Same detection and fix for `torch.autocast("tpu", ...)`.',
  },
  check(ctx) {
    for (const w of ctx.sema.nodes('with_statement')) {
      const clause = w.namedChildren.find((c) => c?.type === 'with_clause');
      const items = clause?.namedChildren.filter((c): c is Node => !!c && c.type === 'with_item') ?? [];
      const acItem = items.find((it) => {
        const v = it.childForFieldName('value') ?? it.namedChildren[0];
        const call = v?.type === 'as_pattern' ? v.namedChildren[0] : v;
        return call?.type === 'call' && !!autocastCall(ctx, call);
      });
      if (!acItem) continue;
      const body = w.childForFieldName('body');
      if (!body) continue;
      // train-step calls directly in this block (not in nested function definitions)
      const offending = ctx.sema.callsWithin(body).find((c) => {
        if (!ctx.sema.isTrainSignal(c)) return false;
        for (let p = c.parent; p && p.id !== body.id; p = p.parent) if (p.type === 'function_definition' || p.type === 'lambda') return false;
        return true;
      });
      if (!offending) continue;

      // fix: the trailing step statements leave the block
      const stmts = body.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
      let k = stmts.length;
      while (k > 0 && STEP_STMT.test(stmts[k - 1].text) && stmts[k - 1].type === 'expression_statement') k--;
      const moved = stmts.slice(k);
      const movesOffending = moved.some((s) => offending.startIndex >= s.startIndex && offending.endIndex <= s.endIndex);
      const singleLine = w.text.split('\n')[0].trimEnd().endsWith(':') && body.startPosition.row > w.startPosition.row;
      let fix = null;
      if (items.length === 1 && k > 0 && moved.length && movesOffending && singleLine && !moved.some((s) => /"""|'''/.test(s.text))) {
        const withIndent = indentAt(ctx.text, w.startIndex);
        const bodyIndent = indentAt(ctx.text, moved[0].startIndex);
        const start = lineStart(ctx.text, moved[0].startIndex);
        const end = lineEnd(ctx.text, moved[moved.length - 1].endIndex);
        if (bodyIndent.startsWith(withIndent) && bodyIndent.length > withIndent.length) {
          const block = ctx.text.slice(start, end);
          const dedented = block
            .split('\n')
            .map((l) => (l.startsWith(bodyIndent) ? withIndent + l.slice(bodyIndent.length) : l))
            .join('\n');
          fix = { title: 'Move backward and the step out of the autocast block', edits: [{ start, end, text: dedented }] };
        }
      }
      const what = methodName(offending) === 'backward' ? `\`${offending.text.length > 40 ? '….backward()' : offending.text}\`` : `\`${offending.text.length > 40 ? offending.text.slice(0, 37) + '…' : offending.text}\``;
      ctx.report(offending, {
        message: `${what} runs inside the autocast region: autocast should wrap only the forward pass and the loss`,
        fix,
      });
    }
  },
});
