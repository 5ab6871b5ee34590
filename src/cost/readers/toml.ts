/** TOML → dotted entries. smol-toml parses; a line scanner maps each key path to its line. */
import { parse, TomlError } from 'smol-toml';
import { CostConfigError, type Entries } from '../types';
import { checkSize } from './yaml';

export function readToml(file: string, text: string): { entries: Entries; data: Record<string, unknown> } {
  checkSize(file, text);
  let data: Record<string, unknown>;
  try {
    data = parse(text) as Record<string, unknown>;
  } catch (e) {
    const line = e instanceof TomlError ? e.line : undefined;
    throw new CostConfigError(`${file}${line ? `:${line}` : ''}: malformed TOML: ${(e as Error).message.split('\n')[0]}`, file, line);
  }
  const lines = keyLines(text);
  const entries: Entries = new Map();
  const visit = (v: unknown, prefix: string, fallback: number) => {
    const line = lines.get(prefix) ?? fallback;
    if (prefix) entries.set(prefix, { value: isPlain(v) ? {} : v instanceof Date ? v.toISOString() : v, file, line });
    if (isPlain(v)) for (const [k, x] of Object.entries(v)) visit(x, prefix ? `${prefix}.${k}` : k, line);
    else if (Array.isArray(v)) v.forEach((x, i) => visit(x, `${prefix}.${i}`, line));
  };
  visit(data, '', 1);
  return { entries, data };
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function unquote(k: string): string {
  k = k.trim();
  return (k.startsWith('"') && k.endsWith('"')) || (k.startsWith("'") && k.endsWith("'")) ? k.slice(1, -1) : k;
}

function splitKey(k: string): string[] {
  const parts: string[] = [];
  let cur = '';
  let q: string | null = null;
  for (const ch of k) {
    if (q) {
      if (ch === q) q = null;
      cur += ch;
    } else if (ch === '"' || ch === "'") {
      q = ch;
      cur += ch;
    } else if (ch === '.') {
      parts.push(unquote(cur));
      cur = '';
    } else cur += ch;
  }
  parts.push(unquote(cur));
  return parts;
}

/** Key path → 1-based line of its `key =` or `[table]` header. Arrays of tables are indexed in order. */
function keyLines(text: string): Map<string, number> {
  const out = new Map<string, number>();
  const arrayCounts = new Map<string, number>();
  let table: string[] = [];
  let inMultiline: string | null = null;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    if (inMultiline) {
      if (raw.includes(inMultiline)) inMultiline = null;
      return;
    }
    const t = raw.trim();
    if (!t || t.startsWith('#')) return;
    let m = /^\[\[\s*([^\]]+?)\s*\]\]/.exec(t);
    if (m) {
      const base = splitKey(m[1]).join('.');
      const n = arrayCounts.get(base) ?? 0;
      arrayCounts.set(base, n + 1);
      table = [...splitKey(m[1]), String(n)];
      if (!out.has(base)) out.set(base, line);
      out.set(table.join('.'), line);
      return;
    }
    m = /^\[\s*([^\]]+?)\s*\]/.exec(t);
    if (m) {
      table = splitKey(m[1]);
      out.set(table.join('.'), line);
      return;
    }
    m = /^((?:"[^"]*"|'[^']*'|[\w-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[\w-]+))*)\s*=\s*(.*)$/.exec(t);
    if (m) {
      const path = [...table, ...splitKey(m[1])].join('.');
      if (!out.has(path)) out.set(path, line);
      const rest = m[2];
      for (const d of ['"""', "'''"]) {
        if (rest.startsWith(d) && rest.indexOf(d, 3) === -1) inMultiline = d;
      }
    }
  });
  return out;
}
