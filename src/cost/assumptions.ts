/**
 * Usage assumptions, explicit and editable (the Infracost lesson): built-in defaults, overridden by
 * `.tpu-ready/cost.toml` or `[tool.tpu-ready.cost]` in pyproject.toml, overridden by CLI flags or the editor.
 * The same file can also supply canonical config fields the training config lacks (seq-len, steps, …).
 */
import { didYouMean } from '../core/suggest';
import { readToml } from './readers/toml';
import { num } from './frameworks';
import { ALL_REGIONS, HARDWARE, HARDWARE_NAMES, parseHardware, type HardwareId, type Pricing } from './prices';
import { CostConfigError, FIELD_KEYS, type Entry, type FieldName, type Sourced, type TrainingFields } from './types';

export interface Assumptions {
  hardware: Sourced<HardwareId[]>;
  /** Chips per hardware from a slice name (`--hardware v5p-8` = 4 chips): wins over `chips` for that hardware. */
  hardwareChips: Partial<Record<HardwareId, Sourced<number>>>;
  /** Chips of every estimate; unset → the config's device count, else 8. */
  chips?: Sourced<number>;
  /** `chips` of an assumptions file: the job's device count when the config names none (flags never set it). */
  jobChips?: Sourced<number>;
  pricing: Sourced<Pricing[]>;
  /** Price region; unset → the cheapest region of the catalog, with the range across regions shown. */
  region?: Sourced<string>;
  /** Expected MFU for every hardware; unset → modelled per hardware and model (throughput.ts). */
  mfuLow?: Sourced<number>;
  mfu?: Sourced<number>;
  mfuHigh?: Sourced<number>;
  /** Measured tokens/s per chip, by hardware: replaces the MFU model for that hardware, end to end. */
  tokensPerSecondPerChip: Partial<Record<HardwareId, Sourced<number>>>;
  compileSeconds: Sourced<number>;
  gpuCompileSeconds: Sourced<number>;
  distinctShapes: Sourced<number>;
  inputStall: Sourced<number>;
  /** Unset → 1 per day for one host, × √hosts for a multi-host slice. */
  preemptionsPerDay?: Sourced<number>;
  /** Unset → the hardware's (catalog). */
  restartSeconds?: Sourced<number>;
  /** Unset → checkpoint bytes ÷ storage bandwidth. */
  checkpointWriteSeconds?: Sourced<number>;
  /** Unset → Young/Daly on spot, 60 min on demand. */
  checkpointIntervalMinutes?: Sourced<number>;
  storageGBps: Sourced<number>;
  checkpointBytesPerParam: Sourced<number>;
  gradBytesPerParam: Sourced<number>;
  flashAttention: Sourced<boolean>;
  activationCheckpointing: Sourced<boolean>;
  utilization: Sourced<number>;
  currency: Sourced<string>;
  exchangeRate: Sourced<number>;
  bytesPerParam: Sourced<number>;
  prices: Partial<Record<HardwareId, { 'on-demand'?: Sourced<number>; spot?: Sourced<number> }>>;
  /** Canonical fields supplied by the assumptions file or flags; they win over the training config. */
  fields: TrainingFields;
  /** Per-rule priced-finding assumptions, e.g. findings.TPU201.ms-per-sync. */
  findings: Record<string, Record<string, Sourced<number>>>;
}

const d = <T>(value: T, note: string): Sourced<T> => ({ value, source: { kind: 'default', note } });

