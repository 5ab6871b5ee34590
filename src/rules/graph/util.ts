/**
 * Helpers of the graph family (TPU201–TPU205): stricter tensor-valued tests for control flow, deferred
 * code (step closures, lambdas, nested defs), step barriers and the update part of a training loop.
 * Detection primitives stay in core/semantics; these build on them.
 */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import type { HotInfo } from '../../core/semantics';
import { callArgs, kwValue, methodName, receiver } from '../../core/semantics';
import { downgrade } from '../../core/engine';
import type { Edit, Severity } from '../../core/types';
import { insertAt, insertLineAfter, insertLineBefore } from '../../core/edits';
import { TORCH_RANDOM, drawnOnHost, lastBinding } from './random-draw';

const HOST_MODULES = /^(numpy|pandas|math|random|statistics)(\.|$)/;

/**
 * Family-wide tensor test, answered by the program model (src/model): the expression evaluates to a tensor on
 * the accelerator (or a batch a loader yields). `strict` (control flow) drops values known only by a
 * convention (a parameter of a hot function, `x.sum()` on a value nothing explains).
 */
export function tensorish(ctx: RuleContext, node: Node | null | undefined, strict: boolean): boolean {
  if (!node) return false;
  return ctx.model.isDeviceTensor(node, strict);
}

/** A receiver that is host data (its `.sum()` or `.item()` is host work, not a device sync): the model's host values and NumPy/pandas/math. */
export function hostValue(ctx: RuleContext, node: Node): boolean {
  const r = ctx.sema.resolve(node);
  if (r && HOST_MODULES.test(r)) return true;
  if (node.type === 'call') {
    const c = ctx.sema.callee(node);
    if (c && HOST_MODULES.test(c)) return true;
    if (c && TORCH_RANDOM.test(c) && drawnOnHost(node)) return true; // `torch.rand(1)`: a CPU draw, no device value
  }
  return ctx.model.isHost(node);
}

/** A condition whose truth value needs a tensor's value (`if loss > t`, `not torch.isfinite(x)`, `a and mask.any()`). */
export function tensorCondition(ctx: RuleContext, cond: Node | null | undefined): boolean {
  if (!cond) return false;
  if (cond.type === 'parenthesized_expression') return tensorCondition(ctx, cond.namedChildren[0]);
  if (cond.type === 'not_operator') return tensorCondition(ctx, cond.childForFieldName('argument') ?? cond.namedChildren[0]);
  if (cond.type === 'boolean_operator') return cond.namedChildren.some((c) => tensorCondition(ctx, c));
  // `if output_dict:` where one binding is `output_dict = {}`: a container's truthiness (its length), not a tensor's
  if (cond.type === 'identifier' && ctx.model.bindingExpressions(cond).some((b) => !!b && /^(dictionary|list|set|tuple|dictionary_comprehension|list_comprehension)$/.test(b.type))) return false;
  // `if not batch:` where the function reads `batch['input_ids']`: a mapping's truthiness (empty or None), not a tensor's
  if (cond.type === 'identifier' && keyedByString(ctx, cond)) return false;
  if (deviceMembership(ctx, cond)) return true;
  // `self.tokens += (y >= 0).sum()` then `if self.tokens < warmup_tokens:`: a counter that accumulates a device tensor is one
  if (cond.type === 'comparison_operator' && !cond.children.some((c) => !!c && !c.isNamed && /^(is|in|not|is not|not in)$/.test(c.type)) && cond.namedChildren.some((c) => !!c && accumulatesTensor(ctx, c))) return true;
  return tensorish(ctx, cond, true);
}

const SEQUENCE_LITERAL = /^(list|tuple|list_comprehension)$/;
/**
 * `tok in [eos_id, pad_id]` / `tok not in (a, b)` with `tok` a device tensor (known from value flow): a list's or
 * tuple's `__contains__` compares each item with `==` and takes `bool()` of the result, a device read per item
 * (`tensor(5) in [5]` is True); `tok in ids` with `ids` a device tensor is `Tensor.__contains__`, `(ids == tok).any()`
 * read back. A set or dict hashes the tensor by identity and compares nothing on the device (`tensor(5) in {5}` is
 * False: never a match, but no read), so it is none; nor is a container of unknown kind.
 */
