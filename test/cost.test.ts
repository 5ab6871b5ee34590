/** The cost estimator: readers, frameworks, the model (hand-computed goldens), errors, priced findings, view model. */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import {
  CostConfigError, HARDWARE, MissingValuesError, assumptionsFrom, buildCostVM, costVM, estimateAll, estimateFromFiles, lensText,
  loadTrainingConfig, parseAssumptionsFile, priceFindings, pricedFindingsVM, reportJson, resolveConfig, toMarkdown, defaultAssumptions, staleness, parseHardware, findModel, pickledInt,
  type Assumptions, type ConfigFile, type TrainingFields,
} from '../src/cost';
import type { Finding } from '../src/core/types';

const TODAY = '2026-11-29';
const FX = 'test/cost-fixtures';
const file = (p: string): ConfigFile => ({ path: p, text: fs.readFileSync(path.join(ROOT, p), 'utf8') });

beforeAll(async () => {
  await init();
});

/** Field values with the file name dropped from provenance: lines must match across formats. */
function strip(fields: TrainingFields) {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    const s = v!.source;
    out[k] = { value: v!.value, source: s.kind === 'config' ? { kind: s.kind, line: s.line, key: s.key } : s.kind === 'derived' ? { kind: s.kind, formula: s.formula.replace(/test\/cost-fixtures\/same\/train\.\w+/g, 'F') } : s };
  }
  return out;
}

describe('readers: one training config in four formats', () => {
  it('YAML, JSON, TOML and Python globals give the identical canonical config', () => {
    const a = defaultAssumptions();
    const configs = ['py', 'yaml', 'json', 'toml'].map((ext) => resolveConfig(loadTrainingConfig([file(`${FX}/same/train.${ext}`)]), a).config);
    for (const c of configs) expect(c.frameworks).toEqual(['nanogpt']);
    const [py, ...rest] = configs.map((c) => strip(c.fields));
    for (const other of rest) expect(other).toEqual(py);
    // and the values are the ones written (the .py computes 5 * 8)
    expect(py).toMatchObject({
      microBatch: { value: 12, source: { kind: 'config', line: 2, key: 'batch_size' } },
      seqLen: { value: 1024, source: { line: 3, key: 'block_size' } },
      gradAccum: { value: 40, source: { line: 4, key: 'gradient_accumulation_steps' } },
      steps: { value: 5000, source: { line: 5, key: 'max_iters' } },
      layers: { value: 12 }, heads: { value: 12 }, dModel: { value: 768 }, vocab: { value: 50304 },
      precision: { value: 'bfloat16', source: { line: 10 } },
      globalBatch: { value: 480, source: { kind: 'derived' } },
      params: { value: 123_568_128 },
    });
  });

  it('Python: only module-level literals and arithmetic on them are read, nothing is executed', () => {
    const raw = loadTrainingConfig([{ path: 'cfg/train.py', text: 'import os\nbatch_size = 4\nblock_size = int(os.environ["B"])\nn_layer = 2 ** 3\nmax_iters = batch_size * 250\nif True:\n    n_embd = 999\nn_embd = 512\ngradient_accumulation_steps = 2\nopen("/etc/passwd")\n' }]);
    expect(raw.fields.microBatch?.value).toBe(4);
    expect(raw.fields.seqLen).toBeUndefined();
    expect(raw.fields.layers?.value).toBe(8);
    expect(raw.fields.steps).toMatchObject({ value: 1000, source: { line: 5 } });
    expect(raw.fields.dModel).toMatchObject({ value: 512, source: { line: 8 } });
  });
});

describe('frameworks → canonical fields with provenance', () => {
  const a = defaultAssumptions();
  it('nanoGPT: GA is global, GBS = batch_size × gradient_accumulation_steps, vocab default named', () => {
    const { config } = resolveConfig(loadTrainingConfig([file(`${FX}/nanogpt/config/train_gpt2.py`)]), a);
    expect(config.fields.globalBatch?.value).toBe(480);
    expect(config.fields.steps).toMatchObject({ value: 600000, source: { kind: 'config', line: 16, key: 'max_iters' } });
    expect(config.fields.vocab?.source.kind).toBe('default');
  });

  it('HF TrainingArguments + model config.json: per-device batch × GA × devices; SEQ from the args wins over the model maximum', () => {
    const { config } = resolveConfig(loadTrainingConfig([file(`${FX}/hf/training_args.json`), file(`${FX}/hf/config.json`)]), a);
    expect(config.frameworks).toEqual(['hf-trainer', 'hf-model']);
    expect(config.fields.seqLen).toMatchObject({ value: 2048, source: { file: `${FX}/hf/training_args.json`, line: 9, key: 'max_seq_length' } });
    expect(config.fields.layers).toMatchObject({ value: 22, source: { file: `${FX}/hf/config.json`, line: 7 } });
    expect(config.fields.globalBatch?.value).toBe(4 * 8 * 8);
    expect(config.fields.devices?.source.kind).toBe('derived');
  });

  it('Lightning (LightningCLI): devices × num_nodes, data.init_args.batch_size per device', () => {
    const { config } = resolveConfig(loadTrainingConfig([file(`${FX}/lightning/config.yaml`)]), a);
    expect(config.frameworks).toEqual(['lightning']);
    expect(config.fields.devices?.value).toBe(8);
    expect(config.fields.globalBatch?.value).toBe(16 * 2 * 8);
    expect(config.fields.microBatch).toMatchObject({ source: { line: 21, key: 'data.init_args.batch_size' } });
  });

  it('DeepSpeed: train_batch_size is global; the world size follows from it', () => {
    const { config, tokens } = resolveConfig(loadTrainingConfig([file(`${FX}/deepspeed/ds_config.json`)]), assumptionsFrom([file(`${FX}/deepspeed/.tpu-ready/cost.toml`)]));
    expect(config.fields.globalBatch).toMatchObject({ value: 256, source: { kind: 'config', line: 2, key: 'train_batch_size' } });
    expect(config.fields.devices?.value).toBe(8);
    expect(config.fields.steps).toMatchObject({ value: 10000, source: { kind: 'assumption', line: 2, key: 'steps' } });
    expect(tokens?.value).toBe(10000 * 256 * 2048);
  });

  it('LitGPT: max_tokens gives the run length; null max_seq_length falls back to block_size; GA derived', () => {
    const { config, tokens } = resolveConfig(loadTrainingConfig([file(`${FX}/litgpt/pretrain.yaml`)]), a);
    expect(config.fields.seqLen).toMatchObject({ value: 2048, source: { key: 'model_config.block_size' } });
    expect(config.fields.gradAccum?.value).toBe(512 / (4 * 8));
    expect(tokens?.value).toBe(3e12);
    expect(config.fields.vocab?.value).toBe(32000);
  });

  it('Hydra: defaults compose group files, ${...} interpolates, _self_ overrides', () => {
    const dir = `${FX}/hydra/configs`;
    const folder = ['train.yaml', 'data/owt.yaml', 'model/gpt_small.yaml', 'trainer/gpu.yaml', 'trainer/cpu.yaml'].map((p) => file(`${dir}/${p}`));
    const { config } = resolveConfig(loadTrainingConfig([folder[0]], folder), a);
    expect(config.frameworks).toEqual(['hydra', 'lightning']);
    expect(config.fields.steps).toMatchObject({ value: 30000, source: { file: `${dir}/train.yaml`, line: 10 } });
    expect(config.fields.microBatch).toMatchObject({ value: 24, source: { file: `${dir}/data/owt.yaml`, line: 1 } });
    expect(config.fields.seqLen).toMatchObject({ value: 1024, source: { file: `${dir}/train.yaml`, line: 8 } });
    expect(config.fields.devices).toMatchObject({ value: 8, source: { file: `${dir}/trainer/gpu.yaml` } });
    expect(config.fields.globalBatch?.value).toBe(24 * 8);
  });

  it('torchtitan: flavor gives the model; local batch × data-parallel degree', () => {
    const { config } = resolveConfig(loadTrainingConfig([file(`${FX}/torchtitan/llama3_8b.toml`)]), a);
    expect(config.fields.params?.value).toBe(8.03e9);
    expect(config.fields.seqLen).toMatchObject({ value: 8192, source: { line: 11, key: 'training.seq_len' } });
    expect(config.fields.globalBatch?.value).toBe(8);
  });

  it('Accelerate: num_processes, num_machines, mixed_precision', () => {
    const raw = loadTrainingConfig([file(`${FX}/accelerate/default_config.yaml`)]);
    expect(raw.frameworks).toEqual(['accelerate']);
    expect(raw.fields.devices).toMatchObject({ value: 8, source: { line: 5, key: 'num_processes' } });
    expect(raw.fields.precision?.value).toBe('bf16');
  });

  it('[tool.tpu-ready.cost] in pyproject.toml supplies assumptions and fields; unknown keys are errors', () => {
    const a2 = parseAssumptionsFile('pyproject.toml', '[project]\nname = "x"\n\n[tool.tpu-ready.cost]\nhardware = "v6e"\nseq-len = 4096\nmfu = 0.5\n');
    expect(a2?.hardware?.value).toEqual(['v6e']);
    expect(a2?.fields?.seqLen).toMatchObject({ value: 4096, source: { kind: 'assumption', file: 'pyproject.toml', line: 6 } });
    expect(a2?.mfuLow?.value).toBeCloseTo(0.375);
    expect(parseAssumptionsFile('pyproject.toml', '[project]\nname = "x"\n')).toBeNull();
    expect(() => parseAssumptionsFile('.tpu-ready/cost.toml', 'mfu = 0.4\nmfuu = 3\n')).toThrow(/cost\.toml:2: `mfuu` is not a cost assumption/);
    expect(() => parseAssumptionsFile('.tpu-ready/cost.toml', 'input-stall = 2\n')).toThrow(/`input-stall` must be between 0 and 0.99/);
  });
});

