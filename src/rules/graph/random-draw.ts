/** Random draws that choose branches (TPU205), shared with TPU202 so a random branch is reported once, as structural dynamism. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, kwValue } from '../../core/semantics';

/** torch RNG factories whose fresh value decides a branch: `torch.rand(1) < p`, `torch.randint(0, 2, ()) == 0`, `torch.bernoulli(q)`. */
export const TORCH_RANDOM = /^torch\.(rand|randn|randint|rand_like|randn_like|randint_like|bernoulli|multinomial|normal|randperm)$/;

/** The torch RNG call in `expr` (`torch.rand(1)`, `torch.rand(()).item()`), or null. */
export function torchRandomDraw(ctx: RuleContext, expr: Node): Node | null {
  const calls = expr.type === 'call' ? [expr, ...ctx.sema.within('call', expr)] : ctx.sema.within('call', expr);
  for (const c of calls) {
    if (TORCH_RANDOM.test(ctx.sema.callee(c) ?? '')) return c;
  }
  return null;
}

/** A torch draw made on the host (no `device=` or an explicit CPU device): comparing it reads no device value. */
export function drawnOnHost(draw: Node): boolean {
  const dev = kwValue(callArgs(draw).keywords.get('device'));
  return !dev || /^["']cpu["']$/.test(dev.text);
}

