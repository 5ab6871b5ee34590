/**
 * The readiness report (Markdown or a standalone HTML page): score, per-step status, the open findings
 * with links to the code and to the rule docs, notes, and the progress history. Every value that comes
 * from the workspace is escaped; the HTML page has no script and a CSP that forbids one.
 */
import type { ChecklistVM, FindingVM, StepStatus } from '../protocol/checklist';

export interface ReportOptions {
  /** Shown in the title (the project folder name). */
  project: string;
  /** ISO date-time of generation. */
  generated: string;
  /** Link target of a finding (defaults to `uri#Lline`). */
  link?: (f: FindingVM) => string;
}

const STATUS_TEXT: Record<StepStatus, string> = { done: 'done', 'in-progress': 'in progress', todo: 'to do' };
const STATUS_MARK: Record<StepStatus, string> = { done: '[x]', 'in-progress': '[~]', todo: '[ ]' };

function defaultLink(f: FindingVM): string {
  return f.cell === null ? `${f.uri}#L${f.line + 1}` : f.uri;
}

function relatedWhere(r: NonNullable<FindingVM['related']>[number]): string {
  return r.cell === null ? `${r.path}:${r.line + 1}` : `${r.path}:cell ${r.cell}:${r.line + 1}`;
}

function where(f: FindingVM): string {
  return f.cell === null ? `${f.path}:${f.line + 1}:${f.character + 1}` : `${f.path}:cell ${f.cell}:${f.line + 1}:${f.character + 1}`;
}

/** Escapes text for Markdown: HTML-significant characters become entities, Markdown syntax is backslash-escaped (backticks kept: messages quote code). */
export function escapeMd(s: string): string {
  return s
    .split(/(`[^`\n]+`)/)
    .map((part, i) => (i % 2 === 1 ? part : escapeMdText(part)))
    .join('')
    .replace(/\r?\n/g, ' ');
}

function escapeMdText(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/([\\[\]*_|#!`])/g, '\\$1');
}

/** A link target safe in Markdown and HTML: relative paths, file:, http(s): and vscode: only. */
export function safeHref(href: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(href)?.[1]?.toLowerCase();
  if (scheme && !['http', 'https', 'file', 'vscode'].includes(scheme) && !/^[a-z]$/i.test(scheme)) return '#';
  return encodeURI(decodeURIComponentSafe(href)).replace(/[()]/g, (c) => (c === '(' ? '%28' : '%29'));
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURI(s);
  } catch {
    return s;
  }
}

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

export function renderMarkdown(vm: ChecklistVM, o: ReportOptions): string {
  const link = o.link ?? defaultLink;
  const out: string[] = [];
  out.push(`# TPU readiness report: ${escapeMd(o.project)}`, '');
  out.push(`Generated ${escapeMd(o.generated)} by tpu-ready for ${vm.profile === 'torchtpu' ? 'the TorchTPU preview' : 'PyTorch/XLA (torch_xla)'}.`, '');
  out.push(`- **Readiness score:** ${vm.score}/100`);
  out.push(`- **Checklist:** ${vm.done}/${vm.total} steps done`);
  out.push(`- **Open findings:** ${vm.steps.reduce((a, s) => a + s.open, 0)}`);
  if (vm.progressError) out.push(`- **Progress file:** ${escapeMd(vm.progressError)}`);
  out.push('', '## Steps', '', '| Step | Status | Open findings | Items met |', '| --- | --- | --- | --- |');
  for (const s of vm.steps) out.push(`| ${s.step}. ${escapeMd(s.title)} | ${STATUS_MARK[s.status]} ${STATUS_TEXT[s.status]} | ${s.open} | ${s.items.filter((i) => i.met).length}/${s.items.length} |`);
  for (const s of vm.steps) {
    out.push('', `## Step ${s.step}: ${escapeMd(s.title)} (${STATUS_TEXT[s.status]})`, '');
    for (const i of s.items) out.push(`- ${i.met ? '[x]' : '[ ]'} ${escapeMd(i.text)}${i.kind === 'evidence' ? (i.id === 'run-evidence' ? ' (from a run)' : ' (from the code)') : ''}`);
    if (s.note.trim()) out.push('', `> **Note:** ${escapeMd(s.note.trim())}`);
    if (s.findings.length) {
      out.push('', `Open findings (${s.open}):`, '');
      for (const f of s.findings) {
        out.push(`- [${escapeMd(where(f))}](${safeHref(link(f))}) ${f.severity} [${f.rule}](${safeHref(f.docsUrl)}): ${escapeMd(f.message)}`);
        for (const r of f.related ?? []) out.push(`  - related: ${escapeMd(relatedWhere(r))}: ${escapeMd(r.message)}`);
      }
      if (s.open > s.findings.length) out.push(`- … and ${s.open - s.findings.length} more`);
    }
  }
  out.push('', '## Progress history', '');
  if (!vm.history.length) out.push('No snapshots yet.');
  else {
    out.push('| Date | Score | Steps done | Open findings |', '| --- | --- | --- | --- |');
    for (const h of vm.history) out.push(`| ${escapeMd(h.date)} | ${h.score} | ${h.done}/10 | ${h.open} |`);
  }
  return out.join('\n') + '\n';
}

