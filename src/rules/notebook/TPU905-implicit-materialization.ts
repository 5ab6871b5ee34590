import { defineRule, type FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import { insertAt } from '../../core/edits';
import { downgrade } from '../../core/engine';
import { detectEol } from '../../core/source';
import { isDeviceWait, isModelCall, runsDeviceWork, xlaContext } from '../perf/util';

const HOST_READ = /\.(cpu|item|numpy|tolist)\(\)\s*$/;

export default defineRule({
  id: 'TPU905',
  name: 'implicit-materialization-in-cells',
  title: 'Implicit materialization and misleading timing in cells',
  severity: 'info',
  step: 9,
  effort: 1,
  message: 'This cell reads an XLA tensor implicitly, which forces the graph to run and copies the value to the host',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Make the host read explicit' },
  triggers: ['torch_xla', 'accel'],
  notebookOnly: true,
  docs: {
    what:
      'Checks XLA notebooks for cells whose last expression is a tensor (IPython displays its value), `print(t)` / `display(t)` of tensors inside training loops, ' +
      'and `%time` / `%%time` / `%timeit` on cells that run device work without waiting for the device.',
    why:
      'Reading an XLA tensor\'s value executes the pending graph and copies the result to the host (TS; TPU201), so a displayed tensor or a per-step print adds a ' +
      'sync. Timing without `torch_xla.sync(); xm.wait_device_ops()` measures tracing, not execution (TVE).',
    example: "%%time\nfor x, y in loader:\n    train_step(x, y)\n\nloss",
    useInstead: "%%time\nfor x, y in loader:\n    train_step(x, y)\ntorch_xla.sync(); xm.wait_device_ops()\n\nloss.item()",
    fixSafety:
      'Unsafe: a trailing `;` hides the cell output the user may want (call `.cpu()` or `.item()` deliberately instead); the wait added to a timed cell ' +
      'changes what is measured, which is the point. Per-step prints have no automatic fix (see TPU201 for step closures).',
    sources: ['TS (docs/source/learn/troubleshoot.md)', 'TVE (docs/source/learn/trace-vs-execution-time.md)', 'EX:debug/train_resnet_benchmark.py'],
    torchtpu: 'The same reads force execution on the native device; the timing fix needs a device wait the preview does not document, so none is offered.',
  },
  check(ctx) {
    if (!xlaContext(ctx) || !ctx.notebook) return;
    const sema = ctx.sema;
    const text = ctx.text;
    const eol = detectEol(text);
    const spans = ctx.notebook.spans;
    const top = sema.root.namedChildren.filter((n): n is Node => !!n && n.type !== 'comment');
    const wait = ctx.idiom.waitDeviceOps();

    // 1. a cell ending in a tensor expression
    for (const span of spans) {
      const stmts = top.filter((n) => n.startIndex >= span.start && n.endIndex <= span.end);
      const last = stmts[stmts.length - 1];
      if (!last || last.type !== 'expression_statement' || last.namedChildren.length !== 1) continue;
      const expr = last.namedChildren[0]!;
      if (expr.type === 'assignment' || HOST_READ.test(expr.text) || !ctx.model.isDeviceTensor(expr)) continue;
      if (/^[ \t]*;/.test(text.slice(last.endIndex, last.endIndex + 20))) continue;
      if (expr.type === 'call' && !isModelCall(expr) && !ctx.model.isDeviceTensor(expr)) continue;
      ctx.report(expr, {
        message: `The cell ends with \`${expr.text.length > 30 ? expr.text.slice(0, 27) + '…' : expr.text}\`: displaying it runs the XLA graph and copies the tensor to the host`,
        fix: { title: 'End the cell with `;`', edits: [insertAt(last.endIndex, ';')] },
      });
    }

    // 2. print/display of tensors in training loops
    for (const call of sema.nodes('call')) {
      const fn = call.childForFieldName('function');
      if (fn?.type !== 'identifier' || (fn.text !== 'print' && fn.text !== 'display')) continue;
      const hot = sema.hot(call);
      if (!hot) continue;
      const args = call.childForFieldName('arguments')?.namedChildren.filter((a): a is Node => !!a && a.type !== 'keyword_argument') ?? [];
      const t = args.find((a) => ctx.model.isDeviceTensor(a) && !HOST_READ.test(a.text));
      if (!t) continue;
      ctx.report(call, {
        severity: hot.throttled || hot.kind === 'eval' ? downgrade('info') : 'info',
        message: `\`${fn.text}(${t.text})\` in a training loop runs the graph and copies \`${t.text}\` to the host every time it runs`,
      });
    }

    // 3. timing magics
    for (const m of ctx.notebook.magics) {
      const cellMagic = /^\s*%%(time|timeit)\b/.exec(m.text);
      const lineMagic = /^\s*%(time|timeit)\s+(.*\S)\s*$/.exec(m.text);
      if (m.kind === '%%' && cellMagic) {
        const span = spans.find((s) => s.cell === m.cell)!;
        const stmts = top.filter((n) => n.startIndex >= span.start && n.endIndex <= span.end);
        if (!stmts.some((s) => runsDeviceWork(ctx, s))) continue;
        if (stmts.some((s) => sema.callsWithin(s).some((c) => isDeviceWait(ctx, c)))) continue;
        let fix: FixDraft | null = null;
        if (wait) {
          const cellText = text.slice(span.start, span.end);
          const edit = /\r?\n$/.test(cellText) ? insertAt(span.end, `${wait.text}${eol}`) : insertAt(span.end, `${eol}${wait.text}`);
          fix = { title: `Wait for the device at the end of the timed cell`, edits: [edit], imports: wait.imports, needsAccel: wait.needsAccel };
        }
        ctx.report({ start: m.start, end: m.end }, {
          message: `\`%%${cellMagic[1]}\` times a cell that runs XLA work without waiting for the device: it measures tracing, not execution`,
          fix,
        });
      } else if (m.kind === '%' && lineMagic) {
        const code = lineMagic[2];
        if (/wait_device_ops|wait=True|\.item\(\)|\.cpu\(\)/.test(code)) continue;
        const names = [...code.matchAll(/([A-Za-z_][\w.]*)\s*\(/g)].map((x) => x[1]);
        const work = names.some((n) => {
          const last = n.split('.').pop()!;
          if (/^(model|net|module|ddp_model|raw_model|compiled_model)$/i.test(last) || /_model$/i.test(last)) return true;
          return sema.nodes('function_definition').some((f) => {
            if (f.childForFieldName('name')?.text !== last) return false;
            const body = f.childForFieldName('body');
            return !!body && runsDeviceWork(ctx, body);
          });
        });
        if (!work) continue;
        ctx.report({ start: m.start, end: m.end }, {
          message: `\`%${lineMagic[1]}\` times XLA work without waiting for the device: it measures tracing, not execution`,
          fix: wait ? { title: 'Wait for the device inside the timed statement', edits: [insertAt(m.end, `; ${wait.text}`)], imports: wait.imports, needsAccel: wait.needsAccel } : null,
        });
      }
    }
  },
});
