/**
 * Runtime findings (TPU0nn) from a run's evidence, placed on the workspace's lines, and their join with the
 * static findings. Pure: the host passes the workspace's file texts and the logs' texts in.
 */
import type { Effort, OutputRelated, OutputSpan, Severity, Step } from '../core/types';
import { RUNTIME_RULES_BY_ID } from '../rules/runtime';
import { indexPaths, isLibraryFrame, mapFrames, type MappedFrame } from './map';
import { counterValue, fallbackCounters, HOST_READ_COUNTER, metricTotals, type AnalysisBlock, type MetricCheck, type RunEvidence } from './read';

export type EvidenceKind = 'recompilation' | 'host-read' | 'cpu-fallback' | 'too-frequent' | 'too-slow';

export interface Evidence {
  kind: EvidenceKind;
  /** Compilations, executions, fallback calls, or the check's count. */
  count: number;
  /** Measured seconds this costs in the run (null when the run printed no metrics to measure it by). */
  seconds: number | null;
  graphHashes: string[];
  /** aten ops (cpu-fallback). */
  ops: string[];
  /** Steps of the run (`MarkStep` counter, or the check's "during N steps"), null when unknown. */
  steps: number | null;
  /** count / steps when both are known. */
  perStep: number | null;
  /** torch_xla's own checks folded into this finding ("CompileTime too frequent: 21 counts during 11 steps"). */
  checks: string[];
  /** Where the log says it: log file and 1-based line of the first block. */
  log: { file: string; line: number };
}

/** Another frame of the same runtime problem, in the shape of the CLI's related locations (whole line). */
export interface RelatedLocation extends OutputRelated {
  cell: null;
}

function relatedAt(path: string, line: number, message: string): RelatedLocation {
  return { path, line, column: 1, endLine: line, endColumn: 1, cell: null, message };
}

/** The shape of the CLI's JSON findings, plus the source and the evidence. */
export interface RuntimeFinding extends OutputSpan {
  cell: null;
  rule: string;
  severity: Severity;
  message: string;
  step: Step;
  effort: Effort;
  fix: null;
  source: 'runtime';
  /** True when the finding sits on a workspace line; false when on the log line (no frame or call maps). */
  inWorkspace: boolean;
  evidence: Evidence;
  /** The other user frames of the same blocks. */
  related: RelatedLocation[];
}

export interface WorkspaceFile {
  /** Workspace-relative posix path. */
  path: string;
  text: string;
}

