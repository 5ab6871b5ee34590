/** Helpers of the checkpoint family (TPU601–TPU604): save/load calls, device state, master guards, SPMD context. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, kwValue, methodName, receiver } from '../../core/semantics';
import type { Semantics } from '../../core/semantics';
import { lastName, reachesInProject } from '../../model/facts';
import { hotFacts, type HotFacts } from '../../model/hotAcross';
import { ProgramModel } from '../../model/index';
import { projectResolver } from '../../model/crossModule';
import type { ModuleEntry } from '../../model/project';

export const TORCH_SAVE = 'torch.save';
export const XM_SAVE = 'torch_xla.core.xla_model.save';
export const XSER_SAVE = 'torch_xla.utils.serialization.save';
export const XSER_LOAD = 'torch_xla.utils.serialization.load';

/** The object and path arguments of `torch.save(obj, f)` / `xm.save(data, file_or_path)` / `xser.save(data, path)`. */
export function saveArgs(call: Node): { obj: Node | null; path: Node | null; extra: string[] } {
  const { positional, keywords } = callArgs(call);
  const obj = positional[0] ?? kwValue(keywords.get('obj')) ?? kwValue(keywords.get('data'));
  const path = positional[1] ?? kwValue(keywords.get('f')) ?? kwValue(keywords.get('file_or_path')) ?? kwValue(keywords.get('path'));
  const extra = [...keywords.keys()].filter((k) => !['obj', 'data', 'f', 'file_or_path', 'path'].includes(k));
  if (positional.length > 2) extra.push('positional');
  return { obj, path, extra };
}

const CPU_MOVE = /\.cpu\(\)|\.to\(\s*(['"])cpu\1|\.to\(\s*device\s*=\s*(['"])cpu\2|torch\.device\(\s*(['"])cpu\3\s*\)|_maybe_convert_to_cpu|\.numpy\(\)|\.tolist\(\)|\.item\(\)/;

/**
 * Whether a saved object holds device tensors: a `state_dict()` (of a model, optimizer, scheduler), a dict
 * holding one, or a tensor-valued expression; names are followed through their bindings. Explicit CPU
 * copies (`.cpu()`, `.to("cpu")`) are not device state.
 */
export function holdsDeviceState(ctx: RuleContext, node: Node | null, depth = 0): boolean {
  if (!node || depth > 4) return false;
  if (CPU_MOVE.test(node.text)) return false;
  switch (node.type) {
    case 'call': {
      const meth = methodName(node);
      if (meth === 'state_dict') {
        const recv = receiver(node);
        return !recv || !movedToCpu(ctx, recv.text, node);
      }
      if ((ctx.sema.callee(node) ?? node.childForFieldName('function')?.text) === 'dict') return node.childForFieldName('arguments')!.namedChildren.some((a) => !!a && holdsDeviceState(ctx, a.type === 'keyword_argument' ? kwValue(a) : a, depth + 1));
      if (ctx.model.isDeviceTensor(node) && !ctx.sema.callee(node)?.startsWith('torch.load')) return true;
      return builtByHelper(ctx, node, depth);
    }
    case 'keyword_argument':
      return holdsDeviceState(ctx, kwValue(node), depth + 1);
    case 'dictionary':
      return node.namedChildren.some((p) => p?.type === 'pair' && holdsDeviceState(ctx, p.childForFieldName('value'), depth + 1));
    case 'list':
    case 'tuple':
      return node.namedChildren.some((c) => !!c && holdsDeviceState(ctx, c, depth + 1));
    case 'identifier': {
      // `for k, v in sd.items(): sd[k] = v.cpu()` before the save (KAIR's save_network): its items are CPU copies
      if (itemsCopiedToCpu(ctx, node)) return false;
      // a whole module pickled with its parameters (`torch.save([actor_critic, obs_rms], path)`, `dict(net=net)`) after
      // the file moved it to the device (`actor_critic.to(device)`, `net.train().requires_grad_(True).to(device)`)
      if (moduleOnDevice(ctx, node)) return true;
      const bound = ctx.sema.bindings(node.text).filter((v) => v.startIndex < node.startIndex);
      if (bound.some((v) => holdsDeviceState(ctx, v, depth + 1))) return true;
      // checkpoint["model"] = model.state_dict()
      return ctx.sema.nodes('assignment').some((a) => {
        const left = a.childForFieldName('left');
        return left?.type === 'subscript' && left.childForFieldName('value')?.text === node.text && a.startIndex < node.startIndex && holdsDeviceState(ctx, a.childForFieldName('right'), depth + 1);
      });
    }
    default:
      return false;
  }
}

