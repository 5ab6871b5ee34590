/**
 * Runs rules over a Python file or a notebook's combined program, locates findings, and applies
 * fixes until they converge. Pure: hosts pass text in and write results out.
 */
import { countErrors, parsePython, type Node, type Tree } from './parse';
import { Semantics } from './semantics';
import { detectEol, interner, LineIndex } from './source';
import { combineCells, spanAt, type CombinedProgram, type NotebookCell } from './notebook';
import { collectSuppressions, isSuppressed } from './suppress';
import { selectNonOverlapping, applyEdits } from './edits';
import { importEdits, importsAfterUse } from './imports';
import { indentationError } from './indent';
import { Idioms } from './idioms';
import { ProgramModel } from '../model';
import { isSelected, type ReportOptions, type Rule, type RuleContext, type TextContext } from './rule';
import type { AnalyzeOptions, Edit, Finding, ImportSpec, LocatedFinding, LocatedRelated, RelatedLocation, Severity } from './types';
import type { ProjectView } from '../model/project';
import { projectResolver } from '../model/crossModule';
import { hotDefsOf } from '../model/hotAcross';
import { registerSemantics } from '../model/guards';
import { trainsOnCpuOnly } from '../model/placement';
import { arm, budgetRule, budgetTick, checkBudget, disarm, BudgetExceeded } from './budget';
import { releaseTree } from './mirror';

export { BudgetExceeded };

export interface PythonDocument {
  kind: 'python';
  path: string;
  text: string;
}

export interface NotebookDocument {
  kind: 'notebook';
  path: string;
  cells: NotebookCell[];
  program: CombinedProgram;
}

/** Non-Python project files some rules read: requirements, Dockerfiles, shell and env files, launch YAML. */
export type TextFileKind = 'requirements' | 'pyproject' | 'setup-cfg' | 'conda' | 'dockerfile' | 'shell' | 'dotenv' | 'yaml';

export interface TextDocument {
  kind: 'text';
  path: string;
  text: string;
  fileKind: TextFileKind;
}

export type SourceDocument = PythonDocument | NotebookDocument | TextDocument;

/** The kind of a non-Python file by its name, or null when no rule reads it. */
export function textFileKind(filePath: string): TextFileKind | null {
  const base = filePath.split(/[\\/]/).pop() ?? '';
  if (/^requirements.*\.(txt|in)$/i.test(base) || /\.requirements\.txt$/i.test(base) || /^constraints.*\.txt$/i.test(base)) return 'requirements';
  if (base === 'pyproject.toml') return 'pyproject';
  if (base === 'setup.cfg') return 'setup-cfg';
  if (/^(environment|conda)[\w.-]*\.ya?ml$/i.test(base)) return 'conda';
  if (/^(Dockerfile|Containerfile)(\..*)?$/.test(base) || /\.dockerfile$/i.test(base)) return 'dockerfile';
  if (/\.(sh|bash|zsh|slurm|sbatch)$/i.test(base)) return 'shell';
  if (/^\.env(\..*)?$/.test(base) || /\.env$/.test(base)) return 'dotenv';
  if (/\.ya?ml$/i.test(base)) return 'yaml';
  return null;
}

export function textDocument(path: string, text: string, fileKind: TextFileKind): TextDocument {
  return { kind: 'text', path, text, fileKind };
}

export function pythonDocument(path: string, text: string): PythonDocument {
  return { kind: 'python', path, text };
}

export function notebookDocument(path: string, cells: NotebookCell[]): NotebookDocument {
  return { kind: 'notebook', path, cells, program: combineCells(cells) };
}

/** The text rules analyse: the file, or the notebook's combined program. */
export function analysedText(doc: SourceDocument): string {
  return doc.kind === 'notebook' ? doc.program.text : doc.text;
}

export interface Analysis {
  doc: SourceDocument;
  findings: Finding[];
  /** Null when the prefilter showed no rule can match (the file was not parsed). */
  tree: Tree | null;
  sema: Semantics | null;
  /** Rules that threw: reported, never fatal. */
  ruleErrors: { rule: string; error: string }[];
  /** The project view the analysis ran with (locates related locations in other modules). */
  project?: ProjectView | null;
}

/**
 * Words one of which must occur for any rule to match: files without them are not parsed. The host reads
 * (`.item()`, `.cpu()`, `.numpy()`) are there for helper modules that never import torch but receive tensors from
 * another module's training loop (project scope makes them hot).
 */
const PREFILTER = /torch|cuda|xla|tpu|nccl|jax|flax|optax|apex|deepspeed|triton|flash_attn|xformers|bitsandbytes|cupy|numba|nvidia|nvml|GPUtil|accelerate|lightning|transformers|tensorflow|PJRT|CUBLAS|\.item\(\)|\.cpu\(\)|\.numpy\(\)/i;

export function mayMatch(text: string): boolean {
  return PREFILTER.test(text);
}

let ruleTimings: Map<string, number> | null = null;

/**
 * Time spent in each rule's check (ms, summed over analyses) into `into`, or stop with null: what
 * `npm run bench` prints as its per-rule table (like ESLint's TIMING). Shared primitives are lazy, so
 * a rule is charged for the facts it is the first to ask for.
 */