export function deviceMembership(ctx: RuleContext, cond: Node): { item: Node; container: Node } | null {
  if (cond.type !== 'comparison_operator') return null;
  const ops = cond.children.filter((c) => !!c && !c.isNamed).map((c) => c!.type);
  if (ops.length !== 1 || (ops[0] !== 'in' && ops[0] !== 'not in')) return null;
  const [item, container] = cond.namedChildren;
  if (!item || !container || !tensorish(ctx, item, true)) return null;
  if (SEQUENCE_LITERAL.test(container.type)) return { item, container };
  if (container.type === 'identifier') {
    const bound = ctx.model.bindingExpressions(container);
    if (bound.length && bound.every((b) => !!b && SEQUENCE_LITERAL.test(b.type))) return { item, container };
  }
  return tensorish(ctx, container, true) ? { item, container } : null;
}

const stringKeyed = new WeakMap<object, Map<number, Set<string>>>();
/** `name` is subscripted with a string key (`name["input_ids"]`) in the function that holds it: a dict, not a tensor. */
function keyedByString(ctx: RuleContext, id: Node): boolean {
  const fn = ctx.sema.enclosingFunction(id);
  let memo = stringKeyed.get(ctx.sema);
  if (!memo) stringKeyed.set(ctx.sema, (memo = new Map()));
  const key = fn?.id ?? -1;
  let names = memo.get(key);
  if (!names) {
    names = new Set();
    for (const sub of fn ? ctx.sema.within('subscript', fn) : ctx.sema.nodes('subscript')) {
      const v = sub.childForFieldName('value');
      const i = sub.childForFieldName('subscript');
      if (v?.type === 'identifier' && i?.type === 'string') names.add(v.text);
    }
    memo.set(key, names);
  }
  return names.has(id.text);
}

const accumulators = new WeakMap<object, Map<string, Node[]>>();
/** `x += e` / `self.x += e` anywhere in the file with `e` a device tensor (strongly): `e` of those. */
function accumulatesTensor(ctx: RuleContext, e: Node): boolean {
  if (e.type !== 'identifier' && e.type !== 'attribute') return false;
  let memo = accumulators.get(ctx.sema);
  if (!memo) {
    memo = new Map();
    for (const a of ctx.sema.nodes('augmented_assignment')) {
      const l = a.childForFieldName('left');
      const r = a.childForFieldName('right');
      if (!l || !r || (l.type !== 'identifier' && l.type !== 'attribute')) continue;
      const list = memo.get(l.text) ?? [];
      list.push(r);
      memo.set(l.text, list);
    }
    accumulators.set(ctx.sema, memo);
  }
  const rs = memo.get(e.text);
  return !!rs && rs.some((r) => !hostValue(ctx, r) && tensorish(ctx, r, true) && !!ctx.sema.hot(r));
}

/**
 * Python's `all`/`any` over device values in a test: `all(done)` on a device bool tensor (iterating it reads every
 * element), or a generator whose item test is a tensor condition (`any(not torch.isfinite(p.grad).all() for p in ps)`).
 */
export function pythonReduction(ctx: RuleContext, cond: Node): { fn: string; over: Node; perElement: boolean } | null {
  if (cond.type === 'parenthesized_expression' || cond.type === 'not_operator') {
    const inner = cond.childForFieldName('argument') ?? cond.namedChildren[0];
    return inner ? pythonReduction(ctx, inner) : null;
  }
  if (cond.type === 'boolean_operator') {
    for (const c of cond.namedChildren) {
      const r = c ? pythonReduction(ctx, c) : null;
      if (r) return r;
    }
    return null;
  }
  if (cond.type !== 'call') return null;
  const fn = cond.childForFieldName('function');
  if (fn?.type !== 'identifier' || !/^(all|any)$/.test(fn.text) || ctx.sema.resolve(fn) || ctx.sema.bindings(fn.text).length) return null;
  const bare = cond.childForFieldName('arguments'); // `any(x for x in xs)`: the generator is the argument list
  const { positional, keywords } = callArgs(cond);
  const arg = bare?.type === 'generator_expression' ? bare : positional[0];
  if (!arg || (arg !== bare && (positional.length !== 1 || keywords.size))) return null;
  if (arg.type === 'generator_expression' || arg.type === 'list_comprehension') {
    const body = arg.childForFieldName('body');
    return body && tensorCondition(ctx, body) ? { fn: fn.text, over: body, perElement: false } : null;
  }
  return tensorish(ctx, arg, true) ? { fn: fn.text, over: arg, perElement: true } : null;
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
  const hot = ctx.sema.hot(node) ?? stepFunction(ctx, node);
  if (!hot || deferred(ctx, node, hot)) return null;
  return hot;
}

