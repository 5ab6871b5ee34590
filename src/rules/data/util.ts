/** Helpers of the data-input family (4xx): DataLoader calls, what a loop iterates, batch moves. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { methodName, receiver } from '../../core/semantics';

export { appendArg, removeArg } from '../precision/util';

const DATALOADER = /^torch\.utils\.data(\.dataloader)?\.DataLoader$/;
const WRAPPERS = /(^|\.)(MpDeviceLoader|ParallelLoader|per_device_loader|wrap_loader)$/;
const ITER_HELPERS = /^(enumerate|tqdm|tqdm\.tqdm|tqdm\.auto\.tqdm|zip|iter|islice|itertools\.islice)$/;

/** `torch.utils.data.DataLoader(...)` through aliases. */
export function isDataLoaderCall(ctx: RuleContext, node: Node | null | undefined): boolean {
  return !!node && node.type === 'call' && DATALOADER.test(ctx.sema.callee(node) ?? '');
}

/** A call that wraps a loader for XLA (MpDeviceLoader, ParallelLoader, per_device_loader, accel.wrap_loader). */
export function isWrapperCall(ctx: RuleContext, node: Node | null | undefined): boolean {
  if (!node || node.type !== 'call') return false;
  const q = ctx.sema.callee(node) ?? node.childForFieldName('function')?.text ?? '';
  return WRAPPERS.test(q);
}

/** The loader expression a `for` iterates, looking through enumerate/tqdm/zip (first argument). */
export function iteratedLoader(ctx: RuleContext, loop: Node): Node | null {
  let it = loop.childForFieldName('right');
  for (let k = 0; k < 3 && it?.type === 'call'; k++) {
    const name = ctx.sema.callee(it) ?? it.childForFieldName('function')?.text ?? '';
    if (!ITER_HELPERS.test(name)) break;
    const first = it.childForFieldName('arguments')?.namedChildren.find((c) => !!c && c.type !== 'comment' && c.type !== 'keyword_argument');
    if (!first) return null;
    it = first;
  }
  return it ?? null;
}

/** Values assigned to a name or attribute chain (`loader`, `self.train_loader`). */
export function boundValues(ctx: RuleContext, node: Node): Node[] {
  return ctx.sema.bindings(node.text);
}

/**
 * Whether the loader expression is a plain torch DataLoader: the constructor itself, or a name
 * bound only to DataLoader constructors (never to an XLA wrapper).
 */
export function isPlainDataLoader(ctx: RuleContext, it: Node): boolean {
  if (isDataLoaderCall(ctx, it)) return true;
  if (it.type !== 'identifier' && it.type !== 'attribute') return false;
  const values = boundValues(ctx, it);
  return values.length > 0 && values.some((v) => isDataLoaderCall(ctx, v)) && !values.some((v) => isWrapperCall(ctx, v) || !isDataLoaderCall(ctx, v));
}

/** Whether the file wraps loaders for XLA anywhere. */
export function fileWrapsLoaders(ctx: RuleContext): boolean {
  return ctx.sema.nodes('call').some((c) => isWrapperCall(ctx, c));
}

/** The root identifier of `a.b[0].c(...)`. */
export function rootName(node: Node | null): string | null {
  let n = node;
  while (n) {
    if (n.type === 'identifier') return n.text;
    if (n.type === 'attribute') n = n.childForFieldName('object');
    else if (n.type === 'subscript') n = n.childForFieldName('value');
    else if (n.type === 'call') n = receiver(n) ?? n.childForFieldName('function');
    else if (n.type === 'parenthesized_expression') n = n.namedChildren[0];
    else return null;
  }
  return null;
}

/** Identifiers bound by a for-loop target (`x, y`, `i, (x, y)`, `batch`). */
export function targetNames(target: Node | null): Set<string> {
  const out = new Set<string>();
  const walk = (n: Node | null) => {
    if (!n) return;
    if (n.type === 'identifier') out.add(n.text);
    for (const c of n.namedChildren) if (c) walk(c);
  };
  walk(target);
  return out;
}

/** `.to(device…)`/`.cuda()` calls in a loop body that move the loop's batch items. */
export function batchMoves(ctx: RuleContext, loop: Node): Node[] {
  const body = loop.childForFieldName('body');
  if (!body) return [];
  const names = targetNames(loop.childForFieldName('left'));
  const out: Node[] = [];
  for (const call of ctx.sema.callsWithin(body)) {
    const meth = methodName(call);
    if (meth !== 'to' && meth !== 'cuda') continue;
    const recv = receiver(call);
    if (!recv || ctx.sema.resolve(recv)) continue;
    if (meth === 'to') {
      const args = call.childForFieldName('arguments')?.namedChildren.filter((c) => !!c && c.type !== 'comment') ?? [];
      const first = args[0];
      const isDevice = args.some((a) => a?.type === 'keyword_argument' && a.childForFieldName('name')?.text === 'device') || (!!first && first.type !== 'keyword_argument' && !/^torch\.(float|bfloat|half|int|long|bool|double|uint)/.test(ctx.sema.resolve(first) ?? ''));
      if (!isDevice) continue;
    }
    let root = rootName(recv);
    // {k: v.to(device) for k, v in batch.items()}
    for (let p = call.parent; p && p.id !== body.id && root && !names.has(root); p = p.parent) {
      if (/comprehension|generator_expression/.test(p.type)) {
        const clause = p.namedChildren.find((c) => c?.type === 'for_in_clause');
        const bound = targetNames(clause?.childForFieldName('left') ?? null);
        if (bound.has(root)) root = rootName(clause?.childForFieldName('right') ?? null);
      }
    }
    if (root && names.has(root)) out.push(call);
  }
  return out;
}