export function collectRuleTimings(into: Map<string, number> | null): void {
  ruleTimings = into;
}

let phaseTimings: Map<string, number> | null = null;

/**
 * Time spent in each phase of an analysis (ms, summed over analyses) into `into`, or stop with null: `parse`
 * (tree-sitter, incremental when an old tree is given), `mirror` (the tree mirror, src/core/mirror.ts, built on
 * the first `rootNode`), `semantics` (the node index and the import table), `rules` (every rule's check, the
 * program model included: it is built lazily by the first rule asking) and `assemble` (sorting and merging the
 * findings). What the bench's incremental section prints to say where a re-analysis spends its time.
 */
export function collectPhaseTimings(into: Map<string, number> | null): void {
  phaseTimings = into;
}

function lap(phase: string, t0: number): number {
  const now = performance.now();
  if (phaseTimings) phaseTimings.set(phase, (phaseTimings.get(phase) ?? 0) + now - t0);
  return now;
}

/**
 * The trigrams of a text, hashed into a 2^16-bit set (a Bloom filter with one hash): a trigger one of whose trigrams is
 * not in it does not occur in the text. The rules' 265 distinct triggers each searched the whole text (265 passes over
 * a small file cost about as much as parsing it, measured on the bench's torch-dense corpus); one pass builds this, and
 * only triggers whose every trigram is in it are searched (`includes` decides: a false positive costs a search, and
 * there are no false negatives).
 */
function trigramHash(a: number, b: number, c: number): number {
  return (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b) ^ Math.imul(c, 0xc2b2ae35)) >>> 16;
}

export class TriggerSearch {
  private readonly seen = new Map<string, boolean>();
  private built = false;
  private readonly bits = new Uint32Array(2048);
  constructor(private readonly text: string) {}

  private build(): void {
    const bits = this.bits;
    const text = this.text;
    for (let i = 2, n = text.length; i < n; i++) {
      const h = trigramHash(text.charCodeAt(i - 2), text.charCodeAt(i - 1), text.charCodeAt(i));
      bits[h >>> 5] |= 1 << (h & 31);
    }
    this.built = true;
  }

  /** Whether `t` occurs in the text (`text.includes(t)`), each distinct trigger searched once. */
  has(t: string): boolean {
    let hit = this.seen.get(t);
    if (hit !== undefined) return hit;
    hit = true;
    if (t.length >= 3) {
      if (!this.built) this.build();
      const bits = this.bits;
      for (let i = 2; i < t.length; i++) {
        const h = trigramHash(t.charCodeAt(i - 2), t.charCodeAt(i - 1), t.charCodeAt(i));
        if (!(bits[h >>> 5] & (1 << (h & 31)))) {
          hit = false;
          break;
        }
      }
    }
    if (hit) hit = this.text.includes(t);
    this.seen.set(t, hit);
    return hit;
  }
}

/** Whether a rule's trigger strings occur in the text; each distinct trigger is searched once per text. */
function triggered(rule: Rule, search: TriggerSearch): boolean {
  if (rule.triggers.length === 0) return true;
  for (const t of rule.triggers) if (search.has(t)) return true;
  return false;
}

export function downgrade(sev: Severity): Severity {
  return sev === 'error' ? 'warning' : sev === 'warning' ? 'info' : 'hint';
}

export function analyze(doc: SourceDocument, rules: Rule[], options: AnalyzeOptions, oldTree?: Tree | null): Analysis {
  const text = analysedText(doc);
  const result: Analysis = { doc, findings: [], tree: null, sema: null, ruleErrors: [], project: options.project ?? null };
  if (doc.kind === 'text') return analyzeText(doc, rules, options, result);
  // most files of a tree never mention torch or an accelerator: one regex, before any per-rule trigger search
  if (!mayMatch(text)) return result;
  const seenTriggers = new TriggerSearch(text);
  const active = rules.filter(
    (r) => !!r.check && isSelected(r.id, options.select, options.ignore) && (!r.notebookOnly || doc.kind === 'notebook') && (!r.profiles || r.profiles.includes(options.target.profile)) && triggered(r, seenTriggers),
  );
  if (!active.length) return result;
  const prevBudget = arm(options.deadline, options.memory);
  let t = phaseTimings ? performance.now() : 0;
  let tree: Tree;
  try {
    // the budget reaches into the parse (src/core/parse.ts): a stopped parse throws BudgetExceeded, and disarms here
    tree = parsePython(text, oldTree);
  } catch (e) {
    disarm(prevBudget);
    throw e;
  }
  try {
    checkBudget();
    if (phaseTimings) {
      t = lap('parse', t);
      void tree.rootNode;
      t = lap('mirror', t);
    }
    if (options.releaseTree) releaseTree(tree);
    const sema = new Semantics(tree, text);
    if (phaseTimings) t = lap('semantics', t);
    // project scope: functions of this file that other modules' hot loops call are hot here too
    const project = options.project;
    if (project && doc.kind === 'python') sema.useProjectHot(() => hotDefsOf(project, doc.path));
    result.tree = tree;
    result.sema = sema;
    runRules(doc, text, tree, sema, active, options, result);
    if (phaseTimings) t = lap('rules', t);
  } catch (e) {
    // over budget (time or memory): the tree goes now, the caller reports the file as skipped
    if (e instanceof BudgetExceeded) tree.delete();
    throw e;
  } finally {
    disarm(prevBudget);
  }
  result.findings.sort((a, b) => a.start - b.start || a.rule.localeCompare(b.rule));
  result.findings = mergeSameProblem(result.findings, text);
  if (phaseTimings) lap('assemble', t);
  return result;
}

