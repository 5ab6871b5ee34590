import { defineRule, type FixDraft, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, kwValue } from '../../core/semantics';
import { replace, replaceRange } from '../../core/edits';
import { countSize, hotAt, inParameterReadLoop, pythonReduction, severityIn, short, tensorCondition, tensorish, torchName } from './util';
import { torchRandomDraw } from './random-draw';

export default defineRule({
  id: 'TPU202',
  name: 'data-dependent-control-flow',
  title: 'Data-dependent Python control flow and value checks',
  severity: 'warning',
  step: 6,
  effort: 3,
  message: 'Python control flow on a tensor value forces the graph to execute and can compile one graph per branch',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Rewrite the branch with torch.where' },
  deviceWork: true,
  triggers: ['if ', 'while ', 'assert ', ' and ', ' or ', 'not ', 'error_if_nonfinite', 'detect_anomaly'],
  docs: {
    what:
      'Checks, in a hot loop or `forward`, for `if`/`elif`/`while`/`assert`/ternary tests and `and`/`or`/`not` operands whose value is a tensor ' +
      '(`if loss > thr:`, `if torch.isnan(loss):`, `while (err > eps).any():`, `assert torch.isfinite(loss)`, `if not torch.isfinite(grad_norm): continue`; a device value\'s membership in a list, tuple or device tensor, `if y[0] in ignore_ids:`, which compares and reads each item; not in a set or dict, which hashes the tensor by identity), ' +
      'except a branch in a loop over the parameters that also reads values to the host (TPU201 reports that loop once, the branch related), ' +
      '`clip_grad_norm_(..., error_if_nonfinite=True)`, and anomaly detection left on (`torch.autograd.set_detect_anomaly(True)`, `detect_anomaly()`). ' +
      'A `with torch.no_grad():` block inside a per-view loop of the step (`for v in views: with torch.no_grad(): if not torch.all(queue[v, -1] == 0):`, a SwAV-style queue) is step work, a warning; only a no_grad block that holds its own loop (a validation pass) is eval work. ' +
      'Python\'s `all()`/`any()` in a test over a device tensor (`if all(done):`, iterating it reads every element) or over a generator of tensor tests (`if any(not torch.isfinite(p.grad).all() for p in params):`, a hand-rolled loss-scale check); in a decode loop outside training that test is reported by TPU205 (info). ' +
      'A counter that accumulates a device tensor (`self.tokens += (y >= 0).sum()`) tested in a comparison (`if self.tokens < warmup_tokens:`) is a tensor test too. ' +
      'Also branches on the size of a data-dependent count (`npr = pred.shape[0]` of an NMS result, `nl = labels.shape[0]` of a boolean-mask selection, then `if npr == 0:`), once per loop; ' +
      'and a tensor from the step tested in the loop around the minibatch loop when that loop runs inside another one (PPO: `if approx_kl > target_kl: break` per update epoch), info. ' +
      'An outermost epoch loop testing the last loss is not flagged. Tests on Python scalars, configuration, the step counter, `.shape`/`.size()`, or `is None` are not flagged, nor the truthiness of a name bound to a dict or list (`output_dict = {}` … `if output_dict:`) or read with string keys in the function (`if not batch:` … `batch["input_ids"]`), nor a `forward` argument that every call of the module\'s instances passes as a Python int (`self.attention(enc, query, t)` with `t` from `range(...)`), or that every `Fn.apply(...)` of an autograd Function passes as a Python bool (`ctx.bias = bias is not None`); `.item()` reads are TPU201. ' +
      'Eval loops and throttled code get info.',
    why:
      'A Python branch on a tensor needs its value now: "Even if `x[0][0]` was a Tensor, we need to execute/materialize its value for python interpreter to proceed. ' +
      'And different branch choices … means we have a lot of graph to compile" (RECOMP, "#3. From control flow"). The troubleshooting guide recommends ' +
      '`torch.where` instead (TS:324-346). Reading the real size of a dynamic-shape tensor "forces XLA to cut the graph and evaluate" (RECOMP §2.2, recompilation.md:59-65). The torch_xla-patched `clip_grad_norm_` evaluates `total_norm.isnan() or total_norm.isinf()` in Python when ' +
      '`error_if_nonfinite=True` (PATCH:49-53). Anomaly mode is a debugging aid that inspects every backward result (its sync cost on XLA is unverified).',
    example: 'if loss > max_loss:\n    loss = loss * 0.1',
    useInstead: 'loss = torch.where(loss > max_loss, loss * 0.1, loss)',
    fixSafety:
      'Unsafe. The `torch.where` rewrite is offered only for `if <tensor test>: x = a` (optionally `else: x = b`) where `x` is already a tensor: ' +
      'both branches are now computed and broadcast, and a multi-element test no longer raises; tpu-only style only (dual-path keeps CPU and CUDA results). ' +
      'Dropping `error_if_nonfinite=True` stops the NaN/inf check from raising (dual-path: `error_if_nonfinite=not accel.is_xla()`, so CPU and CUDA still raise); ' +
      'log the norm through a step closure instead. NaN guards (`if not torch.isfinite(g): continue`) need a redesign (mask the update with tensor math).',
    sources: [
      'RECOMP #3 "From control flow" (docs/source/perf/recompilation.md)',
      'TS:324-346 (docs/source/learn/troubleshoot.md: use torch.where instead of control flow)',
      'RECOMP §2.2 (docs/source/perf/recompilation.md:59-65: querying the size of a dynamic-shape tensor cuts the graph)',
      'PATCH:49-53 (torch_xla/_patched_functions.py, clip_grad_norm_ with error_if_nonfinite)',
    ],
    torchtpu: '`torch.where` is plain PyTorch, so the same rewrite is offered on the torchtpu preview.',
  },
  check(ctx) {
    const seen = new Set<number>();
    const flag = (node: Node, what: string, fix: FixDraft | null = null, message?: string) => {
      if (seen.has(node.id)) return;
      if (torchRandomDraw(ctx, node)) return; // a branch on a fresh random draw is TPU205 (random branch), named there
      const hot = hotAt(ctx, node);
      if (!hot) return;
      // `if clip_coef < 1:` in a per-parameter loop that also calls `.item()`: TPU201's finding on that loop names it
      if (inParameterReadLoop(ctx, node, hot)) return;
      seen.add(node.id);
      ctx.report(node, {
        severity: severityIn('warning', hot),
        message: message ?? `${what} needs the tensor's value on the host: the graph runs early and each branch outcome can compile a new graph; keep it in tensor math (\`torch.where\`, \`torch.clamp\`) or check a value you already read on the host`,
        fix,
      });
    };

    // `if npr == 0:` / `if nl:` with `npr = pred.shape[0]` of an NMS result or a mask selection: once per loop body
    const countReported = new Set<number>();
    const countBranch = (cond: Node, word: string) => {
      const hot = hotAt(ctx, cond);
      if (!hot) return false;
      const size = countCondition(ctx, cond);
      if (!size) return false;
      let loop: Node | null = cond.parent;
      while (loop && loop.type !== 'for_statement' && loop.type !== 'while_statement' && loop.type !== 'function_definition') loop = loop.parent;
      const key = loop?.id ?? -1;
      if (countReported.has(key)) return true;
      countReported.add(key);
      seen.add(cond.id);
      ctx.report(cond, {
        severity: severityIn('warning', hot),
        message: `\`${word} ${short(cond.text, 30)}\` branches on the size of \`${short(size.of.text, 20)}\` (${size.source}), a count only the data decides: reading it runs the graph early (a host sync) and each branch is a different graph; keep fixed-size padded results with a validity mask, or do this bookkeeping on the host after the step`,
      });
      return true;
    };
    // `if approx_kl > target_kl: break` in the PPO update-epoch loop, right after its minibatch loop: once per update epoch
    const epochLevel = (cond: Node, word: string) => {
      if (!tensorCondition(ctx, cond) || ctx.sema.hot(cond)) return;
      const loop = stepEnclosingLoop(ctx, cond);
      if (!loop) return;
      seen.add(cond.id);
      ctx.report(cond, {
        severity: 'info',
        message: `\`${word} ${short(cond.text, 30)}\` tests a tensor from the training step in the loop around it, once per pass of the inner loop and that loop runs inside another one: each test reads the value to the host (a sync); compare on the host from a value you already log, or keep the check in tensor math`,
      });
    };

    // `if all(done):`, `if any(not torch.isfinite(p.grad).all() for p in params):` — Python's all/any over device values
    const reduction = (cond: Node | null | undefined, word: string) => {
      const r = cond ? pythonReduction(ctx, cond) : null;
      if (!cond || !r) return false;
      flag(cond, '', null, `\`${word} ${short(cond.text, 36)}\`: Python's \`${r.fn}()\` ${r.perElement ? `iterates the device tensor \`${short(r.over.text, 20)}\`, reading each element to the host` : `tests \`${short(r.over.text, 30)}\` on the host for each item, one device read per item`}: the graph runs early; reduce on the device (\`${r.fn === 'all' ? 'torch.all' : 'torch.any'}\`/\`torch.stack\`) and read one value, or keep the decision in tensor math`);
      return true;
    };
    for (const stmt of ctx.sema.nodes('if_statement')) {
      const cond = stmt.childForFieldName('condition');
      if (reduction(cond, 'if')) continue;
      if (cond && !tensorCondition(ctx, cond)) countBranch(cond, 'if');
      if (cond && tensorCondition(ctx, cond) && !ctx.sema.hot(cond)) epochLevel(cond, 'if');
      if (cond && tensorCondition(ctx, cond)) flag(cond, `\`if ${short(cond.text, 36)}\``, whereFix(ctx, stmt, cond));
      for (const alt of stmt.childrenForFieldName('alternative')) {
        const c = alt?.type === 'elif_clause' ? alt.childForFieldName('condition') : null;
        if (c && !tensorCondition(ctx, c)) countBranch(c, 'elif');
      if (c && tensorCondition(ctx, c)) flag(c, `\`elif ${short(c.text, 36)}\``);
      }
    }
    for (const stmt of ctx.sema.nodes('while_statement')) {
      const cond = stmt.childForFieldName('condition');
      if (reduction(cond, 'while')) continue;
      if (cond && tensorCondition(ctx, cond)) flag(cond, `\`while ${short(cond.text, 36)}\``);
    }
    for (const stmt of ctx.sema.nodes('assert_statement')) {
      const cond = stmt.namedChildren[0];
      if (cond && tensorCondition(ctx, cond)) flag(cond, `\`assert ${short(cond.text, 36)}\``);
    }
    for (const ce of ctx.sema.nodes('conditional_expression')) {
      const cond = ce.namedChildren[1];
      if (cond && tensorCondition(ctx, cond)) flag(cond, `Conditional expression on \`${short(cond.text, 36)}\``);
    }
    // `ok = torch.isfinite(loss) and step > 0`: boolean operators used as values
    for (const type of ['boolean_operator', 'not_operator']) {
      for (const op of ctx.sema.nodes(type)) {
        if (insideTest(op)) continue;
        const operands = type === 'not_operator' ? [op.childForFieldName('argument') ?? op.namedChildren[0]] : op.namedChildren;
        const t = operands.find((o) => o && tensorish(ctx, o, true));
        if (t) flag(op, `\`${type === 'not_operator' ? 'not' : short(op.text, 36)}\` on tensor \`${short(t.text, 24)}\``);
      }
    }

    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (/(^|\.)clip_grad_norm_?$/.test(callee) || /clip_grad_norm_$/.test(call.childForFieldName('function')?.text ?? '')) {
        const kw = callArgs(call).keywords.get('error_if_nonfinite');
        if (kw && kwValue(kw)?.type === 'true') {
          flag(kw, '', dropKeyword(ctx, kw), '`error_if_nonfinite=True` makes `clip_grad_norm_` test the norm for NaN/inf in Python every step, which runs the graph early');
        }
        continue;
      }
      if (callee === 'torch.autograd.set_detect_anomaly' || callee === 'torch.autograd.detect_anomaly' || callee === 'torch.autograd.anomaly_mode.set_detect_anomaly') {
        const arg = callArgs(call).positional[0];
        if (callee.endsWith('set_detect_anomaly') && arg?.type !== 'true') continue;
        if (callee.endsWith('detect_anomaly') && !callee.endsWith('set_detect_anomaly') && arg?.type === 'false') continue;
        // module-level switch in a training script, or a context manager in the loop
        if (ctx.sema.hot(call) || (!ctx.sema.enclosingFunction(call) && ctx.sema.hotLoops().some((h) => h.kind === 'train'))) {
          seen.add(call.id);
          ctx.report(call, {
            message: `\`${short(call.text, 40)}\` leaves autograd anomaly detection on: a debugging mode that checks every backward result; turn it off for TPU training runs`,
          });
        }
      }
    }
  },
});

