/**
 * Readers for what a PyTorch/XLA run prints or writes (pure: hosts pass the text in).
 *
 * Every format below is taken from the pytorch/xla source; paths are at tag v2.9.0 (commit 5fab705) unless a
 * 2.3 variant is named (tag v2.3.0). The readers are line based and tolerant: ANSI colours are stripped, CRLF
 * and CR are line ends, a block cut off by the end of the log (or by the start of another block) is kept when
 * its graph hash was seen, and lines of several processes may interleave: a block is keyed by the text that
 * precedes its marker on the line (a `[worker-1]` or `host: ` prefix added by a launcher), so two processes'
 * blocks do not mix when their lines are prefixed.
 *
 * Formats read:
 * 1. Debug analysis (`PT_XLA_DEBUG_LEVEL>=1`: compilations; `>=2`: executions; since 2.4. In 2.3 `PT_XLA_DEBUG=1`
 *    prints both: debug_util.cpp l. 239-252 at v2.3.0), printed to stderr (or appended
 *    to `PT_XLA_DEBUG_FILE`) by `DebugUtil::analyze_graph_execution_python_frame`, torch_xla/csrc/debug_util.cpp
 *    lines 260-430 (v2.9.0): prefixes "Compilation Analysis: ", "Execution Analysis: ", "Unexpected Execution
 *    Analysis: " (l. 271-275); an 80 '=' opening line (l. 313-317), "Compilation Cause"/"Execution Cause"
 *    (l. 318-320), the cause text (l. 321-377), "Graph Info: ", "  Graph Name: ", "  Graph Hash: ",
 *    "  Number of Graph Inputs: ", "  Number of Graph Outputs: " (l. 379-393), "Python Frame Triggered
 *    Execution: " then "  function (file:line)" innermost first (torch::lazy::GetPythonFrames walks f_back from
 *    the current frame) and "  .........." past PT_XLA_DEBUG_MAX_FRAME (default 8) frames (l. 395-406), an 80
 *    '-' line and an 80 '=' line (l. 407-414). Only the process with PJRT_LOCAL_PROCESS_RANK 0 prints (l. 264,
 *    294). v2.3.0 prints the same block with "mark_step" for "torch_xla.sync" in the causes
 *    (debug_util.cpp l. 236-340 at v2.3.0).
 * 2. Post-compilation analysis, `post_compilation_analysis`, torch_xla/csrc/debug_util.cpp l. 432-512 (v2.9.0):
 *    "Computation hash: <h>" then "Post Compilation Analysis: " lines "Graph input size: <x> GB", "Graph output
 *    size", "Aliased Input size", "Intermediate tensor size", "Compiled program size" (l. 487-496).
 * 3. Auto-metrics checks, printed to stdout after every step when `PT_XLA_DEBUG=1` (StepMarker,
 *    torch_xla/csrc/init_python_bindings.cpp l. 720-744) from `CreatePerformanceReport`,
 *    torch_xla/csrc/runtime/metrics_analysis.cpp: "pt-xla-profiler: %s too frequent: %zu counts during %zu
 *    steps" (l. 45-47; CompileTime over 0.5 per step after 10 steps, TransferFromDeviceTime over 0.5 per step,
 *    l. 188-189), "pt-xla-profiler: %s too slow: longest instance took %s. ..." (l. 75-80), "pt-xla-profiler:
 *    Op(s) not lowered: aten::a, aten::b,  Please open a GitHub issue ..." (l. 174-180). They repeat every step,
 *    so the last (largest) one counts. (metrics_analysis.cc at v2.3.0, same strings.)
 * 4. Metrics report, `met.metrics_report()` / `met.short_metrics_report()` (torch_xla/debug/metrics.py
 *    l. 62-83) from `EmitMetricInfo`/`EmitCounterInfo`, torch_xla/csrc/runtime/metrics.cpp l. 38-84: "Metric:
 *    <name>", "  TotalSamples: <n>", "  Accumulator: <repr>", "  ValueRate: ...", "  Rate: ...",
 *    "  Percentiles: 1%=...; 5%=..."; "Counter: <name>", "  Value: <n>". Times are `MetricFnTime` (l. 304-329:
 *    "01m02s003ms004.005us" style). The short report adds every `aten::*` counter (l. 366-373): the CPU
 *    fallbacks. `XLA_METRICS_FILE` gets "[MetricsData; step=<n>]" then the full report after every step
 *    (torch_xla/debug/metrics_saver.py l. 38-50; `<file>.<ordinal>` per process when world size > 1, l. 19-26).
 *
 * Not read: profiler traces (`xp.trace`, `xp.start_trace`) are TensorBoard `.xplane.pb` protobufs, binary and
 * undocumented outside the TSL sources; step time is taken from the metrics (ExecuteTime per MarkStep) instead.
 */

