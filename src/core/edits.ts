/** Offset-based edits: builders for rules, and a non-overlapping applier. */
import type { Node } from './parse';
import { detectEol } from './source';
import type { Edit } from './types';

export function replace(node: Node | { startIndex: number; endIndex: number }, text: string): Edit {
  return { start: node.startIndex, end: node.endIndex, text };
}

export function replaceRange(start: number, end: number, text: string): Edit {
  return { start, end, text };
}

export function insertAt(offset: number, text: string): Edit {
  return { start: offset, end: offset, text };
}

/** Start of the line holding `offset`. */
export function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
}

/** End of the line holding `offset` (before "\r\n" / "\n"). */
export function lineEnd(text: string, offset: number): number {
  let i = text.indexOf('\n', offset);
  if (i === -1) i = text.length;
  return i > 0 && text.charCodeAt(i - 1) === 13 ? i - 1 : i;
}

/** Leading whitespace of the line holding `offset`. */
export function indentAt(text: string, offset: number): string {
  const start = lineStart(text, offset);
  return /^[ \t]*/.exec(text.slice(start, start + 200))![0];
}

/** Inserts a new statement line before `stmt`, at its indentation. */
export function insertLineBefore(text: string, stmt: Node, line: string): Edit {
  const start = lineStart(text, stmt.startIndex);
  const indent = indentAt(text, stmt.startIndex);
  return insertAt(start, `${indent}${line}${detectEol(text)}`);
}

/** Inserts a new statement line after `stmt` (after its last line), at its indentation. */
export function insertLineAfter(text: string, stmt: Node, line: string, indent = indentAt(text, stmt.startIndex)): Edit {
  const end = lineEnd(text, stmt.endIndex);
  return insertAt(end, `${detectEol(text)}${indent}${line}`);
}

/**
 * Deletes a statement with its line(s). When it is the only statement of its block, it becomes
 * `pass` so the code still parses; a statement sharing its line with others (`a; b`) is cut alone.
 */
export function deleteStatement(text: string, stmt: Node): Edit {
  const block = stmt.parent;
  const siblings = block ? block.namedChildren.filter((c) => c && c.type !== 'comment') : [];
  const ls = lineStart(text, stmt.startIndex);
  const le = lineEnd(text, stmt.endIndex);
  const before = text.slice(ls, stmt.startIndex);
  const after = text.slice(stmt.endIndex, le);
  const alone = /^[ \t]*$/.test(before) && /^[ \t]*(#.*)?$/.test(after);
  if (block && block.type === 'block' && siblings.length === 1) {
    return { start: stmt.startIndex, end: alone ? le : stmt.endIndex, text: 'pass' };
  }
  if (!alone) {
    // `a; b` on one line: remove the statement and one adjacent semicolon
    const semiAfter = /^[ \t]*;[ \t]*/.exec(after);
    if (semiAfter) return { start: stmt.startIndex, end: stmt.endIndex + semiAfter[0].length, text: '' };
    const semiBefore = /[ \t]*;[ \t]*$/.exec(before);
    if (semiBefore) return { start: stmt.startIndex - semiBefore[0].length, end: stmt.endIndex, text: '' };
    return { start: stmt.startIndex, end: stmt.endIndex, text: 'pass' };
  }
  let end = le;
  if (text.charCodeAt(end) === 13) end++;
  if (text.charCodeAt(end) === 10) end++;
  else if (ls > 0) {
    // last line of the file: remove the preceding newline instead
    let s = ls - 1;
    if (s > 0 && text.charCodeAt(s - 1) === 13) s--;
    return { start: s, end: le, text: '' };
  }
  return { start: ls, end, text: '' };
}

export function overlaps(a: Edit, b: Edit): boolean {
  if (a.start === b.start) return true;
  return a.start < b.end && b.start < a.end;
}

/** Applies edits that do not overlap (callers check); edits are sorted here. */
export function applyEdits(text: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start || a.end - b.end);
  let out = '';
  let pos = 0;
  for (const e of sorted) {
    if (e.start < pos) throw new Error(`overlapping edits at ${e.start}`);
    out += text.slice(pos, e.start) + e.text;
    pos = e.end;
  }
  return out + text.slice(pos);
}

/**
 * Picks whole fixes whose edits overlap neither each other nor fixes picked before (first wins),
 * returning the accepted groups' indexes.
 */
export function selectNonOverlapping(groups: Edit[][]): number[] {
  const taken: Edit[] = [];
  const accepted: number[] = [];
  groups.forEach((edits, i) => {
    for (let a = 0; a < edits.length; a++) for (let b = a + 1; b < edits.length; b++) if (overlaps(edits[a], edits[b])) return;
    if (edits.some((e) => taken.some((t) => overlaps(e, t)))) return;
    taken.push(...edits);
    accepted.push(i);
  });
  return accepted;
}
