/**
 * A run's measured step time as the estimate's throughput (pure): the step time of a profiling run
 * (src/evidence/steps.ts) on the TPU it ran on becomes tokens/s per chip there, with the log line as the source.
 * Used by `tpu-ready cost --evidence` and by the editor's cost views with the newest run of `.tpu-ready/runs/`.
 */
import { stepTiming, type RunEvidence } from '../evidence';
import type { CostReport } from './estimate';
import { HARDWARE, parseHardware, sliceName, type HardwareId } from './prices';
import { sig } from './format';
import type { Sourced } from './types';

export interface MeasuredStep {
  seconds: number;
  steady: number;
  compiled: number;
  /** "runs/a.log:12": where the series starts. */
  where: string;
  /** The slice, or why it is unknown. */
  slice: { id: HardwareId; chips: number; name: string } | string;
}

/** Where --measured-on would say it, for the messages (the editor has no flag: it says to name the slice in the log). */
const HOW_TO_NAME = 'pass --measured-on, e.g. --measured-on v5litepod-8';

/**
 * The measured step and the slice it ran on, or why there is none. `names[i]` is how to show log i;
 * `measuredOn` (a flag) wins over the log's own `tpu-ready: accelerator-type` line.
 */
export function measuredStepOf(ev: RunEvidence, names: string[], measuredOn: { id: HardwareId; chips?: number; name: string } | null, howToName = HOW_TO_NAME): MeasuredStep | string {
  const t = stepTiming(ev);
  if (!t) return `no step time in ${names.length === 1 ? names[0] : `${names.length} logs`}: it needs a log of .tpu-ready/profile-run.sh (stamped lines, PT_XLA_DEBUG_LEVEL=2) with at least 3 steps that compiled nothing`;
  const named = measuredOn ?? (ev.acceleratorType ? { ...(parseHardware(ev.acceleratorType) ?? { id: null }), name: ev.acceleratorType } : null);
  const base = { seconds: t.seconds, steady: t.steadySteps, compiled: t.compiledSteps, where: `${names[t.log] ?? ev.logs[t.log]}:${t.logLine}` };
  if (!named) return { ...base, slice: `the log does not say which TPU it ran on (${howToName})` };
  if (!named.id || !named.chips) return { ...base, slice: `"${named.name}" is not a slice name with a size (${howToName})` };
  return { ...base, slice: { id: named.id, chips: named.chips, name: named.name } };
}

/** The measured step time as tokens/s per chip on the run's hardware, or why it cannot be used for this job. */
export function measuredThroughput(m: MeasuredStep | string, r: CostReport): { hw: HardwareId; value: Sourced<number> } | string {
  if (typeof m === 'string') return m;
  if (typeof m.slice === 'string') return `step time ${sig(m.seconds)} s measured (${m.where}), but ${m.slice}`;
  const slice = m.slice;
  const f = r.config.fields;
  if (!f.globalBatch || !f.seqLen) return `step time ${sig(m.seconds)} s measured (${m.where}), but the config gives no global batch and sequence length to turn it into tokens/s`;
  const shown = sliceName(HARDWARE[slice.id], slice.chips);
  if (!r.estimates.some((e) => e.hardware === slice.id)) return `step time measured on ${shown}, which is not among the estimated hardware (add it to the hardware list)`;
  const tokens = f.globalBatch.value * f.seqLen.value;
  const formula = `measured in the run (${m.where}): median step ${sig(m.seconds)} s over ${m.steady} steps that compiled nothing (${m.compiled} compiling steps left out) on ${shown}; ${f.globalBatch.value} × ${f.seqLen.value} tokens per step ÷ ${slice.chips} chips (assumes the profiled run used this config's global batch)`;
  return { hw: slice.id, value: { value: tokens / m.seconds / slice.chips, source: { kind: 'derived', formula } } };
}
