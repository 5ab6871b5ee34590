/**
 * Helpers of the graph family (TPU201–TPU205): stricter tensor-valued tests for control flow, deferred
 * code (step closures, lambdas, nested defs), step barriers and the update part of a training loop.
 * Detection primitives stay in core/semantics; these build on them.
 */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import type { HotInfo } from '../../core/semantics';
import { callArgs, calleeText, isEnumerateIter, kwValue, methodName, receiver } from '../../core/semantics';
import { downgrade } from '../../core/engine';
import type { Edit, Severity } from '../../core/types';
import { insertAt, insertLineAfter, insertLineBefore } from '../../core/edits';
import { TORCH_RANDOM, drawnOnHost } from './random-draw';

/** Tensor methods that return tensors (reductions, elementwise, views, casts). */
const TENSOR_METHODS = new Set([
  'sum', 'mean', 'max', 'min', 'amax', 'amin', 'any', 'all', 'norm', 'abs', 'argmax', 'argmin', 'prod', 'std', 'var',
  'isnan', 'isinf', 'isfinite', 'eq', 'ne', 'gt', 'lt', 'ge', 'le', 'logical_and', 'logical_or', 'logical_not',
  'float', 'half', 'bfloat16', 'double', 'long', 'int', 'bool', 'detach', 'clone', 'contiguous', 'squeeze', 'unsqueeze',
  'view', 'reshape', 'flatten', 'sqrt', 'exp', 'log', 'pow', 'clamp', 'softmax', 'log_softmax', 'sigmoid', 'masked_fill',
  'count_nonzero', 'cumsum', 'sign', 'round', 'to', 'type_as', 'square', 'neg', 'mul', 'add', 'sub', 'div',
]);
/** Methods whose result is host data, not a tensor. */
const HOST_METHODS = new Set(['item', 'tolist', 'numpy', 'size', 'dim', 'numel', 'element_size', 'data_ptr', 'stride', 'is_contiguous', 'get_device', 'state_dict', 'parameters', 'named_parameters', 'keys', 'values', 'items', 'format', 'join', 'split', 'strip', 'append', 'get', 'register_buffer']);
const META_ATTRS = /^(shape|dtype|device|ndim|is_cuda|requires_grad|grad_fn|names|layout|is_leaf|training)$/;
const HOST_MODULES = /^(numpy|pandas|math|random|statistics)(\.|$)/;

