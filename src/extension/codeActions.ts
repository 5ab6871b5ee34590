/**
 * Quick-fixes and fix-all. Providers only map: the findings (with their fixes) were computed at lint
 * time and are looked up from the diagnostics VS Code hands back. Per diagnostic, always in this
 * order: the fix, "Ignore TPUnnn on this line", "Learn about TPUnnn"; then "Fix all TPUnnn in this
 * file" and "Fix all safe TPU issues in this file" (also `source.fixAll.tpuReady` for
 * editor.codeActionsOnSave, and `notebook.source.fixAll.tpuReady` for notebooks). On a notebook cell,
 * `source.fixAll.tpuReady` fixes that cell only ("Fix all safe TPU issues in this cell").
 */
import * as vscode from 'vscode';
import { CommandId } from './commands';
import type { ConfigService } from './config';
import { SOURCE } from './convert';
import { analysableFor, isNotebookCell, uriOf, type FindingRef, type Linter } from './diagnostics';
import { accelRefusalCommand, explainAccelRefusal, fixAllEdit, fixEdit, ignoreEdit } from './fixes';

export const FIX_ALL_KIND = vscode.CodeActionKind.SourceFixAll.append('tpuReady');
export const NOTEBOOK_FIX_ALL_KIND = vscode.CodeActionKind.Notebook.append(FIX_ALL_KIND.value);

export const FIX_ALL_TITLE = 'Fix all safe TPU issues in this file';
export const FIX_CELL_TITLE = 'Fix all safe TPU issues in this cell';

type ActionData =
  | { type: 'fix'; ref: FindingRef }
  | { type: 'ignore'; ref: FindingRef }
  | { type: 'fixAll'; doc: vscode.TextDocument; rule: string | null };

class TpuAction extends vscode.CodeAction {
  constructor(title: string, kind: vscode.CodeActionKind, readonly data: ActionData) {
    super(title, kind);
  }
}

export class CodeActions implements vscode.CodeActionProvider<vscode.CodeAction> {
  static readonly metadata: vscode.CodeActionProviderMetadata = {
    providedCodeActionKinds: [vscode.CodeActionKind.QuickFix, FIX_ALL_KIND, NOTEBOOK_FIX_ALL_KIND],
  };

  constructor(
    private readonly linter: Linter,
    private readonly config: ConfigService,
  ) {}

  async provideCodeActions(
    doc: vscode.TextDocument,
    _range: vscode.Range,
    context: vscode.CodeActionContext,
    token: vscode.CancellationToken,
  ): Promise<vscode.CodeAction[]> {
    const actions: vscode.CodeAction[] = [];
    const only = context.only;
    if (!only || only.contains(vscode.CodeActionKind.QuickFix)) actions.push(...this.quickFixes(doc, context));
    // Source fix-all is computed eagerly, but only when asked for (on save, or the Source Action menu).
    if (only && !token.isCancellationRequested) {
      const cell = isNotebookCell(doc);
      // on a cell: the notebook-wide kind fixes every cell, the plain kind this cell only
      if (cell && only.contains(NOTEBOOK_FIX_ALL_KIND)) {
        const action = await this.sourceFixAll(doc, NOTEBOOK_FIX_ALL_KIND, false);
        if (action) actions.push(action);
      }
      if (only.contains(FIX_ALL_KIND) && !token.isCancellationRequested) {
        const action = await this.sourceFixAll(doc, FIX_ALL_KIND, cell);
        if (action) actions.push(action);
      }
    }
    return actions;
  }

