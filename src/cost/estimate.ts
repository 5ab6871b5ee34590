/**
 * The cost model (README "Cost estimate"):
 *   N ≈ 12·L·d² + V·d when the config gives no parameter count
 *   FLOPs/token = 6·N + 12·L·d·T                       (PaLM appendix B; nanoGPT's estimate_mfu)
 *   MFU         = per hardware and model from the matmuls' arithmetic intensity against the chip's ridge
 *                 point, calibrated to public runs (throughput.ts); or the user's; or measured tokens/s
 *   tokens/s    = chips × peak bf16 FLOP/s × MFU ÷ FLOPs/token   (or chips × measured tokens/s per chip)
 *                 end to end: no further discount unless the user sets an input stall
 *   wall time   = tokens ÷ tokens/s + exposed all-reduce per step + evaluation passes + compile
 *                 + checkpoint writes + on spot: expected preemptions × (restart + recompile + half an interval)
 *   cost        = wall time × chips × price per chip-hour ÷ utilization
 * The job is the config's: the global batch and the tokens stay fixed whatever hardware and chip count an
 * estimate uses; the per-chip batch is re-derived. Pure: "today" is a parameter, never read from the clock.
 */
import type { Assumptions } from './assumptions';
import { fmtNum, resolveConfig, type RawConfig, type ResolvedConfig } from './config';
import { activationBytes, type MemoryParts } from './memory';
import {
  HARDWARE, STALE_AFTER_DAYS, ageDays, parseHardware, priceOf, priceRange, sliceName, staleness,
  type Hardware, type HardwareId, type Price, type Pricing,
} from './prices';
import { communication, estimateMfu, type Comm, type MfuEstimate } from './throughput';
import { CostConfigError, type Missing, type Sourced, type TrainingConfig } from './types';

export interface Breakdown {
  /** Hours at the expected MFU (or measured tokens/s). */
  compute: number;
  /** Exposed gradient all-reduce: what the backward pass does not hide. */
  communication: number;
  /** Extra hours waiting for input (only when the user sets input-stall). */
  inputStall: number;
  /** Evaluation passes the config runs. */
  eval: number;
  compile: number;
  checkpoint: number;
  preemption: number;
}

export interface Band {
  mfu: number | null;
  tokensPerSecond: number;
  hours: number;
  chipHours: number;
  cost: number | null;
}

export interface PriceUsed {
  perChipHour: number;
  currency: string;
  source: string;
  region: string | null;
  asOf: string | null;
  overridden: boolean;
  stale: string | null;
  unverified: boolean;
  /** Lowest and highest catalog price of this hardware and pricing across regions, and the cost at each. */
  range: { min: { perChipHour: number; region: string; cost: number | null }; max: { perChipHour: number; region: string; cost: number | null } } | null;
}

export interface Estimate {
  hardware: HardwareId;
  hardwareName: string;
  slice: string;
  chips: number;
  hosts: number;
  pricing: Pricing;
  tokens: number;
  params: number;
  flopsPerToken: number;
  mfu: number | null;
  /** Where the MFU came from: the per-hardware model, the user's value, or measured tokens/s. */
  mfuSource: 'model' | 'assumption' | 'measured';
  mfuFormula: string;
  /** Measured tokens/s per chip replaced the MFU model. */
  measured: boolean;
  /** The same job on this slice: sequences per chip per step, re-derived micro-batch and accumulation. */
  perChip: { sequences: number | null; microBatch: number; gradAccum: number | null; tokensPerMicroBatch: number; note: string | null };
  /** Tokens/s of the job at the expected MFU, end to end. */
  tokensPerSecond: number;
  hours: number;
  days: number;
  chipHours: number;
  /** Null when the hardware has no price for this pricing (compute-only estimate). */
  cost: number | null;
  currency: string;
  price: PriceUsed | null;
  committed: { term: string; perChipHour: number; cost: number; source: string; asOf: string }[];
  /** Best case (MFU high): fewest hours, lowest cost. */
  low: Band;
  /** Worst case (MFU low): most hours, highest cost. */
  high: Band;
  breakdown: Breakdown;
  communication: { exposedSecondsPerStep: number; formula: string } | null;
  eval: { passes: number; tokensEach: number; note: string } | null;
  distinctShapes: number;
  checkpoint: { writes: number; intervalMinutes: number; intervalSource: string; writeSeconds: number; writeSource: string; suggestedIntervalMinutes: number | null };
  preemption: { expected: number; hoursEach: number; meanHoursBetween: number; perDay: number; perDaySource: string } | null;
  /** Spot only: the same run at other preemption rates (the rate is the least known input). */
  preemptionSensitivity: { perDay: number; hours: number | null; cost: number | null }[];
  memory: {
    bytes: number; hbmPerChip: number; perChip: MemoryParts; fits: boolean; fitsOnOneChip: boolean;
    microBatchFits: boolean; smallestSlice: { chips: number; name: string } | null;
  };
  warnings: string[];
}