export type AnalysisKind = 'compilation' | 'execution' | 'unexpected-execution';

/** Why a graph was compiled or executed (the cause line, classified). */
export type CauseKind = 'step-barrier' | 'tensor-read' | 'dynamo' | 'compile' | 'other';

export interface Frame {
  function: string;
  file: string;
  line: number;
}

export interface AnalysisBlock {
  kind: AnalysisKind;
  cause: string;
  causeKind: CauseKind;
  graphHash: string | null;
  graphName: string | null;
  inputs: number | null;
  outputs: number | null;
  /** Innermost first, as printed. */
  frames: Frame[];
  /** More frames were cut off by PT_XLA_DEBUG_MAX_FRAME. */
  moreFrames: boolean;
  /** The block did not reach its closing line. */
  truncated: boolean;
  /** Where the block starts: log index and 1-based line. */
  log: number;
  logLine: number;
  /** The text before the marker on the block's lines (a launcher's process prefix), '' when none. */
  process: string;
  /** Seconds since the run started when the block opened, from the line stamps of `.tpu-ready/profile-run.sh`; null without them. */
  time: number | null;
}

export interface PostCompilation {
  computationHash: string | null;
  /** GB, as printed. */
  inputGB: number | null;
  outputGB: number | null;
  aliasedGB: number | null;
  intermediateGB: number | null;
  programGB: number | null;
  log: number;
  logLine: number;
}

export interface MetricCheck {
  kind: 'too-frequent' | 'too-slow' | 'not-lowered';
  /** The metric (CompileTime, TransferFromDeviceTime, ExecuteTime), or '' for not-lowered. */
  metric: string;
  count: number | null;
  steps: number | null;
  /** Longest instance, seconds (too-slow). */
  seconds: number | null;
  /** aten ops (not-lowered). */
  ops: string[];
  log: number;
  logLine: number;
  text: string;
}

export interface MetricValue {
  totalSamples: number;
  /** Seconds for time metrics (accumulator parsed from MetricFnTime), else the raw number (bytes, counts). */
  accumulator: number | null;
}

export interface MetricsSnapshot {
  metrics: Map<string, MetricValue>;
  counters: Map<string, number>;
  /** "[MetricsData; step=N]" when it came from XLA_METRICS_FILE. */
  step: number | null;
  log: number;
  logLine: number;
  process: string;
}

export interface RunEvidence {
  blocks: AnalysisBlock[];
  post: PostCompilation[];
  checks: MetricCheck[];
  /** The last metrics report of each process (log and prefix). */
  metrics: MetricsSnapshot[];
  /** Logs read, by index. */
  logs: string[];
  /** Something of the debug formats was seen (else the log is probably not a torch_xla run). */
  recognized: boolean;
  truncatedBlocks: number;
  /** The TPU the run says it ran on (`tpu-ready: accelerator-type v5litepod-8`, written by profile-run.sh), else null. */
  acceleratorType: string | null;
}

/**
 * The line stamp `.tpu-ready/profile-run.sh` puts before every line it writes to the log: seconds since the
 * launch, "[tpu-ready 12.345] ". Stripped before any other format is read, so stamped logs read as plain ones.
 */
export const LINE_STAMP = /^\[tpu-ready (\d+(?:\.\d+)?)\] /;
/** The launcher's record of the TPU type (from `TPU_ACCELERATOR_TYPE` or the VM's `tpu-env` metadata). */
const ACCELERATOR = /^tpu-ready: accelerator-type (\S+)\s*$/;

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07/g;
const ANALYSIS = /(Unexpected Execution Analysis|Compilation Analysis|Execution Analysis): (.*)$/;
const POST = /Post Compilation Analysis: (.*)$/;
const COMPUTATION_HASH = /Computation hash: (\S+)/;
const RULE_EQ = /^={20,}\s*$/;
const RULE_DASH = /^-{20,}\s*$/;
const FRAME = /^ {2}(\S.*?) \((.*):(\d+)\)\s*$/;
const CHECK_FREQ = /pt-xla-profiler: (\w+) too frequent: (\d+) counts during (\d+) steps/;
const CHECK_SLOW = /pt-xla-profiler: (\w+) too slow: longest instance took (\S+?us)\./;
const CHECK_OPS = /pt-xla-profiler: Op\(s\) not lowered: (.*)$/;
const METRIC = /(?:^|\s|\])Metric: (\S+)\s*$/;
const COUNTER = /(?:^|\s|\])Counter: (\S+)\s*$/;
const METRICS_DATA = /\[MetricsData; step=(\d+)\]/;

