/**
 * Entry point of the extension (bundled to dist/extension.js). Activation only wires things up: the language
 * server (dist/server.js, its own process) does every analysis; the workspace is scanned only on request.
 */
import * as vscode from 'vscode';
import { RULES } from '../rules';
import { registerChecklist } from './checklist';
import { Analysis } from './client';
import { CommandId } from './commands';
import { registerCost } from './cost';
import { registerRunEvidence } from './evidence';
import { ConfigService } from './config';
import { ConfigDiagnostics } from './configDiagnostics';
import { docsUri } from './convert';
import { addCreateAccel, explainAccelRefusal, missingAccelModule, updateAccelModule, watchAccelModules } from './fixes';
import { NOTEBOOK_TYPE } from './notebooks';
import { registerNotebookFixOnSave } from './notebookSave';
import { Results } from './results';
import { ReadinessStatus } from './statusBar';

/** A file or notebook uri from a command argument (a Uri, or a uri string from the language server). */
function uriArg(arg: unknown): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri) return arg;
  if (typeof arg === 'string' && /^[a-z][\w+.-]*:/i.test(arg)) return vscode.Uri.parse(arg);
  return undefined;
}

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('TPU Readiness', { log: true });
  const config = new ConfigService();
  const results = new Results();
  const analysis = new Analysis(context, results, log);
  const status = new ReadinessStatus(results);
  // problems in [tool.tpu-ready] as diagnostics on pyproject.toml
  const configProblems = new ConfigDiagnostics(log);
  context.subscriptions.push(log, config, results, analysis, status, configProblems, watchAccelModules());
  // notebook.codeActionsOnSave's fix-all, also when VS Code's own participant drops our answer (notebookSave.ts)
  context.subscriptions.push(registerNotebookFixOnSave(analysis, log));

  /** The file or notebook a command acts on: its argument, else the active notebook or editor. */
  const activeTarget = (arg?: unknown): vscode.Uri | undefined => {
    const uri = uriArg(arg);
    if (uri) return uri;
    const editor = vscode.window.activeTextEditor;
    const nb = vscode.window.activeNotebookEditor?.notebook;
    if (nb && nb.notebookType === NOTEBOOK_TYPE && (!editor || editor.document.uri.scheme === 'vscode-notebook-cell')) return nb.uri;
    return editor?.document.uri;
  };

  const register = (id: CommandId, fn: (...args: never[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, fn));

  register(CommandId.ScanWorkspace, async () => {
    const summary = await analysis.scan();
    void vscode.window.showInformationMessage(
      `TPU readiness ${summary.score}/100: ${summary.findings} finding${summary.findings === 1 ? '' : 's'} in ${summary.files} file${summary.files === 1 ? '' : 's'}` +
        (summary.cancelled ? ' (scan cancelled)' : ''),
    );
    return summary;
  });

  register(CommandId.FixAllInFile, async (arg?: unknown) => {
    const file = activeTarget(arg);
    if (!file || file.scheme === 'vscode-notebook-cell') {
      void vscode.window.showWarningMessage('TPU Readiness: open a Python file or a notebook to fix.');
      return { applied: 0 };
    }
    const result = await analysis.fixEdit(file, { rule: null, createAccel: true });
    if (result.refused) explainAccelRefusal(file, result.refused);
    if (!result.edit || !result.applied) return { applied: 0 };
    const ok = await vscode.workspace.applyEdit(result.edit, { isRefactoring: false });
    return { applied: ok ? result.applied : 0 };
  });

  register(CommandId.CreateAccelModule, async (arg?: unknown) => {
    const file = activeTarget(arg);
    if (!file || file.scheme === 'vscode-notebook-cell') {
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

  // also the command of a fix the server refused (args: the file's uri string, why, and whether to say it once only)
  register(CommandId.UpdateAccelModule, async (arg?: unknown, reason?: string, quiet?: boolean) => {
    const file = activeTarget(arg);
    if (!file || file.scheme === 'vscode-notebook-cell') {
      void vscode.window.showWarningMessage('TPU Readiness: open a file that uses the device-abstraction module.');
      return false;
    }
    if (typeof reason === 'string' && quiet === true && !firstTime(file, reason)) return false;
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
  const checklist = registerChecklist(context, { results, analysis, config, cost });
  // profiling runs in .tpu-ready/runs/: runtime diagnostics, and step 9's evidence in the checklist
  const staticRules = (uri: vscode.Uri, line: number) => analysis.findingsAt(uri, line).map((f) => f.rule);
  const runs = registerRunEvidence(context, log, () => checklist.currentTarget, staticRules);
  analysis.useConfirmations((uri) => runs.confirmationsOf(uri), runs.onDidChangeConfirmations);
  // the newest run's measured step time is the cost views' throughput on the TPU it ran on
  context.subscriptions.push(cost.useMeasuredStep(() => runs.measuredStep, runs.onDidChangeMeasuredStep));
  context.subscriptions.push(runs.onDidChange((run) => checklist.setRun(run)), results.onDidChange(() => runs.republish()));
  void analysis.start().catch((e) => log.error(`the TPU Readiness language server did not start: ${(e as Error)?.message ?? e}`));
  configProblems.start();
}

/** Fix-all on save explains a refusal once per module and reason, not on every save. */
const explained = new Set<string>();
function firstTime(file: vscode.Uri, reason: string): boolean {
  const key = `${vscode.workspace.getWorkspaceFolder(file)?.uri.toString() ?? ''}\n${reason}`;
  if (explained.has(key)) return false;
  explained.add(key);
  return true;
}

export function deactivate(): void {
  // everything is disposed through context.subscriptions (the language client stops with them)
}
