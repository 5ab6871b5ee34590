/**
 * The typed protocol between the extension host and the integration panel (webview). Types only: the
 * host validates what the webview sends (src/checklist/messages.ts), the webview validates what the
 * host sends (webview/protocol.ts); anything else is ignored.
 */
import type { ChecklistVM } from './checklist';
import type { CostVM, PricedFindingsVM } from './cost';

/** Host → webview. */
export interface ToWebview {
  /** The whole state: sent on load, after every change of findings or progress. */
  /** `cost`: the last estimate the cost module produced (tpuReady.showCostPanel), or null. */
  /** `priced`: the open hot-loop findings priced on the workspace's training config, or null (no config). */
  state: { checklist: ChecklistVM; cost: CostVM | null; priced: PricedFindingsVM | null };
  /** A host-side action finished (shown as a transient notice in the panel). */
  notice: { level: 'info' | 'error'; text: string };
}

/** Webview → host. */
export interface ToHost {
  /** The webview has loaded and wants the state. */
  ready: Record<string, never>;
  /** A manual checklist item was ticked or unticked. */
  tick: { step: number; item: string; checked: boolean };
  /** The note of a step changed (the whole text). */
  note: { step: number; text: string };
  /** Reveal a finding in the editor. */
  openFinding: { uri: string; line: number; character: number; cell: number | null };
  /** A per-step action (fix all safe issues, generators). */
  action: { step: number; action: StepActionId };
  /** Export the readiness report. */
  exportReport: { format: 'md' | 'html' };
  /** Rescan the workspace. */
  rescan: Record<string, never>;
  /** Run the cost estimator (tpuReady.estimateCost); its result comes back in `state.cost`. */
  estimateCost: Record<string, never>;
}

export type StepActionId = 'fixSafe' | 'smokeTest' | 'resumeScaffold' | 'ciWorkflow' | 'compileCache';

export type Envelope<M, K extends keyof M = keyof M> = K extends keyof M ? { type: K; body: M[K] } : never;
export type ToWebviewMessage = Envelope<ToWebview>;
export type ToHostMessage = Envelope<ToHost>;