/**
 * The process a line's prefix names: the prefix without timestamps (a logging agent or `ts` stamps every line
 * differently; `[worker-1]` and `host-2:` stay apart).
 */
export function processKey(prefix: string): string {
  return prefix.replace(/\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)?|\d\d:\d\d:\d\d(?:[.,]\d+)?/g, '').replace(/\s+/g, ' ').trim();
}

/** Splits on LF, CRLF and CR; strips ANSI colour and cursor codes. */
export function logLines(text: string): string[] {
  return text.replace(ANSI, '').split(/\r\n|\n|\r/);
}

/**
 * Seconds of a `MetricFnTime` string ("04m21s432ms102.004us", "860ms120.000us", "012.500us"), or null.
 * metrics.cpp l. 304-329: d, h, m, s, ms, us parts, the first non-zero part and every one after it.
 */
export function parseMetricTime(s: string): number | null {
  const t = s.trim();
  if (!/^(\d+(\.\d+)?(d|h|ms|m|s|us))+$/.test(t)) return null;
  const scale: Record<string, number> = { d: 86400, h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6 };
  let total = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(us|ms|d|h|m|s)/g)) total += Number(m[1]) * scale[m[2]];
  return total;
}

/** The cause line, classified (debug_util.cpp l. 321-377 at v2.9.0; "mark_step" wording at v2.3.0). */
export function classifyCause(cause: string): CauseKind {
  if (/most likely user code trying to access tensor value/.test(cause)) return 'tensor-read';
  if (/dynamo is/.test(cause) || /when dynamo processing/.test(cause)) return 'dynamo';
  if (/^torch_xla\.compile/.test(cause)) return 'compile';
  if (/(torch_xla\.sync|mark_step)/.test(cause)) return 'step-barrier';
  return 'other';
}

interface OpenBlock {
  block: AnalysisBlock;
  stage: 'head' | 'cause' | 'info' | 'frames' | 'closing';
}

/** Reads one or more logs (stdout/stderr captures, PT_XLA_DEBUG_FILE, XLA_METRICS_FILE) into run evidence. */
export function readRunLogs(logs: { name: string; text: string }[]): RunEvidence {
  const ev: RunEvidence = { blocks: [], post: [], checks: [], metrics: [], logs: logs.map((l) => l.name), recognized: false, truncatedBlocks: 0, acceleratorType: null };
  logs.forEach((log, li) => readOne(log.text, li, ev));
  ev.truncatedBlocks = ev.blocks.filter((b) => b.truncated).length;
  return ev;
}