/** Family-wide tensor test. `strict` (control flow) drops the low-confidence name fallback. */
export function tensorish(ctx: RuleContext, node: Node | null | undefined, strict: boolean, depth = 0): boolean {
  if (!node || depth > 10) return false;
  const sema = ctx.sema;
  switch (node.type) {
    case 'parenthesized_expression':
      return tensorish(ctx, node.namedChildren[0], strict, depth + 1);
    case 'identifier': {
      if (sema.resolve(node)) return false;
      if (scalarBound(ctx, node)) return false;
      if (sema.tensorNames().has(node.text)) return true;
      return !strict && (sema.isTensorValued(node) || loaderTarget(ctx, node) || isParamOfHotFunction(ctx, node));
    }
    case 'attribute': {
      const attr = node.childForFieldName('attribute')?.text ?? '';
      if (META_ATTRS.test(attr)) return false;
      if (sema.resolve(node)) return false;
      const obj = node.childForFieldName('object');
      if (attr === 'grad') return true;
      if (/^(loss|logits|last_hidden_state|data|T|mT)$/.test(attr)) {
        if (!obj) return false;
        if (obj.type === 'call' || tensorish(ctx, obj, strict, depth + 1)) return true;
        return !strict && attr !== 'data' && sema.isTensorValued(node);
      }
      return false;
    }
    case 'subscript': {
      const value = node.childForFieldName('value');
      return tensorish(ctx, value, strict, depth + 1);
    }
    case 'binary_operator': {
      const l = node.childForFieldName('left');
      if (l?.type === 'string') return false; // "%f" % t is string formatting
      return tensorish(ctx, l, strict, depth + 1) || tensorish(ctx, node.childForFieldName('right'), strict, depth + 1);
    }
    case 'unary_operator':
      return tensorish(ctx, node.childForFieldName('argument') ?? node.namedChildren[0], strict, depth + 1);
    case 'comparison_operator': {
      const ops = node.children.filter((c) => c && !c.isNamed).map((c) => c!.type);
      if (ops.some((o) => o === 'is' || o === 'is not' || o === 'in' || o === 'not in' || o === 'not')) return false;
      return node.namedChildren.some((c) => tensorish(ctx, c, strict, depth + 1));
    }
    case 'conditional_expression': {
      const [a, , b] = node.namedChildren;
      return tensorish(ctx, a, strict, depth + 1) || tensorish(ctx, b, strict, depth + 1);
    }
    case 'call': {
      const callee = sema.callee(node);
      if (callee) {
        if (HOST_MODULES.test(callee)) return false;
        return sema.isTensorValued(node);
      }
      const fn = node.childForFieldName('function');
      if (fn?.type === 'identifier' && /^(max|min|abs)$/.test(fn.text)) {
        const { positional } = callArgs(node);
        return positional.length === 1 && tensorish(ctx, positional[0], strict, depth + 1);
      }
      const meth = methodName(node);
      if (meth) {
        if (HOST_METHODS.has(meth)) return false;
        const recv = receiver(node);
        if (!recv || hostValue(ctx, recv)) return false;
        if (/^(gather|gather_for_metrics|reduce|all_gather)$/.test(meth)) return callArgs(node).positional.some((a) => tensorish(ctx, a, strict, depth + 1));
        if (TENSOR_METHODS.has(meth)) {
          if (tensorish(ctx, recv, strict, depth + 1)) return true;
          // a parameter of forward / a compiled step: `mask.any()`, `x.sum()`
          if (recv.type === 'identifier' && isParamOfHotFunction(ctx, recv)) return true;
          if (!strict && recv.type === 'identifier' && !sema.bindings(recv.text).length) return true;
        }
        // self.model(x), self.criterion(...)
        return recv.type === 'identifier' && recv.text === 'self' && sema.isTensorValued(node);
      }
      // model(x), criterion(out, y), loss_fn(...)
      return fn?.type === 'identifier' && sema.isTensorValued(node);
    }
    default:
      return false;
  }
}

/** A receiver that is NumPy/pandas/math data (its `.sum()` or `.item()` is host work, not a device sync). */
export function hostValue(ctx: RuleContext, node: Node): boolean {
  const r = ctx.sema.resolve(node);
  if (r && HOST_MODULES.test(r)) return true;
  if (node.type === 'call') {
    const c = ctx.sema.callee(node);
    if (c && HOST_MODULES.test(c)) return true;
    if (c && TORCH_RANDOM.test(c) && drawnOnHost(node)) return true; // `torch.rand(1)`: a CPU draw, no device value
    const recv = receiver(node);
    return !!recv && hostValue(ctx, recv);
  }
  if (node.type === 'identifier') {
    const vals = sameScopeBindings(ctx, node);
    return vals.length > 0 && vals.every((v) => v.type === 'call' && HOST_MODULES.test(ctx.sema.callee(v) ?? ''));
  }
  if (node.type === 'attribute' || node.type === 'subscript') {
    const inner = node.type === 'attribute' ? node.childForFieldName('object') : node.childForFieldName('value');
    return !!inner && hostValue(ctx, inner);
  }
  return false;
}

/** `x`/`y` in `for x, y in loader:` (a batch from a DataLoader-like iterable, in the same scope). */
function loaderTarget(ctx: RuleContext, id: Node): boolean {
  const fn = ctx.sema.enclosingFunction(id);
  return ctx.sema.forLoopsIn(fn).some((loop) => {
    const left = loop.childForFieldName('left');
    if (!left || !ctx.sema.within('identifier', left).some((n) => n.text === id.text)) return false;
    // enumerate(loader) yields (index, batch): the index is an int
    const right = loop.childForFieldName('right');
    if (isEnumerateIter(right) && left.namedChildren[0]?.text === id.text) return false;
    return ctx.sema.iteratesLoader(loop);
  });
}

