/**
 * Live diagnostics: analyses open Python files, project text files and Jupyter notebooks as they
 * change (debounced, incremental re-parse, never publishing a result for an older version), and
 * keeps for every published diagnostic the finding it came from, so code actions only map (fixes
 * are computed here, at lint time, by the engine).
 */
import * as vscode from 'vscode';
import v8 from 'node:v8';
import { budgetSkipReason } from '../core/budget';
import { analyze, analysedText, BudgetExceeded, locateAll, mayMatch, textFileKind, type SourceDocument } from '../core/engine';
import { initParser, treeEditFor, type Tree } from '../core/parse';
import type { AnalyzeOptions, LocatedFinding } from '../core/types';
import { RULES } from '../rules';
import type { ConfigService } from './config';
import { readSettings } from './config';
import { toDiagnostic, toRange, SOURCE, type DocumentTarget } from './convert';
import { documentSource, NOTEBOOK_TYPE, notebookSource } from './notebooks';
import type { Results } from './results';
import { changedSpan } from '../core/textDiff';
import { isGeneratedAccel } from '../core/accel';
import { WorkspaceProjects } from './project';
import { normalizePath } from '../model/project';

/** Delay between the last keystroke and the analysis (markdownlint throttles at 500 ms). */
export const DEBOUNCE_MS = 300;

/** Schemes of documents worth analysing (not git, output, diff or settings views). */
const SCHEMES = new Set(['file', 'untitled', 'vscode-remote', 'vscode-vfs']);

/** A file (Python or a project text file) or a whole notebook: the unit the engine analyses. */
export type Analysable = { kind: 'file'; doc: vscode.TextDocument } | { kind: 'notebook'; nb: vscode.NotebookDocument };

/** One analysis result: what was analysed (exact text and versions), with which options, and what was found. */
export interface Unit {
  key: string;
  target: DocumentTarget;
  source: SourceDocument;
  options: AnalyzeOptions;
  /** Versions of the document (or notebook and cells) analysed. */
  stamp: string;
  findings: LocatedFinding[];
}

export interface FindingRef {
  unit: Unit;
  finding: LocatedFinding;
}

interface DocState {
  generation: number;
  timer: NodeJS.Timeout | undefined;
  /** Tree of `treeText`, kept for the next incremental re-parse. */
  tree: Tree | null;
  treeText: string | null;
  unit: Unit | null;
  /** Uris diagnostics were published on (the file, or the notebook's cells). */
  published: vscode.Uri[];
}

export function isNotebookCell(doc: vscode.TextDocument): boolean {
  return doc.uri.scheme === 'vscode-notebook-cell';
}

export function isAnalysableFile(doc: vscode.TextDocument): boolean {
  if (!SCHEMES.has(doc.uri.scheme)) return false;
  return doc.languageId === 'python' || doc.uri.path.endsWith('.py') || textFileKind(doc.uri.path) !== null;
}

/** The notebook a cell document belongs to. */
export function notebookOf(cell: vscode.TextDocument): vscode.NotebookDocument | undefined {
  const key = cell.uri.toString();
  return vscode.workspace.notebookDocuments.find((nb) => nb.getCells().some((c) => c.document.uri.toString() === key));
}

export function analysableFor(doc: vscode.TextDocument): Analysable | null {
  if (isNotebookCell(doc)) {
    const nb = notebookOf(doc);
    return nb && nb.notebookType === NOTEBOOK_TYPE ? { kind: 'notebook', nb } : null;
  }
  return isAnalysableFile(doc) ? { kind: 'file', doc } : null;
}

export function uriOf(a: Analysable): vscode.Uri {
  return a.kind === 'file' ? a.doc.uri : a.nb.uri;
}

export function stampOf(a: Analysable): string {
  if (a.kind === 'file') return String(a.doc.version);
  return `${a.nb.version}:${a.nb.getCells().map((c) => c.document.version).join(',')}`;
}

/** JS heap plus external memory (tree-sitter's WebAssembly heap is an external ArrayBuffer). */
function memoryInUse(): number {
  const h = v8.getHeapStatistics();
  return h.used_heap_size + h.external_memory;
}

export function targetOf(a: Analysable): DocumentTarget {
  return a.kind === 'file' ? { uri: a.doc.uri, cells: null } : { uri: a.nb.uri, cells: a.nb.getCells().map((c) => c.document.uri) };
}

