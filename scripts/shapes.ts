/** Generated file shapes shared by the benchmark and the budget tests. */

/** `bytes` of short statement lines, one `.cuda()` call in five (the shape that needs the most memory per byte). */
export function shortLines(bytes: number): string {
  const out = ['import torch'];
  for (let n = 13, i = 0; n < bytes; i++) {
    const l = i % 5 === 0 ? `x${i} = t.cuda()` : i % 5 === 1 ? 'y = a.b(c)' : `z = ${i}`;
    out.push(l);
    n += l.length + 1;
  }
  return out.join('\n') + '\n';
}
