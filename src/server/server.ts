/**
 * The tpu-ready language server (issue 13): the pure engine behind the Language Server Protocol, for VS Code,
 * Neovim, Helix, JupyterLab (jupyterlab-lsp) and any other LSP client. It reads documents and project files and
 * never executes workspace code.
 *
 * - Diagnostics: pushed (`textDocument/publishDiagnostics`) to clients without pull support; pulled
 *   (`textDocument/diagnostic`, `workspace/diagnostic` for the project scan) from clients that have it.
 *   Each carries `codeDescription` (the rule's docs), the checklist step as related information (and the
 *   finding's own related locations once `Finding.related` exists) and `data` ({@link DiagnosticData}).
 * - Code actions: the fix (unsafe ones say so and are never preferred), "Ignore TPUnnn on this line",
 *   "Fix all TPUnnn in this file", "Fix all safe TPU issues in this file", and `source.fixAll.tpuReady`
 *   (`notebook.source.fixAll.tpuReady` on notebooks; on a cell the plain kind fixes that cell only).
 * - Notebooks: LSP 3.17 notebook sync; the code cells are analysed as one program (src/core/notebook.ts)
 *   and each finding is published on its cell's document.
 * - Configuration: `[tool.tpu-ready]` in the nearest pyproject.toml (wins) and the client's `tpuReady.*` settings.
 * - Budgets: each live analysis stops past {@link LIVE_FILE_BUDGET_MS}; a superseded analysis never publishes;
 *   requests honour cancellation; the workspace scan reports progress.
 *
 * Seam for project scope (branch `project`, `src/model/project.ts`): {@link ProjectModel} is where the
 * `ProjectIndex` will live: `update(path, text)` on every analysed text, `dependants(path)` re-analysed after it.
 */
import fs from 'node:fs';
import v8 from 'node:v8';
import { budgetSkipReason } from '../core/budget';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  CodeActionKind, DiagnosticSeverity, DidChangeWatchedFilesNotification, DocumentDiagnosticReportKind, NotebookCellKind, NotebookDocuments,
  TextDocuments, TextDocumentSyncKind,
  type CancellationToken, type ClientCapabilities, type CodeAction, type CodeActionParams, type Connection, type Diagnostic,
  type InitializeParams, type InitializeResult, type NotebookDocument as LspNotebook, type TextDocumentEdit, type TextEdit,
  type WorkDoneProgressReporter, type WorkspaceDocumentDiagnosticReport, type WorkspaceEdit,
} from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { accelModuleSource, isGeneratedAccel } from '../core/accel';
import {
  analysedText, analyze, applyFixBatch, applyToDocument, BudgetExceeded, cellOf, fixDocument, Locator, locateAll, mayMatch, notebookDocument,
  pythonDocument, textDocument, textFileKind, type SourceDocument,
} from '../core/engine';
import { DocumentAnalyzer } from '../core/incremental';
import { NotebookFormatError, parseIpynb, type NotebookCell } from '../core/notebook';
import { initParser, parsePython } from '../core/parse';
import { configHeaderLine, optionsFor as coreOptionsFor, parseProjectConfig, type ConfigProblem } from '../core/config';
import { docsUrl } from '../core/rule';
import { workspaceScore } from '../core/score';
import { detectEol, LineIndex, normalizeLoneCr } from '../core/source';
import { suppressionEdit } from '../core/suppress';
import { STEP_TITLES, type AnalyzeOptions, type Edit, type Finding, type LocatedFinding, type Position, type Severity } from '../core/types';
import { RULES } from '../rules';
import { accelModulePath } from '../cli/check';
import { readText } from '../cli/process';
import { realRoots, safeWriteFile } from '../cli/safefs';
import { collectFiles, isCandidate } from '../cli/walk';
import { diffText } from '../core/textDiff';
import {
  FindingsRequest, FIX_ALL_KIND, LSP_SOURCE, ScanWorkspaceRequest, ServerCommand,
  type ClientSettings, type DiagnosticData, type FindingsParams, type FindingsResult, type ScannedFile, type ScanWorkspaceParams, type WorkspaceScanResult,
} from '../protocol/lsp';
import { DEFAULT_LIVE_BUDGET_MS, effectiveSettings, isConfigFile, Projects, type EffectiveSettings } from './projects';
import { readModule, WorkspaceIndex } from './workspaceIndex';
import type { ProjectView } from '../model/project';
import { accelDecision } from '../core/accelGate';
import {
  AnalysedNotification, FixEditRequest,
  type AccelRefusal, type AnalysedParams, type FixEditParams, type FixEditResult, type InitializationOptions,
} from '../protocol/lsp';

/** Time budget of one live analysis (each edit re-analyses the file), unless tpuReady.analysis.fileBudgetMs says otherwise. */
export const LIVE_FILE_BUDGET_MS = DEFAULT_LIVE_BUDGET_MS;

/** JS heap plus external memory (tree-sitter's WebAssembly heap is an external ArrayBuffer). */
function memoryInUse(): number {
  const h = v8.getHeapStatistics();
  return h.used_heap_size + h.external_memory;
}
/** Time budget per file of the workspace scan and of fix-all (as the CLI's default). */
export const SCAN_FILE_BUDGET_MS = 10_000;
/** Delay between the last change and the analysis when diagnostics are pushed. */
export const DEBOUNCE_MS = 200;
const MAX_SCAN_FILES = 20_000;
export const NOTEBOOK_FIX_ALL_KIND = `notebook.${FIX_ALL_KIND}`;
const FIX_ALL_TITLE = 'Fix all safe TPU issues in this file';
const FIX_CELL_TITLE = 'Fix all safe TPU issues in this cell';

/**
 * Project scope seam: the index another branch adds (`ProjectIndex` in src/model/project.ts, whose `update` and
 * `dependants` have these shapes). The server feeds it every text it analyses (absolute file paths) and
 * re-analyses the open documents among the files `update` names as affected.
 */
export interface ProjectModel {
  /** A file's text changed (null: deleted); returns the files whose analysis may change (itself and its dependants). */
  update(path: string, text: string | null): string[];
  dependants(path: string): string[];
  /** The modules `path` imports (what a hot loop in it calls there can change with its text). */
  dependencies?(path: string): string[];
  /** The project view the rules of `path` resolve other modules through (after `update` gave it the text). */
  viewFor?(path: string): ProjectView | null;
}

/** A file or a notebook: the unit the engine analyses. */
type Analysable =
  | { kind: 'file'; uri: string; doc: TextDocument }
  | { kind: 'notebook'; uri: string; nb: LspNotebook; cellDocs: (TextDocument | undefined)[] };

interface Unit {
  key: string;
  stamp: string;
  source: SourceDocument;
  options: AnalyzeOptions;
  findings: LocatedFinding[];
  /** Cell document uris by cell index (notebooks), null for files. */
  cells: string[] | null;
  /** Versions of the text documents edited by fixes (the file, or each cell). */
  versions: Map<string, number>;
  relevant: boolean;
}

/** `CodeAction.data` of a fix-all quick-fix whose edit is computed on resolve. */
interface FixAllData {
  type: 'fixAll';
  uri: string;
  rule: string | null;
}

interface DocState {
  generation: number;
  timer: NodeJS.Timeout | undefined;
  analyzer: DocumentAnalyzer;
  unit: Unit | null;
  published: string[];
  /**
   * What was last sent per uri (diagnostics without their version stamp; findings without their offsets): an
   * analysis that finds the same (an edit in a comment, a re-analysis after a settings change that changed nothing)
   * sends nothing, so the client's thread has nothing to decode.
   */
  sent: Map<string, string>;
  /** The findings last sent in `tpuReady/didAnalyse` (one key each, without offsets). */
  sentFindings?: { keys: string[]; relevant: boolean };
  /** The text last given to the project model. */
  lastText?: string;
}

