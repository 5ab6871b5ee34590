/**
 * The cost estimator (pure: hosts pass file contents in; Python configs need `initParser` first).
 * `estimateFromFiles` is the one call hosts make; the pieces are exported for tests and the panel.
 */
import { defaultAssumptions, mergeAssumptions, parseAssumptionsFile, type Assumptions } from './assumptions';
import { loadTrainingConfig } from './config';
import { pickledInt } from './readers/pickle';
import { estimateAll, type CostReport } from './estimate';
import { buildCostVM, type CostVM } from './vm';
import type { ConfigFile } from './types';

export * from './types';
export * from './prices';
export { defaultAssumptions, mergeAssumptions, parseAssumptionsFile, parseHardwareList, parseHardwareSlices, parsePricingList, parseRegion, assumptionList, ASSUMPTION_KEYS, type Assumptions } from './assumptions';
export { loadTrainingConfig, resolveConfig, sniff, formatOf, readEntries, groupByFolder, describeSource, type RawConfig, type ResolvedConfig } from './config';
export { estimateAll, flopsPerToken, defaultPreemptionsPerDay, youngDalyMinutes, MissingValuesError, type CostReport, type Estimate, type Band, type Breakdown } from './estimate';
export { ANCHORS, CURVE, estimateMfu, matmulIntensity, communication } from './throughput';
export { activationBytes } from './memory';
export { MODELS, findModel } from './models';
export { pickledInt } from './readers/pickle';
export { reportJson, toMarkdown, configRows, estimateRow, ESTIMATE_HEADER, SENSITIVITY_HEADER, BREAKDOWN_HEADER, marks, sortedEstimates, sensitivityRows, breakdownRow, mfuLines, priceLines, memoryLine, priceLabel } from './report';
export { priceFindings, pricedFindingsVM, FINDING_ASSUMPTIONS, type PricedFinding, type PriceableFinding, type PanelFinding } from './findings';
export { buildCostVM, lensText, type CostVM } from './vm';
export { money, moneyShort, moneyRange, duration, durationRange, sig, pct } from './format';

export interface EstimateRequest {
  /** The job's training config files, in order (later files win per field). */
  configs: ConfigFile[];
  /** Other files of the config folder, read through Hydra `defaults:` only. */
  folder?: ConfigFile[];
  /** pyproject.toml (`[tool.tpu-ready.cost]`) and `.tpu-ready/cost.toml`, in order: later wins. */
  assumptionFiles?: ConfigFile[];
  /** Flags or editor choices: win over every file. */
  overrides?: Partial<Assumptions>;
  /** ISO date for price staleness. */
  today: string;
  /** nanoGPT's data/<dataset>/meta.pkl, when the config names a dataset and the host found it (read, never unpickled). */
  datasetMeta?: { path: string; bytes: Uint8Array };
}

export function assumptionsFrom(files: ConfigFile[] = [], overrides?: Partial<Assumptions>): Assumptions {
  return mergeAssumptions(defaultAssumptions(), ...files.map((f) => parseAssumptionsFile(f.path, f.text)), overrides);
}

/** Reads the configs, applies the assumptions, estimates every hardware × pricing. Throws CostConfigError. */
export function estimateFromFiles(req: EstimateRequest): CostReport {
  const a = assumptionsFrom(req.assumptionFiles, req.overrides);
  const raw = loadTrainingConfig(req.configs, req.folder ?? []);
  const ds = raw.fields.dataset;
  if (ds && raw.fields.vocab?.source.kind === 'default') {
    const v = req.datasetMeta ? pickledInt(req.datasetMeta.bytes, 'vocab_size') : null;
    if (v && v > 0) raw.fields.vocab = { value: v, source: { kind: 'derived', formula: `vocab_size in ${req.datasetMeta!.path} (read without unpickling)` } };
    else raw.notes.push(`dataset "${ds.value}": ${req.datasetMeta ? `${req.datasetMeta.path} has no readable vocab_size` : `data/${ds.value}/meta.pkl not found`}: the vocabulary is nanoGPT's default 50,304 (set \`vocab\` in .tpu-ready/cost.toml)`);
  }
  return estimateAll(raw, a, req.today);
}

/**
 * The panel's recompute: the view model for a request, never throwing (errors and missing values
 * become a CostVM with status "error" or "missing"). `forFile` places the lens line.
 */
export function costVM(req: EstimateRequest, forFile?: string): CostVM {
  try {
    return buildCostVM({ report: estimateFromFiles(req), forFile });
  } catch (error) {
    return buildCostVM({ error, files: req.configs.map((c) => c.path) });
  }
}
