import type { Node } from './parse';
import type { Semantics } from './semantics';
import type { ProgramModel } from '../model';
import type { CombinedProgram } from './notebook';
import type { Idioms } from './idioms';
import type { LineIndex } from './source';
import type { TextFileKind } from './engine';
import type { ProjectView } from '../model/project';
import type {
  RelatedLocation, AnalyzeOptions, Applicability, Edit, Effort, FixAvailability, ImportSpec, Severity, Step, TargetProfile,
} from './types';

export interface RuleDocs {
  /** "Checks for …" */
  what: string;
  /** Why it stops or slows the code on TPU. */
  why: string;
  /** Offending code. */
  example: string;
  /** What to write instead (torch_xla profile). */
  useInstead: string;
  /** Why the fix is safe or what to review when it is not. */
  fixSafety?: string;
  /** The torch_xla / PyTorch sources the rule rests on (catalog citation keys, files and lines, commits). */
  sources: string[];
  /** Notes for the torchtpu (preview) profile. */
  torchtpu?: string;
}

export interface FixDraft {
  title?: string;
  applicability?: Applicability;
  edits: Edit[];
  imports?: ImportSpec[];
  needsAccel?: boolean;
}

export interface ReportOptions {
  message?: string;
  severity?: Severity;
  fix?: FixDraft | null;
  /** Other places of the same problem (another module's lines carry `path`). */
  related?: RelatedLocation[];
}

export interface RuleContext {
  readonly path: string;
  readonly text: string;
  readonly root: Node;
  readonly sema: Semantics;
  /** The program model: abstract values of expressions (src/model), built lazily once per file. */
  readonly model: ProgramModel;
  readonly options: AnalyzeOptions;
  /** The combined program of a notebook (magics, cell spans), null for .py files. */
  readonly notebook: CombinedProgram | null;
  /** Replacements for the target profile and fix style. */
  readonly idiom: Idioms;
  /** The project's other modules, null when the file is analysed alone. */
  readonly project: ProjectView | null;
  report(at: Node | { start: number; end: number }, opts?: ReportOptions): void;
}

/** Context for rules that read non-Python project files (requirements, Dockerfiles, shell, env, YAML). */
export interface TextContext {
  readonly path: string;
  readonly text: string;
  readonly fileKind: TextFileKind;
  readonly options: AnalyzeOptions;
  readonly idiom: Idioms;
  readonly lines: LineIndex;
  report(at: { start: number; end: number }, opts?: ReportOptions): void;
}

export interface Rule {
  id: string;
  /** Reads as "allow <name>": names the pattern, not the fix. */
  name: string;
  title: string;
  severity: Severity;
  step: Step;
  effort: Effort;
  /** Default one-line message; reports may pass a more specific one. */
  message: string;
  fix: { availability: FixAvailability; applicability?: Applicability; title?: string };
  docs: RuleDocs;
  /** Substrings one of which must occur in the text for the rule to possibly match (prefilter). */
  triggers: string[];
  /** Runs on `.ipynb` only. */
  notebookOnly?: boolean;
  /**
   * The target profiles the rule runs under (default: all). A rule about torch_xla's own API, environment or
   * runtime (deprecations, XLA_* variables, SPMD, XRT) says nothing a torchtpu user can act on.
   */
  profiles?: TargetProfile[];
  /**
   * The rule describes work on the accelerator (host syncs, step barriers, batch shapes, XLA checkpoints): it does not
   * run on a training program that places nothing on an accelerator (src/model/placement.ts `trainsOnCpuOnly`),
   * which TPU114 reports instead.
   */
  deviceWork?: boolean;
  /** Python files and notebooks. */
  check?(ctx: RuleContext): void;
  /** Non-Python project files of `textKinds`. */
  checkText?(ctx: TextContext): void;
  textKinds?: TextFileKind[];
}

export function defineRule(rule: Rule): Rule {
  return rule;
}

export function docsUrl(id: string): string {
  return `https://github.com/tpu-ready/tpu-ready/blob/main/docs/rules/${id}.md`;
}

/** Whether a rule id is selected by id-or-prefix lists (`TPU2` selects TPU2xx). */
export function isSelected(id: string, select: string[], ignore: string[]): boolean {
  const matches = (p: string) => id.startsWith(p.trim().toUpperCase());
  if (select.length && !select.some(matches)) return false;
  return !ignore.some(matches);
}