const SEVERITY: Record<Severity, DiagnosticSeverity> = {
  error: DiagnosticSeverity.Error,
  warning: DiagnosticSeverity.Warning,
  info: DiagnosticSeverity.Information,
  hint: DiagnosticSeverity.Hint,
};

function fsPath(uri: string): string | null {
  if (!uri.startsWith('file:')) return null;
  try {
    return fileURLToPath(uri);
  } catch {
    return null;
  }
}

/** `only` asks for `kind` (a requested kind covers its sub-kinds). */
function asks(only: string[] | undefined, kind: string): boolean {
  return !only || only.some((k) => kind === k || kind.startsWith(`${k}.`));
}

/** A finding's own related locations (`Finding.related` / `LocatedRelated`, branch `project`): read defensively. */
interface RelatedLike {
  message?: string;
  /** Another module of the project ('/'-separated; absolute, or relative to the workspace folder); absent: this file. */
  path?: string;
  start?: number;
  end?: number;
  cell?: number | null;
  startPos?: Position;
  endPos?: Position;
}

export interface ServerOptions {
  /** Folder with web-tree-sitter.wasm and tree-sitter-python.wasm. */
  wasmDir: string;
  projectModel?: ProjectModel;
}

export class TpuReadyServer {
  readonly documents = new TextDocuments(TextDocument);
  readonly notebooks = new NotebookDocuments(TextDocument);
  private readonly states = new Map<string, DocState>();
  private projects = new Projects([]);
  private capabilities: ClientCapabilities = {};
  private pullMode = false;
  private configurationRequests = false;
  /** Settings when the client cannot answer `workspace/configuration`: initializationOptions, then didChangeConfiguration. */
  private globalSettings: ClientSettings = {};
  private readonly settingsCache = new Map<string, Promise<EffectiveSettings>>();
  /** Files the last push-mode workspace scan published diagnostics on (not open in the editor). */
  private readonly scanned = new Map<string, ScannedFile>();
  private readonly projectModel: ProjectModel;
  private parserReady: Promise<unknown> | null = null;
  /** The version each text document was opened with (its first content event is the open itself). */
  private readonly openedVersions = new Map<string, number>();
  private init: InitializationOptions = {};

  constructor(
    private readonly connection: Connection,
    private readonly opts: ServerOptions,
  ) {
    this.projectModel = opts.projectModel ?? new WorkspaceIndex(() => this.projects.getFolders(), (p) => this.openTextAt(p));
  }

  /** The text of the open document at a normalized file path, else null (project scope reads the disk then). */
  private openTextAt(file: string): string | null {
    for (const d of this.documents.all()) if (fsPath(d.uri) === file) return d.getText();
    return null;
  }

  /** Open Python files among `files` (absolute paths), re-analysed after a module they import changed. */
  private relintFiles(files: string[], except?: string): void {
    for (const dep of files) {
      if (dep === except) continue;
      const depUri = pathToFileURL(dep).toString();
      if (this.states.has(depUri) || this.documents.get(depUri)) this.schedule(depUri, DEBOUNCE_MS);
    }
  }

  listen(): void {
    const c = this.connection;
    c.onInitialize((p) => this.initialize(p));
    c.onInitialized(() => this.initialized());
    this.documents.onDidOpen((e) => {
      this.openedVersions.set(e.document.uri, e.document.version);
      this.opened(e.document.uri);
    });
    this.documents.onDidChangeContent((e) => {
      // TextDocuments also fires this on open: that version is analysed by `opened` (also under run = onSave)
      if (this.openedVersions.get(e.document.uri) === e.document.version) return;
      this.openedVersions.delete(e.document.uri);
      if (this.states.has(e.document.uri) || this.analysable(e.document.uri)) void this.changed(e.document.uri, false);
    });
    this.documents.onDidSave((e) => void this.saved(e.document.uri));
    this.documents.onDidClose((e) => {
      this.openedVersions.delete(e.document.uri);
      this.forget(e.document.uri);
      // a closed module falls back to its text on disk for the files importing it
      const file = fsPath(e.document.uri);
      if (file?.endsWith('.py')) this.relintFiles(this.projectModel.update(file, readModule(file)), file);
    });
    this.notebooks.onDidOpen((nb) => this.opened(nb.uri));
    this.notebooks.onDidChange((e) => void this.changed(e.notebookDocument.uri, false));
    this.notebooks.onDidSave((nb) => void this.saved(nb.uri));
    this.notebooks.onDidClose((nb) => this.forget(nb.uri));
    c.onDidChangeConfiguration((p) => {
      const s = (p.settings as { tpuReady?: ClientSettings } | null)?.tpuReady;
      if (s && typeof s === 'object') this.globalSettings = s;
      this.settingsCache.clear();
      this.relintAll();
    });
    c.onDidChangeWatchedFiles((p) => {
      if (p.changes.some((ch) => isConfigFile(fsPath(ch.uri) ?? ch.uri))) {
        this.projects.clear();
        this.relintAll();
      }
      // a module changed on disk (not open: an open one is its editor's text): the open files importing it
      for (const ch of p.changes) {
        const file = fsPath(ch.uri);
        if (!file?.endsWith('.py') || this.documents.get(ch.uri)) continue;
        this.relintFiles(this.projectModel.update(file, ch.type === 3 ? null : readModule(file)), file);
      }
    });
    c.onCodeAction((p, token) => this.codeActions(p, token));
    c.onCodeActionResolve((a, token) => this.resolveCodeAction(a, token));
    c.onRequest(FixEditRequest.method, (p: FixEditParams, token: CancellationToken) => this.fixEdit(p, token));
    c.onExecuteCommand((p, token) => this.executeCommand(p.command, p.arguments ?? [], token));
    c.languages.diagnostics.on(async (p) => ({ kind: DocumentDiagnosticReportKind.Full, items: await this.pulledDiagnostics(p.textDocument.uri) }));
    c.languages.diagnostics.onWorkspace(async (_p, token, progress) => ({ items: (await this.scanWorkspace(token, progress, true)).reports }));
    c.onRequest(FindingsRequest.method, (p: FindingsParams) => this.findingsOf(p.uri));
    c.onRequest(ScanWorkspaceRequest.method, async (p: ScanWorkspaceParams | null, token: CancellationToken) => {
      // a client-made progress token: the client shows the progress (VS Code: a cancellable notification)
      const progress = p?.workDoneToken !== undefined ? c.window.attachWorkDoneProgress(p.workDoneToken) : undefined;
      const only = Array.isArray(p?.uris) ? p.uris.filter((u): u is string => typeof u === 'string') : undefined;
      return (await this.scanWorkspace(token, progress, false, only)).result;
    });
    c.onShutdown(() => this.dispose());
    this.documents.listen(c);
    this.notebooks.listen(c);
  }