export interface CostReport {
  today: string;
  config: TrainingConfig;
  chips: Sourced<number>;
  /** The config's own device count: its global batch is held fixed on every row. */
  jobDevices: Sourced<number>;
  tokens: Sourced<number>;
  params: Sourced<number>;
  flopsPerToken: number;
  flopsFormula: string;
  distinctShapes: Sourced<number>;
  assumptions: Assumptions;
  estimates: Estimate[];
  warnings: string[];
}

/** The config lacks values the estimate needs: each is named with how to supply it. */
export class MissingValuesError extends CostConfigError {
  constructor(readonly missing: Missing[], readonly files: string[]) {
    super(`${files.join(', ') || 'config'}: cannot estimate: ${missing.map((m) => `${m.message} (${m.howToSupply})`).join('; ')}`, files[0], undefined, missing[0]?.field);
    this.name = 'MissingValuesError';
  }
}

export function flopsPerToken(N: number, L: number | undefined, d: number | undefined, T: number | undefined): number {
  return 6 * N + (L && d && T ? 12 * L * d * T : 0);
}

/** Preemptions per day assumed for a slice of `hosts` hosts: any host's preemption stops the slice. */
export function defaultPreemptionsPerDay(hosts: number): number {
  return Math.sqrt(Math.max(1, hosts));
}

/** Young/Daly: the checkpoint interval that minimises lost work, √(2 × write time × mean time between failures). */
export function youngDalyMinutes(writeSeconds: number, mtbfHours: number): number {
  return Math.sqrt(2 * writeSeconds * mtbfHours * 3600) / 60;
}

interface Ctx {
  a: Assumptions;
  tokens: number;
  F: number;
  N: number;
  L?: number;
  d: number;
  dAssumed: boolean;
  T: number | undefined;
  V?: number;
  heads: number;
  ffn: number;
  gbs?: number;
  mbs?: number;
  steps?: number;
  shapes: number;
  gpuCompile: boolean;
  evalPasses: number;
  evalTokensEach: number;
  evalNote: string | null;
  /** Evaluation runs on every chip (true) or on one device while the others wait (nanoGPT). */
  evalOnAll: boolean;
  today: string;
}

interface Rate {
  /** Tokens/s of the job. */
  raw: number;
  mfu: number | null;
}

interface RunOut {
  hours: number;
  chipHours: number;
  cost: number | null;
  writes: number;
  intervalMinutes: number;
  preemption: Estimate['preemption'];
  breakdown: Breakdown;
  comm: Comm | null;
}

