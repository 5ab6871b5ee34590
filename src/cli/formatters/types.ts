import type { Rule } from '../../core/rule';
import type { Target } from '../../core/types';
import type { OutFinding } from '../process';

export interface Summary {
  files: number;
  findings: number;
  /** Workspace readiness score, 0–100 (docs/scoring.md). */
  score: number;
  errors: number;
  warnings: number;
  info: number;
  fixable: { safe: number; unsafe: number };
  /** Sum of effort points of the open findings. */
  effort: number;
  /** Open findings per checklist step "1".."10". */
  byStep: Record<string, number>;
  skipped: number;
  /** Files that could not be analysed: unreadable, broken notebooks (exit code 2). */
  failed: number;
  fixed: number;
}

export interface Notice {
  path: string;
  message: string;
  /** The file could not be analysed (not just skipped by a limit). */
  error?: boolean;
}

export interface Report {
  target: Target;
  summary: Summary;
  findings: OutFinding[];
  /** Files skipped or unreadable, with the reason. */
  notices: Notice[];
  statistics: boolean;
  /** Pretty output for a terminal. */
  color: boolean;
}

/** One interface for every output format (ast-grep's Printer). */
export interface Formatter {
  format(report: Report, rules: readonly Rule[]): string;
}
