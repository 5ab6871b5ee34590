/**
 * The cost model (README "Cost estimate"):
 *   N ≈ 12·L·d² + V·d when the config gives no parameter count
 *   FLOPs/token = 6·N + 12·L·d·T                       (PaLM appendix B; nanoGPT's estimate_mfu)
 *   tokens/s    = chips × peak bf16 FLOP/s × MFU ÷ FLOPs/token   (or chips × measured tokens/s per chip)
 *   effective   = tokens/s × all-reduce efficiency (chips > 1) × (1 − input-stall fraction)
 *   wall time   = tokens ÷ effective + compile × distinct shapes (TPU) + checkpoint writes
 *                 + on spot: expected preemptions × (restart + recompile + half a checkpoint interval)
 *   cost        = wall time × chips × price per chip-hour ÷ utilization
 * Pure: "today" is a parameter (price staleness), never read from the clock.
 */
import type { Assumptions } from './assumptions';
import { fmtNum, resolveConfig, type RawConfig, type ResolvedConfig } from './config';
import { HARDWARE, parseHardware, priceOf, sliceName, staleness, type HardwareId, type Pricing } from './prices';
import { CostConfigError, type Missing, type Sourced, type TrainingConfig } from './types';

export interface Breakdown {
  /** Hours at the modelled MFU with no stalls. */
  compute: number;
  /** Extra hours from gradient all-reduce inefficiency. */
  communication: number;
  /** Extra hours waiting for input. */
  inputStall: number;
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
}

export interface Estimate {
  hardware: HardwareId;
  hardwareName: string;
  slice: string;
  chips: number;
  pricing: Pricing;
  tokens: number;
  params: number;
  flopsPerToken: number;
  mfu: number | null;
  /** Measured tokens/s per chip replaced the MFU model. */
  measured: boolean;
  /** Effective tokens/s of the job (after all-reduce and input stalls), at the expected MFU. */
  tokensPerSecond: number;
  hours: number;
  days: number;
  chipHours: number;
  /** Null when the hardware has no price for this pricing (compute-only estimate). */
  cost: number | null;
  currency: string;
  price: PriceUsed | null;
  /** Best case (MFU high): fewest hours, lowest cost. */
  low: Band;
  /** Worst case (MFU low): most hours, highest cost. */
  high: Band;
  breakdown: Breakdown;
  distinctShapes: number;
  checkpoint: { writes: number; intervalMinutes: number; suggestedIntervalMinutes: number | null };
  preemption: { expected: number; hoursEach: number; meanHoursBetween: number } | null;
  memory: { bytes: number; hbmPerChip: number; fits: boolean; fitsOnOneChip: boolean; smallestSlice: { chips: number; name: string } | null };
  warnings: string[];
}

