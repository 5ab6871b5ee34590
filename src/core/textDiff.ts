/**
 * Minimal text changes between two versions of a document, so that a fix rewritten by the engine
 * (a whole new text) is applied to the editor as small edits: cursors, folding and markers outside
 * the changed spans stay put. Pure: no `vscode` import (unit-tested in test/extension/).
 */

/** Replace `[start, end)` of the old text with `text`. Changes are sorted and never overlap. */
export interface TextChange {
  start: number;
  end: number;
  text: string;
}

/** Beyond this many differing lines the middle is replaced as one change (keeps Myers' trace small). */
const MAX_LINE_EDITS = 2000;

function splitLines(text: string): string[] {
  return text ? text.split(/(?<=\n)/) : [];
}

/** Matched line pairs (oldIndex, newIndex) of a shortest edit script (Myers 1986), or null past `maxD`. */
function myersMatches(a: string[], b: string[], maxD: number): [number, number][] | null {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= Math.min(max, maxD); d++) {
    trace.push(v.slice(off - d - 1, off + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) return backtrack(trace, n, m, d);
    }
  }
  return null;
}

function backtrack(trace: Int32Array[], n: number, m: number, dEnd: number): [number, number][] {
  const matches: [number, number][] = [];
  let x = n;
  let y = m;
  for (let d = dEnd; d >= 0; d--) {
    // trace[d] is V before step d, for diagonals -d-1 … d+1
    const t = trace[d];
    const at = (k: number) => t[k + d + 1];
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      matches.push([x, y]);
    }
    x = prevX;
    y = prevY;
  }
  return matches.reverse();
}

/** Changes turning `oldText` into `newText`: line-level diff, each hunk trimmed to the differing characters. */
export function diffText(oldText: string, newText: string): TextChange[] {
  if (oldText === newText) return [];
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const aMid = a.slice(pre, a.length - suf);
  const bMid = b.slice(pre, b.length - suf);
  const matches = myersMatches(aMid, bMid, MAX_LINE_EDITS) ?? [];
  const aStarts = [0];
  for (const line of a) aStarts.push(aStarts[aStarts.length - 1] + line.length);
  const changes: TextChange[] = [];
  let ai = 0;
  let bi = 0;
  const hunk = (aEnd: number, bEnd: number) => {
    if (ai === aEnd && bi === bEnd) return;
    const start = aStarts[pre + ai];
    const end = aStarts[pre + aEnd];
    const oldSeg = oldText.slice(start, end);
    const newSeg = bMid.slice(bi, bEnd).join('');
    let p = 0;
    while (p < oldSeg.length && p < newSeg.length && oldSeg[p] === newSeg[p]) p++;
    let s = 0;
    while (s < oldSeg.length - p && s < newSeg.length - p && oldSeg[oldSeg.length - 1 - s] === newSeg[newSeg.length - 1 - s]) s++;
    // keep surrogate pairs whole
    if (p > 0 && isHigh(oldSeg.charCodeAt(p - 1))) p--;
    if (s > 0 && isLow(oldSeg.charCodeAt(oldSeg.length - s))) s--;
    changes.push({ start: start + p, end: end - s, text: newSeg.slice(p, newSeg.length - s) });
  };
  for (const [x, y] of matches) {
    hunk(x, y);
    ai = x + 1;
    bi = y + 1;
  }
  hunk(aMid.length, bMid.length);
  return changes;
}

function isHigh(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

function isLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** Applies changes from `diffText` (for tests and for checking). */
export function applyChanges(text: string, changes: TextChange[]): string {
  let out = '';
  let at = 0;
  for (const c of changes) {
    out += text.slice(at, c.start) + c.text;
    at = c.end;
  }
  return out + text.slice(at);
}

/** The single span that differs between two texts (common prefix and suffix trimmed), for tree-sitter's `tree.edit`. */
export function changedSpan(oldText: string, newText: string): { start: number; oldEnd: number; newText: string } | null {
  if (oldText === newText) return null;
  let p = 0;
  const min = Math.min(oldText.length, newText.length);
  while (p < min && oldText.charCodeAt(p) === newText.charCodeAt(p)) p++;
  let s = 0;
  while (s < min - p && oldText.charCodeAt(oldText.length - 1 - s) === newText.charCodeAt(newText.length - 1 - s)) s++;
  return { start: p, oldEnd: oldText.length - s, newText: newText.slice(p, newText.length - s) };
}