function runRules(doc: PythonDocument | NotebookDocument, text: string, tree: Tree, sema: Semantics, active: Rule[], options: AnalyzeOptions, result: Analysis): void {
  const lines = new LineIndex(text);
  const suppressions = collectSuppressions(sema.nodes('comment'), lines);
  const idiom = new Idioms(options);
  const seen = new Set<string>();
  const intern = interner();
  // the program model is built on first use, once per file: files whose rules never ask pay nothing
  let model: ProgramModel | undefined;
  const modelOf = () => (model ??= new ProgramModel(sema, doc.path, options.project ? [projectResolver(options.project)] : []));
  // the CUDA guards (src/model/guards.ts) answer a bare node: they find this file's index, project and model here
  registerSemantics(sema, options.project ?? null, modelOf);
  for (const rule of active) {
    if (rule.deviceWork && trainsOnCpuOnly(sema, options.project ?? null, doc.path)) continue;
    const ctx: RuleContext = {
      path: doc.path,
      text,
      root: tree.rootNode,
      sema,
      get model() {
        return modelOf();
      },
      options,
      notebook: doc.kind === 'notebook' ? doc.program : null,
      idiom,
      project: options.project ?? null,
      report(at: Node | { start: number; end: number }, opts: ReportOptions = {}) {
        budgetTick();
        const start = 'startIndex' in at ? at.startIndex : at.start;
        const end = 'endIndex' in at ? at.endIndex : at.end;
        const anchor = 'startIndex' in at ? at : tree.rootNode.descendantForIndex(start, Math.max(start, end - 1)) ?? tree.rootNode;
        if (isSuppressed(suppressions, rule.id, anchor, lines)) return;
        const key = `${rule.id}:${start}:${end}`;
        if (seen.has(key)) return;
        seen.add(key);
        result.findings.push(makeFinding(rule, start, end, opts, intern));
      },
    };
    budgetRule(rule.id);
    checkBudget();
    const t0 = ruleTimings ? performance.now() : 0;
    try {
      rule.check!(ctx);
    } catch (e) {
      if (e instanceof BudgetExceeded) throw e;
      result.ruleErrors.push({ rule: rule.id, error: (e as Error)?.stack ?? String(e) });
    }
    if (ruleTimings) ruleTimings.set(rule.id, (ruleTimings.get(rule.id) ?? 0) + performance.now() - t0);
  }
}

/**
 * Two rules that describe one problem on one expression: the first keeps the finding, the second's is dropped
 * when its range lies inside the first's (and `drop`/`keep` match the messages, when given). A rule run alone
 * (`--select`) still reports: this only merges findings that were both produced.
 */
const SAME_PROBLEM: { keep: string; drop: string; keepMsg?: RegExp; dropMsg?: RegExp }[] = [
  // a dtype picker keyed on CUDA: TPU302 names the dtype it evaluates to; the CUDA probes inside it are that picker's keys
  { keep: 'TPU302', drop: 'TPU103', keepMsg: /dtype picker/ },
  // `torch.cuda.nvtx.*` raises without a CUDA build (TPU104); "records nothing" (TPU805) says less
  { keep: 'TPU104', drop: 'TPU805' },
  // a legacy dynamo backend name: one rename
  { keep: 'TPU111', drop: 'TPU801', dropMsg: /legacy name/ },
  // `torch_xla.amp.GradScaler` removed: TPU303 removes the scaler
  { keep: 'TPU303', drop: 'TPU111', keepMsg: /GradScaler/ },
  // `torch.cuda.device_count()` / launcher env as a sampler's num_replicas/rank: TPU402 has the fix
  { keep: 'TPU402', drop: 'TPU503' },
  // `mp.spawn(nprocs=torch.cuda.device_count())`
  { keep: 'TPU502', drop: 'TPU103', dropMsg: /device_count/ },
  // a slice truncated to the batch's longest sequence: TPU404 says what it is
  { keep: 'TPU404', drop: 'TPU203' },
  // CUDA autocast with float16: TPU301's rewrite (bf16 on XLA) answers TPU302's point too
  { keep: 'TPU301', drop: 'TPU302', keepMsg: /bf16|bfloat16/, dropMsg: /^Autocast with/ },
];

function sameEdits(a: Finding, b: Finding): boolean {
  if (!a.fix || !b.fix || a.fix.edits.length !== b.fix.edits.length || !a.fix.edits.length) return false;
  return a.fix.edits.every((e, i) => e.start === b.fix!.edits[i].start && e.end === b.fix!.edits[i].end && e.text === b.fix!.edits[i].text);
}

const SEVERITY_RANK: Record<Severity, number> = { error: 3, warning: 2, info: 1, hint: 0 };

