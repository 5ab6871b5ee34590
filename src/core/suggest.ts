/** "did you mean" for unknown ids, flags and keys. */

function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const t = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = t;
    }
  }
  return d[b.length];
}

/** The closest candidate (case-insensitive, within a third of the length), or null. */
export function closest(word: string, candidates: readonly string[]): string | null {
  const w = word.toLowerCase().slice(0, 64);
  let best: string | null = null;
  let bestD = Infinity;
  for (const c of candidates) {
    const lc = c.toLowerCase();
    // a prefix wins a tie: v6 -> v6e, not v4
    const dd = distance(w, lc) - (lc.startsWith(w) ? 0.5 : 0);
    if (dd < bestD) [best, bestD] = [c, dd];
  }
  return best !== null && bestD <= Math.max(1, Math.ceil(w.length / 3)) ? best : null;
}

/** ` (did you mean "x"?)`, or '' when nothing is close. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const c = closest(word, candidates);
  return c ? ` (did you mean "${c}"?)` : '';
}
