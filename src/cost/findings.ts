/**
 * Priced findings: the time and cost a hot-loop finding adds to the configured run, from explicit,
 * editable per-finding assumptions (`[findings.TPU201] ms-per-sync = 20` in .tpu-ready/cost.toml).
 * Always labelled as an estimate, with the assumptions it rests on.
 */
import type { Finding, Position } from '../core/types';
import type { PricedFindingsVM } from '../protocol/cost';
import { describeSource } from './config';
import type { CostReport, Estimate } from './estimate';
import { duration, moneyShort, sig } from './format';
import type { Source, Sourced } from './types';

type Kind = 'per-step' | 'slowdown' | 'shapes' | 'stall';

interface Rule {
  kind: Kind;
  /** One impact per file and rule however many lines show it (one loop, one pipeline). */
  once?: boolean;
  /** assumption key → [default, unit, what it means] */
  params: Record<string, [number, string, string]>;
  what: string;
}

/** Default per-finding assumptions (data). Every one is overridable under [findings.TPUnnn]. */
export const FINDING_ASSUMPTIONS: Record<string, Rule> = {
  TPU201: { kind: 'per-step', what: 'host sync in the hot loop', params: { 'ms-per-sync': [20, 'ms', 'time the device pipeline drains per host read'], 'throttle-steps': [100, 'steps', 'steps between reads when the read is throttled (info/hint severity)'] } },
  TPU202: { kind: 'per-step', what: 'data-dependent control flow (a host sync per step)', params: { 'ms-per-sync': [20, 'ms', 'time lost per forced sync'], 'throttle-steps': [100, 'steps', 'steps between syncs when throttled'] } },
  TPU203: { kind: 'shapes', what: 'dynamic-shape op (recompilations)', params: { 'extra-shapes': [8, 'shapes', 'extra distinct graphs compiled'] } },
  TPU204: { once: true, kind: 'slowdown', what: 'missing or misplaced step barrier', params: { 'slowdown': [0.3, '× train time', 'extra step time from graphs that grow across steps'] } },
  TPU205: { kind: 'shapes', what: 'structural dynamism (recompilations)', params: { 'extra-shapes': [4, 'shapes', 'extra distinct graphs compiled'] } },
  TPU301: { once: true, kind: 'slowdown', what: 'CUDA autocast disabled on TPU (runs in fp32)', params: { 'slowdown': [1, '× train time', 'fp32 matmuls on the MXU versus bf16'] } },
  TPU303: { once: true, kind: 'per-step', what: 'GradScaler (inf check syncs each step)', params: { 'ms-per-sync': [5, 'ms', 'time lost per step to the scaler\'s check'], 'throttle-steps': [1, 'steps', 'steps between checks'] } },
  TPU401: { once: true, kind: 'stall', what: 'batches moved by hand without MpDeviceLoader', params: { 'input-stall': [0.1, '× train time', 'extra time waiting for host-to-device copies'] } },
  TPU403: { once: true, kind: 'shapes', what: 'ragged final batch', params: { 'extra-shapes': [1, 'shapes', 'extra graph for the last batch'] } },
  TPU404: { once: true, kind: 'shapes', what: 'variable input shapes', params: { 'extra-shapes': [16, 'shapes', 'distinct padded lengths or image sizes'] } },
};

/** What pricing needs of a finding: the engine's Finding or LocatedFinding, or the CLI's output row (1-based `line`). */
export type PriceableFinding = Pick<Finding, 'rule' | 'severity' | 'message'> & {
  startPos?: Position;
  line?: number;
  path?: string;
  /** What a run measured on this line (src/evidence): replaces the default assumptions it measures. */
  evidence?: { kind: string; count: number; seconds: number | null; graphHashes: string[]; perStep: number | null; log: { file: string; line: number } };
};