/** One finding per problem (issue 9): drops a finding that another rule's finding on the same expression covers. */
export function mergeSameProblem(findings: Finding[], text: string): Finding[] {
  if (findings.length < 2) return findings;
  const dropped = new Set<Finding>();
  // only findings that overlap `d` (or contain it) can drop it: found by a binary search on the sorted starts and a
  // backward scan bounded by the running maximum of ends, in array order as before (all pairs made 30,000
  // findings take seconds)
  const maxEnd: number[] = [];
  for (let i = 0, m = -Infinity; i < findings.length; i++) maxEnd.push((m = Math.max(m, findings[i].end)));
  const sorted = findings.every((f, i) => i === 0 || findings[i - 1].start <= f.start);
  const near: Finding[] = [];
  for (const d of findings) {
    near.length = 0;
    if (!sorted) near.push(...findings);
    else {
      let lo = 0, hi = findings.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (findings[mid].start <= d.end) lo = mid + 1;
        else hi = mid;
      }
      for (let j = lo - 1; j >= 0 && maxEnd[j] >= d.start; j--) if (findings[j].end >= d.start) near.push(findings[j]);
      near.reverse();
    }
    for (const k of near) {
      if (k === d || k.rule === d.rule || dropped.has(k)) continue;
      const inside = d.start >= k.start && d.end <= k.end;
      // two rules whose fixes make the same edits (TPU204 and TPU401 both wrapping the loop's loader) report
      // one problem: keep the more severe, else the one whose range covers the other's
      if (sameEdits(k, d) && d.start < k.end && k.start < d.end) {
        const kr = SEVERITY_RANK[k.severity], dr = SEVERITY_RANK[d.severity];
        const kw = k.end - k.start, dw = d.end - d.start;
        if (kr > dr || (kr === dr && (kw > dw || (kw === dw && k.rule < d.rule)))) {
          dropped.add(d);
          break;
        }
        continue;
      }
      if (!inside) continue;
      const pair = SAME_PROBLEM.find((p) => p.keep === k.rule && p.drop === d.rule && (!p.keepMsg || p.keepMsg.test(k.message)) && (!p.dropMsg || p.dropMsg.test(d.message)));
      if (pair) {
        dropped.add(d);
        break;
      }
    }
  }
  if (!dropped.size) return mergeSameLine(findings, text);
  // a dropped duplicate becomes a related location of the finding that covers it (issue 9: keep, do not lose)
  const keptBy = new Map<Finding, Finding[]>();
  for (const d of dropped) {
    const k = findings.find((f) => !dropped.has(f) && f !== d && f.start <= d.start && f.end >= d.end) ?? findings.find((f) => !dropped.has(f) && f !== d && f.start < d.end && d.start < f.end);
    if (!k) continue;
    keptBy.set(k, [...(keptBy.get(k) ?? []), d]);
  }
  const kept = findings.filter((f) => !dropped.has(f)).map((f) => {
    const ds = keptBy.get(f);
    return ds ? { ...f, related: [...(f.related ?? []), ...ds.map((d) => asRelated(d))] } : f;
  });
  return mergeSameLine(kept, text);
}

/** A finding folded into another one, as a related location that names its rule. */
function asRelated(d: Finding): RelatedLocation {
  return { start: d.start, end: d.end, message: `${d.rule}: ${d.message}` };
}

