/**
 * Runtime evidence in the editor: watches `.tpu-ready/runs/` (written by the profiling launcher,
 * `.tpu-ready/profile-run.sh`), imports the newest run as diagnostics of their own source
 * ("tpu-ready runtime") on the lines that caused them, hands the checklist its step 9 evidence (the run's
 * findings, whether it is newer than the code, its summary), and registers "Prepare a Profiling Run".
 * The readers and the mapping are the pure engine's (src/evidence).
 */
import * as vscode from 'vscode';
import { profilingRun, RUNS_DIR, type ChecklistFinding } from '../checklist';
import { confirmation, latestRun, type Evidence, type RunFile, type RunStatus, type RuntimeFinding, type WorkspaceFile } from '../evidence';
import { docsUri } from './convert';
import { CommandId } from './commands';
import { RUNTIME_RULES_BY_ID } from '../rules/runtime';
import { exists, writeRefusal } from './files';
import { measuredStepOf, type MeasuredStep } from '../cost/measured';

export const RUNTIME_SOURCE = 'tpu-ready runtime';
const SKIP = '**/{.git,node_modules,__pycache__,.venv,venv,.tox,.nox,site-packages,.ipynb_checkpoints,.tpu-ready}/**';
const MAX_WORKSPACE_FILES = 3000;
/** A run's files larger than this are read up to it (the head of a long debug log has the causes). */
const MAX_RUN_BYTES = 64 * 1024 * 1024;
/** How the editor's user names the TPU of a run whose log does not (there is no --measured-on flag here). */
const HOW_TO_NAME = 'run it with .tpu-ready/profile-run.sh, which writes the line "tpu-ready: accelerator-type v5litepod-8", or add that line to the log';

/** What the checklist takes from the latest run. */
export interface RunForChecklist {
  met: boolean;
  summary: string;
  findings: (ChecklistFinding & { evidence: Evidence })[];
}

