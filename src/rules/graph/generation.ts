/**
 * Autoregressive decode and sampling loops outside training (the catalog: eval and generation loops are info).
 * A generation loop is a `for`/`while` loop that is not a hot (training/eval) loop, calls a model, and carries a
 * tensor from one step to the next: a name read by the model call (directly or through one alias assigned before
 * it) is re-assigned after the call from an expression that reads it or the model's output (`idx = torch.cat((idx, nxt), 1)`,
 * `x = x - eps * dt`, `latents = scheduler.step(noise, t, latents).prev_sample`, `past = out.past_key_values`).
 * TPU205 reports the growing `torch.cat` and a `break` on a device value, TPU201 per-token host reads, TPU204 a
 * sampling loop with no step barrier; each on its own line, so none doubles another.
 */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { methodName, receiver } from '../../core/semantics';
import { HOST_READ_METHODS, isBarrierCall, pythonReduction, short, tensorCondition, tensorish } from './util';

export interface GenerationLoop {
  loop: Node;
  body: Node;
  /** The model call that consumes the carried tensor. */
  model: Node;
  /** The carried names re-assigned after the model call. */
  carried: Set<string>;
  /** `torch.cat` calls that grow a carried sequence. */
  growing: Node[];
  /** Names assigned from the model's output (directly or through later assignments in the body). */
  derived: Set<string>;
}

/** Callables that are models by name: `model(x)`, `self.model(x)`, `unet(x, t)`, `self(idx)`, `self.transformer(...)`. */
/** Factories named after what they build (`build_model`, `load_network`): calling one makes a module, it runs no step. */
const FACTORY = /^(build|make|create|load|get|init|setup|construct|instantiate|prepare|wrap|unwrap)_\w+$/i;
// a sampler's per-step method is the model step too: `self.ddim_sample(model, img, t)` (glide/guided-diffusion), a
// diffusion class's `self.model_predictions(img, t)` wrapping its network (denoising-diffusion-pytorch's DDIM loop)
const MODEL_NAME = /(^|\.)(self|\w*model|\w*model_(predictions?|fn|forward|output|step)|\w*net|unet|\w*decoder|\w*(rnn|lstm|gru)|\w*transformer|denois\w*|gpt|llm|lm|generator|p_sample\w*|\w*_sample(_step)?|sample_step)$/i;

const memo = new WeakMap<object, GenerationLoop[]>();

export function ownStatements(body: Node): Node[] {
  // statements of this loop's body, not of nested functions or lambdas (nested loops count)
  const out: Node[] = [];
  const walk = (n: Node) => {
    for (const c of n.namedChildren) {
      if (!c || c.type === 'function_definition' || c.type === 'class_definition' || c.type === 'lambda') continue;
      out.push(c);
      walk(c);
    }
  };
  walk(body);
  return out;
}

function assignedNames(a: Node): string[] {
  const left = a.childForFieldName('left');
  if (!left) return [];
  if (left.type === 'identifier') return [left.text];
  if (left.type === 'pattern_list' || left.type === 'tuple_pattern') return left.namedChildren.filter((n) => n?.type === 'identifier').map((n) => n!.text);
  return [];
}

function identifiersIn(ctx: RuleContext, node: Node): Set<string> {
  const s = new Set<string>();
  if (node.type === 'identifier') s.add(node.text);
  for (const id of ctx.sema.within('identifier', node)) s.add(id.text);
  return s;
}