/** The message with its code spans blanked: two findings of one rule with the same template say the same thing. */
const template = (m: string) => m.replace(/`[^`]*`/g, '``');

/**
 * One rule reporting the same thing several times in one statement line (`a.item(), b.item(), c.item()` logged
 * together, two boolean-mask reads): one finding, naming the others. Findings whose fixes differ stay apart
 * (`x.half(), y.half()`: each fix edits its own expression); the same fix (one step closure for the whole line) merges.
 */
function mergeSameLine(findings: Finding[], text: string): Finding[] {
  // where the line of an offset starts (the index of the "\n" before it, or -1): a binary search over the file's "\n"s
  // (a `lastIndexOf` per finding walked back over a whole 200 KB line each time)
  const newlines: number[] = [];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) newlines.push(i);
  const lineOf = (off: number) => {
    const at = Math.max(0, off - 1);
    let lo = 0, hi = newlines.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (newlines[mid] <= at) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 ? newlines[lo - 1] : -1;
  };
  const sorted = findings.every((f, i) => i === 0 || findings[i - 1].start <= f.start);
  if (!sorted) return mergeSameLineScan(findings, text, lineOf);
  const out: Finding[] = [];
  // `out` keeps the findings' start order. The finding f merges into is the first of `out` on f's line (those are at the
  // end of `out`: found by a binary search) whose rule, severity, message template and fix edits are f's: kept per that
  // key as ascending indices into `out` (scanning the line's findings made 20,000 findings on one line quadratic)
  const byKey = new Map<string, number[]>();
  // a kept finding's message is compared without its "(also … on this line)", the new finding's as it is
  const keyOf = (k: Finding, line: number, kept = true): string | null => {
    const fix = !k.fix ? 'n' : k.fix.edits.length ? 'e' + k.fix.edits.map((e) => `${e.start},${e.end},${e.text.length}:${e.text}`).join('\0') : null;
    return fix === null ? null : `${k.rule}\0${k.severity}\0${line}\0${template(kept ? k.message.replace(/ \(also .* on this line\)$/, '') : k.message)}\0${fix}`;
  };
  const index = (i: number, line: number) => {
    const key = keyOf(out[i], line);
    if (key === null) return;
    const list = byKey.get(key);
    if (!list) byKey.set(key, [i]);
    else {
      let at = list.length;
      while (at > 0 && list[at - 1] > i) at--;
      list.splice(at, 0, i);
    }
  };
  const unindex = (i: number, line: number) => {
    const key = keyOf(out[i], line);
    const list = key === null ? undefined : byKey.get(key);
    const at = list ? list.indexOf(i) : -1;
    if (at >= 0) list!.splice(at, 1);
  };
  const lineOfOut: number[] = [];
  for (const f of findings) {
    const line = lineOf(f.start);
    // the first index of `out` whose finding starts on f's line or later (every start in `out` is <= f.start)
    let lo = 0, hi = out.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (out[mid].start > line) hi = mid;
      else lo = mid + 1;
    }
    const from = lo;
    const key = keyOf(f, line, false);
    let prevAt = -1;
    const list = key === null ? undefined : byKey.get(key);
    if (list) {
      let a = 0, b = list.length;
      while (a < b) {
        const mid = (a + b) >> 1;
        if (list[mid] < from) a = mid + 1;
        else b = mid;
      }
      for (let j = a; j < list.length && prevAt < 0; j++) {
        const k = out[list[j]];
        if (lineOfOut[list[j]] === line && !text.slice(k.start, f.start).includes('\n')) prevAt = list[j];
      }
    }
    if (prevAt < 0) {
      out.push(f);
      lineOfOut.push(line);
      index(out.length - 1, line);
      continue;
    }
    const prev = out[prevAt];
    const name = /`[^`]*`/.exec(f.message)?.[0] ?? '';
    const also = / \(also (.*) on this line\)$/.exec(prev.message);
    const base = also ? prev.message.slice(0, also.index) : prev.message;
    const prevLine = lineOfOut[prevAt];
    unindex(prevAt, prevLine);
    out[prevAt] = { ...prev, end: Math.max(prev.end, f.end), message: `${base} (also ${also ? `${also[1]}, ` : ''}${name} on this line)`, related: [...(prev.related ?? []), asRelated(f), ...(f.related ?? [])] };
    index(prevAt, prevLine);
  }
  return out;
}

