/** Shared types of the engine. No runtime code, no host imports. */
import type { ProjectView } from '../model/project';
import type { MemoryBudget } from './budget';

export type Severity = 'error' | 'warning' | 'info' | 'hint';
export type Applicability = 'safe' | 'unsafe' | 'display';
export type FixAvailability = 'always' | 'sometimes' | 'none';
export type Step = 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10;
/** Effort points: 1 trivial, 3 complex, 5 redesign, 7 re-architecture, 13 unknown. */
export type Effort = 1 | 3 | 5 | 7 | 13;
export type TargetProfile = 'torch_xla' | 'torchtpu';
export type FixStyle = 'dual-path' | 'tpu-only';

export interface Target {
  profile: TargetProfile;
  /** torch_xla "major.minor" (e.g. "2.9"); "preview" for torchtpu. */
  version: string;
}

/** A text replacement in UTF-16 offsets of the analysed text (for notebooks: the combined program). */
export interface Edit {
  start: number;
  end: number;
  text: string;
}

/** `import module [as alias]` when `name` is absent, else `from module import name [as alias]`. */
export interface ImportSpec {
  module: string;
  name?: string;
  alias?: string;
}

export interface Fix {
  title: string;
  applicability: Applicability;
  edits: Edit[];
  imports: ImportSpec[];
  /** The fix calls the generated device-abstraction module (dual-path style). */
  needsAccel: boolean;
}

export interface Finding {
  rule: string;
  severity: Severity;
  message: string;
  /** UTF-16 offsets in the analysed text. */
  start: number;
  end: number;
  step: Step;
  effort: Effort;
  fix: Fix | null;
  /**
   * Other places that are part of the same problem (issue 9): a tie in another module's constructor, the CUDA device a
   * helper returns, a duplicate another rule reported on the same expression. `path` absent: the same file.
   */
  related?: RelatedLocation[];
}

export interface RelatedLocation {
  /** UTF-16 offsets in the analysed text of `path` (this file when absent). */
  start: number;
  end: number;
  /** Normalized path ('/' separators) of another module of the project. */
  path?: string;
  message: string;
}

/** A related location placed in its document. */
export interface LocatedRelated extends RelatedLocation {
  /** Notebook cell (same-file locations in notebooks), else null. */
  cell: number | null;
  startPos: Position;
  endPos: Position;
}

export interface Position {
  /** 0-based line (within the cell for notebooks). */
  line: number;
  /** 0-based UTF-16 column. */
  character: number;
}

/** A finding placed in its document: what hosts (CLI, editor) consume. */
export interface LocatedFinding extends Finding {
  /** Index of the notebook cell (all cells counted from 0), null for .py files. */
  cell: number | null;
  startPos: Position;
  endPos: Position;
  related?: LocatedRelated[];
}

export interface AnalyzeOptions {
  target: Target;
  fixStyle: FixStyle;
  /** Python module name of the generated device-abstraction module (dual-path). */
  accelModule: string;
  /** Rule selection by id or prefix; empty select means all. */
  select: string[];
  ignore: string[];
  /**
   * `performance.now()` after which analysis of the file stops with BudgetExceeded (checked between rules and
   * on every report): one file must not stall the scan or the editor.
   */
  deadline?: number;
  /**
   * The project's other modules (issue 9): rules follow calls, classes and constants into them. Absent: the file is
   * analysed alone, exactly as before.
   */
  project?: ProjectView | null;
  /** Bytes of heap and WebAssembly memory the file's analysis may add (checked like `deadline`): see core/budget.ts. */
  memory?: MemoryBudget;
  /**
   * Delete tree-sitter's tree as soon as its mirror is built (src/core/mirror.ts Mirror.release): the analysis answers
   * from the mirror, and `Analysis.tree` cannot be edited for an incremental re-parse. For hosts that never re-parse
   * incrementally (the CLI): the WebAssembly memory of the tree (34-131 bytes per source byte) is freed before the
   * rules run, so it no longer adds to their peak.
   */
  releaseTree?: boolean;
}

export const DEFAULT_TARGET: Target = { profile: 'torch_xla', version: '2.9' };

export const DEFAULT_OPTIONS: AnalyzeOptions = {
  target: DEFAULT_TARGET,
  fixStyle: 'dual-path',
  accelModule: 'accel',
  select: [],
  ignore: [],
};

/** The ten integration-checklist steps (catalog §0.4). */
export const STEP_TITLES: Record<Step, string> = {
  1: 'Environment',
  2: 'Install',
  3: 'Move model to the XLA device',
  4: 'Data input and static shapes',
  5: 'Mixed precision',
  6: 'Shape discipline and compilation boundaries',
  7: 'Distributed training',
  8: 'Checkpointing and resilience',
  9: 'Profiling and debugging',
  10: 'CI and reproducibility',
};

export const EFFORT_LABELS: Record<Effort, string> = { 1: 'trivial', 3: 'complex', 5: 'redesign', 7: 're-architecture', 13: 'unknown' };

/** Where a finding or a related location is, as the CLI reports it (1-based lines, columns in code points). */
export interface OutputSpan {
  path: string;
  /** 1-based; within the cell for notebooks */
  line: number;
  /** 1-based, in Unicode code points */
  column: number;
  endLine: number;
  endColumn: number;
  cell: number | null;
}

/** Another place of the same problem; `path` is the display path of another file, else this one. */
export interface OutputRelated extends OutputSpan {
  message: string;
}
