/**
 * Framework detection and key mapping (catalog RULES.md §4): dotted entries of one config file →
 * canonical fields with provenance. Batch semantics differ by framework and are resolved later
 * (config.ts) from the `batchRule` recorded here.
 */
import { CostConfigError, type Entries, type Entry, type FieldName, type Framework, type NumericField, type Sourced, type StringField, type TrainingFields } from './types';

export interface Mapped {
  frameworks: Framework[];
  fields: TrainingFields;
  /** How GBS relates to MBS and GA: nanoGPT's GA is global; everyone else's is per device. */
  batchRule: 'global-ga' | 'per-device' | null;
  /** torchtitan: data-parallel degree divides the chips (−1 = infer). */
  parallelDivisor?: Sourced<number>;
  notes: string[];
  /** Findings-relevant hints: extra distinct input shapes implied by the data settings. */
  shapeHints: { key: string; file: string; line: number; extraShapes: number; why: string }[];
  /** Fields given only as fallbacks (a model's maximum positions as SEQ, framework defaults): any other file wins. */
  weak: string[];
}

const has = (e: Entries, k: string) => e.has(k) && e.get(k)!.value !== null && e.get(k)!.value !== undefined;
const hasPrefix = (e: Entries, p: string) => [...e.keys()].some((k) => k.startsWith(p));

export function detectFrameworks(entries: Entries, fileName: string): Framework[] {
  const out: Framework[] = [];
  const top = (k: string) => has(entries, k);
  if (['train_batch_size', 'train_micro_batch_size_per_gpu', 'zero_optimization'].some(top)) out.push('deepspeed');
  if (['per_device_train_batch_size', 'per_gpu_train_batch_size', 'num_train_epochs'].some(top)) out.push('hf-trainer');
  if (top('model_type') || top('architectures') || top('num_hidden_layers') || (top('n_positions') && top('n_embd'))) out.push('hf-model');
  if (top('distributed_type') || top('compute_environment')) out.push('accelerate');
  if (['train.global_batch_size', 'train.micro_batch_size', 'train.max_tokens', 'train.max_seq_length'].some(top) || hasPrefix(entries, 'model_config.')) out.push('litgpt');
  if (['trainer.max_steps', 'trainer.max_epochs', 'trainer.devices', 'trainer.accelerator', 'trainer.accumulate_grad_batches', 'trainer.precision'].some(top)) out.push('lightning');
  if (['training.seq_len', 'training.local_batch_size'].some(top) || (top('training.steps') && top('model.flavor'))) out.push('torchtitan');
  const nano = ['block_size', 'n_layer', 'n_embd', 'n_head', 'max_iters', 'gradient_accumulation_steps', 'batch_size'].filter(top).length;
  if (!out.length && nano >= 2 && ['block_size', 'max_iters', 'gradient_accumulation_steps'].some(top) && !fileName.endsWith('config.json')) out.push('nanogpt');
  return out;
}

/** Numbers from config values: ints, floats, "1e6", "2_000"; "auto", −1 and non-numbers are unset. */
/** Larger config numbers are typos or attacks (1e308 steps gives "Infinity days"). */
const MAX_CONFIG_NUMBER = 1e15;

export function num(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && /^\s*[+-]?(\d[\d_]*)(\.\d+)?([eE][+-]?\d+)?\s*$/.test(v)) return Number(v.replace(/_/g, ''));
  return undefined;
}