export function defaultAssumptions(): Assumptions {
  return {
    hardware: d(['v5e', 'v6e', 'v5p', 'a100', 'h100'] as HardwareId[], 'TPU generations and GPUs side by side'),
    hardwareChips: {},
    pricing: d(['on-demand', 'spot'] as Pricing[], 'on-demand and spot side by side'),
    tokensPerSecondPerChip: {},
    compileSeconds: d(180, 'XLA compile seconds per distinct input shape (TPU only)'),
    gpuCompileSeconds: d(60, 'torch.compile seconds per start when the config compiles (GPU)'),
    distinctShapes: d(1, 'static shapes: one compiled step graph'),
    inputStall: d(0, 'none: published MFU and measured tokens/s are end to end; set one if your input pipeline stalls'),
    storageGBps: d(1, 'GB/s from the job to the checkpoint store (one writer to GCS)'),
    checkpointBytesPerParam: d(12, 'fp32 weights and Adam\'s two fp32 moments'),
    gradBytesPerParam: d(4, 'fp32 gradients all-reduced (bf16 autocast keeps fp32 parameters)'),
    flashAttention: d(false, 'attention scores materialized (XLA\'s scaled_dot_product_attention is not the flash kernel)'),
    activationCheckpointing: d(false, 'every layer\'s activations kept for the backward pass'),
    utilization: d(1, 'share of paid chip time that runs this job'),
    currency: d('USD', 'catalog currency'),
    exchangeRate: d(1, 'currency units per USD'),
    bytesPerParam: d(16, 'bf16 mixed precision with Adam: weights, gradients, fp32 master and two moments'),
    prices: {},
    fields: {},
    findings: {},
  };
}

type NumKey = 'compileSeconds' | 'gpuCompileSeconds' | 'distinctShapes' | 'inputStall' | 'preemptionsPerDay' | 'restartSeconds' | 'checkpointWriteSeconds' | 'checkpointIntervalMinutes' | 'storageGBps' | 'checkpointBytesPerParam' | 'gradBytesPerParam' | 'utilization' | 'exchangeRate' | 'bytesPerParam' | 'mfu' | 'mfuLow' | 'mfuHigh';
type BoolKey = 'flashAttention' | 'activationCheckpointing';

/** File key → assumption, with its valid range. */
const NUMERIC: Record<string, [NumKey, number, number]> = {
  mfu: ['mfu', 0.001, 1],
  'mfu-low': ['mfuLow', 0.001, 1],
  'mfu-high': ['mfuHigh', 0.001, 1],
  'compile-seconds': ['compileSeconds', 0, 1e6],
  'gpu-compile-seconds': ['gpuCompileSeconds', 0, 1e6],
  'distinct-shapes': ['distinctShapes', 1, 1e6],
  'input-stall': ['inputStall', 0, 0.99],
  'preemptions-per-day': ['preemptionsPerDay', 0, 1000],
  'restart-seconds': ['restartSeconds', 0, 1e6],
  'checkpoint-write-seconds': ['checkpointWriteSeconds', 0, 1e6],
  'checkpoint-interval-minutes': ['checkpointIntervalMinutes', 0.1, 1e6],
  'storage-gb-per-second': ['storageGBps', 0.001, 1e4],
  'checkpoint-bytes-per-param': ['checkpointBytesPerParam', 0, 1000],
  'grad-bytes-per-param': ['gradBytesPerParam', 0, 100],
  utilization: ['utilization', 0.01, 1],
  'exchange-rate': ['exchangeRate', 1e-9, 1e9],
  'bytes-per-param': ['bytesPerParam', 0.1, 1000],
};
const BOOLEAN: Record<string, BoolKey> = { 'flash-attention': 'flashAttention', 'activation-checkpointing': 'activationCheckpointing' };

const FIELD_BY_KEY = new Map(Object.entries(FIELD_KEYS).map(([f, k]) => [k, f as FieldName]));
const STRING_FIELDS = new Set<FieldName>(['precision', 'accelerator', 'compile', 'dataset', 'model']);
export const ASSUMPTION_KEYS = ['hardware', 'chips', 'pricing', 'region', 'tokens-per-second', 'currency', 'prices', 'findings', ...Object.keys(NUMERIC), ...Object.keys(BOOLEAN), ...FIELD_BY_KEY.keys()];
const ARRAY_KEYS = new Set(['hardware', 'pricing']);

export function parseHardwareList(v: unknown, where: string): HardwareId[] {
  return parseHardwareSlices(v, where).map((h) => h.id);
}

