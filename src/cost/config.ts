/**
 * Training config discovery and resolution: files (YAML, JSON, TOML, Python) → entries → frameworks →
 * canonical fields with provenance; then derivations (GBS, GA, STEPS, tokens, params) and what is missing.
 */
import { composeHydra, hasDefaults, interpolate } from './hydra';
import { detectFrameworks, mapEntries, type Mapped } from './frameworks';
import { basename, dirname, extname, norm } from './paths';
import { readJson } from './readers/json';
import { readPython } from './readers/python';
import { readToml } from './readers/toml';
import { readYaml } from './readers/yaml';
import type { Assumptions } from './assumptions';
import { MODELS, findModel } from './models';
import { CostConfigError, FIELD_KEYS, FIELDS, type ConfigFile, type Entries, type Framework, type Missing, type Source, type Sourced, type TrainingConfig, type TrainingFields } from './types';

export type ConfigFormat = 'yaml' | 'json' | 'toml' | 'python';

export function formatOf(path: string): ConfigFormat | null {
  const ext = extname(path);
  if (ext === '.yaml' || ext === '.yml') return 'yaml';
  if (ext === '.json') return 'json';
  if (ext === '.toml') return 'toml';
  if (ext === '.py') return 'python';
  return null;
}

/** Reads one file to dotted entries (Hydra primaries are composed with the files of their folder). */
export function readEntries(file: ConfigFile, folder: ConfigFile[] = [], notes: string[] = []): { entries: Entries; hydra: boolean } {
  const fmt = formatOf(file.path);
  switch (fmt) {
    case 'yaml': {
      const { entries } = readYaml(file.path, file.text);
      if (hasDefaults(entries)) {
        const composed = composeHydra(file, folder, notes);
        interpolate(composed, notes);
        return { entries: composed, hydra: true };
      }
      interpolate(entries, notes);
      return { entries, hydra: false };
    }
    case 'json':
      return { entries: readJson(file.path, file.text).entries, hydra: false };
    case 'toml':
      return { entries: readToml(file.path, file.text).entries, hydra: false };
    case 'python':
      return { entries: readPython(file.path, file.text).entries, hydra: false };
    default:
      throw new CostConfigError(`${file.path}: not a YAML, JSON, TOML or Python config`, file.path);
  }
}

/** Frameworks a file's contents look like; empty when it is no training config. Throws on malformed files. */
export function sniff(file: ConfigFile, folder: ConfigFile[] = []): Framework[] {
  if (/(^|\/)(pyproject\.toml|package(-lock)?\.json|tsconfig\.json|cost\.toml)$/.test(norm(file.path))) return [];
  const { entries, hydra } = readEntries(file, folder);
  const fws = detectFrameworks(entries, basename(file.path));
  return hydra && fws.length ? ['hydra', ...fws] : fws;
}

export interface RawConfig extends Omit<Mapped, 'frameworks'> {
  frameworks: Framework[];
  files: string[];
}

/**
 * Reads the training config from one or more files of the same job (later files win per field), e.g. an HF
 * TrainingArguments JSON + the model's config.json + a DeepSpeed JSON. `folder` holds the other files of the
 * config folder (Hydra group files), read only through `defaults:`.
 */
