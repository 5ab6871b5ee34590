import type { Formatter, Report } from './types';
import { termSafe } from './escape';
import type { OutFinding } from '../process';

const paint = (on: boolean, code: string, s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);

export function location(f: Pick<OutFinding, 'path' | 'cell' | 'line' | 'column'>): string {
  const p = termSafe(f.path);
  return f.cell !== null ? `${p}:cell ${f.cell}:${f.line}:${f.column}` : `${p}:${f.line}:${f.column}`;
}

function statistics(report: Report): string {
  const counts = new Map<string, { n: number; fixable: number; message: string }>();
  for (const f of report.findings) {
    const c = counts.get(f.rule) ?? { n: 0, fixable: 0, message: f.message };
    c.n++;
    if (f.fix?.applicability === 'safe') c.fixable++;
    counts.set(f.rule, c);
  }
  const rows = [...counts].sort((a, b) => b[1].n - a[1].n || a[0].localeCompare(b[0]));
  const width = Math.max(1, ...rows.map(([, c]) => String(c.n).length));
  return rows.map(([id, c]) => `${String(c.n).padStart(width)}\t${id}\t${c.fixable ? '[*] ' : '    '}${termSafe(c.message)}`).join('\n') + (rows.length ? '\n' : '');
}

/** Human-readable output: `path:line:col: TPU101 [*] message`, `[*]` marking safe fixes. */
export const textFormatter: Formatter = {
  format(report) {
    const c = report.color;
    const lines: string[] = [];
    if (report.statistics) {
      lines.push(statistics(report));
    } else {
      for (const f of report.findings) {
        const sev = f.severity === 'error' ? paint(c, '31', 'error') : f.severity === 'warning' ? paint(c, '33', 'warning') : paint(c, '36', f.severity);
        const mark = f.fix?.applicability === 'safe' ? '[*] ' : '';
        lines.push(`${paint(c, '1', location(f))}: ${paint(c, '1;31', f.rule)} ${mark}${termSafe(f.message)} (${sev}, step ${f.step})`);
        for (const r of f.related ?? []) lines.push(`    related: ${paint(c, '2', location(r))}: ${termSafe(r.message)}`);
      }
    }
    for (const n of report.notices) lines.push(`${n.error ? paint(c, '31', 'error') : paint(c, '2', 'notice')}: ${termSafe(n.path)}: ${termSafe(n.message)}`);
    const s = report.summary;
    const tail: string[] = [];
    if (s.fixed) tail.push(`Fixed ${s.fixed} issue${s.fixed === 1 ? '' : 's'}.`);
    if (s.failed) tail.push(`${s.failed} file${s.failed === 1 ? '' : 's'} could not be analysed (see the errors above).`);
    if (s.findings === 0 && !s.failed) tail.push(`All checks passed: ${s.files} file${s.files === 1 ? '' : 's'} checked.`);
    else if (s.findings === 0) tail.push(`No issues in the ${s.files} file${s.files === 1 ? '' : 's'} analysed.`);
    else {
      tail.push(
        `Found ${s.findings} issue${s.findings === 1 ? '' : 's'} in ${s.files} file${s.files === 1 ? '' : 's'} (${s.errors} error, ${s.warnings} warning, ${s.info} info).`,
      );
      if (s.fixable.safe) tail.push(`[*] ${s.fixable.safe} fixable with \`tpu-ready check --fix\`.`);
      if (s.fixable.unsafe) tail.push(`${s.fixable.unsafe} more fixable with \`--fix --unsafe-fixes\` (review them).`);
    }
    tail.push(`TPU readiness score: ${s.score}/100 (target ${report.target.profile} ${report.target.version}, effort ${s.effort} points).`);
    return (lines.length ? lines.join('\n') + '\n' : '') + (lines.length ? '\n' : '') + tail.join('\n') + '\n';
  },
};
