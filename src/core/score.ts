/**
 * Readiness score (0–100) and effort.
 *
 * penalty(file) = Σ weight(severity) over its findings, weights error 10, warning 4, info 1, hint 0
 * score(file)   = round(100 × e^(−penalty / 50))      (1 error → 82, 5 errors → 37, no findings → 100)
 * score(workspace) = round(mean of score(file) over the files that use torch or have findings)
 *                    (100 when there is none)
 * effort = Σ effort points of the open findings (1 trivial, 3 complex, 5 redesign, 7 re-architecture,
 *          13 unknown)
 */
import type { Finding, Severity } from './types';

export const SEVERITY_WEIGHT: Record<Severity, number> = { error: 10, warning: 4, info: 1, hint: 0 };
export const SCORE_SCALE = 50;

export function penalty(findings: Pick<Finding, 'severity'>[]): number {
  return findings.reduce((s, f) => s + SEVERITY_WEIGHT[f.severity], 0);
}

export function fileScore(findings: Pick<Finding, 'severity'>[]): number {
  return Math.round(100 * Math.exp(-penalty(findings) / SCORE_SCALE));
}

export interface ScoredFile {
  findings: Pick<Finding, 'severity' | 'effort'>[];
  /** The file uses torch (or has findings): it counts toward the workspace score. */
  relevant: boolean;
}

export function workspaceScore(files: ScoredFile[]): number {
  const counted = files.filter((f) => f.relevant || f.findings.length > 0);
  if (!counted.length) return 100;
  return Math.round(counted.reduce((s, f) => s + fileScore(f.findings), 0) / counted.length);
}

export function effort(findings: Pick<Finding, 'effort'>[]): number {
  return findings.reduce((s, f) => s + f.effort, 0);
}
