/** Helpers of the data-input family (4xx): DataLoader calls, what a loop iterates, batch moves. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import type { Snippet } from '../../core/idioms';
import { callArgs, kwValue, methodName, receiver } from '../../core/semantics';
import { deviceExprFor } from '../shared';
import { cudaGuarded } from '../device/cuda-util';
import { lastName } from '../../model/facts';

export { appendArg, removeArg } from '../precision/util';

const DATALOADER = /^torch\.utils\.data(\.dataloader)?\.DataLoader$/;
const WRAPPERS = /(^|\.)(MpDeviceLoader|ParallelLoader|per_device_loader|wrap_loader|xla_loader)$/;
// `metric_logger.log_every(loader, print_freq, header)` (the DETR/DeiT/ConvNeXt MetricLogger) yields the loader's items
const ITER_HELPERS = /^(enumerate|tqdm|tqdm\.tqdm|tqdm\.auto\.tqdm|zip|iter|islice|itertools\.islice|\w+\.log_every)$/;

/**
 * `torch.utils.data.DataLoader(...)` through aliases, or the constructor of a project class deriving from it (`class
 * SpeakerVerificationDataLoader(DataLoader)` in a data module, re-exported by its package): its batches are a DataLoader's.
 */
export function isDataLoaderCall(ctx: RuleContext, node: Node | null | undefined): boolean {
  if (!node || node.type !== 'call') return false;
  return DATALOADER.test(ctx.sema.callee(node) ?? '') || loaderSubclassCall(ctx, node);
}

/** `torch.utils.data.DataLoader(...)` itself (a subclass may fix its own batching: TPU403 reads only torch's arguments). */
export function isTorchDataLoaderCall(ctx: RuleContext, node: Node | null | undefined): boolean {
  return !!node && node.type === 'call' && DATALOADER.test(ctx.sema.callee(node) ?? '');
}

const subclassMemo = new WeakMap<Node, boolean>();

/** A call of a class named `…Loader` of this file or the project whose bases name torch's DataLoader (memoised per call). */
function loaderSubclassCall(ctx: RuleContext, call: Node): boolean {
  const fn = call.childForFieldName('function');
  if (!fn || (fn.type !== 'identifier' && fn.type !== 'attribute') || !/^[A-Z]\w*Loader$/.test(lastName(fn))) return false;
  const memo = subclassMemo.get(call);
  if (memo !== undefined) return memo;
  subclassMemo.set(call, false);
  const bases = (sema: RuleContext['sema'], cls: Node) =>
    (cls.childForFieldName('superclasses')?.namedChildren ?? []).some((b) => !!b && DATALOADER.test(sema.resolve(b) ?? ''));
  let out = false;
  const local = fn.type === 'identifier' ? ctx.model.classesNamed(fn.text) : [];
  if (local.length === 1) out = bases(ctx.sema, local[0]);
  else if (!local.length && ctx.project) {
    const r = ctx.project.resolveCall(call, ctx.sema, ctx.path);
    if (r?.kind === 'class') out = bases(r.module.sema, r.def);
  }
  subclassMemo.set(call, out);
  return out;
}

/** A call that wraps a loader for XLA (MpDeviceLoader, ParallelLoader, per_device_loader, accel.wrap_loader). */
export function isWrapperCall(ctx: RuleContext, node: Node | null | undefined): boolean {
  if (!node || node.type !== 'call') return false;
  const q = ctx.sema.callee(node) ?? node.childForFieldName('function')?.text ?? '';
  return WRAPPERS.test(q);
}