const CSS = `body{font:14px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1f2328;background:#fff}
table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left}
.done{color:#1a7f37}.in-progress{color:#9a6700}.todo{color:#cf222e}code{background:#f6f8fa;padding:0 .2em}
.error{color:#cf222e}.warning{color:#9a6700}blockquote{border-left:4px solid #d0d7de;margin:0;padding-left:1rem;color:#59636e}
@media (prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}td,th{border-color:#30363d}code{background:#161b22}}`;

/** Message text with `code` spans, escaped. */
function htmlMessage(s: string): string {
  return s
    .split(/(`[^`]*`)/)
    .map((part) => (part.length > 1 && part.startsWith('`') && part.endsWith('`') ? `<code>${escapeHtml(part.slice(1, -1))}</code>` : escapeHtml(part)))
    .join('');
}

export function renderHtml(vm: ChecklistVM, o: ReportOptions): string {
  const link = o.link ?? defaultLink;
  const e = escapeHtml;
  const out: string[] = [];
  out.push('<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">');
  out.push(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`);
  out.push(`<title>TPU readiness report: ${e(o.project)}</title><style>${CSS}</style></head><body>`);
  out.push(`<h1>TPU readiness report: ${e(o.project)}</h1>`);
  out.push(`<p>Generated ${e(o.generated)} by tpu-ready for ${vm.profile === 'torchtpu' ? 'the TorchTPU preview' : 'PyTorch/XLA (torch_xla)'}.</p>`);
  out.push('<ul>', `<li><strong>Readiness score:</strong> ${vm.score}/100</li>`, `<li><strong>Checklist:</strong> ${vm.done}/${vm.total} steps done</li>`);
  out.push(`<li><strong>Open findings:</strong> ${vm.steps.reduce((a, s) => a + s.open, 0)}</li>`);
  if (vm.progressError) out.push(`<li><strong>Progress file:</strong> ${e(vm.progressError)}</li>`);
  out.push('</ul>', '<h2>Steps</h2>', '<table><thead><tr><th>Step</th><th>Status</th><th>Open findings</th><th>Items met</th></tr></thead><tbody>');
  for (const s of vm.steps) {
    out.push(`<tr><td><a href="#step-${s.step}">${s.step}. ${e(s.title)}</a></td><td class="${s.status}">${STATUS_TEXT[s.status]}</td><td>${s.open}</td><td>${s.items.filter((i) => i.met).length}/${s.items.length}</td></tr>`);
  }
  out.push('</tbody></table>');
  for (const s of vm.steps) {
    out.push(`<h2 id="step-${s.step}">Step ${s.step}: ${e(s.title)} <small class="${s.status}">(${STATUS_TEXT[s.status]})</small></h2>`, '<ul>');
    for (const i of s.items) out.push(`<li>${i.met ? '&#9745;' : '&#9744;'} ${e(i.text)}${i.kind === 'evidence' ? (i.id === 'run-evidence' ? ' <em>(from a run)</em>' : ' <em>(from the code)</em>') : ''}</li>`);
    out.push('</ul>');
    if (s.note.trim()) out.push(`<blockquote><strong>Note:</strong> ${e(s.note.trim())}</blockquote>`);
    if (s.findings.length) {
      out.push(`<p>Open findings (${s.open}):</p>`, '<ul>');
      for (const f of s.findings) {
        const related = (f.related ?? []).map((r) => `<li>related: ${e(relatedWhere(r))}: ${htmlMessage(r.message)}</li>`).join('');
        out.push(`<li><a href="${e(safeHref(link(f)))}">${e(where(f))}</a> <span class="${f.severity}">${f.severity}</span> <a href="${e(safeHref(f.docsUrl))}">${e(f.rule)}</a>: ${htmlMessage(f.message)}${related ? `<ul>${related}</ul>` : ''}</li>`);
      }
      if (s.open > s.findings.length) out.push(`<li>… and ${s.open - s.findings.length} more</li>`);
      out.push('</ul>');
    }
  }
  out.push('<h2>Progress history</h2>');
  if (!vm.history.length) out.push('<p>No snapshots yet.</p>');
  else {
    out.push('<table><thead><tr><th>Date</th><th>Score</th><th>Steps done</th><th>Open findings</th></tr></thead><tbody>');
    for (const h of vm.history) out.push(`<tr><td>${e(h.date)}</td><td>${h.score}</td><td>${h.done}/10</td><td>${h.open}</td></tr>`);
    out.push('</tbody></table>');
  }
  out.push('</body></html>');
  return out.join('\n') + '\n';
}