/** A condition on the size of a data-dependent count (`npr == 0`, `nl`, `not len(sel)`), with that size. */
function countCondition(ctx: RuleContext, cond: Node): ReturnType<typeof countSize> {
  if (cond.type === 'parenthesized_expression' || cond.type === 'not_operator') return countCondition(ctx, cond.childForFieldName('argument') ?? cond.namedChildren[0]!);
  if (cond.type === 'boolean_operator') {
    for (const c of cond.namedChildren) {
      const r = c ? countCondition(ctx, c) : null;
      if (r) return r;
    }
    return null;
  }
  if (cond.type === 'comparison_operator') {
    for (const c of cond.namedChildren) {
      const r = c ? countSize(ctx, c) : null;
      if (r) return r;
    }
    return null;
  }
  return countSize(ctx, cond);
}

/**
 * The loop a non-hot condition sits in when that loop holds a training loop whose step assigns the tested name and
 * is itself inside another loop (PPO: `for epoch in range(update_epochs)` inside the iteration loop), else null.
 * An outermost epoch loop (`for epoch in range(n)`) is not one: its test runs once per pass over the data.
 */
function stepEnclosingLoop(ctx: RuleContext, cond: Node): Node | null {
  let loop: Node | null = cond.parent;
  while (loop && loop.type !== 'for_statement' && loop.type !== 'while_statement') {
    if (loop.type === 'function_definition') return null;
    loop = loop.parent;
  }
  if (!loop) return null;
  let outer: Node | null = loop.parent;
  while (outer && outer.type !== 'for_statement' && outer.type !== 'while_statement' && outer.type !== 'function_definition') outer = outer.parent;
  if (!outer || outer.type === 'function_definition') return null;
  const inner = ctx.sema.hotLoops().filter((h) => h.kind === 'train' && h.anchor.startIndex > loop!.startIndex && h.anchor.endIndex <= loop!.endIndex && h.anchor.endIndex <= cond.startIndex);
  if (!inner.length) return null;
  const names = new Set(cond.descendantsOfType('identifier').map((i) => i?.text ?? ''));
  if (cond.type === 'identifier') names.add(cond.text);
  const assignedInStep = ctx.sema.nodes('assignment').some((a) => {
    const left = a.childForFieldName('left');
    return !!left && names.has(left.text) && inner.some((h) => a.startIndex > h.anchor.startIndex && a.endIndex <= h.anchor.endIndex);
  });
  return assignedInStep ? loop : null;
}