class Mapper {
  fields: TrainingFields = {};
  notes: string[] = [];
  constructor(readonly entries: Entries) {}
  entry(keys: string[]): [string, Entry] | undefined {
    for (const k of keys) {
      const e = this.entries.get(k);
      if (e && e.value !== null && e.value !== undefined && e.value !== '???' && !(typeof e.value === 'string' && e.value.includes('${'))) return [k, e];
    }
    return undefined;
  }
  /** Sets a numeric field from the first key present; `accept` filters sentinel values (−1, "auto"). */
  num(field: NumericField, keys: string[], accept?: (n: number) => boolean, transform?: (n: number) => number): boolean {
    for (const k of keys) {
      const hit = this.entry([k]);
      if (!hit) continue;
      const [key, e] = hit;
      let n = num(e.value);
      if (n === undefined) {
        if (typeof e.value === 'string' && e.value.toLowerCase() === 'auto') {
          this.notes.push(`${e.file}:${e.line}: \`${key}\` is "auto": not usable for ${field}`);
          continue;
        }
        if (typeof e.value === 'object') continue;
        throw new CostConfigError(`${e.file}:${e.line}: \`${key}\` must be a number, not ${JSON.stringify(e.value)}`, e.file, e.line, key);
      }
      if (!Number.isFinite(n) || Math.abs(n) > MAX_CONFIG_NUMBER) {
        throw new CostConfigError(`${e.file}:${e.line}: \`${key}\` = ${e.value} is not a plausible value for ${field} (at most 1e15)`, e.file, e.line, key);
      }
      if (accept) {
        if (!accept(n)) continue;
      } else if (n === -1) {
        // the frameworks' "unset" (HF max_steps, Lightning max_steps/max_epochs): another key may give it
        this.notes.push(`${e.file}:${e.line}: \`${key}\` is -1 (unset): not usable for ${field}`);
        continue;
      } else if (!(n > 0)) {
        throw new CostConfigError(`${e.file}:${e.line}: \`${key}\` must be positive, not ${n}`, e.file, e.line, key);
      }
      if (transform) n = transform(n);
      this.set(field, n, key, e);
      return true;
    }
    return false;
  }
  set(field: FieldName, value: number | string, key: string, e: Entry): void {
    (this.fields as Record<string, Sourced<number | string>>)[field] = { value, source: { kind: 'config', file: e.file, line: e.line, key } };
  }
  str(field: StringField, keys: string[]): boolean {
    const hit = this.entry(keys);
    if (!hit || typeof hit[1].value === 'object') return false;
    this.set(field, String(hit[1].value), hit[0], hit[1]);
    return true;
  }
}

const DIMS: [NumericField, string[]][] = [
  ['layers', ['n_layer', 'n_layers', 'num_layers', 'num_hidden_layers']],
  ['dModel', ['n_embd', 'n_embed', 'd_model', 'hidden_size', 'dim']],
  ['heads', ['n_head', 'n_heads', 'num_heads', 'num_attention_heads']],
  ['ffn', ['intermediate_size', 'ffn_hidden_size', 'ffn_dim', 'n_inner']],
  ['vocab', ['padded_vocab_size', 'vocab_size']],
  ['params', ['n_params', 'num_params', 'num_parameters', 'params']],
];

function dims(m: Mapper, prefixes: string[]): void {
  for (const [field, keys] of DIMS) {
    if (m.fields[field]) continue;
    m.num(field, prefixes.flatMap((p) => keys.map((k) => p + k)));
  }
}

/** torchtitan llama3 flavors (torchtitan/models/llama3/__init__.py): layers, dim, heads, vocab, params. */
const TITAN_FLAVORS: Record<string, [number, number, number, number, number]> = {
  '8B': [32, 4096, 32, 128256, 8.03e9],
  '70B': [80, 8192, 64, 128256, 70.6e9],
  '405B': [126, 16384, 128, 128256, 405.9e9],
};

function devicesValue(v: unknown): number | undefined {
  if (Array.isArray(v)) return v.length;
  if (typeof v === 'string' && v.includes(',')) return v.split(',').filter((s) => s.trim()).length;
  const n = num(v);
  return n !== undefined && n > 0 ? n : undefined;
}