describe('the model: golden estimates computed by hand', () => {
  it('golden 1: nanoGPT GPT-2 124M (config/train_gpt2.py) on v5e-8, default assumptions: MFU from the roofline model', () => {
    const r = estimateFromFiles({ configs: [file(`${FX}/nanogpt/config/train_gpt2.py`)], overrides: { hardware: { value: ['v5e'], source: { kind: 'flag', flag: 't' } } }, today: TODAY });
    // N = 12·L·d² + V·d = 12·12·768² + 50304·768 = 84,934,656 + 38,633,472 = 123,568,128
    expect(r.params.value).toBe(123_568_128);
    // FLOPs/token = 6N + 12·L·d·T = 741,408,768 + 12·12·768·1024 (113,246,208) = 854,654,976
    expect(r.flopsPerToken).toBe(854_654_976);
    // tokens = max_iters × (batch_size × GA) × block_size = 600,000 × 480 × 1024
    expect(r.tokens.value).toBe(294_912_000_000);
    const od = r.estimates.find((e) => e.pricing === 'on-demand')!;
    const spot = r.estimates.find((e) => e.pricing === 'spot')!;
    expect(od.slice).toBe('v5e-8');
    // per chip: 480 ÷ 8 = 60 sequences = micro-batch 12 × GA 5 → m = 12 × 1024 = 12,288 tokens per micro-batch
    expect(od.perChip).toMatchObject({ sequences: 60, microBatch: 12, gradAccum: 5, tokensPerMicroBatch: 12_288 });
    // AI: W = 4·768² + 2·768·3072 = 7,077,888; AI = m·W ÷ (W + m·(8·768 + 2·3072)) = 86,973,087,744 ÷ 158,072,832 = 550.21
    // ridge v5e = 197e12 ÷ 819e9 = 240.54 → x = 2.2874; curve = 0.7 × 2.2874 ÷ (2.2874 + 2.1) = 0.36495
    // anchor MaxText 16B on v5e: AI 2633.1 → x 10.947 → curve 0.58733 vs measured mid 0.5785: ratio 0.98497,
    // weight 768 ÷ 4096 = 0.1875 → × 0.98497^0.1875 = 0.99716 → MFU 0.36391
    expect(od.mfu!).toBeCloseTo(0.36391, 4);
    expect(od.mfuSource).toBe('model');
    // band: max(ln(0.611 ÷ 0.546) ÷ 2, 0.1) + 0.2 × ln(4096 ÷ 768) = 0.1 + 0.33480 = 0.43480 → ×/÷ 1.5446
    expect(od.low.mfu!).toBeCloseTo(0.36391 * Math.exp(0.4348), 3);
    expect(od.high.mfu!).toBeCloseTo(0.36391 / Math.exp(0.4348), 3);
    // tokens/s = 8 × 197e12 × 0.36391 ÷ 854,654,976 = 671,068 (end to end: no all-reduce or stall factor)
    expect(od.tokensPerSecond).toBeCloseTo(671_068, -1);
    // compute = 294.912e9 ÷ 671,068 ÷ 3600 = 122.074 h
    expect(od.breakdown.compute).toBeCloseTo(122.074, 2);
    expect(od.breakdown.inputStall).toBe(0);
    // all-reduce: 123.6M × 4 B = 0.494 GB × 2·7/8 ÷ 200 GB/s (ICI, one way) = 4.3 ms < 2/3 of a 0.73 s step: hidden
    expect(od.breakdown.communication).toBe(0);
    // eval: ⌊600,000 ÷ 1000⌋ + 1 = 601 passes × 2 × 200 × 12 × 1024 = 4,915,200 tokens, forward (3× a training token)
    // on one chip: 601 × 4,915,200 ÷ (671,068 ÷ 8 × 3) ÷ 3600 = 3.2607 h
    expect(od.eval?.passes).toBe(601);
    expect(od.breakdown.eval).toBeCloseTo(3.2607, 3);
    // compile 180 s = 0.05 h; checkpoint 123,568,128 × 12 B ÷ 1 GB/s = 1.4828 s, every 60 min on demand:
    // ⌊(122.074 + 3.261) ÷ 1⌋ = 125 writes × 1.4828 s = 0.051487 h
    expect(od.checkpoint.writeSeconds).toBeCloseTo(1.482818, 5);
    expect(od.checkpoint.writes).toBe(125);
    // hours = 122.074 + 3.2607 + 0.05 + 0.0515 = 125.436; cost = 125.436 × 8 × $1.20 = $1,204.2
    expect(od.hours).toBeCloseTo(125.436, 2);
    expect(od.cost!).toBeCloseTo(1204.2, 0);
    expect(od.price).toMatchObject({ region: 'us-central1', asOf: '2026-11-01', perChipHour: 1.2 });
    // the range across regions: us-central1 $1.20 … europe-west4 $1.56 → $1,204 … $1,565
    expect(od.price!.range!.max).toMatchObject({ region: 'europe-west4', perChipHour: 1.56 });
    expect(od.price!.range!.max.cost!).toBeCloseTo(od.chipHours * 1.56, 6);
    // spot: the cheapest region (northamerica-northeast1, $0.217); 1 preemption/day (one host);
    // Young/Daly interval √(2 × 1.4828 s × 86,400 s) = 506.2 s = 8.4365 min, used by default
    expect(spot.price).toMatchObject({ region: 'northamerica-northeast1', perChipHour: 0.217 });
    expect(spot.checkpoint.intervalMinutes).toBeCloseTo(8.4365, 3);
    expect(spot.checkpoint.intervalSource).toMatch(/Young\/Daly/);
    // each preemption loses restart 600 s + compile 180 s + half an interval 4.218 min = 0.28697 h
    expect(spot.preemption!.hoursEach).toBeCloseTo(0.28697, 4);
    // sensitivity rows at 1, 4 and 12 per day: more preemptions, longer and dearer
    expect(spot.preemptionSensitivity.map((x) => x.perDay)).toEqual([1, 4, 12]);
    expect(spot.preemptionSensitivity[2].hours!).toBeGreaterThan(spot.preemptionSensitivity[0].hours!);
    expect(spot.preemptionSensitivity[0].hours).toBeCloseTo(spot.hours, 9);
    // memory: a 12 × 1024 micro-batch needs activations 12 × [1024·12·768·(34 + 5·12·1024 ÷ 768)] = 12.91 GB
    // + logits 12 × 1024 × 50,304 × 10 B = 6.18 GB > 16 GB: it does NOT fit one v5e chip
    expect(od.memory.perChip.activations).toBe(12 * 1024 * 12 * 768 * (34 + (5 * 12 * 1024) / 768));
    expect(od.memory.perChip.logits).toBe(12 * 1024 * 50304 * 10);
    expect(od.memory.microBatchFits).toBe(false);
    expect(od.memory.fitsOnOneChip).toBe(false);
    expect(od.warnings.join()).toMatch(/micro-batch of 12 × 1,024 tokens does not fit one 16 GB chip/);
    // what does: 60 sequences per chip; micro-batch 10 needs 10.76 + 5.15 + 0.25 = 16.2 GB > 16, 6 needs 9.8 GB;
    // on v5e-16 (30 per chip, micro-batch 10) 16.07 GB does not fit, on v5e-32 (15 per chip, micro-batch 5) it does
    expect(od.warnings.join()).toMatch(/options: micro-batch 6 × GA 10 fits v5e-8; the smallest slice that fits is v5e-32 \(micro-batch 5\); flash attention; activation checkpointing/);
    expect(od.memory.smallestSlice).toEqual({ chips: 32, name: 'v5e-32' });
    expect(lensText(r)).toBe('≈ $780–$1,900 · 3.4–8.1 days on v5e-8 (us-central1, 2026-11-01) · spot $140–$340 (northamerica-northeast1, 2026-11-01)');
  });

  it('flash attention and activation checkpointing shrink the activations: the 12 × 1024 micro-batch then fits', () => {
    const over = (flash: boolean, ckpt: boolean) => estimateFromFiles({ configs: [file(`${FX}/nanogpt/config/train_gpt2.py`)], overrides: { hardware: { value: ['v5e'], source: { kind: 'flag', flag: 't' } }, pricing: { value: ['on-demand'], source: { kind: 'flag', flag: 't' } }, flashAttention: { value: flash, source: { kind: 'flag', flag: 'f' } }, activationCheckpointing: { value: ckpt, source: { kind: 'flag', flag: 'c' } } }, today: TODAY }).estimates[0];
    // flash: 12 layers × 1024·12·768 × 34 = 3.85 GB + logits 6.18 GB + states 0.25 GB = 10.3 GB ≤ 16 GB
    const f = over(true, false);
    expect(f.memory.perChip.activations).toBe(12 * 1024 * 12 * 768 * 34);
    expect(f.memory.microBatchFits).toBe(true);
    expect(f.memory.fits).toBe(true);
    // checkpointing: 12 × 2·1024·12·768 (inputs) + one layer 1024·12·768·114 = 226.5 MB + 1.076 GB
    const c = over(false, true);
    expect(c.memory.perChip.activations).toBe(12 * 2 * 1024 * 12 * 768 + 1024 * 12 * 768 * (34 + (5 * 12 * 1024) / 768));
    expect(c.memory.fits).toBe(true);
  });

  it('GPT-2 124M, 2.95e11 tokens on 8 chips: v6e, v5e and H100 fall inside the public runs, within 1.5× of each other', () => {
    const r = estimateFromFiles({ configs: [file(`${FX}/nanogpt/config/train_gpt2.py`)], overrides: { hardware: { value: ['v6e', 'v5e', 'h100', 'a100'], source: { kind: 'flag', flag: 't' } }, pricing: { value: ['on-demand'], source: { kind: 'flag', flag: 't' } } }, today: TODAY });
    const by = Object.fromEntries(r.estimates.map((e) => [e.hardware, e]));
    // v6e: ≈ 23% measured (JAX port, HBM-bound) inside the band; our curve at d 768, m 12,288: x = 550.21 ÷ 560.44 = 0.98175,
    // 0.7 × 0.98175 ÷ 3.08175 = 0.22300, × (0.23 ÷ 0.22868 at the anchor's m = 65,536) = 0.22430
    expect(by.v6e.mfu!).toBeCloseTo(0.2243, 3);
    expect(by.v6e.high.mfu!).toBeLessThanOrEqual(0.23);
    expect(by.v6e.low.mfu!).toBeGreaterThanOrEqual(0.23);
    // H100: llm.c ≈ 40% inside the band
    expect(by.h100.high.mfu!).toBeLessThanOrEqual(0.4);
    expect(by.h100.low.mfu!).toBeGreaterThanOrEqual(0.4);
    // A100 40GB: nanoGPT's own "about 4 days" (≈ 29%) inside the band, and the time band holds 4 days
    expect(by.a100.high.mfu!).toBeLessThanOrEqual(0.29);
    expect(by.a100.low.mfu!).toBeGreaterThanOrEqual(0.29);
    expect(by.a100.low.hours / 24).toBeLessThan(4.5);
    expect(by.a100.high.hours / 24).toBeGreaterThan(3.5);
    // v5e has no GPT-2 anchor: compute-bound (x = 2.29) so its MFU is above v6e's, with a wider band
    expect(by.v5e.mfu!).toBeGreaterThan(by.v6e.mfu!);
    expect(by.v5e.low.mfu! / by.v5e.high.mfu!).toBeGreaterThan(by.v6e.low.mfu! / by.v6e.high.mfu!);
    // costs on demand in us-central1: v6e ≈ $944, H100 ≈ $991, v5e ≈ $1,204: within 1.5× of each other
    const costs = [by.v6e.cost!, by.v5e.cost!, by.h100.cost!];
    expect(Math.max(...costs) / Math.min(...costs)).toBeLessThan(1.5);
    expect(by.v6e.cost!).toBeCloseTo(944.06, 0);
    expect(by.h100.cost!).toBeCloseTo(990.57, 0);
  });

  it('golden 2: HF llama-style (training_args.json + config.json) on v6e-16, assumptions from .tpu-ready/cost.toml', () => {
    const r = estimateFromFiles({ configs: [file(`${FX}/hf/training_args.json`), file(`${FX}/hf/config.json`)], assumptionFiles: [file(`${FX}/hf/.tpu-ready/cost.toml`)], today: TODAY });
    expect(r.estimates.map((e) => `${e.slice} ${e.pricing}`)).toEqual(['v6e-16 spot', 'v6e-16 on-demand', '16× H100 spot', '16× H100 on-demand']);
    // N = 12·22·2048² + 32000·2048 = 1,107,296,256 + 65,536,000 = 1,172,832,256
    expect(r.params.value).toBe(1_172_832_256);
    // FLOPs/token = 6N + 12·22·2048·2048 = 7,036,993,536 + 1,107,296,256 = 8,144,289,792
    expect(r.flopsPerToken).toBe(8_144_289_792);
    // GBS = 4 per device × GA 8 × 16 devices (cost.toml chips = the job's) = 512; tokens = 2000 × 512 × 2048
    expect(r.tokens.value).toBe(2_097_152_000);
    // dataloader_drop_last: false adds one shape: 2 shapes × 300 s = 0.16667 h
    expect(r.distinctShapes.value).toBe(2);
    const spot = r.estimates[0];
    // mfu = 0.45 from cost.toml for every hardware: raw = 16 × 918e12 × 0.45 ÷ 8,144,289,792 = 811,562.48 tokens/s
    expect(spot.mfuSource).toBe('assumption');
    // compute = 2,097,152,000 ÷ 811,562.48 ÷ 3600 = 0.717803 h
    expect(spot.breakdown.compute).toBeCloseTo(0.717803, 5);
    // all-reduce: 1.1728e9 × 4 B = 4.691 GB × 2·15/16 ÷ 400 GB/s = 21.99 ms < 2/3 × (512 × 2048 ÷ 811,562 = 1.292 s): hidden
    expect(spot.breakdown.communication).toBe(0);
    // input stall 0.05 (cost.toml): train = 0.717803 ÷ 0.95 = 0.755582 h
    expect(spot.breakdown.compute + spot.breakdown.inputStall).toBeCloseTo(0.755582, 5);
    // 1 write (30 min interval from cost.toml) × 120 s = 0.033333 h
    expect(spot.checkpoint.writes).toBe(1);
    // T0 = 0.755582 + 0.166667 + 0.033333 = 0.955582 h; each preemption = 600 s + 0.166667 h + 15 min = 0.583333 h
    // rate 2/24 per hour → T = 0.955582 ÷ (1 − 0.583333 ÷ 12) = 1.004409 h; spot in the cheapest region
    // (asia-southeast1, $0.267): 1.004409 × 16 × $0.267 = $4.2908
    expect(spot.hours).toBeCloseTo(1.004409, 5);
    expect(spot.price).toMatchObject({ region: 'asia-southeast1', perChipHour: 0.267 });
    expect(spot.cost!).toBeCloseTo(4.2908, 3);
    const od = r.estimates[1];
    // on demand: 0.955582 h × 16 × $2.70 = $41.281; committed use 1y $1.89 → $28.897, 3y $1.22 → $18.653
    expect(od.hours).toBeCloseTo(0.955582, 5);
    expect(od.cost!).toBeCloseTo(41.281, 2);
    expect(od.committed.map((c) => [c.term, Number(c.cost.toFixed(2))])).toEqual([['1y', 28.9], ['3y', 18.65]]);
    // Young/Daly with MTBP 12 h: √(2 × 120 × 43,200) s = 53.666 min (suggested; the interval was set)
    expect(spot.checkpoint.suggestedIntervalMinutes!).toBeCloseTo(53.666, 2);
    // H100 spot is published (us-east4 $4.27); H100 compiles nothing on GPU here
    expect(r.estimates[2].price).toMatchObject({ region: 'us-east4', perChipHour: 4.27 });
    expect(r.estimates[2].breakdown.compile).toBe(0);
  });

  it('the worked example of PRICES.md: 7B × 1T tokens on v6e at 40% MFU ≈ 31,800 chip-hours ≈ $85,800 (MFU alone, no double count)', () => {
    const toml = 'hardware = "v6e"\npricing = "on-demand"\nparams = 7e9\ndataset-tokens = 1e12\nmfu = 0.4\ncompile-seconds = 0\ncheckpoint-write-seconds = 0\n';
    const r = estimateFromFiles({ configs: [], assumptionFiles: [{ path: '.tpu-ready/cost.toml', text: toml }], today: TODAY });
    const e = r.estimates[0];
    // 6·N·D = 6 × 7e9 × 1e12 = 4.2e22 FLOPs; ÷ (918e12 × 0.4) ÷ 3600 = 31,772 chip-hours; × $2.70 = $85,784
    expect(e.flopsPerToken * e.tokens).toBe(4.2e22);
    expect(e.chipHours).toBeCloseTo(31_772, 0);
    expect(e.cost!).toBeCloseTo(85_784, 0);
    expect(Math.round(e.chipHours / 100) * 100).toBe(31_800);
    expect(Math.round(e.cost! / 100) * 100).toBe(85_800);
    // memory: 7e9 × 16 B = 112 GB (sharded) + one assumed 4 × 2048 micro-batch: one chip does not hold it
    expect(e.memory.fitsOnOneChip).toBe(false);
    expect(e.warnings.join()).toMatch(/micro-batch unknown/);
  });

  it('measured tokens/s come out unchanged: 400k/chip × 8 = 3.2M, not 2.98M; utilization divides cost', () => {
    const base = 'hardware = "v5e"\npricing = "on-demand"\nparams = 1e9\ndataset-tokens = 3.6e9\ncompile-seconds = 0\ncheckpoint-write-seconds = 0\n';
    const r8 = estimateFromFiles({ configs: [], assumptionFiles: [{ path: 'c.toml', text: base + 'chips = 8\n[tokens-per-second]\nv5e = 400000\n' }], today: TODAY });
    expect(r8.estimates[0].tokensPerSecond).toBe(3_200_000);
    // 3.6e9 ÷ 3.2e6 = 1125 s = 0.3125 h
    expect(r8.estimates[0].hours).toBeCloseTo(0.3125, 9);
    const r = estimateFromFiles({ configs: [], assumptionFiles: [{ path: 'c.toml', text: base + 'chips = 1\nutilization = 0.5\n[tokens-per-second]\nv5e = 1000\n' }], today: TODAY });
    const e = r.estimates[0];
    // 3.6e9 tokens ÷ 1000 tokens/s = 3.6e6 s = 1000 h; cost = 1000 × 1 × $1.20 ÷ 0.5 = $2,400
    expect(e.measured).toBe(true);
    expect(e.hours).toBeCloseTo(1000, 6);
    expect(e.cost!).toBeCloseTo(2400, 6);
    expect(e.low.hours).toBe(e.high.hours);
    expect(e.price).toMatchObject({ asOf: '2026-11-01', region: 'us-central1', overridden: false });
    expect(e.price!.source).toMatch(/skypilot-catalog/);
  });

  it('the same job on every row: an HF config on 8 and on 64 chips keeps the global batch and the tokens', () => {
    const cfgs = [file(`${FX}/hf/training_args.json`), file(`${FX}/hf/config.json`)];
    const at = (chips: number) => estimateFromFiles({ configs: cfgs, overrides: { chips: { value: chips, source: { kind: 'flag', flag: '--chips' } }, hardware: { value: ['v6e'], source: { kind: 'flag', flag: 't' } }, pricing: { value: ['on-demand'], source: { kind: 'flag', flag: 't' } } }, today: TODAY });
    const [r8, r64] = [at(8), at(64)];
    // no device count in the config: the job is one 8-chip host: GBS = 4 × 8 × 8 = 256; tokens = 2000 × 256 × 2048
    expect(r8.tokens.value).toBe(2000 * 256 * 2048);
    expect(r64.tokens.value).toBe(r8.tokens.value);
    expect(r64.config.fields.globalBatch?.value).toBe(256);
    // on 64 chips: 256 ÷ 64 = 4 sequences per chip = micro-batch 4 × GA 1
    expect(r64.estimates[0].perChip).toMatchObject({ sequences: 4, microBatch: 4, gradAccum: 1 });
    expect(r64.warnings.join()).toMatch(/the same job on every row: global batch 256 sequences/);
    // same tokens on 8× the chips: about 8× faster (the MFU model sees the same micro-batch), cost about the same
    expect(r8.estimates[0].breakdown.compute / r64.estimates[0].breakdown.compute).toBeCloseTo(8, 5);
  });

  it('prices: spot goes stale after 7 days, on-demand after 180 (today is a parameter); a chosen region', () => {
    expect(staleness(HARDWARE.v5e.onDemand[0], '2027-04-30')).toBeNull();
    expect(staleness(HARDWARE.v5e.onDemand[0], '2027-06-01')).toMatch(/212 days old/);
    expect(staleness(HARDWARE.v5e.spot[0], '2026-11-08', 'spot')).toBeNull();
    expect(staleness(HARDWARE.v5e.spot[0], '2026-11-09', 'spot')).toMatch(/8 days old .*change daily/);
    const toml = 'hardware = "v5e"\nparams = 1e9\ndataset-tokens = 1e9\n';
    const r = estimateFromFiles({ configs: [], assumptionFiles: [{ path: 'c.toml', text: toml }], today: '2027-06-01' });
    expect(r.estimates[0].warnings.join('\n')).toMatch(/re-check it/);
    expect(r.estimates[0].price?.stale).toBeTruthy();
    expect(r.warnings.join()).toMatch(/spot prices as of 2026-11-01 are 212 days old/);
    for (const hw of Object.values(HARDWARE)) for (const p of [...hw.onDemand, ...hw.spot]) expect([p.asOf, p.region, p.source].every(Boolean)).toBe(true);
    const eu = estimateFromFiles({ configs: [], assumptionFiles: [{ path: 'c.toml', text: toml + 'region = "europe-west4"\n' }], today: TODAY });
    expect(eu.estimates.map((e) => [e.pricing, e.price?.perChipHour ?? null])).toEqual([['on-demand', 1.56], ['spot', null]]);
    expect(eu.estimates[1].warnings.join()).toMatch(/no spot price in europe-west4/);
  });

  it('slice names give chips for every generation; TPU7x is compute-only', () => {
    expect(['v5p-8', 'v4-8', 'v5litepod-16', 'v6e-8', 'tpu7x-8', 'TPU v5p-128', 'v5e', 'H100'].map((s) => parseHardware(s))).toEqual([
      { id: 'v5p', chips: 4 }, { id: 'v4', chips: 4 }, { id: 'v5e', chips: 16 }, { id: 'v6e', chips: 8 }, { id: 'tpu7x', chips: 4 }, { id: 'v5p', chips: 64 }, { id: 'v5e' }, { id: 'h100' },
    ]);
    expect(['h200', 'b200', 'a100-80gb', 'A100 80GB'].map((s) => parseHardware(s)?.id)).toEqual(['h200', 'b200', 'a100-80gb', 'a100-80gb']);
    expect(parseHardware('v5p-7')).toBeNull(); // 7 TensorCores is no whole chip count
    const toml = 'hardware = ["tpu7x-8", "v5p-8", "v5e"]\npricing = "on-demand"\nparams = 70e9\ndataset-tokens = 1e9\nchips = 8\nmicro-batch = 1\nglobal-batch = 256\nseq-len = 2048\nflash-attention = true\nactivation-checkpointing = true\n';
    const r = estimateFromFiles({ configs: [], assumptionFiles: [{ path: 'c.toml', text: toml }], today: TODAY });
    const [x, p, v5e] = r.estimates;
    expect([x.slice, x.chips, p.slice, p.chips, v5e.slice]).toEqual(['tpu7x-8', 4, 'v5p-8', 4, 'v5e-8']);
    expect(x.cost).toBeNull();
    expect(x.warnings.join()).toMatch(/no public on-demand price: compute-only/);
    // d ≈ (128 × 70e9 ÷ 12)^⅓ = 9067, L ≈ 71: one 1 × 2048 micro-batch with flash attention and checkpointing keeps
    // 71 × 2·2048·9067 + 2048·9067·34 = 3.27 GB; states 70e9 × 16 B = 1.12 TB ÷ s chips: s ≥ 1.12e12 ÷ 12.7e9 = 88 → 128
    expect(v5e.memory.fits).toBe(false);
    expect(v5e.memory.smallestSlice).toEqual({ chips: 128, name: 'v5e-128' });
    expect(v5e.warnings.join()).toMatch(/smallest slice that fits is v5e-128/);
  });

  it('evaluation: Lightning val_check_interval × limit_val_batches, or eval-tokens per pass, forward only on every chip', () => {
    const yaml = 'trainer:\n  max_steps: 1000\n  devices: 8\n  val_check_interval: 250\n  limit_val_batches: 50\nmodel:\n  n_layer: 12\n  n_embd: 768\n  vocab_size: 50304\ndata:\n  batch_size: 16\n  seq_len: 1024\n';
    const over: Partial<Assumptions> = { hardware: { value: ['h100'], source: { kind: 'flag', flag: 't' } }, pricing: { value: ['on-demand'], source: { kind: 'flag', flag: 't' } } };
    const e = estimateFromFiles({ configs: [{ path: 'l.yaml', text: yaml }], overrides: over, today: TODAY }).estimates[0];
    // ⌊1000 ÷ 250⌋ = 4 passes × 50 batches × 16 × 1024 × 8 devices = 6,553,600 tokens each, at 3× the training
    // tokens/s of all 8 chips: 4 × 6,553,600 ÷ (3 × tokens/s) s
    expect(e.eval).toMatchObject({ passes: 4, tokensEach: 50 * 16 * 1024 * 8 });
    expect(e.breakdown.eval).toBeCloseTo((4 * 6_553_600) / (3 * e.tokensPerSecond) / 3600, 9);
    // HF: eval_steps without an eval set size is named, and eval-tokens fills it in
    const args = '{\n "per_device_train_batch_size": 8,\n "max_steps": 100,\n "eval_steps": 50,\n "max_seq_length": 512,\n "num_hidden_layers": 2,\n "hidden_size": 64,\n "vocab_size": 100\n}';
    const hf = estimateFromFiles({ configs: [{ path: 'args.json', text: args }], overrides: over, today: TODAY });
    expect(hf.warnings.join()).toMatch(/args\.json:4: evaluation every 50 steps: the eval set size is unknown.*`eval-tokens`/);
    const hf2 = estimateFromFiles({ configs: [{ path: 'args.json', text: args }], assumptionFiles: [{ path: 'c.toml', text: 'eval-tokens = 1e6\n' }], overrides: over, today: TODAY }).estimates[0];
    expect(hf2.eval).toMatchObject({ passes: 2, tokensEach: 1e6 });
  });

  it('a fractional micro-batch in cost.toml never hangs the per-chip batch search', () => {
    const toml = 'hardware = "v5e"\npricing = "on-demand"\nparams = 1e8\nsteps = 10\nglobal-batch = 80\nmicro-batch = 2.7\nseq-len = 512\nchips = 8\n';
    const e = estimateFromFiles({ configs: [], assumptionFiles: [{ path: 'c.toml', text: toml }], today: TODAY }).estimates[0];
    // 80 ÷ 8 = 10 sequences per chip; the largest whole micro-batch ≤ 2.7 dividing 10 is 2 (GA 5)
    expect(e.perChip).toMatchObject({ sequences: 10, microBatch: 2, gradAccum: 5 });
  });

  it('communication: exposed all-reduce appears when gradients outgrow the backward pass (several GPU hosts)', () => {
    // 7B, 64 × H100 (8 hosts), GBS 64 × 2048: G = 7e9 × 4 = 28 GB; NVLink 2·7/8 × 28e9 ÷ 450e9 = 108.9 ms;
    // hosts 2·7/8 × 28e9 ÷ 200e9 = 245 ms; step at 30% MFU = 64 × 2048 × 6 × 7e9 ÷ (64 × 989e12 × 0.3) = 0.2899 s,
    // 2/3 of it = 193.3 ms hidden → exposed 353.9 − 193.3 = 160.6 ms per step
    const toml = 'hardware = "h100"\npricing = "on-demand"\nparams = 7e9\nsteps = 1000\nglobal-batch = 64\nseq-len = 2048\nmfu = 0.3\nchips = 64\n';
    const e = estimateFromFiles({ configs: [], assumptionFiles: [{ path: 'c.toml', text: toml }], today: TODAY }).estimates[0];
    expect(e.communication!.exposedSecondsPerStep).toBeCloseTo(0.3539 - (2 / 3) * 0.28989, 3);
    expect(e.breakdown.communication).toBeCloseTo((1000 * e.communication!.exposedSecondsPerStep) / 3600, 9);
  });

  it('model names resolve through the registry; unknown keys get "did you mean"', () => {
    const r = estimateFromFiles({ configs: [], assumptionFiles: [{ path: 'c.toml', text: 'model = "meta-llama/Llama-3.1-8B"\nsteps = 100\nglobal-batch = 64\nseq-len = 4096\nhardware = "v5p"\n' }], today: TODAY });
    expect(r.params.value).toBe(8.03e9);
    expect(r.config.fields.dModel).toMatchObject({ value: 4096, source: { kind: 'derived', formula: expect.stringMatching(/huggingface\.co\/meta-llama\/Llama-3\.1-8B/) } });
    expect(findModel('gpt2')?.params).toBe(124_439_808);
    expect(() => parseAssumptionsFile('c.toml', 'preemptions-per-dya = 3\n')).toThrow(/`preemptions-per-dya` is not a cost assumption \(did you mean "preemptions-per-day"\?\)/);
    expect(() => parseAssumptionsFile('c.toml', '[price.v5e]\nspot = 1\n')).toThrow(/c\.toml:1: `price` is not a cost assumption \(did you mean "prices"\?\)/);
  });
});