function readOne(text: string, li: number, ev: RunEvidence): void {
  const lines = logLines(text);
  const open = new Map<string, OpenBlock>();
  let post: { p: PostCompilation; prefix: string } | null = null;
  let pendingHash: string | null = null;
  // metrics reports: per process prefix, the snapshot being read and the entry being filled
  const reports = new Map<string, { snap: MetricsSnapshot; entry: { metric?: string; counter?: string } | null }>();
  const lastByProcess = new Map<string, MetricsSnapshot>();
  let metricsStep: number | null = null;

  const finish = (key: string, truncated: boolean) => {
    const o = open.get(key);
    if (!o) return;
    open.delete(key);
    o.block.truncated = truncated;
    if (o.block.graphHash || o.block.frames.length) ev.blocks.push(o.block);
  };

  for (let i = 0; i < lines.length; i++) {
    let raw = lines[i];
    const lineNo = i + 1;
    let time: number | null = null;
    const stamp = LINE_STAMP.exec(raw);
    if (stamp) {
      time = Number(stamp[1]);
      raw = raw.slice(stamp[0].length);
    }
    const acc = ACCELERATOR.exec(raw);
    if (acc) {
      if (acc[1] !== 'unknown') ev.acceleratorType = acc[1];
      continue;
    }

    const md = METRICS_DATA.exec(raw);
    if (md) {
      metricsStep = Number(md[1]);
      ev.recognized = true;
      continue;
    }

    const pc = POST.exec(raw);
    if (pc) {
      ev.recognized = true;
      const prefix = raw.slice(0, pc.index);
      const body = pc[1];
      if (RULE_EQ.test(body)) {
        if (!post) {
          post = { p: { computationHash: pendingHash, inputGB: null, outputGB: null, aliasedGB: null, intermediateGB: null, programGB: null, log: li, logLine: lineNo }, prefix };
          pendingHash = null;
        } else {
          ev.post.push(post.p);
          post = null;
        }
        continue;
      }
      if (!post) post = { p: { computationHash: pendingHash, inputGB: null, outputGB: null, aliasedGB: null, intermediateGB: null, programGB: null, log: li, logLine: lineNo }, prefix };
      const gb = /^(Graph input size|Graph output size|Aliased Input size|Intermediate tensor size|Compiled program size): ([\d.]+) GB/.exec(body);
      if (gb) {
        const v = Number(gb[2]);
        const k = ({ 'Graph input size': 'inputGB', 'Graph output size': 'outputGB', 'Aliased Input size': 'aliasedGB', 'Intermediate tensor size': 'intermediateGB', 'Compiled program size': 'programGB' } as const)[gb[1] as 'Graph input size'];
        post.p[k] = v;
      }
      continue;
    }
    const ch = COMPUTATION_HASH.exec(raw);
    if (ch) {
      pendingHash = ch[1];
      continue;
    }

    const am = ANALYSIS.exec(raw);
    if (am) {
      ev.recognized = true;
      const kind: AnalysisKind = am[1] === 'Compilation Analysis' ? 'compilation' : am[1] === 'Execution Analysis' ? 'execution' : 'unexpected-execution';
      const prefix = raw.slice(0, am.index);
      const key = `${processKey(prefix)}\u0000${kind}`;
      const body = am[2];
      let o = open.get(key);
      if (RULE_EQ.test(body)) {
        if (o && o.stage === 'closing') finish(key, false);
        else {
          if (o) finish(key, true);
          open.set(key, { stage: 'head', block: { kind, cause: '', causeKind: 'other', graphHash: null, graphName: null, inputs: null, outputs: null, frames: [], moreFrames: false, truncated: false, log: li, logLine: lineNo, process: processKey(prefix), time } });
        }
        continue;
      }
      if (!o) {
        // a block whose opening line was lost (truncated head or interleaving): start one here
        o = { stage: 'head', block: { kind, cause: '', causeKind: 'other', graphHash: null, graphName: null, inputs: null, outputs: null, frames: [], moreFrames: false, truncated: true, log: li, logLine: lineNo, process: processKey(prefix), time } };
        open.set(key, o);
      }
      const b = o.block;
      if (/^(Compilation|Execution) Cause\s*$/.test(body)) o.stage = 'cause';
      else if (/^Graph Info:\s*$/.test(body)) o.stage = 'info';
      else if (/^Python Frame Triggered Execution:\s*$/.test(body)) o.stage = 'frames';
      else if (RULE_DASH.test(body)) o.stage = 'closing';
      else if (o.stage === 'cause' && /^ {2}\S/.test(body)) {
        b.cause = body.trim();
        b.causeKind = classifyCause(b.cause);
      } else if (o.stage === 'info') {
        const m = /^ {2}(Graph Name|Graph Hash|Number of Graph Inputs|Number of Graph Outputs): (.*?)\s*$/.exec(body);
        if (m) {
          if (m[1] === 'Graph Hash') b.graphHash = m[2];
          else if (m[1] === 'Graph Name') b.graphName = m[2];
          else if (m[1] === 'Number of Graph Inputs') b.inputs = Number(m[2]);
          else b.outputs = Number(m[2]);
        }
      } else if (o.stage === 'frames') {
        if (/^ {2}\.{3,}\s*$/.test(body)) b.moreFrames = true;
        else {
          const f = FRAME.exec(body);
          if (f) b.frames.push({ function: f[1], file: f[2], line: Number(f[3]) });
        }
      }
      continue;
    }

    const cf = CHECK_FREQ.exec(raw);
    if (cf) {
      ev.recognized = true;
      ev.checks.push({ kind: 'too-frequent', metric: cf[1], count: Number(cf[2]), steps: Number(cf[3]), seconds: null, ops: [], log: li, logLine: lineNo, text: cf[0] });
      continue;
    }
    const cs = CHECK_SLOW.exec(raw);
    if (cs) {
      ev.recognized = true;
      ev.checks.push({ kind: 'too-slow', metric: cs[1], count: null, steps: null, seconds: parseMetricTime(cs[2]), ops: [], log: li, logLine: lineNo, text: cs[0] });
      continue;
    }
    const co = CHECK_OPS.exec(raw);
    if (co) {
      ev.recognized = true;
      const ops = [...co[1].matchAll(/aten::[A-Za-z0-9_.]+/g)].map((m) => m[0]);
      if (ops.length) ev.checks.push({ kind: 'not-lowered', metric: '', count: null, steps: null, seconds: null, ops, log: li, logLine: lineNo, text: co[0].trim() });
      continue;
    }

    const mm = METRIC.exec(raw) ?? COUNTER.exec(raw);
    if (mm) {
      ev.recognized = true;
      const isMetric = /Metric: /.test(mm[0]);
      const prefix = processKey(raw.slice(0, raw.indexOf(isMetric ? 'Metric: ' : 'Counter: ')));
      let r = reports.get(prefix);
      // a report restarts when a name comes round again (the next step's report in XLA_METRICS_FILE)
      const name = mm[1];
      if (r && ((isMetric && r.snap.metrics.has(name)) || (!isMetric && r.snap.counters.has(name)))) {
        lastByProcess.set(prefix, r.snap);
        r = undefined;
      }
      if (!r) {
        r = { snap: { metrics: new Map(), counters: new Map(), step: metricsStep, log: li, logLine: lineNo, process: prefix }, entry: null };
        reports.set(prefix, r);
      }
      r.entry = isMetric ? { metric: name } : { counter: name };
      lastByProcess.set(prefix, r.snap);
      continue;
    }
    // the value lines of the entry being read ("  TotalSamples: 3", "  Accumulator: 01s", "  Value: 12")
    const vm = /(TotalSamples|Accumulator|Value): (.+?)\s*$/.exec(raw);
    if (vm && reports.size) {
      const prefix = processKey(raw.slice(0, vm.index));
      const r = reports.get(prefix) ?? (reports.size === 1 ? [...reports.values()][0] : undefined);
      if (r?.entry) {
        if (r.entry.metric && vm[1] === 'TotalSamples') r.snap.metrics.set(r.entry.metric, { totalSamples: Number(vm[2]), accumulator: r.snap.metrics.get(r.entry.metric)?.accumulator ?? null });
        else if (r.entry.metric && vm[1] === 'Accumulator') {
          const cur = r.snap.metrics.get(r.entry.metric) ?? { totalSamples: 0, accumulator: null };
          const t = parseMetricTime(vm[2]);
          cur.accumulator = t ?? (Number.isFinite(Number(vm[2])) ? Number(vm[2]) : null);
          r.snap.metrics.set(r.entry.metric, cur);
        } else if (r.entry.counter && vm[1] === 'Value' && /^\d+$/.test(vm[2])) r.snap.counters.set(r.entry.counter, Number(vm[2]));
      }
    }
  }
  for (const key of [...open.keys()]) finish(key, true);
  if (post) ev.post.push(post.p);
  for (const snap of lastByProcess.values()) if (snap.metrics.size || snap.counters.size) ev.metrics.push(snap);
}

