/** The report as JSON (CLI `--format json`), as Markdown (export), and the rows the text output shares. */
import { assumptionList } from './assumptions';
import { describeSource, fmtNum } from './config';
import type { CostReport, Estimate } from './estimate';
import { duration, durationRange, money, moneyRange, moneyShort, pct, sig } from './format';
import { HARDWARE, ridgePoint, type Price } from './prices';
import { ANCHORS } from './throughput';
import { FIELDS, FRAMEWORK_LABELS, type FieldName } from './types';

export function reportJson(r: CostReport) {
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r.config.fields)) if (v) fields[k] = { value: v.value, source: v.source };
  const assumptions: Record<string, unknown> = {};
  for (const row of assumptionList(r.assumptions)) assumptions[row.key] = { value: row.value, source: row.source };
  assumptions['distinct-shapes'] = { value: r.distinctShapes.value, source: r.distinctShapes.source };
  assumptions.chips = { value: r.chips.value, source: r.chips.source };
  const { cheapest, fastest } = marks(r.estimates);
  return {
    version: 2,
    today: r.today,
    config: {
      frameworks: r.config.frameworks,
      files: r.config.files,
      fields,
      tokens: { value: r.tokens.value, source: r.tokens.source },
      params: { value: r.params.value, source: r.params.source },
      jobDevices: { value: r.jobDevices.value, source: r.jobDevices.source },
      flopsPerToken: { value: r.flopsPerToken, formula: r.flopsFormula },
      missing: r.config.missing,
      notes: r.config.notes,
    },
    assumptions,
    estimates: r.estimates.map((e) => ({
      hardware: e.hardware,
      slice: e.slice,
      chips: e.chips,
      hosts: e.hosts,
      pricing: e.pricing,
      tokens: e.tokens,
      flopsPerToken: e.flopsPerToken,
      mfu: e.mfu,
      mfuSource: e.mfuSource,
      mfuFormula: e.mfuFormula,
      measured: e.measured,
      perChip: e.perChip,
      tokensPerSecond: e.tokensPerSecond,
      hours: e.hours,
      chipHours: e.chipHours,
      cost: e.cost,
      currency: e.currency,
      price: e.price,
      committed: e.committed,
      low: e.low,
      high: e.high,
      breakdown: e.breakdown,
      communication: e.communication,
      eval: e.eval,
      distinctShapes: e.distinctShapes,
      checkpoint: e.checkpoint,
      preemption: e.preemption,
      preemptionSensitivity: e.preemptionSensitivity,
      memory: e.memory,
      cheapest: e === cheapest,
      fastest: e === fastest,
      warnings: e.warnings,
    })),
    warnings: r.warnings,
    label: 'estimate: every figure follows from the config values and assumptions listed with their sources',
  };
}

const ORDER: FieldName[] = ['model', 'globalBatch', 'microBatch', 'gradAccum', 'devices', 'nodes', 'seqLen', 'steps', 'epochs', 'datasetTokens', 'datasetSamples', 'params', 'layers', 'dModel', 'heads', 'ffn', 'vocab', 'dataset', 'evalInterval', 'evalIters', 'compile', 'precision', 'accelerator'];

export function configRows(r: CostReport): { field: string; value: string; source: string }[] {
  const rows: { field: string; value: string; source: string }[] = [];
  for (const k of ORDER) {
    const v = r.config.fields[k];
    if (v) rows.push({ field: FIELDS[k], value: typeof v.value === 'number' ? fmtNum(v.value) : String(v.value), source: describeSource(v.source) });
  }
  rows.push({ field: 'tokens', value: fmtNum(r.tokens.value), source: describeSource(r.tokens.source) });
  rows.push({ field: 'chips', value: fmtNum(r.chips.value), source: describeSource(r.chips.source) });
  return rows;
}

/** The cheapest priced estimate and the fastest one. */
export function marks(es: Estimate[]): { cheapest: Estimate | null; fastest: Estimate | null } {
  const priced = es.filter((e) => e.cost !== null);
  const cheapest = priced.reduce<Estimate | null>((b, e) => (!b || e.cost! < b.cost! ? e : b), null);
  const fastest = es.reduce<Estimate | null>((b, e) => (!b || e.hours < b.hours ? e : b), null);
  return { cheapest, fastest };
}

/** Cheapest first (compute-only rows last), then fastest. */
export function sortedEstimates(es: Estimate[]): Estimate[] {
  return [...es].sort((a, b) => (a.cost ?? Infinity) - (b.cost ?? Infinity) || a.hours - b.hours);
}

/** "$1.20/chip-h us-central1, 2026-11-01" */
export function priceLabel(e: Estimate): string {
  if (!e.price) return 'no price';
  if (e.price.overridden) return `${money(e.price.perChipHour)} (override ${e.price.source})`;
  return `${money(e.price.perChipHour)} ${e.price.region}, ${e.price.asOf}`;
}

