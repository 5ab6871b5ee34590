/**
 * Model loaders whose device parameter defaults to CUDA-if-available-else-CPU: called without a device, they load on
 * the CPU of a TPU host and the model silently runs there (or raises once its inputs are on the XLA device).
 * openai/CLIP clip/clip.py (@0848ed7): `def load(name, device = "cuda" if torch.cuda.is_available() else "cpu", jit=...)`.
 */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, kwValue, methodName, receiver } from '../../core/semantics';

/** qualified loader → its device parameter: keyword name and positional index. */
const LOADERS: ReadonlyMap<string, { kw: string; index: number }> = new Map([['clip.load', { kw: 'device', index: 1 }]]);
const MOVES = new Set(['to', 'cuda', 'to_empty']);

/** The name or attribute the loaded model is bound to: `model, preprocess = clip.load(...)`, `m = clip.load(...)[0]`. */
function modelTarget(call: Node): Node | null {
  let e: Node = call;
  if (e.parent?.type === 'subscript' && e.parent.childForFieldName('value')?.id === e.id) e = e.parent;
  const a = e.parent;
  if (a?.type !== 'assignment' || a.childForFieldName('right')?.id !== e.id) return null;
  const left = a.childForFieldName('left');
  const first = left && (left.type === 'pattern_list' || left.type === 'tuple_pattern') ? left.namedChildren[0] : left;
  return first && (first.type === 'identifier' || first.type === 'attribute') ? first : null;
}

/** `clip.load(...)[0].to(device)`: the loaded model is moved in the same expression. */
function movedInline(call: Node): boolean {
  for (let p: Node | null = call.parent; p && (p.type === 'subscript' || p.type === 'attribute' || p.type === 'call'); p = p.parent) {
    if (p.type === 'call' && MOVES.has(methodName(p) ?? '')) return true;
  }
  return false;
}

export function reportLoaderDefaults(ctx: RuleContext): void {
  if (!ctx.sema.imports('clip')) return;
  for (const call of ctx.sema.callsResolvedTo(LOADERS.keys())) {
    const spec = LOADERS.get(ctx.sema.callee(call) ?? '')!;
    const { positional, keywords } = callArgs(call);
    const args = call.childForFieldName('arguments');
    if (!args || keywords.has(spec.kw) || positional.length > spec.index) continue;
    if (args.namedChildren.some((a) => a?.type === 'list_splat' || a?.type === 'dictionary_splat')) continue;
    if (movedInline(call)) continue;
    // the model is moved afterwards (`model = model.to(device)`, `clip_model.cuda()`: TPU101's): not left on the default
    const target = modelTarget(call);
    if (target && ctx.sema.nodes('call').some((c) => c.startIndex > call.endIndex && MOVES.has(methodName(c) ?? '') && receiver(c)?.text === target.text)) continue;
    const dev = ctx.idiom.device();
    // the JIT archive (jit=True, the default of older CLIP releases) patches device constants by tracing `.to(device)`:
    // unverified on XLA, so the fix is offered only for the plain module (`jit=False`), which `load` moves with `.to(device)`
    const jit = kwValue(keywords.get('jit'));
    const fix = jit?.text === 'False' ? {
      title: `Pass \`${spec.kw}=${dev.text}\``,
      applicability: 'safe' as const,
      edits: [{ start: args.endIndex - 1, end: args.endIndex - 1, text: `, ${spec.kw}=${dev.text}` }],
      imports: dev.imports,
      needsAccel: dev.needsAccel,
    } : null;
    ctx.report(call, {
      severity: 'error',
      message: `\`${call.childForFieldName('function')?.text ?? 'load'}(...)\` without \`${spec.kw}=\` loads the model on its default, \`"cuda" if torch.cuda.is_available() else "cpu"\`: on a TPU host the CPU, so the model silently runs there (or fails on inputs moved to the TPU); pass \`${spec.kw}=${dev.text}\`${fix ? '' : ' with `jit=False` (the JIT archive\'s device patching is unverified on TPU)'}`,
      fix,
    });
  }
}
