/** One file: read, analyse, optionally fix. Shared by the CLI's main thread and its workers. */
import type { Evidence } from '../evidence';
import v8 from 'node:v8';
import { readRegularFile, ReadRefused } from './safefs';
import {
  analyze, analysedText, BudgetExceeded, fixDocument, locateAll, notebookDocument, pythonDocument, textDocument, textFileKind,
  type SourceDocument,
} from '../core/engine';
import { editIpynb, NotebookFormatError, parseIpynb, type ParsedIpynb } from '../core/notebook';
import { LineIndex, normalizeLoneCr, restoreLoneCr } from '../core/source';
import { RULES } from '../rules';
import { isGeneratedAccel } from '../core/accel';
import { ProjectIndex } from '../model/project';
import path from 'node:path';
import fs from 'node:fs';
import { budgetSkipReason } from '../core/budget';
import type { AnalyzeOptions, Applicability, Severity, Step, Effort, LocatedRelated, OutputRelated, OutputSpan } from '../core/types';

export interface FileTask {
  abs: string;
  /** Path shown in output (relative to the working directory). */
  display: string;
  options: AnalyzeOptions;
  /** Apply fixes (safe; unsafe too when `unsafe`). */
  fix: { unsafe: boolean } | null;
  maxBytes: number;
  /** Time budget for analysing (and fixing) the file, ms: past it the file is skipped with the reason. */
  budgetMs?: number;
  /** Memory budget for analysing (and fixing) the file, bytes of JS heap and WebAssembly memory added. */
  memoryBytes?: number;
  /**
   * Project scope (issue 9): the roots imports resolve in and the working directory display paths are relative to.
   * Each thread builds one index per root set, lazily: a module is read and parsed when a file first imports it.
   */
  project?: { roots: string[]; cwd: string } | null;
}

const indexes = new Map<string, ProjectIndex>();

/** The thread's project index for a root set (modules are read through the safe reader, with the size limit). */
export function projectIndexFor(spec: { roots: string[]; cwd: string }, maxBytes: number): ProjectIndex {
  const key = `${spec.cwd}\0${spec.roots.join('\0')}\0${maxBytes}`;
  let index = indexes.get(key);
  if (!index) {
    index = new ProjectIndex(spec.roots, {
      readFile(p) {
        if (!p.endsWith('.py')) return null;
        const r = readText(p, maxBytes);
        return r.text === undefined ? null : normalizeLoneCr(r.text.charCodeAt(0) === 0xfeff ? r.text.slice(1) : r.text);
      },
      listPython: listPythonFiles,
    }, { cwd: spec.cwd });
    indexes.set(key, index);
  }
  return index;
}

const SKIP_DIRS = /^(\.|node_modules$|__pycache__$|site-packages$|venv$|env$|build$|dist$)/;

/** The .py files under `root` (no hidden, cache, virtualenv or build folders; symlinks not followed), at most `max`. */
export function listPythonFiles(root: string, max: number): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 8 || out.length >= max) return;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (out.length >= max) return;
      if (e.isDirectory()) {
        if (!SKIP_DIRS.test(e.name)) walk(path.join(dir, e.name), depth + 1);
      } else if (e.isFile() && e.name.endsWith('.py')) out.push(path.join(dir, e.name).split(path.sep).join('/'));
    }
  };
  walk(root, 0);
  return out;
}

/** Drops the thread's project indexes (tests; a long-lived host between runs). */
export function disposeProjectIndexes(): void {
  for (const i of indexes.values()) i.dispose();
  indexes.clear();
}

/** Default per-file budget: a pathological file must not hold up a scan (or an editor). */
export const DEFAULT_FILE_BUDGET_MS = 10_000;

/**
 * Default per-file memory budget: a 2 MB file of short lines (the largest the default --max-file-size lets in)
 * stays under it; a worker never reaches V8's heap limit (an out-of-memory crash loses the whole scan).
 */
export const DEFAULT_FILE_MEMORY_BYTES = 1024 * 1024 * 1024;

/** JS heap plus external memory (tree-sitter's WebAssembly heap is an external ArrayBuffer). */
export function memoryInUse(): number {
  const h = v8.getHeapStatistics();
  return h.used_heap_size + h.external_memory;
}

export interface OutFinding extends OutputSpan {
  rule: string;
  severity: Severity;
  message: string;
  step: Step;
  effort: Effort;
  fix: { applicability: Applicability; title: string } | null;
  /** "runtime" for findings read from a run's log (src/evidence); absent for static ones. */
  source?: 'runtime';
  /** What the run measured: on runtime findings, and on static findings the run confirmed. */
  evidence?: Evidence;
  /** Other places of the same problem (issue 9); `path` is the display path of another file, else this one. */
  related?: OutRelated[];
}

export type OutRelated = OutputRelated;

