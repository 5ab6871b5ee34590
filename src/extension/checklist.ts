/**
 * The migration checklist in the editor: registers the sidebar trees, the integration panel (and its
 * serializer), and the checklist commands (open, reveal a finding, export the report, fix a step's safe
 * issues, the generators). activate.ts calls `registerChecklist` once.
 */
import * as vscode from 'vscode';
import {
  ciWorkflow, findModel, insertCompileCache, renderHtml, renderMarkdown, resumeScaffold, setNote, setTick, smokeTest, isStep, type GeneratedFile,
} from '../checklist';
import type { Step } from '../core/types';
import type { FindingVM } from '../protocol/checklist';
import type { CostVM } from '../protocol/cost';
import type { StepActionId, ToHostMessage } from '../protocol/messages';
import { ChecklistService } from './checklistService';
import { ChecklistTreeProvider, FindingsTreeProvider, type ChecklistNode } from './checklistTree';
import { writeProfilingRun } from './evidence';
import { CommandId } from './commands';
import type { ConfigService } from './config';
import type { CostService } from './cost';
import type { Analysis } from './client';
import { addCreateAccel } from './fixes';
import { ChecklistPanel, PANEL_VIEW_TYPE } from './panel';
import type { Results } from './results';
import { writeRefusal } from './files';

export interface ChecklistDeps {
  results: Results;
  /** The language server's client: scans and fix edits. */
  analysis: Analysis;
  config: ConfigService;
  /** The cost module: prices the open hot-loop findings for the panel. */
  cost?: CostService;
}

const HAS_PYTHON = 'tpuReady.hasPython';

/** A step number from a command argument: a number, or a tree node of the Checklist view. */
function stepArg(arg: unknown): Step | undefined {
  if (isStep(arg)) return arg;
  const node = arg as ChecklistNode | undefined;
  if (node?.kind === 'step') return node.state.step;
  if (node?.kind === 'finding') return node.finding.step;
  return undefined;
}

