/** Types of the cost estimator. Pure data: no host imports. */

/** Where a value came from: a config line, a derivation, an assumption, a CLI flag or a built-in default. */
export type Source =
  | { kind: 'config'; file: string; line: number; key: string }
  | { kind: 'derived'; formula: string }
  | { kind: 'assumption'; file: string; line: number; key: string }
  | { kind: 'flag'; flag: string }
  | { kind: 'default'; note: string };

export interface Sourced<T> {
  value: T;
  source: Source;
}

/** A document read from a config file: every leaf under its dotted key, with its 1-based line. */
export interface Entry {
  value: unknown;
  file: string;
  line: number;
}
export type Entries = Map<string, Entry>;

export interface ConfigFile {
  path: string;
  text: string;
}

export type Framework =
  | 'nanogpt'
  | 'hf-trainer'
  | 'hf-model'
  | 'lightning'
  | 'hydra'
  | 'accelerate'
  | 'deepspeed'
  | 'litgpt'
  | 'torchtitan'
  | 'tpu-ready';

export const FRAMEWORK_LABELS: Record<Framework, string> = {
  nanogpt: 'nanoGPT',
  'hf-trainer': 'HF TrainingArguments',
  'hf-model': 'HF model config.json',
  lightning: 'Lightning',
  hydra: 'Hydra/OmegaConf',
  accelerate: 'HF Accelerate',
  deepspeed: 'DeepSpeed',
  litgpt: 'LitGPT',
  torchtitan: 'torchtitan',
  'tpu-ready': '[tool.tpu-ready.cost]',
};

/** Canonical fields (catalog RULES.md §4). */
export const FIELDS = {
  globalBatch: 'GBS (global batch, sequences per optimizer step)',
  microBatch: 'MBS (per-device micro-batch)',
  gradAccum: 'GA (gradient-accumulation steps)',
  seqLen: 'SEQ (sequence length)',
  steps: 'STEPS (optimizer steps)',
  epochs: 'EPOCHS',
  datasetTokens: 'TOK (dataset tokens)',
  datasetSamples: 'dataset samples',
  params: 'PARAMS (parameter count)',
  layers: 'LAYERS',
  dModel: 'D_MODEL (hidden size)',
  heads: 'HEADS',
  ffn: 'FFN (MLP hidden size)',
  vocab: 'VOCAB',
  precision: 'PREC (precision)',
  accelerator: 'ACCEL (accelerator)',
  devices: 'DEV (devices in the job)',
  nodes: 'NODES',
  evalInterval: 'EVAL_EVERY (optimizer steps between evaluations)',
  evalIters: 'EVAL_ITERS (micro-batches per split per evaluation)',
  evalTokens: 'EVAL_TOKENS (tokens per evaluation pass)',
  compile: 'COMPILE (torch.compile on GPU)',
  dataset: 'DATASET',
  model: 'MODEL (name)',
} as const;
export type FieldName = keyof typeof FIELDS;
export type StringField = 'precision' | 'accelerator' | 'compile' | 'dataset' | 'model';
export type NumericField = Exclude<FieldName, StringField>;

/** The key to set in `.tpu-ready/cost.toml` (or `[tool.tpu-ready.cost]`) to supply each field. */
export const FIELD_KEYS: Record<FieldName, string> = {
  globalBatch: 'global-batch',
  microBatch: 'micro-batch',
  gradAccum: 'grad-accum',
  seqLen: 'seq-len',
  steps: 'steps',
  epochs: 'epochs',
  datasetTokens: 'dataset-tokens',
  datasetSamples: 'dataset-samples',
  params: 'params',
  layers: 'layers',
  dModel: 'd-model',
  heads: 'heads',
  ffn: 'ffn',
  vocab: 'vocab',
  precision: 'precision',
  accelerator: 'accelerator',
  devices: 'devices',
  nodes: 'nodes',
  evalInterval: 'eval-interval',
  evalIters: 'eval-iters',
  evalTokens: 'eval-tokens',
  compile: 'compile',
  dataset: 'dataset',
  model: 'model',
};

export type TrainingFields = { [K in NumericField]?: Sourced<number> } & { [K in StringField]?: Sourced<string> };

/** A value the estimate needs and nobody gave, with how to supply it. */
export interface Missing {
  field: FieldName | 'tokens';
  message: string;
  howToSupply: string;
}

/** The canonical training config: every value with its provenance. */
export interface TrainingConfig {
  frameworks: Framework[];
  files: string[];
  fields: TrainingFields;
  missing: Missing[];
  notes: string[];
}

/** A config that cannot be read or contradicts itself. The message names the file, line and field. */
export class CostConfigError extends Error {
  constructor(
    message: string,
    readonly file?: string,
    readonly line?: number,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'CostConfigError';
  }
}