function sameScopeBindings(ctx: RuleContext, name: Node): Node[] {
  const fn = ctx.sema.enclosingFunction(name);
  return ctx.sema.bindings(name.text).filter((v) => (ctx.sema.enclosingFunction(v)?.id ?? null) === (fn?.id ?? null));
}

/** A name bound (in its own scope) to a Python scalar: `x = loss.item()`, `x = 0.0`, `x = float(t)`. */
function scalarBound(ctx: RuleContext, name: Node): boolean {
  return sameScopeBindings(ctx, name).some((v) => isHostScalar(v)) || counterBound(ctx, name);
}

/**
 * A loop counter in the name's own scope: the index of `for x, (data, target) in enumerate(loader)` or the
 * target of `for x in range(n)`. File-wide tensor names (`x` is forward()'s input) do not make it a tensor.
 */
function counterBound(ctx: RuleContext, name: Node): boolean {
  return ctx.sema.forLoopsIn(ctx.sema.enclosingFunction(name)).some((loop) => {
    const left = loop.childForFieldName('left');
    const right = loop.childForFieldName('right');
    if (!left || right?.type !== 'call') return false;
    const callee = calleeText(right);
    if (isEnumerateIter(right)) {
      const first = left.type === 'identifier' ? null : left.namedChildren[0];
      return first?.type === 'identifier' && first.text === name.text;
    }
    return /^range$/.test(callee) && left.type === 'identifier' && left.text === name.text;
  });
}

function isHostScalar(v: Node): boolean {
  if (/^(integer|float|true|false|none|string|concatenated_string)$/.test(v.type)) return true;
  if (v.type === 'call') {
    const fn = v.childForFieldName('function');
    if (fn?.type === 'identifier' && /^(float|int|bool|len|round|str|sum)$/.test(fn.text)) return true;
    const meth = methodName(v);
    if (meth && /^(item|tolist|numpy)$/.test(meth)) return true;
  }
  // `lossf = loss.item() * accum_steps`: arithmetic on a host read and numbers stays on the host
  if (v.type === 'binary_operator') {
    const l = v.childForFieldName('left');
    const r = v.childForFieldName('right');
    const read = (x: Node | null): boolean => !!x && ((x.type === 'call' && isHostScalar(x)) || (x.type === 'binary_operator' && isHostScalar(x)));
    // `(world * accum)`: a parenthesised product of plain operands is plain too
    const plain = (x: Node | null): boolean =>
      !!x &&
      (isHostScalar(x) || x.type === 'attribute' || x.type === 'identifier' ||
        (x.type === 'parenthesized_expression' && plain(x.namedChildren[0] ?? null)) ||
        (x.type === 'binary_operator' && plain(x.childForFieldName('left')) && plain(x.childForFieldName('right'))));
    return !!l && !!r && (read(l) || read(r)) && plain(l) && plain(r);
  }
  // `g = g.item() if isinstance(g, torch.Tensor) else g`: a host read, or the value when it already is one
  if (v.type === 'conditional_expression') {
    const [then, cond, other] = v.namedChildren;
    const fn = cond?.type === 'call' ? cond.childForFieldName('function') : null;
    const first = cond?.type === 'call' ? callArgs(cond).positional[0] : undefined;
    return !!then && isHostScalar(then) && fn?.text === 'isinstance' && other?.type === 'identifier' && first?.text === other.text;
  }
  if (v.type === 'parenthesized_expression' && v.namedChildren[0]) return isHostScalar(v.namedChildren[0]);
  return false;
}