/** Summed over the processes' last reports, the largest value of a metric's samples and accumulator. */
export function metricTotals(ev: RunEvidence, name: string): MetricValue | null {
  let best: MetricValue | null = null;
  for (const s of ev.metrics) {
    const m = s.metrics.get(name);
    if (m && (!best || m.totalSamples > best.totalSamples)) best = m;
  }
  return best;
}

/** The largest value of a counter over the processes' last reports. */
export function counterValue(ev: RunEvidence, name: string): number | null {
  let best: number | null = null;
  for (const s of ev.metrics) {
    const v = s.counters.get(name);
    if (v !== undefined && (best === null || v > best)) best = v;
  }
  return best;
}

/** CPU fallback counters (`aten::*`, torch_xla/csrc/aten_fallback.cpp), the largest count over processes. */
export function fallbackCounters(ev: RunEvidence): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of ev.metrics) for (const [k, v] of s.counters) if (k.startsWith('aten::')) out.set(k, Math.max(out.get(k) ?? 0, v));
  return out;
}

/**
 * `aten::_local_scalar_dense` is the host read of a scalar (`.item()`, `bool(t)`): the not-lowered check leaves
 * it out for that reason (torch_xla/csrc/runtime/metrics_analysis.cpp l. 168-170 at v2.9.0).
 */
export const HOST_READ_COUNTER = 'aten::_local_scalar_dense';