  private initialize(p: InitializeParams): InitializeResult {
    this.capabilities = p.capabilities;
    this.pullMode = !!p.capabilities.textDocument?.diagnostic;
    this.configurationRequests = !!p.capabilities.workspace?.configuration;
    // `{settings: {...}}` (documented), `{tpuReady: {...}}`, or the settings themselves (Helix's `config = {...}`)
    const init = p.initializationOptions as (ClientSettings & InitializationOptions & { tpuReady?: ClientSettings }) | null | undefined;
    if (init && typeof init === 'object') {
      this.init = {
        diagnosticMode: init.diagnosticMode === 'push' ? 'push' : undefined,
        configDiagnostics: init.configDiagnostics !== false,
        findingsNotifications: init.findingsNotifications === true,
        accelRefusalCommand: typeof init.accelRefusalCommand === 'string' ? init.accelRefusalCommand : undefined,
      };
      if (this.init.diagnosticMode === 'push') this.pullMode = false;
      const known = ['target', 'targetVersion', 'fixStyle', 'accelModule', 'select', 'ignore', 'run', 'maxFileSize'];
      if (init.settings && typeof init.settings === 'object') this.globalSettings = init.settings;
      else if (init.tpuReady && typeof init.tpuReady === 'object') this.globalSettings = init.tpuReady;
      else if (Object.keys(init).some((k) => known.includes(k))) this.globalSettings = init;
    }
    const folders = (p.workspaceFolders ?? []).map((f) => fsPath(f.uri)).filter((x): x is string => !!x);
    if (!folders.length && p.rootUri) {
      const root = fsPath(p.rootUri);
      if (root) folders.push(root);
    }
    this.projects = new Projects(folders);
    this.parserReady = initParser(this.opts.wasmDir);
    return {
      capabilities: {
        textDocumentSync: { openClose: true, change: TextDocumentSyncKind.Incremental, save: { includeText: false } },
        // every cell, markdown too: cell indices count every cell (as the CLI's), and VS Code asks notebook-wide actions on the first cell
        notebookDocumentSync: { notebookSelector: [{ notebook: '*' }], save: true },
        codeActionProvider: {
          codeActionKinds: [CodeActionKind.QuickFix, FIX_ALL_KIND, NOTEBOOK_FIX_ALL_KIND],
          // "Fix all TPUnnn in this file" computes its edit when picked (clients that can resolve edits)
          resolveProvider: this.resolvesEdits(),
        },
        executeCommandProvider: { commands: Object.values(ServerCommand) },
        ...(this.pullMode ? { diagnosticProvider: { identifier: LSP_SOURCE, interFileDependencies: true, workspaceDiagnostics: true } } : {}),
        workspace: { workspaceFolders: { supported: true, changeNotifications: true } },
      },
      serverInfo: { name: 'tpu-ready' },
    };
  }

  private initialized(): void {
    const ws = this.capabilities.workspace;
    if (ws?.didChangeWatchedFiles?.dynamicRegistration) {
      void this.connection.client.register(DidChangeWatchedFilesNotification.type, {
        watchers: [{ globPattern: '**/pyproject.toml' }, { globPattern: '**/requirements*.{txt,in}' }, { globPattern: '**/*.py' }],
      });
    }
    if (ws?.workspaceFolders) {
      this.connection.workspace.onDidChangeWorkspaceFolders(async () => {
        const folders = (await this.connection.workspace.getWorkspaceFolders()) ?? [];
        this.projects.setFolders(folders.map((f) => fsPath(f.uri)).filter((x): x is string => !!x));
        if (this.projectModel instanceof WorkspaceIndex) this.projectModel.reset();
        this.relintAll();
      });
    }
  }

  dispose(): void {
    for (const s of this.states.values()) {
      if (s.timer) clearTimeout(s.timer);
      s.analyzer.dispose();
    }
    this.states.clear();
  }

  // -------------------------------------------------------------------------------------------
  // Documents

  /** The file or notebook `uri` (a notebook's, a cell's or a file's) belongs to, when it is open and analysable. */
  private analysable(uri: string): Analysable | null {
    const nb = this.notebooks.getNotebookDocument(uri) ?? this.notebooks.findNotebookDocumentForCell(uri);
    if (nb) return { kind: 'notebook', uri: nb.uri, nb, cellDocs: nb.cells.map((c) => this.notebooks.getCellTextDocument(c)) };
    const doc = this.documents.get(uri);
    if (!doc) return null;
    const python = doc.languageId === 'python' || uri.endsWith('.py');
    return python || textFileKind(decodeURIComponent(uri)) !== null ? { kind: 'file', uri, doc } : null;
  }

  private stampOf(a: Analysable): string {
    if (a.kind === 'file') return String(a.doc.version);
    return `${a.nb.version}:${a.cellDocs.map((d) => d?.version ?? '-').join(',')}`;
  }

  /** Path the engine reports and matches globs on: workspace-relative when inside a folder. */
  private enginePath(uri: string): string {
    const file = fsPath(uri);
    if (!file) return decodeURIComponent(uri.replace(/^[a-z-]+:/, ''));
    const folder = this.projects.folderOf(file);
    return folder ? path.relative(folder, file).split(path.sep).join('/') : file;
  }

  private sourceOf(a: Analysable): SourceDocument | null {
    const p = this.enginePath(a.uri);
    if (a.kind === 'notebook') {
      const cells: NotebookCell[] = a.nb.cells.map((c, i) => ({
        kind: c.kind === NotebookCellKind.Code ? 'code' : 'markdown',
        text: a.cellDocs[i]?.getText() ?? '',
        language: a.cellDocs[i]?.languageId,
      }));
      return notebookDocument(p, cells);
    }
    const text = a.doc.getText();
    if (a.doc.languageId === 'python' || a.uri.endsWith('.py')) return pythonDocument(p, text);
    const kind = textFileKind(fsPath(a.uri) ?? decodeURIComponent(a.uri));
    return kind ? textDocument(p, text, kind) : null;
  }

  private state(key: string): DocState {
    let s = this.states.get(key);
    if (!s) this.states.set(key, (s = { generation: 0, timer: undefined, analyzer: new DocumentAnalyzer(), unit: null, published: [], sent: new Map() }));
    return s;
  }

  private opened(uri: string): void {
    const a = this.analysable(uri);
    if (a) this.schedule(a.uri, 0);
  }

  private async changed(uri: string, _saved: boolean): Promise<void> {
    const a = this.analysable(uri);
    if (!a) return;
    const settings = await this.settingsFor(a.uri);
    if (settings.run === 'onType') this.schedule(a.uri, DEBOUNCE_MS);
    else this.state(a.uri).generation++; // a stale result must not be published
  }

  private async saved(uri: string): Promise<void> {
    const file = fsPath(uri);
    if (file && isConfigFile(file)) {
      this.projects.clear();
      this.relintAll();
    }
    const a = this.analysable(uri);
    if (a && (await this.settingsFor(a.uri)).run === 'onSave') this.schedule(a.uri, 0);
  }

  private relintAll(): void {
    if (this.pullMode) {
      void this.connection.languages.diagnostics.refresh().catch(() => undefined);
      return;
    }
    for (const key of new Set([...this.documents.keys(), ...this.notebooks.cellTextDocuments.keys()])) {
      const a = this.analysable(key);
      if (a) this.schedule(a.uri, 0);
    }
  }

  /** Analyses the document after `delay` ms (push mode; pull clients ask when they want). */
  private schedule(key: string, delay: number): void {
    const state = this.state(key);
    const generation = ++state.generation;
    if (this.pullMode) return;
    if (state.timer) clearTimeout(state.timer);
    state.timer = setTimeout(() => {
      state.timer = undefined;
      // changes queued behind this timer are read first: a superseded analysis never starts
      setImmediate(() => void this.lint(key, generation).catch((e) => this.connection.console.error(`tpu-ready: ${(e as Error)?.stack ?? e}`)));
    }, delay);
  }

  private forget(uri: string): void {
    const a = this.analysable(uri);
    if (a && a.uri !== uri) {
      // a cell closed while its notebook stays open: the notebook's next change re-analyses it
      return;
    }
    const state = this.states.get(uri);
    if (!state) return;
    state.generation++;
    if (state.timer) clearTimeout(state.timer);
    if (!this.pullMode) for (const u of state.published) void this.connection.sendDiagnostics({ uri: u, diagnostics: [] });
    this.notifyAnalysed(uri, null);
    state.analyzer.dispose();
    this.states.delete(uri);
  }

  private ensureParser(): Promise<unknown> {
    return (this.parserReady ??= initParser(this.opts.wasmDir));
  }

  // -------------------------------------------------------------------------------------------
  // Settings and options