function isParamOfHotFunction(ctx: RuleContext, id: Node): boolean {
  const fn = ctx.sema.enclosingFunction(id);
  if (!fn) return false;
  const hot = ctx.sema.hot(id);
  if (!hot || hot.anchor.id !== fn.id) return false;
  const params = fn.childForFieldName('parameters')?.namedChildren ?? [];
  return params.some((p) => {
    if (!p) return false;
    const n = p.type === 'identifier' ? p : p.childForFieldName('name') ?? p.namedChildren[0];
    if (!n || n.text !== id.text || n.text === 'self') return false;
    // `loader`, `train_dl`: a data loader, not a tensor
    if (/(^|_)(loader|dataloader|data_loader|dl|dataset|ds)$|loader$/i.test(n.text)) return false;
    // `step`, `epoch`, `batch_idx`: counters
    if (/^((global|train|cur|current)_)?(step|steps|epoch|epochs|iteration|iter|it|idx|index|batch_idx|rank)$|^[ijkn]$/i.test(n.text)) return false;
    // `checkpoint_file`, `out_dir`, `run_name`: paths and names, not tensors
    if (/(^|_)(path|paths|file|filename|fname|dir|directory|folder|name|prefix|suffix|url|tag)$/i.test(n.text)) return false;
    // `out: Path`, `n: int`: an annotation that is not a tensor type
    const ann = p.childForFieldName('type')?.text;
    if (ann && !/Tensor|Any|^torch\./.test(ann)) return false;
    // `flag=True`, `n: int = 3` are configuration, not tensors
    const def = p.childForFieldName('value');
    return !def || def.type === 'none';
  });
}

/** A condition whose truth value needs a tensor's value (`if loss > t`, `not torch.isfinite(x)`, `a and mask.any()`). */
export function tensorCondition(ctx: RuleContext, cond: Node | null | undefined): boolean {
  if (!cond) return false;
  if (cond.type === 'parenthesized_expression') return tensorCondition(ctx, cond.namedChildren[0]);
  if (cond.type === 'not_operator') return tensorCondition(ctx, cond.childForFieldName('argument') ?? cond.namedChildren[0]);
  if (cond.type === 'boolean_operator') return cond.namedChildren.some((c) => tensorCondition(ctx, c));
  return tensorish(ctx, cond, true);
}

/**
 * Code that runs later or elsewhere: inside a lambda or a nested def below the hot anchor, or inside the
 * arguments of a step closure (`xm.add_step_closure(fn, args=(loss,))`).
 */
export function deferred(ctx: RuleContext, node: Node, hot: HotInfo): boolean {
  for (let p = node.parent; p && p.id !== hot.anchor.id; p = p.parent) {
    if (p.type === 'lambda' || p.type === 'function_definition') return true;
    if (p.type === 'call' && isStepClosureCall(ctx, p)) return true;
  }
  return false;
}

export function isStepClosureCall(ctx: RuleContext, call: Node): boolean {
  const c = ctx.sema.callee(call) ?? '';
  return /(^|\.)add_step_closure$/.test(c) || methodName(call) === 'add_step_closure';
}

/** The hot context of `node` when it runs in the step itself (not deferred), else null. */
export function hotAt(ctx: RuleContext, node: Node): HotInfo | null {
  const hot = ctx.sema.hot(node);
  if (!hot || deferred(ctx, node, hot)) return null;
  return hot;
}

/** Severity after the catalog's downgrades: one level lower in eval loops and under a throttle guard. */
export function severityIn(base: Severity, hot: HotInfo): Severity {
  return hot.kind === 'eval' || hot.throttled ? downgrade(base) : base;
}

/** The name `torch` is bound to (`import torch as t` → `t`), defaulting to `torch`. */
export function torchName(ctx: RuleContext): { name: string; imports: { module: string }[] } {
  for (const [alias, full] of ctx.sema.aliases) if (full === 'torch') return { name: alias, imports: [] };
  return { name: 'torch', imports: [{ module: 'torch' }] };
}

/** Short source text for messages. */
export function short(text: string, max = 40): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > max ? one.slice(0, max - 1) + '…' : one;
}

// ---------------------------------------------------------------------------------------------
// Step barriers and training-loop structure (TPU204)

/** Calls in `scope` and in same-file functions it calls (≤ `depth` levels), skipping `skipLoops` bodies. */
export function reachableCalls(ctx: RuleContext, scope: Node, depth: number, skipNestedLoops: boolean, seen = new Set<number>()): Node[] {
  const out: Node[] = [];
  for (const call of ctx.sema.callsWithin(scope)) {
    if (skipNestedLoops && insideNestedLoop(call, scope)) continue;
    out.push(call);
    if (depth > 0) {
      for (const fn of ctx.sema.calledFunctions(call)) {
        if (seen.has(fn.id) || (fn.startIndex <= call.startIndex && call.endIndex <= fn.endIndex)) continue;
        seen.add(fn.id);
        const body = fn.childForFieldName('body');
        if (body) out.push(...reachableCalls(ctx, body, depth - 1, skipNestedLoops, seen));
      }
    }
  }
  return out;
}

