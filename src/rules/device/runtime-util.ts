/**
 * Helpers of TPU107–TPU111 (kept apart from util.ts, which serves TPU102–TPU106): XLA device
 * expressions, version-compatibility branches, environment-variable writes, text-file lines.
 */
import type { Node } from '../../core/parse';
import type { Semantics } from '../../core/semantics';
import { callArgs, isFString, stringContent } from '../../core/semantics';
import type { RuleContext } from '../../core/rule';
import type { Edit } from '../../core/types';
import { ProgramModel } from '../../model';

/** A same-file program model for callers that hold only the file's Semantics (one per file, dropped with it). */
const localModels = new WeakMap<Semantics, ProgramModel>();
function localModel(sema: Semantics): ProgramModel {
  let m = localModels.get(sema);
  if (!m) localModels.set(sema, (m = new ProgramModel(sema)));
  return m;
}

/** Literal content of a plain (non-f) string node, else null. */
export function literal(node: Node | null | undefined): string | null {
  if (!node || node.type !== 'string' || isFString(node)) return null;
  return stringContent(node);
}

/** Offsets of the string's content (between the quotes). */
export function contentRange(node: Node): { start: number; end: number } {
  const kids = node.namedChildren.filter((c): c is Node => !!c);
  const start = kids.find((c) => c.type === 'string_start');
  const end = kids.find((c) => c.type === 'string_end');
  return { start: start ? start.endIndex : node.startIndex, end: end ? end.startIndex : node.endIndex };
}

/** An XLA (or torch_tpu / accel) device: `torch_xla.device()`, `xm.xla_device()`, `torch.device("xla")`, `"xla:0"`, names bound to them. */
export function isXlaDevice(sema: Semantics, node: Node | null | undefined, depth = 0): boolean {
  if (!node || depth > 4) return false;
  if (node.type === 'string') return /^(xla|tpu)(:\d+)?$/.test(literal(node) ?? '');
  if (node.type === 'call') {
    const callee = sema.callee(node) ?? '';
    if (/^torch_xla\.(device|core\.xla_model\.xla_device|runtime\.xla_device)$/.test(callee)) return true;
    if (/(^|\.)accel\.device$/.test(callee) || callee === 'accel.device') return true;
    if (callee === 'torch.device') return isXlaDevice(sema, callArgs(node).positional[0], depth + 1);
    return false;
  }
  if (node.type === 'identifier') return sema.bindings(node.text).some((v) => isXlaDevice(sema, v, depth + 1));
  return false;
}

