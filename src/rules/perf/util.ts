/** Helpers shared by the perf (8xx) and notebook (9xx) rules. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, kwValue, stringContent } from '../../core/semantics';

/** Qualified name of the generated accel module's function `fn` (e.g. `accel.launch`). */
export function accelName(ctx: RuleContext, fn: string): string {
  return `${ctx.options.accelModule}.${fn}`;
}

/** The file imports torch_xla / torch_tpu, or the generated accel module (dual-path migrated code). */
export function xlaContext(ctx: RuleContext): boolean {
  return ctx.sema.xlaAware || ctx.sema.imports(ctx.options.accelModule);
}

const LAUNCHERS = new Set(['torch_xla.launch', 'torch_xla.distributed.xla_multiprocessing.spawn']);

/** `torch_xla.launch(...)`, `xmp.spawn(...)` or `accel.launch(...)` calls. */
export function launchCalls(ctx: RuleContext): Node[] {
  return ctx.sema.nodes('call').filter((c) => {
    const callee = ctx.sema.callee(c);
    return !!callee && (LAUNCHERS.has(callee) || callee === accelName(ctx, 'launch'));
  });
}

/** A launch that runs in this process only (`debug_single_process=True`, `nprocs=1`). */
export function singleProcessLaunch(call: Node): boolean {
  const { keywords } = callArgs(call);
  const dbg = kwValue(keywords.get('debug_single_process'));
  const np = kwValue(keywords.get('nprocs'));
  return dbg?.text === 'True' || np?.text === '1';
}

/** Literal text of a string node when it has no interpolation, else null. */
export function plainString(node: Node | null | undefined): string | null {
  if (!node || node.type !== 'string') return null;
  if (node.namedChildren.some((c) => c?.type === 'interpolation')) return null;
  return stringContent(node);
}

export interface EnvWrite {
  /** The statement to move or delete. */
  stmt: Node;
  /** The node to anchor a finding on (the variable-name string, or the call). */
  anchor: Node;
  name: string;
  value: Node | null;
}

/** `os.environ["X"] = v`, `os.environ.setdefault("X", v)`, `os.putenv("X", v)` (through aliases). */
export function envWrites(ctx: RuleContext): EnvWrite[] {
  const out: EnvWrite[] = [];
  for (const a of ctx.sema.nodes('assignment')) {
    const left = a.childForFieldName('left');
    if (left?.type !== 'subscript' || ctx.sema.resolve(left.childForFieldName('value')) !== 'os.environ') continue;
    const key = left.childForFieldName('subscript');
    const name = plainString(key);
    if (!key || name === null || a.parent?.type !== 'expression_statement') continue;
    out.push({ stmt: a.parent, anchor: key, name, value: a.childForFieldName('right') });
  }
  for (const c of ctx.sema.nodes('call')) {
    const callee = ctx.sema.callee(c);
    if (callee !== 'os.environ.setdefault' && callee !== 'os.putenv') continue;
    const { positional } = callArgs(c);
    const name = plainString(positional[0]);
    if (name === null || c.parent?.type !== 'expression_statement') continue;
    out.push({ stmt: c.parent, anchor: positional[0], name, value: positional[1] ?? null });
  }
  return out.sort((x, y) => x.stmt.startIndex - y.stmt.startIndex);
}

/** A Python value that turns a flag on: a non-empty string other than "0"/"false", or True/1. */
export function truthyValue(node: Node | null): boolean {
  if (!node) return false;
  if (node.type === 'true') return true;
  if (node.type === 'integer') return node.text !== '0';
  const s = plainString(node);
  return s !== null && s.trim() !== '' && !/^(0|false|no|off)$/i.test(s.trim());
}

/** Whether `node` is at module level (not inside a function or lambda). */
export function atModuleLevel(node: Node): boolean {
  for (let p = node.parent; p; p = p.parent) if (p.type === 'function_definition' || p.type === 'lambda') return false;
  return true;
}

/** The top-level statement (direct child of the module) holding `node`. */
export function topStatement(node: Node): Node {
  let n = node;
  while (n.parent && n.parent.type !== 'module') n = n.parent;
  return n;
}

/** Calls that read a wall clock: `time.time()`, `time.perf_counter()`, `timeit.default_timer()`, … */
const TIMERS = new Set(['time.time', 'time.perf_counter', 'time.monotonic', 'time.time_ns', 'time.perf_counter_ns', 'time.monotonic_ns', 'timeit.default_timer']);
export function isTimerCall(ctx: RuleContext, call: Node): boolean {
  return call.type === 'call' && TIMERS.has(ctx.sema.callee(call) ?? '');
}

/** Calls after which queued device work has finished: `xm.wait_device_ops()`, `sync(wait=True)`, host reads. */
export function isDeviceWait(ctx: RuleContext, call: Node): boolean {
  const callee = ctx.sema.callee(call) ?? '';
  if (callee === 'torch_xla.core.xla_model.wait_device_ops' || callee === 'torch.cuda.synchronize') return true;
  if (/(^|\.)(sync|mark_step)$/.test(callee) && kwValue(callArgs(call).keywords.get('wait'))?.text === 'True') return true;
  const fn = call.childForFieldName('function');
  const meth = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : null;
  return !!meth && /^(item|cpu|tolist|numpy)$/.test(meth);
}

/** Model calls: `model(x)`, `self.model(x)`, `net(x)`, `ddp_model(x)`. */
export function isModelCall(call: Node): boolean {
  const fn = call.childForFieldName('function');
  if (!fn) return false;
  const name = fn.type === 'identifier' ? fn.text : fn.type === 'attribute' && fn.childForFieldName('object')?.text === 'self' ? fn.childForFieldName('attribute')?.text ?? '' : '';
  return /^(model|net|module|ddp_model|raw_model|compiled_model|encoder|decoder|classifier)$/i.test(name) || /_model$/i.test(name);
}

/** Whether code inside `node` runs device work: a train step, a model call, a data-loader loop or a call into one. */
export function runsDeviceWork(ctx: RuleContext, node: Node): boolean {
  if (ctx.sema.containsTrainSignal(node)) return true;
  for (const call of ctx.sema.callsWithin(node)) {
    if (isModelCall(call)) return true;
    for (const fn of ctx.sema.calledFunctions(call)) {
      if (ctx.sema.within('for_statement', fn).some((l) => ctx.sema.iteratesLoader(l))) return true;
    }
  }
  return [...ctx.sema.within('for_statement', node)].some((l) => ctx.sema.iteratesLoader(l));
}