export interface CostReport {
  today: string;
  config: TrainingConfig;
  chips: Sourced<number>;
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

interface Ctx {
  a: Assumptions;
  tokens: number;
  F: number;
  params: number;
  shapes: number;
  today: string;
}

function run(ctx: Ctx, hwId: HardwareId, chips: number, pricing: Pricing, mfu: number | null, price: number | null, rawOverride?: number) {
  const { a, tokens, F } = ctx;
  const hw = HARDWARE[hwId];
  const raw = rawOverride ?? (chips * hw.peakBf16 * mfu!) / F;
  const ar = chips > 1 ? a.allReduceEfficiency.value : 1;
  const s = a.inputStall.value;
  const compute = tokens / raw / 3600;
  const withComm = tokens / (raw * ar) / 3600;
  const train = tokens / (raw * ar * (1 - s)) / 3600;
  const compile = hw.kind === 'tpu' ? (a.compileSeconds.value * ctx.shapes) / 3600 : 0;
  const intervalH = a.checkpointIntervalMinutes.value / 60;
  const writes = Math.floor(train / intervalH);
  const checkpoint = (writes * a.checkpointWriteSeconds.value) / 3600;
  const base = train + compile + checkpoint;
  let hours = base;
  let preemption: Estimate['preemption'] = null;
  if (pricing === 'spot' && a.preemptionsPerDay.value > 0) {
    const rate = a.preemptionsPerDay.value / 24;
    const each = a.restartSeconds.value / 3600 + compile + intervalH / 2;
    if (rate * each >= 1) {
      throw new CostConfigError(`preemptions-per-day ${a.preemptionsPerDay.value}: each preemption loses ${fmtNum(each)} h, so a spot run never finishes; checkpoint more often or lower the rate`, undefined, undefined, 'preemptions-per-day');
    }
    // expected preemptions scale with the (longer) wall time itself: T = T0 + rate·T·each
    hours = base / (1 - rate * each);
    preemption = { expected: rate * hours, hoursEach: each, meanHoursBetween: 1 / rate };
  }
  const effective = raw * ar * (1 - s);
  const chipHours = hours * chips;
  const cost = price === null ? null : (chipHours * price) / a.utilization.value;
  return { raw, effective, hours, chipHours, cost, writes, preemption, breakdown: { compute, communication: withComm - compute, inputStall: train - withComm, compile, checkpoint, preemption: hours - base } };
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
  const d = f.dModel?.value;
  const T = f.seqLen?.value;
  const F = flopsPerToken(N, L, d, T);
  const flopsFormula = L && d && T ? `6·N + 12·L·d·T = 6 × ${fmtNum(N)} + 12 × ${L} × ${d} × ${T}` : `6·N = 6 × ${fmtNum(N)}`;

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
  if (accel && a.hardware.source.kind === 'default') {
    hardware = [accel.id, ...hardware.filter((h) => h !== accel.id)];
    if (accel.chips && !a.chips && !f.devices) chips = { value: accel.chips, source: { kind: 'derived', formula: `accelerator type ${f.accelerator!.value}` } };
  }

  const ctx: Ctx = { a, tokens: resolved.tokens.value, F, params: N, shapes: shapes.value, today };
  const estimates: Estimate[] = [];
  for (const hwId of hardware) {
    const hw = HARDWARE[hwId];
    for (const pricing of a.pricing.value) {
      const w: string[] = [];
      const catalog = priceOf(hw, pricing);
      const override = a.prices[hwId]?.[pricing];
      let price: PriceUsed | null = null;
      if (override) {
        price = { perChipHour: override.value, currency: 'USD', source: override.source.kind === 'flag' ? `flag ${override.source.flag}` : override.source.kind === 'assumption' ? `${override.source.file}:${override.source.line}` : 'override', region: null, asOf: null, overridden: true, stale: null, unverified: false };
      } else if (catalog) {
        const stale = staleness(catalog, today);
        if (stale) w.push(`${hw.name} ${pricing}: ${stale}`);
        if (catalog.unverified) w.push(`${hw.name} ${pricing}: catalog price unverified (${hw.notes.join('; ')})`);
        price = { perChipHour: catalog.usdPerChipHour, currency: 'USD', source: catalog.source, region: catalog.region, asOf: catalog.asOf, overridden: false, stale, unverified: !!catalog.unverified };
      } else {
        w.push(`${hw.name} has no public ${pricing} price: compute-only estimate (set prices.${hwId}.${pricing} in .tpu-ready/cost.toml)`);
      }
      const rate = price ? price.perChipHour * a.exchangeRate.value : null;
      const measured = a.tokensPerSecondPerChip[hwId];
      const c = chips.value;
      const mid = run(ctx, hwId, c, pricing, measured ? null : a.mfu.value, rate, measured ? measured.value * c : undefined);
      const best = run(ctx, hwId, c, pricing, measured ? null : a.mfuHigh.value, rate, measured ? measured.value * c : undefined);
      const worst = run(ctx, hwId, c, pricing, measured ? null : a.mfuLow.value, rate, measured ? measured.value * c : undefined);
      if (!hw.slices.includes(c)) w.push(`${hw.name} has no ${c}-chip slice (sizes: ${hw.slices.slice(0, 8).join(', ')}…): priced per chip as given`);
      const bytes = N * a.bytesPerParam.value;
      const smallest = hw.slices.find((s) => s * hw.hbmBytes >= bytes);
      const fits = bytes <= hw.hbmBytes * c;
      if (!fits) w.push(`${fmtNum(Math.round(bytes / 1e9))} GB of weights, gradients and optimizer state do not fit in ${c} × ${hw.hbmLabel}: ${smallest ? `the smallest slice that fits is ${sliceName(hw, smallest)}` : 'no slice fits'}`);
      const band = (r: ReturnType<typeof run>, mfu: number | null): Band => ({ mfu, tokensPerSecond: r.effective, hours: r.hours, chipHours: r.chipHours, cost: r.cost });
      estimates.push({
        hardware: hwId,
        hardwareName: hw.name,
        slice: sliceName(hw, c),
        chips: c,
        pricing,
        tokens: ctx.tokens,
        params: N,
        flopsPerToken: F,
        mfu: measured ? null : a.mfu.value,
        measured: !!measured,
        tokensPerSecond: mid.effective,
        hours: mid.hours,
        days: mid.hours / 24,
        chipHours: mid.chipHours,
        cost: mid.cost,
        currency: a.currency.value,
        price,
        low: band(best, measured ? null : a.mfuHigh.value),
        high: band(worst, measured ? null : a.mfuLow.value),
        breakdown: mid.breakdown,
        distinctShapes: hw.kind === 'tpu' ? shapes.value : 0,
        checkpoint: {
          writes: mid.writes,
          intervalMinutes: a.checkpointIntervalMinutes.value,
          suggestedIntervalMinutes: mid.preemption ? Math.sqrt(2 * a.checkpointWriteSeconds.value * mid.preemption.meanHoursBetween * 3600) / 60 : null,
        },
        preemption: mid.preemption,
        memory: { bytes, hbmPerChip: hw.hbmBytes, fits, fitsOnOneChip: bytes <= hw.hbmBytes, smallestSlice: smallest ? { chips: smallest, name: sliceName(hw, smallest) } : null },
        warnings: w,
      });
    }
  }
  return { today, config, chips, tokens: resolved.tokens, params: f.params!, flopsPerToken: F, flopsFormula, distinctShapes: shapes, assumptions: a, estimates, warnings };
}
