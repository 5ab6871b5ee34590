/** Helpers of the precision family (3xx): autocast calls, torch alias, argument-list edits. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import type { Snippet } from '../../core/idioms';
import type { Edit, ImportSpec } from '../../core/types';
import { callArgs, kwValue, stringContent } from '../../core/semantics';
import { cudaOnly, tpuTruth } from '../../model/guards';

const CUDA_AUTOCAST = new Set(['torch.cuda.amp.autocast', 'torch.cuda.amp.autocast_mode.autocast']);
const TORCH_AUTOCAST = new Set(['torch.autocast', 'torch.amp.autocast', 'torch.amp.autocast_mode.autocast']);
const XLA_AUTOCAST = new Set(['torch_xla.amp.autocast', 'torch_xla.amp.autocast_mode.autocast']);

export interface AutocastCall {
  call: Node;
  /** cuda: `torch.cuda.amp.autocast`; torch: `torch.autocast`/`torch.amp.autocast`; xla: torch_xla's; accel: the generated module's. */
  kind: 'cuda' | 'torch' | 'xla' | 'accel';
  qualified: string;
  /** The device argument (`device_type` of torch.autocast, `device` of torch_xla.amp.autocast). */
  device: Node | null;
  dtype: Node | null;
  enabled: Node | null;
  cacheEnabled: Node | null;
}

/** An autocast constructor call (any spelling, through aliases), else null. */
export function autocastCall(ctx: RuleContext, call: Node): AutocastCall | null {
  const q = ctx.sema.callee(call);
  if (!q) return null;
  const { positional, keywords } = callArgs(call);
  const kw = (n: string) => kwValue(keywords.get(n));
  const accel = `${ctx.options.accelModule}.autocast`;
  if (CUDA_AUTOCAST.has(q)) {
    // torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)
    return { call, kind: 'cuda', qualified: q, device: null, enabled: kw('enabled') ?? positional[0] ?? null, dtype: kw('dtype') ?? positional[1] ?? null, cacheEnabled: kw('cache_enabled') ?? positional[2] ?? null };
  }
  if (TORCH_AUTOCAST.has(q)) {
    // torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)
    return { call, kind: 'torch', qualified: q, device: kw('device_type') ?? positional[0] ?? null, dtype: kw('dtype') ?? positional[1] ?? null, enabled: kw('enabled') ?? positional[2] ?? null, cacheEnabled: kw('cache_enabled') ?? positional[3] ?? null };
  }
  if (XLA_AUTOCAST.has(q)) {
    // torch_xla.amp.autocast(device, enabled=True, dtype=None, cache_enabled=True)
    return { call, kind: 'xla', qualified: q, device: kw('device') ?? positional[0] ?? null, enabled: kw('enabled') ?? positional[1] ?? null, dtype: kw('dtype') ?? positional[2] ?? null, cacheEnabled: kw('cache_enabled') ?? positional[3] ?? null };
  }
  if (q === accel) {
    return { call, kind: 'accel', qualified: q, device: null, dtype: kw('dtype') ?? positional[0] ?? null, enabled: kw('enabled') ?? positional[1] ?? null, cacheEnabled: null };
  }
  return null;
}

/** `torch.float16` / `torch.half` (through aliases) or the strings "float16"/"fp16"/"half". */
export function isFloat16(ctx: RuleContext, node: Node | null | undefined): boolean {
  if (!node) return false;
  if (node.type === 'string') return /^(float16|fp16|half|torch\.float16)$/.test(stringContent(node) ?? '');
  const q = ctx.sema.resolve(node);
  return q === 'torch.float16' || q === 'torch.half';
}

export function isBfloat16(ctx: RuleContext, node: Node | null | undefined): boolean {
  if (!node) return false;
  if (node.type === 'string') return /^(bfloat16|bf16|torch\.bfloat16)$/.test(stringContent(node) ?? '');
  return ctx.sema.resolve(node) === 'torch.bfloat16';
}

export function isFloat64(ctx: RuleContext, node: Node | null | undefined): boolean {
  if (!node) return false;
  const q = ctx.sema.resolve(node);
  return q === 'torch.float64' || q === 'torch.double';
}

/** The name `torch` is bound under in this file, plus the import to add when it is not bound at all. */
export function torchName(ctx: RuleContext): { name: string; imports: ImportSpec[] } {
  if (ctx.sema.aliases.get('torch') === 'torch') return { name: 'torch', imports: [] };
  for (const [alias, full] of ctx.sema.aliases) if (full === 'torch') return { name: alias, imports: [] };
  return { name: 'torch', imports: [{ module: 'torch' }] };
}

/** Rewrites `torch.` in snippet text to the file's alias of torch (`import torch as t` → `t.`). */
export function withTorchAlias(ctx: RuleContext, s: Snippet): Snippet {
  const t = torchName(ctx);
  if (!/\btorch\./.test(s.text)) return s;
  return { text: s.text.replace(/\btorch\./g, `${t.name}.`), imports: [...s.imports, ...t.imports], needsAccel: s.needsAccel };
}