export function generationLoops(ctx: RuleContext): GenerationLoop[] {
  const cached = memo.get(ctx.sema);
  if (cached) return cached;
  const out: GenerationLoop[] = [];
  const hotLoops = ctx.sema.hotLoops().map((h) => h.anchor);
  for (const loop of [...ctx.sema.nodes('for_statement'), ...ctx.sema.nodes('while_statement')]) {
    // not a training/eval loop, not inside one, and not an epoch loop around one
    // a helper hot only through a throttled or eval call (`print_samples()` every k steps calls `generate`) still decodes
    // (only when it grows the sequence: an eval helper's loop over batches that carries `y = y.view(-1)` is no decode loop)
    const h = ctx.sema.hot(loop);
    if ((h && (h.anchor.type !== 'function_definition' || (h.kind === 'train' && !h.throttled))) || hotLoops.some((a) => a.startIndex >= loop.startIndex && a.endIndex <= loop.endIndex)) continue;
    const helperHot = !!h;
    if (ctx.sema.containsTrainSignal(loop)) continue;
    const body = loop.childForFieldName('body');
    if (!body) continue;
    const stmts = ownStatements(body);
    const calls = stmts.filter((n) => n.type === 'call');
    const model = calls.find((c) => {
      const fn = c.childForFieldName('function');
      // `self.model.forward(tokens[:, prev_pos:cur_pos], prev_pos)` (Meta's llama reference): the module called through forward
      // (a factory, `task.build_model(cfg.model)` in fairseq's ensemble loader loop over checkpoint files, builds a module: no step)
      return !!fn && (fn.type === 'identifier' || fn.type === 'attribute') && !ctx.sema.resolve(fn) && MODEL_NAME.test(fn.text.replace(/\.forward$/, '')) &&
        !FACTORY.test(fn.text.split('.').pop() ?? '');
    });
    if (!model) continue;
    const assigns = stmts.filter((n) => n.type === 'assignment');
    // names the model reads: its arguments, plus the sources of aliases assigned before it (`idx_cond = idx[:, -T:]`)
    const args = model.childForFieldName('arguments');
    if (!args) continue;
    const reads = identifiersIn(ctx, args);
    for (const a of assigns) {
      if (a.startIndex >= model.startIndex) continue;
      const right = a.childForFieldName('right');
      if (right && assignedNames(a).some((n) => reads.has(n))) for (const n of identifiersIn(ctx, right)) reads.add(n);
    }
    // names derived from the model's output, in statement order (`logits = out.logits`, `nxt = logits.argmax(-1)`)
    const derived = new Set<string>();
    const carried = new Set<string>();
    const growing: Node[] = [];
    // a name the `for` header binds is re-bound every iteration: `net_ = unwrap(net_)` carries nothing to the next
    // step (BasicSR's save_network loop over its networks)
    const header = loop.type === 'for_statement' ? identifiersIn(ctx, loop.childForFieldName('left') ?? loop) : new Set<string>();
    for (const a of assigns) {
      if (a.endIndex < model.startIndex) continue;
      const right = a.childForFieldName('right');
      if (!right) continue;
      const rhs = identifiersIn(ctx, right);
      const fromModel = right.startIndex <= model.startIndex && right.endIndex >= model.endIndex;
      const fromOutput = fromModel || [...rhs].some((n) => derived.has(n));
      // `tokens[:, cur_pos] = next_token`: a preallocated buffer the model reads, written from its output each step
      const left = a.childForFieldName('left');
      const base = left?.type === 'subscript' ? left.childForFieldName('value') : null;
      if (base?.type === 'identifier' && reads.has(base.text) && fromOutput) carried.add(base.text);
      for (const n of assignedNames(a)) {
        if (fromOutput) derived.add(n);
        if (!reads.has(n) || !(rhs.has(n) || fromOutput) || header.has(n)) continue;
        carried.add(n);
        if (right.type === 'call' && ctx.sema.callee(right) === 'torch.cat') growing.push(right);
      }
    }
    if (carried.size && (!helperHot || growing.length)) out.push({ loop, body, model, carried, growing, derived });
  }
  memo.set(ctx.sema, out);
  return out;
}

/** `break` statements of a generation loop whose `if` tests a device value (`if (nxt == eos).all(): break`). */
export function deviceBreaks(ctx: RuleContext, g: GenerationLoop): { brk: Node; cond: Node }[] {
  const out: { brk: Node; cond: Node }[] = [];
  for (const brk of ownStatements(g.body).filter((n) => n.type === 'break_statement')) {
    // the break belongs to this loop, not a nested one
    let owner: Node | null = brk.parent;
    while (owner && owner.type !== 'for_statement' && owner.type !== 'while_statement') owner = owner.parent;
    if (owner?.id !== g.loop.id) continue;
    let cond: Node | null = null;
    for (let p = brk.parent; p && p.id !== g.loop.id; p = p.parent) {
      if (p.type === 'if_statement' || p.type === 'elif_clause') {
        cond = p.childForFieldName('condition');
        break;
      }
    }
    if (cond && (tensorCondition(ctx, cond) || pythonReduction(ctx, cond))) out.push({ brk, cond });
  }
  return out;
}