const OPTIMIZER_RECEIVER = /(^|\.)(\w*optim\w*|opt)$/i;
const stepFunctions = new WeakMap<object, Map<number, HotInfo | null>>();

/**
 * A function that performs one optimizer step (`optimizer.step()` / `scaler.step(optimizer)` in its body, not in a loop
 * of its own: wenet's `update_parameter_and_lr`) runs once per training step wherever it is called from; its code is
 * hot (train). A function whose step sits in its own loop is the training loop, already hot there.
 */
function stepFunction(ctx: RuleContext, node: Node): HotInfo | null {
  const fn = ctx.sema.enclosingFunction(node);
  if (!fn) return null;
  let memo = stepFunctions.get(ctx.sema);
  if (!memo) stepFunctions.set(ctx.sema, (memo = new Map()));
  if (memo.has(fn.id)) return memo.get(fn.id)!;
  let out: HotInfo | null = null;
  for (const call of ctx.sema.callsWithin(fn)) {
    if (methodName(call) !== 'step') continue;
    const recv = receiver(call)?.text ?? '';
    const arg = callArgs(call).positional[0]?.text ?? '';
    if (!OPTIMIZER_RECEIVER.test(recv) && !(/(^|\.)\w*scaler$/i.test(recv) && OPTIMIZER_RECEIVER.test(arg))) continue;
    let inLoop = false;
    for (let p = call.parent; p && p.id !== fn.id; p = p.parent) {
      if (p.type === 'for_statement' || p.type === 'while_statement' || p.type === 'function_definition' || p.type === 'lambda') inLoop = true;
    }
    if (!inLoop) {
      out = { anchor: fn, kind: 'train', throttled: false };
      break;
    }
  }
  memo.set(fn.id, out);
  return out;
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

/**
 * A read (TPU201) or a value-sized shape (TPU203) in evaluation work that runs once per throttle interval, outside any loop of its own: a validation print under
 * `if i % validate_every == 0:` + `with torch.no_grad():`, an eval loop's `if idx % 100 == 0: print(...)`, the
 * spectrogram a throttled `evaluate()` copies out for TensorBoard after its loop. One sync per interval for output
 * the user asked for: noise. (Per-batch reads of an eval loop, a loop between the read and the throttle, stay info.)
 */
export function throttledEvalWork(ctx: RuleContext, site: Node, hot: HotInfo): boolean {
  if (!hot.throttled) return false;
  let guard: Node | null = null;
  for (let p = site.parent; p && p.id !== hot.anchor.id; p = p.parent) {
    if (p.type === 'for_statement' || p.type === 'while_statement') return false;
    if (!guard && p.type === 'if_statement' && ctx.sema.isThrottleCondition(p)) guard = p;
  }
  if (hot.kind === 'eval') return true;
  // the throttled block (or the helper the loop calls under its throttle) switches the model to eval mode before the
  // read: a validation pass (`model.eval()` then `with torch.no_grad():`, vits' `generator.eval()` in evaluate)
  const scope = guard ?? (hot.anchor.type === 'function_definition' ? hot.anchor : null);
  if (!scope) return false;
  return ctx.sema.callsWithin(scope).some((c) => c.endIndex <= site.startIndex && methodName(c) === 'eval' && !callArgs(c).positional.length && receiver(c)?.type !== 'string');
}

/**
 * The scope of throttled evaluation work in a training loop (TPU201): the throttle `if` (or the helper the loop calls
 * under its throttle) that switches the model to eval mode before `site`, with no loop of its own between them
 * (PaLM/x-transformers' `if i % validate_every == 0: model.eval(); ...; print(loss.item())`, k-diffusion's throttled
 * `evaluate()` reading `fid.item()` once its sampling is done, outside the helper's own loops). Null for eval loops'
 * own throttled prints and outside such work. Its scalar metric reads are one info finding per scope; its visualisation copies are not reported.
 */
export function throttledEvalScope(ctx: RuleContext, site: Node, hot: HotInfo): Node | null {
  if (!hot.throttled) return null;
  let guard: Node | null = null;
  for (let p = site.parent; p && p.id !== hot.anchor.id; p = p.parent) {
    if (p.type === 'for_statement' || p.type === 'while_statement') return null;
    if (!guard && p.type === 'if_statement' && ctx.sema.isThrottleCondition(p)) guard = p;
  }
  // a no-grad evaluation helper the loop calls only under its throttle (`@torch.no_grad() def evaluate():`), read
  // outside its own loops; an eval loop's own throttled print is no such work (each of its batches already reads)
  if (hot.kind === 'eval') return hot.anchor.type === 'function_definition' ? hot.anchor : null;
  const scope = guard ?? (hot.anchor.type === 'function_definition' ? hot.anchor : null);
  if (!scope) return null;
  const evalMode = ctx.sema.callsWithin(scope).some((c) => c.endIndex <= site.startIndex && methodName(c) === 'eval' && !callArgs(c).positional.length && receiver(c)?.type !== 'string');
  return evalMode ? scope : null;
}

/** `accelerator.backward(loss)` (Accelerate, not Lightning Fabric). */
export function accelerateBackward(ctx: RuleContext, call: Node): boolean {
  if (!frameworkBackward(ctx, call)) return false;
  const recv = receiver(call);
  if (!recv || /fabric/i.test(recv.text)) return false;
  return /accelerator/i.test(recv.text) || (recv.type === 'identifier' && ctx.sema.bindings(recv.text).some((v) => v.type === 'call' && /Accelerator$/.test(ctx.sema.callee(v) ?? '')));
}

const preparedMemo = new WeakMap<object, Set<string>>();

/** The texts of the arguments given to `accelerator.prepare(...)` in the file (`self.dl`, `train_loader`). */
function preparedArguments(ctx: RuleContext): Set<string> {
  let hit = preparedMemo.get(ctx.sema);
  if (hit) return hit;
  hit = new Set();
  for (const c of ctx.sema.nodes('call')) {
    if (methodName(c) !== 'prepare' || !/accelerator/i.test(receiver(c)?.text ?? '')) continue;
    for (const a of callArgs(c).positional) hit.add(a.text);
  }
  preparedMemo.set(ctx.sema, hit);
  return hit;
}

/**
 * A batch source of the loop that is a Python generator over a loader `accelerator.prepare()` never saw: the loop
 * iterates (or, in its iteration and the same-file methods it calls, pulls `next()` from) a name or attribute bound to
 * a call of a same-file generator function (`def cycle(dl): while True: for b in dl: yield b`) or to
 * `itertools.cycle(...)`, whose loader argument is no argument of `accelerator.prepare(...)`. Accelerate wraps only
 * `torch.utils.data.DataLoader` objects (in `MpDeviceLoaderWrapper`, the one step barrier it adds on XLA:
 * accelerate data_loader.py:1328, accelerator.py:1400) and returns anything else unchanged; its optimizer step does
 * not sync (optimizer.py:145-181). `cycle(prepared_dl)` iterates the wrapper, which syncs on every batch.
 */
export function generatorBatchSource(ctx: RuleContext, loop: Node, calls: readonly Node[]): Node | null {
  const prepared = preparedArguments(ctx);
  const isGenCall = (v: Node | null | undefined, depth = 0): boolean => {
    if (!v || depth > 3) return false;
    if (v.type === 'identifier') return ctx.sema.bindings(v.text).some((b) => b.id !== v.id && isGenCall(b, depth + 1));
    if (v.type === 'attribute') {
      const attr = v.childForFieldName('attribute')?.text;
      // `self.dl_iter` of this class (another trainer class of the file has its own)
      const cls = v.childForFieldName('object')?.text === 'self' ? ctx.sema.enclosingClass(v)?.id : undefined;
      return (
        !!attr &&
        ctx.sema
          .attributeAssignments(attr)
          .some((a) => a.childForFieldName('left')?.text === v.text && (cls === undefined || ctx.sema.enclosingClass(a)?.id === cls) && isGenCall(a.childForFieldName('right'), depth + 1))
      );
    }
    if (v.type !== 'call') return false;
    const c = ctx.sema.callee(v) ?? v.childForFieldName('function')?.text ?? '';
    if (/^(iter|enumerate|tqdm|tqdm\.tqdm)$/.test(c)) return isGenCall(callArgs(v).positional[0], depth + 1);
    const args = callArgs(v).positional;
    if (!args.length || args.some((a) => prepared.has(a.text))) return false;
    if (c === 'itertools.cycle') return true;
    const fn = v.childForFieldName('function');
    if (fn?.type !== 'identifier') return false;
    const defs = ctx.sema.calledFunctions(v);
    return defs.length > 0 && defs.every((d) => /\byield\b/.test(d.childForFieldName('body')?.text ?? ''));
  };
  if (loop.type === 'for_statement' && isGenCall(loop.childForFieldName('right'))) return loop.childForFieldName('right');
  // every `next()` pull of the iteration from such a generator: one from a prepared loader (`cycle(self.dl)` after
  // `self.dl = accelerator.prepare(...)`) syncs the step, whatever a throttled validation pull reads
  let first: Node | null = null;
  for (const call of calls) {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'identifier' || fn.text !== 'next') continue;
    const it = callArgs(call).positional[0];
    if (!it || !isGenCall(it)) return null;
    first ??= it;
  }
  return first;
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

// ---------------------------------------------------------------------------------------------
// Data-dependent counts (TPU202, TPU203): tensors whose leading dim is a count the data decides

/** Methods that keep a tensor's dtype and only change its shape, layout or device. */
const MASK_SHAPE_METHODS = /^(unsqueeze|squeeze|expand|expand_as|view|view_as|reshape|reshape_as|flatten|contiguous|repeat|t|transpose|permute|detach|clone|cuda|to)$/;
const MASK_BOOL_METHODS = /^(bool|isnan|isinf|isfinite|eq|ne|gt|lt|ge|le|logical_and|logical_or|logical_not|logical_xor)$/;

/** A boolean tensor expression usable as a mask. `indexed` is the indexed value (`x[x > 0]`, `t[t[:, 0] == i]`). */
export function boolMask(ctx: RuleContext, e: Node | null | undefined, indexed: Node | null, depth = 0): boolean {
  if (!e || depth > 4) return false;
  const sameBase = (c: Node) => !!indexed && (c.text === indexed.text || (c.type === 'subscript' && c.childForFieldName('value')?.text === indexed.text));
  switch (e.type) {
    case 'parenthesized_expression':
      return boolMask(ctx, e.namedChildren[0], indexed, depth + 1);
    case 'comparison_operator': {
      const ops = e.children.filter((c) => c && !c.isNamed).map((c) => c!.type);
      if (ops.some((o) => /^(is|in|not|is not|not in)$/.test(o))) return false;
      return e.namedChildren.some((c) => !!c && (tensorish(ctx, c, false) || sameBase(c)));
    }
    case 'unary_operator':
      return e.text.startsWith('~') && boolMask(ctx, e.namedChildren[0], indexed, depth + 1);
    case 'binary_operator': {
      const op = e.children.find((c) => c && !c.isNamed)?.type;
      if (op === '&' || op === '|' || op === '^') return boolMask(ctx, e.childForFieldName('left'), indexed, depth + 1);
      // `(u > 0) * (l == u)`: the product of two bool tensors is a bool tensor (a logical and); their sum a logical or
      return (op === '*' || op === '+') && boolMask(ctx, e.childForFieldName('left'), indexed, depth + 1) && boolMask(ctx, e.childForFieldName('right'), indexed, depth + 1);
    }
    case 'call': {
      const callee = ctx.sema.callee(e) ?? '';
      if (/^torch\.(isnan|isinf|isfinite|logical_\w+|isin|eq|ne|gt|lt|ge|le)$/.test(callee)) return true;
      const m = methodName(e);
      const recv = receiver(e);
      // `pos.unsqueeze(2).expand_as(conf)`, `mask.view(-1)`: a bool mask reshaped or moved is still a bool mask
      if (m && MASK_SHAPE_METHODS.test(m) && recv) return boolMask(ctx, recv, indexed, depth + 1);
      return !!m && MASK_BOOL_METHODS.test(m) && !!recv && !hostValue(ctx, recv) && (tensorish(ctx, recv, false) || sameBase(recv) || /mask/i.test(recv.text));
    }
    case 'identifier': {
      const vals = ctx.sema.bindings(e.text).filter((v) => v.id !== e.id);
      if (vals.length > 0 && vals.every((v) => boolMask(ctx, v, indexed, depth + 1))) return true;
      return namedMask(ctx, e, vals);
    }
    case 'attribute':
      return namedMask(ctx, e, []);
    default:
      return false;
  }
}

const MASK_NAME = /(^|_)mask$/i;
/** Bindings that make a `*mask` name something other than a bool tensor: an index list, a float or int tensor. */
const NOT_BOOL = /\.(long|float|int|half|double|bfloat16)\(|\b(arange|randperm|argsort|topk|nonzero|argwhere|multinomial|randint)\b|dtype\s*=\s*torch\.(float|long|int|half|bfloat)|^\[|^\(|^None$|^\d/;

/**
 * A name the program calls a mask (`mask`, `train_mask`, `data.val_mask`: PyG's node masks, padding masks) used as an
 * index on an accelerator tensor: a bool tensor by convention (indexing with a 0/1 int tensor would gather rows 0 and 1).
 * Not when one of its bindings is plainly something else (`mask = idx.long()`, `mask = torch.arange(n) < k` is a comparison).
 */
function namedMask(ctx: RuleContext, e: Node, vals: readonly Node[]): boolean {
  const name = e.type === 'attribute' ? e.childForFieldName('attribute')?.text ?? '' : e.text;
  if (!MASK_NAME.test(name)) return false;
  if (vals.some((v) => NOT_BOOL.test(v.text))) return false;
  return !ctx.model.isHost(e);
}

/** The index of a boolean-mask read `x[mask]` / `t[t[:, 0] == i, 1:]` (the mask, with slices or ints beside it), else null. */
export function maskIndex(ctx: RuleContext, sub: Node): Node | null {
  const value = sub.childForFieldName('value');
  const indexes = sub.childrenForFieldName('subscript').filter((n): n is Node => !!n);
  if (!value || !indexes.length) return null;
  if (indexes.length === 1) return boolMask(ctx, indexes[0], value) ? indexes[0] : null;
  const masks = indexes.filter((i) => i.type !== 'slice' && i.type !== 'integer' && i.type !== 'ellipsis' && i.text !== 'None');
  return masks.length === 1 && boolMask(ctx, masks[0], value) ? masks[0] : null;
}

/** The assignments of `name` in the function that holds `at` (module level: the module's own). */
export function localBindings(ctx: RuleContext, name: string, at: Node): Node[] {
  const fn = ctx.sema.enclosingFunction(at)?.id ?? -1;
  return ctx.sema.bindings(name).filter((v) => (ctx.sema.enclosingFunction(v)?.id ?? -1) === fn && v.startIndex < at.startIndex);
}

/** A use of a loop variable (`for x in xs`, `for i, x in enumerate(xs)`, `for x, y in zip(xs, ys)`): the sequence it is drawn from. */
export function loopSource(id: Node): Node | null {
  for (let p = id.parent, c: Node = id; p; c = p, p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'class_definition') return null;
    if (p.type !== 'for_statement' || p.childForFieldName('body')?.id !== c.id) continue;
    const left = p.childForFieldName('left');
    const targets = left?.type === 'pattern_list' || left?.type === 'tuple_pattern' ? left.namedChildren : [left];
    const pos = targets.findIndex((t) => t?.type === 'identifier' && t.text === id.text);
    if (pos < 0) continue;
    let it = p.childForFieldName('right');
    const fn = it?.type === 'call' ? it.childForFieldName('function')?.text : null;
    if (it?.type === 'call' && fn === 'enumerate') return pos === 1 ? callArgs(it).positional[0] ?? null : null;
    if (it?.type === 'call' && fn === 'zip') return callArgs(it).positional[pos] ?? null;
    if (it?.type === 'call' && /tqdm$/.test(fn ?? '')) it = callArgs(it).positional[0] ?? null;
    return targets.length === 1 ? it : null;
  }
  return null;
}

const NMS = /^torchvision\.ops(\.boxes)?\.(nms|batched_nms)$/;

/** Non-maximum suppression: `torchvision.ops.nms`, `batched_nms`, or a helper named `non_max_suppression`/`nms` (YOLO utils). */
export function isNmsCall(ctx: RuleContext, call: Node): boolean {
  if (call.type !== 'call') return false;
  const q = ctx.sema.callee(call) ?? '';
  if (NMS.test(q)) return true;
  const fn = call.childForFieldName('function');
  const last = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : fn?.type === 'identifier' ? fn.text : '';
  return /^(non_max_suppression|batched_nms|nms)$/.test(last ?? '') && !/^(numpy|cv2)\./.test(q);
}

const COUNT_FNS = /^torch\.(nonzero|argwhere|masked_select|unique|unique_consecutive)$/;

/**
 * Where `e`'s leading dim comes from a count the data decides: an NMS result (or one image's part of it), a
 * boolean-mask selection, `nonzero`/`masked_select`/`unique`. Returns a short description, else null.
 */
export function countSource(ctx: RuleContext, e: Node | null | undefined, depth = 0): string | null {
  if (!e || depth > 4) return null;
  switch (e.type) {
    case 'parenthesized_expression':
      return countSource(ctx, e.namedChildren[0], depth + 1);
    case 'call': {
      if (isNmsCall(ctx, e)) return 'the NMS output';
      if (COUNT_FNS.test(ctx.sema.callee(e) ?? '')) return `\`${(ctx.sema.callee(e) ?? '').slice(6)}\``;
      const m = methodName(e);
      const recv = receiver(e);
      if (m && /^(nonzero|unique|masked_select)$/.test(m) && recv && tensorish(ctx, recv, false)) return `\`${m}()\``;
      // `sel.clone()`, `sel.float()`: same rows
      if (m && /^(clone|detach|float|half|long|int|to|cpu|contiguous)$/.test(m) && recv) return countSource(ctx, recv, depth + 1);
      return null;
    }
    case 'subscript': {
      if (maskIndex(ctx, e)) return 'a boolean-mask selection';
      // one image's detections: `preds[i]`, `out[si][:, :4]`
      return countSource(ctx, e.childForFieldName('value'), depth + 1) ? countSource(ctx, e.childForFieldName('value'), depth + 1) : null;
    }
    case 'identifier': {
      const vals = localBindings(ctx, e.text, e);
      const last = vals[vals.length - 1];
      if (last) return countSource(ctx, last, depth + 1);
      const src = loopSource(e);
      return src ? countSource(ctx, src, depth + 1) : null;
    }
    default:
      return null;
  }
}

/** `x.shape[0]`, `x.size(0)`, `len(x)`, `x.numel()` (or a name bound to one) where `x` has a data-dependent count: its source, else null. */
export function countSize(ctx: RuleContext, e: Node | null | undefined, depth = 0): { of: Node; source: string } | null {
  if (!e || depth > 3) return null;
  let of: Node | null = null;
  if (e.type === 'subscript') {
    const v = e.childForFieldName('value');
    if (v?.type === 'attribute' && v.childForFieldName('attribute')?.text === 'shape' && e.childForFieldName('subscript')?.text === '0') of = v.childForFieldName('object');
  } else if (e.type === 'call') {
    const m = methodName(e);
    const fn = e.childForFieldName('function');
    if ((m === 'size' && callArgs(e).positional[0]?.text === '0') || m === 'numel' || (m === '__len__')) of = receiver(e);
    else if (fn?.type === 'identifier' && fn.text === 'len' && !ctx.sema.resolve(fn)) of = callArgs(e).positional[0] ?? null;
  } else if (e.type === 'identifier') {
    const vals = localBindings(ctx, e.text, e);
    const last = vals[vals.length - 1];
    return last ? countSize(ctx, last, depth + 1) : null;
  }
  if (!of) return null;
  const source = countSource(ctx, of);
  return source ? { of, source } : null;
}

/**
 * A Python value derived from a device tensor's values: `.item()`/`.tolist()` of a device tensor, through local names
 * and the builtins that fold a list of them (`decode_lengths = (caption_lengths - 1).tolist()`, then
 * `max(decode_lengths)` or `sum([l > t for l in decode_lengths])`: a count the batch decides). `len(...)` of such a
 * list is the tensor's size, not its values, and is not followed. Returns the read, else null.
 */
export function hostReadOf(ctx: RuleContext, e: Node | null | undefined, depth = 0): Node | null {
  if (!e || depth > 4) return null;
  switch (e.type) {
    case 'parenthesized_expression':
      return hostReadOf(ctx, e.namedChildren[0], depth);
    case 'binary_operator':
    case 'comparison_operator':
      return e.namedChildren.map((c) => hostReadOf(ctx, c, depth + 1)).find((r) => r) ?? null;
    case 'subscript':
      return hostReadOf(ctx, e.childForFieldName('value'), depth + 1);
    case 'identifier': {
      const b = lastBinding(ctx, e);
      return b && b.id !== e.id ? hostReadOf(ctx, b, depth + 1) : null;
    }
    case 'list_comprehension':
    case 'generator_expression': {
      // the values are the iterated list's: `[l > t for l in lengths]`
      const clause = e.namedChildren.find((c) => c?.type === 'for_in_clause');
      return hostReadOf(ctx, clause?.childForFieldName('right'), depth + 1);
    }
    case 'call': {
      const m = methodName(e);
      const recv = receiver(e);
      if ((m === 'item' || m === 'tolist') && recv && !callArgs(e).positional.length && !hostValue(ctx, recv) && tensorish(ctx, recv, false)) return e;
      const fn = e.childForFieldName('function');
      if (fn?.type !== 'identifier' || !/^(max|min|sum|int|round|sorted)$/.test(fn.text) || ctx.sema.bindings(fn.text).length) return null;
      const args = e.childForFieldName('arguments');
      const list = args?.type === 'generator_expression' ? [args] : callArgs(e).positional;
      return list.map((a) => hostReadOf(ctx, a, depth + 1)).find((r) => r) ?? null;
    }
  }
  return null;
}

const PARAM_ITER = /^(parameters|named_parameters)$/;
const paramLoops = new WeakMap<object, Map<number, boolean>>();
/**
 * `for p in model.parameters():` / `for name, p in model.named_parameters():` / `for p in self.master_params:` whose
 * body reads `p.grad`: a loop over the model's parameters, run once per parameter (hundreds of trips in a real model).
 */
function overParameters(ctx: RuleContext, loop: Node): boolean {
  let memo = paramLoops.get(ctx.sema);
  if (!memo) paramLoops.set(ctx.sema, (memo = new Map()));
  const known = memo.get(loop.id);
  if (known !== undefined) return known;
  // a `for` statement, or a comprehension (`[p.grad.norm().item() for p in model.parameters()]`) and its clauses
  const clauses = loop.type === 'for_statement' ? [loop] : loop.namedChildren.filter((c): c is Node => c?.type === 'for_in_clause');
  const body = loop.type === 'for_statement' ? loop.childForFieldName('body') : loop;
  const yes = !!body && clauses.some((cl) => {
    const left = cl.childForFieldName('left');
    const it = cl.childForFieldName('right');
    if (!left || !it) return false;
    const names = new Set(left.type === 'identifier' ? [left.text] : left.namedChildren.filter((n) => n?.type === 'identifier').map((n) => n!.text));
    const calls = it.type === 'call' ? [it, ...ctx.sema.within('call', it)] : ctx.sema.within('call', it);
    return calls.some((c) => PARAM_ITER.test(methodName(c) ?? '')) || ctx.sema.within('attribute', body).some((a) => a.childForFieldName('attribute')?.text === 'grad' && names.has(a.childForFieldName('object')?.text ?? ''));
  });
  memo.set(loop.id, yes);
  return yes;
}

const COMPREHENSION = /^(list_comprehension|generator_expression|dictionary_comprehension|set_comprehension)$/;
/** The innermost loop (or comprehension) over the model's parameters around `node`, below `anchor` (the hot loop or helper). */
export function parameterLoop(ctx: RuleContext, node: Node, anchor: Node): Node | null {
  for (let p = node.parent; p && p.id !== anchor.id; p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'lambda') return null;
    if ((p.type === 'for_statement' || COMPREHENSION.test(p.type)) && overParameters(ctx, p)) return p;
  }
  return null;
}

/** The tensor methods that copy a value to the host (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`). */
export const HOST_READ_METHODS = new Set(['item', 'tolist', 'cpu', 'numpy']);
/** Host reads (`.item()`, `.cpu()`, ...) of device tensors in a loop's body, outside nested functions. */
export function deviceReadsIn(ctx: RuleContext, loop: Node): Node[] {
  const body = loop.childForFieldName('body');
  if (!body) return [];
  return ctx.sema.within('call', body).filter((c) => {
    if (!HOST_READ_METHODS.has(methodName(c) ?? '')) return false;
    const r = receiver(c);
    return !!r && tensorish(ctx, r, false) && !hostValue(ctx, r) && ctx.sema.enclosingFunction(c)?.id === ctx.sema.enclosingFunction(loop)?.id;
  });
}

/** `if`/`elif` tests on device values in a loop over the parameters that also reads device values to the host. */
export function parameterLoopBranches(ctx: RuleContext, loop: Node): Node[] {
  const body = loop.childForFieldName('body');
  if (!body) return [];
  const fn = ctx.sema.enclosingFunction(loop)?.id;
  const out: Node[] = [];
  for (const t of ['if_statement', 'elif_clause'] as const) {
    for (const st of ctx.sema.within(t, body)) {
      const c = st.childForFieldName('condition');
      if (c && ctx.sema.enclosingFunction(st)?.id === fn && tensorCondition(ctx, c)) out.push(c);
    }
  }
  return out.sort((a, b) => a.startIndex - b.startIndex);
}

/**
 * A test that TPU201 reports as a related location of its per-parameter read finding: it sits in a loop over the
 * parameters of the (unthrottled) training step, and that loop reads device values to the host.
 */
export function inParameterReadLoop(ctx: RuleContext, cond: Node, hot: HotInfo): boolean {
  if (hot.throttled || hot.kind !== 'train') return false;
  const loop = parameterLoop(ctx, cond, hot.anchor);
  return !!loop && deviceReadsIn(ctx, loop).length > 0;
}
