/**
 * Entry point of the extension (bundled to dist/extension.js). Activation only wires things up: the
 * grammar loads on the first analysis, and the workspace is scanned only on request.
 */
import * as vscode from 'vscode';
import { RULES } from '../rules';
import { registerChecklist } from './checklist';
import { CodeActions } from './codeActions';
import { CommandId } from './commands';
import { registerCost } from './cost';
import { registerRunEvidence } from './evidence';
import { ConfigService } from './config';
import { ConfigDiagnostics } from './configDiagnostics';
import { docsUri } from './convert';
import { Linter, type Analysable } from './diagnostics';
import { addCreateAccel, explainAccelRefusal, fixAllEdit, missingAccelModule, updateAccelModule, watchAccelModules } from './fixes';
import { NOTEBOOK_TYPE } from './notebooks';
import { Results } from './results';
import { Scanner } from './scan';
import { ReadinessStatus } from './statusBar';

export function activate(context: vscode.ExtensionContext): void {
  const wasmDir = vscode.Uri.joinPath(context.extensionUri, 'dist').fsPath;
  const log = vscode.window.createOutputChannel('TPU Readiness', { log: true });
  const config = new ConfigService();
  const results = new Results();
  const linter = new Linter(wasmDir, config, results, log);
  const scanner = new Scanner(wasmDir, linter, config, results, log);
  const status = new ReadinessStatus(results);
  const codeActions = new CodeActions(linter, config);
  // problems in [tool.tpu-ready] as diagnostics on pyproject.toml
  const configProblems = new ConfigDiagnostics(log);
  context.subscriptions.push(log, config, results, linter, scanner, status, configProblems, watchAccelModules());

  context.subscriptions.push(
    vscode.languages.registerCodeActionsProvider(
      [{ language: 'python' }, { notebookType: NOTEBOOK_TYPE }, { scheme: 'file' }, { scheme: 'untitled' }],
      codeActions,
      CodeActions.metadata,
    ),
  );

  /** The file or notebook a command acts on: its argument, else the active notebook or editor. */
  const activeAnalysable = (uri?: vscode.Uri): Analysable | null => {
    if (uri instanceof vscode.Uri) return linter.analysableOf(uri);
    const editor = vscode.window.activeTextEditor;
    const nb = vscode.window.activeNotebookEditor?.notebook;
    if (nb && (!editor || editor.document.uri.scheme === 'vscode-notebook-cell')) return { kind: 'notebook', nb };
    return editor ? linter.analysableOf(editor.document.uri) : null;
  };
  const fileOf = (a: Analysable) => (a.kind === 'file' ? a.doc.uri : a.nb.uri);

  const register = (id: CommandId, fn: (...args: never[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, fn));

  register(CommandId.ScanWorkspace, async () => {
    const summary = await scanner.run();
    void vscode.window.showInformationMessage(
      `TPU readiness ${summary.score}/100: ${summary.findings} finding${summary.findings === 1 ? '' : 's'} in ${summary.files} file${summary.files === 1 ? '' : 's'}` +
        (summary.cancelled ? ' (scan cancelled)' : ''),
    );
    return summary;
  });

  register(CommandId.FixAllInFile, async (uri?: vscode.Uri) => {
    const a = activeAnalysable(uri);
    if (!a) {
      void vscode.window.showWarningMessage('TPU Readiness: open a Python file or a notebook to fix.');
      return { applied: 0 };
    }
    const { options } = await config.optionsFor(fileOf(a));
    const result = options && (await fixAllEdit(a, options, { rule: null, createAccel: true }));
    if (result?.refused) explainAccelRefusal(result.refused);
    if (!result || !result.applied) return { applied: 0 };
    const ok = await vscode.workspace.applyEdit(result.edit, { isRefactoring: false });
    return { applied: ok ? result.applied : 0 };
  });

  register(CommandId.CreateAccelModule, async (uri?: vscode.Uri) => {
    const a = activeAnalysable(uri);
    const file = a ? fileOf(a) : uri instanceof vscode.Uri ? uri : undefined;
    if (!file) {
      void vscode.window.showWarningMessage('TPU Readiness: open the file the module should sit beside.');
      return undefined;
    }
    const { options, settings } = await config.optionsFor(file);
    const name = options?.accelModule ?? settings.accelModule;
    const target = await missingAccelModule(file, name);
    if (!target) return undefined;
    const edit = new vscode.WorkspaceEdit();
    addCreateAccel(edit, target, name);
    if (!(await vscode.workspace.applyEdit(edit))) return undefined;
    await (await vscode.workspace.openTextDocument(target)).save();
    void vscode.window.showInformationMessage(`Created ${vscode.workspace.asRelativePath(target)}: the device-abstraction module the fixes call.`, 'Open').then((pick) => {
      if (pick) void vscode.window.showTextDocument(target);
    });
    return target;
  });

  register(CommandId.UpdateAccelModule, async (uri?: vscode.Uri, reason?: string) => {
    const a = activeAnalysable(uri);
    const file = a ? fileOf(a) : uri instanceof vscode.Uri ? uri : undefined;
    if (!file) {
      void vscode.window.showWarningMessage('TPU Readiness: open a file that uses the device-abstraction module.');
      return false;
    }
    const { options, settings } = await config.optionsFor(file);
    return updateAccelModule(file, options?.accelModule ?? settings.accelModule, typeof reason === 'string' ? reason : undefined);
  });

  register(CommandId.ShowReadiness, async () => {
    // status bar click: the checklist panel (the findings themselves are in the Problems panel)
    await vscode.commands.executeCommand(CommandId.OpenChecklist);
    return results.summary();
  });

  register(CommandId.OpenRuleDocs, async (rule?: string) => {
    let id = typeof rule === 'string' ? rule : undefined;
    if (!id) {
      const pick = await vscode.window.showQuickPick(
        RULES.map((r) => ({ label: r.id, description: r.title.replace(/`/g, ''), detail: r.name })),
        { placeHolder: 'Which rule?', matchOnDescription: true, matchOnDetail: true },
      );
      id = pick?.label;
    }
    if (!id) return undefined;
    const uri = docsUri(id);
    await vscode.env.openExternal(uri);
    return uri.toString();
  });

  const cost = registerCost(context);
  const checklist = registerChecklist(context, { results, linter, scanner, config, cost });
  // profiling runs in .tpu-ready/runs/: runtime diagnostics, and step 9's evidence in the checklist
  const staticRules = (uri: vscode.Uri, line: number) =>
    (results.get(uri)?.findings ?? []).filter((f) => 'startPos' in f && (f as { startPos: { line: number } }).startPos.line === line).map((f) => f.rule);
  const runs = registerRunEvidence(context, log, () => checklist.currentTarget, staticRules);
  context.subscriptions.push(runs.onDidChange((run) => checklist.setRun(run)), results.onDidChange(() => runs.republish()));
  linter.start();
  configProblems.start();
}

export function deactivate(): void {
  // everything is disposed through context.subscriptions
}