/**
 * A whole module on the device inside the saved object (`torch.save([actor_critic, obs_rms], path)`,
 * `dict(net=net, optimizer_state=...)`, `torch.save(model, path)`): `xm.save` does not move its parameters to the CPU
 * (its select_fn takes `type(v) == torch.Tensor` only, not `nn.Parameter`: torch_xla/core/xla_model.py:1264 at
 * pytorch/xla@41398bf, 1234 at v2.3.0), so no `xm.save` fix is right for it.
 */
export function deviceModuleIn(ctx: RuleContext, node: Node | null, depth = 0): Node | null {
  if (!node || depth > 3) return null;
  if (node.type === 'identifier') return moduleOnDevice(ctx, node) ? node : null;
  if (node.type === 'keyword_argument') return deviceModuleIn(ctx, kwValue(node), depth + 1);
  if (node.type === 'pair') return deviceModuleIn(ctx, node.childForFieldName('value'), depth + 1);
  const items = node.type === 'list' || node.type === 'tuple' || node.type === 'dictionary'
    ? node.namedChildren
    : node.type === 'call' && node.childForFieldName('function')?.text === 'dict' ? node.childForFieldName('arguments')?.namedChildren ?? [] : [];
  for (const c of items) {
    const hit = c ? deviceModuleIn(ctx, c, depth + 1) : null;
    if (hit) return hit;
  }
  return null;
}

/**
 * `name` is a module (the program model's value) that a call before `node` in the same function moves to a device:
 * `name.to(device)`, `name.cuda()`, or a chain on it ending so (`net.train().to(device)`); not `.to('cpu')`, not a dtype cast.
 */
function moduleOnDevice(ctx: RuleContext, node: Node): boolean {
  const kind = ctx.model.value(node).kind;
  if (kind !== 'module' && kind !== 'unknown') return false;
  const fn = ctx.sema.enclosingFunction(node)?.id;
  // the `.to`/`.cuda` calls of the file, in the same order (the test below asks the model of their arguments)
  return ctx.sema.callsNamedAny(['to', 'cuda']).some((c) => {
    // of a value of unknown kind, only an in-place move counts (`net.to(device)` as a statement: a module; a tensor's
    // `.to` returns a copy)
    if (kind === 'unknown' && c.parent?.type !== 'expression_statement') return false;
    const m = methodName(c);
    if ((m !== 'to' && m !== 'cuda') || c.startIndex > node.startIndex || ctx.sema.enclosingFunction(c)?.id !== fn) return false;
    let r = receiver(c);
    while (r?.type === 'call' && /^(train|eval|requires_grad_|float|half|bfloat16|to|cuda)$/.test(methodName(r) ?? '')) r = receiver(r);
    if (r?.type !== 'identifier' || r.text !== node.text) return false;
    if (m === 'cuda') return true;
    const a = callArgs(c).positional[0] ?? kwValue(callArgs(c).keywords.get('device'));
    return !!a && !/cpu/.test(a.text) && ctx.model.value(a).kind !== 'dtype' && !/^torch\.(float|bfloat|half|int|long|bool|double|uint)/.test(a.text);
  });
}