  private settingsFor(uri: string): Promise<EffectiveSettings> {
    if (!this.configurationRequests) return Promise.resolve(effectiveSettings(this.globalSettings));
    let s = this.settingsCache.get(uri);
    if (!s) {
      s = this.connection.workspace.getConfiguration({ scopeUri: uri, section: 'tpuReady' }).then(
        (v: ClientSettings | null) => effectiveSettings(v && typeof v === 'object' && Object.keys(v).length ? v : this.globalSettings),
        () => effectiveSettings(this.globalSettings),
      );
      this.settingsCache.set(uri, s);
    }
    return s;
  }

  private async optionsFor(uri: string): Promise<{ options: AnalyzeOptions | null; settings: EffectiveSettings }> {
    const settings = await this.settingsFor(uri);
    const file = fsPath(uri);
    if (!file) return { options: optionsForUntitled(settings), settings };
    return { options: this.projects.optionsFor(file, settings).options, settings };
  }

  // -------------------------------------------------------------------------------------------
  // Analysis

  /** Analyses the document now unless superseded (`generation`); publishes in push mode. Null when not analysed. */
  private async lint(key: string, generation?: number): Promise<Unit | null> {
    await this.ensureParser();
    const a = this.analysable(key);
    if (!a) return null;
    const { options, settings } = await this.optionsFor(a.uri);
    const state = this.state(a.uri);
    if (generation !== undefined && state.generation !== generation) return null;
    const source = this.sourceOf(a);
    const text = source ? analysedText(source) : '';
    if (!source || !options || text.length > settings.maxFileSize) {
      if (source && options) this.connection.console.info(`${this.enginePath(a.uri)}: ${text.length} characters, over tpuReady.maxFileSize; not analysed`);
      this.publish(state, null, a);
      return null;
    }
    const stamp = this.stampOf(a);
    // project scope: the module index gets this text first, so that the rules follow calls into the other modules
    const file = fsPath(a.uri);
    let affected: string[] = [];
    let importedBefore: string[] | null = null;
    if (file && source.kind === 'python' && state.lastText !== text) {
      state.lastText = text;
      importedBefore = this.projectModel.dependencies?.(file) ?? [];
      affected = this.projectModel.update(file, text);
    }
    // a notebook resolves its imports in the project too (it is no module: nothing imports it, the index keeps no text of it)
    const project = file && (source.kind === 'python' || source.kind === 'notebook') ? this.projectModel.viewFor?.(file) ?? null : null;
    let analysis;
    const t0 = performance.now();
    try {
      // a pathological file (deep nesting, a 200 KB expression) must not hold up the server on every edit
      const memory = { maxBytes: settings.memoryBudgetMb * 1024 * 1024, usage: memoryInUse };
      analysis = state.analyzer.analyze(source, RULES, { ...options, project, deadline: t0 + settings.fileBudgetMs, memory });
    } catch (e) {
      if (!(e instanceof BudgetExceeded)) throw e;
      const reason = budgetSkipReason(e, { ms: settings.fileBudgetMs, bytes: settings.memoryBudgetMb * 1024 * 1024 }, performance.now() - t0,
        { time: 'the setting tpuReady.analysis.fileBudgetMs', memory: 'the setting tpuReady.analysis.memoryBudgetMb' });
      this.connection.console.warn(`${this.enginePath(a.uri)}: not analysed: ${reason}`);
      this.publish(state, null, a, reason);
      return null;
    }
    for (const e of analysis.ruleErrors) this.connection.console.error(`${e.rule} failed on ${this.enginePath(a.uri)}: ${e.error}`);
    const versions = new Map<string, number>();
    if (a.kind === 'file') versions.set(a.uri, a.doc.version);
    else a.nb.cells.forEach((c, i) => a.cellDocs[i] && versions.set(c.document, a.cellDocs[i]!.version));
    const unit: Unit = {
      key: a.uri,
      stamp,
      source,
      options,
      findings: locateAll(analysis),
      cells: a.kind === 'notebook' ? a.nb.cells.map((c) => c.document) : null,
      versions,
      relevant: false,
    };
    unit.relevant = (mayMatch(text) && !isGeneratedAccel(text)) || unit.findings.length > 0;
    this.publish(state, unit, a);
    // files that import this one may find otherwise now (project scope), and so may the modules it imports (its
    // loops make their helpers hot), read after this analysis loaded its imports: re-analyse those that are open
    if (file) this.relintFiles(importedBefore ? [...new Set([...affected, ...importedBefore, ...(this.projectModel.dependencies?.(file) ?? [])])] : affected, file);
    return unit;
  }

  /**
   * The latest analysis of the document if it still describes the text, else a fresh one. A request waits for
   * it: an analysis scheduled meanwhile (a configuration change, an imported module re-analysed) supersedes the
   * one started here, and then this asks again rather than answer nothing (on save, VS Code would write the
   * file unfixed).
   */
  private async current(uri: string): Promise<Unit | null> {
    // superseded analyses come in bursts (a settings change re-analyses every open file; files created in the
    // workspace re-analyse their importers): ask again until one finishes, bounded by time rather than by count,
    // or a save participant gets no fix-all and VS Code writes the file unfixed
    const until = performance.now() + 30_000;
    for (let attempt = 0; attempt < 5 || performance.now() < until; attempt++) {
      const a = this.analysable(uri);
      if (!a) return null;
      const state = this.state(a.uri);
      if (state.unit && state.unit.stamp === this.stampOf(a)) return state.unit;
      if (state.timer) {
        clearTimeout(state.timer);
        state.timer = undefined;
      }
      const generation = ++state.generation;
      const unit = await this.lint(a.uri, generation);
      // null and not superseded: not analysable (too large, over its budget); superseded: ask again
      if (unit || this.states.get(a.uri) !== state || state.generation === generation) return unit;
    }
    return null;
  }

