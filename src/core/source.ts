import type { Position } from './types';

/** Line starts of a text, for offset ⇄ (line, UTF-16 column) conversion. Handles LF and CRLF. */
export class LineIndex {
  readonly starts: number[];
  constructor(readonly text: string) {
    const starts = [0];
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
    this.starts = starts;
  }

  get lineCount(): number {
    return this.starts.length;
  }

  /** 0-based line containing `offset`. */
  lineOf(offset: number): number {
    const s = this.starts;
    let lo = 0;
    let hi = s.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (s[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  position(offset: number): Position {
    const o = Math.max(0, Math.min(offset, this.text.length));
    const line = this.lineOf(o);
    return { line, character: o - this.starts[line] };
  }

  offset(pos: Position): number {
    if (pos.line >= this.starts.length) return this.text.length;
    return Math.min(this.starts[pos.line] + pos.character, this.lineEnd(pos.line));
  }

  /** Offset of the end of `line`, before its `\r\n` or `\n`. */
  lineEnd(line: number): number {
    const next = line + 1 < this.starts.length ? this.starts[line + 1] - 1 : this.text.length;
    return next > this.starts[line] && this.text.charCodeAt(next - 1) === 13 && next < this.text.length ? next - 1 : next;
  }

  lineText(line: number): string {
    return this.text.slice(this.starts[line], this.lineEnd(line));
  }

  /** Per line (lazily): offsets in the line of the surrogate pairs, as codePointColumn counts them. */
  private pairs = new Map<number, number[]>();

  /**
   * `codePointColumn(lineText(line), utf16Column)` without slicing or rescanning the line: each line's surrogate
   * pairs are found once, so many findings on one long line cost O(log pairs) each, not O(line length).
   */
  codePointColumn(line: number, utf16Column: number): number {
    if (line >= this.starts.length) return 1;
    const start = this.starts[line];
    const len = this.lineEnd(line) - start;
    let pairs = this.pairs.get(line);
    if (!pairs) {
      pairs = [];
      for (let i = 0; i < len; i++) {
        const c = this.text.charCodeAt(start + i);
        if (c >= 0xd800 && c <= 0xdbff && i + 1 < len) pairs.push(i++);
      }
      this.pairs.set(line, pairs);
    }
    const col = Math.max(0, Math.min(utf16Column, len));
    // pairs starting before col - 1 take two units for one code point
    let lo = 0;
    let hi = pairs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pairs[mid] + 1 < col) lo = mid + 1;
      else hi = mid;
    }
    return col - lo + 1;
  }
}

/**
 * Lone carriage returns (old Mac line endings, which Python reads as newlines) as "\n": the same length,
 * so offsets are unchanged. Tree-sitter reads only "\n" as a line break.
 */
export function normalizeLoneCr(text: string): string {
  return text.includes('\r') ? text.replace(/\r(?!\n)/g, '\n') : text;
}

/**
 * `normalized` (from `normalizeLoneCr(original)`) edited into `edited`: the same edit on `original`, so its
 * lone carriage returns stay; line breaks the edit inserts use the file's dominant line ending.
 */
export function restoreLoneCr(original: string, normalized: string, edited: string): string {
  if (original === normalized) return edited;
  const lone = (original.match(/\r(?!\n)/g) ?? []).length;
  const crlf = (original.match(/\r\n/g) ?? []).length;
  const lf = (original.match(/(?<!\r)\n/g) ?? []).length;
  const eol = lone >= crlf && lone >= lf ? '\r' : crlf > lf ? '\r\n' : '\n';
  // common prefix and suffix: the edited middle of `normalized` is replaced in `original`
  let p = 0;
  const min = Math.min(normalized.length, edited.length);
  while (p < min && normalized.charCodeAt(p) === edited.charCodeAt(p)) p++;
  let s = 0;
  while (s < min - p && normalized.charCodeAt(normalized.length - 1 - s) === edited.charCodeAt(edited.length - 1 - s)) s++;
  const oldMid = normalized.slice(p, normalized.length - s);
  const newMid = edited.slice(p, edited.length - s);
  // within the middle, keep the original bytes of the lines the edit left as they were
  const oldLines = oldMid.split(/(?<=\n)/);
  const origLines = original.slice(p, original.length - s).split(/(?<=\r(?!\n)|\n)/);
  const keep = new Map<string, string[]>();
  if (oldLines.length === origLines.length) oldLines.forEach((l, i) => keep.set(l, [...(keep.get(l) ?? []), origLines[i]]));
  const out = newMid.split(/(?<=\n)/).map((l) => {
    const orig = keep.get(l)?.shift();
    if (orig !== undefined) return orig;
    return l.endsWith('\r\n') ? l : l.endsWith('\n') ? l.slice(0, -1) + eol : l;
  });
  return original.slice(0, p) + out.join('') + original.slice(original.length - s);
}

/** The line ending a file uses (the first one found), so inserted lines match it. */
export function detectEol(text: string): '\n' | '\r\n' {
  const i = text.indexOf('\n');
  return i > 0 && text.charCodeAt(i - 1) === 13 ? '\r\n' : '\n';
}

/** 1-based column in Unicode code points (what the CLI prints), from a 0-based UTF-16 column. */
export function codePointColumn(lineText: string, utf16Column: number): number {
  let col = 0;
  for (let i = 0; i < utf16Column && i < lineText.length; i++) {
    const c = lineText.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < lineText.length) i++;
    col++;
  }
  return col + 1;
}

/**
 * One copy of each distinct string (per analysis): a finding's message, fix title and edit texts are built by
 * concatenation, and a rule that reports 20,000 times on one file kept 20,000 trees of string pieces (heap snapshot of
 * the bench's "+ chain" shape: 11 MB of its 40 MB). The strings are equal, so every output is the same.
 */
export function interner(): (s: string) => string {
  const seen = new Map<string, string>();
  return (s) => {
    const t = seen.get(s);
    if (t !== undefined) return t;
    seen.set(s, s);
    return s;
  };
}
