/**
 * The view model the editor renders (code lens, palette result, the panel's estimator): plain data, built
 * here so the editor never computes costs. The types live in src/protocol/cost.ts for the webview.
 */
import { assumptionList } from './assumptions';
import { describeSource, fmtNum } from './config';
import { MissingValuesError, type CostReport, type Estimate } from './estimate';
import { duration, durationRange, moneyRange, moneyShort, pct, sig } from './format';
import { toMarkdown } from './report';
import { CostConfigError, FIELDS, FRAMEWORK_LABELS, type FieldName, type Source } from './types';
import type { CostEstimateVM, CostSourceVM, CostValueVM, CostVM } from '../protocol/cost';

export type { CostEstimateVM, CostSourceVM, CostValueVM, CostVM };

function sourceVM(s: Source): CostSourceVM {
  return { text: describeSource(s), kind: s.kind, ...(s.kind === 'config' || s.kind === 'assumption' ? { file: s.file, line: s.line } : {}) };
}

const FIELD_ORDER: FieldName[] = ['globalBatch', 'microBatch', 'gradAccum', 'devices', 'nodes', 'seqLen', 'steps', 'epochs', 'datasetTokens', 'datasetSamples', 'params', 'layers', 'dModel', 'heads', 'ffn', 'vocab', 'precision', 'accelerator'];

function estimateVM(e: Estimate, primary: boolean): CostEstimateVM {
  const b = e.breakdown;
  return {
    hardware: e.hardware,
    hardwareName: e.hardwareName,
    slice: e.slice,
    chips: e.chips,
    pricing: e.pricing,
    hours: e.hours,
    cost: e.cost,
    costLow: e.low.cost,
    costHigh: e.high.cost,
    hoursLow: e.low.hours,
    hoursHigh: e.high.hours,
    display: {
      time: duration(e.hours),
      cost: e.cost === null ? 'compute only' : moneyShort(e.cost, e.currency),
      range: e.cost === null ? durationRange(e.low.hours, e.high.hours) : moneyRange(e.low.cost, e.high.cost, e.currency),
      tokensPerSecond: sig(e.tokensPerSecond),
      price: priceText(e),
      mfu: e.mfu === null ? 'measured tokens/s' : `${pct(e.mfu)} (${pct(e.high.mfu!)}–${pct(e.low.mfu!)})`,
    },
    breakdown: [
      { label: 'compute', hours: b.compute },
      { label: 'communication', hours: b.communication },
      { label: 'input stalls', hours: b.inputStall },
      { label: 'evaluation', hours: b.eval },
      { label: 'compile', hours: b.compile },
      { label: 'checkpointing', hours: b.checkpoint },
      { label: 'preemption', hours: b.preemption },
    ],
    warnings: e.warnings,
    primary,
  };
}

/** "$1.20/chip-h us-central1 as of 2026-11-01 (SkyPilot catalog …)", or the override. */
function priceText(e: Estimate): string {
  if (!e.price) return 'no public price: compute only';
  if (e.price.overridden) return `${moneyShort(e.price.perChipHour)}/chip-h (override: ${e.price.source})`;
  return `$${e.price.perChipHour}/chip-h ${e.price.region} as of ${e.price.asOf} (${e.price.source})`;
}

/** "≈ $930–$1,500 · 4.2–6.3 days on v5e-8 (us-central1, 2026-11-01) · spot $230–$370 (northamerica-northeast1, 2026-11-01)". */
export function lensText(r: CostReport): string {
  const hw = r.estimates[0]?.hardware;
  const od = r.estimates.find((e) => e.hardware === hw && e.pricing === 'on-demand');
  const spot = r.estimates.find((e) => e.hardware === hw && e.pricing === 'spot');
  const main = od ?? spot;
  if (!main) return 'tpu-ready: no estimate';
  const where = (e: Estimate) => (e.price ? (e.price.overridden ? 'price override' : `${e.price.region}, ${e.price.asOf}`) : 'no public price');
  const cost = (e: Estimate) => (e.cost === null ? 'compute only' : moneyRange(e.low.cost, e.high.cost, e.currency));
  const parts = [`≈ ${cost(main)}${main.pricing === 'spot' && !od ? ' spot' : ''}`, `${durationRange(main.low.hours, main.high.hours)} on ${main.slice} (${where(main)})`];
  if (od && spot) parts.push(`spot ${cost(spot)} (${where(spot)})`);
  return parts.join(' · ');
}

