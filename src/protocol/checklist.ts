/** View model of the migration checklist, as the sidebar and the integration panel render it. Types only. */
import type { StepActionId } from './messages';

export type StepStatus = 'done' | 'in-progress' | 'todo';

/** Where a finding is, as the webview links it to code (shared by checklist and priced findings). */
export interface CodeLocationVM {
  /** Workspace-relative path shown to the user. */
  path: string;
  /** Uri the host opens (opaque to the webview). */
  uri: string;
  /** 0-based line and UTF-16 character (within the cell for notebooks). */
  line: number;
  character: number;
  cell: number | null;
}

export interface FindingVM extends CodeLocationVM {
  rule: string;
  severity: 'error' | 'warning' | 'info' | 'hint';
  message: string;
  docsUrl: string;
  fix: 'safe' | 'unsafe' | 'display' | null;
  /** Other places of the same problem (0-based lines). */
  related?: { path: string; line: number; cell: number | null; message: string }[];
}

export interface StepItemVM {
  id: string;
  text: string;
  /** manual: ticked by the team; evidence: read from the code. */
  kind: 'manual' | 'evidence';
  met: boolean;
}

export interface StepActionVM {
  id: StepActionId;
  label: string;
}

export interface StepVM {
  step: number;
  title: string;
  explanation: string;
  status: StepStatus;
  items: StepItemVM[];
  findings: FindingVM[];
  /** Open findings of the step (findings may be capped; this is the full count). */
  open: number;
  note: string;
  actions: StepActionVM[];
}

export interface HistoryPointVM {
  date: string;
  score: number;
  open: number;
  done: number;
}

export interface ChecklistVM {
  profile: 'torch_xla' | 'torchtpu';
  score: number;
  done: number;
  total: number;
  steps: StepVM[];
  history: HistoryPointVM[];
  /** Set when .tpu-ready/progress.json could not be read: ticks and notes are not saved until it is fixed. */
  progressError: string | null;
}