/** `v5e,v6e-8,v5p-8` → ids with the chip counts their slice names give (v5p-8 = 4 chips). */
export function parseHardwareSlices(v: unknown, where: string): { id: HardwareId; chips?: number }[] {
  const items = Array.isArray(v) ? v : typeof v === 'object' && v !== null ? [v] : String(v).split(',');
  const out: { id: HardwareId; chips?: number }[] = [];
  for (const it of items) {
    if (typeof it === 'object' && it !== null) throw new CostConfigError(`${where}: hardware must be names such as v5e, not ${shownValue(it)}`, undefined, undefined, 'hardware');
    const s = String(it).trim();
    if (!s) continue;
    const hw = parseHardware(s);
    if (!hw) throw new CostConfigError(`${where}: unknown hardware "${s}"${didYouMean(s, HARDWARE_NAMES)} (known: ${Object.keys(HARDWARE).join(', ')}, or a slice name such as v5litepod-16, v6e-8, v5p-8)`, undefined, undefined, 'hardware');
    if (!out.some((o) => o.id === hw.id)) out.push(hw);
  }
  if (!out.length) throw new CostConfigError(`${where}: no hardware given`, undefined, undefined, 'hardware');
  return out;
}

export function parseRegion(v: unknown, where: string): string {
  const s = String(v).trim().toLowerCase();
  if (!ALL_REGIONS.includes(s)) throw new CostConfigError(`${where}: no catalog price in region "${s}"${didYouMean(s, ALL_REGIONS)} (regions: ${ALL_REGIONS.join(', ')})`, undefined, undefined, 'region');
  return s;
}

/** A config value as the user wrote it: `nan`, `inf` and 1e400 are not JSON (JSON.stringify printed "null"). */
export function shownValue(v: unknown): string {
  if (typeof v === 'number' && !Number.isFinite(v)) return Number.isNaN(v) ? 'nan' : v > 0 ? 'inf' : '-inf';
  if (typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date)) return 'a table';
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