describe('meta.pkl: vocab_size read from the pickle opcodes, nothing executed', () => {
  const hex = (h: string) => Uint8Array.from(h.match(/../g)!.map((b) => parseInt(b, 16)));
  it('protocols 2, 3 and 4 (BININT2, BININT, BININT1); anything else is null', () => {
    // pickle.dumps({'vocab_size': 300, 'x': 1}, protocol=2): BINUNICODE 'vocab_size' BINPUT 1 BININT2 0x012c
    expect(pickledInt(hex('80027d710028580a000000766f6361625f73697a6571014d2c0158010000007871024b01752e'), 'vocab_size')).toBe(300);
    // protocol 3, 70,000: BININT 0x00011170
    expect(pickledInt(hex('80037d7100580a000000766f6361625f73697a6571014a70110100732e'), 'vocab_size')).toBe(70000);
    // protocol 4 (the fixture nanoGPT's prepare.py would write): SHORT_BINUNICODE MEMOIZE BININT1 65
    expect(pickledInt(fs.readFileSync(path.join(ROOT, FX, 'nanogpt-char/data/shakespeare_char/meta.pkl')), 'vocab_size')).toBe(65);
    expect(pickledInt(hex('80047d942e'), 'vocab_size')).toBeNull();
    // a value that is not an int (a string) is not guessed
    expect(pickledInt(new Uint8Array([0x8c, 10, ...new TextEncoder().encode('vocab_size'), 0x94, 0x8c, 1, 0x41]), 'vocab_size')).toBeNull();
  });
});

