/**
 * The checklist's state in the editor: findings from the extension's results store (never re-analysed
 * here), evidence facts from the workspace files, and the team's progress from
 * `.tpu-ready/progress.json` (re-read before every write, so edits made by git or by hand are never
 * lost; a malformed file is reported and left untouched). Fires `onDidChange` when any of them changes.
 */
import * as vscode from 'vscode';
import {
  checklistVM, collectFacts, emptyProgress, isFactFile, isoDate, NO_FACTS, parseProgress, PROGRESS_PATH, ProgressFormatError, recordSnapshot,
  serializeProgress, snapshotOf, stepStates, type ChecklistFinding, type ChecklistInput, type Facts, type Progress, type ProjectFile,
} from '../checklist';
import { parseIpynb } from '../core/notebook';
import type { LocatedFinding, Step, Target } from '../core/types';
import { DEFAULT_TARGET } from '../core/types';
import type { ChecklistVM } from '../protocol/checklist';
import type { ConfigService } from './config';
import type { Results } from './results';
import { writeRefusal } from './files';
import type { Evidence } from '../evidence';
import { RUNTIME_RULES_BY_ID } from '../rules/runtime';

const FACT_GLOB = '**/{*.py,*.ipynb,requirements*.txt,requirements*.in,pyproject.toml,setup.cfg,environment*.yml,environment*.yaml,.github/workflows/*.yml,.github/workflows/*.yaml,.gitlab-ci.yml}';
const SKIP = '**/{.git,node_modules,__pycache__,.venv,venv,.tox,.nox,site-packages,.ipynb_checkpoints}/**';
const MAX_FACT_FILES = 3000;
const MAX_FACT_BYTES = 1_000_000;

function isLocated(f: unknown): f is LocatedFinding {
  return typeof f === 'object' && f !== null && 'startPos' in f;
}