/** Maps one file's entries. Frameworks are applied in a fixed order; the first key found wins per field. */
export function mapEntries(entries: Entries, frameworks: Framework[]): Mapped {
  const m = new Mapper(entries);
  const shapeHints: Mapped['shapeHints'] = [];
  let batchRule: Mapped['batchRule'] = null;
  let parallelDivisor: Sourced<number> | undefined;
  const weak: string[] = [];
  const is = (f: Framework) => frameworks.includes(f);

  if (is('nanogpt')) {
    batchRule = 'global-ga';
    m.num('microBatch', ['batch_size']);
    m.num('gradAccum', ['gradient_accumulation_steps']);
    m.num('seqLen', ['block_size']);
    m.num('steps', ['max_iters']);
    dims(m, ['']);
    m.str('precision', ['dtype']);
    m.str('accelerator', ['device']);
    m.num('evalInterval', ['eval_interval']);
    m.num('evalIters', ['eval_iters']);
    m.str('compile', ['compile']);
    m.str('dataset', ['dataset']);
    if (!m.fields.vocab && (m.fields.layers || m.fields.dModel)) {
      m.fields.vocab = { value: 50304, source: { kind: 'default', note: "nanoGPT's default vocab_size (GPT-2's 50257 padded to 50304): data/<dataset>/meta.pkl not read" } };
      weak.push('vocab');
    }
  }
  if (is('litgpt')) {
    batchRule = 'per-device';
    m.num('globalBatch', ['train.global_batch_size']);
    m.num('microBatch', ['train.micro_batch_size']);
    m.num('steps', ['train.max_steps']);
    m.num('epochs', ['train.epochs']);
    m.num('datasetTokens', ['train.max_tokens']);
    if (!m.num('seqLen', ['train.max_seq_length'])) m.num('seqLen', ['model.block_size', 'model_config.block_size']);
    dims(m, ['model.', 'model_config.']);
    m.str('precision', ['precision']);
    m.str('accelerator', ['accelerator']);
    nodesDevices(m, ['devices'], ['num_nodes']);
  }
  if (is('lightning')) {
    batchRule = 'per-device';
    m.num('steps', ['trainer.max_steps']);
    m.num('epochs', ['trainer.max_epochs']);
    m.num('gradAccum', ['trainer.accumulate_grad_batches']);
    m.num('microBatch', ['data.batch_size', 'data.init_args.batch_size', 'datamodule.batch_size']);
    m.num('seqLen', ['data.seq_len', 'data.block_size', 'data.max_length', 'data.max_seq_length', 'data.init_args.seq_len', 'data.init_args.block_size', 'data.init_args.max_length', 'data.init_args.max_seq_length', 'model.block_size', 'model.init_args.block_size', 'model.seq_len']);
    m.num('datasetSamples', ['data.train_samples', 'data.num_samples', 'data.init_args.train_samples']);
    dims(m, ['model.', 'model.init_args.', 'model.config.', 'model.net.', 'model.init_args.config.']);
    m.str('precision', ['trainer.precision']);
    m.str('accelerator', ['trainer.accelerator']);
    nodesDevices(m, ['trainer.devices'], ['trainer.num_nodes']);
    // an integer val_check_interval counts training batches (Lightning Trainer docs); a float is a fraction of an epoch
    m.num('evalInterval', ['trainer.val_check_interval'], (n) => Number.isInteger(n) && n > 1);
    m.num('evalIters', ['trainer.limit_val_batches'], (n) => Number.isInteger(n) && n > 1);
    const gcb = m.entry(['trainer.limit_train_batches']);
    if (gcb) m.notes.push(`${gcb[1].file}:${gcb[1].line}: \`trainer.limit_train_batches\` is not applied to the estimate`);
  }
  if (is('hf-trainer')) {
    batchRule = 'per-device';
    const a = m.entry(['per_device_train_batch_size']);
    const b = m.entry(['per_gpu_train_batch_size']);
    if (a && b && num(a[1].value) !== num(b[1].value)) {
      throw new CostConfigError(
        `${b[1].file}:${b[1].line}: contradictory batch keys: \`per_device_train_batch_size\` = ${a[1].value} (line ${a[1].line}) but \`per_gpu_train_batch_size\` = ${b[1].value}`,
        b[1].file, b[1].line, 'per_gpu_train_batch_size',
      );
    }
    m.num('microBatch', ['per_device_train_batch_size', 'per_gpu_train_batch_size']);
    m.num('gradAccum', ['gradient_accumulation_steps']);
    m.num('steps', ['max_steps']);
    m.num('epochs', ['num_train_epochs']);
    m.num('seqLen', ['max_seq_length', 'max_length', 'block_size', 'model_max_length']);
    m.num('devices', ['tpu_num_cores']);
    m.num('evalInterval', ['eval_steps']);
    m.str('compile', ['torch_compile']);
    m.str('model', ['model_name_or_path']);
    const bf16 = m.entry(['bf16']);
    const fp16 = m.entry(['fp16']);
    if (bf16 && bf16[1].value === true) m.set('precision', 'bf16', bf16[0], bf16[1]);
    else if (fp16 && fp16[1].value === true) m.set('precision', 'fp16', fp16[0], fp16[1]);
    const drop = m.entry(['dataloader_drop_last']);
    if (drop && drop[1].value === false) shapeHints.push({ key: drop[0], file: drop[1].file, line: drop[1].line, extraShapes: 1, why: 'the ragged final batch compiles a second graph (TPU403)' });
    const gbl = m.entry(['group_by_length']);
    if (gbl && gbl[1].value === true) shapeHints.push({ key: gbl[0], file: gbl[1].file, line: gbl[1].line, extraShapes: 8, why: 'length-grouped batches vary in length: one graph per length bucket (TPU404)' });
  }
  if (is('deepspeed')) {
    batchRule = batchRule ?? 'per-device';
    m.num('globalBatch', ['train_batch_size']);
    m.num('microBatch', ['train_micro_batch_size_per_gpu']);
    m.num('gradAccum', ['gradient_accumulation_steps']);
    const bf = m.entry(['bf16.enabled', 'bfloat16.enabled']);
    const fp = m.entry(['fp16.enabled']);
    if (bf && (bf[1].value === true || bf[1].value === 'auto')) m.set('precision', 'bf16', bf[0], bf[1]);
    else if (fp && fp[1].value === true) m.set('precision', 'fp16', fp[0], fp[1]);
  }
  if (is('accelerate')) {
    m.num('devices', ['num_processes']);
    m.num('nodes', ['num_machines']);
    m.str('precision', ['mixed_precision']);
    m.str('accelerator', ['distributed_type']);
  }
  if (is('hf-model')) {
    dims(m, ['']);
    if (!m.fields.seqLen) {
      const hit = m.entry(['max_position_embeddings', 'n_positions', 'n_ctx']);
      if (hit && num(hit[1].value)) {
        m.set('seqLen', num(hit[1].value)!, hit[0], hit[1]);
        weak.push('seqLen');
        m.notes.push(`${hit[1].file}:${hit[1].line}: sequence length taken from the model's maximum \`${hit[0]}\`; set \`seq-len\` in .tpu-ready/cost.toml if you train on shorter sequences`);
      }
    }
    m.str('precision', ['torch_dtype', 'dtype']);
    m.str('model', ['_name_or_path']);
  }
  if (is('torchtitan')) {
    batchRule = 'per-device';
    m.num('globalBatch', ['training.global_batch_size'], (n) => n > 0);
    m.num('microBatch', ['training.local_batch_size', 'training.batch_size']);
    m.num('seqLen', ['training.seq_len']);
    m.num('steps', ['training.steps']);
    m.str('precision', ['training.mixed_precision_param']);
    const flavor = m.entry(['model.flavor']);
    const f = flavor && TITAN_FLAVORS[String(flavor[1].value)];
    if (flavor && f) {
      const src = { kind: 'config' as const, file: flavor[1].file, line: flavor[1].line, key: `model.flavor (${flavor[1].value}: torchtitan llama3 registry)` };
      m.fields.layers ??= { value: f[0], source: src };
      m.fields.dModel ??= { value: f[1], source: src };
      m.fields.heads ??= { value: f[2], source: src };
      m.fields.vocab ??= { value: f[3], source: src };
      m.fields.params ??= { value: f[4], source: src };
    } else if (flavor) {
      m.notes.push(`${flavor[1].file}:${flavor[1].line}: torchtitan flavor \`${flavor[1].value}\` is not in the built-in registry: set \`params\` (or layers, d-model, vocab) in .tpu-ready/cost.toml`);
    }
    // other parallel degrees divide the chips before the data-parallel degree
    let div = 1;
    let divKeys: string[] = [];
    let line = 0;
    let file = '';
    for (const k of ['parallelism.tensor_parallel_degree', 'parallelism.pipeline_parallel_degree', 'parallelism.context_parallel_degree']) {
      const e = m.entry([k]);
      const n = e && num(e[1].value);
      if (e && n && n > 1) {
        div *= n;
        divKeys.push(`${k}=${n}`);
        line = e[1].line;
        file = e[1].file;
      }
    }
    if (div > 1) parallelDivisor = { value: div, source: { kind: 'config', file, line, key: divKeys.join(' × ') } };
    divKeys = [];
  }
  for (const [k, v] of Object.entries(m.fields)) if (v?.source.kind === 'default' && !weak.includes(k)) weak.push(k);
  return { frameworks, fields: m.fields, batchRule, parallelDivisor, notes: m.notes, shapeHints, weak };
}

function nodesDevices(m: Mapper, devKeys: string[], nodeKeys: string[]): void {
  const d = m.entry(devKeys);
  const n = m.entry(nodeKeys);
  const nodes = n ? num(n[1].value) : undefined;
  if (n && nodes && nodes > 0) m.set('nodes', nodes, n[0], n[1]);
  if (!d) return;
  const per = devicesValue(d[1].value);
  if (per === undefined) {
    m.notes.push(`${d[1].file}:${d[1].line}: \`${d[0]}\` = ${JSON.stringify(d[1].value)} does not say how many devices: the chip count is used`);
    return;
  }
  const total = per * (nodes && nodes > 0 ? nodes : 1);
  (m.fields as TrainingFields).devices = {
    value: total,
    source: nodes && nodes > 1 ? { kind: 'derived', formula: `${d[0]} (${per}, ${d[1].file}:${d[1].line}) × ${n![0]} (${nodes}, ${n![1].file}:${n![1].line})` } : { kind: 'config', file: d[1].file, line: d[1].line, key: d[0] },
  };
}