/** Whether `node` sits in a for/while loop nested inside `scope` (scope's own loop excluded). */
export function insideNestedLoop(node: Node, scope: Node): boolean {
  for (let p = node.parent; p && p.id !== scope.id; p = p.parent) {
    if (p.type === 'for_statement' || p.type === 'while_statement') return true;
    if (p.type === 'function_definition' || p.type === 'lambda') return false;
  }
  return false;
}

export function isBackward(call: Node): boolean {
  return methodName(call) === 'backward' || methodName(call) === 'manual_backward';
}

/** `opt.step()`, `scaler.step(opt)`, `xm.optimizer_step(opt)`, `accel.optimizer_step(opt)`. */
export function isOptimizerStep(ctx: RuleContext, call: Node): boolean {
  return !isBackward(call) && ctx.sema.isTrainSignal(call);
}

/** A call that cuts the traced graph: `torch_xla.sync()`, `xm.mark_step()`, `*.optimizer_step(..., barrier=True)`, accel.sync(). */
export function isBarrierCall(ctx: RuleContext, call: Node): boolean {
  const c = ctx.sema.callee(call) ?? '';
  const accel = ctx.options.accelModule;
  if (c === 'torch_xla.sync' || c === 'torch_xla.core.xla_model.mark_step' || c === `${accel}.sync`) return true;
  if (/^torch_xla\._XLAC\._xla_step_marker$/.test(c)) return true;
  if (c === 'torch_xla.core.xla_model.optimizer_step' || c === `${accel}.optimizer_step`) {
    const { positional, keywords } = callArgs(call);
    const b = kwValue(keywords.get('barrier')) ?? positional[1];
    return !!b && b.type === 'true';
  }
  return false;
}

/** `with torch_xla.step():` / `with torch_xla.compile():` */
export function isStepContext(ctx: RuleContext, withStmt: Node): boolean {
  for (const call of ctx.sema.within('call', withStmt)) {
    if (call.startIndex > (withStmt.childForFieldName('body')?.startIndex ?? withStmt.endIndex)) break;
    const c = ctx.sema.callee(call) ?? '';
    if (c === 'torch_xla.step' || c === 'torch_xla.compile' || c === 'torch_xla.experimental.compile') return true;
  }
  return false;
}

/** Same-file functions wrapped by `torch_xla.compile` (decorator or `g = torch_xla.compile(f)`), by name. */
export function compiledStepNames(ctx: RuleContext): Set<string> {
  const out = new Set<string>();
  const isXlaCompile = (c: string | null) => c === 'torch_xla.compile' || c === 'torch_xla.experimental.compile';
  for (const fn of ctx.sema.nodes('function_definition')) {
    for (const d of ctx.sema.decorators(fn)) {
      const expr = d.namedChildren[0];
      const target = expr?.type === 'call' ? expr.childForFieldName('function') : expr;
      if (isXlaCompile(ctx.sema.resolve(target))) out.add(fn.childForFieldName('name')?.text ?? '');
    }
  }
  for (const a of ctx.sema.nodes('assignment')) {
    const right = a.childForFieldName('right');
    const left = a.childForFieldName('left');
    if (right?.type === 'call' && isXlaCompile(ctx.sema.callee(right)) && left) out.add(left.type === 'attribute' ? left.childForFieldName('attribute')?.text ?? '' : left.text);
  }
  out.delete('');
  return out;
}

const BARRIER_LOADER = /(^|\.)(MpDeviceLoader|per_device_loader)$/;

/** The loop iterates `pl.MpDeviceLoader(...)` / `ParallelLoader(...).per_device_loader(...)` / `accel.wrap_loader(...)` / `accel.xla_loader(...)`. */
export function iteratesBarrierLoader(ctx: RuleContext, loop: Node): boolean {
  if (loop.type !== 'for_statement') return false;
  return barrierIterable(ctx, loop.childForFieldName('right'), 0);
}