/** Inside the test of an if/while/assert/ternary (reported there). */
function insideTest(node: Node): boolean {
  for (let p = node.parent, c: Node = node; p; c = p, p = p.parent) {
    if ((p.type === 'if_statement' || p.type === 'while_statement' || p.type === 'elif_clause') && p.childForFieldName('condition')?.id === c.id) return true;
    if (p.type === 'assert_statement' && p.namedChildren[0]?.id === c.id) return true;
    if (p.type === 'conditional_expression' && p.namedChildren[1]?.id === c.id) return true;
    if (/statement|block|function_definition/.test(p.type)) return false;
  }
  return false;
}

/** `if c: x = a` [`else: x = b`] → `x = torch.where(c, a, x|b)` when x is already a tensor. */
function whereFix(ctx: RuleContext, ifStmt: Node, cond: Node) {
  // dual-path keeps CPU and CUDA results: torch.where computes and broadcasts both branches (another shape, a
  // NaN from the branch not taken in the gradient), so the rewrite is tpu-only
  if (ctx.idiom.dualPath) return null;
  const alts = ifStmt.childrenForFieldName('alternative').filter((a): a is Node => !!a);
  if (alts.some((a) => a.type === 'elif_clause') || alts.length > 1) return null;
  const single = (block: Node | null | undefined): { target: string; left: Node; value: Node } | null => {
    const stmts = block?.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment') ?? [];
    if (stmts.length !== 1 || stmts[0].type !== 'expression_statement') return null;
    const a = stmts[0].namedChildren[0];
    if (a?.type !== 'assignment' || a.childForFieldName('type')) return null;
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (left?.type !== 'identifier' || !right) return null;
    return { target: left.text, left, value: right };
  };
  const then = single(ifStmt.childForFieldName('consequence'));
  if (!then || !ctx.model.isDeviceTensor(then.left, true)) return null;
  let other = then.target;
  if (alts.length === 1) {
    const e = single(alts[0].childForFieldName('body'));
    if (!e || e.target !== then.target) return null;
    other = e.value.text;
  }
  if (/\n/.test(cond.text + then.value.text + other)) return null;
  // `and`/`or`/`not`/`is`/`in` evaluate Python truthiness: torch.where needs one tensor condition
  if (/\b(and|or|not|is|in)\b/.test(cond.text.replace(/(["'])(?:\\.|(?!\1).)*\1/g, ''))) return null;
  // comments inside the branches would be lost: rewrite only when they all sit on the `if` line (kept there)
  const comments = ctx.sema.within('comment', ifStmt);
  const headerLineEnd = ctx.text.indexOf('\n', ifStmt.startIndex);
  if (comments.some((c) => headerLineEnd >= 0 && c.startIndex > headerLineEnd)) return null;
  const trailing = comments.map((c) => c.text).join(' ');
  const torch = torchName(ctx);
  const condText = cond.type === 'parenthesized_expression' ? cond.namedChildren[0]!.text : cond.text;
  return {
    title: `Rewrite as \`${then.target} = ${torch.name}.where(...)\``,
    edits: [replace(ifStmt, `${then.target} = ${torch.name}.where(${condText}, ${then.value.text}, ${other})${trailing ? '  ' + trailing : ''}`)],
    imports: torch.imports,
  };
}

/** Removes `, error_if_nonfinite=True` from the argument list. */
function dropKeyword(ctx: RuleContext, kw: Node) {
  const prev = kw.previousNamedSibling;
  const next = kw.nextNamedSibling;
  let start = kw.startIndex;
  let end = kw.endIndex;
  if (prev) start = prev.endIndex;
  else if (next) end = next.startIndex;
  if (/#/.test(ctx.text.slice(start, end))) return null;
  // dual-path: CPU and CUDA keep raising on a non-finite norm; only XLA skips the host check
  const isXla = ctx.idiom.isXla();
  if (ctx.idiom.dualPath) {
    return { title: 'Check the norm for NaN/inf except on XLA (`error_if_nonfinite=not accel.is_xla()`)', edits: [replace(kwValue(kw)!, `not ${isXla.text}`)], imports: isXla.imports, needsAccel: isXla.needsAccel };
  }
  return { title: 'Drop `error_if_nonfinite=True` (log the norm from a step closure instead)', edits: [replaceRange(start, end, '')] };
}