function run(ctx: Ctx, hw: Hardware, chips: number, pricing: Pricing, rate: Rate, price: number | null, ck: { writeSeconds: number; perDay: number | null; perDaySource: string; intervalMinutes?: number }, measured: boolean): RunOut {
  const { a, tokens, F } = ctx;
  const compute = tokens / rate.raw / 3600;
  let comm: Comm | null = null;
  let communicationH = 0;
  if (!measured && ctx.gbs && ctx.T && ctx.steps) {
    const stepSeconds = (ctx.gbs * ctx.T) / rate.raw;
    comm = communication({ hw, chips, gradBytes: ctx.N * a.gradBytesPerParam.value, stepSeconds });
    communicationH = (ctx.steps * comm.exposedSeconds) / 3600;
  }
  const s = a.inputStall.value;
  const train = (compute + communicationH) / (1 - s);
  const stall = train - compute - communicationH;
  // evaluation: forward only (a third of a training step's FLOPs per token) on the chips that run it
  const evalRate = (ctx.evalOnAll ? rate.raw : rate.raw / chips) * 3;
  const evalH = (ctx.evalPasses * ctx.evalTokensEach) / evalRate / 3600;
  const compileOnce = (hw.kind === 'tpu' ? a.compileSeconds.value * ctx.shapes : ctx.gpuCompile ? a.gpuCompileSeconds.value : 0) / 3600;
  const spot = pricing === 'spot' && ck.perDay !== null && ck.perDay > 0;
  const intervalMinutes = ck.intervalMinutes ?? (spot ? youngDalyMinutes(ck.writeSeconds, 24 / ck.perDay!) : 60);
  const intervalH = intervalMinutes / 60;
  const work = train + evalH;
  const writes = Math.floor(work / intervalH);
  const checkpoint = (writes * ck.writeSeconds) / 3600;
  const base = work + compileOnce + checkpoint;
  let hours = base;
  let preemption: Estimate['preemption'] = null;
  if (spot) {
    const perHour = ck.perDay! / 24;
    const restart = (a.restartSeconds?.value ?? hw.restartSeconds) / 3600;
    const each = restart + compileOnce + intervalH / 2;
    if (perHour * each >= 1) {
      hours = Infinity;
    } else {
      // expected preemptions scale with the (longer) wall time itself: T = T0 + rate·T·each
      hours = base / (1 - perHour * each);
    }
    preemption = { expected: perHour * hours, hoursEach: each, meanHoursBetween: 24 / ck.perDay!, perDay: ck.perDay!, perDaySource: ck.perDaySource };
  }
  const chipHours = hours * chips;
  const cost = price === null ? null : (chipHours * price) / a.utilization.value;
  return { hours, chipHours, cost, writes, intervalMinutes, preemption, comm, breakdown: { compute, communication: communicationH, inputStall: stall, eval: evalH, compile: compileOnce, checkpoint, preemption: hours - base } };
}