/** The loader expression a `for` iterates, looking through enumerate/tqdm/zip (first argument). */
export function iteratedLoader(ctx: RuleContext, loop: Node): Node | null {
  let it: Node | null | undefined = loop.childForFieldName('right');
  // `pbar = tqdm(train_loader, desc=...)` then `for x, y in pbar:` (Kaggle-style progress bars), also inside
  // `enumerate(pbar)` (`loop = tqdm(loader, leave=True)`; `for idx, (x, y) in enumerate(loop):`)
  const viaBar = (n: Node | null | undefined): Node | null | undefined => {
    if (n?.type !== 'identifier') return n;
    const values = ctx.sema.bindings(n.text);
    return values.length === 1 && values[0].type === 'call' && ITER_HELPERS.test(ctx.sema.callee(values[0]) ?? values[0].childForFieldName('function')?.text ?? '') ? values[0] : n;
  };
  it = viaBar(it);
  for (let k = 0; k < 3 && it?.type === 'call'; k++) {
    const name = ctx.sema.callee(it) ?? it.childForFieldName('function')?.text ?? '';
    if (!ITER_HELPERS.test(name)) break;
    const first = it.childForFieldName('arguments')?.namedChildren.find((c) => !!c && c.type !== 'comment' && c.type !== 'keyword_argument');
    if (!first) return null;
    it = viaBar(first);
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
  if (isDataLoaderCall(ctx, it) || loaderFactory(ctx, it)) return true;
  // `dataloaders[phase]` of `dataloaders = {x: DataLoader(...) for x in ['train', 'val']}` (or a dict literal of loaders)
  if (it.type === 'subscript') {
    const holder = it.childForFieldName('value');
    if (holder?.type !== 'identifier') return false;
    const values = boundValues(ctx, holder);
    const loaders = (v: Node) =>
      v.type === 'dictionary_comprehension'
        ? isDataLoaderCall(ctx, v.namedChildren[0]?.childForFieldName('value'))
        : v.type === 'dictionary' && v.namedChildren.some((p) => p?.type === 'pair') && v.namedChildren.every((p) => p?.type !== 'pair' || isDataLoaderCall(ctx, p.childForFieldName('value')));
    return values.length > 0 && values.every(loaders);
  }
  if (it.type !== 'identifier' && it.type !== 'attribute') return false;
  const values = boundValues(ctx, it);
  const plain = (v: Node) => isDataLoaderCall(ctx, v) || !!loaderFactory(ctx, v);
  return values.length > 0 && values.some(plain) && !values.some((v) => isWrapperCall(ctx, v) || !plain(v));
}

/**
 * A plain DataLoader passed to a function of another project module whose own loop iterates that parameter and moves
 * the batches by hand (`train_one_epoch(model, data_loader_train, ...)` with `for x, y in data_loader: x.to(device)` in
 * engine.py): the argument, the callee's loop and its first move.
 */
export function loadersPassedToProjectLoops(ctx: RuleContext): { arg: Node; call: Node; path: string; loop: Node; move: Node; name: string }[] {
  if (!ctx.project) return [];
  const out: { arg: Node; call: Node; path: string; loop: Node; move: Node; name: string }[] = [];
  for (const call of ctx.sema.nodes('call')) {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'identifier' && fn?.type !== 'attribute') continue;
    const { positional, keywords } = callArgs(call);
    // loader arguments are named as loaders (data_loader_train, val_dl) or bound to a DataLoader here
    const loaders = [...positional.map((a, i) => ({ a, i, kw: null as string | null })), ...[...keywords].map(([k, v]) => ({ a: kwValue(v)!, i: -1, kw: k }))].filter(
      (x) => !!x.a && (x.a.type === 'identifier' || x.a.type === 'attribute') && (LOADER_ARG.test(lastName(x.a)) || boundValues(ctx, x.a).some((v) => isDataLoaderCall(ctx, v))) && isPlainDataLoader(ctx, x.a),
    );
    if (!loaders.length) continue;
    const r = ctx.project.resolveCall(call, ctx.sema, ctx.path);
    if (!r || r.kind !== 'function') continue;
    const xs = r.module.sema;
    const other: RuleContext = { ...ctx, path: r.path, text: r.module.text, root: r.module.tree.rootNode, sema: xs, notebook: null, report() {} };
    const params = (r.def.childForFieldName('parameters')?.namedChildren ?? []).filter((p): p is Node => !!p).map((p) => (p.type === 'identifier' ? p.text : p.childForFieldName('name')?.text ?? p.namedChildren[0]?.text ?? ''));
    for (const { a, i, kw } of loaders) {
      const param = kw ?? params[i];
      if (!param) continue;
      for (const loop of xs.forLoopsIn(r.def)) {
        const it = iteratedLoader(other, loop);
        if (it?.type !== 'identifier' || it.text !== param || xs.bindings(param).some((b) => xs.enclosingFunction(b)?.id === r.def.id)) continue;
        const moves = batchMoves(other, loop);
        if (!moves.length) continue;
        out.push({ arg: a, call, path: r.path, loop, move: moves[0], name: r.def.childForFieldName('name')?.text ?? 'helper' });
        break;
      }
    }
  }
  return out;
}

/** `ds_train, ds_val, loader_train, loader_val, mixup = build_loader(config)`: the element of the factory's returned tuple. */
function tupleFactory(ctx: RuleContext, name: Node, depth = 0): { path: string; node: Node; name: string } | null {
  for (const a of ctx.sema.nodes('assignment')) {
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (right?.type !== 'call' || (left?.type !== 'pattern_list' && left?.type !== 'tuple_pattern')) continue;
    const idx = left.namedChildren.findIndex((c) => c?.text === name.text);
    const callee = right.childForFieldName('function');
    if (idx >= 0 && !(callee && FACTORY_NAME.test(lastName(callee)))) return null;
    if (idx < 0 || left.namedChildren.some((c) => c?.type === 'list_splat_pattern')) continue;
    // a method of this class that passes on a factory's tuple (`def _get_data(self, flag): data_set, data_loader =
    // data_provider(self.args, flag); return data_set, data_loader`, Time-Series-Library's Exp classes)
    const own = depth < 2 ? selfMethod(ctx, right) : null;
    const r = own ? { kind: 'method' as const, def: own, path: ctx.path, module: { sema: ctx.sema } } : ctx.project?.resolveCall(right, ctx.sema, ctx.path);
    if (!r || (r.kind !== 'function' && !own)) return null;
    const xs = r.module.sema;
    const isLoader = (v: Node | null | undefined) => !!v && v.type === 'call' && DATALOADER.test(xs.callee(v) ?? '');
    let made: Node | null = null;
    for (const ret of xs.within('return_statement', r.def)) {
      if (xs.enclosingFunction(ret)?.id !== r.def.id) continue;
      const v = ret.namedChildren[0];
      if (v?.type !== 'expression_list' && v?.type !== 'tuple') return null;
      const el = v.namedChildren[idx];
      if (!el || v.namedChildren.length !== left.namedChildren.length) return null;
      if (isLoader(el)) made ??= el;
      else if (el.type === 'identifier') {
        const bound = xs.bindings(el.text).filter((b) => xs.enclosingFunction(b)?.id === r.def.id);
        if (!bound.length && xs === ctx.sema && depth < 2) {
          const inner = tupleFactory(ctx, el, depth + 1);
          if (!inner) return null;
          return inner;
        }
        if (!bound.length || !bound.every(isLoader)) return null;
        made ??= bound[0];
      } else return null;
    }
    return made ? { path: r.path, node: made, name: r.def.childForFieldName('name')?.text ?? 'factory' } : null;
  }
  return null;
}

/** The method of the enclosing class that `self.name(...)` calls. */
function selfMethod(ctx: RuleContext, call: Node): Node | null {
  const fn = call.childForFieldName('function');
  if (fn?.type !== 'attribute' || fn.childForFieldName('object')?.text !== 'self') return null;
  const name = fn.childForFieldName('attribute')?.text;
  const cls = ctx.sema.enclosingClass(call);
  for (const st of cls?.childForFieldName('body')?.namedChildren ?? []) {
    const d = st?.type === 'decorated_definition' ? st.childForFieldName('definition') : st;
    if (d?.type === 'function_definition' && d.childForFieldName('name')?.text === name) return d;
  }
  return null;
}

const buildsMemo = new WeakMap<object, boolean>();