export interface PricedFinding {
  rule: string;
  message: string;
  path: string | null;
  /** 1-based. */
  line: number | null;
  /** Every line of the file where the rule fired, for rules priced once per file (a loop, a pipeline). */
  lines: number[];
  /** Extra wall-clock hours on the configured run. */
  hours: number;
  /** Extra cost on the estimate's hardware and pricing; null without a price. */
  cost: number | null;
  currency: string;
  basis: string;
  label: string;
  assumptions: { key: string; value: number; unit: string; meaning: string; source: Source }[];
  /** "≈ +2.8 h · +$56 on v5e-8 on-demand (estimate: 20 ms per host sync × 5,000 steps)" */
  summary: string;
}

/** Prices every finding whose rule has an impact model; others are skipped. */
export function priceFindings(findings: PriceableFinding[], report: CostReport, estimate: Estimate): PricedFinding[] {
  const steps = report.config.fields.steps?.value ?? (report.config.fields.globalBatch && report.config.fields.seqLen ? report.tokens.value / (report.config.fields.globalBatch.value * report.config.fields.seqLen.value) : null);
  const out: PricedFinding[] = [];
  const a = report.assumptions;
  const trainHours = estimate.breakdown.compute + estimate.breakdown.communication + estimate.breakdown.inputStall;
  const lineOf = (f: PriceableFinding) => f.line ?? (f.startPos ? f.startPos.line + 1 : null);
  const onceSeen = new Map<string, PricedFinding>();
  for (const f of findings) {
    const rule = FINDING_ASSUMPTIONS[f.rule];
    if (!rule) continue;
    const onceKey = rule.once ? `${f.path ?? ''}\u0000${f.rule}` : null;
    const first = onceKey ? onceSeen.get(onceKey) : undefined;
    if (first) {
      const l = lineOf(f);
      if (l !== null && !first.lines.includes(l)) first.lines.push(l);
      continue;
    }
    // measured in a run (src/evidence): ms per host read, reads per step, distinct graphs, seconds per compile
    const e = f.evidence;
    const from = e ? `measured in the run (${e.log.file}:${e.log.line})` : '';
    const measured: Record<string, [number, string] | undefined> = !e || !e.count ? {} : {
      'ms-per-sync': e.kind === 'host-read' && e.seconds !== null ? [(e.seconds / e.count) * 1000, `${from}: ${sig(e.seconds)} s over ${e.count} executions`] : undefined,
      'throttle-steps': e.kind === 'host-read' && e.perStep ? [1 / e.perStep, `${from}: ${sig(e.perStep)} reads per step`] : undefined,
      'extra-shapes': e.kind === 'recompilation' && e.graphHashes.length ? [Math.max(0, e.graphHashes.length - 1), `${from}: ${e.graphHashes.length} distinct graphs`] : undefined,
    };
    const vals: PricedFinding['assumptions'] = Object.entries(rule.params).map(([key, [def, unit, meaning]]) => {
      const o: Sourced<number> | undefined = a.findings[f.rule]?.[key];
      const m = measured[key];
      if (m && !o) return { key, value: m[0], unit, meaning, source: { kind: 'derived', formula: m[1] } };
      return { key, value: o ? o.value : def, unit, meaning, source: o ? o.source : { kind: 'default', note: `tpu-ready default for ${f.rule}` } };
    });
    const v = (k: string) => vals.find((x) => x.key === k)!.value;
    const compileSeconds = e?.kind === 'recompilation' && e.seconds !== null && e.count ? e.seconds / e.count : a.compileSeconds.value;
    let hours = 0;
    let why = '';
    switch (rule.kind) {
      case 'per-step': {
        if (steps === null) continue;
        const throttled = f.severity === 'info' || f.severity === 'hint' || measured['throttle-steps'] !== undefined;
        const every = throttled ? Math.max(measured['throttle-steps'] ? 0 : 1, v('throttle-steps')) : 1;
        hours = (steps / every) * v('ms-per-sync') / 1000 / 3600;
        why = `${sig(v('ms-per-sync'))} ms × ${sig(steps / every)} ${every > 1 ? `syncs (every ${sig(every)} steps)` : every < 1 ? `syncs (${sig(1 / every)} per step)` : 'steps'}`;
        break;
      }
      case 'slowdown':
        hours = trainHours * v('slowdown');
        why = `${v('slowdown')} × ${duration(trainHours)} of training`;
        break;
      case 'stall':
        hours = trainHours * v('input-stall');
        why = `${v('input-stall')} × ${duration(trainHours)} of training`;
        break;
      case 'shapes': {
        if (estimate.distinctShapes === 0) continue; // GPUs: no XLA compile modelled
        const perRestart = 1 + (estimate.preemption?.expected ?? 0);
        hours = (v('extra-shapes') * compileSeconds * perRestart) / 3600;
        why = `${v('extra-shapes')} extra shape${v('extra-shapes') === 1 ? '' : 's'} × ${sig(compileSeconds)} s compile${e?.kind === 'recompilation' && e.seconds !== null ? ' (measured)' : ''}${perRestart > 1 ? ` × ${sig(perRestart)} (start + expected restarts)` : ''}`;
        break;
      }
    }
    const cost = estimate.price ? (hours * estimate.chips * estimate.price.perChipHour * a.exchangeRate.value) / a.utilization.value : null;
    const basis = `${estimate.slice} ${estimate.pricing}`;
    const line = lineOf(f);
    const priced: PricedFinding = {
      rule: f.rule,
      message: f.message,
      path: f.path ?? null,
      line,
      lines: line === null ? [] : [line],
      hours,
      cost,
      currency: estimate.currency,
      basis,
      label: 'estimate',
      assumptions: vals,
      summary: `≈ +${duration(hours)}${cost !== null ? ` · +${moneyShort(cost, estimate.currency)}` : ''} on ${basis} (estimate: ${rule.what}; ${why}${rule.once ? '; once per file' : ''}${priceNote(estimate)})`,
    };
    if (onceKey) onceSeen.set(onceKey, priced);
    out.push(priced);
  }
  return out;
}