/** Resolves the config and estimates every hardware × pricing of the assumptions. */
export function estimateAll(rawConfig: RawConfig, a: Assumptions, today: string): CostReport {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(today)) throw new CostConfigError(`today must be an ISO date (YYYY-MM-DD), not "${today}"`);
  const resolved: ResolvedConfig = resolveConfig(rawConfig, a);
  const { config } = resolved;
  if (config.missing.length || !resolved.tokens || !config.fields.params) throw new MissingValuesError(config.missing, config.files);
  const f = config.fields;
  const warnings: string[] = [...config.notes];
  const N = f.params!.value;
  const L = f.layers?.value;
  const T = f.seqLen?.value;
  const F = flopsPerToken(N, L, f.dModel?.value, T);
  const flopsFormula = L && f.dModel && T ? `6·N + 12·L·d·T = 6 × ${fmtNum(N)} + 12 × ${L} × ${f.dModel.value} × ${T}` : `6·N = 6 × ${fmtNum(N)}`;
  // the width sets the matmuls' arithmetic intensity; without one, a typical aspect ratio d/L ≈ 128 gives N ≈ 12·d³/128
  const dAssumed = !f.dModel;
  const d = f.dModel?.value ?? Math.round(Math.cbrt((128 * N) / 12));
  if (dAssumed && !a.mfu) warnings.push(`no hidden size in the config: d_model ≈ (128·N ÷ 12)^⅓ = ${d} assumed for the throughput model (set \`d-model\` in .tpu-ready/cost.toml)`);

  // distinct shapes: the assumption, plus what the data settings imply unless the user set it
  let shapes = a.distinctShapes;
  if (shapes.source.kind === 'default' && resolved.shapeHints.length) {
    const extra = resolved.shapeHints.reduce((s, h) => s + h.extraShapes, 0);
    shapes = { value: shapes.value + extra, source: { kind: 'derived', formula: `1 + ${resolved.shapeHints.map((h) => `${h.extraShapes} (${h.file}:${h.line} \`${h.key}\`: ${h.why})`).join(' + ')}` } };
  }

  // hardware: the accelerator the config names comes first when the user chose none
  let hardware = a.hardware.value;
  let chips = resolved.chips;
  const accel = f.accelerator && parseHardware(String(f.accelerator.value));
  const sliceChips: Partial<Record<HardwareId, Sourced<number>>> = { ...a.hardwareChips };
  if (accel && a.hardware.source.kind === 'default') {
    hardware = [accel.id, ...hardware.filter((h) => h !== accel.id)];
    if (accel.chips && !a.chips && !f.devices) chips = { value: accel.chips, source: { kind: 'derived', formula: `accelerator type ${f.accelerator!.value}` } };
  }

  const gbs = f.globalBatch?.value;
  const steps = gbs && T ? resolved.tokens.value / (gbs * T) : f.steps?.value;
  // evaluation passes the config runs (nanoGPT: every eval_interval steps and at step 0, eval_iters batches of
  // the train and val splits, on the master process only: train.py `estimate_loss`)
  let evalPasses = 0;
  let evalTokensEach = 0;
  let evalNote: string | null = null;
  let evalOnAll = false;
  if (config.frameworks.includes('nanogpt') && f.evalInterval && f.evalIters && f.microBatch && T && steps) {
    evalPasses = Math.floor(steps / f.evalInterval.value) + 1;
    evalTokensEach = 2 * f.evalIters.value * f.microBatch.value * T;
    evalNote = `${evalPasses} evaluations (every ${f.evalInterval.value} steps and at step 0) × 2 splits × ${f.evalIters.value} batches × ${f.microBatch.value} × ${T} tokens, forward only, on one device while the others wait (nanoGPT train.py estimate_loss)`;
  } else if (f.evalInterval && steps && (f.evalTokens || (config.frameworks.includes('lightning') && f.evalIters && f.microBatch && T))) {
    // evaluation on every chip of the job: `eval-tokens` per pass, or Lightning's limit_val_batches × batch × SEQ × devices
    evalPasses = Math.floor(steps / f.evalInterval.value);
    const dev = resolved.jobDevices.value;
    evalTokensEach = f.evalTokens ? f.evalTokens.value : f.evalIters!.value * f.microBatch!.value * T! * dev;
    evalNote = `${evalPasses} evaluations (every ${f.evalInterval.value} steps) × ${fmtNum(evalTokensEach)} tokens (${f.evalTokens ? '`eval-tokens`' : `limit_val_batches ${f.evalIters!.value} × ${f.microBatch!.value} × ${T} × ${dev} devices`}), forward only, on every chip`;
    evalOnAll = true;
  } else if (f.evalInterval) {
    warnings.push(`${f.evalInterval.source.kind === 'config' ? `${f.evalInterval.source.file}:${f.evalInterval.source.line}: ` : ''}evaluation every ${f.evalInterval.value} steps: the eval set size is unknown, so its time is left out (set \`eval-tokens\` per pass in .tpu-ready/cost.toml)`);
  }
  const gpuCompile = !!f.compile && /^(true|1|yes|default|max-autotune|reduce-overhead)$/i.test(String(f.compile.value));

  const ctx: Ctx = {
    a, tokens: resolved.tokens.value, F, N, L, d, dAssumed, T, V: f.vocab?.value, heads: f.heads?.value ?? Math.max(1, Math.round(d / 64)), ffn: f.ffn?.value ?? 4 * d,
    gbs, mbs: f.microBatch?.value, steps, shapes: shapes.value, gpuCompile, evalPasses, evalTokensEach, evalNote, evalOnAll, today,
  };
  const job = resolved.jobDevices;
  const estimates: Estimate[] = [];
  const staleSpot = new Set<string>();
  for (const hwId of hardware) {
    const hw = HARDWARE[hwId];
    const c = sliceChips[hwId]?.value ?? chips.value;
    const w: string[] = [];
    if (!hw.slices.includes(c)) w.push(`${hw.name} has no ${c}-chip slice (sizes: ${hw.slices.slice(0, 8).join(', ')}…): priced per chip as given`);
    const per = perChipBatch(ctx, c);
    if (per.note) w.push(per.note);
    const measured = a.tokensPerSecondPerChip[hwId];
    let m: MfuEstimate | null = null;
    let mid: Rate, best: Rate, worst: Rate;
    let mfuSource: Estimate['mfuSource'];
    let mfuFormula: string;
    if (measured) {
      const raw = measured.value * c;
      mid = best = worst = { raw, mfu: null };
      mfuSource = 'measured';
      mfuFormula = `measured ${fmtNum(measured.value)} tokens/s per chip × ${c} chips = ${fmtNum(raw)} tokens/s, end to end`;
    } else if (a.mfu) {
      const r = (x: number) => ({ raw: (c * hw.peakBf16 * x) / F, mfu: x });
      mid = r(a.mfu.value);
      best = r(a.mfuHigh!.value);
      worst = r(a.mfuLow!.value);
      mfuSource = 'assumption';
      mfuFormula = `the same MFU for every hardware (${a.mfu.value}; ${a.mfuLow!.value}–${a.mfuHigh!.value})`;
    } else {
      m = estimateMfu(hwId, d, ctx.ffn, per.tokensPerMicroBatch);
      const r = (x: number) => ({ raw: (c * hw.peakBf16 * x) / F, mfu: x });
      mid = r(m.mfu);
      best = r(m.high);
      worst = r(m.low);
      mfuSource = 'model';
      mfuFormula = m.formula;
    }

    // memory per chip: states sharded across the chips (FSDP/ZeRO-3), activations of one micro-batch
    const statesBytes = N * a.bytesPerParam.value;
    const act = (mb: number) => activationBytes({ layers: L ?? Math.max(1, Math.round(d / 128)), dModel: d, heads: ctx.heads, seqLen: T ?? 2048, vocab: ctx.V ?? 0, microBatch: mb, flash: a.flashAttention.value, checkpointing: a.activationCheckpointing.value });
    const parts = act(per.microBatch);
    const perChipParts: MemoryParts = { ...parts, states: statesBytes / c, total: statesBytes / c + parts.activations + parts.logits };
    const microBatchFits = parts.activations + parts.logits <= hw.hbmBytes;
    const fits = perChipParts.total <= hw.hbmBytes;
    const fitsWith = (s: number, mb: number) => {
      const p = act(mb);
      return statesBytes / s + p.activations + p.logits <= hw.hbmBytes;
    };
    // the micro-batch each slice would run the same job with (the largest divisor of its share up to the config's)
    const mbOn = (s: number): number | null => {
      if (!gbs) return per.microBatch;
      const share = gbs / s;
      if (!Number.isInteger(share) || share < 1) return null;
      let mb = Math.max(1, Math.floor(Math.min(ctx.mbs ?? share, share)));
      while (mb > 1 && share % mb !== 0) mb--;
      return mb;
    };
    const smallestSlice = hw.slices.find((s) => {
      const mb = mbOn(s);
      return mb !== null && fitsWith(s, mb);
    });
    const smallest = smallestSlice;
    // the largest micro-batch that fits on this slice, keeping the job
    let fitMb: number | null = null;
    if (!fits && per.sequences && Number.isInteger(per.sequences)) {
      for (let mb = Math.floor(per.microBatch) - 1; mb >= 1; mb--) if (per.sequences % mb === 0 && fitsWith(c, mb)) { fitMb = mb; break; }
    }
    const gbS = (x: number) => `${Number((x / 1e9).toPrecision(2)).toLocaleString('en-US')} GB`;
    const logitsS = ctx.V ? ` + logits ${gbS(parts.logits)}` : ' (logits not counted: no vocabulary)';
    const alt = [
      fitMb ? `micro-batch ${fitMb} × GA ${per.sequences! / fitMb} fits ${sliceName(hw, c)}` : '',
      smallest && smallest !== c ? `the smallest slice that fits is ${sliceName(hw, smallest)}${gbs && mbOn(smallest) !== ctx.mbs ? ` (micro-batch ${mbOn(smallest)})` : ''}` : '',
      a.flashAttention.value ? '' : 'flash attention',
      a.activationCheckpointing.value ? '' : 'activation checkpointing',
    ].filter(Boolean);
    if (!microBatchFits) {
      w.push(`a micro-batch of ${fmtNum(per.microBatch)} × ${fmtNum(T ?? 2048)} tokens does not fit one ${hw.hbmLabel} chip: activations ${gbS(parts.activations)}${logitsS}${a.flashAttention.value ? '' : ' (flash attention off)'}${a.activationCheckpointing.value ? '' : ' (no activation checkpointing)'}; options: ${alt.join('; ') || 'none in the catalog'}`);
    } else if (!fits) {
      w.push(`${gbS(perChipParts.total)} per chip (states ${gbS(perChipParts.states)} + activations ${gbS(parts.activations)}${logitsS}) do not fit ${hw.hbmLabel}: ${smallest ? `the smallest slice that fits is ${sliceName(hw, smallest)}` : 'no slice fits'}${fitMb ? `; or micro-batch ${fitMb} × GA ${per.sequences! / fitMb} on ${sliceName(hw, c)}` : ''}`);
    }

    for (const pricing of a.pricing.value) {
      const ww = [...w];
      const region = a.region?.value;
      const catalog = priceOf(hw, pricing, region);
      const override = a.prices[hwId]?.[pricing];
      let price: PriceUsed | null = null;
      const range = priceRange(hw, pricing);
      if (override) {
        price = { perChipHour: override.value, currency: 'USD', source: override.source.kind === 'flag' ? `flag ${override.source.flag}` : override.source.kind === 'assumption' ? `${override.source.file}:${override.source.line}` : 'override', region: null, asOf: null, overridden: true, stale: null, unverified: false, range: null };
      } else if (catalog) {
        const stale = staleness(catalog, today, pricing);
        if (stale && pricing === 'spot') staleSpot.add(catalog.asOf);
        else if (stale) ww.push(`${hw.name} ${pricing}: ${stale}`);
        if (catalog.unverified) ww.push(`${hw.name} ${pricing}: catalog price unverified (${hw.notes.join('; ')})`);
        price = { perChipHour: catalog.usdPerChipHour, currency: 'USD', source: catalog.source, region: catalog.region, asOf: catalog.asOf, overridden: false, stale, unverified: !!catalog.unverified, range: null };
      } else if (region && range) {
        ww.push(`${hw.name} has no ${pricing} price in ${region} in the catalog (it has ${[...new Set((pricing === 'spot' ? hw.spot : hw.onDemand).map((p) => p.region))].join(', ')}): compute-only estimate`);
      } else {
        ww.push(`${hw.name} has no public ${pricing} price: compute-only estimate (set prices.${hwId}.${pricing} in .tpu-ready/cost.toml)`);
      }
      const fx = a.exchangeRate.value;
      const rate = price ? price.perChipHour * fx : null;
      const spot = pricing === 'spot';
      const hostsOf = Math.max(1, Math.ceil(c / hw.chipsPerHost));
      const perDay = spot ? (a.preemptionsPerDay?.value ?? defaultPreemptionsPerDay(hostsOf)) : null;
      const perDaySource = a.preemptionsPerDay ? 'assumption' : `default: 1 per day for one host × √${hostsOf} hosts (no public per-slice rate)`;
      const ckptBytes = N * a.checkpointBytesPerParam.value;
      const writeSeconds = a.checkpointWriteSeconds?.value ?? ckptBytes / (a.storageGBps.value * 1e9);
      const writeSource = a.checkpointWriteSeconds ? 'assumption' : `${(ckptBytes / 1e9).toPrecision(3)} GB (${a.checkpointBytesPerParam.value} B/param) ÷ ${a.storageGBps.value} GB/s`;
      const ck = { writeSeconds, perDay, perDaySource, intervalMinutes: a.checkpointIntervalMinutes?.value };
      const rMid = run(ctx, hw, c, pricing, mid, rate, ck, !!measured);
      if (!Number.isFinite(rMid.hours)) {
        throw new CostConfigError(`preemptions-per-day ${perDay}: each preemption of ${sliceName(hw, c)} loses ${fmtNum(rMid.preemption!.hoursEach)} h, so a spot run never finishes; checkpoint more often or lower the rate`, undefined, undefined, 'preemptions-per-day');
      }
      const rBest = run(ctx, hw, c, pricing, best, rate, ck, !!measured);
      const rWorst = run(ctx, hw, c, pricing, worst, rate, ck, !!measured);
      if (price && !override && range) {
        const at = (p: Price) => (rMid.chipHours * p.usdPerChipHour * fx) / a.utilization.value;
        price.range = { min: { perChipHour: range.min.usdPerChipHour, region: range.min.region, cost: at(range.min) }, max: { perChipHour: range.max.usdPerChipHour, region: range.max.region, cost: at(range.max) } };
      }
      if (rMid.comm?.warning) ww.push(rMid.comm.warning);
      const sens = spot && !a.preemptionsPerDay ? [1, 4, 12].map((pd) => {
        const r = run(ctx, hw, c, pricing, mid, rate, { ...ck, perDay: pd }, !!measured);
        return { perDay: pd, hours: Number.isFinite(r.hours) ? r.hours : null, cost: Number.isFinite(r.hours) ? r.cost : null };
      }) : [];
      const band = (r: RunOut, x: Rate): Band => ({ mfu: x.mfu, tokensPerSecond: x.raw, hours: r.hours, chipHours: r.chipHours, cost: r.cost });
      estimates.push({
        hardware: hwId,
        hardwareName: hw.name,
        slice: sliceName(hw, c),
        chips: c,
        hosts: hostsOf,
        pricing,
        tokens: ctx.tokens,
        params: N,
        flopsPerToken: F,
        mfu: mid.mfu,
        mfuSource,
        mfuFormula,
        measured: !!measured,
        perChip: per,
        tokensPerSecond: mid.raw,
        hours: rMid.hours,
        days: rMid.hours / 24,
        chipHours: rMid.chipHours,
        cost: rMid.cost,
        currency: a.currency.value,
        price,
        committed: pricing === 'on-demand' && !override ? hw.committed.map((k) => ({ term: k.term, perChipHour: k.usdPerChipHour, cost: (rMid.chipHours * k.usdPerChipHour * fx) / a.utilization.value, source: k.source, asOf: k.asOf })) : [],
        low: band(rBest, best),
        high: band(rWorst, worst),
        breakdown: rMid.breakdown,
        communication: rMid.comm ? { exposedSecondsPerStep: rMid.comm.exposedSeconds, formula: rMid.comm.formula } : null,
        eval: evalPasses ? { passes: evalPasses, tokensEach: evalTokensEach, note: evalNote! } : null,
        distinctShapes: hw.kind === 'tpu' ? shapes.value : 0,
        checkpoint: {
          writes: rMid.writes,
          intervalMinutes: rMid.intervalMinutes,
          intervalSource: a.checkpointIntervalMinutes ? 'assumption' : spot ? 'Young/Daly √(2 × write × MTBP)' : 'default: 60 min on demand',
          writeSeconds,
          writeSource,
          suggestedIntervalMinutes: rMid.preemption ? youngDalyMinutes(writeSeconds, rMid.preemption.meanHoursBetween) : null,
        },
        preemption: rMid.preemption,
        preemptionSensitivity: sens,
        memory: { bytes: statesBytes, hbmPerChip: hw.hbmBytes, perChip: perChipParts, fits, fitsOnOneChip: statesBytes + parts.activations + parts.logits <= hw.hbmBytes, microBatchFits, smallestSlice: smallest ? { chips: smallest, name: sliceName(hw, smallest) } : null },
        warnings: ww,
      });
    }
  }
  for (const asOf of staleSpot) warnings.push(`spot prices as of ${asOf} are ${ageDays(asOf, today)} days old (spot prices can change daily; re-check after ${STALE_AFTER_DAYS.spot} days): override them in .tpu-ready/cost.toml`);
  const sameJob = estimates.some((e) => e.chips !== job.value);
  if (sameJob && gbs) {
    warnings.unshift(`the same job on every row: global batch ${fmtNum(gbs)} sequences and ${fmtNum(resolved.tokens.value)} tokens as the config says (${fmtNum(job.value)} devices); rows with other chip counts re-derive the per-chip batch`);
  }
  return { today, config, chips, jobDevices: job, tokens: resolved.tokens, params: f.params!, flopsPerToken: F, flopsFormula, distinctShapes: shapes, assumptions: a, estimates, warnings };
}