/** The file builds DataLoaders: itself, or through a factory of another project module (`build_loader(config)`). */
function buildsLoaders(ctx: RuleContext): boolean {
  let hit = buildsMemo.get(ctx.sema);
  if (hit !== undefined) return hit;
  hit = ctx.sema.nodes('call').some((c) => isDataLoaderCall(ctx, c));
  if (!hit && ctx.project) {
    hit = ctx.sema.nodes('assignment').some((a) => {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (right?.type !== 'call') return false;
      if (left?.type === 'identifier') return !!loaderFactory(ctx, right);
      return (left?.type === 'pattern_list' || left?.type === 'tuple_pattern') && left.namedChildren.some((c) => c?.type === 'identifier' && !!tupleFactory(ctx, c));
    });
  }
  buildsMemo.set(ctx.sema, hit);
  return hit;
}

const FACTORY_NAME = /load|data/i;
const LOADER_ARG = /(loader|_dl|^dl|loaders)$|loader_/i;

const factoryMemo = new WeakMap<Node, { path: string; node: Node; name: string } | null>();

/**
 * A call of a loader factory in another module of the project (`build_loader(...)` whose every return is a plain
 * `DataLoader(...)`, or a name bound to one in it), or a name bound only to such calls: where the DataLoader is made.
 * The factory itself is not edited (it is shared by the train and eval loaders, COMMON_FIX_PRINCIPLES).
 */
export function loaderFactory(ctx: RuleContext, node: Node): { path: string; node: Node; name: string } | null {
  if (!ctx.project) return null;
  if (node.type === 'identifier') {
    const values = boundValues(ctx, node);
    if (!values.length) return tupleFactory(ctx, node);
    if (!values.every((v) => v.type === 'call')) return null;
    const found = values.map((v) => loaderFactory(ctx, v));
    return found.every((f) => !!f) ? found[0] : null;
  }
  if (node.type !== 'call') return null;
  const hit = factoryMemo.get(node);
  if (hit !== undefined) return hit;
  factoryMemo.set(node, null);
  const fn = node.childForFieldName('function');
  let out: { path: string; node: Node; name: string } | null = null;
  // factories are named for what they make (build_loader, get_dataloader, make_data_loader): other calls are not
  // resolved, which would parse their modules
  const r = fn && (fn.type === 'identifier' || fn.type === 'attribute') && FACTORY_NAME.test(lastName(fn)) && !ctx.sema.callee(node)?.startsWith('torch') ? ctx.project.resolveCall(node, ctx.sema, ctx.path) : null;
  if (r && r.kind === 'function') {
    const xs = r.module.sema;
    const isLoader = (v: Node | null | undefined) => !!v && v.type === 'call' && DATALOADER.test(xs.callee(v) ?? '');
    const made: Node[] = [];
    let all = true;
    for (const ret of xs.within('return_statement', r.def)) {
      if (xs.enclosingFunction(ret)?.id !== r.def.id) continue;
      const v = ret.namedChildren[0];
      if (isLoader(v)) made.push(v!);
      else if (v?.type === 'identifier') {
        const bound = xs.bindings(v.text).filter((b) => xs.enclosingFunction(b)?.id === r.def.id);
        if (bound.length && bound.every(isLoader)) made.push(bound[0]);
        else all = false;
      } else all = false;
    }
    if (all && made.length) out = { path: r.path, node: made[0], name: r.def.childForFieldName('name')?.text ?? 'factory' };
  }
  factoryMemo.set(node, out);
  return out;
}

/**
 * The framework that owns this file's loaders: `sema.framework`, except an Accelerate seen only through helpers of
 * `accelerate.utils` (`from accelerate.utils import is_xpu_available`, llama-recipes' train_utils.py): such a file
 * builds no `Accelerator`, so nothing prepares its loaders.
 */