export function loadTrainingConfig(files: ConfigFile[], folder: ConfigFile[] = []): RawConfig {
  const raw: RawConfig = { frameworks: [], files: [], fields: {}, batchRule: null, notes: [], shapeHints: [], weak: [] };
  for (const file of files) {
    const notes: string[] = [];
    const { entries, hydra } = readEntries(file, folder, notes);
    const fws = detectFrameworks(entries, basename(file.path));
    raw.notes.push(...notes);
    raw.files.push(file.path);
    if (!fws.length) {
      raw.notes.push(`${file.path}: no training-config keys recognised (nanoGPT, HF, Lightning, Hydra, Accelerate, DeepSpeed, LitGPT, torchtitan)`);
      continue;
    }
    const m = mapEntries(entries, fws);
    for (const f of [...(hydra ? (['hydra'] as Framework[]) : []), ...fws]) if (!raw.frameworks.includes(f)) raw.frameworks.push(f);
    for (const [k, v] of Object.entries(m.fields)) {
      const old = (raw.fields as Record<string, Sourced<unknown>>)[k];
      const isWeak = m.weak.includes(k);
      if (old && isWeak && !raw.weak.includes(k)) continue; // a fallback never beats a value another file states
      if (isWeak) raw.weak.push(k);
      else raw.weak = raw.weak.filter((w) => w !== k);
      if (old && old.value !== v!.value) raw.notes.push(`${where(v!.source)}: ${k} = ${v!.value} overrides ${old.value} from ${where(old.source)}`);
      (raw.fields as Record<string, unknown>)[k] = v;
    }
    // the batch rule of the framework that defines the micro-batch decides
    if (m.batchRule && (m.fields.microBatch || !raw.batchRule)) raw.batchRule = m.batchRule;
    raw.parallelDivisor = m.parallelDivisor ?? raw.parallelDivisor;
    raw.notes.push(...m.notes);
    raw.shapeHints.push(...m.shapeHints);
  }
  return raw;
}

export function where(s: Source): string {
  switch (s.kind) {
    case 'config':
    case 'assumption':
      return `${s.file}:${s.line}`;
    case 'flag':
      return s.flag;
    case 'derived':
      return s.formula;
    case 'default':
      return `default (${s.note})`;
  }
}

/** One-line provenance for people: "config.yaml:9 train.global_batch_size". */
export function describeSource(s: Source): string {
  switch (s.kind) {
    case 'config':
      return `${s.file}:${s.line} \`${s.key}\``;
    case 'assumption':
      return `${s.file}:${s.line} \`${s.key}\``;
    case 'flag':
      return `flag ${s.flag}`;
    case 'derived':
      return `= ${s.formula}`;
    case 'default':
      return `default: ${s.note}`;
  }
}

export interface ResolvedConfig {
  config: TrainingConfig;
  chips: Sourced<number>;
  /** Devices of the job the config describes: the global batch is theirs, whatever hardware runs it. */
  jobDevices: Sourced<number>;
  tokens?: Sourced<number>;
  shapeHints: RawConfig['shapeHints'];
}

const ref2 = (name: string, s: Sourced<string>) => `${name} "${s.value}" (${s.source.kind === 'config' || s.source.kind === 'assumption' ? `${s.source.file}:${s.source.line}` : s.source.kind})`;
const ref = (name: string, s: Sourced<number>) => `${name} ${fmtNum(s.value)} (${s.source.kind === 'config' || s.source.kind === 'assumption' ? `${s.source.file}:${s.source.line}` : s.source.kind === 'flag' ? s.source.flag : s.source.kind})`;

export function fmtNum(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return n.toLocaleString('en-US');
  if (Math.abs(n) >= 1e6 || (Math.abs(n) > 0 && Math.abs(n) < 1e-3)) return n.toExponential(3).replace(/\.?0+e/, 'e');
  return String(Number(n.toPrecision(6)));
}

function keyOf(s: Source): string {
  return s.kind === 'config' || s.kind === 'assumption' ? `\`${s.key}\` (${s.file}:${s.line})` : s.kind === 'flag' ? s.flag : 'the derived value';
}

const HOW: Record<string, string> = {
  seqLen: 'the sequence length: `block_size` (nanoGPT), `train.max_seq_length` or `model.block_size` (LitGPT), `max_seq_length` (HF), `training.seq_len` (torchtitan), `data.seq_len` (Lightning)',
  tokens: 'the run length: steps with a global batch (`max_iters`, `max_steps`, `train.max_steps`, `trainer.max_steps`, `training.steps`) or dataset tokens (`train.max_tokens`)',
  model: 'the model size: a parameter count, or layers, hidden size and vocabulary (`n_layer`/`n_embd`/`vocab_size`, `num_hidden_layers`/`hidden_size`, `model.n_layer`…)',
};