export interface FileOutcome {
  display: string;
  abs: string;
  kind: 'python' | 'notebook' | 'text' | null;
  findings: OutFinding[];
  /** Why the file was not analysed (size, binary, encoding, broken notebook). */
  skipped?: string;
  /** The file should have been analysed but could not be (unreadable, broken notebook): exit code 2. */
  failed?: boolean;
  /** The file uses torch: it counts toward the workspace score. */
  relevant: boolean;
  /** Why fixes were not applied (the file has syntax errors). */
  fixSkipped?: string;
  /** Present when fixing changed the file. */
  fixed?: { applied: number; before: string; after: string; needsAccel: boolean; rules: string[] };
  ruleErrors: { rule: string; error: string }[];
}

/** The largest notebook file read (outputs included); its cells' text must still fit the --max-file-size limit. */
export const NOTEBOOK_MAX_BYTES = 64 * 1024 * 1024;

export function readText(abs: string, maxBytes: number): { text?: string; skipped?: string; failed?: boolean } {
  let buf: Buffer;
  try {
    buf = readRegularFile(abs, maxBytes);
  } catch (e) {
    if (e instanceof ReadRefused) return e.tooLarge ? { skipped: e.message } : { skipped: `cannot read: ${e.message}`, failed: true };
    return { skipped: `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, failed: true };
  }
  if (buf.subarray(0, 8192).includes(0)) return { skipped: 'binary file' };
  try {
    // ignoreBOM: keep a UTF-8 BOM in the text (the default drops it) so that a fixed file keeps it
    return { text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(buf) };
  } catch {
    return { skipped: 'not valid UTF-8' };
  }
}

/** How another module's normalized path is shown (relative to the working directory, as the CLI shows files). */
export type DisplayPath = (normalizedPath: string) => string;

function toOut(display: string, doc: SourceDocument, findings: ReturnType<typeof locateAll>, project?: { textOf(p: string): string | null; show: DisplayPath } | null): OutFinding[] {
  const cellLines = new Map<number | null, LineIndex>();
  const li = (cell: number | null) => {
    let x = cellLines.get(cell);
    if (!x) cellLines.set(cell, (x = new LineIndex(cell === null || doc.kind !== 'notebook' ? (doc.kind === 'notebook' ? '' : doc.text) : doc.cells[cell].text)));
    return x;
  };
  const other = new Map<string, LineIndex | null>();
  const relatedOut = (r: LocatedRelated): OutRelated | null => {
    let lines: LineIndex | null;
    if (r.path === undefined) lines = li(r.cell);
    else {
      lines = other.get(r.path) ?? null;
      if (!other.has(r.path)) {
        const t = project?.textOf(r.path) ?? null;
        other.set(r.path, (lines = t === null ? null : new LineIndex(t)));
      }
    }
    if (!lines) return null;
    return {
      path: r.path === undefined ? display : project?.show(r.path) ?? r.path,
      line: r.startPos.line + 1,
      column: lines.codePointColumn(r.startPos.line, r.startPos.character),
      endLine: r.endPos.line + 1,
      endColumn: lines.codePointColumn(r.endPos.line, r.endPos.character),
      cell: r.path === undefined ? r.cell : null,
      message: r.message,
    };
  };
  return findings.map((f) => {
    const lines = li(f.cell);
    const related = (f.related ?? []).map(relatedOut).filter((r): r is OutRelated => !!r);
    return {
      ...(related.length ? { related } : {}),
      path: display,
      rule: f.rule,
      severity: f.severity,
      line: f.startPos.line + 1,
      column: lines.codePointColumn(f.startPos.line, f.startPos.character),
      endLine: f.endPos.line + 1,
      endColumn: lines.codePointColumn(f.endPos.line, f.endPos.character),
      cell: f.cell,
      message: f.message,
      step: f.step,
      effort: f.effort,
      fix: f.fix ? { applicability: f.fix.applicability, title: f.fix.title } : null,
    };
  });
}

/**
 * The first analysis in a process compiles the tree-sitter queries and the rules' code (~0.3 s): done once, off
 * the clock, so that it is not charged to whichever file comes first (a small file was skipped under a short
 * --file-budget when the file before it had stopped early).
 */
let warmedUp = false;
const WARM_UP = 'import torch\nfor x in loader:\n    loss = model(x.cuda()).sum()\n    loss.backward()\n    print(loss.item())\n';
function warmUp(options: AnalyzeOptions): void {
  if (warmedUp) return;
  warmedUp = true;
  try {
    analyze(pythonDocument('warm-up.py', WARM_UP), RULES, options).tree?.delete();
  } catch {
    // a warm-up only
  }
}

export function processFile(task: FileTask): FileOutcome {
  if (/\.(py|pyi|ipynb)$/.test(task.abs)) warmUp(task.options);
  const budget = task.budgetMs ?? DEFAULT_FILE_BUDGET_MS;
  const memory = task.memoryBytes ?? DEFAULT_FILE_MEMORY_BYTES;
  const t0 = performance.now();
  try {
    return processWithin({ ...task, options: { ...task.options, deadline: t0 + budget, memory: { maxBytes: memory, usage: memoryInUse } } });
  } catch (e) {
    if (!(e instanceof BudgetExceeded)) throw e;
    const skipped = budgetSkipReason(e, { ms: budget, bytes: memory }, performance.now() - t0, { time: '--file-budget', memory: '--memory-budget' });
    return { display: task.display, abs: task.abs, kind: null, findings: [], relevant: false, ruleErrors: [], skipped };
  }
}

function processWithin(task0: FileTask): FileOutcome {
  const project = task0.project ? projectIndexFor(task0.project, task0.maxBytes) : null;
  const task = project ? { ...task0, options: { ...task0.options, project } } : task0;
  const out: FileOutcome = { display: task.display, abs: task.abs, kind: null, findings: [], relevant: false, ruleErrors: [] };
  const notebook = task.abs.endsWith('.ipynb');
  // a notebook's outputs (plots, images) are not analysed: the size limit applies to its cells' text, and the file
  // itself may be larger, up to NOTEBOOK_MAX_BYTES
  const read = readText(task.abs, notebook ? Math.max(task.maxBytes, NOTEBOOK_MAX_BYTES) : task.maxBytes);
  if (read.skipped) return { ...out, skipped: read.skipped, failed: read.failed };
  let raw = read.text!;
  const bom = raw.charCodeAt(0) === 0xfeff;
  if (bom) raw = raw.slice(1);

  let doc: SourceDocument;
  let nb: ParsedIpynb | null = null;
  if (task.abs.endsWith('.ipynb')) {
    try {
      nb = parseIpynb(raw);
    } catch (e) {
      if (e instanceof NotebookFormatError) return { ...out, kind: 'notebook', skipped: `broken notebook: ${e.message}`, failed: true };
      throw e;
    }
    if (nb.language !== 'python') return { ...out, kind: 'notebook', skipped: `notebook language is ${nb.language}` };
    const cellBytes = nb.cells.reduce((n, c) => n + Buffer.byteLength(c.text, 'utf8'), 0);
    if (cellBytes > task.maxBytes) {
      return { ...out, kind: 'notebook', skipped: `cells larger than ${Math.round(task.maxBytes / 1024)} KiB (${Math.round(cellBytes / 1024)} KiB, outputs not counted)` };
    }
    // a lone CR ends a line for Python but not for the parser's comments: analyse with it as LF (same
    // length, so every offset holds) and restore it in fixed cells, as for .py files
    doc = notebookDocument(task.display, nb.cells.map((c) => ({ ...c, text: normalizeLoneCr(c.text) })));
  } else if (task.abs.endsWith('.py') || task.abs.endsWith('.pyi')) {
    doc = pythonDocument(task.display, normalizeLoneCr(raw));
  } else {
    const kind = textFileKind(task.abs);
    if (!kind) return { ...out, skipped: 'not a Python, notebook or project file' };
    doc = textDocument(task.display, raw, kind);
  }
  out.kind = doc.kind;

  if (task.fix) {
    const result = fixDocument(doc, RULES, { ...task.options, releaseTree: true }, { unsafe: task.fix.unsafe });
    if (result.syntaxErrors) out.fixSkipped = 'not fixed: the file has syntax errors (fix them first)';
    if (result.applied > 0) {
      let after: string;
      if (doc.kind === 'notebook' && result.doc.kind === 'notebook' && nb) {
        const changed = new Map<number, string>();
        const original = nb.cells;
        result.doc.cells.forEach((c, i) => {
          const norm = normalizeLoneCr(original[i].text);
          if (norm !== c.text) changed.set(i, restoreLoneCr(original[i].text, norm, c.text));
        });
        after = editIpynb(raw, nb, changed);
      } else after = doc.kind === 'python' ? restoreLoneCr(raw, doc.text, analysedText(result.doc)) : analysedText(result.doc);
      out.fixed = { applied: result.applied, before: (bom ? '\ufeff' : '') + raw, after: (bom ? '\ufeff' : '') + after, needsAccel: result.needsAccel, rules: result.appliedRules };
      doc = result.doc;
    }
  }

  // the CLI never re-parses a file incrementally: tree-sitter's tree goes once mirrored (src/core/mirror.ts)
  const analysis = analyze(doc, RULES, { ...task.options, releaseTree: true });
  out.relevant = (analysis.sema?.usesTorch() ?? false) && !isGeneratedAccel(analysedText(doc));
  const cwd = task.project?.cwd;
  out.findings = toOut(task.display, doc, locateAll(analysis), project && cwd ? { textOf: (p) => project.textOf(p), show: (p) => path.relative(cwd, p) || path.basename(p) } : null);
  out.ruleErrors = analysis.ruleErrors;
  analysis.tree?.delete();
  return out;
}