function barrierIterable(ctx: RuleContext, it: Node | null | undefined, depth: number): boolean {
  if (!it || depth > 4) return false;
  if (it.type === 'call') {
    const c = ctx.sema.callee(it) ?? methodName(it) ?? it.childForFieldName('function')?.text ?? '';
    if (BARRIER_LOADER.test(c) || c === `${ctx.options.accelModule}.wrap_loader` || c === `${ctx.options.accelModule}.xla_loader`) return true;
    if (/^(enumerate|tqdm|tqdm\.tqdm|tqdm\.auto\.tqdm|zip|iter|islice|itertools\.islice)$/.test(c) || /tqdm$/.test(c)) {
      return callArgs(it).positional.some((a) => barrierIterable(ctx, a, depth + 1));
    }
    return false;
  }
  if (it.type === 'identifier') {
    if (ctx.sema.bindings(it.text).some((v) => v.id !== it.id && barrierIterable(ctx, v, depth + 1))) return true;
    // `def train_loop_fn(loader, epoch)` called as `train_loop_fn(pl.MpDeviceLoader(...), epoch)` in the same file
    const args = parameterArguments(ctx, it);
    return args.length > 0 && args.every((a) => barrierIterable(ctx, a, depth + 1));
  }
  if (it.type === 'attribute') {
    const attr = it.childForFieldName('attribute')?.text;
    if (!attr) return false;
    for (const a of ctx.sema.attributeAssignments(attr)) {
      if (barrierIterable(ctx, a.childForFieldName('right'), depth + 1)) return true;
    }
  }
  return false;
}

/** When `id` names a parameter of its enclosing function: the arguments passed for it at same-file call sites. */
function parameterArguments(ctx: RuleContext, id: Node): Node[] {
  const fn = ctx.sema.enclosingFunction(id);
  const params = fn?.childForFieldName('parameters')?.namedChildren.filter((p): p is Node => !!p) ?? [];
  const names = params.map((p) => (p.type === 'identifier' ? p.text : (p.childForFieldName('name') ?? p.namedChildren[0])?.text ?? ''));
  const index = names.indexOf(id.text);
  if (!fn || index < 0) return [];
  // methods called as `self.m(...)` / `obj.m(...)` do not pass `self`
  const offset = ctx.sema.enclosingClass(fn) && /^(self|cls)$/.test(names[0] ?? '') ? 1 : 0;
  const out: Node[] = [];
  for (const call of ctx.sema.callSitesOf(fn)) {
    const { positional, keywords } = callArgs(call);
    const arg = kwValue(keywords.get(id.text)) ?? positional[index - offset];
    if (arg) out.push(arg);
  }
  return out;
}

/** Accelerate / Fabric drive the step (`accelerator.backward(loss)`, `fabric.backward(loss)`). */
export function frameworkBackward(ctx: RuleContext, call: Node): boolean {
  if (methodName(call) !== 'backward' || !callArgs(call).positional.length) return false;
  const recv = receiver(call);
  if (!recv) return false;
  if (/accelerator|fabric/i.test(recv.text)) return true;
  return recv.type === 'identifier' && ctx.sema.bindings(recv.text).some((v) => v.type === 'call' && /(Accelerator|Fabric)$/.test(ctx.sema.callee(v) ?? ''));
}

const JUMP_STATEMENTS = new Set(['continue_statement', 'break_statement', 'return_statement', 'raise_statement']);

/**
 * The edit that adds `text` as the last statement of a loop body every iteration reaches at its end: after the
 * last statement, or before a trailing jump; `; text` on a one-line loop (none when that line ends in a jump).
 */
export function endOfBodyEdit(ctx: RuleContext, loop: Node, last: Node, body: Node, text: string): Edit | null {
  const oneLine = !ctx.text.slice(loop.startIndex, body.startIndex).includes('\n');
  if (oneLine) return JUMP_STATEMENTS.has(last.type) ? null : insertAt(last.endIndex, `; ${text}`);
  return JUMP_STATEMENTS.has(last.type) ? insertLineBefore(ctx.text, last, text) : insertLineAfter(ctx.text, last, text);
}