export function parsePricingList(v: unknown, where: string): Pricing[] {
  const items = Array.isArray(v) ? v : typeof v === 'object' && v !== null ? [v] : String(v).split(',');
  const out: Pricing[] = [];
  for (const it of items) {
    const s = String(it).trim().toLowerCase().replace(/[\s_]/g, '-');
    const p = s === 'on-demand' || s === 'ondemand' ? 'on-demand' : s === 'spot' || s === 'preemptible' ? 'spot' : null;
    if (!p) throw new CostConfigError(`${where}: pricing must be on-demand or spot, not ${typeof it === 'string' ? `"${it}"` : shownValue(it)}`, undefined, undefined, 'pricing');
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

/**
 * Reads `.tpu-ready/cost.toml` (keys at the top level) or a pyproject.toml (`[tool.tpu-ready.cost]`)
 * into overrides. Unknown keys and out-of-range values are errors naming the key and line.
 */
export function parseAssumptionsFile(file: string, text: string): Partial<Assumptions> | null {
  const { entries } = readToml(file, text);
  const isPyproject = /(^|[\\/])pyproject\.toml$/.test(file);
  const prefix = isPyproject ? 'tool.tpu-ready.cost.' : '';
  if (isPyproject && !entries.has('tool.tpu-ready.cost')) return null;
  const out: Partial<Assumptions> = {};
  const src = (key: string, e: Entry) => ({ kind: 'assumption' as const, file, line: e.line, key });
  const bad = (key: string, e: Entry, why: string): never => {
    throw new CostConfigError(`${file}:${e.line}: \`${key}\` ${why}`, file, e.line, key);
  };
  const number = (key: string, e: Entry, lo: number, hi: number): number => {
    // TOML is typed: a quoted "8" is a string, as every TOML reader (tomllib, Cargo) takes it
    const n = typeof e.value === 'string' ? undefined : num(e.value);
    if (n === undefined) bad(key, e, `must be a number, not ${typeof e.value === 'string' ? `the string ${shownValue(e.value)} (write it without quotes)` : shownValue(e.value)}`);
    if (n! < lo || n! > hi) bad(key, e, `must be between ${lo} and ${hi}, not ${n}`);
    return n!;
  };
  for (const [full, e] of entries) {
    if (!full.startsWith(prefix)) continue;
    const key = full.slice(prefix.length);
    const head = key.split('.')[0];
    if (head === 'prices') {
      const parts = key.split('.');
      if (parts.length === 1) continue;
      const hw = parseHardware(parts[1]);
      if (!hw) bad(key, e, `names unknown hardware "${parts[1]}"`);
      if (parts.length === 2) continue;
      const p = parts[2];
      if (p !== 'on-demand' && p !== 'spot') bad(key, e, 'must be prices.<hardware>.on-demand or .spot');
      out.prices ??= {};
      out.prices[hw!.id] ??= {};
      out.prices[hw!.id]![p as Pricing] = { value: number(key, e, 0, 1e6), source: src(key, e) };
      continue;
    }
    if (head === 'findings') {
      const parts = key.split('.');
      if (parts.length < 3) continue;
      if (!/^TPU\d{3}$/.test(parts[1])) bad(key, e, 'must be findings.TPUnnn.<assumption>');
      out.findings ??= {};
      out.findings[parts[1]] ??= {};
      out.findings[parts[1]][parts.slice(2).join('.')] = { value: number(key, e, 0, 1e9), source: src(key, e) };
      continue;
    }
    if (head === 'tokens-per-second') {
      out.tokensPerSecondPerChip ??= {};
      if (key === head && typeof e.value === 'object') continue;
      if (key === head) bad(key, e, 'must be a table of measured tokens/s per chip by hardware, e.g. tokens-per-second = { v6e = 5200 }');
      const hw = parseHardware(key.split('.')[1]);
      if (!hw) bad(key, e, `names unknown hardware "${key.split('.')[1]}"`);
      out.tokensPerSecondPerChip[hw!.id] = { value: number(key, e, 1e-6, 1e12), source: src(key, e) };
      continue;
    }
    if (key.includes('.')) {
      if (ARRAY_KEYS.has(head)) continue; // children of arrays (hardware = [...]) are read with their parent
      bad(key, e, `is not a cost assumption${didYouMean(head, ['prices', 'findings', 'tokens-per-second', ...ASSUMPTION_KEYS])}`);
    }
    if (key === 'hardware') {
      const list = parseHardwareSlices(e.value, `${file}:${e.line}: \`hardware\``);
      out.hardware = { value: list.map((h) => h.id), source: src(key, e) };
      for (const h of list) if (h.chips) (out.hardwareChips ??= {})[h.id] = { value: h.chips, source: src(key, e) };
    } else if (key === 'region') {
      out.region = { value: parseRegion(e.value, `${file}:${e.line}: \`region\``), source: src(key, e) };
    } else if (Object.hasOwn(BOOLEAN, key)) {
      if (typeof e.value !== 'boolean') bad(key, e, 'must be true or false');
      out[BOOLEAN[key]] = { value: e.value as boolean, source: src(key, e) };
    } else if (key === 'chips') {
      const n = number(key, e, 1, 1e6);
      if (!Number.isInteger(n)) bad(key, e, 'must be a whole number of chips');
      out.chips = { value: n, source: src(key, e) };
      out.jobChips = out.chips;
    } else if (key === 'pricing') {
      out.pricing = { value: parsePricingList(e.value, `${file}:${e.line}: \`pricing\``), source: src(key, e) };
    } else if (key === 'currency') {
      if (typeof e.value !== 'string' || !/^[A-Z]{3}$/.test(e.value)) bad(key, e, 'must be a three-letter currency code');
      out.currency = { value: e.value as string, source: src(key, e) };
    } else if (Object.hasOwn(NUMERIC, key)) {
      const [name, lo, hi] = NUMERIC[key];
      (out as Record<string, Sourced<number>>)[name] = { value: number(key, e, lo, hi), source: src(key, e) };
    } else if (FIELD_BY_KEY.has(key)) {
      const field = FIELD_BY_KEY.get(key)!;
      out.fields ??= {};
      if (STRING_FIELDS.has(field)) (out.fields as Record<string, Sourced<string>>)[field] = { value: String(e.value), source: src(key, e) };
      else (out.fields as Record<string, Sourced<number>>)[field] = { value: number(key, e, 1e-9, 1e18), source: src(key, e) };
    } else {
      bad(key, e, `is not a cost assumption${didYouMean(key, ASSUMPTION_KEYS)} (known: ${ASSUMPTION_KEYS.join(', ')})`);
    }
  }
  if (out.mfu && !out.mfuLow && !out.mfuHigh) {
    // the band follows the expected value in the default proportions (0.30/0.40/0.50)
    out.mfuLow = { value: out.mfu.value * 0.75, source: { kind: 'derived', formula: `mfu × 0.75 (${file}:${(out.mfu.source as { line: number }).line})` } };
    out.mfuHigh = { value: Math.min(1, out.mfu.value * 1.25), source: { kind: 'derived', formula: `mfu × 1.25 (${file}:${(out.mfu.source as { line: number }).line})` } };
  }
  return out;
}

/** Later overrides win; prices, findings, fields and measured rates merge per key. */
export function mergeAssumptions(base: Assumptions, ...overrides: (Partial<Assumptions> | null | undefined)[]): Assumptions {
  const out: Assumptions = { ...base, prices: { ...base.prices }, fields: { ...base.fields }, findings: { ...base.findings }, tokensPerSecondPerChip: { ...base.tokensPerSecondPerChip }, hardwareChips: { ...base.hardwareChips } };
  for (const o of overrides) {
    if (!o) continue;
    for (const [k, v] of Object.entries(o)) {
      if (v === undefined) continue;
      if (k === 'prices') for (const [hw, p] of Object.entries(v as Assumptions['prices'])) out.prices[hw as HardwareId] = { ...out.prices[hw as HardwareId], ...p };
      else if (k === 'fields') Object.assign(out.fields, v);
      else if (k === 'findings') for (const [r, f] of Object.entries(v as Assumptions['findings'])) out.findings[r] = { ...out.findings[r], ...f };
      else if (k === 'tokensPerSecondPerChip') Object.assign(out.tokensPerSecondPerChip, v);
      else if (k === 'hardwareChips') out.hardwareChips = { ...(v as Assumptions['hardwareChips']) };
      else (out as unknown as Record<string, unknown>)[k] = v;
    }
  }
  if ((out.mfuLow || out.mfuHigh) && !out.mfu) throw new CostConfigError('mfu-low and mfu-high need mfu (the expected value) too', undefined, undefined, 'mfu');
  if (out.mfu) {
    out.mfuLow ??= { value: out.mfu.value * 0.75, source: { kind: 'derived', formula: 'mfu × 0.75' } };
    out.mfuHigh ??= { value: Math.min(1, out.mfu.value * 1.25), source: { kind: 'derived', formula: 'mfu × 1.25' } };
    if (!(out.mfuLow.value <= out.mfu.value && out.mfu.value <= out.mfuHigh.value)) {
      throw new CostConfigError(`the MFU band must satisfy mfu-low ≤ mfu ≤ mfu-high, not ${out.mfuLow.value} / ${out.mfu.value} / ${out.mfuHigh.value}`, undefined, undefined, 'mfu');
    }
  }
  return out;
}

/** Flattens assumptions for JSON and the panel: key → {value, source}. */
export function assumptionList(a: Assumptions): { key: string; value: unknown; source: Sourced<unknown>['source'] }[] {
  const rows: { key: string; value: unknown; source: Sourced<unknown>['source'] }[] = [];
  const keyOf = Object.fromEntries(Object.entries(NUMERIC).map(([k, [n]]) => [n, k]));
  const push = (key: string, s: Sourced<unknown> | undefined) => s && rows.push({ key, value: s.value, source: s.source });
  push('hardware', a.hardware);
  push('chips', a.chips);
  push('pricing', a.pricing);
  push('region', a.region);
  for (const [hw, s] of Object.entries(a.hardwareChips)) push(`chips.${hw}`, s);
  for (const n of ['mfuLow', 'mfu', 'mfuHigh', 'compileSeconds', 'gpuCompileSeconds', 'distinctShapes', 'inputStall', 'preemptionsPerDay', 'restartSeconds', 'checkpointWriteSeconds', 'checkpointIntervalMinutes', 'storageGBps', 'checkpointBytesPerParam', 'gradBytesPerParam', 'utilization', 'exchangeRate', 'bytesPerParam'] as NumKey[]) push(keyOf[n], a[n]);
  for (const [k, n] of Object.entries(BOOLEAN)) push(k, a[n]);
  push('currency', a.currency);
  for (const [hw, s] of Object.entries(a.tokensPerSecondPerChip)) push(`tokens-per-second.${hw}`, s);
  for (const [hw, p] of Object.entries(a.prices)) for (const [k, s] of Object.entries(p ?? {})) push(`prices.${hw}.${k}`, s);
  for (const [r, f] of Object.entries(a.findings)) for (const [k, s] of Object.entries(f)) push(`findings.${r}.${k}`, s);
  return rows;
}