export function estimateRow(e: Estimate, m: { cheapest: Estimate | null; fastest: Estimate | null }): string[] {
  const mark = [e === m.cheapest ? 'cheapest' : '', e === m.fastest ? 'fastest' : ''].filter(Boolean).join(', ');
  const mfu = e.mfu === null ? 'measured' : `${pct(e.high.mfu!)}–${pct(e.low.mfu!)}`;
  return [
    `${e.hardwareName} (${e.slice})`,
    e.pricing,
    e.cost === null ? 'compute only' : `${moneyRange(e.low.cost, e.high.cost, e.currency)} (≈ ${moneyShort(e.cost, e.currency)})`,
    `${durationRange(e.low.hours, e.high.hours)} (≈ ${duration(e.hours)})`,
    mfu,
    priceLabel(e),
    mark,
  ];
}

export const ESTIMATE_HEADER = ['Hardware', 'Pricing', 'Cost (expected)', 'Time (expected)', 'MFU', 'Price/chip-h, region, as of', ''];

/** Sensitivity: MFU band, price across regions, preemption rate (spot). */
export function sensitivityRows(r: CostReport): string[][] {
  return sortedEstimates(r.estimates).map((e) => {
    const regions = e.price?.range && e.price.range.min.region !== e.price.range.max.region
      ? `${moneyRange(e.price.range.min.cost, e.price.range.max.cost, e.currency)} (${e.price.range.min.region} … ${e.price.range.max.region})`
      : '';
    const committed = e.committed.map((c) => `${c.term} commit ${moneyShort(c.cost, e.currency)}`).join(', ');
    const reg = [regions, committed].filter(Boolean).join('; ') || '—';
    const pre = e.preemptionSensitivity.length ? e.preemptionSensitivity.map((s) => (s.cost === null ? 'never finishes' : moneyShort(s.cost, e.currency))).join(' / ') : e.preemption ? `${sig(e.preemption.perDay)}/day (set)` : '—';
    return [e.slice, e.pricing, e.cost === null ? '—' : moneyRange(e.low.cost, e.high.cost, e.currency), reg, pre];
  });
}
export const SENSITIVITY_HEADER = ['Slice', 'Pricing', 'MFU band', 'Price across regions; committed use', 'Preemptions 1 / 4 / 12 per day'];

export function breakdownRow(e: Estimate): string[] {
  const b = e.breakdown;
  return [e.slice, e.pricing, duration(b.compute), duration(b.communication), duration(b.inputStall), duration(b.eval), duration(b.compile), duration(b.checkpoint), duration(b.preemption)];
}
export const BREAKDOWN_HEADER = ['Slice', 'Pricing', 'Compute', 'Comm. (exposed)', 'Input', 'Eval', 'Compile', 'Ckpt', 'Preempt'];

/** One line per hardware: how its MFU was derived. */
export function mfuLines(r: CostReport): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const e of r.estimates) {
    if (seen.has(e.hardware)) continue;
    seen.add(e.hardware);
    out.push(`${e.hardwareName}: ${e.mfu === null ? '' : `MFU ${pct(e.mfu)} (${pct(e.high.mfu!)}–${pct(e.low.mfu!)}): `}${e.mfuFormula}`);
  }
  return out;
}

/** Every catalog price behind the estimates, with source, region and date. */
export function priceLines(r: CostReport): string[] {
  const out: string[] = [];
  for (const hw of [...new Set(r.estimates.map((e) => e.hardware))]) {
    const h = HARDWARE[hw];
    const p = (list: Price[]) => (list.length ? list.map((x) => `${money(x.usdPerChipHour)} ${x.region} (as of ${x.asOf}${x.note ? `; ${x.note}` : ''})`).join(', ') : 'not published');
    const committed = h.committed.length ? `; committed use ${h.committed.map((c) => `${c.term} ${money(c.usdPerChipHour)} (${c.source}, ${c.asOf})`).join(', ')}` : '';
    out.push(`${h.name}: peak ${sig(h.peakBf16 / 1e12)} TFLOP/s bf16, HBM ${h.hbmLabel} at ${sig(h.hbmBandwidth / 1e9)} GB/s (ridge ${ridgePoint(h).toFixed(0)} FLOP/byte; ${h.peakSource}); on-demand ${p(h.onDemand)}; spot ${p(h.spot)}${committed}. Source: ${h.onDemand[0]?.source ?? h.spot[0]?.source ?? '—'}.`);
  }
  return out;
}

const mdEscape = (s: string) => s.replace(/\|/g, '\\|');
const mdTable = (header: string[], rows: string[][]) => [`| ${header.map(mdEscape).join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(mdEscape).join(' | ')} |`)];

