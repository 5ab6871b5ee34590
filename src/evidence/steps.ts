/**
 * Step time measured in a run: the wall-clock seconds between consecutive step barriers.
 *
 * With `PT_XLA_DEBUG_LEVEL=2` the master process prints an "Execution Analysis" block for every graph it runs
 * (torch_xla/csrc/debug_util.cpp l. 260-300 at v2.9.0: level >= 2 prints executions, only where
 * PJRT_LOCAL_PROCESS_RANK is 0), and the block of the step barrier names it as the cause ("user mark_step" /
 * `torch_xla.sync`, l. 321-340). `.tpu-ready/profile-run.sh` stamps every line with the seconds since launch,
 * so the barrier blocks' stamps give one time per step. A step whose interval holds a "Compilation Analysis"
 * block compiled a graph: its time is compile time, not step time, and is left out of the steady figure.
 * The debug output itself slows the host a little; the figure is the step time of the profiling run.
 */
import type { AnalysisBlock, RunEvidence } from './read';

export interface StepTiming {
  /** Median seconds of the steps that compiled nothing. */
  seconds: number;
  /** Steady steps the median is taken over. */
  steadySteps: number;
  /** Steps whose interval held a compilation (left out). */
  compiledSteps: number;
  min: number;
  max: number;
  /** The first step barrier of the series: log index and 1-based line. */
  log: number;
  logLine: number;
  process: string;
}

/** The fewest steady steps a median is taken over; fewer, and the run says nothing reliable about step time. */
export const MIN_STEADY_STEPS = 3;

/**
 * The step time of the newest log that has one (logs are read in name order: profile-run.sh names them by
 * date), from its process with the most steady steps; null when it cannot be told.
 */
export function stepTiming(ev: RunEvidence): StepTiming | null {
  const byProcess = new Map<string, AnalysisBlock[]>();
  for (const b of ev.blocks) {
    if (b.time === null) continue;
    const key = `${b.log}\u0000${b.process}`;
    byProcess.set(key, [...(byProcess.get(key) ?? []), b]);
  }
  let best: StepTiming | null = null;
  for (const blocks of byProcess.values()) {
    const t = timingOf(blocks);
    if (t && (!best || t.log > best.log || (t.log === best.log && t.steadySteps > best.steadySteps))) best = t;
  }
  return best;
}

function timingOf(blocks: AnalysisBlock[]): StepTiming | null {
  const barriers = blocks.filter((b) => b.kind === 'execution' && b.causeKind === 'step-barrier');
  const compiles = blocks.filter((b) => b.kind === 'compilation').map((b) => b.time!);
  const steady: number[] = [];
  let compiled = 0;
  for (let i = 1; i < barriers.length; i++) {
    const from = barriers[i - 1].time!;
    const to = barriers[i].time!;
    if (to < from) continue; // stamps from two launches in one log
    if (compiles.some((c) => c > from && c <= to)) compiled++;
    else steady.push(to - from);
  }
  if (steady.length < MIN_STEADY_STEPS) return null;
  const sorted = [...steady].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { seconds: median, steadySteps: steady.length, compiledSteps: compiled, min: sorted[0], max: sorted[sorted.length - 1], log: barriers[0].log, logLine: barriers[0].logLine, process: barriers[0].process };
}
