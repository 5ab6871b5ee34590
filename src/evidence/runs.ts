/**
 * Profiling runs in `.tpu-ready/runs/`: the launcher (checklist generators, `profilingRun`) writes
 * `<stamp>.log` and `<stamp>.metrics[.<ordinal>]` per run. Pure: hosts list the folder and read the files.
 */
import { runtimeFindings, type RuntimeFinding, type WorkspaceFile } from './findings';
import { counterValue, fallbackCounters, HOST_READ_COUNTER, readRunLogs, type RunEvidence } from './read';

export interface RunFile {
  /** Workspace-relative path (`.tpu-ready/runs/2026-12-01T10-00-00Z.log`). */
  path: string;
  mtimeMs: number;
  text: string;
}

export interface RunStatus {
  /** The run's files (one stamp), newest run first. */
  files: string[];
  /** Modification time of the run's newest file. */
  mtimeMs: number;
  evidence: RunEvidence;
  findings: RuntimeFinding[];
  /** The run is newer than the code's last change. */
  fresh: boolean;
  /** Checklist step 9: fresh, something of torch_xla's output was read, and no runtime finding is open. */
  met: boolean;
  /** "12 compilations in 11 steps (1.09 per step); CPU fallbacks: aten::_ctc_loss ×11" */
  summary: string;
}

/** The run a file belongs to: its name up to the first dot (`<stamp>.log`, `<stamp>.metrics.1`). */
export function runKey(path: string): string {
  const base = path.slice(path.lastIndexOf('/') + 1);
  const dot = base.indexOf('.');
  return path.slice(0, path.lastIndexOf('/') + 1) + (dot > 0 ? base.slice(0, dot) : base);
}

/** Files grouped by run, newest run first. */
export function groupRuns(files: readonly RunFile[]): RunFile[][] {
  const runs = new Map<string, RunFile[]>();
  for (const f of files) {
    const k = runKey(f.path);
    runs.set(k, [...(runs.get(k) ?? []), f]);
  }
  const newest = (r: RunFile[]) => Math.max(...r.map((f) => f.mtimeMs));
  return [...runs.values()].map((r) => r.sort((a, b) => a.path.localeCompare(b.path))).sort((a, b) => newest(b) - newest(a));
}

/** The newest run's findings and whether it counts for step 9; null when there is no run. */
export function latestRun(files: readonly RunFile[], workspace: readonly WorkspaceFile[], codeMtimeMs: number): RunStatus | null {
  const [run] = groupRuns(files);
  if (!run) return null;
  const evidence = readRunLogs(run.map((f) => ({ name: f.path, text: f.text })));
  const findings = runtimeFindings(evidence, workspace);
  const mtimeMs = Math.max(...run.map((f) => f.mtimeMs));
  const fresh = mtimeMs > codeMtimeMs;
  return { files: run.map((f) => f.path), mtimeMs, evidence, findings, fresh, met: fresh && evidence.recognized && findings.length === 0, summary: runSummaryText(evidence) };
}

export function runSummaryText(ev: RunEvidence): string {
  const c = ev.blocks.filter((b) => b.kind === 'compilation').length;
  const steps = counterValue(ev, 'MarkStep');
  const fb = fallbackCounters(ev);
  fb.delete(HOST_READ_COUNTER);
  const parts = [`${c} compilation${c === 1 ? '' : 's'}${steps ? ` in ${steps} step${steps === 1 ? '' : 's'} (${Math.round((c / steps) * 100) / 100} per step)` : ''}`];
  parts.push(fb.size ? `CPU fallbacks: ${[...fb].map(([op, n]) => `${op} ×${n}`).join(', ')}` : 'no CPU fallbacks');
  return parts.join('; ');
}
