/**
 * The sidebar's two tree views: "Checklist" (the ten steps with status icons and n/10 progress; the
 * children of a step are its open findings, a click reveals the code) and "Findings" (by file, then
 * rule). Both refresh only on the checklist service's change event.
 */
import * as vscode from 'vscode';
import { STEPS, type ChecklistFinding } from '../checklist';
import type { StepStatus } from '../protocol/checklist';
import type { StepState } from '../checklist';
import { stepStates } from '../checklist';
import type { Step } from '../core/types';
import type { ChecklistService } from './checklistService';

export const REVEAL_COMMAND = 'tpuReady.revealFinding';

const STATUS_ICON: Record<StepStatus, vscode.ThemeIcon> = {
  done: new vscode.ThemeIcon('pass-filled', new vscode.ThemeColor('testing.iconPassed')),
  'in-progress': new vscode.ThemeIcon('circle-large-outline', new vscode.ThemeColor('problemsWarningIcon.foreground')),
  todo: new vscode.ThemeIcon('circle-large-outline'),
};
const STATUS_TEXT: Record<StepStatus, string> = { done: 'done', 'in-progress': 'in progress', todo: 'to do' };
const SEVERITY_ICON: Record<string, vscode.ThemeIcon> = {
  error: new vscode.ThemeIcon('error', new vscode.ThemeColor('problemsErrorIcon.foreground')),
  warning: new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground')),
  info: new vscode.ThemeIcon('info', new vscode.ThemeColor('problemsInfoIcon.foreground')),
  hint: new vscode.ThemeIcon('lightbulb'),
};

export type ChecklistNode = { kind: 'step'; state: StepState } | { kind: 'finding'; finding: ChecklistFinding };

function findingItem(f: ChecklistFinding, label: string, description: string): vscode.TreeItem {
  const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
  item.description = description;
  item.tooltip = new vscode.MarkdownString().appendText(`${f.rule} (${f.severity}): ${f.message}\n${f.path}${f.cell === null ? '' : ` cell ${f.cell}`}:${f.line}:${f.column}`);
  item.iconPath = SEVERITY_ICON[f.severity];
  item.contextValue = f.fix?.applicability === 'safe' ? 'finding.fixable' : 'finding';
  item.command = { command: REVEAL_COMMAND, title: 'Go to the code', arguments: [f.uri, f.line - 1, f.column - 1, f.cell] };
  return item;
}

function where(f: ChecklistFinding): string {
  return f.cell === null ? `${f.path}:${f.line}` : `${f.path} cell ${f.cell}:${f.line}`;
}

export class ChecklistTreeProvider implements vscode.TreeDataProvider<ChecklistNode> {
  private readonly changed = new vscode.EventEmitter<ChecklistNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private states: StepState[] = [];

  constructor(private readonly service: ChecklistService) {}

  refresh(): void {
    this.states = stepStates(this.service.input());
    this.changed.fire(undefined);
  }

  /** "n/10" for the view's description. */
  progressText(): string {
    if (!this.states.length) this.states = stepStates(this.service.input());
    return `${this.states.filter((s) => s.status === 'done').length}/${STEPS.length}`;
  }

  getTreeItem(node: ChecklistNode): vscode.TreeItem {
    if (node.kind === 'finding') return findingItem(node.finding, node.finding.message, where(node.finding));
    const s = node.state;
    const def = STEPS[s.step - 1];
    const item = new vscode.TreeItem(`${s.step}. ${def.title}`, s.open.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = `step-${s.step}`;
    item.description = `${STATUS_TEXT[s.status]}${s.open.length ? ` · ${s.open.length} open` : ''}`;
    item.iconPath = STATUS_ICON[s.status];
    item.contextValue = s.status === 'done' ? 'step.done' : s.open.some((f) => f.fix?.applicability === 'safe') ? 'step.todo.fixable' : 'step.todo';
    const tip = new vscode.MarkdownString();
    tip.appendMarkdown(`**Step ${s.step}: ${def.title}** (${STATUS_TEXT[s.status]})\n\n`);
    tip.appendText(def.explanation[this.service.currentTarget.profile]);
    tip.appendMarkdown('\n\n');
    for (const i of s.items) tip.appendText(`${i.met ? '☑' : '☐'} ${i.text}\n`);
    item.tooltip = tip;
    item.command = { command: 'tpuReady.openChecklist', title: 'Open the checklist', arguments: [s.step] };
    return item;
  }

  getChildren(node?: ChecklistNode): ChecklistNode[] {
    if (!node) {
      if (!this.service.hasPython) return [];
      if (!this.states.length) this.states = stepStates(this.service.input());
      return this.states.map((state) => ({ kind: 'step', state }));
    }
    return node.kind === 'step' ? node.state.open.map((finding) => ({ kind: 'finding', finding })) : [];
  }

  getParent(node: ChecklistNode): ChecklistNode | undefined {
    if (node.kind === 'step') return undefined;
    const state = this.states[(node.finding.step as Step) - 1];
    return state && { kind: 'step', state };
  }
}

export type FindingsNode = { kind: 'file'; path: string; findings: ChecklistFinding[] } | { kind: 'rule'; path: string; rule: string; findings: ChecklistFinding[] } | { kind: 'finding'; finding: ChecklistFinding };

export class FindingsTreeProvider implements vscode.TreeDataProvider<FindingsNode> {
  private readonly changed = new vscode.EventEmitter<FindingsNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly service: ChecklistService) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(node: FindingsNode): vscode.TreeItem {
    if (node.kind === 'finding') return findingItem(node.finding, `${node.finding.line}:${node.finding.column}${node.finding.cell === null ? '' : ` (cell ${node.finding.cell})`}`, node.finding.message);
    if (node.kind === 'file') {
      const item = new vscode.TreeItem(node.path, vscode.TreeItemCollapsibleState.Collapsed);
      item.id = `file:${node.path}`;
      item.resourceUri = vscode.Uri.parse(node.findings[0].uri);
      item.description = `${node.findings.length}`;
      return item;
    }
    const item = new vscode.TreeItem(node.rule, vscode.TreeItemCollapsibleState.Collapsed);
    item.id = `rule:${node.path}:${node.rule}`;
    item.description = `${node.findings.length} · step ${node.findings[0].step}`;
    item.tooltip = node.findings[0].message;
    return item;
  }

  getChildren(node?: FindingsNode): FindingsNode[] {
    if (!node) {
      if (!this.service.hasPython) return [];
      const byFile = new Map<string, ChecklistFinding[]>();
      for (const f of this.service.allFindings()) byFile.set(f.path, [...(byFile.get(f.path) ?? []), f]);
      return [...byFile.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([path, findings]) => ({ kind: 'file', path, findings }));
    }
    if (node.kind === 'file') {
      const byRule = new Map<string, ChecklistFinding[]>();
      for (const f of node.findings) byRule.set(f.rule, [...(byRule.get(f.rule) ?? []), f]);
      return [...byRule.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([rule, findings]) => ({ kind: 'rule', path: node.path, rule, findings }));
    }
    if (node.kind === 'rule') return [...node.findings].sort((a, b) => (a.cell ?? -1) - (b.cell ?? -1) || a.line - b.line || a.column - b.column).map((finding) => ({ kind: 'finding', finding }));
    return [];
  }
}