/** A finding as the panel lists it: workspace path, the uri the host opens, 1-based line and column, its cell. */
export type PanelFinding = Pick<Finding, 'rule' | 'severity' | 'message'> & { path: string; uri: string; line: number; column: number; cell: number | null };

/**
 * The panel's priced findings: every finding with an impact model priced on `estimate` (the workspace's
 * training config `config`), most expensive first, at most `cap` listed. Labelled as an estimate.
 */
export function pricedFindingsVM(findings: PanelFinding[], report: CostReport, estimate: Estimate, config: string, cap = 50): PricedFindingsVM {
  const priced = priceFindings(findings, report, estimate);
  const used = new Set<number>();
  const rows = priced.map((p) => {
    const i = findings.findIndex((f, k) => !used.has(k) && f.rule === p.rule && f.path === p.path && f.line === p.line);
    used.add(i);
    const f = findings[i];
    return {
      rule: p.rule,
      message: p.message,
      path: f.path,
      uri: f.uri,
      line: f.line - 1,
      character: Math.max(0, f.column - 1),
      cell: f.cell,
      lines: [...p.lines].sort((a, b) => a - b),
      hours: p.hours,
      cost: p.cost,
      summary: p.summary,
      assumptions: p.assumptions.map((a) => ({ key: a.key, value: a.value, unit: a.unit, meaning: a.meaning, source: describeSource(a.source) })),
    };
  });
  rows.sort((a, b) => b.hours - a.hours || a.path.localeCompare(b.path) || a.line - b.line || a.rule.localeCompare(b.rule));
  return { label: 'estimate', config, basis: `${estimate.slice} ${estimate.pricing}`, findings: rows.slice(0, cap), more: Math.max(0, rows.length - cap) };
}

/** "; at $1.2/chip-h us-central1 as of 2026-11-01": every priced figure says which price it rests on. */
function priceNote(e: Estimate): string {
  if (!e.price) return '';
  if (e.price.overridden) return `; at ${e.price.perChipHour}/chip-h (override ${e.price.source})`;
  return `; at $${e.price.perChipHour}/chip-h ${e.price.region} as of ${e.price.asOf}`;
}