/** Builds the view model from a report, or from the error that stopped it. `forFile` places the lens. */
export function buildCostVM(input: { report?: CostReport; error?: unknown; forFile?: string; files?: string[] }): CostVM {
  const { report, error, forFile } = input;
  const base: CostVM = {
    status: 'ok', label: 'estimate', files: report?.config.files ?? input.files ?? [], frameworks: report?.config.frameworks.map((f) => FRAMEWORK_LABELS[f]) ?? [],
    lens: null, fields: [], assumptions: [], estimates: [], missing: [], error: null, warnings: [], markdown: '',
    defaults: { hardware: [], chips: 8, pricing: ['on-demand', 'spot'] },
  };
  if (!report) {
    if (error instanceof MissingValuesError) {
      base.status = 'missing';
      base.missing = error.missing.map((m) => ({ field: m.field, message: m.message, howToSupply: m.howToSupply }));
      base.lens = { line: 0, text: `tpu-ready cost: ${error.missing.map((m) => m.message.replace(/^missing /, 'missing ')).join(', ')}`, tooltip: error.missing.map((m) => `${m.message}: ${m.howToSupply}`).join('\n') };
    } else {
      base.status = 'error';
      const e = error instanceof CostConfigError ? error : new CostConfigError(String((error as Error)?.message ?? error));
      base.error = { message: e.message, file: e.file, line: e.line, field: e.field };
      base.lens = { line: Math.max(0, (e.line ?? 1) - 1), text: `tpu-ready cost: ${e.message.replace(/^[^:]*:\d*:? ?/, '')}`, tooltip: e.message };
    }
    return base;
  }
  const f = report.config.fields;
  for (const k of FIELD_ORDER) {
    const v = f[k];
    if (v) base.fields.push({ key: k, label: FIELDS[k], value: v.value, display: typeof v.value === 'number' ? fmtNum(v.value) : String(v.value), source: sourceVM(v.source) });
  }
  base.fields.push({ key: 'tokens', label: 'tokens', value: report.tokens.value, display: fmtNum(report.tokens.value), source: sourceVM(report.tokens.source) });
  base.assumptions = assumptionList(report.assumptions).map((a) => ({
    key: a.key, label: a.key, value: a.value as number | string | string[],
    display: Array.isArray(a.value) ? a.value.join(', ') : typeof a.value === 'number' ? fmtNum(a.value) : String(a.value),
    source: sourceVM(a.source),
  }));
  base.assumptions.push({ key: 'chips', label: 'chips', value: report.chips.value, display: fmtNum(report.chips.value), source: sourceVM(report.chips.source) });
  const first = report.estimates[0];
  base.estimates = report.estimates.map((e) => estimateVM(e, e.hardware === first?.hardware));
  base.warnings = [...report.warnings, ...new Set(report.estimates.flatMap((e) => e.warnings))];
  base.markdown = toMarkdown(report);
  base.defaults = { hardware: report.assumptions.hardware.value, chips: report.chips.value, pricing: report.assumptions.pricing.value };
  // the lens sits above the first key setting of the file it is shown in
  const lines = Object.values(f)
    .map((v) => v!.source)
    .filter((s): s is Extract<Source, { kind: 'config' }> => s.kind === 'config' && (!forFile || s.file === forFile))
    .map((s) => s.line);
  const line = lines.length ? Math.min(...lines) - 1 : 0;
  base.lens = {
    line,
    text: lensText(report),
    tooltip: `Estimate from ${report.config.files.join(', ')}: ${fmtNum(report.tokens.value)} tokens, ${sig(report.flopsPerToken)} FLOPs/token, ${first?.mfu === null || !first ? 'measured tokens/s' : `MFU ${pct(first.mfu)} on ${first.hardwareName}`}. Prices: ${[...new Set(report.estimates.filter((e) => e.hardware === first?.hardware).map((e) => `${e.pricing} ${priceText(e)}`))].join('; ')}. Click for the breakdown and assumptions.`,
  };
  return base;
}