  private quickFixes(doc: vscode.TextDocument, context: vscode.CodeActionContext): vscode.CodeAction[] {
    const actions: vscode.CodeAction[] = [];
    const rules = new Set<string>();
    let unit = null;
    for (const d of context.diagnostics) {
      if (d.source !== SOURCE) continue;
      const ref = this.linter.refOf(doc, d);
      if (!ref || !this.linter.isCurrent(ref.unit)) continue;
      unit = ref.unit;
      const { finding } = ref;
      const fix = finding.fix;
      if (fix && fix.applicability !== 'display') {
        const safe = fix.applicability === 'safe';
        const a = new TpuAction(safe ? fix.title : `${fix.title} (unsafe)`, vscode.CodeActionKind.QuickFix, { type: 'fix', ref });
        a.diagnostics = [d];
        // Marking a fix as preferred lets "auto fix" (Shift+Alt+.) apply it without asking: only safe ones.
        a.isPreferred = safe;
        actions.push(a);
      }
      const ignore = new TpuAction(`Ignore ${finding.rule} on this line`, vscode.CodeActionKind.QuickFix, { type: 'ignore', ref });
      ignore.diagnostics = [d];
      actions.push(ignore);
      const learn = new vscode.CodeAction(`Learn about ${finding.rule}`, vscode.CodeActionKind.QuickFix);
      learn.command = { command: CommandId.OpenRuleDocs, title: learn.title, arguments: [finding.rule] };
      learn.diagnostics = [d];
      actions.push(learn);
      rules.add(finding.rule);
    }
    if (!unit) return actions;
    const fixable = unit.findings.filter((f) => f.fix && f.fix.applicability !== 'display');
    for (const rule of rules) {
      const own = fixable.filter((f) => f.rule === rule);
      if (own.length < 2) continue;
      const unsafe = own.some((f) => f.fix!.applicability !== 'safe');
      actions.push(new TpuAction(`Fix all ${rule} in this file${unsafe ? ' (unsafe)' : ''}`, vscode.CodeActionKind.QuickFix, { type: 'fixAll', doc, rule }));
    }
    if (fixable.filter((f) => f.fix!.applicability === 'safe').length >= 2) {
      actions.push(new TpuAction(FIX_ALL_TITLE, vscode.CodeActionKind.QuickFix, { type: 'fixAll', doc, rule: null }));
    }
    return actions;
  }

  private async sourceFixAll(doc: vscode.TextDocument, kind: vscode.CodeActionKind, perCell: boolean): Promise<vscode.CodeAction | null> {
    const a = analysableFor(doc);
    if (!a) return null;
    let cell: number | undefined;
    if (perCell) {
      if (a.kind !== 'notebook') return null;
      cell = a.nb.getCells().findIndex((c) => c.document.uri.toString() === doc.uri.toString());
      if (cell < 0) return null;
    }
    // resolved options when available: on save the answer then comes in one turn, with nothing interleaved
    const { options } = this.config.resolvedOptionsFor(uriOf(a)) ?? (await this.config.optionsFor(uriOf(a)));
    if (!options) return null;
    // One resource only: on save VS Code skips actions whose edit touches other files, so the module is
    // created by a command that runs after the edit.
    const result = await fixAllEdit(a, options, { rule: null, createAccel: false, cell });
    // the existing accel module cannot serve these fixes: write nothing, say why (once), offer the update
    if (result?.refused) explainAccelRefusal(result.refused, true);
    if (!result || !result.applied) return null;
    const action = new vscode.CodeAction(cell === undefined ? FIX_ALL_TITLE : FIX_CELL_TITLE, kind);
    action.edit = result.edit;
    if (result.accelToCreate) {
      action.command = { command: CommandId.CreateAccelModule, title: 'Create the device-abstraction module', arguments: [uriOf(a)] };
    }
    return action;
  }

  async resolveCodeAction(action: vscode.CodeAction): Promise<vscode.CodeAction> {
    if (!(action instanceof TpuAction)) return action;
    const data = action.data;
    switch (data.type) {
      case 'fix': {
        if (!this.linter.isCurrent(data.ref.unit)) return action;
        const result = await fixEdit(data.ref);
        if (result?.refused) action.command = accelRefusalCommand(result.refused);
        else if (result) action.edit = result.edit;
        return action;
      }
      case 'ignore':
        if (this.linter.isCurrent(data.ref.unit)) action.edit = ignoreEdit(data.ref);
        return action;
      case 'fixAll': {
        const a = analysableFor(data.doc);
        if (!a) return action;
        const { options } = await this.config.optionsFor(uriOf(a));
        if (!options) return action;
        const result = await fixAllEdit(a, options, { rule: data.rule, createAccel: true });
        if (result?.refused) action.command = accelRefusalCommand(result.refused);
        else if (result) action.edit = result.edit;
        return action;
      }
    }
  }
}
