/**
 * View model of the cost estimator, as the code lens, the palette command and the integration panel
 * render it. Types only; built by src/cost/vm.ts (buildCostVM), so the editor never computes costs.
 */

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
  display: { time: string; cost: string; range: string; tokensPerSecond: string };
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