export function registerChecklist(context: vscode.ExtensionContext, deps: ChecklistDeps): ChecklistService {
  const service = new ChecklistService(deps.results, deps.config);
  const tree = new ChecklistTreeProvider(service);
  const findingsTree = new FindingsTreeProvider(service);
  const checklistView = vscode.window.createTreeView('tpuReady.checklist', { treeDataProvider: tree, showCollapseAll: true });
  const findingsView = vscode.window.createTreeView('tpuReady.findings', { treeDataProvider: findingsTree, showCollapseAll: true });
  context.subscriptions.push(service, checklistView, findingsView);

  const refreshViews = () => {
    tree.refresh();
    findingsTree.refresh();
    checklistView.description = tree.progressText();
    const open = service.findings().length;
    checklistView.badge = open ? { value: open, tooltip: `${open} open TPU readiness finding${open === 1 ? '' : 's'}` } : undefined;
    void vscode.commands.executeCommand('setContext', HAS_PYTHON, service.hasPython);
  };
  context.subscriptions.push(service.onDidChange(refreshViews));

  // the panel's "Priced findings": the open findings priced on the workspace's training config
  const cost = deps.cost;
  if (cost) {
    ChecklistPanel.pricer = () => (service.root ? cost.pricedFindings(service.root, service.findingsWithEvidence()) : Promise.resolve(null));
    context.subscriptions.push(cost.onDidInvalidate(() => ChecklistPanel.current?.postState()), { dispose: () => (ChecklistPanel.pricer = null) });
  }

  let scanning: Thenable<unknown> | null = null;
  /** The checklist is about the workspace: scan it once when the checklist is first shown. */
  const ensureScanned = async () => {
    await service.ready();
    if (!scanning && service.hasPython) {
      scanning = deps.analysis.scan().then(async () => {
        service.markScanned();
        await service.recordSnapshot();
      });
    }
    await scanning;
  };
  const rescan = async () => {
    await service.ready();
    await deps.analysis.scan();
    service.markScanned();
    await service.recordSnapshot();
  };
  context.subscriptions.push(
    checklistView.onDidChangeVisibility((e) => e.visible && void ensureScanned()),
    findingsView.onDidChangeVisibility((e) => e.visible && void ensureScanned()),
  );
  if (checklistView.visible) void ensureScanned();
  else void service.ready();

  const register = (id: CommandId, fn: (...args: never[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, fn));

  const handle = async (msg: Exclude<ToHostMessage, { type: 'ready' }>): Promise<void> => {
    switch (msg.type) {
      case 'tick':
        if (isStep(msg.body.step)) await service.update((p) => setTick(p, msg.body.step as Step, msg.body.item, msg.body.checked));
        return;
      case 'note':
        if (isStep(msg.body.step)) await service.update((p) => setNote(p, msg.body.step as Step, msg.body.text));
        return;
      case 'openFinding':
        await reveal(msg.body.uri, msg.body.line, msg.body.character, msg.body.cell);
        return;
      case 'action':
        await runAction(msg.body.step, msg.body.action);
        return;
      case 'exportReport':
        await exportReport(msg.body.format);
        return;
      case 'rescan':
        await rescan();
        return;
      case 'estimateCost':
        // the cost module answers through tpuReady.showCostPanel
        await vscode.commands.executeCommand('tpuReady.estimateCost');
        return;
    }
  };

  const openPanel = async (step?: unknown) => {
    const panel = ChecklistPanel.createOrShow(context.extensionUri, service, handle);
    await ensureScanned();
    panel.postState();
    void step;
    return panel;
  };

  context.subscriptions.push(
    vscode.window.registerWebviewPanelSerializer(PANEL_VIEW_TYPE, {
      async deserializeWebviewPanel(panel: vscode.WebviewPanel) {
        ChecklistPanel.revive(panel, context.extensionUri, service, handle);
        await ensureScanned();
        ChecklistPanel.current?.postState();
      },
    }),
    { dispose: () => ChecklistPanel.current?.dispose() },
  );

  async function reveal(uriText: string, line: number, character: number, cell: number | null): Promise<void> {
    let uri: vscode.Uri;
    try {
      uri = vscode.Uri.parse(uriText, true);
    } catch {
      return;
    }
    // only files this extension reported on
    if (!deps.results.get(uri)) return;
    const pos = new vscode.Position(line, character);
    if (cell !== null && uri.path.endsWith('.ipynb')) {
      const nb = await vscode.workspace.openNotebookDocument(uri);
      if (cell >= nb.cellCount) return;
      await vscode.window.showNotebookDocument(nb, { selections: [new vscode.NotebookRange(cell, cell + 1)] });
      await vscode.window.showTextDocument(nb.cellAt(cell).document, { selection: new vscode.Range(pos, pos), viewColumn: vscode.ViewColumn.Active });
      return;
    }
    await vscode.window.showTextDocument(uri, { selection: new vscode.Range(pos, pos), preview: true, viewColumn: vscode.ViewColumn.One });
  }

  async function writeGenerated(file: GeneratedFile, what: string): Promise<vscode.Uri | undefined> {
    const root = service.root;
    if (!root) {
      void vscode.window.showWarningMessage('TPU Readiness: open a folder first.');
      return undefined;
    }
    const uri = vscode.Uri.joinPath(root, ...file.path.split('/'));
    try {
      await vscode.workspace.fs.stat(uri);
      const pick = await vscode.window.showWarningMessage(`${file.path} already exists.`, 'Open It', 'Overwrite');
      if (pick === 'Open It') await vscode.window.showTextDocument(uri);
      if (pick !== 'Overwrite') return undefined;
    } catch {
      /* does not exist yet */
    }
    const refusal = writeRefusal(uri, root);
    if (refusal) {
      void vscode.window.showErrorMessage(`TPU Readiness: ${refusal}`);
      return undefined;
    }
    await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(uri, '..'));
    await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(file.text));
    service.noteWritten(uri); // evidence now: file watcher events can lag or be missed
    await vscode.window.showTextDocument(uri, { preview: false });
    ChecklistPanel.current?.post('notice', { level: 'info', text: `Created ${file.path}: ${what}.` });
    return uri;
  }

  async function projectFiles() {
    await service.ready();
    const uris = await vscode.workspace.findFiles('**/*.py', '**/{.git,node_modules,__pycache__,.venv,venv,site-packages}/**', 2000);
    const files = await Promise.all(uris.map(async (u) => ({ path: vscode.workspace.asRelativePath(u, false), text: new TextDecoder().decode(await vscode.workspace.fs.readFile(u)) })));
    return files;
  }

  async function enableCompileCache(): Promise<vscode.Uri | undefined> {
    await service.ready();
    const target = service.currentTarget;
    if (target.profile !== 'torch_xla') {
      void vscode.window.showInformationMessage('TPU Readiness: the TorchTPU preview has no documented persistent compilation cache API.');
      return undefined;
    }
    // the training scripts TPU804 reported, else the active Python file
    const candidates = [...new Set(service.findings().filter((f) => f.rule === 'TPU804' && f.cell === null).map((f) => f.uri))].map((u) => vscode.Uri.parse(u));
    let uri: vscode.Uri | undefined;
    if (candidates.length === 1) uri = candidates[0];
    else if (candidates.length > 1) {
      const pick = await vscode.window.showQuickPick(candidates.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })), { placeHolder: 'Which training script starts the run?' });
      uri = pick?.uri;
    } else {
      const editor = vscode.window.activeTextEditor;
      if (editor?.document.languageId === 'python') uri = editor.document.uri;
    }
    if (!uri) {
      void vscode.window.showInformationMessage('TPU Readiness: open the training script that starts the run, then run "Enable Persistent Compile Cache" again.');
      return undefined;
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    const next = insertCompileCache(doc.getText(), target);
    if (next === null) {
      void vscode.window.showInformationMessage(`${vscode.workspace.asRelativePath(uri)} already initialises a compilation cache.`);
      return uri;
    }
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), next);
    if (await vscode.workspace.applyEdit(edit)) {
      await doc.save();
      await vscode.window.showTextDocument(doc);
    }
    return uri;
  }

  /** Applies every safe fix of one step's findings across the workspace, in one edit. */
  async function fixStep(step: Step): Promise<number> {
    const files = [...new Set(service.openFindingsOf(step).filter((f) => f.fix?.applicability === 'safe').map((f) => f.uri))];
    const edit = new vscode.WorkspaceEdit();
    let applied = 0;
    const refusals: string[] = [];
    for (const u of files) {
      const uri = vscode.Uri.parse(u);
      if (uri.path.endsWith('.ipynb')) await vscode.workspace.openNotebookDocument(uri);
      else await vscode.workspace.openTextDocument(uri);
      // the server computes the step's safe fixes on the document's current text
      const result = await deps.analysis.fixEdit(uri, { rule: null, step, createAccel: false });
      // an existing accel module that cannot serve the fixes: this file stays unfixed, and the panel says why
      if (result.refused) {
        refusals.push(`${vscode.workspace.asRelativePath(uri)}: ${result.refused.message}`);
        continue;
      }
      if (!result.edit || !result.applied) continue;
      for (const [u, edits] of result.edit.entries()) for (const e of edits) edit.replace(u, e.range, e.newText);
      applied += result.applied;
      const accel = result.accelToCreate;
      if (accel && !edit.has(accel)) {
        const { options, settings } = await deps.config.optionsFor(uri);
        addCreateAccel(edit, accel, options?.accelModule ?? settings.accelModule);
      }
    }
    for (const r of refusals) ChecklistPanel.current?.post('notice', { level: 'error', text: r });
    if (!applied) {
      if (!refusals.length) ChecklistPanel.current?.post('notice', { level: 'info', text: `Step ${step} has no safe fixes left.` });
      return 0;
    }
    if (!(await vscode.workspace.applyEdit(edit))) return 0;
    // fixes are applied to open documents: save them so the workspace (and git) see the change
    await Promise.all(vscode.workspace.textDocuments.filter((d) => d.isDirty && edit.has(d.uri)).map((d) => d.save()));
    await Promise.all(vscode.workspace.notebookDocuments.filter((n) => n.isDirty && edit.entries().some(([u]) => n.getCells().some((c) => c.document.uri.toString() === u.toString()))).map((n) => n.save()));
    ChecklistPanel.current?.post('notice', { level: 'info', text: `Applied ${applied} safe fix${applied === 1 ? '' : 'es'} for step ${step} in ${files.length} file${files.length === 1 ? '' : 's'}.` });
    return applied;
  }

  async function runAction(step: number, action: StepActionId): Promise<unknown> {
    switch (action) {
      case 'fixSafe':
        return isStep(step) ? fixStep(step) : 0;
      case 'smokeTest':
        return vscode.commands.executeCommand(CommandId.CreateSmokeTest);
      case 'resumeScaffold':
        return vscode.commands.executeCommand(CommandId.CreateResumeScaffold);
      case 'ciWorkflow':
        return vscode.commands.executeCommand(CommandId.CreateCiWorkflow);
      case 'compileCache':
        return vscode.commands.executeCommand(CommandId.EnableCompileCache);
    }
  }

  async function exportReport(format?: 'md' | 'html', target?: vscode.Uri): Promise<vscode.Uri | undefined> {
    await service.ready();
    const root = service.root;
    const fmt = format ?? (await vscode.window.showQuickPick([{ label: 'Markdown', f: 'md' as const }, { label: 'HTML', f: 'html' as const }], { placeHolder: 'Report format' }))?.f;
    if (!fmt) return undefined;
    const uri =
      target ??
      (await vscode.window.showSaveDialog({
        defaultUri: root && vscode.Uri.joinPath(root, `tpu-readiness-report.${fmt}`),
        filters: fmt === 'md' ? { Markdown: ['md'] } : { HTML: ['html'] },
        title: 'Export TPU readiness report',
      }));
    if (!uri) return undefined;
    const dir = vscode.Uri.joinPath(uri, '..');
    const link = (f: FindingVM) => {
      const file = vscode.Uri.parse(f.uri);
      const rel = file.scheme === uri.scheme ? relativePath(dir.path, file.path) : f.uri;
      return f.cell === null ? `${rel}#L${f.line + 1}` : rel;
    };
    const options = { project: root ? root.path.split('/').pop() ?? 'workspace' : 'workspace', generated: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), link };
    const vm = service.vm(true);
    const text = fmt === 'html' ? renderHtml(vm, options) : renderMarkdown(vm, options);
    await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(text));
    ChecklistPanel.current?.post('notice', { level: 'info', text: `Report written to ${vscode.workspace.asRelativePath(uri)}.` });
    if (!target) void vscode.window.showInformationMessage(`TPU readiness report written to ${vscode.workspace.asRelativePath(uri)}.`, 'Open').then((p) => p && vscode.commands.executeCommand('vscode.open', uri));
    return uri;
  }

  register(CommandId.OpenChecklist, (step?: unknown) => openPanel(stepArg(step)));
  register(CommandId.RevealFinding, (uri: string, line: number, character: number, cell: number | null) => reveal(uri, line, character, cell));
  register(CommandId.ExportReport, (format?: 'md' | 'html', target?: vscode.Uri) => exportReport(format === 'md' || format === 'html' ? format : undefined, target instanceof vscode.Uri ? target : undefined));
  register(CommandId.FixStep, async (arg?: unknown) => {
    const step = stepArg(arg) ?? (await vscode.window.showQuickPick(service.vm().steps.filter((s) => s.actions.some((a) => a.id === 'fixSafe')).map((s) => ({ label: `${s.step}. ${s.title}`, step: s.step as Step })), { placeHolder: 'Fix the safe issues of which step?' }))?.step;
    return step ? fixStep(step) : 0;
  });
  register(CommandId.CreateSmokeTest, async () => {
    const uri = await writeGenerated(smokeTest(service.currentTarget, findModel(await projectFiles())), 'run it on the TPU host');
    // beside it, the launcher whose logs come back as runtime diagnostics (kept when it exists)
    if (uri) await writeProfilingRun(service.currentTarget, false);
    return uri;
  });
  register(CommandId.CreateResumeScaffold, async () => {
    await service.ready();
    return writeGenerated(resumeScaffold(service.currentTarget), 'call load_latest_checkpoint() before the training loop');
  });
  register(CommandId.CreateCiWorkflow, async () => {
    await service.ready();
    return writeGenerated(ciWorkflow(service.currentTarget), 'findings show in code scanning after the next push');
  });
  register(CommandId.EnableCompileCache, () => enableCompileCache());
  register(CommandId.ShowCostPanel, async (cost?: CostVM) => {
    if (!cost || typeof cost !== 'object' || !Array.isArray(cost.estimates)) return undefined;
    ChecklistPanel.cost = cost;
    const panel = ChecklistPanel.createOrShow(context.extensionUri, service, handle);
    panel.postState();
    return panel.panel.viewType;
  });
  register(CommandId.ToggleStepItem, async (step: number, item: string, checked: boolean) => {
    if (!isStep(step) || typeof item !== 'string') return false;
    return service.update((p) => setTick(p, step, item, checked !== false));
  });

  refreshViews();
  return service;
}

/** POSIX relative path from directory `from` to file `to`. */
function relativePath(from: string, to: string): string {
  const a = from.split('/').filter(Boolean);
  const b = to.split('/').filter(Boolean);
  let i = 0;
  while (i < a.length && i < b.length - 1 && a[i] === b[i]) i++;
  return [...a.slice(i).map(() => '..'), ...b.slice(i)].join('/');
}
