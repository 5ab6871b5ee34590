import type * as Sarif from 'sarif';
import { docsUrl, type Rule } from '../../core/rule';
import type { Formatter } from './types';
import type { Severity } from '../../core/types';
import { VERSION } from '../version';

const level = (s: Severity): Sarif.ReportingConfiguration.level => (s === 'error' ? 'error' : s === 'warning' ? 'warning' : 'note');

/**
 * A relative path as a URI reference (SARIF 3.10.3: `uri` is a URI): each segment percent-encoded, so a file name
 * with a space, `#`, `%`, a tab or a newline maps back to its file instead of breaking the location.
 */
export function toUri(p: string): string {
  return p.split(/[\\/]/).map((seg) => encodeURIComponent(seg)).join('/');
}

/** SARIF 2.1.0 for GitHub code scanning; `tool.driver.rules` is generated from the registry. */
export function sarifLog(report: Parameters<Formatter['format']>[0], rules: readonly Rule[]): Sarif.Log {
  const index = new Map(rules.map((r, i) => [r.id, i]));
  const results: Sarif.Result[] = report.findings.map((f) => ({
    ruleId: f.rule,
    ruleIndex: index.get(f.rule),
    level: level(f.severity),
    message: { text: f.message },
    locations: [
      {
        physicalLocation: {
          artifactLocation: { uri: toUri(f.path), uriBaseId: '%SRCROOT%' },
          region: f.cell !== null ? { startLine: 1 } : { startLine: f.line, startColumn: f.column, endLine: f.endLine, endColumn: f.endColumn },
        },
        ...(f.cell !== null ? { message: { text: `cell ${f.cell}, line ${f.line}, column ${f.column}` } } : {}),
      },
    ],
    ...(f.related?.length
      ? {
          relatedLocations: f.related.map((r, id) => ({
            id,
            physicalLocation: {
              artifactLocation: { uri: r.path.split('\\').join('/'), uriBaseId: '%SRCROOT%' },
              // an empty span (a run's frame: a line, no column) is the whole line
              region: r.cell !== null ? { startLine: 1 } : r.endLine === r.line && r.endColumn === r.column ? { startLine: r.line } : { startLine: r.line, startColumn: r.column, endLine: r.endLine, endColumn: r.endColumn },
            },
            message: { text: r.cell !== null ? `${r.message} (cell ${r.cell}, line ${r.line})` : r.message },
          })),
        }
      : {}),
    properties: { step: f.step, effort: f.effort, ...(f.cell !== null ? { cell: f.cell, cellLine: f.line, cellColumn: f.column } : {}), fix: f.fix?.applicability ?? 'none', ...(f.source ? { source: f.source } : {}), ...(f.evidence ? { evidence: f.evidence } : {}) },
  }));
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'tpu-ready',
            version: VERSION,
            informationUri: 'https://github.com/tpu-ready/tpu-ready',
            rules: rules.map((r) => ({
              id: r.id,
              name: r.name,
              shortDescription: { text: r.title.replace(/`/g, '') },
              fullDescription: { text: r.docs.what },
              helpUri: docsUrl(r.id),
              help: { text: `${r.docs.why}\n\nUse instead:\n${r.docs.useInstead}`, markdown: `${r.docs.why}\n\n**Use instead:**\n\n\`\`\`python\n${r.docs.useInstead}\n\`\`\`` },
              defaultConfiguration: { level: level(r.severity) },
              properties: { step: r.step, effort: r.effort, fix: r.fix.availability === 'none' ? 'none' : r.fix.applicability ?? 'unsafe', tags: ['tpu', 'pytorch-xla'] },
            })),
          },
        },
        columnKind: 'unicodeCodePoints',
        originalUriBaseIds: { '%SRCROOT%': { uri: './' } },
        results,
      },
    ],
  };
}

export const sarifFormatter: Formatter = {
  format(report, rules) {
    return JSON.stringify(sarifLog(report, rules), null, 2) + '\n';
  },
};