export function loaderFramework(ctx: RuleContext): string | null {
  const fw = ctx.sema.framework;
  if (fw !== 'accelerate') return fw;
  for (const m of ctx.sema.importedModules) if (/^accelerate(\.|$)/.test(m) && !/^accelerate\.utils(\.|$)/.test(m)) return fw;
  for (const q of ctx.sema.aliases.values()) if (/^accelerate(\.|$)/.test(q) && !/^accelerate\.utils(\.|$)/.test(q)) return fw;
  return null;
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

/** `.to(device…)`/`.cuda()` calls (or batch-moving helpers) in a loop body that move the loop's batch items. */
export function batchMoves(ctx: RuleContext, loop: Node): Node[] {
  const body = loop.childForFieldName('body');
  if (!body) return [];
  const names = unpacked(ctx, body, targetNames(loop.childForFieldName('left')));
  const direct = movesOf(ctx, body, names);
  return direct.length ? direct : movesThroughCalls(ctx, body, names, 2);
}

/**
 * The loop's names plus the names a plain unpacking of them binds in the body (`images, labels = data`, `x = batch[0]`),
 * so a move of `images` is a move of the loop's batch.
 */
function unpacked(ctx: RuleContext, body: Node, names: Set<string>): Set<string> {
  const out = new Set(names);
  for (const a of ctx.sema.within('assignment', body)) {
    const right = a.childForFieldName('right');
    const root = right && (right.type === 'identifier' || right.type === 'subscript') ? rootName(right) : null;
    if (!root || !out.has(root)) continue;
    const left = a.childForFieldName('left');
    if (left?.type === 'identifier' || left?.type === 'pattern_list' || left?.type === 'tuple_pattern') for (const n of targetNames(left)) out.add(n);
  }
  return out;
}

// helpers that copy a (nested) batch to a device, by their conventional names: OLMo's torch_util.move_to_device, DeepSpeed-Chat's
// utils.to_device, accelerate.utils.send_to_device, open_clip's task.prepare_batch(batch, device=...); a call counts only
// when it is also given a device (a second argument or `device=`)
const MOVE_HELPER = /^_?(move_to_device|to_device|send_to_device|batch_to_device|move_batch_to_device|batch_to|prepare_batch|recursive_to|to_cuda|move_to_cuda|move_to)$/;

/**
 * A call that moves `names` to the device through a helper: `move_to_device(batch, device)` (a conventional name, given a
 * device), or a same-file function whose body moves the parameter it receives (`.to(...)`/`.cuda()`).
 */
export function helperMove(ctx: RuleContext, call: Node, names: Set<string>): boolean {
  const fn = call.childForFieldName('function');
  if (!fn || (fn.type !== 'identifier' && fn.type !== 'attribute') || ctx.sema.callee(call)?.startsWith('torch')) return false;
  const { positional, keywords } = callArgs(call);
  const at = positional.findIndex((a) => (a.type === 'identifier' || a.type === 'subscript' || a.type === 'attribute') && names.has(rootName(a) ?? ''));
  if (at < 0) return false;
  if (MOVE_HELPER.test(lastName(fn))) return positional.length >= 2 || keywords.has('device');
  const defs = ctx.sema.calledFunctions(call);
  if (defs.length !== 1 || isAncestorOf(defs[0], call)) return false;
  const param = paramNames(defs[0])[at + (fn.type === 'attribute' && !!ctx.sema.enclosingClass(defs[0]) ? 1 : 0)];
  const body = defs[0].childForFieldName('body');
  const inner = param && body ? movesOf(ctx, body, new Set([param]), false)[0] : undefined;
  if (inner) innerMoves.set(call, inner);
  return !!inner;
}
const innerMoves = new WeakMap<Node, Node>();

/**
 * The copy itself when `call` is a same-file helper that moves the batch it is handed (`calc_loss_batch(x, y, model,
 * device)` whose body does `x.to(device)`): the `.to(...)` in the helper's body (null for a conventional mover).
 */
export function helperInnerMove(call: Node): Node | null {
  return innerMoves.get(call) ?? null;
}

function isAncestorOf(a: Node, b: Node): boolean {
  return a.startIndex <= b.startIndex && b.endIndex <= a.endIndex;
}

export function paramNames(def: Node): string[] {
  return (def.childForFieldName('parameters')?.namedChildren ?? [])
    .filter((p): p is Node => !!p && p.type !== 'comment')
    .map((p) => (p.type === 'identifier' ? p.text : p.childForFieldName('name')?.text ?? p.namedChildren[0]?.text ?? ''));
}

/**
 * Moves of the loop's batch inside same-file functions the body hands it to (`metrics = self.train_step(batch)` whose
 * body does `batch = move_to_device(batch, self.device)`, OLMo), up to `depth` calls deep: the move, in the helper.
 */
export function movesThroughCalls(ctx: RuleContext, body: Node, names: Set<string>, depth: number): Node[] {
  if (depth <= 0) return [];
  for (const call of ctx.sema.callsWithin(body)) {
    const fn = call.childForFieldName('function');
    if (!fn || (fn.type !== 'identifier' && fn.type !== 'attribute')) continue;
    const { positional } = callArgs(call);
    const at = positional.findIndex((a) => a.type === 'identifier' && names.has(a.text));
    if (at < 0) continue;
    const defs = ctx.sema.calledFunctions(call);
    if (defs.length !== 1 || isAncestorOf(defs[0], call)) continue;
    const param = paramNames(defs[0])[at + (fn.type === 'attribute' && !!ctx.sema.enclosingClass(defs[0]) ? 1 : 0)];
    const inner = defs[0].childForFieldName('body');
    if (!param || !inner || param === 'self') continue;
    const moves = movesOf(ctx, inner, new Set([param]));
    if (moves.length) return moves;
    const deeper = movesThroughCalls(ctx, inner, new Set([param]), depth - 1);
    if (deeper.length) return deeper;
  }
  return [];
}

/** `.to(device…)`/`.cuda()` calls in `body` that move the values bound to `names` (or items of them). */
/** Host-side constructors a batch item passes through before its move (`torch.from_numpy(batch.data).to(device)`). */
const HOST_WRAP = /^torch\.(from_numpy|as_tensor|tensor|Tensor|FloatTensor|LongTensor|autograd\.Variable)$/;

/** The batch expression inside `torch.from_numpy(...)`/`torch.as_tensor(...)` (nested up to three), else the node itself. */
function hostWrapped(ctx: RuleContext, node: Node): Node {
  let n = node;
  for (let k = 0; k < 3 && n.type === 'call' && HOST_WRAP.test(ctx.sema.callee(n) ?? ''); k++) {
    const first = callArgs(n).positional[0];
    if (!first) break;
    n = first;
  }
  return n;
}

/**
 * A move whose batch item is converted on the host first (`torch.from_numpy(batch.data).to(device)`): the loader yields
 * numpy arrays or objects, which `MpDeviceLoader` passes through unmoved (it moves tensors only), so a wrap alone does not help.
 */
export function movesHostConverted(ctx: RuleContext, move: Node): boolean {
  const recv = receiver(move);
  return !!recv && recv.type === 'call' && hostWrapped(ctx, recv) !== recv;
}

export function movesOf(ctx: RuleContext, body: Node, names: Set<string>, helpers = true): Node[] {
  const out: Node[] = [];
  for (const call of ctx.sema.callsWithin(body)) {
    if (helpers && helperMove(ctx, call, names)) {
      out.push(call);
      continue;
    }
    const meth = methodName(call);
    if (meth !== 'to' && meth !== 'cuda') continue;
    const recv = receiver(call);
    if (!recv || ctx.sema.resolve(recv)) continue;
    if (meth === 'to') {
      const args = call.childForFieldName('arguments')?.namedChildren.filter((c) => !!c && c.type !== 'comment') ?? [];
      const first = args[0];
      // `.to(weight_dtype)` where the model knows a dtype (`weight_dtype = torch.float16`) is a cast, not a move
      const isDevice = args.some((a) => a?.type === 'keyword_argument' && a.childForFieldName('name')?.text === 'device') || (!!first && first.type !== 'keyword_argument' && !/^torch\.(float|bfloat|half|int|long|bool|double|uint)/.test(ctx.sema.resolve(first) ?? '') && ctx.model.value(first).kind !== 'dtype');
      if (!isDevice) continue;
    }
    let root = rootName(hostWrapped(ctx, recv));
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

/**
 * Batches pulled by hand in a loop body: `batch = next(data_iter)` where every binding of `data_iter` is
 * `iter(<plain DataLoader>)` (minGPT's trainer). Returns the `iter(...)` loader arguments and the names bound
 * to the batch, per iterator.
 */
export function nextBatches(ctx: RuleContext, body: Node): { iterName: string; loaders: Node[]; names: Set<string>; pulls: Node[]; cached?: boolean; opaque?: boolean }[] {
  const byIter = new Map<string, { iterName: string; loaders: Node[]; names: Set<string>; pulls: Node[]; cached?: boolean; opaque?: boolean }>();
  for (const call of ctx.sema.callsWithin(body)) {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'identifier' || fn.text !== 'next') continue;
    const args = call.childForFieldName('arguments')?.namedChildren.filter((c) => !!c && c.type !== 'comment') ?? [];
    const src = args[0];
    if (!src || (src.type !== 'identifier' && src.type !== 'attribute')) continue;
    const assign = call.parent;
    if (assign?.type !== 'assignment' || assign.childForFieldName('right')?.id !== call.id) continue;
    let entry = byIter.get(src.text);
    if (!entry) {
      // a local iterator is bound in the function that calls next(); `self.data_iter` anywhere in the file
      const fn = ctx.sema.enclosingFunction(call)?.id ?? -1;
      const values = ctx.sema.bindings(src.text).filter((v) => src.type === 'attribute' || (ctx.sema.enclosingFunction(v)?.id ?? -1) === fn);
      const loaders: Node[] = [];
      for (const v of values) {
        const f = v.type === 'call' ? v.childForFieldName('function') : null;
        const inner = v.type === 'call' ? v.childForFieldName('arguments')?.namedChildren.filter((c) => !!c && c.type !== 'comment') ?? [] : [];
        if (!f || !((f.type === 'identifier' && f.text === 'iter') || cyclesOver(ctx, v)) || inner.length !== 1 || !inner[0]) break;
        loaders.push(inner[0]);
      }
      if (!loaders.length || loaders.length !== values.length) continue;
      // `loader = sample_data(loader)` rebinds the loader's own name: its other bindings say what it is
      const plain = (l: Node) => isPlainDataLoader(ctx, l) || (l.type === 'identifier' && values.some((v) => v.type === 'call' && cyclesOver(ctx, v)) && (() => {
        const others = ctx.sema.bindings(l.text).filter((b) => !values.some((v) => v.id === b.id));
        return others.length > 0 && others.every((b) => isDataLoaderCall(ctx, b) || !!loaderFactory(ctx, b));
      })());
      // a loader the file does not make (`data_loader = self.celeba_loader` ... `data_iter = iter(data_loader)`, StarGAN's
      // solver): reported without a fix by callers that accept opaque loaders
      const opaque = loaders.every((l) => l.text === loaders[0].text) && !plain(loaders[0]) && opaqueIterable(ctx, loaders[0], call);
      if (!loaders.every((l) => l.text === loaders[0].text) || (!plain(loaders[0]) && !opaque)) continue;
      // itertools.cycle keeps every item of the first pass and replays it: a wrapped loader's batches would stay in device
      // memory and later steps would pull no new batch from MpDeviceLoader (no per-step sync): no wrap is offered
      const cached = values.some((v) => (ctx.sema.callee(v) ?? v.childForFieldName('function')?.text) === 'itertools.cycle');
      entry = { iterName: src.text, loaders, names: new Set(), pulls: [], cached, ...(opaque ? { opaque } : {}) };
      byIter.set(src.text, entry);
    }
    entry.pulls.push(call);
    for (const n of targetNames(assign.childForFieldName('left'))) entry.names.add(n);
  }
  return [...byIter.values()];
}

/**
 * `cycle(loader)` / `itertools.cycle(loader)`, or a same-file generator that re-iterates its parameter forever
 * (`def sample_data(loader): while True: for batch in loader: yield batch`, stylegan2): `next()` of it pulls the
 * loader's own batches.
 */
function cyclesOver(ctx: RuleContext, call: Node): boolean {
  const q = ctx.sema.callee(call) ?? call.childForFieldName('function')?.text ?? '';
  if (q === 'itertools.cycle') return true;
  const defs = ctx.sema.calledFunctions(call);
  if (defs.length !== 1) return false;
  const param = paramNames(defs[0])[0];
  const body = defs[0].childForFieldName('body');
  if (!param || !body) return false;
  // a `for` over the parameter whose body yields the items
  return ctx.sema.within('for_statement', body).some((f) => f.childForFieldName('right')?.text === param && /^\s*yield\b/m.test(f.childForFieldName('body')?.text ?? ''));
}

/** A plain DataLoader whose batches a hot loop copies to the device by hand (TPU401), and how to wrap it. */
export interface HandMoved {
  /** The loader expression to report (the `for` iterable, or the first `iter(<loader>)` argument). */
  loader: Node;
  /** Every loader expression to replace by the wrapped loader (each `iter(<loader>)` of a hand-pulled iterator). */
  sites: Node[];
  /** The first `.to(device)`/`.cuda()` of a batch item. */
  move: Node;
  /** The device the loop moves to. */
  device: Snippet;
  /** `data_iter` when batches are pulled with `next(data_iter)`. */
  iterName: string | null;
  /** The `next(data_iter)` calls in the loop body (none for a `for` over the loader). */
  pulls: Node[];
  /** The loader is a parameter of a function in a file that builds no DataLoader: what its callers pass is unknown here. */
  param?: boolean;
  /** The loader is made where this file does not show (a loader attribute, DeepSpeed's loader): no fix here. */
  opaque?: boolean;
  /** Batches come through `itertools.cycle`, which replays its first pass: no wrap is right. */
  cached?: boolean;
}

/**
 * `name` is an assignment target anywhere in the file, tuple targets of a call included (`train_loader, valid_loader =
 * BucketIterator.splits(...)` in a notebook cell): then the name is no engine's opaque parameter.
 */
function assignedAnywhere(ctx: RuleContext, name: string, loop: Node): boolean {
  const fn = ctx.sema.enclosingFunction(loop)?.id;
  return ctx.sema.nodes('assignment').some((a) => {
    const left = a.childForFieldName('left');
    if (!left || !(left.text === name || ((left.type === 'pattern_list' || left.type === 'tuple_pattern') && targetNames(left).has(name)))) return false;
    // module level (a notebook cell, a script's globals) or the loop's own function; another function's local is another variable
    const at = ctx.sema.enclosingFunction(a)?.id;
    return at === undefined || at === fn;
  });
}

/** The loader is handed to a framework (`accelerator.prepare(..., train_dataloader, ...)`, Fabric's `setup_dataloaders`), which then owns it. */
export function preparedByFramework(ctx: RuleContext, loader: Node): boolean {
  const name = loader.text;
  // `model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)`: the name is rebound
  // to the prepared loader (a prepare whose result goes to other names leaves this one plain)
  const prepares = (c: Node): boolean => {
    if (!/^(prepare|prepare_data_loader|setup_dataloaders)$/.test(methodName(c) ?? '') || !callArgs(c).positional.some((a) => a.text === name)) return false;
    const left = c.parent?.type === 'assignment' ? c.parent.childForFieldName('left') : null;
    return !!left && (left.text === name || targetNames(left).has(name));
  };
  return ctx.sema.callsNamedAny(['prepare', 'prepare_data_loader', 'setup_dataloaders']).some(prepares);
}

/** `name` is a parameter of the function enclosing `node` (`loader`, `loader=None`, `dataloader: DataLoader`, `loader: Iterable = None`). */
function isParameterOf(ctx: RuleContext, node: Node, name: string): boolean {
  const fn = ctx.sema.enclosingFunction(node);
  const params = fn?.childForFieldName('parameters')?.namedChildren ?? [];
  // typed_parameter has no name field
  return params.some((p) => p?.text === name || p?.childForFieldName('name')?.text === name || (p?.type === 'typed_parameter' && p.namedChildren[0]?.text === name));
}

function moveDevice(ctx: RuleContext, move: Node, loop: Node): Snippet {
  const arg = methodName(move) === 'to' ? callArgs(move).positional[0] ?? kwValue(callArgs(move).keywords.get('device')) : null;
  return arg && (arg.type === 'identifier' || arg.type === 'attribute') ? { text: arg.text, imports: [], needsAccel: false } : deviceExprFor(ctx, loop);
}

const LOADER_ATTR = /(^|_)(loader|dataloader)$|^(train|eval|val|test)_?(loader|dl)$/i;

/** `iter(x)` of a loader this file does not make: a loader attribute, or a local bound only to loader attributes. */
function opaqueIterable(ctx: RuleContext, it: Node, at: Node): boolean {
  if (it.type === 'attribute') return LOADER_ATTR.test(lastName(it)) && !ctx.sema.bindings(it.text).some((v) => isWrapperCall(ctx, v));
  if (it.type !== 'identifier') return false;
  const fn = ctx.sema.enclosingFunction(at)?.id;
  const values = ctx.sema.bindings(it.text).filter((v) => ctx.sema.enclosingFunction(v)?.id === fn);
  const attr = (v: Node | null | undefined): boolean => !!v && v.type === 'attribute' && LOADER_ATTR.test(lastName(v)) && !ctx.sema.bindings(v.text).some((w) => isWrapperCall(ctx, w));
  // `self.face_loader if dataset == 'faces' else self.scene_loader`
  const pick = (v: Node) => v.type === 'conditional_expression' ? attr(v.namedChildren[0]) && attr(v.namedChildren[2]) : attr(v);
  return values.length > 0 && values.every(pick);
}
const DS_INIT = /^deepspeed\.initialize$/;

/**
 * A loader whose construction this file does not show but whose role is plain: an attribute named as a loader
 * (`self.train_loader`, `data['train'].dataloader`), a local bound only to one, or the third value of
 * `deepspeed.initialize(..., training_data=ds)` (DeepSpeed's loader yields CPU batches, deepspeed/runtime/dataloader.py).
 */
function opaqueLoader(ctx: RuleContext, it: Node, loop: Node): boolean {
  if (it.type === 'attribute') return LOADER_ATTR.test(lastName(it)) && !ctx.sema.bindings(it.text).some((v) => isWrapperCall(ctx, v));
  if (it.type !== 'identifier') return false;
  const fn = ctx.sema.enclosingFunction(loop)?.id;
  const values = ctx.sema.bindings(it.text).filter((v) => ctx.sema.enclosingFunction(v)?.id === fn);
  if (values.length && values.every((v) => v.type === 'attribute' && LOADER_ATTR.test(lastName(v)))) return true;
  for (const a of ctx.sema.nodes('assignment')) {
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (right?.type !== 'call' || !DS_INIT.test(ctx.sema.callee(right) ?? '') || (left?.type !== 'pattern_list' && left?.type !== 'tuple_pattern')) continue;
    if (left.namedChildren.filter((c) => !!c && c.type !== 'comment')[2]?.text === it.text && callArgs(right).keywords.has('training_data')) return true;
  }
  return false;
}

const OTHER_ACCEL = /\b(xpu|npu|mps|hpu|mlu)\b/;

/**
 * The plain DataLoaders a hot loop moves batches of by hand: a `for` over the loader (or over a loader
 * parameter in a file that builds DataLoaders and wraps none), or `batch = next(data_iter)` with
 * `data_iter = iter(loader)` (minGPT's trainer).
 */
export function handMovedLoaders(ctx: RuleContext, loop: Node, opts: { anyParam?: boolean; plainOnly?: boolean; cached?: boolean } = {}): HandMoved[] {
  const out: HandMoved[] = [];
  if (loop.type === 'for_statement') {
    const it = iteratedLoader(ctx, loop);
    if (it) {
      let plain = isPlainDataLoader(ctx, it);
      let param = false;
      if (!plain && !opts.plainOnly && it.type === 'identifier' && /(loader|_dl|^dl)$/i.test(it.text) && !fileWrapsLoaders(ctx) && isParameterOf(ctx, loop, it.text) && (buildsLoaders(ctx) ? ctx.sema.bindings(it.text).length === 0 : !assignedAnywhere(ctx, it.text, loop))) {
        // a loader passed in as a parameter of the enclosing function: in a file that builds DataLoaders (and wraps
        // none) it is one of them; elsewhere (`engine.train_one_epoch(model, criterion, data_loader, ...)`, DETR/DeiT)
        // only with `anyParam`, unfixable here: its callers decide what it is (TPU401 reports the move, no fix)
        if (buildsLoaders(ctx)) plain = true;
        else if (opts.anyParam && !ctx.sema.xlaAware) plain = param = true;
      }
      // a loader of unknown make in a file that never touches torch_xla (so it cannot be an MpDeviceLoader): a loader
      // attribute (`self.train_loader`, `data['train'].dataloader`) or the loader `deepspeed.initialize` returns; the
      // wrap belongs where it is made (no fix here)
      let opaque = false;
      if (!plain && !opts.plainOnly && opts.anyParam && !ctx.sema.xlaAware && !fileWrapsLoaders(ctx) && opaqueLoader(ctx, it, loop)) plain = param = opaque = true;
      const moves = plain ? batchMoves(ctx, loop) : [];
      // the copy to report: not one to another vendor's accelerator (`batch[key].to('xpu:0')` under `is_xpu_available()`)
      const move = moves.find((m) => !OTHER_ACCEL.test(m.text)) ?? moves[0];
      if (move) out.push({ loader: it, sites: [it], move, device: moveDevice(ctx, move, loop), iterName: null, pulls: [], param, opaque });
    }
  }
  const body = loop.childForFieldName('body');
  if (body) {
    for (const { iterName, loaders, names, pulls, cached, opaque } of nextBatches(ctx, body)) {
      const moves = movesOf(ctx, body, names);
      // an `itertools.cycle` iterator only for callers that say so (`opts.cached`): wrapping its loader is no fix
      if (cached && !opts.cached) continue;
      // an opaque loader only for callers that take loaders of unknown make (TPU401 outside frameworks)
      if (opaque && (opts.plainOnly || !opts.anyParam || ctx.sema.xlaAware || fileWrapsLoaders(ctx))) continue;
      if (moves.length) out.push({ loader: loaders[0], sites: loaders, move: moves[0], device: moveDevice(ctx, moves[0], loop), iterName, pulls, ...(cached ? { cached } : {}), ...(opaque ? { opaque, param: true } : {}) });
    }
  }
  return out;
}

/**
 * The loader wrapped for XLA, always onto the XLA device: `MpDeviceLoader` rejects any other device on its first batch, so
 * never the loop's old device (an int rank that `torch.device()` turns into `cuda:N`, the CPU an if/elif picker chose).
 * Dual-path: `accel.xla_loader(loader)`, which is the loader itself off XLA (the loop's `.to(device)` calls still move
 * its batches, so CPU and CUDA runs are unchanged). tpu-only: `pl.MpDeviceLoader(loader, torch_xla.device())` (PL:253).
 */
export function xlaWrap(ctx: RuleContext, loader: string): Snippet | null {
  if (ctx.idiom.dualPath) {
    const x = ctx.idiom.isXla();
    return { ...x, text: x.text.replace(/is_xla\(\)$/, `xla_loader(${loader})`) };
  }
  const dev = ctx.idiom.device();
  const wrap = ctx.idiom.wrapLoader(loader, dev.text);
  return wrap ? { ...wrap, imports: [...dev.imports, ...wrap.imports] } : null;
}

/**
 * A `.cuda()`/`.to(...)` under a CUDA-availability guard (`if train_on_gpu: model.cuda()`, `x.cuda() if use_cuda else x`):
 * that guard, false on a TPU host, decides where the model and the batches go, so a wrapped loader would feed XLA batches
 * to a CPU model. No loader wrap is offered then.
 */
export function cudaGuardedPlacement(ctx: RuleContext): Node | null {
  const memo = guardedMemo.get(ctx.sema);
  if (memo !== undefined) return memo;
  let found: Node | null = null;
  for (const call of ctx.sema.nodes('call')) {
    const m = methodName(call);
    if (m !== 'cuda' && m !== 'to') continue;
    const recv = receiver(call);
    if (!recv || ctx.sema.resolve(recv) === 'torch') continue;
    if (cudaGuarded(call)) {
      found = call;
      break;
    }
  }
  guardedMemo.set(ctx.sema, found);
  return found;
}
const guardedMemo = new WeakMap<object, Node | null>();

/** A batch copy in a helper that another module's training loop hands its batch to (TPU401 across modules). */
export interface CallerBatchMove {
  /** The first `.to(device)`/`.cuda()` of the batch parameter in the helper. */
  move: Node;
  /** The helper's definition. */
  def: Node;
  /** The caller's module, its call of the helper, and the loop over the batches. */
  path: string;
  call: Node;
  loop: Node;
  /** When `move` is a call of another module's mover: the copy in its body. */
  inner?: { path: string; node: Node };
}

/**
 * A call in `def`'s own body that hands one of `names` to a function of another project module whose body copies that
 * parameter to the device (`.cuda()`/`.to(device)` of it, after plain rebindings of the same name): the call and the copy.
 */
function projectHelperMove(ctx: RuleContext, def: Node, body: Node, names: Set<string>): { call: Node; inner: { path: string; node: Node } } | null {
  const project = ctx.project;
  if (!project) return null;
  for (const call of ctx.sema.callsWithin(body)) {
    if (ctx.sema.enclosingFunction(call)?.id !== def.id) continue;
    const { positional } = callArgs(call);
    const at = positional.findIndex((a) => a.type === 'identifier' && names.has(a.text));
    if (at < 0) continue;
    const r = project.resolveCall(call, ctx.sema, ctx.path);
    if (r?.kind !== 'function') continue;
    const param = paramNames(r.def)[at];
    if (!param) continue;
    const sema = r.module.sema;
    const copy = sema.within('call', r.def).find((c) => {
      if (sema.enclosingFunction(c)?.id !== r.def.id) return false;
      const m = methodName(c);
      if (m !== 'cuda' && !(m === 'to' && callArgs(c).positional.length + callArgs(c).keywords.size > 0 && !/dtype|torch\.(float|bfloat|half|int|long|bool|double)/.test(c.childForFieldName('arguments')?.text ?? ''))) return false;
      return rootName(receiver(c)) === param && !OTHER_ACCEL.test(c.text) && !/['"]cpu['"]/.test(c.text);
    });
    if (copy) return { call, inner: { path: r.path, node: copy } };
  }
  return null;
}

/**
 * Functions of this module that a training loop of another project module calls with its batch
 * (`for data in loader: model.set_input(data)`, `model.forward_backward(data, ...)`), whose body copies that parameter
 * to the device (`input['A'].to(self.device)`, `images["crops"].cuda(non_blocking=True)`): the copy, with the caller.
 * The caller's module must not use torch_xla nor wrap loaders (its loop could then iterate an MpDeviceLoader), and the
 * loop must iterate something other than `range(...)`.
 */
export function callerBatchMoves(ctx: RuleContext): CallerBatchMove[] {
  if (!ctx.project) return [];
  const out: CallerBatchMove[] = [];
  for (const def of ctx.sema.nodes('function_definition')) {
    const body = def.childForFieldName('body');
    const first = body?.namedChildren.find((c) => !!c && c.type !== 'comment');
    const hot = first ? ctx.sema.hot(first) : null;
    if (!body || !hot?.via?.length || hot.anchor.id !== def.id || hot.kind !== 'train') continue;
    const params = paramNames(def);
    const method = params[0] === 'self';
    for (const via of hot.via) {
      if (via.kind !== 'train') continue;
      const m = ctx.project.module(via.path);
      if (!m || m.sema.xlaAware) continue;
      let call: Node | null = m.tree.rootNode.descendantForIndex(via.start, via.end);
      while (call && !(call.type === 'call' && call.startIndex === via.start && call.endIndex === via.end)) call = call.parent;
      if (!call) continue;
      let loop: Node | null = call.parent;
      while (loop && loop.type !== 'for_statement' && loop.type !== 'function_definition') loop = loop.parent;
      if (loop?.type !== 'for_statement') continue;
      const right = loop.childForFieldName('right');
      if (right?.type === 'call' && /^range$/.test(right.childForFieldName('function')?.text ?? '')) continue;
      if (m.sema.nodes('call').some((c) => WRAPPERS.test(m.sema.callee(c) ?? c.childForFieldName('function')?.text ?? ''))) continue;
      const names = targetNames(loop.childForFieldName('left'));
      const { positional } = callArgs(call);
      const at = positional.findIndex((a) => (a.type === 'identifier' || a.type === 'subscript') && names.has(rootName(a) ?? ''));
      const param = at >= 0 ? params[at + (method ? 1 : 0)] : undefined;
      if (!param || param === 'self') continue;
      const moves = movesOf(ctx, body, new Set([param]), false).filter((mv) => ctx.sema.enclosingFunction(mv)?.id === def.id);
      const move = moves.find((mv) => !OTHER_ACCEL.test(mv.text)) ?? moves[0];
      if (move) {
        out.push({ move, def, path: via.path, call, loop });
        break;
      }
      // the batch unpacked and handed to another module's mover (`text, lengths, mel = batch; text = to_gpu(text)`
      // where utils.to_gpu does `x.contiguous().cuda(non_blocking=True)`, tacotron2's parse_batch)
      const viaHelper = projectHelperMove(ctx, def, body, unpacked(ctx, body, new Set([param])));
      if (viaHelper) {
        out.push({ move: viaHelper.call, def, path: via.path, call, loop, inner: viaHelper.inner });
        break;
      }
    }
  }
  return out;
}

/**
 * Names of the functions this file hands a DataLoader as `collate_fn`: `collate_fn=pad`, `collate_fn=self.collate` (by its
 * attribute), and the function a lambda or `partial` wraps (`collate_fn=lambda batch: collate_tts(batch, r)`,
 * `collate_fn=partial(collate_tts, r=r)`).
 */
export function collateFnNames(ctx: RuleContext): Set<string> {
  const names = new Set<string>();
  for (const kw of ctx.sema.nodes('keyword_argument')) {
    if (kw.childForFieldName('name')?.text !== 'collate_fn') continue;
    const v = kwValue(kw);
    if (v?.type === 'identifier') names.add(v.text);
    if (v?.type === 'attribute') names.add(v.childForFieldName('attribute')?.text ?? '');
    if (v?.type === 'lambda' || v?.type === 'call') for (const id of ctx.sema.within('identifier', v)) names.add(id.text);
  }
  return names;
}

/** Functions used as a DataLoader `collate_fn` (by name) or named like a collate function, with the same-file helpers they call (two levels). */
export function collateFunctions(ctx: RuleContext): Node[] {
  const names = collateFnNames(ctx);
  const direct = ctx.sema.nodes('function_definition').filter((f) => {
    const n = f.childForFieldName('name')?.text ?? '';
    return names.has(n) || /collate/i.test(n) || n === '__call__' && /collat/i.test(ctx.sema.enclosingClass(f)?.childForFieldName('name')?.text ?? '');
  });
  // same-file helpers a collate function calls (DETR: `collate_fn` → `nested_tensor_from_tensor_list`), two levels
  const out = [...direct];
  const seen = new Set(direct.map((f) => f.id));
  for (let level = 0, frontier = direct; level < 2; level++) {
    const next: Node[] = [];
    for (const f of frontier) {
      for (const call of ctx.sema.callsWithin(f)) {
        for (const g of ctx.sema.calledFunctions(call)) {
          if (seen.has(g.id)) continue;
          seen.add(g.id);
          next.push(g);
        }
      }
    }
    out.push(...next);
    frontier = next;
  }
  return out;
}