/**
 * Python conversions that read a one-element tensor's value: `int(t)`, `float(t)`, `bool(t)`, and `chr(t)`/`hex(t)`
 * through `Tensor.__index__`.
 */
const SCALAR_CONVERT = new Set(['int', 'float', 'bool', 'chr', 'hex', 'oct', 'bin']);

/** The tensor a host read reads: the receiver of `tok.item()`, the argument of `int(tok)` / `chr(tok)` (builtins only). */
function readTensor(ctx: RuleContext, n: Node): Node | null {
  if (HOST_READ_METHODS.has(methodName(n) ?? '')) return receiver(n);
  const fn = n.childForFieldName('function');
  if (fn?.type !== 'identifier' || !SCALAR_CONVERT.has(fn.text) || ctx.sema.resolve(fn)) return null;
  const args = n.childForFieldName('arguments')?.namedChildren ?? [];
  return args.length === 1 && args[0]?.type !== 'keyword_argument' ? args[0] : null;
}

/** Host reads (`tok.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `int(tok)`, `chr(tok)`) of tensors in a generation loop's body, outside device-break tests. */
export function perStepReads(ctx: RuleContext, g: GenerationLoop): Node[] {
  const tests = deviceBreaks(ctx, g).map((b) => b.cond);
  return ownStatements(g.body).filter((n) => {
    if (n.type !== 'call') return false;
    const recv = readTensor(ctx, n);
    if (!recv || !(tensorish(ctx, recv, false) || fromOutput(recv, g))) return false;
    if (recv.type === 'call' && HOST_READ_METHODS.has(methodName(recv) ?? '')) return false; // `.cpu().numpy()`: report the first read
    return !tests.some((t) => n.startIndex >= t.startIndex && n.endIndex <= t.endIndex);
  });
}

/** `nxt`, `logits[:, -1]`, `out.logits`: a value computed from the model's output in this step. */
function fromOutput(e: Node, g: GenerationLoop): boolean {
  let n: Node | null = e;
  while (n && (n.type === 'subscript' || n.type === 'attribute')) n = n.type === 'subscript' ? n.childForFieldName('value') : n.childForFieldName('object');
  return n?.type === 'identifier' && g.derived.has(n.text);
}

/**
 * Whether the loop already ends its graph each step: a barrier call, or a host read or device break of the carried
 * state itself. A read executes only the tensor it reads (torch_xla's `_local_scalar_dense` / `_to_cpu` sync just their
 * arguments' graphs): `tok = torch.multinomial(prob, 1).item()` runs the sample, while the recurrent `state` that the
 * same model call returned stays pending and its graph grows with every step. Returns the reads that do not cut it.
 */
export function stepsExecute(ctx: RuleContext, g: GenerationLoop): boolean {
  return stepCut(ctx, g).cut;
}

export function stepCut(ctx: RuleContext, g: GenerationLoop): { cut: boolean; reads: Node[] } {
  const stmts = ownStatements(g.body);
  if (stmts.some((n) => n.type === 'call' && isBarrierCall(ctx, n))) return { cut: true, reads: [] };
  const reads = perStepReads(ctx, g);
  const breaks = deviceBreaks(ctx, g).map((b) => b.cond);
  const readsCarried = (e: Node | null) => !!e && [...identifiersIn(ctx, e)].some((n) => g.carried.has(n));
  if (reads.some((r) => readsCarried(receiver(r))) || breaks.some(readsCarried)) return { cut: true, reads: [] };
  return { cut: false, reads: [...reads, ...breaks] };
}

/** A trip count known to be small (`range(4)`): tracing it into one graph is harmless. */
export function smallTripCount(g: GenerationLoop): boolean {
  if (g.loop.type !== 'for_statement') return false;
  const it = g.loop.childForFieldName('right');
  if (it?.type !== 'call' || it.childForFieldName('function')?.text !== 'range') return false;
  const args = it.childForFieldName('arguments')?.namedChildren ?? [];
  const bound = args.length === 1 ? args[0] : args.length >= 2 ? args[1] : null;
  return bound?.type === 'integer' && parseInt(bound.text, 10) <= 16;
}

export { short };