export function toMarkdown(r: CostReport): string {
  const out: string[] = [];
  out.push('# Training cost estimate (tpu-ready)', '');
  out.push(`*An estimate, as of ${r.today}: every figure follows from the config values and the assumptions below, each with its source. Edit them in \`.tpu-ready/cost.toml\`.*`, '');
  out.push(`Config: ${r.config.files.map((f) => `\`${f}\``).join(', ')} (${r.config.frameworks.map((f) => FRAMEWORK_LABELS[f]).join(', ')})`, '');
  out.push('## Config values', '', '| Field | Value | Source |', '|---|---|---|');
  for (const row of configRows(r)) out.push(`| ${row.field} | ${mdEscape(row.value)} | ${mdEscape(row.source)} |`);
  out.push('', `FLOPs per token: ${sig(r.flopsPerToken)} (${r.flopsFormula}).`, '');
  out.push('## Assumptions', '', '| Assumption | Value | Source |', '|---|---|---|');
  for (const a of assumptionList(r.assumptions)) out.push(`| ${a.key} | ${mdEscape(Array.isArray(a.value) ? a.value.join(', ') : String(a.value))} | ${mdEscape(describeSource(a.source))} |`);
  out.push(`| distinct-shapes (used) | ${r.distinctShapes.value} | ${mdEscape(describeSource(r.distinctShapes.source))} |`);
  const m = marks(r.estimates);
  out.push('', '## Estimates (cheapest first)', '', ...mdTable(ESTIMATE_HEADER.map((h) => h || 'Note'), sortedEstimates(r.estimates).map((e) => estimateRow(e, m))));
  out.push('', '## Throughput (MFU per hardware)', '');
  for (const l of mfuLines(r)) out.push(`- ${l}`);
  out.push('', '## Sensitivity', '', ...mdTable(SENSITIVITY_HEADER, sensitivityRows(r)));
  out.push('', '## Breakdown (hours, expected MFU)', '', ...mdTable(BREAKDOWN_HEADER, r.estimates.map(breakdownRow)));
  const spot = r.estimates.find((e) => e.preemption);
  if (spot) out.push('', `Spot: ${sig(spot.preemption!.perDay)} preemptions/day on ${spot.slice} (${spot.preemption!.perDaySource}); checkpoint write ${sig(spot.checkpoint.writeSeconds, 2)} s (${spot.checkpoint.writeSource}); interval ${sig(spot.checkpoint.intervalMinutes, 2)} min (${spot.checkpoint.intervalSource}).`);
  const first = r.estimates.find((e) => e.eval);
  if (first?.eval) out.push('', `Evaluation: ${first.eval.note}.`);
  const mem = r.estimates.filter((e, i, all) => all.findIndex((x) => x.hardware === e.hardware) === i);
  out.push('', '## Memory', '', `Weights, gradients and optimizer state: ${sig(mem[0]?.memory.bytes / 1e9 || 0)} GB (${r.assumptions.bytesPerParam.value} bytes per parameter), sharded across the chips; activations and logits of one micro-batch per chip (flash attention ${r.assumptions.flashAttention.value ? 'on' : 'off'}, activation checkpointing ${r.assumptions.activationCheckpointing.value ? 'on' : 'off'}).`, '');
  for (const e of mem) out.push(`- ${memoryLine(e)}`);
  const warnings = [...r.warnings, ...new Set(r.estimates.flatMap((e) => e.warnings))];
  if (warnings.length) {
    out.push('', '## Notes', '');
    for (const w of warnings) out.push(`- ${w}`);
  }
  out.push('', '## Prices and sources', '');
  for (const l of priceLines(r)) out.push(`- ${l}`);
  out.push('', 'Anchor runs the throughput model is calibrated to:', '');
  for (const a of ANCHORS) out.push(`- ${HARDWARE[a.hardware].name}: ${a.what} (${a.source}, ${a.date})`);
  return out.join('\n') + '\n';
}

export function memoryLine(e: Estimate): string {
  const g = (x: number) => `${sig(x / 1e9, 2)} GB`;
  const p = e.memory.perChip;
  const verdict = !e.memory.microBatchFits ? 'micro-batch does NOT fit one chip' : e.memory.fits ? 'fits' : 'does NOT fit';
  return `${HARDWARE[e.hardware].name} (${e.slice}, ${HARDWARE[e.hardware].hbmLabel} per chip): ${verdict}: ${g(p.total)} per chip = states ${g(p.states)} + activations ${g(p.activations)} + logits ${g(p.logits)} (micro-batch ${fmtNum(e.perChip.microBatch)}); smallest slice that fits: ${e.memory.smallestSlice?.name ?? 'none'}`;
}
