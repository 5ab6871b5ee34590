/** The report as JSON (CLI `--format json`) and as Markdown (export). */
import { assumptionList } from './assumptions';
import { describeSource, fmtNum } from './config';
import type { CostReport, Estimate } from './estimate';
import { duration, money, pct, sig } from './format';
import { HARDWARE } from './prices';
import { FIELDS, FRAMEWORK_LABELS, type FieldName } from './types';

export function reportJson(r: CostReport) {
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r.config.fields)) if (v) fields[k] = { value: v.value, source: v.source };
  const assumptions: Record<string, unknown> = {};
  for (const row of assumptionList(r.assumptions)) assumptions[row.key] = { value: row.value, source: row.source };
  assumptions['distinct-shapes'] = { value: r.distinctShapes.value, source: r.distinctShapes.source };
  assumptions.chips = { value: r.chips.value, source: r.chips.source };
  return {
    version: 1,
    today: r.today,
    config: {
      frameworks: r.config.frameworks,
      files: r.config.files,
      fields,
      tokens: { value: r.tokens.value, source: r.tokens.source },
      params: { value: r.params.value, source: r.params.source },
      flopsPerToken: { value: r.flopsPerToken, formula: r.flopsFormula },
      missing: r.config.missing,
      notes: r.config.notes,
    },
    assumptions,
    estimates: r.estimates.map((e) => ({
      hardware: e.hardware,
      slice: e.slice,
      chips: e.chips,
      pricing: e.pricing,
      tokens: e.tokens,
      flopsPerToken: e.flopsPerToken,
      mfu: e.mfu,
      measured: e.measured,
      tokensPerSecond: e.tokensPerSecond,
      hours: e.hours,
      chipHours: e.chipHours,
      cost: e.cost,
      currency: e.currency,
      price: e.price,
      low: e.low,
      high: e.high,
      breakdown: e.breakdown,
      distinctShapes: e.distinctShapes,
      checkpoint: e.checkpoint,
      preemption: e.preemption,
      memory: e.memory,
      warnings: e.warnings,
    })),
    warnings: r.warnings,
    label: 'estimate: every figure follows from the config values and assumptions listed with their sources',
  };
}

const ORDER: FieldName[] = ['globalBatch', 'microBatch', 'gradAccum', 'devices', 'nodes', 'seqLen', 'steps', 'epochs', 'datasetTokens', 'datasetSamples', 'params', 'layers', 'dModel', 'heads', 'ffn', 'vocab', 'precision', 'accelerator'];

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

export function estimateRow(e: Estimate): string[] {
  return [
    `${e.hardwareName} (${e.slice})`,
    e.pricing,
    e.price ? `${money(e.price.perChipHour)}${e.price.overridden ? ' (override)' : ''}` : 'n/a',
    `${sig(e.tokensPerSecond)}`,
    duration(e.hours),
    sig(e.chipHours),
    e.cost === null ? 'compute only' : money(e.cost, e.currency),
    e.cost === null ? '—' : `${money(e.low.cost, e.currency)} – ${money(e.high.cost, e.currency)}`,
    `${duration(e.low.hours)} – ${duration(e.high.hours)}`,
  ];
}

export const ESTIMATE_HEADER = ['Hardware', 'Pricing', 'Price/chip-h', 'Tokens/s', 'Time', 'Chip-hours', 'Cost', 'Cost range', 'Time range'];

const mdEscape = (s: string) => s.replace(/\|/g, '\\|');

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
  out.push('', '## Estimates', '', `| ${ESTIMATE_HEADER.join(' | ')} |`, `|${ESTIMATE_HEADER.map(() => '---').join('|')}|`);
  for (const e of r.estimates) out.push(`| ${estimateRow(e).map(mdEscape).join(' | ')} |`);
  out.push('', `Ranges: MFU ${pct(r.assumptions.mfuHigh.value)} (low cost) to ${pct(r.assumptions.mfuLow.value)} (high cost), expected ${pct(r.assumptions.mfu.value)}.`, '');
  out.push('## Breakdown (hours, expected MFU)', '', '| Hardware | Pricing | Compute | Communication | Input stalls | Compile | Checkpoints | Preemption |', '|---|---|---|---|---|---|---|---|');
  for (const e of r.estimates) {
    const b = e.breakdown;
    out.push(`| ${e.slice} | ${e.pricing} | ${sig(b.compute)} | ${sig(b.communication)} | ${sig(b.inputStall)} | ${sig(b.compile)} | ${sig(b.checkpoint)} | ${sig(b.preemption)} |`);
  }
  const spot = r.estimates.find((e) => e.checkpoint.suggestedIntervalMinutes !== null);
  if (spot) out.push('', `Checkpoint interval that minimises lost work on spot (Young/Daly, √(2 × write time × mean time between preemptions)): ${sig(spot.checkpoint.suggestedIntervalMinutes!)} min (now ${spot.checkpoint.intervalMinutes} min).`);
  const mem = r.estimates.filter((e, i, all) => all.findIndex((x) => x.hardware === e.hardware) === i);
  out.push('', '## Memory', '', `Weights, gradients and optimizer state: ${sig(mem[0]?.memory.bytes / 1e9 || 0)} GB (${r.assumptions.bytesPerParam.value} bytes per parameter).`, '');
  for (const e of mem) out.push(`- ${e.hardwareName}: ${e.memory.fits ? 'fits' : 'does not fit'} in ${e.slice} (${HARDWARE[e.hardware].hbmLabel} per chip); smallest slice that fits: ${e.memory.smallestSlice?.name ?? 'none'}.`);
  const warnings = [...r.warnings, ...new Set(r.estimates.flatMap((e) => e.warnings))];
  if (warnings.length) {
    out.push('', '## Notes', '');
    for (const w of warnings) out.push(`- ${w}`);
  }
  out.push('', '## Prices', '');
  for (const hw of [...new Set(r.estimates.map((e) => e.hardware))]) {
    const h = HARDWARE[hw];
    const p = (x: typeof h.onDemand) => (x ? `${money(x.usdPerChipHour)} (${x.region}, as of ${x.asOf}${x.unverified ? ', unverified' : ''})` : 'not published');
    out.push(`- ${h.name}: peak ${sig(h.peakBf16 / 1e12)} TFLOP/s bf16 (${h.peakSource}); on-demand ${p(h.onDemand)}; spot ${p(h.spot)}. Source: ${h.onDemand?.source ?? '—'}.`);
  }
  return out.join('\n') + '\n';
}
