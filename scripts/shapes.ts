import fs from 'node:fs';
import path from 'node:path';

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

/** The torch sources of the project's examples/ and rule fixtures (not generated accel modules): the bench's corpus. */
export function torchSources(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    if (!fs.existsSync(d)) return;
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.py') && !e.name.startsWith('accel')) out.push(fs.readFileSync(p, 'utf8'));
    }
  };
  walk(path.join(root, 'examples'));
  walk(path.join(root, 'src/rules'));
  return out.filter((s) => /torch/.test(s));
}

/** The bench's large training file: those sources, joined and repeated to `count` lines. */
export function torchFile(root: string, count = 5000): string {
  const base = torchSources(root).join('\n\n');
  const lines: string[] = [];
  while (lines.length < count) lines.push(...base.split('\n'));
  return lines.slice(0, count).join('\n');
}