  /**
   * The current unit of `uri` when it was analysed from exactly the document `versions` the client names (none named:
   * any current unit). The client's changes may still be on their way: ask again for a short while, then null.
   */
  private async currentAt(uri: string, versions: Record<string, number> | undefined, token: CancellationToken): Promise<Unit | null> {
    const named = versions && typeof versions === 'object' ? Object.entries(versions).filter(([, v]) => typeof v === 'number') : [];
    const until = performance.now() + 1_000;
    for (;;) {
      const unit = await this.current(uri);
      if (!unit || !named.length || named.every(([u, v]) => unit.versions.get(u) === v)) return unit;
      if (token.isCancellationRequested || performance.now() >= until) return null;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private diagnosticsOf(unit: Unit): Map<string, Diagnostic[]> {
    const byUri = new Map<string, Diagnostic[]>();
    for (const u of unit.cells ?? [unit.key]) byUri.set(u, []);
    const locator = new Locator(unit.source);
    for (const f of unit.findings) {
      const uri = unit.cells ? (f.cell !== null ? unit.cells[f.cell] : undefined) : unit.key;
      if (uri) byUri.get(uri)?.push(this.toDiagnostic(f, uri, unit, locator));
    }
    // problems in [tool.tpu-ready] of an open pyproject.toml, as the extension shows them
    if (unit.source.kind === 'text' && unit.source.fileKind === 'pyproject' && this.init.configDiagnostics !== false) byUri.get(unit.key)?.push(...configDiagnostics(unit.source.text));
    return byUri;
  }

  private toDiagnostic(f: LocatedFinding, uri: string, unit: Unit, locator: Locator): Diagnostic {
    const range = { start: f.startPos, end: f.endPos };
    const data: DiagnosticData = { rule: f.rule, start: f.start, end: f.end, stamp: unit.stamp, fix: f.fix?.applicability ?? null };
    const related = [{ location: { uri, range }, message: `Checklist step ${f.step} of 10: ${STEP_TITLES[f.step] ?? ''}` }];
    for (const r of ((f as Finding & { related?: RelatedLike[] }).related ?? []) as RelatedLike[]) {
      const loc = this.relatedLocation(r, uri, unit, locator);
      if (loc) related.push({ location: loc, message: r.message ?? '' });
    }
    return {
      range,
      severity: SEVERITY[f.severity],
      code: f.rule,
      codeDescription: { href: docsUrl(f.rule) },
      source: LSP_SOURCE,
      message: f.message || f.rule,
      relatedInformation: related,
      data,
    };
  }

  private relatedLocation(r: RelatedLike, uri: string, unit: Unit, locator: Locator): { uri: string; range: { start: Position; end: Position } } | null {
    if (r.path) {
      const file = path.isAbsolute(r.path) ? r.path : path.join(this.projects.folderOf(fsPath(unit.key) ?? '') ?? this.projects.getFolders()[0] ?? '', r.path);
      if (!path.isAbsolute(file)) return null;
      const range = r.startPos && r.endPos ? { start: r.startPos, end: r.endPos } : { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } };
      return { uri: pathToFileURL(file).toString(), range };
    }
    // this document: placed by the engine (LocatedRelated), else from its offsets
    if (r.startPos && r.endPos) {
      const at = unit.cells && typeof r.cell === 'number' ? unit.cells[r.cell] : uri;
      return at ? { uri: at, range: { start: r.startPos, end: r.endPos } } : null;
    }
    if (typeof r.start !== 'number') return null;
    const placed = locator.locate({ rule: '', severity: 'hint', message: '', start: r.start, end: r.end ?? r.start, step: 1, effort: 1, fix: null });
    const at = unit.cells && placed.cell !== null ? unit.cells[placed.cell] : uri;
    return { uri: at, range: { start: placed.startPos, end: placed.endPos } };
  }

  private publish(state: DocState, unit: Unit | null, a: Analysable, skipped?: string): void {
    state.unit = unit;
    this.notifyAnalysed(a.uri, unit, state);
    if (this.pullMode) return;
    const byUri = unit ? this.diagnosticsOf(unit) : new Map<string, Diagnostic[]>();
    if (!unit) for (const u of a.kind === 'notebook' ? a.nb.cells.map((c) => c.document) : [a.uri]) byUri.set(u, []);
    // a file not analysed (over its budget) says so where a linter user looks: one information diagnostic on its first line
    const first = a.kind === 'notebook' ? a.nb.cells[0]?.document : a.uri;
    if (skipped && first) {
      const at = { line: 0, character: 0 };
      byUri.set(first, [{ range: { start: at, end: at }, severity: DiagnosticSeverity.Information, source: LSP_SOURCE, code: 'skipped', message: `TPU Ready did not analyse this file: ${skipped}` }]);
    }
    for (const old of state.published) if (!byUri.has(old)) void this.connection.sendDiagnostics({ uri: old, diagnostics: [] });
    // the notebook file may hold diagnostics from a workspace scan: its cells' live ones replace them
    if (a.kind === 'notebook' && this.scanned.delete(a.uri)) void this.connection.sendDiagnostics({ uri: a.uri, diagnostics: [] });
    if (a.kind === 'file') this.scanned.delete(a.uri);
    for (const old of state.sent.keys()) if (old && !byUri.has(old)) state.sent.delete(old);
    for (const [uri, diagnostics] of byUri) {
      const key = JSON.stringify(diagnostics, (k, v) => (k === 'stamp' ? undefined : v));
      if (state.sent.get(uri) === key) continue;
      state.sent.set(uri, key);
      void this.connection.sendDiagnostics({ uri, diagnostics });
    }
    state.published = [...byUri.keys()];
  }

  /** `tpuReady/didAnalyse`, for clients that asked for it (the extension's checklist, status bar and tree). */
  private notifyAnalysed(uri: string, unit: Unit | null, state?: DocState): void {
    if (!this.init.findingsNotifications) return;
    // without the fixes' edits (the client asks for code actions to apply them): a smaller message to decode on its thread
    const strip = (f: LocatedFinding) => (f.fix ? { ...f, fix: { ...f.fix, edits: [], imports: [] } } : f);
    if (!unit || !state) {
      if (state) state.sentFindings = undefined;
      const p: AnalysedParams = { uri, findings: unit ? unit.findings.map(strip) : null, relevant: unit?.relevant ?? false };
      void this.connection.sendNotification(AnalysedNotification.method, p);
      return;
    }
    // The client reads lines and columns, not offsets: a finding that moved only in offsets is the same. After an
    // edit only the findings between the unchanged head and tail are sent (typing on a line: that line's findings).
    const keys = unit.findings.map((f) => JSON.stringify(f, (k, v) => (k === 'start' || k === 'end' || k === 'edits' || k === 'imports' ? undefined : v)));
    const old = state.sentFindings;
    if (!old || old.relevant !== unit.relevant) {
      state.sentFindings = { keys, relevant: unit.relevant };
      const p: AnalysedParams = { uri, findings: unit.findings.map(strip), relevant: unit.relevant };
      void this.connection.sendNotification(AnalysedNotification.method, p);
      return;
    }
    let head = 0;
    while (head < keys.length && head < old.keys.length && keys[head] === old.keys[head]) head++;
    let tail = 0;
    while (tail < keys.length - head && tail < old.keys.length - head && keys[keys.length - 1 - tail] === old.keys[old.keys.length - 1 - tail]) tail++;
    if (head === keys.length && head === old.keys.length) return;
    state.sentFindings = { keys, relevant: unit.relevant };
    const p: AnalysedParams = { uri, findings: unit.findings.slice(head, keys.length - tail).map(strip), relevant: unit.relevant, keepHead: head, keepTail: tail };
    void this.connection.sendNotification(AnalysedNotification.method, p);
  }

  private async pulledDiagnostics(uri: string): Promise<Diagnostic[]> {
    const unit = await this.current(uri);
    return unit ? this.diagnosticsOf(unit).get(uri) ?? [] : [];
  }

  private async findingsOf(uri: string): Promise<FindingsResult | null> {
    const unit = await this.current(uri);
    if (!unit) return null;
    return { uri: unit.key, stamp: unit.stamp, findings: unit.findings, cells: unit.cells, relevant: unit.relevant };
  }

  // -------------------------------------------------------------------------------------------
  // Edits

  private supportsDocumentChanges(): boolean {
    return !!this.capabilities.workspace?.workspaceEdit?.documentChanges;
  }

  private supportsCreate(): boolean {
    return !!this.capabilities.workspace?.workspaceEdit?.resourceOperations?.includes('create');
  }

  /** The text edits turning the unit's text into `after`, per text document (the file, or each changed cell). */
  private textEdits(unit: Unit, after: SourceDocument): { uri: string; edits: TextEdit[] }[] {
    const one = (uri: string, before: string, next: string) => {
      const lines = new LineIndex(before);
      return { uri, edits: diffText(before, next).map((c) => ({ range: { start: lines.position(c.start), end: lines.position(c.end) }, newText: c.text })) };
    };
    const before = unit.source;
    if (before.kind === 'notebook' && after.kind === 'notebook') {
      const out: { uri: string; edits: TextEdit[] }[] = [];
      before.cells.forEach((cell, i) => {
        const next = after.cells[i];
        const uri = unit.cells?.[i];
        if (next && uri && next.text !== cell.text) out.push(one(uri, cell.text, next.text));
      });
      return out;
    }
    if (before.kind !== 'notebook' && after.kind !== 'notebook') return [one(unit.key, before.text, after.text)];
    return [];
  }

  /** The missing device-abstraction module for the unit's file, or null (present, or an unsaved file). */
  private missingAccel(unit: Unit): string | null {
    const file = fsPath(unit.key);
    if (!file) return null;
    const target = accelModulePath(file, unit.options.accelModule);
    const pkg = path.join(target.replace(/\.py$/, ''), '__init__.py');
    return fs.existsSync(target) || fs.existsSync(pkg) ? null : target;
  }

  /** A WorkspaceEdit of the unit's document changes, with the module created in it when asked and possible. */
  private workspaceEdit(unit: Unit, after: SourceDocument, createAccel: string | null): WorkspaceEdit {
    const perDoc = this.textEdits(unit, after).filter((d) => d.edits.length);
    if (!this.supportsDocumentChanges()) {
      return { changes: Object.fromEntries(perDoc.map((d) => [d.uri, d.edits])) };
    }
    const documentChanges: WorkspaceEdit['documentChanges'] = perDoc.map(
      (d): TextDocumentEdit => ({ textDocument: { uri: d.uri, version: unit.versions.get(d.uri) ?? null }, edits: d.edits }),
    );
    if (createAccel && this.supportsCreate()) {
      const uri = pathToFileURL(createAccel).toString();
      documentChanges.push({ kind: 'create', uri, options: { ignoreIfExists: true } });
      documentChanges.push({ textDocument: { uri, version: null }, edits: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: accelModuleSource(unit.options.accelModule) }] });
    }
    return { documentChanges };
  }

  /** Fix-all on the unit's text: the engine applies fixes until they converge. */
  private fixAll(unit: Unit, rule: string | null, cell?: number, step?: number): { after: SourceDocument; applied: number; needsAccel: boolean } | null {
    const only =
      rule === null && cell === undefined && step === undefined
        ? undefined
        : (f: Finding, doc: SourceDocument) =>
            (rule === null || f.rule === rule) && (cell === undefined || cellOf(doc, f.start) === cell) && (step === undefined || f.step === step);
    try {
      const r = fixDocument(unit.source, RULES, { ...unit.options, deadline: performance.now() + SCAN_FILE_BUDGET_MS }, { unsafe: rule !== null, only });
      return r.applied ? { after: r.doc, applied: r.applied, needsAccel: r.needsAccel } : null;
    } catch (e) {
      if (e instanceof BudgetExceeded) return null;
      throw e;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Code actions and commands

  private findingFor(unit: Unit, uri: string, d: Diagnostic): LocatedFinding | undefined {
    // a client may send back only part of the diagnostic (Neovim 0.7 keeps `source` and `range` apart from `data`)
    if (d.source !== undefined && d.source !== LSP_SOURCE) return undefined;
    const data = d.data as Partial<DiagnosticData> | undefined;
    const cell = unit.cells ? unit.cells.indexOf(uri) : null;
    if (data && data.stamp === unit.stamp && typeof data.start === 'number') {
      const f = unit.findings.find((x) => x.rule === data.rule && x.start === data.start && x.end === data.end);
      if (f) return f;
    }
    const code = typeof d.code === 'string' ? d.code : String(d.code ?? '');
    const same = (a: Position, b: Position | undefined) => !!b && a.line === b.line && a.character === b.character;
    return unit.findings.find((f) => f.rule === code && f.cell === cell && same(f.startPos, d.range?.start) && same(f.endPos, d.range?.end));
  }

  private async codeActions(p: CodeActionParams, token: CancellationToken): Promise<CodeAction[]> {
    const uri = p.textDocument.uri;
    const only = p.context.only;
    // fix-all asked for (on save, or the Source Action menu): the log says what came of it, since a save that
    // writes the file unfixed shows nothing else
    const source = !!only?.some((k) => asks([k], FIX_ALL_KIND) || k.startsWith('notebook'));
    const unit = await this.current(uri);
    if (!unit || token.isCancellationRequested) {
      if (source) this.connection.console.info(`fix-all on ${this.enginePath(uri)}: ${token.isCancellationRequested ? 'cancelled by the editor' : 'no analysis of this version (see above)'}`);
      return [];
    }
    const actions: CodeAction[] = [];
    if (asks(only, CodeActionKind.QuickFix)) actions.push(...this.quickFixes(unit, uri, p.context.diagnostics));
    // fix-all as a source action only when asked for (on save, or the Source Action menu): it re-analyses until fixes converge
    if (only && !token.isCancellationRequested) {
      const cell = unit.cells ? unit.cells.indexOf(uri) : -1;
      if (unit.cells && asks(only, NOTEBOOK_FIX_ALL_KIND) && only.some((k) => k.startsWith('notebook'))) {
        const a = this.sourceFixAll(unit, NOTEBOOK_FIX_ALL_KIND, undefined);
        if (a) actions.push(a);
      }
      if (only.some((k) => asks([k], FIX_ALL_KIND)) && !token.isCancellationRequested) {
        const a = this.sourceFixAll(unit, FIX_ALL_KIND, cell >= 0 ? cell : undefined);
        if (a) actions.push(a);
      }
    }
    if (source) {
      const outcome = token.isCancellationRequested ? 'cancelled by the editor' : actions.length ? (actions[0].edit ? 'fixes sent' : 'not fixed (see the message)') : 'nothing to fix';
      this.connection.console.info(`fix-all on ${this.enginePath(uri)} (version ${unit.stamp}): ${outcome}`);
    }
    return actions;
  }

  private quickFixes(unit: Unit, uri: string, diagnostics: Diagnostic[]): CodeAction[] {
    const actions: CodeAction[] = [];
    const rules = new Set<string>();
    let tree: ReturnType<typeof parsePython> | null = null;
    const text = analysedText(unit.source);
    try {
      for (const d of diagnostics) {
        const f = this.findingFor(unit, uri, d);
        if (!f) continue;
        const fix = f.fix;
        if (fix && fix.applicability !== 'display') {
          const batch = applyFixBatch(unit.source, [fix]);
          if (batch.applied.length) {
            const safe = fix.applicability === 'safe';
            const action: CodeAction = { title: safe ? fix.title : `${fix.title} (unsafe)`, kind: CodeActionKind.QuickFix, diagnostics: [d], isPreferred: safe };
            const accel = fix.needsAccel ? this.missingAccel(unit) : null;
            // an existing module that cannot serve the fix: nothing written, the client says why (or no fix offered)
            const refused = fix.needsAccel && !accel ? this.accelRefusal(unit, batch.doc) : null;
            if (refused) {
              const explain = this.refusalCommand(unit, refused, false);
              if (explain) actions.push({ ...action, command: explain });
            } else {
              action.edit = this.workspaceEdit(unit, batch.doc, accel);
              if (accel && !this.supportsCreate()) action.command = { title: 'Create the device-abstraction module', command: ServerCommand.CreateAccelModule, arguments: [unit.key] };
              actions.push(action);
            }
          }
        }
        let ignore: Edit;
        if (unit.source.kind !== 'text') {
          tree ??= parsePython(text);
          const node = tree.rootNode.descendantForIndex(f.start, Math.max(f.start, f.end - 1)) ?? tree.rootNode;
          ignore = suppressionEdit(text, node, f.rule);
        } else ignore = textSuppressionEdit(text, f.start, f.rule);
        const after = applyToDocument(unit.source, [ignore]);
        actions.push({ title: `Ignore ${f.rule} on this line`, kind: CodeActionKind.QuickFix, diagnostics: [d], edit: this.workspaceEdit(unit, after, null) });
        rules.add(f.rule);
      }
    } finally {
      tree?.delete();
    }
    const fixable = unit.findings.filter((f) => f.fix && f.fix.applicability !== 'display');
    for (const rule of rules) {
      const own = fixable.filter((f) => f.rule === rule);
      if (own.length < 2) continue;
      const unsafe = own.some((f) => f.fix!.applicability !== 'safe');
      const title = `Fix all ${rule} in this file${unsafe ? ' (unsafe)' : ''}`;
      actions.push(this.fixAllAction(unit, title, rule));
    }
    if (rules.size && fixable.filter((f) => f.fix!.applicability === 'safe').length >= 2) actions.push(this.fixAllAction(unit, FIX_ALL_TITLE, null));
    return actions;
  }

  private resolvesEdits(): boolean {
    return !!this.capabilities.textDocument?.codeAction?.resolveSupport?.properties.includes('edit') && !!this.capabilities.textDocument?.codeAction?.dataSupport;
  }

  /** A quick-fix running fix-all: its edit computed when picked (resolve), else a command that applies it. */
  private fixAllAction(unit: Unit, title: string, rule: string | null): CodeAction {
    if (this.resolvesEdits()) return { title, kind: CodeActionKind.QuickFix, data: { type: 'fixAll', uri: unit.key, rule } satisfies FixAllData };
    return { title, kind: CodeActionKind.QuickFix, command: { title, command: ServerCommand.FixAll, arguments: [unit.key, rule] } };
  }

  private async resolveCodeAction(action: CodeAction, token: CancellationToken): Promise<CodeAction> {
    const data = action.data as Partial<FixAllData> | undefined;
    if (data?.type !== 'fixAll' || typeof data.uri !== 'string') return action;
    const unit = await this.current(data.uri);
    if (!unit || token.isCancellationRequested) return action;
    const r = this.fixAll(unit, typeof data.rule === 'string' ? data.rule : null);
    if (!r) return action;
    const accel = r.needsAccel ? this.missingAccel(unit) : null;
    const refused = r.needsAccel && !accel ? this.accelRefusal(unit, r.after) : null;
    if (refused) {
      const explain = this.refusalCommand(unit, refused, false);
      return explain ? { ...action, command: explain } : action;
    }
    const resolved: CodeAction = { ...action, edit: this.workspaceEdit(unit, r.after, this.supportsCreate() ? accel : null) };
    if (accel && !this.supportsCreate()) resolved.command = { title: 'Create the device-abstraction module', command: ServerCommand.CreateAccelModule, arguments: [unit.key] };
    return resolved;
  }

  /** `tpuReady/fixEdit`: fix-all's edit on the document's current text, for the client to apply (with other files' edits). */
  private async fixEdit(p: FixEditParams, token: CancellationToken): Promise<FixEditResult> {
    const none: FixEditResult = { edit: null, applied: 0, accelToCreate: null, refused: null };
    const unit = p && typeof p.uri === 'string' ? await this.currentAt(p.uri, p.versions, token) : null;
    if (!unit || token.isCancellationRequested) return none;
    const r = this.fixAll(unit, typeof p.rule === 'string' ? p.rule : null, undefined, typeof p.step === 'number' ? p.step : undefined);
    if (!r) return none;
    const accel = r.needsAccel ? this.missingAccel(unit) : null;
    const refused = r.needsAccel && !accel ? this.accelRefusal(unit, r.after) : null;
    if (refused) return { ...none, refused };
    const create = p.createAccel && this.supportsCreate() ? accel : null;
    return { edit: this.workspaceEdit(unit, r.after, create), applied: r.applied, accelToCreate: create ? null : accel && pathToFileURL(accel).toString(), refused: null };
  }

  /**
   * Why the fixed text must not be written: the existing device-abstraction module lacks what the fixes call, or is
   * an older generated format (src/core/accelGate.ts, as the CLI decides). Null when it serves or is missing.
   */
  private accelRefusal(unit: Unit, after: SourceDocument): AccelRefusal | null {
    const file = fsPath(unit.key);
    if (!file) return null;
    const target = accelModulePath(file, unit.options.accelModule);
    const existing = this.openTextAt(target) ?? readModule(target);
    if (existing === null) return null;
    const folder = this.projects.folderOf(target);
    const label = folder ? path.relative(folder, target).split(path.sep).join('/') : target;
    const d = accelDecision(true, existing, analysedText(after), unit.options.accelModule, label);
    return d.kind === 'refuse' ? { module: pathToFileURL(target).toString(), message: d.message } : null;
  }

  /** The client's command that explains a refusal (and offers the update), when it named one. */
  private refusalCommand(unit: Unit, refused: AccelRefusal, quiet: boolean): { title: string; command: string; arguments: unknown[] } | null {
    const command = this.init.accelRefusalCommand;
    return command ? { title: 'Why not fixed', command, arguments: [unit.key, refused.message, quiet] } : null;
  }

  private sourceFixAll(unit: Unit, kind: string, cell: number | undefined): CodeAction | null {
    const r = this.fixAll(unit, null, cell);
    if (!r) return null;
    // the existing module cannot serve these fixes: write nothing, say why (once per module and reason, as on every save)
    const refused = r.needsAccel && !this.missingAccel(unit) ? this.accelRefusal(unit, r.after) : null;
    if (refused) {
      const explain = this.refusalCommand(unit, refused, true);
      return explain ? { title: cell === undefined ? FIX_ALL_TITLE : FIX_CELL_TITLE, kind, command: explain } : null;
    }
    // one resource only (on save VS Code drops actions touching other files): the module comes from a command
    const action: CodeAction = { title: cell === undefined ? FIX_ALL_TITLE : FIX_CELL_TITLE, kind, edit: this.workspaceEdit(unit, r.after, null) };
    if (r.needsAccel && this.missingAccel(unit)) action.command = { title: 'Create the device-abstraction module', command: ServerCommand.CreateAccelModule, arguments: [unit.key] };
    return action;
  }

  private async executeCommand(command: string, args: unknown[], token: CancellationToken): Promise<unknown> {
    switch (command) {
      case ServerCommand.FixAll: {
        const [uri, rule] = args as [string, string | null];
        const unit = typeof uri === 'string' ? await this.current(uri) : null;
        if (!unit || token.isCancellationRequested) return { applied: 0 };
        const r = this.fixAll(unit, typeof rule === 'string' ? rule : null);
        if (!r) return { applied: 0 };
        const accel = r.needsAccel ? this.missingAccel(unit) : null;
        const refused = r.needsAccel && !accel ? this.accelRefusal(unit, r.after) : null;
        if (refused) {
          void this.connection.window.showWarningMessage(`tpu-ready: ${refused.message}`);
          return { applied: 0, refused };
        }
        const res = await this.connection.workspace.applyEdit({ label: rule ? `Fix all ${rule}` : FIX_ALL_TITLE, edit: this.workspaceEdit(unit, r.after, accel) });
        if (res.applied && accel && !this.supportsCreate()) this.writeAccel(accel, unit.options.accelModule);
        return { applied: res.applied ? r.applied : 0 };
      }
      case ServerCommand.CreateAccelModule: {
        const [uri] = args as [string];
        const unit = typeof uri === 'string' ? await this.current(uri) : null;
        const target = unit && this.missingAccel(unit);
        if (!unit || !target) return null;
        if (this.supportsCreate()) {
          const res = await this.connection.workspace.applyEdit({ label: 'Create the device-abstraction module', edit: this.workspaceEdit(unit, unit.source, target) });
          return res.applied ? pathToFileURL(target).toString() : null;
        }
        return this.writeAccel(target, unit.options.accelModule) ? pathToFileURL(target).toString() : null;
      }
      case ServerCommand.ScanWorkspace:
        return (await this.scanWorkspace(token, undefined, false)).result;
      default:
        return null;
    }
  }

  /** Writes the module when the client cannot create files: inside a workspace folder only, never through a symlink. */
  private writeAccel(file: string, name: string): boolean {
    try {
      const roots = this.projects.getFolders();
      safeWriteFile(file, accelModuleSource(name), roots.length ? realRoots([...roots]) : [path.dirname(file)], 'create the device-abstraction module');
      return true;
    } catch (e) {
      this.connection.console.warn(`tpu-ready: ${(e as Error).message}`);
      return false;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Workspace scan

  /**
   * Analyses every candidate file of the workspace folders that is not open (open ones are live), with progress
   * and cancellation between files. `pull`: answers `workspace/diagnostic` reports; else pushes the diagnostics.
   */
  private async scanWorkspace(
    token: CancellationToken,
    progress: WorkDoneProgressReporter | undefined,
    pull: boolean,
    only?: string[],
  ): Promise<{ reports: WorkspaceDocumentDiagnosticReport[]; result: WorkspaceScanResult }> {
    await this.ensureParser();
    let reporter = progress;
    if (!reporter && !only && this.capabilities.window?.workDoneProgress) {
      try {
        reporter = await this.connection.window.createWorkDoneProgress();
      } catch {
        reporter = undefined;
      }
    }
    const files: string[] = [];
    if (only) {
      // these files only (a closed file the last scan reported on goes back to its text on disk)
      for (const u of only) {
        const f = fsPath(u);
        if (f && isCandidate(f) && this.projects.folderOf(f) && fs.existsSync(f)) files.push(f);
      }
    } else {
      for (const folder of this.projects.getFolders()) {
        for (const f of collectFiles([folder], folder, undefined, true).files) if (isCandidate(f) && files.length < MAX_SCAN_FILES) files.push(f);
      }
    }
    files.sort();
    reporter?.begin('TPU readiness: scanning the workspace', 0, `0/${files.length} files`, true);
    const open = new Set([...this.states.keys()]);
    const reports: WorkspaceDocumentDiagnosticReport[] = [];
    const scanned: ScannedFile[] = [];
    let done = 0;
    let cancelled = false;
    for (const file of files) {
      if (token.isCancellationRequested) {
        cancelled = true;
        break;
      }
      const uri = pathToFileURL(file).toString();
      if (!open.has(uri)) {
        const one = await this.scanFile(file, uri);
        if (one) {
          scanned.push(one.file);
          if (pull) reports.push({ kind: DocumentDiagnosticReportKind.Full, uri, version: null, items: one.diagnostics });
          else {
            if (one.diagnostics.length || this.scanned.has(uri)) void this.connection.sendDiagnostics({ uri, diagnostics: one.diagnostics });
            if (one.diagnostics.length) this.scanned.set(uri, one.file);
            else this.scanned.delete(uri);
          }
        }
      }
      done++;
      if (done % 10 === 0 || done === files.length) {
        reporter?.report(Math.round((100 * done) / Math.max(files.length, 1)), `${done}/${files.length} files`);
        await new Promise((r) => setImmediate(r)); // cancellation and edits get through between batches
      }
    }
    reporter?.done();
    if (!only) for (const s of this.states.values()) if (s.unit) scanned.push({ uri: s.unit.key, findings: s.unit.findings, relevant: s.unit.relevant });
    return { reports, result: { files: scanned, done, score: workspaceScore(scanned), cancelled } };
  }

  private async scanFile(file: string, uri: string): Promise<{ file: ScannedFile; diagnostics: Diagnostic[] } | null> {
    const { options, settings } = await this.optionsFor(uri);
    if (!options) return null;
    const read = readText(file, settings.maxFileSize * 4 + 4);
    if (read.text === undefined) return { file: { uri, findings: [], relevant: false, skipped: read.skipped }, diagnostics: [] };
    if (read.text.length > settings.maxFileSize) return { file: { uri, findings: [], relevant: false, skipped: 'over tpuReady.maxFileSize' }, diagnostics: [] };
    const p = this.enginePath(uri);
    let source: SourceDocument | null;
    try {
      if (file.endsWith('.py')) source = pythonDocument(p, normalizeLoneCr(read.text));
      else if (file.endsWith('.ipynb')) source = notebookDocument(p, parseIpynb(read.text).cells);
      else {
        const kind = textFileKind(file);
        source = kind ? textDocument(p, read.text, kind) : null;
      }
    } catch (e) {
      if (e instanceof NotebookFormatError) return { file: { uri, findings: [], relevant: false, skipped: e.message }, diagnostics: [] };
      throw e;
    }
    if (!source) return null;
    let findings: LocatedFinding[];
    try {
      const analysis = analyze(source, RULES, { ...options, deadline: performance.now() + SCAN_FILE_BUDGET_MS });
      analysis.tree?.delete();
      findings = locateAll(analysis);
    } catch (e) {
      if (e instanceof BudgetExceeded) return { file: { uri, findings: [], relevant: false, skipped: e.message }, diagnostics: [] };
      throw e;
    }
    const text = analysedText(source);
    const relevant = (mayMatch(text) && !isGeneratedAccel(text)) || findings.length > 0;
    const unit: Unit = { key: uri, stamp: 'disk', source, options, findings, cells: null, versions: new Map(), relevant };
    const locator = new Locator(source);
    const diagnostics = findings.map((f) => {
      if (f.cell === null) return this.toDiagnostic(f, uri, unit, locator);
      // cell positions do not map into the .ipynb JSON: anchor at the top and say where (as the extension's scan)
      const d = this.toDiagnostic({ ...f, startPos: { line: 0, character: 0 }, endPos: { line: 0, character: 0 } }, uri, unit, locator);
      d.message = `cell ${f.cell + 1}, line ${f.startPos.line + 1}: ${d.message}`;
      return d;
    });
    return { file: { uri, findings, relevant }, diagnostics };
  }
}

/**
 * `# tpu-ready: ignore[RULE]` for a finding in a project text file (requirements, Dockerfile, shell, YAML, .env,
 * TOML): a comment line of its own above the finding's line (merged into a directive already there), which the
 * engine honours (src/core/engine.ts analyzeText). Never a trailing comment: a Dockerfile instruction or a
 * `.env` value would take it as part of its arguments.
 */
export function textSuppressionEdit(text: string, offset: number, rule: string): Edit {
  const lines = new LineIndex(text);
  const line = lines.lineOf(offset);
  if (line > 0) {
    const above = lines.lineText(line - 1);
    const m = /#\s*tpu-ready:\s*ignore\[([^\]]*)\]/.exec(above);
    if (m && above.trimStart().startsWith('#')) {
      const ids = m[1].split(',').map((x) => x.trim()).filter(Boolean);
      if (!ids.includes(rule)) ids.push(rule);
      const start = lines.starts[line - 1] + m.index;
      return { start, end: start + m[0].length, text: `# tpu-ready: ignore[${ids.join(', ')}]` };
    }
  }
  const indent = /^[ \t]*/.exec(lines.lineText(line))![0];
  return { start: lines.starts[line], end: lines.starts[line], text: `${indent}# tpu-ready: ignore[${rule}]${detectEol(text)}` };
}

/** A pyproject.toml tpu-ready reads: one with a `[tool.tpu-ready]` table (or a dotted `tool.tpu-ready.` key). */
const OUR_PYPROJECT = /^\s*\[\s*tool\s*\.\s*"?tpu-ready"?\s*[\].]|^\s*tool\s*\.\s*"?tpu-ready"?\s*\./m;

/** Problems in `[tool.tpu-ready]` (invalid TOML, unknown keys, bad values) at their line, else the table header, else line 1. */
export function configDiagnostics(text: string): Diagnostic[] {
  if (!OUR_PYPROJECT.test(text)) return [];
  const lines = text.split(/\r?\n/);
  const header = configHeaderLine(text);
  return parseProjectConfig(text).problems.map((p: ConfigProblem): Diagnostic => {
    const n = Math.min(Math.max((p.line ?? header ?? 1) - 1, 0), lines.length - 1);
    const line = lines[n] ?? '';
    const start = line.length - line.trimStart().length;
    const invalid = /not valid TOML/.test(p.message);
    return {
      range: { start: { line: n, character: start }, end: { line: n, character: Math.max(line.trimEnd().length, start) } },
      severity: invalid ? DiagnosticSeverity.Error : DiagnosticSeverity.Warning,
      source: LSP_SOURCE,
      code: invalid ? 'config-toml' : 'config',
      message: p.message,
    };
  });
}

function optionsForUntitled(settings: EffectiveSettings): AnalyzeOptions | null {
  // no file, no project: the client's settings over the defaults
  return coreOptionsFor({}, settings.core, '', null);
}

/** Starts the server on `connection` (stdio, node-ipc or a socket: the caller chose). */
export function startServer(connection: Connection, opts: ServerOptions): TpuReadyServer {
  const server = new TpuReadyServer(connection, opts);
  server.listen();
  connection.listen();
  return server;
}