describe('bad configs: a clear message naming the field', () => {
  const fail = (configs: ConfigFile[], assumptionFiles: ConfigFile[] = []) => {
    try {
      estimateFromFiles({ configs, assumptionFiles, today: TODAY });
    } catch (e) {
      expect(e).toBeInstanceOf(CostConfigError);
      return e as CostConfigError;
    }
    throw new Error('expected an error');
  };
  it('malformed YAML: file, line and the key near the error', () => {
    const e = fail([file(`${FX}/bad/malformed.yaml`)]);
    expect(e.message).toMatch(/malformed\.yaml:\d: malformed YAML at `\w+`/);
    expect(e.line).toBeGreaterThan(1);
  });
  it('malformed JSON and TOML', () => {
    expect(fail([{ path: 'a.json', text: '{\n  "max_steps": 10,\n  "x": \n}' }]).message).toMatch(/a\.json:\d: malformed JSON/);
    expect(fail([{ path: 't.toml', text: '[training]\nseq_len = = 3\n' }]).message).toMatch(/t\.toml:2: malformed TOML/);
  });
  it('an alias bomb is refused before expansion', () => {
    const t0 = Date.now();
    const e = fail([file(`${FX}/bad/alias-bomb.yaml`)]);
    expect(e.message).toMatch(/alias-bomb\.yaml: refused: .*alias/i);
    expect(Date.now() - t0).toBeLessThan(2000);
  });
  it('a huge file is not parsed', () => {
    expect(fail([{ path: 'big.yaml', text: 'a: 1\n' + '#'.repeat(1_000_001) }]).message).toMatch(/too large/);
  });
  it('missing sequence length names SEQ and how to supply it', () => {
    const e = fail([file(`${FX}/bad/no-seq.json`)]);
    expect(e).toBeInstanceOf(MissingValuesError);
    expect((e as MissingValuesError).missing.map((m) => m.field)).toEqual(['seqLen']);
    expect(e.message).toMatch(/missing SEQ \(sequence length\)/);
    expect(e.message).toMatch(/`seq-len` in \.tpu-ready\/cost\.toml/);
  });
  it('contradictory batch keys name the global batch key and line', () => {
    const e = fail([file(`${FX}/bad/contradictory.json`)]);
    expect(e.message).toMatch(/contradictory\.json:2: contradictory batch keys: `train_batch_size`.* = 100/);
    expect(e.field).toBe('train_batch_size');
    // with the device count given, DeepSpeed's 256 = 8 × 4 × 8 holds; 16 devices contradicts it
    const ok = () => estimateFromFiles({ configs: [file(`${FX}/deepspeed/ds_config.json`)], assumptionFiles: [file(`${FX}/deepspeed/.tpu-ready/cost.toml`), { path: 'c.toml', text: 'devices = 16\n' }], today: TODAY });
    expect(ok).toThrow(/`train_batch_size`.*= 256 but it should be MBS 8 .* × GA 4 .* × devices 16/);
    const hf = fail([{ path: 'args.json', text: '{\n "per_device_train_batch_size": 8,\n "per_gpu_train_batch_size": 4\n}' }]);
    expect(hf.message).toMatch(/args\.json:3: contradictory batch keys: `per_device_train_batch_size` = 8 .* `per_gpu_train_batch_size` = 4/);
  });
  it('epochs without a dataset size ask for one', () => {
    const e = fail([{ path: 'args.json', text: '{\n "per_device_train_batch_size": 8,\n "num_train_epochs": 3,\n "max_seq_length": 512,\n "num_hidden_layers": 2,\n "hidden_size": 64,\n "vocab_size": 100\n}' }]);
    expect(e.message).toMatch(/missing the dataset size for EPOCHS 3 \(args\.json:3\).*`dataset-samples`/);
    // supplied in cost.toml: steps = 3 × ⌈10,000 ÷ 64⌉ = 471 with GBS 8 × 8 chips
    const r = estimateFromFiles({ configs: [{ path: 'args.json', text: '{\n "per_device_train_batch_size": 8,\n "num_train_epochs": 3,\n "max_seq_length": 512,\n "num_hidden_layers": 2,\n "hidden_size": 64,\n "vocab_size": 100\n}' }], assumptionFiles: [{ path: 'c.toml', text: 'dataset-samples = 10000\n' }], today: TODAY });
    expect(r.config.fields.steps?.value).toBe(471);
    expect(r.tokens.value).toBe(471 * 64 * 512);
  });
  it('a non-numeric value names its key', () => {
    expect(fail([{ path: 'c.yaml', text: 'train:\n  global_batch_size: lots\n' }]).message).toMatch(/c\.yaml:2: `train\.global_batch_size` must be a number/);
  });
});