/** The config's job on `chips` chips: sequences per chip per step, and the micro-batch × accumulation that gives them. */
function perChipBatch(ctx: Ctx, chips: number): Estimate['perChip'] {
  const T = ctx.T ?? 2048;
  if (!ctx.gbs) {
    const mb = ctx.mbs ?? 4;
    return { sequences: null, microBatch: mb, gradAccum: null, tokensPerMicroBatch: mb * T, note: ctx.mbs ? null : `micro-batch unknown: ${mb} × ${T} tokens per chip assumed for the throughput and memory models` };
  }
  const seq = ctx.gbs / chips;
  const mbs = ctx.mbs;
  if (mbs && seq >= mbs && Number.isInteger(seq / mbs)) return { sequences: seq, microBatch: mbs, gradAccum: seq / mbs, tokensPerMicroBatch: mbs * T, note: null };
  if (Number.isInteger(seq) && seq >= 1) {
    // the largest micro-batch up to the config's that divides the chip's share
    let mb = Math.max(1, Math.floor(mbs ? Math.min(mbs, seq) : seq));
    while (mb > 1 && seq % mb !== 0) mb--;
    return { sequences: seq, microBatch: mb, gradAccum: seq / mb, tokensPerMicroBatch: mb * T, note: mbs && mb !== mbs ? `${chips} chips: ${fmtNum(seq)} sequences per chip per step, so micro-batch ${mb} × GA ${seq / mb} (the config's micro-batch ${mbs} would change the global batch)` : null };
  }
  return { sequences: seq, microBatch: Math.max(seq, 1e-9), gradAccum: null, tokensPerMicroBatch: seq * T, note: `${chips} chips do not divide the global batch of ${fmtNum(ctx.gbs)} sequences (${fmtNum(seq)} per chip): the job would need another global batch` };
}