// helpers that build a checkpoint from the objects they are given (open_clip's `save_checkpoint(task, optimizer, ...)`
// returning the dict it writes, `get_state_dict(model)`), by name, when given a model or an optimizer
const STATE_BUILDER = /(^|_)(checkpoint|ckpt|state_dict|states?)(_|$)/i;
const STATEFUL_ARG = /^(model|models|net|network|module|task|optimizer|optim|opt|scheduler|lr_scheduler|scaler|ema|model_ema|ema_model|model_without_ddp|unwrapped_model)$/i;
const builtMemo = new WeakMap<Node, boolean>();

/**
 * A call of a helper whose result holds device state: a function of this file or of another project module whose
 * returns hold device state (a dict of `state_dict()`s), or, when its definition is not in the project, a helper named
 * for checkpoints (`save_checkpoint`, `get_state_dict`) given a model or an optimizer.
 */
function builtByHelper(ctx: RuleContext, call: Node, depth: number): boolean {
  const fn = call.childForFieldName('function');
  if (!fn || (fn.type !== 'identifier' && fn.type !== 'attribute') || ctx.sema.callee(call)?.startsWith('torch')) return false;
  const memo = builtMemo.get(call);
  if (memo !== undefined) return memo;
  builtMemo.set(call, false);
  let out = false;
  const local = fn.type === 'identifier' || fn.childForFieldName('object')?.text === 'self' ? ctx.sema.calledFunctions(call) : [];
  const r = !local.length && ctx.project ? ctx.project.resolveCall(call, ctx.sema, ctx.path) : null;
  if (local.length === 1) {
    const def = local[0];
    out = ctx.sema.within('return_statement', def).some((ret) => ctx.sema.enclosingFunction(ret)?.id === def.id && holdsDeviceState(ctx, ret.namedChildren[0] ?? null, depth + 1));
  } else if (r && r.kind === 'function' && ctx.project) {
    const other = moduleContext(ctx, r.module);
    out = r.module.sema.within('return_statement', r.def).some((ret) => r.module.sema.enclosingFunction(ret)?.id === r.def.id && holdsDeviceState(other, ret.namedChildren[0] ?? null, depth + 1));
  } else if (!local.length && !r && STATE_BUILDER.test(lastName(fn))) {
    const { positional, keywords } = callArgs(call);
    out = [...positional, ...[...keywords.values()].map((k) => kwValue(k)).filter((v): v is Node => !!v)].some((a) => STATEFUL_ARG.test(lastName(a)) || ctx.model.value(a).kind === 'module');
  }
  builtMemo.set(call, out);
  return out;
}

/** `model.cpu()` / `model.to("cpu")` as a statement before `at`. */
function movedToCpu(ctx: RuleContext, recv: string, at: Node): boolean {
  const esc = recv.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`(^|[^\\w.])${esc}\\s*(=\\s*${esc}\\s*)?\\.(cpu\\(\\)|to\\(\\s*(['"])cpu\\4)`);
  return re.test(ctx.text.slice(0, at.startIndex));
}

const MASTER = /\b(master_process|is_master|is_main_process|is_main|is_local_main_process|is_world_process_zero|is_local_master|main_process)\b|\bis_master_ordinal\(|\b\w*rank\w*(\(\))?\s*(==\s*0\b|in\s*[[({]\s*-1\s*,\s*0\s*[\])}])|\b(global_ordinal|get_ordinal|local_ordinal)\(\)\s*==\s*0\b/;

/** The innermost `if` whose condition is a master/rank-0 check and whose body holds `node`. */
export function masterGuard(node: Node): Node | null {
  for (let p: Node | null = node.parent, child: Node = node; p; child = p, p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'module') return null;
    if (p.type === 'if_statement' && p.childForFieldName('consequence')?.id === child.id && MASTER.test(p.childForFieldName('condition')?.text ?? '')) return p;
  }
  return null;
}

/** A condition that is only a master check (no `and`/`or`). */
export function isPureMasterCheck(ifNode: Node): boolean {
  const cond = ifNode.childForFieldName('condition');
  return !!cond && MASTER.test(cond.text) && !/\b(and|or)\b/.test(cond.text);
}