describe('priced findings', () => {
  const finding = (rule: string, severity: Finding['severity'] = 'warning'): Finding => ({ rule, severity, message: `${rule} message`, start: 0, end: 1, step: 6, effort: 3, fix: null });
  it('prices host syncs per step, recompilations and slowdowns from explicit assumptions, labelled as estimates', () => {
    const r = estimateFromFiles({ configs: [file(`${FX}/hf/training_args.json`), file(`${FX}/hf/config.json`)], assumptionFiles: [file(`${FX}/hf/.tpu-ready/cost.toml`)], today: TODAY });
    const od = r.estimates[1];
    const priced = priceFindings([finding('TPU201'), finding('TPU201', 'info'), finding('TPU404'), finding('TPU301'), finding('TPU101')], r, od);
    expect(priced.map((p) => p.rule)).toEqual(['TPU201', 'TPU201', 'TPU404', 'TPU301']);
    // TPU201: 30 ms (cost.toml override) × 2000 steps = 60 s = 0.016667 h; × 16 chips × $2.70 = $0.72
    expect(priced[0].hours).toBeCloseTo(60 / 3600, 9);
    expect(priced[0].cost!).toBeCloseTo((60 / 3600) * 16 * 2.7, 9);
    expect(priced[0].assumptions.find((x) => x.key === 'ms-per-sync')).toMatchObject({ value: 30, source: { kind: 'assumption', line: 14 } });
    // throttled (info): every 100 steps → 20 syncs × 30 ms
    expect(priced[1].hours).toBeCloseTo((20 * 0.03) / 3600, 9);
    // TPU404: 16 extra shapes × 300 s compile = 1.3333 h
    expect(priced[2].hours).toBeCloseTo((16 * 300) / 3600, 9);
    // TPU301: slowdown 1 × training hours (0.717803 compute ÷ (1 − 0.05 input stall) = 0.755582)
    expect(priced[3].hours).toBeCloseTo(0.755582, 5);
    // rules priced once per file (one loop, one pipeline) collect their lines instead of adding up
    const again = priceFindings([{ ...finding('TPU303'), path: 'train.py', line: 74 }, { ...finding('TPU303'), path: 'train.py', line: 82 }, { ...finding('TPU201'), path: 'train.py', line: 88 }, { ...finding('TPU201'), path: 'train.py', line: 90 }], r, od);
    expect(again.map((p) => `${p.rule}:${p.lines.join(',')}`)).toEqual(['TPU303:74,82', 'TPU201:88', 'TPU201:90']);
    // TPU303: 5 ms × 2000 steps = 10 s, once
    expect(again[0].hours).toBeCloseTo(10 / 3600, 9);
    for (const p of priced) {
      expect(p.label).toBe('estimate');
      expect(p.summary).toMatch(/^≈ \+.* on v6e-16 on-demand \(estimate: /);
    }
  });

  it('builds the panel view model: panel positions, most expensive first, sourced assumptions, capped', () => {
    const r = estimateFromFiles({ configs: [file(`${FX}/hf/training_args.json`), file(`${FX}/hf/config.json`)], assumptionFiles: [file(`${FX}/hf/.tpu-ready/cost.toml`)], today: TODAY });
    const od = r.estimates[1];
    const at = (rule: string, line: number, cell: number | null = null, path = 'train.py') => ({ rule, severity: 'warning' as const, message: `${rule} message`, path, uri: `file:///ws/${path}`, line, column: 5, cell });
    const vm = pricedFindingsVM([at('TPU201', 88), at('TPU303', 74), at('TPU303', 82), at('TPU404', 12, 3, 'nb.ipynb'), at('TPU101', 5)], r, od, 'hf/training_args.json');
    expect(vm).toMatchObject({ label: 'estimate', config: 'hf/training_args.json', basis: 'v6e-16 on-demand', more: 0 });
    // TPU404 (1.33 h) > TPU201 (60 s) > TPU303 (10 s, once for lines 74 and 82); TPU101 has no impact model
    expect(vm.findings.map((f) => [f.rule, f.path, f.line, f.character, f.cell, f.lines])).toEqual([
      ['TPU404', 'nb.ipynb', 11, 4, 3, [12]],
      ['TPU201', 'train.py', 87, 4, null, [88]],
      ['TPU303', 'train.py', 73, 4, null, [74, 82]],
    ]);
    expect(vm.findings[1].assumptions.find((a) => a.key === 'ms-per-sync')).toMatchObject({ value: 30, unit: 'ms', source: expect.stringMatching(/cost\.toml:14/) });
    expect(vm.findings[1].summary).toBe(priceFindings([at('TPU201', 88)], r, od)[0].summary);
    const capped = pricedFindingsVM([at('TPU201', 1), at('TPU201', 2), at('TPU201', 3)], r, od, 'x', 2);
    expect([capped.findings.length, capped.more]).toEqual([2, 1]);
  });
});

describe('outputs: JSON shape, Markdown, view model', () => {
  const r = () => estimateFromFiles({ configs: [file('examples/gpt-cuda/config.yaml')], today: TODAY });
  it('JSON has config (values with provenance), assumptions and estimates[] with the documented keys', () => {
    const j = reportJson(r());
    expect(Object.keys(j)).toEqual(expect.arrayContaining(['config', 'assumptions', 'estimates']));
    expect(j.config.fields.globalBatch).toEqual({ value: 480, source: { kind: 'config', file: 'examples/gpt-cuda/config.yaml', line: 12, key: 'train.global_batch_size' } });
    for (const e of j.estimates) {
      expect(Object.keys(e)).toEqual(expect.arrayContaining(['hardware', 'chips', 'pricing', 'tokens', 'flopsPerToken', 'tokensPerSecond', 'hours', 'chipHours', 'cost', 'low', 'high', 'breakdown']));
      expect(Object.keys(e.breakdown).sort()).toEqual(['checkpoint', 'communication', 'compile', 'compute', 'eval', 'inputStall', 'preemption']);
    }
    // no MFU assumption by default: each hardware's comes from the throughput model, with its derivation
    expect(j.assumptions.mfu).toBeUndefined();
    expect(j.estimates[0]).toMatchObject({ mfuSource: 'model', mfuFormula: expect.stringMatching(/AI 550 FLOP\/byte .* ridge 241/) });
    expect(j.estimates.filter((e: { cheapest: boolean }) => e.cheapest)).toHaveLength(1);
  });
  it('Markdown export lists config values with sources, assumptions, estimates and prices', () => {
    const md = toMarkdown(r());
    expect(md).toMatch(/^# Training cost estimate/);
    expect(md).toContain('| GBS (global batch, sequences per optimizer step) | 480 | examples/gpt-cuda/config.yaml:12 `train.global_batch_size` |');
    // rows cheapest first, the range first, the price with its region and date
    expect(md).toMatch(/\| TPU v5e \(v5e-8\) \| on-demand \| \$[\d,]+–\$[\d,]+ \(≈ \$[\d,]+\) \| .* \| \$1\.20 us-central1, 2026-11-01 \|/);
    expect(md).toMatch(/\| TPU v6e \(Trillium\) \(v6e-8\) \| spot \| .* \| cheapest \|/);
    expect(md).toMatch(/## Sensitivity/);
    expect(md).toMatch(/Anchor runs the throughput model is calibrated to:/);
  });
  it('CostVM: lens above the first key setting, fields with provenance, estimates, prefill', () => {
    const vm = buildCostVM({ report: r(), forFile: 'examples/gpt-cuda/config.yaml' });
    expect(vm.status).toBe('ok');
    expect(vm.lens?.line).toBe(5); // model.n_layer on line 6
    expect(vm.lens?.text).toMatch(/^≈ \$[\d,]+–\$[\d,]+ · [\d.]+–[\d.]+ days on v5e-8 \(us-central1, 2026-11-01\) · spot \$[\d,]+–\$[\d,]+ \(northamerica-northeast1, 2026-11-01\)$/);
    expect(vm.lens?.tooltip).toMatch(/on-demand \$1\.2\/chip-h us-central1 as of 2026-11-01 \(SkyPilot catalog/);
    expect(vm.estimates[0].display.price).toMatch(/us-central1 as of 2026-11-01/);
    expect(vm.fields.find((f) => f.key === 'globalBatch')?.source).toEqual({ text: 'examples/gpt-cuda/config.yaml:12 `train.global_batch_size`', kind: 'config', file: 'examples/gpt-cuda/config.yaml', line: 12 });
    expect(vm.estimates.filter((e) => e.primary).map((e) => e.pricing)).toEqual(['on-demand', 'spot']);
    expect(vm.estimates[0].breakdown.map((b) => b.label)).toEqual(['compute', 'communication', 'input stalls', 'evaluation', 'compile', 'checkpointing', 'preemption']);
    expect(vm.defaults).toEqual({ hardware: ['v5e', 'v6e', 'v5p', 'a100', 'h100'], chips: 8, pricing: ['on-demand', 'spot'] });
    expect(vm.markdown).toMatch(/^# Training cost estimate/);
  });
  it('CostVM for a config with missing values or errors says what to do, at the right line', () => {
    let err: unknown;
    try {
      estimateFromFiles({ configs: [file(`${FX}/bad/no-seq.json`)], today: TODAY });
    } catch (e) {
      err = e;
    }
    const vm = buildCostVM({ error: err });
    expect(vm.status).toBe('missing');
    expect(vm.lens?.text).toMatch(/missing SEQ/);
    try {
      estimateFromFiles({ configs: [file(`${FX}/bad/contradictory.json`)], today: TODAY });
    } catch (e) {
      err = e;
    }
    const vm2 = buildCostVM({ error: err });
    expect(vm2.status).toBe('error');
    expect(vm2.lens?.line).toBe(1);
    expect(vm2.error?.field).toBe('train_batch_size');
  });
  it('costVM never throws: the panel recomputes as the user types', () => {
    const ok = costVM({ configs: [file('examples/gpt-cuda/config.yaml')], overrides: { mfu: { value: 0.5, source: { kind: 'flag', flag: 'panel' } } }, today: TODAY }, 'examples/gpt-cuda/config.yaml');
    expect(ok.status).toBe('ok');
    expect(ok.assumptions.find((a) => a.key === 'mfu')).toMatchObject({ value: 0.5, source: { kind: 'flag', text: 'flag panel' } });
    expect(costVM({ configs: [file(`${FX}/bad/alias-bomb.yaml`)], today: TODAY }).status).toBe('error');
  });
  it('estimateAll rejects a non-ISO today (no clock inside the model)', () => {
    expect(() => estimateAll(loadTrainingConfig([file('examples/gpt-cuda/config.yaml')]), defaultAssumptions(), 'now')).toThrow(/ISO date/);
  });
});

describe('golden reports per framework (Markdown export snapshots)', () => {
  const hydra = ['train.yaml', 'data/owt.yaml', 'model/gpt_small.yaml', 'trainer/gpu.yaml', 'trainer/cpu.yaml'].map((p) => `${FX}/hydra/configs/${p}`);
  const cases: [string, string[], string[], string[]][] = [
    ['nanogpt', [`${FX}/nanogpt/config/train_gpt2.py`], [], []],
    ['hf', [`${FX}/hf/training_args.json`, `${FX}/hf/config.json`], [], [`${FX}/hf/.tpu-ready/cost.toml`]],
    ['lightning', [`${FX}/lightning/config.yaml`], [], []],
    ['deepspeed', [`${FX}/deepspeed/ds_config.json`], [], [`${FX}/deepspeed/.tpu-ready/cost.toml`]],
    ['litgpt', [`${FX}/litgpt/pretrain.yaml`], [], []],
    ['hydra', [hydra[0]], hydra, []],
    ['torchtitan', [`${FX}/torchtitan/llama3_8b.toml`], [], []],
  ];
  for (const [name, configs, folder, assumptions] of cases) {
    it(name, async () => {
      const r = estimateFromFiles({ configs: configs.map(file), folder: folder.map(file), assumptionFiles: assumptions.map(file), today: TODAY });
      await expect(toMarkdown(r)).toMatchFileSnapshot(`cost-fixtures/__snapshots__/${name}.md`);
    });
  }
});
