/**
 * View model of the cost estimator, as the code lens, the palette command and the integration panel
 * render it. Types only; built by src/cost/vm.ts (buildCostVM), so the editor never computes costs.
 */
import type { CodeLocationVM } from './checklist';

export type CostSourceKind = 'config' | 'derived' | 'assumption' | 'flag' | 'default';

export interface CostSourceVM {
  /** "config.yaml:9 `train.global_batch_size`", "default: …", "= MBS × GA × devices" */
  text: string;
  file?: string;
  /** 1-based. */
  line?: number;
  kind: CostSourceKind;
}

export interface CostValueVM {
  key: string;
  label: string;
  value: number | string | string[];
  display: string;
  source: CostSourceVM;
}

export interface CostEstimateVM {
  hardware: string;
  hardwareName: string;
  slice: string;
  chips: number;
  pricing: 'on-demand' | 'spot';
  hours: number;
  cost: number | null;
  costLow: number | null;
  costHigh: number | null;
  hoursLow: number;
  hoursHigh: number;
  /** `price`: "$1.2/chip-h us-central1 as of 2026-11-01 (source)"; `mfu`: "36% (24%–56%)". */
  display: { time: string; cost: string; range: string; tokensPerSecond: string; price: string; mfu: string };
  breakdown: { label: string; hours: number }[];
  warnings: string[];
  primary: boolean;
}

export interface CostVM {
  status: 'ok' | 'missing' | 'error';
  label: 'estimate';
  files: string[];
  frameworks: string[];
  /** The lens line (0-based) and text, in the file it was built for. */
  lens: { line: number; text: string; tooltip: string } | null;
  fields: CostValueVM[];
  assumptions: CostValueVM[];
  estimates: CostEstimateVM[];
  missing: { field: string; message: string; howToSupply: string }[];
  error: { message: string; file?: string; line?: number; field?: string } | null;
  warnings: string[];
  markdown: string;
  /** Prefill for the palette command's quick picks. */
  defaults: { hardware: string[]; chips: number; pricing: string[] };
}

/** One finding priced on the workspace's training run (src/cost/findings.ts): always an estimate. */
export interface PricedFindingVM extends CodeLocationVM {
  rule: string;
  message: string;
  /** 1-based lines of the file where the rule fired, for rules priced once per file (a loop, a pipeline). */
  lines: number[];
  /** Extra wall-clock hours on the configured run. */
  hours: number;
  /** Extra cost on `basis`; null without a price. */
  cost: number | null;
  /** "≈ +2.8 h · +$56 on v5e-8 on-demand (estimate: host sync in the hot loop; 20 ms × 5,000 steps)" */
  summary: string;
  /** The per-finding assumptions it rests on, editable under [findings.RULE] in .tpu-ready/cost.toml. */
  assumptions: { key: string; value: number; unit: string; meaning: string; source: string }[];
}

/** The open findings with a time and cost impact, priced on one training config of the workspace. */
export interface PricedFindingsVM {
  label: 'estimate';
  /** Workspace-relative path of the training config the findings are priced on. */
  config: string;
  /** "v5e-8 on-demand" */
  basis: string;
  /** Most expensive first. */
  findings: PricedFindingVM[];
  /** Priced findings left out of `findings` (the list is capped). */
  more: number;
}