const MULTI = new Set([
  'torch.distributed.init_process_group', 'torch.multiprocessing.spawn', 'torch_xla.distributed.xla_multiprocessing.spawn', 'torch_xla.launch',
  'torch.nn.parallel.DistributedDataParallel', 'torch.distributed.get_rank', 'torch.distributed.get_world_size', 'torch_xla.runtime.world_size',
  'torch_xla.runtime.global_ordinal', 'torch_xla.core.xla_model.get_ordinal', 'torch_xla.core.xla_model.xrt_world_size', 'torch_xla.runtime.local_ordinal',
]);

/** The file runs several processes (a launcher, a process group, DDP, rank reads). */
export function isMultiProcess(ctx: RuleContext): boolean {
  if (ctx.sema.nodes('call').some((c) => MULTI.has(ctx.sema.callee(c) ?? ''))) return true;
  return ctx.sema.nodes('string').some((s) => /^['"](LOCAL_RANK|RANK|WORLD_SIZE)['"]$/.test(s.text));
}

/** SPMD or FSDPv2 code: sharded tensors that need distributed checkpointing (TPU603). */
export function isSpmd(ctx: RuleContext): boolean {
  if (ctx.sema.imports('torch_xla.experimental.spmd_fully_sharded_data_parallel')) return true;
  return ctx.sema.nodes('call').some((c) => /^torch_xla\.(runtime\.use_spmd|distributed\.spmd\.(mark_sharding|Mesh)|experimental\.xla_sharding\.mark_sharding)$/.test(ctx.sema.callee(c) ?? ''));
}

const FSDP1 = /^torch_xla\.distributed\.fsdp\.(xla_fully_sharded_data_parallel\.)?XlaFullyShardedDataParallel$/;

/** Names bound to a torch_xla FSDP (v1) wrapper, and whether the file wraps with it at all. */
export function fsdpV1(ctx: RuleContext): { used: boolean; names: Set<string> } {
  const names = new Set<string>();
  let used = false;
  for (const c of ctx.sema.nodes('call')) {
    if (!FSDP1.test(ctx.sema.callee(c) ?? '')) continue;
    used = true;
    const a = c.parent;
    if (a?.type === 'assignment') {
      const left = a.childForFieldName('left');
      if (left?.type === 'identifier') names.add(left.text);
    }
  }
  return { used, names };
}

/** The file references CUDA: `.cuda()`, a CUDA device expression, or `torch.cuda.*`. */
export function referencesCuda(ctx: RuleContext): boolean {
  if (ctx.sema.nodes('call').some((c) => methodName(c) === 'cuda')) return true;
  if (ctx.sema.nodes('string').some((s) => ctx.sema.isCudaString(s))) return true;
  return ctx.sema.nodes('attribute').some((a) => (ctx.sema.resolve(a) ?? '').startsWith('torch.cuda.'));
}

/** The file moves work to an accelerator (XLA-aware, or CUDA placement): saved state is device state. */
export function placesOnDevice(ctx: RuleContext): boolean {
  return ctx.sema.xlaAware || referencesCuda(ctx) || ctx.sema.nodes('call').some((c) => {
    if (methodName(c) !== 'to') return false;
    const a = callArgs(c).positional[0] ?? kwValue(callArgs(c).keywords.get('device'));
    // the training device in a variable or an attribute chain (`device`, `args.device`, `self.args.device`, `cfg.train.device`; not `x.device`, a tensor's own)
    return !!a && (ctx.model.namesCuda(a) || /^((self|args|opt|opts|cfg|config|hparams|params|FLAGS)\.(\w+\.){0,2})?(device|dev)$/.test(a.text));
  });
}

/** First `import torch…` statement: where file-level advice is anchored. */
export function torchImport(ctx: RuleContext): Node | null {
  const stmts = [...ctx.sema.nodes('import_statement'), ...ctx.sema.nodes('import_from_statement')].sort((a, b) => a.startIndex - b.startIndex);
  return stmts.find((s) => /^(import|from)\s+torch(\.|\s|,|$)/.test(s.text)) ?? null;
}

/** Save wrappers of other modules are named for it (save_on_master, save_checkpoint, save_model): others are not resolved. */
const SAVE_NAME = /save|ckpt|checkpoint/i;

/** A save wrapper's `torch.save`: in another module of the project (`path`), or in this file (`path` absent). */
export interface WrappedSave {
  /** The caller's argument that reaches `torch.save` as the saved object. */
  obj: Node;
  /** The `torch.save` call inside the wrapper. */
  save: Node;
  /** The wrapper's definition. */
  def: Node;
  path?: string;
  /** The wrapper module's semantics (this file's for a same-file wrapper). */
  sema: Semantics;
}

/**
 * A call of a save wrapper (`utils.save_on_master(obj, path)` whose body calls `torch.save(*args, **kwargs)`, under a
 * rank-0 check), in another module of the project or in this file: the caller's argument that reaches `torch.save`
 * as the saved object, and the `torch.save` call in the wrapper.
 */
export function projectSaveWrapper(ctx: RuleContext, call: Node): WrappedSave | null {
  const local = call.childForFieldName('function')?.type === 'identifier' ? ctx.sema.calledFunctions(call) : [];
  let found: { save: Node; def: Node; path?: string; sema: Semantics; method: boolean } | null = null;
  if (local.length === 1) {
    const def = local[0];
    const save = ctx.sema.within('call', def).find((c) => ctx.sema.callee(c) === TORCH_SAVE && ctx.sema.enclosingFunction(c)?.id === def.id);
    if (save) found = { save, def, sema: ctx.sema, method: !!ctx.sema.enclosingClass(def) };
  } else if (ctx.project && SAVE_NAME.test(lastName(call.childForFieldName('function')!))) {
    const reached = reachesInProject(ctx, call, (s, c) => s.callee(c) === TORCH_SAVE, 1);
    if (reached && reached.callee.def.id === reached.sema.enclosingFunction(reached.node)?.id) {
      found = { save: reached.node, def: reached.callee.def, path: reached.path, sema: reached.sema, method: reached.callee.kind === 'method' };
    }
  }
  if (!found) return null;
  const saved = callArgs(found.save).positional[0] ?? null;
  const params = (found.def.childForFieldName('parameters')?.namedChildren ?? []).filter((p): p is Node => !!p);
  const { positional, keywords } = callArgs(call);
  let obj: Node | null = null;
  if (saved?.type === 'list_splat' && params.some((p) => p.type === 'list_splat_pattern' && p.text === saved.text)) obj = positional[0] ?? null;
  else if (saved?.type === 'identifier') {
    const i = params.findIndex((p) => (p.type === 'identifier' ? p.text : p.childForFieldName('name')?.text) === saved.text);
    if (i >= 0) obj = positional[i - (found.method ? 1 : 0)] ?? kwValue(keywords.get(saved.text));
  }
  return obj ? { obj, save: found.save, def: found.def, path: found.path, sema: found.sema } : null;
}

/** A caller of a save wrapper whose argument reaching `torch.save` holds device state. */
export interface WrapperCaller {
  /** The caller's call of the wrapper. */
  call: Node;
  /** Its module's path (absent: this file). */
  path?: string;
  line: number;
}

const callerModels = new WeakMap<ModuleEntry, ProgramModel>();

/** A rule context over another project module (its semantics, text and program model), for judging a caller there. */
export function moduleContext(ctx: RuleContext, m: ModuleEntry): RuleContext {
  return contextOf(ctx, m);
}

function contextOf(ctx: RuleContext, m: ModuleEntry): RuleContext {
  let model = callerModels.get(m);
  if (!model && ctx.project) callerModels.set(m, (model = new ProgramModel(m.sema, m.path, [projectResolver(ctx.project)])));
  return { ...ctx, path: m.path, text: m.text, root: m.sema.root, sema: m.sema, model: model!, notebook: null, report: () => undefined };
}

/**
 * The function enclosing `node` is called from other project modules that place work on a device (`cudaOnly`: on CUDA) (`save_model(model,
 * optimizer, opt, epoch, path)` in util.py, called by the training script): the state it builds from its parameters is
 * device state.
 */
export function calledFromDeviceCode(ctx: RuleContext, node: Node, cudaOnly = false): boolean {
  const facts = hotFacts(ctx.project);
  let fn = ctx.sema.enclosingFunction(node);
  if (!facts || !fn) return false;
  // a helper nested in the function (`def save_checkpoint(...): def helper(paths): torch.save(...)`): its callers are
  // the outer function's
  for (let outer = ctx.sema.enclosingFunction(fn); outer; outer = ctx.sema.enclosingFunction(outer)) fn = outer;
  const abs = (ctx.project as { abs?: (p: string) => string }).abs?.(ctx.path) ?? ctx.path;
  return placedByCallers(ctx, facts, abs, ctx.sema, fn, 1, cudaOnly);
}

const placesMemo = new WeakMap<Semantics, boolean>();
const cudaMemo = new WeakMap<Semantics, boolean>();

function placesOnDeviceIn(ctx: RuleContext, m: ModuleEntry, cudaOnly: boolean): boolean {
  const memo = cudaOnly ? cudaMemo : placesMemo;
  let r = memo.get(m.sema);
  if (r === undefined) memo.set(m.sema, (r = cudaOnly ? referencesCuda(contextOf(ctx, m)) : placesOnDevice(contextOf(ctx, m))));
  return r;
}

/**
 * Calls of other modules reach `def` (of the module at `path`) from a module that places work on a device: imported
 * calls, calls on an instance of its class (`model.save(p)`, `stopper(loss, model, p)`), the callers of a sibling
 * method that calls it on `self` (`__call__` -> `self.save_checkpoint(...)`), and, `depth` levels up, the callers of
 * the function making such a call (utils/checkpoints.py's `save_checkpoint(...)` -> `model.save(path)`).
 */
function placedByCallers(ctx: RuleContext, facts: HotFacts, path: string, sema: Semantics, def: Node, depth: number, cudaOnly: boolean): boolean {
  const refsOf = (d: Node) => (sema.enclosingClass(d) ? [...facts.callers(path, d), ...facts.instanceCallers(path, d)] : facts.callers(path, d));
  const defs = [def];
  const cls = sema.enclosingClass(def);
  const name = def.childForFieldName('name')?.text;
  if (cls && name) {
    for (const c of sema.within('call', cls)) {
      const f = c.childForFieldName('function');
      if (f?.type !== 'attribute' || f.childForFieldName('object')?.text !== 'self' || f.childForFieldName('attribute')?.text !== name) continue;
      const outer = sema.enclosingFunction(c);
      if (outer && !defs.some((d) => d.id === outer.id)) defs.push(outer);
    }
  }
  for (const d of defs) {
    for (const ref of refsOf(d)) {
      if (placesOnDeviceIn(ctx, ref.module, cudaOnly)) return true;
      if (depth <= 0) continue;
      let outer = ref.module.sema.enclosingFunction(ref.call);
      for (let o = outer ? ref.module.sema.enclosingFunction(outer) : null; o; o = ref.module.sema.enclosingFunction(o)) outer = o;
      if (outer && placedByCallers(ctx, facts, ref.module.path, ref.module.sema, outer, depth - 1, cudaOnly)) return true;
    }
  }
  return false;
}

/** The argument of a wrapper call that becomes `torch.save`'s object (`*args` forwarded, or a named parameter). */
function forwardedArg(call: Node, def: Node, save: Node, method: boolean): Node | null {
  const saved = callArgs(save).positional[0] ?? null;
  const params = (def.childForFieldName('parameters')?.namedChildren ?? []).filter((p): p is Node => !!p);
  const { positional, keywords } = callArgs(call);
  if (saved?.type === 'list_splat' && params.some((p) => p.type === 'list_splat_pattern' && p.text === saved.text)) return positional[0] ?? null;
  if (saved?.type === 'identifier') {
    const i = params.findIndex((p) => (p.type === 'identifier' ? p.text : p.childForFieldName('name')?.text) === saved.text);
    if (i >= 0) return positional[i - (method && call.childForFieldName('function')?.type === 'attribute' ? 1 : 0)] ?? kwValue(keywords.get(saved.text));
  }
  return null;
}

/**
 * Project scope, the wrapper's side: `torch.save` inside a function that forwards its argument (`save_on_master(*args,
 * **kwargs)`), and the callers (this file's and other modules') that pass it device state. Empty when the project cannot
 * list its files (the callers of other modules are unknown): the call sites are reported instead.
 */
export function deviceStateCallers(ctx: RuleContext, save: Node, stats?: { callers: number }): WrapperCaller[] | null {
  const facts = hotFacts(ctx.project);
  if (!facts) return null;
  const def = ctx.sema.enclosingFunction(save);
  if (!def) return [];
  const method = !!ctx.sema.enclosingClass(def);
  const out: WrapperCaller[] = [];
  const abs = (ctx.project as { abs?: (p: string) => string }).abs?.(ctx.path) ?? ctx.path;
  // a checkpoint module that places nothing itself (wenet's checkpoint.py: `save_checkpoint(model, path)` builds the
  // state dict and hands it to `save_state_dict_and_infos`): its state is device state when the modules calling the
  // caller place work on a device
  const placedByCallers = (call: Node) => {
    const outer = ctx.sema.enclosingFunction(call);
    return !!outer && facts.callers(abs, outer).some((ref) => placesOnDevice(contextOf(ctx, ref.module)));
  };
  for (const call of ctx.sema.callSitesOf(def)) {
    const arg = forwardedArg(call, def, save, method);
    if (stats && arg) stats.callers++;
    if (arg && (placesOnDevice(ctx) || placedByCallers(call)) && holdsDeviceState(ctx, arg)) out.push({ call, line: ctx.text.slice(0, call.startIndex).split('\n').length });
  }
  for (const ref of facts.callers(abs, def)) {
    const arg = forwardedArg(ref.call, def, save, method);
    if (!arg) continue;
    if (stats) stats.callers++;
    const other = contextOf(ctx, ref.module);
    if (!placesOnDevice(other) || !holdsDeviceState(other, arg)) continue;
    out.push({ call: ref.call, path: ref.module.path, line: ref.module.text.slice(0, ref.call.startIndex).split('\n').length });
  }
  return out;
}

/**
 * `name` has its items overwritten by CPU copies before `at`, in the same function: `for k, v in sd.items(): sd[k] = v.cpu()`
 * (a state dict written as CPU tensors), the loop over `name` itself.
 */
export function itemsCopiedToCpu(ctx: RuleContext, at: Node): boolean {
  const fn = ctx.sema.enclosingFunction(at)?.id;
  return ctx.sema.nodes('assignment').some((a) => {
    if (a.startIndex > at.startIndex || ctx.sema.enclosingFunction(a)?.id !== fn) return false;
    const left = a.childForFieldName('left');
    if (left?.type !== 'subscript' || left.childForFieldName('value')?.text !== at.text) return false;
    if (!/\.(cpu\(\)|to\(\s*(['"])cpu\2\s*\))$/.test(a.childForFieldName('right')?.text ?? '')) return false;
    let loop = a.parent;
    while (loop && loop.type !== 'for_statement' && loop.type !== 'function_definition') loop = loop.parent;
    return loop?.type === 'for_statement' && (loop.childForFieldName('right')?.text ?? '').startsWith(at.text);
  });
}