/** The document as the engine sees it, built from the editor's current text. */
export function sourceOf(a: Analysable): SourceDocument | null {
  return a.kind === 'file' ? documentSource(a.doc) : notebookSource(a.nb);
}

function isClosed(a: Analysable): boolean {
  return a.kind === 'file' ? a.doc.isClosed : a.nb.isClosed;
}

export class Linter implements vscode.Disposable {
  readonly collection = vscode.languages.createDiagnosticCollection(SOURCE);
  private readonly states = new Map<string, DocState>();
  private readonly refs = new WeakMap<vscode.Diagnostic, FindingRef>();
  private readonly disposables: vscode.Disposable[] = [this.collection];
  private readonly linted = new vscode.EventEmitter<Unit>();
  /** Fires after a document's diagnostics were published. */
  readonly onDidLint = this.linted.event;
  private readonly forgotten = new vscode.EventEmitter<vscode.Uri>();
  /** Fires when a file or notebook was closed and its diagnostics cleared. */
  readonly onDidForget = this.forgotten.event;

  constructor(
    private readonly wasmDir: string,
    private readonly config: ConfigService,
    private readonly results: Results,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(this.linted, this.forgotten, this.projects);
  }

  /** Project scope: the modules an open file imports; a changed module re-analyses its open dependants. */
  private readonly projects = new WorkspaceProjects((paths) => this.relintPaths(paths));