/** A device argument (not a dtype, not the CPU): XLA, CUDA, or a name that reads as a device. */
export function isDeviceLike(sema: Semantics, node: Node | null | undefined, model: ProgramModel = localModel(sema)): boolean {
  if (!node) return false;
  if (isXlaDevice(sema, node) || model.namesCuda(node)) return true;
  if (node.type === 'string') return false;
  if (node.type === 'call') return /(^|\.)(device|xla_device)$/.test(sema.callee(node) ?? node.childForFieldName('function')?.text ?? '');
  if (node.type === 'identifier' || node.type === 'attribute') {
    const last = node.type === 'attribute' ? node.childForFieldName('attribute')?.text ?? '' : node.text;
    if (!/device|^dev$/i.test(last)) return false;
    if (node.type === 'identifier') {
      const bound = sema.bindings(node.text);
      if (bound.length && bound.every((v) => /^(['"])cpu\1$/.test(v.text) || /torch\.device\((['"])cpu\1\)/.test(v.text))) return false;
    }
    return true;
  }
  return false;
}

const COMPAT_TEST = /hasattr|getattr|version|VERSION/;

/**
 * Under a version-compatibility switch: an `if`/ternary testing `hasattr`/`getattr`/a version, or a
 * `try` whose handler catches AttributeError/ImportError.
 */
export function inCompatBranch(node: Node): boolean {
  for (let p = node.parent; p; p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      if (COMPAT_TEST.test(p.childForFieldName('condition')?.text ?? '')) return true;
    }
    if (p.type === 'conditional_expression' && COMPAT_TEST.test(p.text)) return true;
    if (p.type === 'else_clause' && p.parent?.type === 'if_statement' && COMPAT_TEST.test(p.parent.childForFieldName('condition')?.text ?? '')) return true;
    if (p.type === 'try_statement' && /except\s*\(?[^:]*(AttributeError|ImportError|ModuleNotFoundError)/.test(p.text)) return true;
    if (p.type === 'function_definition' || p.type === 'module') break;
  }
  return false;
}

/** torch_xla is imported only under a guard (try/if/function): a fix must not add a top-level `import torch_xla`. */
export function xlaImportGuarded(sema: Semantics): boolean {
  const all = [...sema.nodes('import_statement'), ...sema.nodes('import_from_statement')].filter((n) => /\btorch_xla\b/.test(n.text));
  return all.length > 0 && all.every((n) => n.parent?.type !== 'module');
}

// ---------------------------------------------------------------------------------------------
// Environment variables written from Python or notebook magics

export interface EnvWrite {
  name: string;
  /** Literal value, or null when computed. */
  value: string | null;
  /** Where a finding is anchored. */
  at: { start: number; end: number };
  nameNode: Node | null;
  valueNode: Node | null;
  /** The expression statement holding the write (Python), null for magics and nested writes. */
  stmt: Node | null;
  /** The magic line to delete (notebooks). */
  lineRange: { start: number; end: number } | null;
  magic: boolean;
  /** The node the write sits in (for branch checks); null for magics. */
  node: Node | null;
  /** Offsets of a magic's value (without quotes). */
  valueRange: { start: number; end: number } | null;
}

/** `os.environ["X"] = v`, `os.environ.setdefault("X", v)`, `os.putenv("X", v)`, `%env X=v` / `%env X v` / `%set_env X=v`. */
export function envWrites(ctx: RuleContext): EnvWrite[] {
  const out: EnvWrite[] = [];
  const sema = ctx.sema;
  for (const a of sema.nodes('assignment')) {
    const left = a.childForFieldName('left');
    if (left?.type !== 'subscript') continue;
    if (sema.resolve(left.childForFieldName('value')) !== 'os.environ') continue;
    const key = left.childForFieldName('subscript');
    const name = literal(key);
    if (!name || !key) continue;
    const right = a.childForFieldName('right');
    const stmt = a.parent?.type === 'expression_statement' ? a.parent : null;
    out.push({ name, value: literal(right), at: { start: left.startIndex, end: a.endIndex }, nameNode: key, valueNode: right, stmt, lineRange: null, magic: false, node: a, valueRange: null });
  }
  for (const call of sema.nodes('call')) {
    const callee = sema.callee(call);
    if (callee !== 'os.environ.setdefault' && callee !== 'os.putenv') continue;
    const [k, v] = callArgs(call).positional;
    const name = literal(k);
    if (!name || !k) continue;
    const stmt = call.parent?.type === 'expression_statement' ? call.parent : null;
    out.push({ name, value: literal(v), at: { start: call.startIndex, end: call.endIndex }, nameNode: k, valueNode: v ?? null, stmt, lineRange: null, magic: false, node: call, valueRange: null });
  }
  if (ctx.notebook) {
    for (const m of ctx.notebook.magics) {
      const mm = /^([ \t]*)%(?:env|set_env)[ \t]+([A-Za-z_]\w*)(?:[ \t]*=[ \t]*|[ \t]+)(\S.*?)?[ \t]*$/.exec(m.text);
      if (!mm) continue;
      const rawValue = mm[3] ?? '';
      const value = rawValue.replace(/^(['"])(.*)\1$/, '$2');
      const vStart = m.start + mm[0].length - rawValue.length + (value.length < rawValue.length ? 1 : 0);
      out.push({
        name: mm[2], value, at: { start: m.start + mm[1].length, end: m.end }, nameNode: null, valueNode: null, stmt: null,
        lineRange: wholeLine(ctx.text, m.start, m.end), magic: true, node: null, valueRange: rawValue ? { start: vStart, end: vStart + value.length } : null,
      });
    }
  }
  return out.sort((a, b) => a.at.start - b.at.start);
}

/** The range deleting a whole line of `text` with its line break. */
export function wholeLine(text: string, lineStart: number, lineEnd: number): { start: number; end: number } {
  let end = lineEnd;
  if (text.charCodeAt(end) === 13) end++;
  if (text.charCodeAt(end) === 10) return { start: lineStart, end: end + 1 };
  // last line: take the preceding break instead
  let start = lineStart;
  if (start > 0 && text.charCodeAt(start - 1) === 10) start--;
  if (start > 0 && text.charCodeAt(start - 1) === 13) start--;
  return { start, end: lineEnd };
}

export function deleteRange(r: { start: number; end: number }): Edit {
  return { start: r.start, end: r.end, text: '' };
}

// ---------------------------------------------------------------------------------------------
// Text files

export interface TextLine {
  index: number;
  start: number;
  end: number;
  text: string;
}

/** Lines of a text with offsets (end excludes the line break, CRLF aware). */
export function textLines(text: string): TextLine[] {
  const out: TextLine[] = [];
  let start = 0;
  let index = 0;
  for (;;) {
    let nl = text.indexOf('\n', start);
    if (nl === -1) nl = text.length;
    const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
    out.push({ index: index++, start, end, text: text.slice(start, end) });
    if (nl >= text.length) break;
    start = nl + 1;
  }
  return out;
}
