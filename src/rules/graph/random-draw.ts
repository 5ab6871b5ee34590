/** Random draws that choose branches (TPU205), shared with TPU202 so a random branch is reported once, as structural dynamism. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, kwValue } from '../../core/semantics';

/** Python and NumPy RNG calls: a fresh host value every call. */
export const PY_RANDOM = /^(random\.(random|uniform|randint|choice|randrange|getrandbits|sample|gauss|betavariate)|numpy\.random\.\w+)$/;

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


const assignmentsMemo = new WeakMap<object, Map<number, Node[]>>();

/** The assignments whose innermost function is the one holding `at` (module level: the module's), in document order; memoised per function. */
function scopeAssignments(ctx: RuleContext, at: Node): Node[] {
  let perSema = assignmentsMemo.get(ctx.sema);
  if (!perSema) assignmentsMemo.set(ctx.sema, (perSema = new Map()));
  const fn = ctx.sema.enclosingFunction(at);
  const key = fn?.id ?? -1;
  let list = perSema.get(key);
  if (!list) {
    list = (fn ? ctx.sema.within('assignment', fn) : ctx.sema.nodes('assignment')).filter((a) => (ctx.sema.enclosingFunction(a)?.id ?? -1) === key);
    perSema.set(key, list);
  }
  return list;
}

/** The right-hand side of the last assignment of `id`'s name before it in its scope (`n = x`, `a, n = f()`), else null. */
export function lastBinding(ctx: RuleContext, id: Node): Node | null {
  let found: Node | null = null;
  for (const a of scopeAssignments(ctx, id)) {
    if (a.startIndex >= id.startIndex) break;
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (!left || !right) continue;
    if (left.type === 'identifier') {
      if (left.text === id.text) found = right;
    } else if ((left.type === 'pattern_list' || left.type === 'tuple_pattern') && left.namedChildren.some((c) => c?.type === 'identifier' && c.text === id.text)) {
      const i = left.namedChildren.findIndex((c) => c?.text === id.text);
      found = right.type === 'expression_list' ? right.namedChildren[i] ?? right : right;
    }
  }
  return found;
}

const randomHelperMemo = new WeakMap<object, Map<number, Node | null>>();

/** A same-file helper whose body draws a Python/NumPy random number (`def rand_bbox(size, lam): cx = np.random.randint(W) ...`): the draw, else null. */
function randomHelper(ctx: RuleContext, fn: Node): Node | null {
  let memo = randomHelperMemo.get(ctx.sema);
  if (!memo) randomHelperMemo.set(ctx.sema, (memo = new Map()));
  if (memo.has(fn.id)) return memo.get(fn.id)!;
  const draw = ctx.sema.within('call', fn).find((c) => PY_RANDOM.test(ctx.sema.callee(c) ?? '')) ?? null;
  memo.set(fn.id, draw);
  return draw;
}

/**
 * A host random value: a Python/NumPy draw in `e` (`np.random.randint(W)`, `int(random.random() * n)`), through
 * local names (`cx = np.random.randint(W)`; `x1, y1, x2, y2 = rand_bbox(size, lam)`) and same-file helpers that draw.
 * Returns the draw, else null.
 */
export function hostRandomValue(ctx: RuleContext, e: Node | null | undefined, depth = 0): Node | null {
  if (!e || depth > 3) return null;
  const calls = e.type === 'call' ? [e, ...ctx.sema.within('call', e)] : ctx.sema.within('call', e);
  for (const c of calls) {
    if (PY_RANDOM.test(ctx.sema.callee(c) ?? '')) return c;
    for (const f of ctx.sema.calledFunctions(c)) {
      const d = randomHelper(ctx, f);
      if (d) return d;
    }
  }
  // the names the value reads (not callee names nor attribute chains: `np.clip(cx - w // 2, 0, W)` reads cx, w, W)
  const ids = e.type === 'identifier' ? [e] : ctx.sema.within('identifier', e).filter((i) => i.parent?.type !== 'attribute' && i.parent?.type !== 'keyword_argument' && !(i.parent?.type === 'call' && i.parent.childForFieldName('function')?.id === i.id));
  for (const id of ids.slice(0, 6)) {
    // `length = lengths[idx].item()` with a random `idx`: data looked up at a random index, not a drawn number
    if (insideIndex(id, e)) continue;
    const b = lastBinding(ctx, id);
    if (b && /\.(item|cpu|tolist|numpy)\(/.test(b.text)) continue;
    const d = b && b.id !== e.id ? hostRandomValue(ctx, b, depth + 1) : null;
    if (d) return d;
  }
  return null;
}

/** `id` sits in the index of a subscript within `root` (`ys[idx]`, `lengths[i]`). */
function insideIndex(id: Node, root: Node): boolean {
  for (let c: Node = id, p = id.parent; p && c.id !== root.id; c = p, p = p.parent) {
    if (p.type === 'subscript' && p.childForFieldName('value')?.id !== c.id) return true;
  }
  return false;
}
