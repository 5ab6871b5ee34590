/**
 * Priced findings in the hover: a hot-loop finding (host syncs, recompilation causes, missing step
 * barrier, disabled autocast, …) shows its estimated time and cost on the workspace's configured
 * training run, labelled as an estimate with the assumptions it rests on (src/cost/findings.ts).
 */
import * as vscode from 'vscode';
import { FINDING_ASSUMPTIONS, priceFindings, type PriceableFinding } from '../cost';
import type { CostService } from './cost';
import { SOURCE } from './convert';

function ruleOf(d: vscode.Diagnostic): string | null {
  const code = typeof d.code === 'object' ? d.code.value : d.code;
  return typeof code === 'string' ? code : null;
}

export class PricedFindingHover implements vscode.HoverProvider {
  constructor(private readonly cost: CostService) {}

  async provideHover(doc: vscode.TextDocument, pos: vscode.Position): Promise<vscode.Hover | undefined> {
    const here = vscode.languages
      .getDiagnostics(doc.uri)
      .filter((d) => d.source === SOURCE && d.range.contains(pos) && FINDING_ASSUMPTIONS[ruleOf(d) ?? '']);
    if (!here.length) return undefined;
    const ws = await this.cost.workspaceEstimate(doc.uri);
    const md = new vscode.MarkdownString(undefined, true);
    if (!ws) {
      md.appendMarkdown('**Estimated cost impact:** no training config found in this workspace folder. ');
      md.appendMarkdown('Add one (YAML, JSON, TOML or nanoGPT-style Python) to price this finding on your run.');
      return new vscode.Hover(md);
    }
    const findings: PriceableFinding[] = here.map((d) => ({
      rule: ruleOf(d)!,
      severity: d.severity === vscode.DiagnosticSeverity.Error ? 'error' : d.severity === vscode.DiagnosticSeverity.Warning ? 'warning' : 'info',
      message: d.message,
      line: d.range.start.line + 1,
      path: vscode.workspace.asRelativePath(doc.uri, false),
    }));
    const priced = priceFindings(findings, ws.report, ws.estimate);
    if (!priced.length) return undefined;
    for (const p of priced) {
      md.appendMarkdown(`**${p.rule}, estimated impact** on \`${ws.config}\`: ${escape(p.summary)}\n\n`);
      md.appendMarkdown('Assumptions (edit under `[findings.' + p.rule + ']` in `.tpu-ready/cost.toml`):\n');
      for (const a of p.assumptions) md.appendMarkdown(`- \`${a.key}\` = ${a.value} ${escape(a.unit)}: ${escape(a.meaning)}\n`);
      md.appendMarkdown('\n');
    }
    md.appendMarkdown('_An estimate, not a measurement: profile on a TPU to confirm._');
    return new vscode.Hover(md);
  }
}

/** Escapes what Markdown would interpret in text that comes from the workspace (paths, names). */
function escape(s: string): string {
  return s.replace(/[\\`*_[\]<>|]/g, (c) => `\\${c}`);
}