export class RunEvidence implements vscode.Disposable {
  private readonly diagnostics = vscode.languages.createDiagnosticCollection('tpu-ready-runtime');
  private readonly changed = new vscode.EventEmitter<RunForChecklist | null>();
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.diagnostics, this.changed];
  private timer: NodeJS.Timeout | undefined;
  private status: RunStatus | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  /** The newest run's measured step time (or why it has none); null without a run. */
  private step: MeasuredStep | string | null = null;
  private readonly stepChanged = new vscode.EventEmitter<void>();
  /** Fires when the newest run's measured step time changed (the cost views estimate again). */
  readonly onDidChangeMeasuredStep = this.stepChanged.event;

  /** Last published status and texts (re-published when the static findings change). */
  private published: { root: vscode.Uri; texts: Map<string, string> } | null = null;

  /** Static findings the latest run confirms, by file uri: shown in their own message, not as a second diagnostic. */
  private confirmed = new Map<string, Confirmation[]>();
  private readonly confirmedChanged = new vscode.EventEmitter<void>();
  /** Fires when the confirmations changed (the static diagnostics are decorated again). */
  readonly onDidChangeConfirmations = this.confirmedChanged.event;

  /**
   * `staticRules(uri, line0)`: the rules of the static findings at a 0-based line (the results store), so that
   * a runtime finding on such a line shows as the confirmation of that finding, not as a second one.
   */
  constructor(private readonly log: vscode.LogOutputChannel, private readonly staticRules: (uri: vscode.Uri, line: number) => string[] = () => []) {
    this.disposables.push(this.confirmedChanged, this.stepChanged);
    // the folders too: a `.tpu-ready/runs/` created with its first log at once is reported as the folder alone
    const watcher = vscode.workspace.createFileSystemWatcher(`{**/${RUNS_DIR.split('/')[0]},**/${RUNS_DIR},**/${RUNS_DIR}/**}`);
    const kick = () => this.schedule();
    this.disposables.push(watcher, watcher.onDidCreate(kick), watcher.onDidChange(kick), watcher.onDidDelete(kick));
    // the code changed: the run may no longer be newer than it (step 9)
    this.disposables.push(vscode.workspace.onDidSaveTextDocument((d) => d.languageId === 'python' && this.status !== null && this.schedule(2000)));
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }

  get root(): vscode.Uri | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri;
  }

  /** The newest run's step time and the TPU it ran on (src/cost/measured.ts), or why not; null without a run. */
  get measuredStep(): MeasuredStep | string | null {
    return this.step;
  }

  /** The latest import, for the checklist. */
  forChecklist(): RunForChecklist | null {
    const s = this.status;
    if (!s || !this.root) return null;
    const root = this.root;
    return {
      met: s.met,
      summary: s.summary,
      findings: s.findings.filter((f) => f.inWorkspace).map((f) => ({
        rule: f.rule, step: f.step, severity: f.severity, message: f.message, path: f.path, uri: vscode.Uri.joinPath(root, ...f.path.split('/')).toString(),
        line: f.line, column: f.column, cell: null, fix: null, evidence: f.evidence,
      })),
    };
  }

  schedule(delay = 500): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh(), delay);
  }

  /** Reads the newest run and publishes its findings; concurrent calls coalesce. */
  refresh(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.importRuns();
        } while (this.again);
      } catch (e) {
        this.log.warn(`runtime evidence: ${(e as Error).message}`);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  private async importRuns(): Promise<void> {
    const root = this.root;
    if (!root) return;
    const dir = vscode.Uri.joinPath(root, ...RUNS_DIR.split('/'));
    let entries: [string, vscode.FileType][] = [];
    try {
      entries = await vscode.workspace.fs.readDirectory(dir);
    } catch {
      // no runs yet
    }
    const runFiles: RunFile[] = [];
    for (const [name, type] of entries) {
      if (type !== vscode.FileType.File || name.startsWith('.')) continue;
      const uri = vscode.Uri.joinPath(dir, name);
      const st = await vscode.workspace.fs.stat(uri);
      runFiles.push({ path: `${RUNS_DIR}/${name}`, mtimeMs: st.mtime, text: '' });
    }
    // only the newest run is read in full
    const newestKey = newestRun(runFiles);
    const toRead = runFiles.filter((f) => newestKey !== null && f.path.startsWith(newestKey));
    for (const f of toRead) {
      const bytes = await vscode.workspace.fs.readFile(vscode.Uri.joinPath(root, ...f.path.split('/')));
      f.text = new TextDecoder().decode(bytes.subarray(0, MAX_RUN_BYTES));
    }
    const { files, newestCode } = await this.workspace();
    this.status = latestRun(toRead, files, newestCode);
    this.publish(root, this.status, new Map(files.map((f) => [f.path, f.text])));
    if (this.status) this.log.info(`runtime evidence: ${this.status.files.join(', ')}: ${this.status.findings.length} finding(s); ${this.status.summary}${this.status.fresh ? '' : ' (older than the code)'}`);
    const step = this.status ? measuredStepOf(this.status.evidence, this.status.files, null, HOW_TO_NAME) : null;
    if (JSON.stringify(step) !== JSON.stringify(this.step)) {
      this.step = step;
      this.log.info(`runtime evidence: step time: ${typeof step === 'string' ? step : JSON.stringify(step)}`);
      this.stepChanged.fire();
    }
    this.changed.fire(this.forChecklist());
  }

  private async workspace(): Promise<{ files: WorkspaceFile[]; newestCode: number }> {
    const uris = await vscode.workspace.findFiles('**/*.py', SKIP, MAX_WORKSPACE_FILES);
    let newestCode = 0;
    const files: WorkspaceFile[] = [];
    for (const u of uris) {
      try {
        const [st, bytes] = await Promise.all([vscode.workspace.fs.stat(u), vscode.workspace.fs.readFile(u)]);
        newestCode = Math.max(newestCode, st.mtime);
        files.push({ path: vscode.workspace.asRelativePath(u, false), text: new TextDecoder().decode(bytes) });
      } catch {
        // deleted meanwhile
      }
    }
    return { files, newestCode };
  }

  /** The static findings changed: the confirmations may have. */
  republish(): void {
    if (this.published) this.publish(this.published.root, this.status, this.published.texts);
  }

  /** What the latest run confirms of the static findings of `uri` (0-based lines). */
  confirmationsOf(uri: vscode.Uri): Confirmation[] {
    return this.confirmed.get(uri.toString()) ?? [];
  }

  private publish(root: vscode.Uri, status: RunStatus | null, texts: Map<string, string>): void {
    this.published = { root, texts };
    this.diagnostics.clear();
    const confirmed = new Map<string, Confirmation[]>();
    const done = () => {
      const changed = JSON.stringify([...confirmed]) !== JSON.stringify([...this.confirmed]);
      this.confirmed = confirmed;
      if (changed) this.confirmedChanged.fire();
    };
    if (!status) return done();
    const byUri = new Map<string, { uri: vscode.Uri; ds: vscode.Diagnostic[] }>();
    for (const f of status.findings) {
      const uri = vscode.Uri.joinPath(root, ...f.path.split('/'));
      const d = toDiagnostic(f, root, texts.get(f.path));
      const material = RUNTIME_RULES_BY_ID.get(f.rule)?.material ?? [];
      const confirms = f.inWorkspace ? this.staticRules(uri, f.line - 1).filter((r) => material.includes(r)) : [];
      if (confirms.length) {
        // the run confirms the static finding on this line (issue 12): its own message says so, no second diagnostic
        const list = confirmed.get(uri.toString()) ?? [];
        list.push({ line: f.line - 1, rules: confirms, text: confirmation(f) });
        confirmed.set(uri.toString(), list);
        continue;
      }
      const e = byUri.get(uri.toString()) ?? { uri, ds: [] };
      e.ds.push(d);
      byUri.set(uri.toString(), e);
    }
    for (const { uri, ds } of byUri.values()) this.diagnostics.set(uri, ds);
    done();
  }
}

