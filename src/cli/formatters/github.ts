import type { Formatter } from './types';
import { termSafe } from './escape';

// the runner's escapes (actions/toolkit command.ts), then any other control character shown escaped
const esc = (s: string) => termSafe(s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A'));
const escProp = (s: string) => esc(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** GitHub Actions workflow commands: one annotation per finding. */
export const githubFormatter: Formatter = {
  format(report) {
    return report.findings
      .map((f) => {
        const level = f.severity === 'error' ? 'error' : f.severity === 'warning' ? 'warning' : 'notice';
        const where = f.cell !== null ? ` (cell ${f.cell}, line ${f.line})` : '';
        // notebook lines are cell-relative: annotate the file without a line
        const pos = f.cell !== null ? '' : `,line=${f.line},col=${f.column},endLine=${f.endLine},endColumn=${f.endColumn}`;
        // annotations have no related locations: name them in the message
        const related = (f.related ?? []).map((r) => ` (related: ${r.path}:${r.cell !== null ? `cell ${r.cell}:` : ''}${r.line}:${r.column}: ${r.message})`).join('');
        return `::${level} title=${escProp(`${f.rule}`)},file=${escProp(f.path)}${pos}::${esc(`${f.rule} ${f.message}${where}${related}`)}`;
      })
      .join('\n') + (report.findings.length ? '\n' : '');
  },
};