  /** Analyses again the open Python files among `paths` (normalized file paths). */
  private relintPaths(paths: string[]): void {
    if (!paths.length) return;
    const wanted = new Set(paths);
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === 'file' && !isNotebookCell(doc) && isAnalysableFile(doc) && wanted.has(normalizePath(doc.uri.fsPath))) this.schedule({ kind: 'file', doc }, DEBOUNCE_MS);
    }
  }

  /** Subscribes to document events and analyses the documents already open. */
  start(): void {
    const ws = vscode.workspace;
    this.disposables.push(
      ws.onDidOpenTextDocument((doc) => {
        if (!isNotebookCell(doc) && isAnalysableFile(doc)) this.schedule({ kind: 'file', doc }, 0);
      }),
      ws.onDidChangeTextDocument((e) => {
        if (!e.contentChanges.length) return;
        const a = analysableFor(e.document);
        if (a && readSettings(uriOf(a)).run === 'onType') this.schedule(a, DEBOUNCE_MS);
      }),
      ws.onDidSaveTextDocument((doc) => {
        const a = analysableFor(doc);
        if (a && readSettings(uriOf(a)).run === 'onSave') this.schedule(a, 0);
      }),
      ws.onDidCloseTextDocument((doc) => {
        if (!isNotebookCell(doc)) this.forget(doc.uri);
      }),
      ws.onDidOpenNotebookDocument((nb) => {
        if (nb.notebookType === NOTEBOOK_TYPE) this.schedule({ kind: 'notebook', nb }, 0);
      }),
      ws.onDidChangeNotebookDocument((e) => {
        // cell text edits also arrive as text document changes; this covers cells added, removed or moved
        if (e.notebook.notebookType === NOTEBOOK_TYPE && e.contentChanges.length && readSettings(e.notebook.uri).run === 'onType') {
          this.schedule({ kind: 'notebook', nb: e.notebook }, DEBOUNCE_MS);
        }
      }),
      ws.onDidSaveNotebookDocument((nb) => {
        if (nb.notebookType === NOTEBOOK_TYPE && readSettings(nb.uri).run === 'onSave') this.schedule({ kind: 'notebook', nb }, 0);
      }),
      ws.onDidCloseNotebookDocument((nb) => this.forget(nb.uri)),
      this.config.onDidChange(() => this.relintAll()),
    );
    this.relintAll();
  }

  /** Analyses every open document again (settings or project configuration changed). */
  relintAll(): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (!isNotebookCell(doc) && isAnalysableFile(doc)) this.schedule({ kind: 'file', doc }, 0);
    }
    for (const nb of vscode.workspace.notebookDocuments) {
      if (nb.notebookType === NOTEBOOK_TYPE) this.schedule({ kind: 'notebook', nb }, 0);
    }
  }

  /** Whether a file or notebook is open (then its diagnostics are live, not from a scan). */
  isOpen(uri: vscode.Uri): boolean {
    const key = uri.toString();
    return (
      vscode.workspace.textDocuments.some((d) => d.uri.toString() === key) ||
      vscode.workspace.notebookDocuments.some((nb) => nb.uri.toString() === key)
    );
  }

  private state(key: string): DocState {
    let s = this.states.get(key);
    if (!s) this.states.set(key, (s = { generation: 0, timer: undefined, tree: null, treeText: null, unit: null, published: [] }));
    return s;
  }

  /** Analyses `a` after `delay` ms; any analysis of it already scheduled or running is superseded. */
  schedule(a: Analysable, delay: number): void {
    const state = this.state(uriOf(a).toString());
    const generation = ++state.generation;
    if (state.timer) clearTimeout(state.timer);
    state.timer = setTimeout(() => {
      state.timer = undefined;
      void this.lint(a, generation);
    }, delay);
  }

  private ensureParser(): Promise<unknown> {
    return initParser(this.wasmDir);
  }

  private async lint(a: Analysable, generation: number): Promise<void> {
    const uri = uriOf(a);
    const key = uri.toString();
    const state = this.state(key);
    try {
      await this.ensureParser();
      const { options, settings } = await this.config.optionsFor(uri);
      // superseded by a newer edit, or closed, while waiting: publish nothing
      if (state.generation !== generation || isClosed(a)) return;
      const source = sourceOf(a);
      const text = source ? analysedText(source) : '';
      if (!source || !options || text.length > settings.maxFileSize) {
        if (source && options) this.log.info(`${vscode.workspace.asRelativePath(uri)}: ${text.length} characters, over tpuReady.maxFileSize; not analysed`);
        this.clear(key, state);
        return;
      }
      const stamp = stampOf(a);
      let old: Tree | null = null;
      if (state.tree && state.treeText !== null) {
        const span = changedSpan(state.treeText, text);
        if (span) state.tree.edit(treeEditFor(state.treeText, span.start, span.oldEnd, span.newText));
        old = state.tree;
      }
      state.tree = null;
      state.treeText = null;
      const t0 = Date.now();
      let analysis: ReturnType<typeof analyze> | undefined;
      try {
        // a pathological file (deep nesting, a 200 KB expression) must not stall the extension host on every edit
        const project = source.kind === 'python' ? this.projects.prepare(uri, text) : { index: null, dependants: [] };
        this.relintPaths(project.dependants);
        // (time and memory: tpuReady.analysis.fileBudgetMs / memoryBudgetMb)
        const memory = { maxBytes: settings.memoryBudgetMb * 1024 * 1024, usage: memoryInUse };
        analysis = analyze(source, RULES, { ...options, project: project.index, deadline: performance.now() + settings.fileBudgetMs, memory }, old);
      } catch (e) {
        if (!(e instanceof BudgetExceeded)) throw e;
        const reason = budgetSkipReason(e, { ms: settings.fileBudgetMs, bytes: settings.memoryBudgetMb * 1024 * 1024 }, Date.now() - t0,
          { time: 'the setting tpuReady.analysis.fileBudgetMs', memory: 'the setting tpuReady.analysis.memoryBudgetMb' });
        this.log.warn(`${vscode.workspace.asRelativePath(uri)}: not analysed: ${reason}`);
        this.clear(key, state);
        this.publishSkipped(state, targetOf(a), reason);
        return;
      } finally {
        if (old && old !== analysis?.tree) old.delete();
      }
      state.tree = analysis.tree;
      state.treeText = analysis.tree ? text : null;
      for (const e of analysis.ruleErrors) this.log.error(`${e.rule} failed on ${vscode.workspace.asRelativePath(uri)}: ${e.error}`);
      const unit: Unit = { key, target: targetOf(a), source, options, stamp, findings: locateAll(analysis) };
      this.publish(state, unit);
      this.results.set({ uri, findings: unit.findings, relevant: (mayMatch(text) && !isGeneratedAccel(text)) || unit.findings.length > 0, origin: 'live' });
      this.log.trace(`${vscode.workspace.asRelativePath(uri)}: ${unit.findings.length} findings in ${Date.now() - t0} ms${old ? ' (incremental)' : ''}`);
      this.linted.fire(unit);
    } catch (e) {
      this.log.error(`analysing ${uri.toString(true)} failed: ${(e as Error)?.stack ?? e}`);
    }
  }

  private publish(state: DocState, unit: Unit): void {
    const byUri = new Map<string, [vscode.Uri, vscode.Diagnostic[]]>();
    for (const u of unit.target.cells ?? [unit.target.uri]) byUri.set(u.toString(), [u, []]);
    for (const f of unit.findings) {
      const uri = unit.target.cells ? (f.cell !== null ? unit.target.cells[f.cell] : undefined) : unit.target.uri;
      if (!uri) continue;
      const d = toDiagnostic(f, uri, undefined, (cell) => unit.target.cells?.[cell]);
      this.refs.set(d, { unit, finding: f });
      byUri.get(uri.toString())![1].push(d);
    }
    for (const old of state.published) if (!byUri.has(old.toString())) this.collection.delete(old);
    // a notebook's file uri may hold diagnostics from a workspace scan: the cells' live ones replace them
    if (unit.target.cells) this.collection.delete(unit.target.uri);
    this.collection.set([...byUri.values()]);
    state.published = [...byUri.values()].map(([u]) => u);
    state.unit = unit;
  }

  /** A file not analysed (over its budget) says so where a linter user looks: one information diagnostic on its first line. */
  private publishSkipped(state: DocState, target: DocumentTarget, reason: string): void {
    const uri = target.cells ? target.cells[0] : target.uri;
    if (!uri) return;
    const d = new vscode.Diagnostic(new vscode.Range(0, 0, 0, 0), `TPU Ready did not analyse this file: ${reason}`, vscode.DiagnosticSeverity.Information);
    d.source = SOURCE;
    d.code = 'skipped';
    this.collection.set(uri, [d]);
    state.published = [uri];
  }

  private clear(key: string, state: DocState): void {
    for (const u of state.published) this.collection.delete(u);
    state.published = [];
    state.unit = null;
    state.tree?.delete();
    state.tree = null;
    state.treeText = null;
    this.results.delete(vscode.Uri.parse(key));
  }

  /** A document closed: cancel its analysis and clear its diagnostics. */
  forget(uri: vscode.Uri): void {
    const key = uri.toString();
    const state = this.states.get(key);
    if (!state) return;
    state.generation++;
    if (state.timer) clearTimeout(state.timer);
    this.clear(key, state);
    this.states.delete(key);
    this.forgotten.fire(uri);
  }

  /** The latest analysis of the file or notebook `uri` (a notebook's file uri, not a cell's). */
  unitOf(uri: vscode.Uri): Unit | null {
    return this.states.get(uri.toString())?.unit ?? null;
  }

  /** Whether a unit still describes the document as it is now (else its offsets are stale). */
  isCurrent(unit: Unit): boolean {
    const a = this.analysableOf(unit.target.uri);
    return !!a && stampOf(a) === unit.stamp;
  }

  /** The open file or notebook at `uri`. */
  analysableOf(uri: vscode.Uri): Analysable | null {
    const key = uri.toString();
    const nb = vscode.workspace.notebookDocuments.find((n) => n.uri.toString() === key);
    if (nb) return { kind: 'notebook', nb };
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
    return doc ? { kind: 'file', doc } : null;
  }

  /** The finding a diagnostic was made from (the same object VS Code hands back to code action providers). */
  refOf(doc: vscode.TextDocument, d: vscode.Diagnostic): FindingRef | undefined {
    const ref = this.refs.get(d);
    if (ref) return ref;
    // a copy of our diagnostic: match it by rule and range within the document's latest analysis
    const a = analysableFor(doc);
    const unit = a && this.unitOf(uriOf(a));
    if (!unit) return undefined;
    const code = typeof d.code === 'object' ? d.code.value : d.code;
    const cell = unit.target.cells ? unit.target.cells.findIndex((u) => u.toString() === doc.uri.toString()) : null;
    const finding = unit.findings.find((f) => f.rule === code && f.cell === cell && toRange(f).isEqual(d.range));
    return finding ? { unit, finding } : undefined;
  }

  dispose(): void {
    for (const s of this.states.values()) {
      if (s.timer) clearTimeout(s.timer);
      s.tree?.delete();
    }
    this.states.clear();
    for (const d of this.disposables) d.dispose();
  }
}