/** Resolves derivations and per-device/global batch semantics; names what is missing. Never throws for missing values. */
export function resolveConfig(raw: RawConfig, a: Assumptions): ResolvedConfig {
  const f: TrainingFields = { ...raw.fields, ...a.fields };
  const notes = [...raw.notes];
  const missing: Missing[] = [];
  // model names with no sizes resolve through the registry
  if (f.model && !(f.layers && f.dModel)) {
    const spec = findModel(f.model.value);
    if (spec) {
      const src: Source = { kind: 'derived', formula: `${ref2('MODEL', f.model)} → ${spec.name} (${spec.source})` };
      f.layers ??= { value: spec.layers, source: src };
      f.dModel ??= { value: spec.dModel, source: src };
      f.heads ??= { value: spec.heads, source: src };
      f.ffn ??= { value: spec.ffn, source: src };
      if (!f.vocab || f.vocab.source.kind === 'default') f.vocab = { value: spec.vocab, source: src };
      f.params ??= { value: spec.params, source: src };
    } else {
      notes.push(`${where(f.model.source)}: model "${f.model.value}" is not in the built-in registry (${MODELS.map((m) => m.name).join(', ')}): give its size (\`params\`, or \`layers\`, \`d-model\` and \`vocab\`)`);
    }
  }

  // The job is the config's: its device count (or `chips` in cost.toml, else one 8-chip host) fixes the global
  // batch; `--chips` and other hardware only change where the same job runs.
  const job: Sourced<number> = f.devices
    ? { value: f.devices.value, source: { kind: 'derived', formula: `devices in the config (${where(f.devices.source)})` } }
    : a.jobChips
      ? a.jobChips
      : { value: 8, source: { kind: 'default', note: 'the config names no device count: one 8-chip host' } };
  const chips: Sourced<number> = a.chips ?? (f.devices ? { value: f.devices.value, source: { kind: 'derived', formula: `chips = devices in the config (${where(f.devices.source)}): each GPU maps to one TPU chip` } } : job);

  // devices that multiply a per-device batch
  let dev: Sourced<number> | undefined = f.devices;
  if (raw.parallelDivisor && !f.devices) {
    dev = { value: Math.max(1, Math.floor(job.value / raw.parallelDivisor.value)), source: { kind: 'derived', formula: `data-parallel degree = ${job.value} devices ÷ ${raw.parallelDivisor.source.kind === 'config' ? raw.parallelDivisor.source.key : raw.parallelDivisor.value}` } };
  }
  const devOrChips = (): Sourced<number> => {
    if (!dev) {
      dev = { value: job.value, source: { kind: 'derived', formula: `devices = ${job.value} (${describeSource(job.source)})` } };
      f.devices ??= dev;
    }
    return dev;
  };

  const rule = raw.batchRule ?? 'per-device';
  if (rule === 'global-ga') {
    if (f.microBatch) {
      const ga = f.gradAccum ?? { value: 1, source: { kind: 'default', note: 'no gradient_accumulation_steps: 1' } };
      const gbs = f.microBatch.value * ga.value;
      if (f.globalBatch && f.globalBatch.value !== gbs) {
        throw contradiction(f.globalBatch, `${ref('batch_size', f.microBatch)} × ${ref('gradient_accumulation_steps', ga)} = ${gbs} (nanoGPT's accumulation is global)`);
      }
      f.gradAccum = ga;
      f.globalBatch ??= { value: gbs, source: { kind: 'derived', formula: `${ref('MBS', f.microBatch)} × ${ref('GA', ga)} (nanoGPT: GA is global, train.py divides it by the world size)` } };
    }
  } else if (f.globalBatch) {
    if (f.microBatch) {
      // the config's own device count (not the chips of the estimate) relates its batch keys
      const stated = dev;
      if (f.gradAccum) {
        const per = f.microBatch.value * f.gradAccum.value;
        if (stated) {
          if (per * stated.value !== f.globalBatch.value) throw contradiction(f.globalBatch, `${ref('MBS', f.microBatch)} × ${ref('GA', f.gradAccum)} × ${ref('devices', stated)} = ${per * stated.value}`);
        } else {
          const n = f.globalBatch.value / per;
          if (!Number.isInteger(n)) throw contradiction(f.globalBatch, `${ref('MBS', f.microBatch)} × ${ref('GA', f.gradAccum)} × world size, a multiple of ${per}`);
          dev = { value: n, source: { kind: 'derived', formula: `world size = ${ref('GBS', f.globalBatch)} ÷ (${ref('MBS', f.microBatch)} × ${ref('GA', f.gradAccum)})` } };
          f.devices = dev;
        }
      } else if (stated) {
        const ga = f.globalBatch.value / (f.microBatch.value * stated.value);
        if (!Number.isInteger(ga) || ga < 1) throw contradiction(f.globalBatch, `a whole multiple of ${ref('MBS', f.microBatch)} × ${ref('devices', stated)} = ${f.microBatch.value * stated.value}`);
        f.gradAccum = { value: ga, source: { kind: 'derived', formula: `${ref('GBS', f.globalBatch)} ÷ (${ref('MBS', f.microBatch)} × ${ref('devices', stated)})` } };
      } else {
        const d = devOrChips();
        const ga = f.globalBatch.value / (f.microBatch.value * d.value);
        if (Number.isInteger(ga) && ga >= 1) f.gradAccum = { value: ga, source: { kind: 'derived', formula: `${ref('GBS', f.globalBatch)} ÷ (${ref('MBS', f.microBatch)} × ${ref('devices', d)})` } };
        else notes.push(`global batch ${f.globalBatch.value} is not a whole multiple of micro-batch ${f.microBatch.value} × ${d.value} chips: gradient accumulation left unset (the estimate uses the global batch)`);
      }
    }
  } else if (f.microBatch) {
    const ga = f.gradAccum ?? { value: 1, source: { kind: 'default', note: 'no gradient-accumulation key: 1' } };
    const d = devOrChips();
    f.gradAccum = ga;
    f.globalBatch = { value: f.microBatch.value * ga.value * d.value, source: { kind: 'derived', formula: `${ref('MBS', f.microBatch)} × ${ref('GA', ga)} × ${ref('devices', d)}` } };
  }

  // run length
  let tokens: Sourced<number> | undefined;
  const T = f.seqLen;
  if (!f.steps && f.epochs && f.datasetSamples && f.globalBatch) {
    f.steps = { value: f.epochs.value * Math.ceil(f.datasetSamples.value / f.globalBatch.value), source: { kind: 'derived', formula: `${ref('EPOCHS', f.epochs)} × ⌈${ref('samples', f.datasetSamples)} ÷ ${ref('GBS', f.globalBatch)}⌉` } };
  }
  if (f.steps && f.globalBatch && T) {
    tokens = { value: f.steps.value * f.globalBatch.value * T.value, source: { kind: 'derived', formula: `${ref('STEPS', f.steps)} × ${ref('GBS', f.globalBatch)} × ${ref('SEQ', T)}` } };
    if (f.datasetTokens && f.datasetTokens.value * (f.epochs?.value ?? 1) < tokens.value) {
      tokens = { value: f.datasetTokens.value * (f.epochs?.value ?? 1), source: { kind: 'derived', formula: `${ref('TOK', f.datasetTokens)}${f.epochs ? ` × ${ref('EPOCHS', f.epochs)}` : ''}: the token budget ends the run before the step limit` } };
    }
  } else if (f.datasetTokens) {
    tokens = f.epochs && f.epochs.value !== 1
      ? { value: f.datasetTokens.value * f.epochs.value, source: { kind: 'derived', formula: `${ref('TOK', f.datasetTokens)} × ${ref('EPOCHS', f.epochs)}` } }
      : f.datasetTokens;
    if (f.globalBatch && T && !f.steps) {
      f.steps = { value: Math.ceil(tokens.value / (f.globalBatch.value * T.value)), source: { kind: 'derived', formula: `⌈tokens ${fmtNum(tokens.value)} ÷ (${ref('GBS', f.globalBatch)} × ${ref('SEQ', T)})⌉` } };
    }
  }

  // model size
  if (!f.params && f.layers && f.dModel && f.vocab) {
    const L = f.layers.value, d = f.dModel.value, V = f.vocab.value;
    f.params = { value: 12 * L * d * d + V * d, source: { kind: 'derived', formula: `12·L·d² + V·d with ${ref('L', f.layers)}, ${ref('d', f.dModel)}, ${ref('V', f.vocab)}` } };
  }

  const ASSUME: Record<string, string> = { tokens: '`steps` or `dataset-tokens`', model: '`params` (or `layers`, `d-model` and `vocab`)' };
  const need = (field: keyof typeof HOW, fieldName: Missing['field'], label: string) => {
    const key = ASSUME[fieldName] ?? `\`${FIELD_KEYS[fieldName as keyof typeof FIELD_KEYS]}\``;
    missing.push({ field: fieldName, message: `missing ${label}`, howToSupply: `set ${HOW[field]} in the training config, or ${key} in .tpu-ready/cost.toml` });
  };
  const attentionTerm = !!(f.layers && f.dModel);
  if (!T && (attentionTerm || !f.datasetTokens)) need('seqLen', 'seqLen', FIELDS.seqLen);
  if (!tokens) {
    if (!f.steps && !f.datasetTokens && f.epochs) {
      missing.push({ field: 'datasetSamples', message: `missing the dataset size for ${ref('EPOCHS', f.epochs)}`, howToSupply: 'set `dataset-samples` (sequences per epoch) or `dataset-tokens` (tokens per epoch) in .tpu-ready/cost.toml, or a step limit in the training config' });
    } else if (!f.steps && !f.datasetTokens) need('tokens', 'tokens', 'run length (STEPS or TOK)');
    else if (!f.globalBatch && !f.datasetTokens) missing.push({ field: 'globalBatch', message: `missing ${FIELDS.globalBatch}`, howToSupply: 'set the batch size in the training config (`batch_size`, `per_device_train_batch_size`, `train.global_batch_size`, `train_batch_size`…) or `global-batch` in .tpu-ready/cost.toml' });
  }
  if (!f.params) need('model', 'model', 'model size (PARAMS, or LAYERS + D_MODEL + VOCAB)');
  if (f.params && !attentionTerm && T) notes.push('attention FLOPs (12·L·d·T) left out: the config gives a parameter count but not layers and hidden size');
  if (f.precision && /16-mixed|fp16|float16/i.test(String(f.precision.value)) && !/bf16|bfloat16/i.test(String(f.precision.value))) {
    notes.push(`${where(f.precision.source)}: precision ${f.precision.value}: TPUs compute in bf16 (TPU302); the estimate assumes bf16`);
  }

  const config: TrainingConfig = { frameworks: raw.frameworks, files: raw.files, fields: f, missing, notes };
  return { config, chips, jobDevices: dev ?? job, tokens, shapeHints: raw.shapeHints };
}

function contradiction(gbs: Sourced<number>, expected: string): CostConfigError {
  const s = gbs.source;
  const at = s.kind === 'config' || s.kind === 'assumption' ? `${s.file}:${s.line}: ` : '';
  const key = s.kind === 'config' || s.kind === 'assumption' ? s.key : 'global batch';
  return new CostConfigError(`${at}contradictory batch keys: ${keyOf(s)} = ${gbs.value} but it should be ${expected}`, s.kind === 'config' || s.kind === 'assumption' ? s.file : undefined, s.kind === 'config' || s.kind === 'assumption' ? s.line : undefined, key);
}

/** Groups candidate config files by folder: the files of one folder describe one job. */
export function groupByFolder(paths: string[]): string[][] {
  const groups = new Map<string, string[]>();
  for (const p of paths) {
    const d = dirname(p);
    groups.set(d, [...(groups.get(d) ?? []), p]);
  }
  return [...groups.values()];
}