export class ChecklistService implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];
  private facts: Facts = { ...NO_FACTS };
  private factFiles = new Map<string, ProjectFile>();
  private progress: Progress = emptyProgress();
  private progressError: string | null = null;
  private target: Target = DEFAULT_TARGET;
  private factsTimer: NodeJS.Timeout | undefined;
  private factsLoaded: Promise<void> | null = null;
  /** The latest profiling run (src/extension/evidence.ts): step 9's evidence, its runtime findings. */
  private run: { met: boolean; summary: string; findings: (ChecklistFinding & { evidence: Evidence })[] } | null = null;
  /** A workspace scan completed in this session: the results cover the workspace, so snapshots are meaningful. */
  private scanned = false;

  constructor(
    private readonly results: Results,
    private readonly config: ConfigService,
  ) {
    this.disposables.push(results.onDidChange(() => this.changed.fire()));
    const watcher = vscode.workspace.createFileSystemWatcher(FACT_GLOB);
    const onFile = (uri: vscode.Uri) => this.scheduleFactFile(uri);
    this.disposables.push(watcher, watcher.onDidChange(onFile), watcher.onDidCreate(onFile), watcher.onDidDelete((uri) => this.dropFactFile(uri)));
    const progressWatcher = vscode.workspace.createFileSystemWatcher(`**/${PROGRESS_PATH}`);
    const reload = () => void this.loadProgress().then(() => this.changed.fire());
    this.disposables.push(progressWatcher, progressWatcher.onDidChange(reload), progressWatcher.onDidCreate(reload), progressWatcher.onDidDelete(reload));
    this.disposables.push(vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('tpuReady') && void this.refreshTarget().then(() => this.recomputeFacts())));
  }

  dispose(): void {
    if (this.factsTimer) clearTimeout(this.factsTimer);
    for (const d of this.disposables) d.dispose();
  }

  get root(): vscode.Uri | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri;
  }

  get progressUri(): vscode.Uri | undefined {
    return this.root && vscode.Uri.joinPath(this.root, PROGRESS_PATH);
  }

  get currentTarget(): Target {
    return this.target;
  }

  /** Whether the workspace has Python code or notebooks (or one is open): otherwise the views show their welcome. */
  get hasPython(): boolean {
    if ([...this.factFiles.keys()].some((p) => /\.(py|ipynb)$/.test(p))) return true;
    return vscode.workspace.textDocuments.some((d) => d.languageId === 'python') || vscode.workspace.notebookDocuments.length > 0;
  }

  /** Loads target, progress and facts (once; later calls wait for the first). */
  ready(): Promise<void> {
    this.factsLoaded ??= (async () => {
      await this.refreshTarget();
      await this.loadProgress();
      await this.loadAllFacts();
      this.changed.fire();
    })();
    return this.factsLoaded;
  }

  markScanned(): void {
    this.scanned = true;
  }

  private async refreshTarget(): Promise<void> {
    const root = this.root;
    if (!root) return;
    try {
      const { options, settings } = await this.config.optionsFor(vscode.Uri.joinPath(root, 'pyproject.toml'));
      this.target = options?.target ?? { profile: settings.target, version: DEFAULT_TARGET.version };
    } catch {
      this.target = DEFAULT_TARGET;
    }
  }

  private async loadProgress(): Promise<void> {
    const uri = this.progressUri;
    this.progress = emptyProgress();
    this.progressError = null;
    if (!uri) return;
    try {
      this.progress = await readProgress(uri) ?? emptyProgress();
    } catch (e) {
      this.progressError = e instanceof ProgressFormatError ? e.message : `${PROGRESS_PATH}: ${(e as Error).message}`;
    }
  }

  private async loadAllFacts(): Promise<void> {
    const uris = await vscode.workspace.findFiles(FACT_GLOB, SKIP, MAX_FACT_FILES);
    const files = await Promise.all(uris.map((u) => this.readFactFile(u)));
    this.factFiles = new Map(files.filter((f): f is ProjectFile => !!f).map((f) => [f.path, f]));
    this.facts = collectFacts([...this.factFiles.values()], this.target.profile);
  }

  private async readFactFile(uri: vscode.Uri): Promise<ProjectFile | null> {
    const path = vscode.workspace.asRelativePath(uri, false);
    if (!isFactFile(path)) return null;
    try {
      const bytes = await vscode.workspace.fs.readFile(uri);
      if (bytes.length > MAX_FACT_BYTES) return null;
      let text = new TextDecoder().decode(bytes);
      if (path.endsWith('.ipynb')) text = parseIpynb(text).cells.filter((c) => c.kind === 'code').map((c) => c.text).join('\n');
      return { path, text };
    } catch {
      return null;
    }
  }

  private pendingFacts = new Set<string>();

  /** A file the extension itself wrote (a generator): read it as evidence now, without waiting for the watcher. */
  noteWritten(uri: vscode.Uri): void {
    if (isFactFile(vscode.workspace.asRelativePath(uri, false))) this.scheduleFactFile(uri);
  }

  private scheduleFactFile(uri: vscode.Uri): void {
    this.pendingFacts.add(uri.toString());
    if (this.factsTimer) clearTimeout(this.factsTimer);
    this.factsTimer = setTimeout(() => {
      const uris = [...this.pendingFacts].map((u) => vscode.Uri.parse(u));
      this.pendingFacts.clear();
      void Promise.all(uris.map(async (u) => {
        const f = await this.readFactFile(u);
        if (f) this.factFiles.set(f.path, f);
        else this.factFiles.delete(vscode.workspace.asRelativePath(u, false));
      })).then(() => this.recomputeFacts());
    }, 300);
  }

  private dropFactFile(uri: vscode.Uri): void {
    if (this.factFiles.delete(vscode.workspace.asRelativePath(uri, false))) this.recomputeFacts();
  }

  private recomputeFacts(): void {
    this.facts = collectFacts([...this.factFiles.values()], this.target.profile);
    this.changed.fire();
  }

  /** The findings of every file the results store knows, in the checklist's shape. */
  findings(): ChecklistFinding[] {
    const out: ChecklistFinding[] = [];
    for (const r of this.results.all()) {
      const path = vscode.workspace.asRelativePath(r.uri, false);
      for (const f of r.findings) {
        const pos = isLocated(f) ? f.startPos : { line: 0, character: 0 };
        out.push({
          rule: f.rule, step: f.step, severity: f.severity, message: f.message, path, uri: r.uri.toString(), line: pos.line + 1, column: pos.character + 1,
          cell: isLocated(f) ? f.cell : null, fix: f.fix ? { applicability: f.fix.applicability } : null,
        });
      }
    }
    return out;
  }

  input(): ChecklistInput {
    const run = this.target.profile === 'torch_xla' ? this.run : null;
    return {
      profile: this.target.profile, score: this.results.summary().score, findings: [...this.findings(), ...(run?.findings ?? [])], facts: { ...this.facts, hasRunEvidence: run?.met ?? false },
      progress: this.progress, progressError: this.progressError, run: run?.summary ?? null,
    };
  }

  /** The static findings plus the latest run's runtime ones (the sidebar's findings by file). */
  allFindings(): ChecklistFinding[] {
    return this.input().findings as ChecklistFinding[];
  }

  /**
   * The static findings, each with the evidence of the latest run's finding on its line that it is material for
   * (the panel's priced findings then use the measured values, src/cost/findings.ts).
   */
  findingsWithEvidence(): (ChecklistFinding & { evidence?: Evidence })[] {
    const run = this.target.profile === 'torch_xla' ? this.run : null;
    return this.findings().map((f) => {
      const r = run?.findings.find((x) => x.path === f.path && x.line === f.line && RUNTIME_RULES_BY_ID.get(x.rule)?.material.includes(f.rule));
      return r ? { ...f, evidence: r.evidence } : f;
    });
  }

  /** The latest profiling run changed (src/extension/evidence.ts). */
  setRun(run: { met: boolean; summary: string; findings: (ChecklistFinding & { evidence: Evidence })[] } | null): void {
    this.run = run;
    this.changed.fire();
  }

  /** The panel's view model; `all` lists every finding of a step (the exported report). */
  vm(all = false): ChecklistVM {
    return all ? checklistVM(this.input(), Infinity) : checklistVM(this.input());
  }

  /**
   * Changes the progress file: re-reads it from disk, applies `change`, records today's snapshot when
   * the results cover the workspace, and writes it back. Refuses (with an error) when the file is malformed.
   */
  async update(change: (p: Progress) => Progress): Promise<boolean> {
    const uri = this.progressUri;
    if (!uri) {
      void vscode.window.showWarningMessage('TPU Readiness: open a folder to keep checklist progress.');
      return false;
    }
    let current: Progress;
    try {
      current = (await readProgress(uri)) ?? emptyProgress();
    } catch (e) {
      this.progressError = (e as Error).message;
      this.changed.fire();
      void vscode.window.showErrorMessage(`TPU Readiness: ${(e as Error).message}. Fix the file; it was not changed.`, 'Open File').then((pick) => pick && vscode.window.showTextDocument(uri));
      return false;
    }
    let next = change(current);
    if (this.scanned) {
      const input = { ...this.input(), progress: next };
      next = recordSnapshot(next, snapshotOf(stepStates(input), input.score, isoDate(new Date())));
    }
    const refusal = this.root && writeRefusal(uri, this.root);
    if (refusal) {
      void vscode.window.showErrorMessage(`TPU Readiness: ${refusal}`);
      return false;
    }
    await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(uri, '..'));
    await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(serializeProgress(next)));
    this.progress = next;
    this.progressError = null;
    this.changed.fire();
    return true;
  }

  /** After a workspace scan: record today's snapshot. */
  async recordSnapshot(): Promise<void> {
    if (!this.progressUri || this.progressError) return;
    await this.update((p) => p);
  }

  openFindingsOf(step: Step): ChecklistFinding[] {
    return stepStates(this.input())[step - 1].open;
  }
}

async function readProgress(uri: vscode.Uri): Promise<Progress | null> {
  let bytes: Uint8Array;
  try {
    bytes = await vscode.workspace.fs.readFile(uri);
  } catch (e) {
    if (e instanceof vscode.FileSystemError && e.code === 'FileNotFound') return null;
    throw e;
  }
  return parseProgress(new TextDecoder().decode(bytes));
}
