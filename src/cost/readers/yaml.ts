/** YAML (and, through the same walker, JSON) → dotted entries with 1-based lines. */
import { LineCounter, parseDocument, isAlias, isMap, isScalar, isSeq, type Document, type Node } from 'yaml';
import { CostConfigError, type Entries } from '../types';
import { MAX_ALIAS_COUNT, MAX_CONFIG_CHARS, MAX_ENTRIES } from './limits';

export function checkSize(file: string, text: string): void {
  if (text.length > MAX_CONFIG_CHARS) {
    throw new CostConfigError(`${file}: ${text.length} characters is too large for a training config (limit ${MAX_CONFIG_CHARS}); not read`, file);
  }
}

/** Reads YAML. Throws CostConfigError with the line of the first syntax error or the alias guard. */
export function readYaml(file: string, text: string, kind = 'YAML'): { entries: Entries; data: unknown } {
  checkSize(file, text);
  // refuse deep flow nesting before the parser recurses into it (100,000 `[` take it seconds to overflow)
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) {
      if (++depth > 1000) throw new CostConfigError(`${file}: nesting deeper than 64 levels; not read`, file);
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  const lc = new LineCounter();
  let doc: Document;
  try {
    doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true, strict: false });
  } catch (err) {
    // a 100,000-deep `[[[…]]]` overflows the parser's stack: refuse it like the walker's depth guard
    if (err instanceof RangeError) throw new CostConfigError(`${file}: nesting deeper than 64 levels; not read`, file);
    throw err;
  }
  if (doc.errors.length) {
    const e = doc.errors[0];
    const line = e.linePos?.[0].line ?? lc.linePos(e.pos[0]).line;
    const near = nearKey(text, line);
    throw new CostConfigError(`${file}:${line}: malformed ${kind}${near ? ` at \`${near}\`` : ''}: ${e.message.split('\n')[0]}`, file, line, near || undefined);
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    if (err instanceof RangeError) throw new CostConfigError(`${file}: nesting deeper than 64 levels; not read`, file);
    throw new CostConfigError(`${file}: refused: ${(err as Error).message} (more than ${MAX_ALIAS_COUNT} alias expansions)`, file);
  }
  const entries: Entries = new Map();
  walk(doc, doc.contents as Node | null, '', file, lc, entries, 0, 1);
  return { entries, data };
}

function nearKey(text: string, line: number): string {
  const l = text.split(/\r?\n/)[line - 1] ?? '';
  const m = /^\s*-?\s*["']?([\w.-]+)["']?\s*:/.exec(l);
  return m ? m[1] : '';
}

function walk(doc: Document, node: Node | null, prefix: string, file: string, lc: LineCounter, out: Entries, depth: number, line: number, aliasLine?: number): void {
  if (depth > 64) throw new CostConfigError(`${file}: nesting deeper than 64 levels; not read`, file);
  if (out.size > MAX_ENTRIES) throw new CostConfigError(`${file}: more than ${MAX_ENTRIES} values; not read`, file);
  const at = (n: Node | null | undefined, fallback: number) => aliasLine ?? (n && n.range ? lc.linePos(n.range[0]).line : fallback);
  if (!node) {
    if (prefix) out.set(prefix, { value: null, file, line });
    return;
  }
  if (isAlias(node)) {
    // values reached through an alias are shown at the alias
    walk(doc, (node.resolve(doc) as Node | undefined) ?? null, prefix, file, lc, out, depth + 1, line, aliasLine ?? line);
    return;
  }
  if (isMap(node)) {
    if (prefix) out.set(prefix, { value: {}, file, line });
    for (const pair of node.items) {
      const k = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      if (k === '<<') continue; // merge keys: resolved by the YAML library into the parent's toJS value only
      const key = prefix ? `${prefix}.${k}` : k;
      walk(doc, (pair.value as Node | null) ?? null, key, file, lc, out, depth + 1, at(pair.key as Node, line), aliasLine);
    }
    return;
  }
  if (isSeq(node)) {
    out.set(prefix, { value: node.toJSON(doc, { maxAliasCount: MAX_ALIAS_COUNT } as never) as unknown, file, line });
    node.items.forEach((item, i) => walk(doc, (item as Node | null) ?? null, `${prefix}.${i}`, file, lc, out, depth + 1, at(item as Node, line), aliasLine));
    return;
  }
  if (isScalar(node)) out.set(prefix, { value: node.value, file, line });
}