/** "42 s", "6.2 min", "1.4 h". */
export function seconds(s: number): string {
  if (s < 60) return `${s < 10 ? Math.round(s * 10) / 10 : Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 6) / 10} min`;
  return `${Math.round(s / 360) / 10} h`;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Mean seconds per sample of a time metric in the run, null without it. */
function meanSeconds(ev: RunEvidence, metric: string): number | null {
  const m = metricTotals(ev, metric);
  return m && m.totalSamples > 0 && m.accumulator !== null ? m.accumulator / m.totalSamples : null;
}

interface Group {
  key: string;
  user: MappedFrame;
  blocks: AnalysisBlock[];
  frames: MappedFrame[][];
}

function lineSpan(text: string | undefined, line: number): { column: number; endColumn: number } {
  if (text === undefined) return { column: 1, endColumn: 1 };
  const l = text.split(/\r\n|\n|\r/)[line - 1] ?? '';
  const cps = [...l];
  const first = cps.findIndex((c) => c !== ' ' && c !== '\t');
  return { column: first < 0 ? 1 : first + 1, endColumn: cps.length + 1 };
}

/** Runtime findings of a run against the workspace's files. */
export function runtimeFindings(ev: RunEvidence, files: readonly WorkspaceFile[], logNames: readonly string[] = ev.logs): RuntimeFinding[] {
  const index = indexPaths(files.map((f) => f.path), new Map(files.map((f) => [f.path, f.text.split(/\r\n|\n|\r/).length])));
  const textOf = new Map(files.map((f) => [f.path, f.text]));
  const steps = counterValue(ev, 'MarkStep') ?? maxCheckSteps(ev.checks);
  const out: RuntimeFinding[] = [];

  const make = (rule: string, path: string, line: number, inWorkspace: boolean, message: string, evidence: Evidence, related: RelatedLocation[] = []): RuntimeFinding => {
    const r = RUNTIME_RULES_BY_ID.get(rule)!;
    const span = lineSpan(inWorkspace ? textOf.get(path) : undefined, line);
    return { path, rule, severity: r.severity, line, column: span.column, endLine: line, endColumn: span.endColumn, cell: null, message, step: r.step, effort: r.effort, fix: null, source: 'runtime', inWorkspace, evidence, related };
  };
  const logRef = (b: { log: number; logLine: number }) => ({ file: logNames[b.log] ?? `log ${b.log + 1}`, line: b.logLine });

  // blocks whose frames name no workspace line are grouped by their first non-library frame and reported on the log
  const group = (blocks: AnalysisBlock[]): { groups: Group[] } => {
    const groups = new Map<string, Group>();
    for (const b of blocks) {
      const m = mapFrames(b.frames, index);
      const outside = m.user ? null : b.frames.find((f) => !isLibraryFrame(f.file)) ?? null;
      if (!m.user && !outside) continue; // no Python frame outside torch: nothing to point at
      const user: MappedFrame = m.user ?? { ...outside!, path: null };
      const key = m.user ? `${m.user.path}:${m.user.line}` : `\u0000${outside!.file}:${outside!.line}`;
      const g = groups.get(key) ?? { key, user, blocks: [], frames: [] };
      g.blocks.push(b);
      g.frames.push(m.frames);
      groups.set(key, g);
    }
    return { groups: [...groups.values()] };
  };
  /** Where a group's finding goes: its workspace line, or the log line of its first block (frame named). */
  const placeOf = (g: Group): { path: string; line: number; inWorkspace: boolean; note: string } =>
    g.user.path !== null
      ? { path: g.user.path, line: g.user.line, inWorkspace: true, note: '' }
      : { ...(() => { const l = logRef(g.blocks[0]); return { path: l.file, line: l.line }; })(), inWorkspace: false, note: ` (at ${g.user.file}:${g.user.line}, not a line of the workspace${index.memo.get(g.user.file) ? ': the file changed since the run?' : ''})` };
  const relatedOf = (g: Group, what: string): RelatedLocation[] => {
    const seen = new Set<string>([g.key]);
    const rel: RelatedLocation[] = [];
    for (const frames of g.frames) {
      for (const f of frames) {
        if (!f.path) continue;
        const k = `${f.path}:${f.line}`;
        if (seen.has(k)) continue;
        seen.add(k);
        rel.push(relatedAt(f.path, f.line, `${what}: called through ${f.function}`));
      }
    }
    return rel;
  };

  // TPU001: compilations per user line beyond a stable step's (one graph; two at a step barrier)
  const compileMean = meanSeconds(ev, 'CompileTime');
  const compiles = group(ev.blocks.filter((b) => b.kind === 'compilation'));
  for (const g of compiles.groups) {
    const hashes = [...new Set(g.blocks.map((b) => b.graphHash).filter((h): h is string => !!h))];
    const barrier = g.blocks.some((b) => b.causeKind === 'step-barrier' || b.causeKind === 'compile');
    const expected = barrier ? 2 : 1;
    if (g.blocks.length <= expected) continue;
    const secs = compileMean === null ? null : compileMean * g.blocks.length;
    const msg = `Seen in the run: compiled ${plural(g.blocks.length, 'time')} here (${plural(hashes.length, 'distinct graph')}${secs !== null ? `, ≈${seconds(secs)} of compilation` : ''}${steps ? ` in ${plural(steps, 'step')}` : ''}): the graph changes between steps (shapes, Python scalars or branches on values)`;
    const at = placeOf(g);
    out.push(make('TPU001', at.path, at.line, at.inWorkspace, msg + at.note, { kind: 'recompilation', count: g.blocks.length, seconds: secs, graphHashes: hashes, ops: [], steps, perStep: steps ? g.blocks.length / steps : null, checks: [], log: logRef(g.blocks[0]) }, relatedOf(g, 'same compilations')));
  }

  // TPU002: graphs run to read a value before the barrier: the executions (level 2) of a line, or its
  // compilations when the run printed none (level 1)
  const execMean = meanSeconds(ev, 'ExecuteTime');
  for (const g of group(ev.blocks.filter((b) => b.causeKind === 'tensor-read')).groups) {
    const execs = g.blocks.filter((b) => b.kind !== 'compilation');
    const counted = execs.length ? execs : g.blocks;
    const n = counted.length;
    const hashes = [...new Set(counted.map((b) => b.graphHash).filter((h): h is string => !!h))];
    const secs = execMean === null || !execs.length ? null : execMean * n;
    const perStep = steps ? n / steps : null;
    const what = execs.length ? 'executed a graph' : 'compiled a graph';
    const msg = `Seen in the run: ${what} here ${plural(n, 'time')} to read a tensor value before the step barrier${perStep !== null ? ` (${Math.round(perStep * 100) / 100} per step over ${plural(steps!, 'step')})` : ''}${secs !== null ? `, ≈${seconds(secs)} of execution` : ''}`;
    const at = placeOf(g);
    out.push(make('TPU002', at.path, at.line, at.inWorkspace, msg + at.note, { kind: 'host-read', count: n, seconds: secs, graphHashes: hashes, ops: [], steps, perStep, checks: [], log: logRef(counted[0]) }, relatedOf(g, 'same host read')));
  }

  // TPU003: CPU fallbacks, from the aten:: counters and the not-lowered check
  const ops = fallbackCounters(ev);
  ops.delete(HOST_READ_COUNTER);
  const notLowered = ev.checks.filter((c) => c.kind === 'not-lowered');
  for (const c of notLowered) for (const op of c.ops) if (op !== HOST_READ_COUNTER && !ops.has(op)) ops.set(op, 0);
  const byLocation = new Map<string, { path: string; line: number; inWorkspace: boolean; ops: [string, number][]; related: RelatedLocation[]; log: { file: string; line: number } }>();
  for (const [op, count] of ops) {
    const where = findOpCall(op, files);
    const logAt = notLowered.find((c) => c.ops.includes(op)) ?? ev.metrics.find((m) => m.counters.has(op));
    const log = logAt ? logRef(logAt) : { file: logNames[0] ?? 'log', line: 1 };
    const key = where ? `${where[0].path}:${where[0].line}` : `${log.file}:${log.line}`;
    const e = byLocation.get(key) ?? { path: where ? where[0].path : log.file, line: where ? where[0].line : log.line, inWorkspace: !!where, ops: [], related: [], log };
    e.ops.push([op, count]);
    for (const w of where?.slice(1) ?? []) if (!e.related.some((r) => r.path === w.path && r.line === w.line)) e.related.push(relatedAt(w.path, w.line, `another call of ${op.slice(6)}`));
    byLocation.set(key, e);
  }
  for (const e of byLocation.values()) {
    const total = e.ops.reduce((s, [, n]) => s + n, 0);
    const names = e.ops.map(([op, n]) => (n ? `${op} ×${n}` : op)).join(', ');
    const msg = `Seen in the run: ${e.ops.length === 1 ? 'op' : 'ops'} ran on the CPU, not lowered to XLA: ${names}${steps && total ? ` (${Math.round((total / steps) * 100) / 100} per step)` : ''}${e.inWorkspace ? '' : ' (no matching call found in the workspace)'}`;
    out.push(make('TPU003', e.path, e.line, e.inWorkspace, msg, { kind: 'cpu-fallback', count: total, seconds: null, graphHashes: [], ops: e.ops.map(([op]) => op), steps, perStep: steps && total ? total / steps : null, checks: notLowered.length ? [notLowered[notLowered.length - 1].text] : [], log: e.log }, e.related));
  }

  // TPU004: torch_xla's checks, the last of each metric; folded into the finding on the line they point at
  const lastChecks = new Map<string, MetricCheck>();
  for (const c of ev.checks) if (c.kind !== 'not-lowered') lastChecks.set(`${c.kind}:${c.metric}`, c);
  for (const c of lastChecks.values()) {
    const target = c.metric === 'CompileTime' ? top(out, 'TPU001') : c.metric === 'TransferFromDeviceTime' ? top(out, 'TPU002') : null;
    if (target) {
      target.evidence.checks.push(c.text);
      target.message += ` [torch_xla: ${c.text.replace(/^pt-xla-profiler: /, '')}]`;
      continue;
    }
    const log = logRef(c);
    const text = c.text.replace(/^pt-xla-profiler: /, '');
    const msg = `Seen in the run: torch_xla reported ${text}${c.kind === 'too-frequent' ? ' (its threshold is 0.5 per step)' : ''}; no frame of the log points at a line (run with PT_XLA_DEBUG_LEVEL=2 to see which)`;
    const count = c.count ?? 1;
    out.push(make('TPU004', log.file, log.line, false, msg, { kind: c.kind === 'too-slow' ? 'too-slow' : 'too-frequent', count, seconds: c.seconds, graphHashes: [], ops: [], steps: c.steps, perStep: c.steps ? count / c.steps : null, checks: [c.text], log }));
  }

  out.sort((a, b) => Number(b.inWorkspace) - Number(a.inWorkspace) || a.path.localeCompare(b.path) || a.line - b.line || a.rule.localeCompare(b.rule));
  return out;
}

function maxCheckSteps(checks: MetricCheck[]): number | null {
  const s = checks.map((c) => c.steps).filter((n): n is number => n !== null);
  return s.length ? Math.max(...s) : null;
}

function top(findings: RuntimeFinding[], rule: string): RuntimeFinding | null {
  let best: RuntimeFinding | null = null;
  for (const f of findings) if (f.rule === rule && f.inWorkspace && (!best || f.evidence.count > best.evidence.count)) best = f;
  return best;
}

/**
 * Calls in the workspace that an aten op most likely comes from: `aten::_ctc_loss_backward` → `ctc_loss(`
 * (the leading underscore, `_backward`, `_forward`, `.out`/`.Tensor` overload names and an in-place `_` are
 * dropped). Comment lines are skipped. First match first.
 */
export function findOpCall(op: string, files: readonly WorkspaceFile[]): { path: string; line: number }[] {
  const base = op.replace(/^aten::/, '').replace(/\..*$/, '').replace(/^_+/, '').replace(/_(backward|forward)$/, '').replace(/_$/, '');
  if (!/^[A-Za-z]\w*$/.test(base)) return [];
  const re = new RegExp(`(^|[^\\w])_?${base}_?\\s*\\(`);
  const hits: { path: string; line: number }[] = [];
  for (const f of [...files].sort((a, b) => a.path.localeCompare(b.path))) {
    if (!/\.py$/.test(f.path)) continue;
    f.text.split(/\r\n|\n|\r/).forEach((l, i) => {
      const code = l.replace(/#.*$/, '');
      if (re.test(code) && !/^\s*def\s/.test(code)) hits.push({ path: f.path, line: i + 1 });
    });
  }
  return hits;
}

/** A static finding as the join reads it (the CLI's output row). */
export interface StaticRow {
  path: string;
  rule: string;
  line: number;
  message: string;
  evidence?: Evidence;
}

/**
 * Joins runtime findings with static ones: a runtime finding on the line of a static finding that it is material
 * for (RuntimeRule.material) confirms it: the static finding's message gets "(seen in the run: …)" and the
 * evidence, and the runtime finding is not reported again. `samePath` compares a static row's path with a
 * runtime finding's (hosts display paths differently).
 */
export function joinWithStatic<S extends StaticRow>(statics: S[], runtime: RuntimeFinding[], samePath: (s: S, r: RuntimeFinding) => boolean = (s, r) => s.path === r.path): { statics: S[]; runtime: RuntimeFinding[]; confirmed: number } {
  const left: RuntimeFinding[] = [];
  let confirmed = 0;
  const out = statics.map((s) => ({ ...s }));
  for (const r of runtime) {
    const material = RUNTIME_RULES_BY_ID.get(r.rule)?.material ?? [];
    const hits = r.inWorkspace ? out.filter((s) => s.line === r.line && material.includes(s.rule) && samePath(s, r)) : [];
    if (!hits.length) {
      left.push(r);
      continue;
    }
    confirmed++;
    for (const s of hits) {
      s.message = `${s.message} (seen in the run: ${confirmation(r)})`;
      s.evidence = r.evidence;
    }
  }
  return { statics: out, runtime: left, confirmed };
}

/** "21 compilations, 6 min", "12 host reads, 0.4 per step", "aten::_ctc_loss ×40 on the CPU". */
export function confirmation(r: RuntimeFinding): string {
  const e = r.evidence;
  const secs = e.seconds !== null ? `, ${seconds(e.seconds)}` : '';
  switch (e.kind) {
    case 'recompilation':
      return `${plural(e.count, 'compilation')}${secs}`;
    case 'host-read':
      return `${plural(e.count, 'host read')}${e.perStep !== null ? `, ${Math.round(e.perStep * 100) / 100} per step` : ''}${secs}`;
    case 'cpu-fallback':
      return `${e.ops.join(', ')} on the CPU${e.count ? ` ×${e.count}` : ''}`;
    default:
      return e.checks.join('; ');
  }
}