/** mergeSameLine for findings not in start order: every earlier finding is a candidate. */
function mergeSameLineScan(findings: Finding[], text: string, lineOf: (off: number) => number): Finding[] {
  const out: Finding[] = [];
  for (const f of findings) {
    const line = lineOf(f.start);
    let prev: Finding | undefined;
    for (let i = 0; i < out.length && !prev; i++) {
      const k = out[i];
      if ((f.fix ? sameEdits(k, f) : !k.fix) && k.rule === f.rule && k.severity === f.severity && lineOf(k.start) === line
        && !text.slice(k.start, f.start).includes('\n') && template(k.message.replace(/ \(also .* on this line\)$/, '')) === template(f.message)) prev = k;
    }
    if (!prev) {
      out.push(f);
      continue;
    }
    const name = /`[^`]*`/.exec(f.message)?.[0] ?? '';
    const also = / \(also (.*) on this line\)$/.exec(prev.message);
    const base = also ? prev.message.slice(0, also.index) : prev.message;
    const i = out.indexOf(prev);
    out[i] = { ...prev, end: Math.max(prev.end, f.end), message: `${base} (also ${also ? `${also[1]}, ` : ''}${name} on this line)`, related: [...(prev.related ?? []), asRelated(f), ...(f.related ?? [])] };
  }
  return out;
}

function analyzeText(doc: TextDocument, rules: Rule[], options: AnalyzeOptions, result: Analysis): Analysis {
  const lines = new LineIndex(doc.text);
  const fileIgnore = /#\s*tpu-ready:\s*ignore-file\b(?:\[([^\]]*)\])?/.exec(doc.text);
  const idsOf = (list: string | undefined) => (list === undefined ? null : list.split(',').map((x) => x.trim().toUpperCase()).filter(Boolean));
  const suppressed = (rule: string, start: number) => {
    if (fileIgnore) {
      const ids = idsOf(fileIgnore[1]);
      if (!ids || !ids.length || ids.includes(rule)) return true;
    }
    const line = lines.lineOf(start);
    for (const l of [line, line - 1]) {
      if (l < 0) continue;
      const m = /#\s*tpu-ready:\s*ignore\b(?:\[([^\]]*)\])?/.exec(lines.lineText(l));
      if (!m || (l === line - 1 && !lines.lineText(l).trimStart().startsWith('#'))) continue;
      const ids = idsOf(m[1]);
      if (!ids || !ids.length || ids.includes(rule)) return true;
    }
    return false;
  };
  const seen = new Set<string>();
  for (const rule of rules) {
    if (!rule.checkText || !rule.textKinds?.includes(doc.fileKind) || !isSelected(rule.id, options.select, options.ignore)) continue;
    if (rule.profiles && !rule.profiles.includes(options.target.profile)) continue;
    const ctx: TextContext = {
      path: doc.path,
      text: doc.text,
      fileKind: doc.fileKind,
      options,
      idiom: new Idioms(options),
      lines,
      report(at, opts = {}) {
        if (suppressed(rule.id, at.start)) return;
        const key = `${rule.id}:${at.start}:${at.end}`;
        if (seen.has(key)) return;
        seen.add(key);
        result.findings.push(makeFinding(rule, at.start, at.end, opts));
      },
    };
    try {
      rule.checkText(ctx);
    } catch (e) {
      result.ruleErrors.push({ rule: rule.id, error: (e as Error)?.stack ?? String(e) });
    }
  }
  result.findings.sort((a, b) => a.start - b.start || a.rule.localeCompare(b.rule));
  return result;
}

function makeFinding(rule: Rule, start: number, end: number, opts: ReportOptions, intern: (s: string) => string = (s) => s): Finding {
  const draft = opts.fix;
  const related = opts.related?.length ? { related: opts.related.slice() } : {};
  // the finding keeps the related locations given at report time: a rule that fills its list afterwards would lose
  // them silently, so the list is frozen here and a late push throws (a rule error, which the fixture tests assert on)
  if (opts.related && !Object.isFrozen(opts.related)) Object.freeze(opts.related);
  // equal strings of many findings are kept once (src/core/source.ts interner): edits' texts in place, unless frozen
  if (draft) for (const e of draft.edits) if (typeof e.text === 'string' && !Object.isFrozen(e)) e.text = intern(e.text);
  return {
    ...related,
    rule: rule.id,
    severity: opts.severity ?? rule.severity,
    message: intern(opts.message ?? rule.message),
    start,
    end,
    step: rule.step,
    effort: rule.effort,
    fix:
      draft && draft.edits.length
        ? {
            title: intern(draft.title ?? rule.fix.title ?? `Fix ${rule.id}`),
            applicability: draft.applicability ?? rule.fix.applicability ?? 'unsafe',
            edits: draft.edits,
            imports: draft.imports ?? [],
            needsAccel: draft.needsAccel ?? false,
          }
        : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Positions

export class Locator {
  private readonly lines: LineIndex | null;
  private readonly cellLines = new Map<number, LineIndex>();
  constructor(readonly doc: SourceDocument) {
    this.lines = doc.kind === 'notebook' ? null : new LineIndex(doc.text);
  }

  /** (cell, cell-local offset) of a combined offset. */
  cellOffset(offset: number): { cell: number | null; offset: number } {
    if (this.doc.kind !== 'notebook') return { cell: null, offset };
    const span = spanAt(this.doc.program, offset);
    if (!span) return { cell: null, offset };
    return { cell: span.cell, offset: Math.min(Math.max(0, offset - span.start), span.end - span.start) };
  }

  lineIndexOf(cell: number | null): LineIndex {
    if (cell === null || this.doc.kind !== 'notebook') return this.lines!;
    let li = this.cellLines.get(cell);
    if (!li) this.cellLines.set(cell, (li = new LineIndex(this.doc.cells[cell].text)));
    return li;
  }

  /** Texts of other modules, for related locations that carry a path. */
  textOf: ((path: string) => string | null) | null = null;
  private readonly otherLines = new Map<string, LineIndex | null>();

  private span(start: number, end: number): { cell: number | null; startPos: LocatedFinding['startPos']; endPos: LocatedFinding['endPos'] } {
    const s = this.cellOffset(start);
    const e = this.cellOffset(end);
    const li = this.lineIndexOf(s.cell);
    const endLi = e.cell === s.cell ? li : this.lineIndexOf(e.cell);
    return { cell: s.cell, startPos: li.position(s.offset), endPos: e.cell === s.cell ? endLi.position(e.offset) : li.position(li.text.length) };
  }

  private locateRelated(r: RelatedLocation): LocatedRelated | null {
    if (r.path === undefined) return { ...r, ...this.span(r.start, r.end) };
    let li = this.otherLines.get(r.path);
    if (li === undefined) {
      const text = this.textOf?.(r.path) ?? null;
      this.otherLines.set(r.path, (li = text === null ? null : new LineIndex(text)));
    }
    if (!li) return null;
    return { ...r, cell: null, startPos: li.position(r.start), endPos: li.position(r.end) };
  }

  locate(f: Finding): LocatedFinding {
    const { related, ...rest } = f;
    const out: LocatedFinding = { ...rest, ...this.span(f.start, f.end) };
    if (related?.length) out.related = related.map((r) => this.locateRelated(r)).filter((r): r is LocatedRelated => !!r);
    return out;
  }
}

export function locateAll(analysis: Analysis): LocatedFinding[] {
  const loc = new Locator(analysis.doc);
  const project = analysis.project;
  if (project) loc.textOf = (p) => project.textOf(p);
  return analysis.findings.map((f) => loc.locate(f));
}

// ---------------------------------------------------------------------------------------------
// Fixes

export interface FixRequest {
  /** Apply unsafe fixes too. */
  unsafe: boolean;
  /**
   * Restrict to some findings. `doc` is the document the finding's offsets refer to: the current round's,
   * whose offsets have shifted after earlier rounds (use `cellOf(doc, f.start)` to keep to one cell).
   */
  only?: (f: Finding, doc: SourceDocument) => boolean;
  /** Maximum rounds of analyse → fix (fixes converge well before). */
  maxRounds?: number;
  /** Throw when a fix adds a syntax error instead of dropping it (tests). */
  strict?: boolean;
}

export interface FixResult {
  doc: SourceDocument;
  /** Number of fixes applied over all rounds. */
  applied: number;
  rounds: number;
  converged: boolean;
  /** Some applied fix calls the generated device-abstraction module. */
  needsAccel: boolean;
  /** Rule ids of the applied fixes (with repetition). */
  appliedRules: string[];
  /** The imports the applied fixes asked for (with repetition). */
  imports: ImportSpec[];
  /** Nothing was fixed because the document has syntax errors. */
  syntaxErrors?: boolean;
}

/**
 * A deletion that ends on the "\n" joining two cells (a cell's last line removed with its newline)
 * is kept inside the cell: it removes the newline before the line instead.
 */
function fitToCell(program: CombinedProgram, e: Edit): Edit {
  const s = spanAt(program, e.start);
  if (!s || e.end !== s.end + 1 || e.text !== '' || e.start < s.start) return e;
  const start = e.start > s.start && program.text.charCodeAt(e.start - 1) === 10 ? e.start - 1 : e.start;
  return { start, end: s.end, text: '' };
}

/** The notebook cell (index counting every cell) holding combined offset `offset`; null for files and between cells. */
export function cellOf(doc: SourceDocument, offset: number): number | null {
  return doc.kind === 'notebook' ? spanAt(doc.program, offset)?.cell ?? null : null;
}

/** Returns the document with `edits` (combined offsets) applied. Edits spanning two cells are dropped. */
export function applyToDocument(doc: SourceDocument, edits: Edit[]): SourceDocument {
  if (doc.kind === 'python') return pythonDocument(doc.path, applyEdits(doc.text, edits));
  if (doc.kind === 'text') return textDocument(doc.path, applyEdits(doc.text, edits), doc.fileKind);
  const perCell = new Map<number, Edit[]>();
  for (const raw of edits) {
    const e = fitToCell(doc.program, raw);
    const s = spanAt(doc.program, e.start);
    const t = spanAt(doc.program, e.end);
    if (!s || !t || s.cell !== t.cell || e.start < s.start || e.end > s.end) continue;
    const list = perCell.get(s.cell) ?? [];
    list.push({ start: e.start - s.start, end: e.end - s.start, text: e.text });
    perCell.set(s.cell, list);
  }
  const cells = doc.cells.map((c, i) => (perCell.has(i) ? { ...c, text: applyEdits(c.text, perCell.get(i)!) } : c));
  return notebookDocument(doc.path, cells);
}

function editsFitCells(doc: SourceDocument, edits: Edit[]): boolean {
  if (doc.kind !== 'notebook') return true;
  return edits.every((raw) => {
    const e = fitToCell(doc.program, raw);
    const s = spanAt(doc.program, e.start);
    return !!s && e.start >= s.start && e.end <= s.end;
  });
}

/** Applies one batch of fixes (non-overlapping, first wins) and then their imports. */
export function applyFixBatch(doc: SourceDocument, fixes: NonNullable<Finding['fix']>[]): { doc: SourceDocument; applied: number[] } {
  // overlap is judged on the edits as they will be applied (a deletion kept inside its cell starts one earlier)
  // a fix's multi-line text written with "\n" takes the file's line ending (a CRLF file stays CRLF)
  const crlf = doc.kind === 'python' && detectEol(doc.text) === '\r\n';
  // and never splits a "\r\n" pair (tree-sitter ends a block with a trailing comment after its "\r")
  const src = doc.kind === 'python' ? doc.text : '';
  const eolFix = (e: Edit): Edit => {
    let { start, end, text } = e;
    if (crlf && text.includes('\n')) text = text.replace(/(?<!\r)\n/g, '\r\n');
    if (end > start && src.charCodeAt(end - 1) === 13 && src.charCodeAt(end) === 10 && !text.endsWith('\r')) end--;
    if (start > 0 && src.charCodeAt(start - 1) === 13 && src.charCodeAt(start) === 10) start--;
    if (end < start) end = start;
    return start === e.start && end === e.end && text === e.text ? e : { start, end, text };
  };
  const fitted = (f: NonNullable<Finding['fix']>) => (doc.kind === 'notebook' ? f.edits.map((e) => fitToCell(doc.program, e)) : f.edits.map(eolFix));
  const groups = fixes.map((f) => (editsFitCells(doc, f.edits) ? fitted(f) : [{ start: -1, end: Number.MAX_SAFE_INTEGER, text: '' }]));
  const accepted = selectNonOverlapping(groups).filter((i) => groups[i][0].start >= 0);
  if (!accepted.length) return { doc, applied: [] };
  let next = applyToDocument(doc, accepted.flatMap((i) => groups[i]));
  const imports = accepted.flatMap((i) => fixes[i].imports);
  if (imports.length && next.kind !== 'text') {
    const text = analysedText(next);
    const tree = parsePython(text);
    const sema = new Semantics(tree, text);
    const edits = importEdits(tree, text, sema, imports, next.kind === 'notebook' ? next.program.spans : undefined);
    tree.delete();
    if (edits.length) next = applyToDocument(next, edits);
  }
  return { doc: next, applied: accepted };
}

function errorCount(doc: SourceDocument): number {
  if (doc.kind === 'text') return 0;
  const tree = parsePython(analysedText(doc));
  const n = countErrors(tree);
  tree.delete();
  return n;
}

/**
 * An indentation error CPython rejects and tree-sitter recovers from (TabError, an unindent to no outer
 * level, an unexpected indent). A notebook's cells compile one by one: each is checked alone.
 */
export function documentIndentationError(doc: SourceDocument): string | null {
  if (doc.kind === 'text') return null;
  if (doc.kind === 'python') {
    const p = indentationError(doc.text);
    return p ? `line ${p.line + 1}: ${p.message}` : null;
  }
  for (const s of doc.program.spans) {
    const p = indentationError(doc.program.text.slice(s.start, s.end));
    if (p) return `cell ${s.cell + 1}, line ${p.line + 1}: ${p.message}`;
  }
  return null;
}

/**
 * What a batch of fixes broke: a syntax error, or a name a fix's import binds that some statement reads
 * before the import (a line inserted above the import it needs). Null when nothing.
 */
function batchDefect(doc: SourceDocument, imports: ImportSpec[]): string | null {
  if (doc.kind === 'text') return null;
  const tree = parsePython(analysedText(doc));
  try {
    if (countErrors(tree) > 0) return 'add a syntax error';
    const indent = documentIndentationError(doc);
    if (indent) return `add an indentation error (${indent})`;
    const late = imports.length ? importsAfterUse(tree.rootNode, imports) : [];
    return late.length ? `read a name before its import (${late.join('; ')})` : null;
  } finally {
    tree.delete();
  }
}

/** Applies fixes until none is left (or `maxRounds`), never adding syntax errors. */
export function fixDocument(doc: SourceDocument, rules: Rule[], options: AnalyzeOptions, req: FixRequest): FixResult {
  const maxRounds = req.maxRounds ?? 10;
  let current = doc;
  let applied = 0;
  let needsAccel = false;
  const appliedRules: string[] = [];
  const imports: ImportSpec[] = [];
  // as ruff does: a file the parser cannot read completely is not rewritten (an edit could land inside
  // text the parser mistook for a string or a comment, and nothing would show it); nor one Python rejects
  // for its indentation, which tree-sitter reads without an error node
  if (errorCount(doc) > 0 || documentIndentationError(doc)) return { doc, applied: 0, rounds: 0, converged: true, needsAccel, appliedRules, imports, syntaxErrors: true };
  for (let round = 1; round <= maxRounds; round++) {
    const analysis = analyze(current, rules, options);
    analysis.tree?.delete();
    const candidates = analysis.findings.filter(
      (f) => f.fix && (f.fix.applicability === 'safe' || (req.unsafe && f.fix.applicability === 'unsafe')) && (!req.only || req.only(f, current)),
    );
    if (!candidates.length) return { doc: current, applied, rounds: round - 1, converged: true, needsAccel, appliedRules, imports };
    const fixes = candidates.map((f) => f.fix!);
    const importsOf = (applied: number[]) => applied.flatMap((i) => fixes[i].imports);
    let batch = applyFixBatch(current, fixes);
    const defect = batch.applied.length ? batchDefect(batch.doc, importsOf(batch.applied)) : null;
    if (defect) {
      if (req.strict) {
        throw new Error(`fixes of ${batch.applied.map((i) => candidates[i].rule).join(', ')} ${defect}:\n${analysedText(batch.doc)}`);
      }
      // keep the largest first-come set of fixes that breaks nothing (offsets stay those of `current`)
      let keep: number[] = [];
      let best = { doc: current, applied: [] as number[] };
      for (let i = 0; i < fixes.length; i++) {
        const trial = [...keep, i];
        const attempt = applyFixBatch(current, trial.map((k) => fixes[k]));
        if (attempt.applied.length === trial.length && !batchDefect(attempt.doc, importsOf(trial))) {
          keep = trial;
          best = { doc: attempt.doc, applied: trial };
        }
      }
      batch = best;
    }
    if (!batch.applied.length) return { doc: current, applied, rounds: round, converged: true, needsAccel, appliedRules, imports };
    for (const i of batch.applied) {
      applied++;
      appliedRules.push(candidates[i].rule);
      imports.push(...candidates[i].fix!.imports);
      if (candidates[i].fix!.needsAccel) needsAccel = true;
    }
    current = batch.doc;
  }
  const last = analyze(current, rules, options);
  last.tree?.delete();
  const left = last.findings.some((f) => f.fix && (f.fix.applicability === 'safe' || (req.unsafe && f.fix.applicability === 'unsafe')) && (!req.only || req.only(f, current)));
  return { doc: current, applied, rounds: maxRounds, converged: !left, needsAccel, appliedRules, imports };
}
