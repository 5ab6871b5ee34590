/** Helpers for the notebook (9xx) rules. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import type { MagicLine } from '../../core/notebook';
import { callArgs, kwValue, stringContent } from '../../core/semantics';
import { deleteStatement, lineStart } from '../../core/edits';
import type { Edit } from '../../core/types';
import { accelName } from '../perf/util';

export { accelName, atModuleLevel, envWrites, launchCalls, plainString, singleProcessLaunch, topStatement, xlaContext } from '../perf/util';

const DEVICE_CALLS = new Set([
  'torch_xla.device', 'torch_xla.devices', 'torch_xla.real_devices', 'torch_xla.device_count',
  'torch_xla.core.xla_model.xla_device', 'torch_xla.core.xla_model.xla_real_devices', 'torch_xla.core.xla_model.get_xla_supported_devices',
  'torch_xla.runtime.is_bf16_supported',
]);

function isXlaString(node: Node | null | undefined): boolean {
  if (!node) return false;
  if (node.type === 'string') return /^xla(:\d+)?$/.test(stringContent(node) ?? '');
  return false;
}

/** Calls that touch the XLA runtime: `torch_xla.device()`, `xm.xla_device()`, `.to('xla')`, `device='xla'` factories, `accel.device()`. */
export function deviceAccess(ctx: RuleContext, call: Node): boolean {
  const callee = ctx.sema.callee(call) ?? '';
  if (DEVICE_CALLS.has(callee) || callee === accelName(ctx, 'device')) return true;
  const { positional, keywords } = callArgs(call);
  const fn = call.childForFieldName('function');
  const meth = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : null;
  if (meth === 'to' && (isXlaString(positional[0]) || isXlaString(kwValue(keywords.get('device'))))) return true;
  if (callee === 'torch.device') return false;
  const dev = kwValue(keywords.get('device'));
  if (isXlaString(dev)) return true;
  if (dev?.type === 'call' && ctx.sema.callee(dev) === 'torch.device' && isXlaString(callArgs(dev).positional[0])) return true;
  if (meth === 'to' && positional[0]?.type === 'call' && ctx.sema.callee(positional[0]) === 'torch.device' && isXlaString(callArgs(positional[0]).positional[0])) return true;
  return false;
}

/** The notebook's `!`/`%` lines that run pip: `!pip install`, `%pip install`, `!python -m pip install`. */
export function pipLines(ctx: RuleContext): (MagicLine & { args: string; argsOffset: number; verb: string })[] {
  const out: (MagicLine & { args: string; argsOffset: number; verb: string })[] = [];
  for (const m of ctx.notebook?.magics ?? []) {
    const r = /^(\s*[%!]\s*(?:pip3?|python3?\s+-m\s+pip|uv\s+pip|conda|mamba)\s+(install|uninstall|remove)\b)(.*)$/.exec(m.text);
    if (!r) continue;
    out.push({ ...m, verb: r[2], args: r[3], argsOffset: m.start + r[1].length });
  }
  return out;
}

/** Tokens of a pip argument string with their offsets (quotes kept in `raw`, stripped in `value`). */
export function tokens(args: string, base: number): { raw: string; value: string; start: number; end: number }[] {
  const out: { raw: string; value: string; start: number; end: number }[] = [];
  const re = /"[^"]*"|'[^']*'|[^\s]+/g;
  for (let m = re.exec(args); m; m = re.exec(args)) {
    if (m[0].startsWith('#')) break;
    out.push({ raw: m[0], value: m[0].replace(/^["']|["']$/g, ''), start: base + m.index, end: base + m.index + m[0].length });
  }
  return out;
}

/** The cell index holding a combined offset. */
export function cellOf(ctx: RuleContext, offset: number): number | null {
  const spans = ctx.notebook?.spans;
  if (!spans) return null;
  let cell: number | null = null;
  for (const s of spans) if (s.start <= offset) cell = s.cell;
  return cell;
}

/** An identifier that reads or writes a variable (not an attribute name or a keyword-argument name). */
export function isVariableUse(id: Node): boolean {
  const p = id.parent;
  if (p?.type === 'attribute' && p.childForFieldName('attribute')?.id === id.id) return false;
  if (p?.type === 'keyword_argument' && p.childForFieldName('name')?.id === id.id) return false;
  return true;
}

/**
 * `deleteStatement` that stays inside a notebook cell: on a cell's last line the core edit would also eat the
 * "\n" joining the next cell, which no cell owns; remove the newline before the line instead.
 */
export function deleteStatementInCell(ctx: RuleContext, stmt: Node): Edit {
  const e = deleteStatement(ctx.text, stmt);
  const span = ctx.notebook?.spans.find((s) => s.start <= stmt.startIndex && stmt.endIndex <= s.end);
  if (!span || e.end <= span.end) return e;
  const ls = lineStart(ctx.text, stmt.startIndex);
  if (ls <= span.start) return { start: span.start, end: span.end, text: '' };
  let s = ls - 1;
  if (s > span.start && ctx.text.charCodeAt(s - 1) === 13) s--;
  return { start: s, end: span.end, text: '' };
}

/** Deletes a whole line [start, end) of the combined program (a magic line), staying inside its cell. */
export function deleteLineInCell(ctx: RuleContext, start: number, end: number): Edit {
  const span = ctx.notebook?.spans.find((s) => s.start <= start && end <= s.end);
  let e = end;
  if (ctx.text.charCodeAt(e) === 13) e++;
  if (ctx.text.charCodeAt(e) === 10 && (!span || e + 1 <= span.end)) return { start, end: e + 1, text: '' };
  if (span && start > span.start) {
    let s = start - 1;
    if (s > span.start && ctx.text.charCodeAt(s - 1) === 13) s--;
    return { start: s, end: span ? Math.min(e, span.end) : e, text: '' };
  }
  return { start, end: span ? Math.min(e, span.end) : e, text: '' };
}

/** Import statements of torch_xla (any submodule), in document order. */
export function torchXlaImports(ctx: RuleContext): Node[] {
  return [...ctx.sema.nodes('import_statement'), ...ctx.sema.nodes('import_from_statement')]
    .filter((n) => /^(import|from)\s+torch_xla\b/.test(n.text))
    .sort((a, b) => a.startIndex - b.startIndex);
}
