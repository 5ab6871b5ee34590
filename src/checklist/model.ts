/**
 * The checklist state: each step's status from the evidence (its open findings, facts read from the
 * code) and the team's ticks, the n/10 progress, and the view model the sidebar and panel render.
 *
 * A step is done when none of its findings remain open and every sub-item is met (evidence items by
 * the code, manual items by a tick); in progress when something is met or it has no open finding; to
 * do otherwise.
 */
import { docsUrl } from '../core/rule';
import type { Severity, Step, TargetProfile } from '../core/types';
import type { ChecklistVM, FindingVM, StepStatus, StepVM } from '../protocol/checklist';
import type { Facts } from './facts';
import { ACTION_LABELS, STEPS } from './steps';
import type { Progress, Snapshot } from './progress';

/** A finding as the checklist needs it (the CLI's JSON finding shape, plus the host's uri). */
export interface ChecklistFinding {
  rule: string;
  step: Step;
  severity: Severity;
  message: string;
  /** Workspace-relative path. */
  path: string;
  /** Uri or link target the host understands (the CLI: the path). */
  uri: string;
  /** 1-based line and column (within the cell for notebooks). */
  line: number;
  column: number;
  cell: number | null;
  fix: { applicability: 'safe' | 'unsafe' | 'display' } | null;
  /** Other places of the same problem (1-based lines; `path` workspace-relative). */
  related?: { path: string; line: number; cell: number | null; message: string }[];
}

export interface ChecklistInput {
  profile: TargetProfile;
  score: number;
  findings: readonly ChecklistFinding[];
  facts: Facts;
  progress: Progress;
  /** Set when the progress file is unreadable (then `progress` is empty and must not be saved). */
  progressError?: string | null;
  /** What the latest profiling run measured (src/evidence runSummaryText), shown with step 9. */
  run?: string | null;
}

export interface StepState {
  step: Step;
  status: StepStatus;
  open: ChecklistFinding[];
  items: { id: string; kind: 'manual' | 'evidence'; text: string; met: boolean }[];
}

const SEVERITY_ORDER: Record<Severity, number> = { error: 0, warning: 1, info: 2, hint: 3 };

function byLocation(a: ChecklistFinding, b: ChecklistFinding): number {
  return SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] || a.path.localeCompare(b.path) || (a.cell ?? -1) - (b.cell ?? -1) || a.line - b.line || a.column - b.column || a.rule.localeCompare(b.rule);
}

export function stepStates(input: ChecklistInput): StepState[] {
  return STEPS.map((def) => {
    const open = input.findings.filter((f) => f.step === def.step).sort(byLocation);
    const ticks = input.progress.steps[def.step].ticks;
    const items = def.items.filter((it) => !it.profiles || it.profiles.includes(input.profile)).map((it) =>
      it.kind === 'manual'
        ? { id: it.id, kind: it.kind, text: it.text, met: ticks[it.id] === true }
        : { id: it.id, kind: it.kind, text: it.text[input.profile], met: input.facts[it.fact] },
    );
    const allMet = items.every((i) => i.met);
    const status: StepStatus = !open.length && allMet ? 'done' : items.some((i) => i.met) || !open.length ? 'in-progress' : 'todo';
    return { step: def.step, status, open, items };
  });
}

export function doneCount(states: readonly StepState[]): number {
  return states.filter((s) => s.status === 'done').length;
}

/** The snapshot of today's state for the history. */
export function snapshotOf(states: readonly StepState[], score: number, date: string): Snapshot {
  const open = {} as Record<Step, number>;
  for (const s of states) open[s.step] = s.open.length;
  return { date, score, done: doneCount(states), open };
}

export function toFindingVM(f: ChecklistFinding): FindingVM {
  return {
    rule: f.rule, severity: f.severity, message: f.message, path: f.path, uri: f.uri, line: f.line - 1, character: f.column - 1, cell: f.cell,
    docsUrl: docsUrl(f.rule), fix: f.fix?.applicability ?? null,
    ...(f.related?.length ? { related: f.related.map((r) => ({ ...r, line: r.line - 1 })) } : {}),
  };
}

/** Findings shown per step in the panel (the count is always complete). */
export const MAX_FINDINGS_PER_STEP = 200;

/** `maxFindings`: how many findings each step lists (reports list them all). */
export function checklistVM(input: ChecklistInput, maxFindings = MAX_FINDINGS_PER_STEP): ChecklistVM {
  const states = stepStates(input);
  const steps: StepVM[] = states.map((s) => {
    const def = STEPS[s.step - 1];
    const hasSafe = s.open.some((f) => f.fix?.applicability === 'safe');
    return {
      step: s.step,
      title: def.title,
      explanation: def.explanation[input.profile] + (s.step === 9 && input.run ? ` Last profiling run: ${input.run}.` : ''),
      status: s.status,
      items: s.items,
      findings: s.open.slice(0, maxFindings).map(toFindingVM),
      open: s.open.length,
      note: input.progress.steps[s.step].note,
      actions: def.actions.filter((a) => (a !== 'fixSafe' || hasSafe) && (a !== 'compileCache' || input.profile === 'torch_xla')).map((id) => ({ id, label: ACTION_LABELS[id] })),
    };
  });
  return {
    profile: input.profile,
    score: input.score,
    done: doneCount(states),
    total: STEPS.length,
    steps,
    history: input.progress.history.map((h) => ({ date: h.date, score: h.score, done: h.done, open: Object.values(h.open).reduce((a, b) => a + b, 0) })),
    progressError: input.progressError ?? null,
  };
}