/** Text of `torch.<attr>` for this file (`torch.bfloat16`, `t.float32`). */
export function torchAttr(ctx: RuleContext, attr: string): { text: string; imports: ImportSpec[] } {
  const t = torchName(ctx);
  return { text: `${t.name}.${attr}`, imports: t.imports };
}

/**
 * The bf16 autocast expression of the profile with extra arguments spliced in:
 * `torch.autocast("xla", dtype=torch.bfloat16, enabled=flag)` / `accel.autocast(enabled=flag)`.
 * `dtype` replaces the idiom's bf16 dtype when given (a variable the user computes).
 */
export function autocastExpr(ctx: RuleContext, opts: { dtype?: string; extra?: string[] }): Snippet {
  const base = withTorchAlias(ctx, ctx.idiom.autocast());
  let text = base.text;
  const open = text.indexOf('(');
  const inner = text.slice(open + 1, -1);
  const args = inner ? inner.split(/,\s*/) : [];
  if (opts.dtype) {
    const i = args.findIndex((a) => a.startsWith('dtype='));
    if (i >= 0) args[i] = `dtype=${opts.dtype}`;
    else args.push(`dtype=${opts.dtype}`);
  }
  args.push(...(opts.extra ?? []));
  text = `${text.slice(0, open)}(${args.join(', ')})`;
  return { text, imports: base.imports, needsAccel: base.needsAccel };
}

// ---------------------------------------------------------------------------------------------
// Argument-list edits

function argNodes(list: Node): Node[] {
  return list.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
}

/** Removes one argument of a call together with its separating comma. */
export function removeArg(call: Node, arg: Node): Edit | null {
  const list = call.childForFieldName('arguments');
  if (!list || list.type !== 'argument_list') return null;
  const args = argNodes(list);
  const i = args.findIndex((a) => a.id === arg.id);
  if (i < 0) return null;
  if (args.length === 1) return { start: list.startIndex + 1, end: list.endIndex - 1, text: '' };
  if (i < args.length - 1) return { start: arg.startIndex, end: args[i + 1].startIndex, text: '' };
  return { start: args[i - 1].endIndex, end: arg.endIndex, text: '' };
}

/** Appends `text` (e.g. `drop_last=True`) as the last argument of a call (on its own line when the arguments are one per line). */
export function appendArg(call: Node, text: string, source?: string): Edit | null {
  const list = call.childForFieldName('arguments');
  if (!list || list.type !== 'argument_list') return null;
  const args = argNodes(list);
  if (!args.length) return { start: list.startIndex + 1, end: list.startIndex + 1, text };
  const last = args[args.length - 1];
  if (last.type === 'dictionary_splat' || last.type === 'list_splat') {
    // keep keywords before `**kwargs`
    return { start: last.startIndex, end: last.startIndex, text: `${text}, ` };
  }
  if (source && last.startPosition.row > list.startPosition.row) {
    const ls = source.lastIndexOf('\n', last.startIndex - 1) + 1;
    const indent = /^[ \t]*/.exec(source.slice(ls, last.startIndex))![0];
    const eol = source.includes('\r\n') ? '\r\n' : '\n';
    if (source.slice(ls, last.startIndex) === indent) return { start: last.endIndex, end: last.endIndex, text: `,${eol}${indent}${text}` };
  }
  return { start: last.endIndex, end: last.endIndex, text: `, ${text}` };
}

/** Expressions that can take `.attr` / `(...)` without parentheses. */
export function isPrimary(node: Node): boolean {
  return ['identifier', 'attribute', 'call', 'subscript', 'parenthesized_expression', 'string', 'integer', 'float', 'list', 'dictionary', 'tuple'].includes(node.type);
}

export function asPrimary(node: Node): string {
  return isPrimary(node) ? node.text : `(${node.text})`;
}

/** Whether a node sits in a decorator (`@torch.cuda.amp.autocast()`). */
export function inDecorator(node: Node): boolean {
  for (let p = node.parent; p; p = p.parent) {
    if (p.type === 'decorator') return true;
    if (p.type === 'block' || p.type === 'module') return false;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Conditions keyed on CUDA

/**
 * The value a condition keyed on CUDA takes on a TPU host (no CUDA): false for `torch.cuda.is_available()`,
 * `torch.cuda.is_bf16_supported()`, `device_count() > 0`, `get_device_capability()[0] >= 8`, MPS probes, CUDA
 * device-type tests and flags the program model knows to hold one of those; negated through `not`. Null when unknown.
 * Answered by src/model/guards.ts.
 */
export function evalsOnTpu(ctx: RuleContext, node: Node): boolean | null {
  return tpuTruth(node, ctx.model, { facts: 'probes' });
}

/** Code a TPU host never runs: a CUDA-only arm, after a CUDA-only early exit, … (src/model/guards.ts). */
export function underCudaOnlyBranch(ctx: RuleContext, node: Node): boolean {
  return cudaOnly(node, ctx.model, { facts: 'probes', guess: false });
}
