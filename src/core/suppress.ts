/**
 * Suppression comments: `# tpu-ready: ignore[TPU201,TPU203]` (or bare `ignore`) on the line, on the
 * first line of the statement, or on a comment line right above it; `# tpu-ready: ignore-file[...]`
 * anywhere on its own line silences a file.
 */
import type { Node } from './parse';
import { enclosingStatement } from './semantics';
import { LineIndex, detectEol } from './source';
import type { Edit } from './types';

const DIRECTIVE = /#\s*tpu-ready:\s*(ignore-file|ignore)\b(?:\[([^\]]*)\])?/g;

export interface Suppressions {
  /** line → rule ids ('all' = every rule) */
  lines: Map<number, Set<string> | 'all'>;
  /** Directives alone on a comment line, keyed by the line they cover (the next one). */
  next: Map<number, Set<string> | 'all'>;
  file: Set<string> | 'all' | null;
}

function parseIds(list: string | undefined): Set<string> | 'all' {
  if (list === undefined) return 'all';
  const ids = list.split(',').map((s) => s.trim().toUpperCase()).filter(Boolean);
  return ids.length ? new Set(ids) : 'all';
}

function merge(a: Set<string> | 'all' | undefined | null, b: Set<string> | 'all'): Set<string> | 'all' {
  if (a === 'all' || b === 'all') return 'all';
  if (!a) return b;
  return new Set([...a, ...b]);
}

/** Reads the directives from comment nodes. */
export function collectSuppressions(comments: Node[], lines: LineIndex): Suppressions {
  const result: Suppressions = { lines: new Map(), next: new Map(), file: null };
  for (const c of comments) {
    if (!c.text.includes('tpu-ready')) continue;
    DIRECTIVE.lastIndex = 0;
    for (let m = DIRECTIVE.exec(c.text); m; m = DIRECTIVE.exec(c.text)) {
      const ids = parseIds(m[2]);
      if (m[1] === 'ignore-file') result.file = merge(result.file, ids);
      else {
        const line = lines.lineOf(c.startIndex);
        result.lines.set(line, merge(result.lines.get(line), ids));
        // a comment alone on its line also covers the next line
        const lineText = lines.lineText(line);
        if (lineText.trimStart().startsWith('#')) result.next.set(line + 1, merge(result.next.get(line + 1), ids));
      }
    }
  }
  return result;
}

function covers(entry: Set<string> | 'all' | null | undefined, rule: string): boolean {
  return entry === 'all' || (!!entry && entry.has(rule));
}

/** Whether a finding of `rule` starting at `node` is suppressed. */
export function isSuppressed(s: Suppressions, rule: string, node: Node, lines: LineIndex): boolean {
  if (covers(s.file, rule)) return true;
  if (s.lines.size === 0 && s.next.size === 0) return false;
  const line = lines.lineOf(node.startIndex);
  if (covers(s.lines.get(line), rule)) return true;
  const stmt = enclosingStatement(node);
  const stmtLine = lines.lineOf(stmt.startIndex);
  if (stmtLine !== line && covers(s.lines.get(stmtLine), rule)) return true;
  // comment-only line directly above the statement (or above the finding's line)
  return covers(s.next.get(stmtLine), rule) || covers(s.next.get(line), rule);
}

/**
 * Edit that adds `# tpu-ready: ignore[RULE]` for a finding at `offset`: appended to the statement's
 * first line (merged into a directive already there), or as a comment line above when that line
 * ends inside a string or with a continuation.
 */
export function suppressionEdit(text: string, node: Node, rule: string): Edit {
  const lines = new LineIndex(text);
  const stmt = enclosingStatement(node);
  const line = lines.lineOf(stmt.startIndex);
  const lineText = lines.lineText(line);
  const end = lines.lineEnd(line);
  const existing = /#\s*tpu-ready:\s*ignore\[([^\]]*)\]/.exec(lineText);
  if (existing) {
    const ids = existing[1].split(',').map((x) => x.trim()).filter(Boolean);
    if (!ids.includes(rule)) ids.push(rule);
    const start = lines.starts[line] + existing.index;
    return { start, end: start + existing[0].length, text: `# tpu-ready: ignore[${ids.join(', ')}]` };
  }
  const stmtEndsOnLine = lines.lineOf(stmt.endIndex) === line;
  const openString = !stmtEndsOnLine && /("""|''')/.test(lineText);
  if (lineText.trimEnd().endsWith('\\') || openString) {
    const indent = /^[ \t]*/.exec(lineText)![0];
    return { start: lines.starts[line], end: lines.starts[line], text: `${indent}# tpu-ready: ignore[${rule}]${detectEol(text)}` };
  }
  const trailing = lineText.length - lineText.trimEnd().length;
  return { start: end - trailing, end, text: `  # tpu-ready: ignore[${rule}]` };
}
