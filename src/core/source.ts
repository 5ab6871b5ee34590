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