/** A static finding the run confirms: its rule(s) at a 0-based line, and what the run saw ("3 compilations, 2 s"). */
export interface Confirmation {
  line: number;
  rules: string[];
  text: string;
}

/** The newest run's key (`<dir>/<stamp>`), or null. */
function newestRun(files: RunFile[]): string | null {
  let best: RunFile | null = null;
  for (const f of files) if (!best || f.mtimeMs > best.mtimeMs) best = f;
  if (!best) return null;
  const base = best.path.slice(best.path.lastIndexOf('/') + 1);
  const dot = base.indexOf('.');
  return best.path.slice(0, best.path.lastIndexOf('/') + 1) + (dot > 0 ? base.slice(0, dot + 1) : base);
}

/** 1-based code-point columns → the line's UTF-16 range. */
function toDiagnostic(f: RuntimeFinding, root: vscode.Uri, text: string | undefined): vscode.Diagnostic {
  const line = Math.max(0, f.line - 1);
  const cps = text === undefined ? null : [...(text.split(/\r\n|\n|\r/)[line] ?? '')];
  const utf16 = (col: number) => (cps ? cps.slice(0, Math.max(0, col - 1)).join('').length : Math.max(0, col - 1));
  const range = new vscode.Range(line, utf16(f.column), line, utf16(f.endColumn));
  const d = new vscode.Diagnostic(range, f.message, f.severity === 'error' ? vscode.DiagnosticSeverity.Error : f.severity === 'warning' ? vscode.DiagnosticSeverity.Warning : vscode.DiagnosticSeverity.Information);
  d.source = RUNTIME_SOURCE;
  d.code = { value: f.rule, target: docsUri(f.rule) };
  const rel: vscode.DiagnosticRelatedInformation[] = f.related.slice(0, 10).map((r) => new vscode.DiagnosticRelatedInformation(new vscode.Location(vscode.Uri.joinPath(root, ...r.path.split('/')), new vscode.Position(Math.max(0, r.line - 1), 0)), r.message));
  rel.push(new vscode.DiagnosticRelatedInformation(new vscode.Location(vscode.Uri.joinPath(root, ...f.evidence.log.file.split('/')), new vscode.Position(Math.max(0, f.evidence.log.line - 1), 0)), 'Where the run\'s log says it'));
  d.relatedInformation = rel;
  return d;
}

/** Registers the service, the watcher and "TPU Readiness: Prepare a Profiling Run". */
export function registerRunEvidence(context: vscode.ExtensionContext, log: vscode.LogOutputChannel, target: () => Parameters<typeof profilingRun>[0], staticRules?: (uri: vscode.Uri, line: number) => string[]): RunEvidence {
  const service = new RunEvidence(log, staticRules);
  context.subscriptions.push(service);
  context.subscriptions.push(vscode.commands.registerCommand(CommandId.PrepareProfilingRun, () => writeProfilingRun(target(), true)));
  service.schedule(0);
  return service;
}

/**
 * Writes `.tpu-ready/profile-run.sh` (asks before overwriting when `ask`; otherwise leaves an existing one) and
 * says how to run it. Returns its uri, or undefined when nothing was written.
 */
export async function writeProfilingRun(t: Parameters<typeof profilingRun>[0], ask: boolean): Promise<vscode.Uri | undefined> {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!root) {
    void vscode.window.showWarningMessage('TPU Readiness: open a folder first.');
    return undefined;
  }
  const file = profilingRun(t);
  if (!file) {
    void vscode.window.showWarningMessage('TPU Readiness: profiling runs read torch_xla\'s debug output; the TorchTPU preview has none to read.');
    return undefined;
  }
  const uri = vscode.Uri.joinPath(root, ...file.path.split('/'));
  if (await exists(uri)) {
    if (!ask) return undefined;
    const pick = await vscode.window.showWarningMessage(`${file.path} already exists.`, 'Open It', 'Overwrite');
    if (pick === 'Open It') await vscode.window.showTextDocument(uri);
    if (pick !== 'Overwrite') return undefined;
  }
  const refusal = writeRefusal(uri, root);
  if (refusal) {
    void vscode.window.showErrorMessage(`TPU Readiness: ${refusal}`);
    return undefined;
  }
  await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(root, ...RUNS_DIR.split('/')));
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(file.text));
  if (ask) {
    await vscode.window.showTextDocument(uri, { preview: false });
    void vscode.window.showInformationMessage(`Created ${file.path}. On the TPU host run: bash ${file.path} train.py (your script and its arguments). Its log in ${RUNS_DIR}/ shows here on the lines that caused it.`);
  }
  return uri;
}
