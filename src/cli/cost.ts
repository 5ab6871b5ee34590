/** `tpu-ready cost [CONFIG...]`: training time and cost from the training config, with every source shown. */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { initParser } from '../core/parse';
import {
  BREAKDOWN_HEADER, CostConfigError, ESTIMATE_HEADER, FRAMEWORK_LABELS, MissingValuesError, SENSITIVITY_HEADER, assumptionList, breakdownRow, configRows, describeSource,
  duration, moneyRange, estimateFromFiles, estimateRow, formatOf, marks, memoryLine, mfuLines, parseHardwareSlices, parsePricingList, parseRegion, priceLines, reportJson,
  sensitivityRows, sig, sniff, sortedEstimates, toMarkdown, type Assumptions, type ConfigFile, type CostReport,
} from '../cost';
import { MAX_CONFIG_CHARS } from '../cost/readers/limits';
import { DEFAULT_OPTIONS } from '../core/types';
import { evidenceFindings, mergeEvidence, readLogs } from './evidence';
import { readRunLogs } from '../evidence';
import { measuredStepOf, measuredThroughput, type MeasuredStep } from '../cost/measured';
import type { HardwareId } from '../cost/prices';
import type { OutFinding } from './process';
import { priceFindings, moneyShort, type PricedFinding } from '../cost';
import { processFile } from './process';
import { collectFiles, findProjectRoot } from './walk';
import type { Io } from './io';
import { eachArg, UsageError } from './args';

export const COST_HELP = `Usage: tpu-ready cost [CONFIG...] [options]
       tpu-ready cost diff A B [options]     B − A per hardware and pricing (A, B: a config, or REF:PATH
                                             for a git revision), in text, json or markdown

Estimates training time and cost on TPUs and GPUs from your training config (YAML, JSON, TOML or
Python globals; nanoGPT, HF, Lightning, Hydra, Accelerate, DeepSpeed, LitGPT, torchtitan). Without
CONFIG, finds the training configs under the working directory. Several CONFIGs are one job.
Assumptions: .tpu-ready/cost.toml or [tool.tpu-ready.cost] in pyproject.toml; flags win.

Options:
  --hardware LIST        v4, v5e, v5p, v6e, tpu7x, a100, a100-80gb, h100, h200, b200 or slice names
                         (v5litepod-16, v6e-8, v5p-8 = 4 chips, tpu7x-8 = 4 chips); default v5e,v6e,v5p,a100,h100
  --chips N              chips (GPUs) per estimate (default: the config's device count, else 8); the job
                         (global batch, tokens) stays the config's, the per-chip batch is re-derived
  --region R             price region (default: the cheapest in the catalog; the range is shown)
  --flash-attention      activations without the attention scores (memory check)
  --activation-checkpointing  keep only each layer's input (memory check)
  --preemptions-per-day X     spot preemption rate (default 1 per day per host, × √hosts)
  --pricing P            on-demand, spot or both comma-separated (default both)
  --mfu X                one expected MFU for every hardware; the band is 0.75X to 1.25X (default:
                         modelled per hardware and model, calibrated to public runs)
  --price P              price per chip-hour for the one --hardware (--pricing's, default on-demand)
  --format F             text (default), json or markdown
  --findings PATHS       also scan these files (comma-separated) and price their hot-loop findings
                         (host syncs, recompilations, step barrier, autocast) on the first estimate
  --evidence LOGS        a PyTorch/XLA run's logs (comma-separated; from .tpu-ready/profile-run.sh): its
                         measured step time replaces the modelled throughput on the TPU it ran on; with
                         --findings, measured host-read and compile seconds, reads per step and distinct
                         graphs replace the priced findings' defaults
  --measured-on SLICE    the TPU the --evidence run used (v5litepod-8, v6e-8), when its log does not say
  --today YYYY-MM-DD     date for price staleness (default: today)
`;


export interface CostArgs {
  paths: string[];
  format: 'text' | 'json' | 'markdown';
  today: string;
  overrides: Partial<Assumptions>;
  findings: string[];
  /** Run logs whose measurements replace the modelled throughput and the priced findings' default assumptions. */
  evidence: string[];
  /** The slice the evidence run used, when its log does not name it. */
  measuredOn: { id: HardwareId; chips?: number; name: string } | null;
}

export function parseCostArgs(argv: string[], today: string): CostArgs {
  const a: CostArgs = { paths: [], format: 'text', today, overrides: {}, findings: [], evidence: [], measuredOn: null };
  let price: number | undefined;
  let pricingGiven = false;
  eachArg(argv, (arg) => {
    const { flag } = arg;
    const value = arg.value;
    const number = arg.number;
    switch (flag) {
      case '--hardware': {
        const list = parseHardwareSlices(value(), '--hardware');
        a.overrides.hardware = { value: list.map((h) => h.id), source: { kind: 'flag', flag: '--hardware' } };
        a.overrides.hardwareChips = Object.fromEntries(list.filter((h) => h.chips).map((h) => [h.id, { value: h.chips!, source: { kind: 'flag', flag: '--hardware' } }]));
        break;
      }
      case '--region':
        a.overrides.region = { value: parseRegion(value(), '--region'), source: { kind: 'flag', flag: '--region' } };
        break;
      case '--flash-attention':
        a.overrides.flashAttention = { value: true, source: { kind: 'flag', flag: '--flash-attention' } };
        break;
      case '--activation-checkpointing':
        a.overrides.activationCheckpointing = { value: true, source: { kind: 'flag', flag: '--activation-checkpointing' } };
        break;
      case '--preemptions-per-day':
        a.overrides.preemptionsPerDay = { value: number(0, 1000, 'a number of preemptions per day'), source: { kind: 'flag', flag: '--preemptions-per-day' } };
        break;
      case '--chips': {
        const n = number(1, 1e6, 'a positive whole number');
        if (!Number.isInteger(n)) throw new UsageError(`--chips must be a positive whole number, not "${n}"`);
        a.overrides.chips = { value: n, source: { kind: 'flag', flag: '--chips' } };
        break;
      }
      case '--pricing':
        a.overrides.pricing = { value: parsePricingList(value(), '--pricing'), source: { kind: 'flag', flag: '--pricing' } };
        pricingGiven = true;
        break;
      case '--mfu': {
        const m = number(0.001, 1, 'between 0 and 1');
        a.overrides.mfu = { value: m, source: { kind: 'flag', flag: '--mfu' } };
        a.overrides.mfuLow = { value: m * 0.75, source: { kind: 'derived', formula: '--mfu × 0.75' } };
        a.overrides.mfuHigh = { value: Math.min(1, m * 1.25), source: { kind: 'derived', formula: '--mfu × 1.25' } };
        break;
      }
      case '--price':
        price = number(0, 1e6, 'a price per chip-hour');
        break;
      case '--format': {
        const f = value();
        if (f !== 'text' && f !== 'json' && f !== 'markdown' && f !== 'md') throw new UsageError(`--format must be text, json or markdown, not "${f}"`);
        a.format = f === 'md' ? 'markdown' : f;
        break;
      }
      case '--evidence':
        a.evidence.push(...value().split(',').map((x) => x.trim()).filter(Boolean));
        break;
      case '--measured-on': {
        const v = value();
        const hw = parseHardwareSlices(v, '--measured-on')[0];
        if (!hw.chips) throw new UsageError(`--measured-on needs a slice name with its size (v5litepod-8, v6e-8, v5p-8), not "${v}"`);
        a.measuredOn = { ...hw, name: v };
        break;
      }
      case '--findings':
        a.findings.push(...value().split(',').map((x) => x.trim()).filter(Boolean));
        break;
      case '--today': {
        const t = value();
        if (!/^\d{4}-\d{2}-\d{2}$/.test(t) || Number.isNaN(Date.parse(t))) throw new UsageError(`--today must be YYYY-MM-DD, not "${t}"`);
        a.today = t;
        break;
      }
      default:
        a.paths.push(arg.positional('see tpu-ready cost --help'));
    }
  });
  if (a.measuredOn && !a.evidence.length) throw new UsageError('--measured-on needs --evidence (the run it describes)');
  if (price !== undefined) {
    const hw = a.overrides.hardware?.value;
    if (!hw || hw.length !== 1) throw new UsageError('--price needs exactly one --hardware (the price is per chip-hour of that hardware)');
    const pricing = pricingGiven ? a.overrides.pricing!.value : (['on-demand'] as const);
    if (pricing.length !== 1) throw new UsageError('--price needs one --pricing (on-demand or spot)');
    if (!pricingGiven) a.overrides.pricing = { value: ['on-demand'], source: { kind: 'flag', flag: '--price (on-demand)' } };
    a.overrides.prices = { [hw[0]]: { [pricing[0]]: { value: price, source: { kind: 'flag', flag: '--price' } } } };
  }
  return a;
}

const SKIP_DIRS = new Set(['node_modules', '.git', '.venv', 'venv', 'env', 'dist', 'build', '__pycache__', 'site-packages', '.tox', 'wandb', 'outputs', 'out', 'checkpoints']);

function listFiles(dir: string, depth: number, out: string[], limit = 2000): void {
  if (depth < 0 || out.length >= limit) return;
  let ents: fs.Dirent[];
  try {
    ents = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of ents.sort((x, y) => x.name.localeCompare(y.name))) {
    if (e.name.startsWith('.') || SKIP_DIRS.has(e.name)) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) listFiles(p, depth - 1, out, limit);
    else if (e.isFile() && formatOf(e.name)) out.push(p);
    if (out.length >= limit) return;
  }
}

function readConfig(abs: string, display: string): ConfigFile {
  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch {
    throw new UsageError(`${display}: no such file`);
  }
  if (st.isDirectory()) throw new UsageError(`${display}: is a directory (name the config files, or run without CONFIG to find them)`);
  if (st.size > MAX_CONFIG_CHARS * 4) throw new CostConfigError(`${display}: ${st.size} bytes is too large for a training config; not read`, display);
  return { path: display, text: fs.readFileSync(abs, 'utf8') };
}

/** Yaml files under a Hydra primary's folder (the group files its `defaults:` may name). */
function hydraFolder(abs: string, cwd: string): ConfigFile[] {
  const files: string[] = [];
  listFiles(path.dirname(abs), 4, files, 500);
  return files.filter((f) => /\.ya?ml$/.test(f)).map((f) => readConfig(f, rel(cwd, f)));
}

const rel = (cwd: string, abs: string) => (path.relative(cwd, abs) || path.basename(abs)).split(path.sep).join('/');

/** Training configs under `cwd`, as jobs (one per folder; Hydra group files belong to their primary). */
function discover(cwd: string, io: Io): string[][] {
  const files: string[] = [];
  listFiles(cwd, 4, files);
  const found: { abs: string; hydra: boolean }[] = [];
  for (const abs of files) {
    if (formatOf(abs) === 'python' && !/(^|[\\/])(configs?)[\\/]/.test(path.relative(cwd, abs)) && !/^train.*\.py$/.test(path.basename(abs))) continue;
    try {
      const text = fs.statSync(abs).size <= MAX_CONFIG_CHARS ? fs.readFileSync(abs, 'utf8') : '';
      if (!text) continue;
      const fws = sniff({ path: rel(cwd, abs), text }, []);
      if (fws.length) found.push({ abs, hydra: fws.includes('hydra') });
    } catch (e) {
      if (e instanceof CostConfigError) io.err(`tpu-ready: skipped ${e.message}\n`);
    }
  }
  const hydraRoots = found.filter((f) => f.hydra).map((f) => path.dirname(f.abs) + path.sep);
  const kept = found.filter((f) => f.hydra || !hydraRoots.some((r) => f.abs.startsWith(r)));
  const groups = new Map<string, string[]>();
  for (const f of kept) {
    const key = f.hydra ? f.abs : path.dirname(f.abs);
    groups.set(key, [...(groups.get(key) ?? []), f.abs]);
  }
  return [...groups.values()];
}

/** pyproject.toml ([tool.tpu-ready.cost]) then .tpu-ready/cost.toml, nearest the config, up to the filesystem root. */
function assumptionFiles(startDir: string, cwd: string): ConfigFile[] {
  const out: ConfigFile[] = [];
  let pyproject: string | null = null;
  let costToml: string | null = null;
  for (let d = path.resolve(startDir); ; d = path.dirname(d)) {
    if (!pyproject && fs.existsSync(path.join(d, 'pyproject.toml'))) pyproject = path.join(d, 'pyproject.toml');
    if (!costToml && fs.existsSync(path.join(d, '.tpu-ready', 'cost.toml'))) costToml = path.join(d, '.tpu-ready', 'cost.toml');
    if (fs.existsSync(path.join(d, '.git')) || path.dirname(d) === d) break;
  }
  for (const p of [pyproject, costToml]) if (p) out.push(readConfig(p, rel(cwd, p)));
  return out;
}

function table(rows: string[][], indent = '  '): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length)));
  return rows.map((r) => indent + r.map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(widths[i] - [...c].length))).join('  ').trimEnd()).join('\n') + '\n';
}

/** Scans `paths` with the rule engine and prices the findings on the report's first estimate. */
async function pricedFindingsOf(paths: string[], r: CostReport, cwd: string, wasmDir: string, io: Io, evidence: string[] = []): Promise<PricedFinding[]> {
  const root = findProjectRoot(paths[0]);
  const { files, missing } = collectFiles(paths, root, undefined);
  for (const m of missing) throw new UsageError(`--findings ${m.path}: ${m.reason}`);
  await initParser(wasmDir);
  let found: OutFinding[] = files.flatMap((abs) => {
    const o = processFile({ abs, display: rel(cwd, abs), options: DEFAULT_OPTIONS, fix: null, maxBytes: 2048 * 1024 });
    if (o.skipped) io.err(`tpu-ready cost: --findings ${o.display}: skipped: ${o.skipped}\n`);
    return o.findings;
  });
  if (evidence.length) found = mergeEvidence(found, evidenceFindings(readLogs(evidence, '--evidence '), root, undefined, files).findings).findings;
  const basis = r.estimates.find((e) => e.pricing === 'on-demand' && e.cost !== null) ?? r.estimates[0];
  return priceFindings(found, r, basis);
}

/** The run's measured step time and the slice it ran on, from the --evidence logs. */
function measuredStep(parsed: CostArgs, cwd: string): MeasuredStep | string {
  const logs = readLogs(parsed.evidence.map((p) => path.resolve(cwd, p)), '--evidence ');
  return measuredStepOf(readRunLogs(logs), logs.map((l) => rel(cwd, l.abs)), parsed.measuredOn);
}

export function formatFindings(priced: PricedFinding[]): string {
  if (!priced.length) return '';
  const total = priced.reduce((s, p) => s + p.hours, 0);
  const cost = priced.every((p) => p.cost !== null) ? priced.reduce((s, p) => s + p.cost!, 0) : null;
  let s = `\nPriced findings (estimates on ${priced[0].basis}: ≈ +${duration(total)}${cost !== null ? `, +${moneyShort(cost, priced[0].currency)}` : ''} in all)\n`;
  for (const p of priced) s += `  ${p.path ?? ''}${p.lines.length ? `:${p.lines.join(',')}` : ''}: ${p.rule} ${p.summary}\n`;
  return s;
}

export function formatText(r: CostReport): string {
  let s = `Training cost estimate: ${r.config.files.join(', ')} (${r.config.frameworks.map((f) => FRAMEWORK_LABELS[f]).join(', ')})\n`;
  s += `An estimate as of ${r.today}: each figure follows from the values and assumptions below.\n\n`;
  s += 'Config\n' + table(configRows(r).map((x) => [x.field, x.value, x.source]));
  s += `  FLOPs/token: ${sig(r.flopsPerToken)} (${r.flopsFormula})\n\n`;
  s += 'Assumptions (edit in .tpu-ready/cost.toml, or with flags)\n';
  s += table([...assumptionList(r.assumptions).filter((x) => x.key !== 'chips').map((x) => [x.key, Array.isArray(x.value) ? x.value.join(',') : String(x.value), describeSource(x.source)]), ['distinct-shapes (used)', String(r.distinctShapes.value), describeSource(r.distinctShapes.source)]]);
  const m = marks(r.estimates);
  s += `\nEstimates, cheapest first (ranges first: from the MFU band; ≈ expected)\n`;
  s += table([ESTIMATE_HEADER, ...sortedEstimates(r.estimates).map((e) => estimateRow(e, m))]);
  s += '\nThroughput (MFU per hardware and model)\n' + mfuLines(r).map((l) => `  ${l}\n`).join('');
  s += '\nSensitivity (cost)\n' + table([SENSITIVITY_HEADER, ...sensitivityRows(r)]);
  s += '\nBreakdown of the time (expected MFU)\n';
  s += table([BREAKDOWN_HEADER, ...r.estimates.map(breakdownRow)]);
  const spot = r.estimates.find((e) => e.preemption);
  if (spot) s += `\nSpot on ${spot.slice}: ${sig(spot.preemption!.perDay)} preemptions/day (${spot.preemption!.perDaySource}); checkpoint write ${sig(spot.checkpoint.writeSeconds, 2)} s (${spot.checkpoint.writeSource}); interval ${sig(spot.checkpoint.intervalMinutes, 2)} min (${spot.checkpoint.intervalSource}).\n`;
  const ev = r.estimates.find((e) => e.eval);
  if (ev?.eval) s += `\nEvaluation: ${ev.eval.note}.\n`;
  const seen = new Set<string>();
  s += `\nMemory: ${sig(r.estimates[0].memory.bytes / 1e9)} GB of weights, gradients and optimizer state (${r.assumptions.bytesPerParam.value} bytes/parameter, sharded), plus one micro-batch of activations and logits per chip\n`;
  for (const e of r.estimates) {
    if (seen.has(e.hardware)) continue;
    seen.add(e.hardware);
    s += `  ${memoryLine(e)}\n`;
  }
  const notes = [...r.warnings, ...new Set(r.estimates.flatMap((e) => e.warnings))];
  if (notes.length) s += '\nNotes\n' + notes.map((n) => `  - ${n}\n`).join('');
  s += '\nPrices and sources\n' + priceLines(r).map((l) => `  - ${l}\n`).join('');
  return s;
}

/** A config path, or REF:PATH read from git (`tpu-ready cost diff main:config.yaml config.yaml`). */
function readJobFile(spec: string, cwd: string): { file: ConfigFile; abs: string } {
  const abs = path.resolve(cwd, spec);
  if (fs.existsSync(abs) || !/^[\w./~^@{}-]+:[^:]+$/.test(spec)) return { file: readConfig(abs, rel(cwd, abs)), abs };
  const [ref, p] = [spec.slice(0, spec.indexOf(':')), spec.slice(spec.indexOf(':') + 1)];
  const r = spawnSync('git', ['show', `${ref}:${p}`], { cwd, encoding: 'utf8', maxBuffer: MAX_CONFIG_CHARS * 4 });
  if (r.status !== 0) throw new UsageError(`${spec}: no such file, and git cannot show it (${(r.stderr || 'git failed').trim().split('\n')[0]})`);
  // the display name keeps the revision; the format comes from the path
  return { file: { path: `${ref}:${p}`.replace(/\\/g, '/'), text: r.stdout }, abs: path.resolve(cwd, p) };
}

async function reportOf(job: string[], parsed: CostArgs, cwd: string, wasmDir: string): Promise<CostReport> {
  const read = job.map((p) => readJobFile(p, cwd));
  const configs = read.map((x) => x.file);
  if (configs.some((c) => formatOf(c.path) === 'python')) await initParser(wasmDir);
  for (const c of configs) if (!formatOf(c.path)) throw new UsageError(`${c.path}: not a YAML, JSON, TOML or Python config`);
  const first = read[0].abs;
  const folder = configs.some((c) => /\.ya?ml$/.test(c.path) && /^defaults\s*:/m.test(c.text)) ? hydraFolder(first, cwd) : [];
  return estimateFromFiles({ configs, folder, assumptionFiles: assumptionFiles(path.dirname(first), cwd), overrides: parsed.overrides, today: parsed.today, datasetMeta: datasetMetaFor(configs, first, cwd) });
}

export interface DiffRow { hardware: string; slice: string; pricing: string; a: { cost: number | null; hours: number; low: number | null; high: number | null }; b: { cost: number | null; hours: number; low: number | null; high: number | null }; deltaCost: number | null; deltaHours: number; currency: string }

export function costDiff(a: CostReport, b: CostReport) {
  const rows: DiffRow[] = [];
  for (const ea of a.estimates) {
    const eb = b.estimates.find((x) => x.hardware === ea.hardware && x.pricing === ea.pricing);
    if (!eb) continue;
    rows.push({
      hardware: ea.hardwareName, slice: ea.slice === eb.slice ? ea.slice : `${ea.slice} → ${eb.slice}`, pricing: ea.pricing,
      a: { cost: ea.cost, hours: ea.hours, low: ea.low.cost, high: ea.high.cost }, b: { cost: eb.cost, hours: eb.hours, low: eb.low.cost, high: eb.high.cost },
      deltaCost: ea.cost !== null && eb.cost !== null ? eb.cost - ea.cost : null, deltaHours: eb.hours - ea.hours, currency: ea.currency,
    });
  }
  return { version: 1, today: a.today, a: { files: a.config.files, tokens: a.tokens.value, params: a.params.value }, b: { files: b.config.files, tokens: b.tokens.value, params: b.params.value }, rows, label: 'estimate: B − A per hardware and pricing' };
}

const signed = (v: number | null, f: (x: number) => string) => (v === null ? 'n/a' : `${v >= 0 ? '+' : '−'}${f(Math.abs(v))}`);
function diffRows(d: ReturnType<typeof costDiff>): string[][] {
  return d.rows.map((r) => [
    `${r.hardware} (${r.slice})`, r.pricing,
    r.a.cost === null ? 'compute only' : moneyRange(r.a.low, r.a.high, r.currency), r.b.cost === null ? 'compute only' : moneyRange(r.b.low, r.b.high, r.currency),
    signed(r.deltaCost, (x) => moneyShort(x, r.currency)) + (r.deltaCost !== null && r.a.cost ? ` (${signed((r.deltaCost / r.a.cost) * 100, (x) => `${Number(x.toPrecision(2))}%`)})` : ''),
    signed(r.deltaHours, duration),
  ]);
}
const DIFF_HEADER = ['Hardware', 'Pricing', 'A', 'B', 'Δ cost', 'Δ time'];

export function diffText(d: ReturnType<typeof costDiff>): string {
  let s = `Cost diff (estimate, as of ${d.today})\n  A: ${d.a.files.join(', ')} (${fmtTokens(d.a.tokens)} tokens, ${fmtTokens(d.a.params)} parameters)\n  B: ${d.b.files.join(', ')} (${fmtTokens(d.b.tokens)} tokens, ${fmtTokens(d.b.params)} parameters)\n\n`;
  s += table([DIFF_HEADER, ...diffRows(d)]);
  return s;
}

export function diffMarkdown(d: ReturnType<typeof costDiff>): string {
  const esc = (x: string) => x.replace(/\|/g, '\\|');
  const out = [`# Training cost diff (tpu-ready)`, '', `*An estimate, as of ${d.today}: B − A.*`, '', `- A: ${d.a.files.map((f) => `\`${f}\``).join(', ')} (${fmtTokens(d.a.tokens)} tokens)`, `- B: ${d.b.files.map((f) => `\`${f}\``).join(', ')} (${fmtTokens(d.b.tokens)} tokens)`, ''];
  out.push(`| ${DIFF_HEADER.join(' | ')} |`, `|${DIFF_HEADER.map(() => '---').join('|')}|`, ...diffRows(d).map((r) => `| ${r.map(esc).join(' | ')} |`));
  return out.join('\n') + '\n';
}

const fmtTokens = (n: number) => sig(n, 2);

/** nanoGPT `dataset = 'x'`: data/x/meta.pkl beside the config's repository (config/…/ → the repo root), else under cwd. */
function datasetMetaFor(configs: ConfigFile[], firstAbs: string, cwd: string): { path: string; bytes: Uint8Array } | undefined {
  const m = configs.map((c) => /^dataset\s*=\s*['"]([\w.-]+)['"]/m.exec(c.text)?.[1]).find(Boolean);
  if (!m) return undefined;
  const dir = path.dirname(firstAbs);
  for (const root of [dir, path.dirname(dir), cwd]) {
    const p = path.join(root, 'data', m, 'meta.pkl');
    try {
      const st = fs.statSync(p);
      if (st.isFile() && st.size <= 64 * 1024 * 1024) return { path: rel(cwd, p), bytes: fs.readFileSync(p) };
    } catch {
      // not there
    }
  }
  return undefined;
}

function today(): string {
  return new Date().toISOString().slice(0, 10);
}

export async function runCost(argv: string[], io: Io, wasmDir: string): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(COST_HELP);
    return 0;
  }
  const diff = argv[0] === 'diff';
  const args = diff ? argv.slice(1) : argv;
  let parsed: CostArgs;
  try {
    parsed = parseCostArgs(args, today());
  } catch (e) {
    if (e instanceof UsageError || e instanceof CostConfigError) {
      io.err(`tpu-ready cost: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const cwd = process.cwd();
  const reports: CostReport[] = [];
  const priced: PricedFinding[][] = [];
  try {
    if (diff) {
      if (parsed.paths.length !== 2) throw new UsageError('cost diff needs two configs: tpu-ready cost diff A B (a path, or REF:PATH for a git revision)');
      for (const p of parsed.paths) reports.push(await reportOf([p], parsed, cwd, wasmDir));
    } else {
      let jobs: string[][];
      if (parsed.paths.length) jobs = [parsed.paths];
      else {
        if (fs.readdirSync(cwd).length) await initParser(wasmDir);
        jobs = discover(cwd, io).map((j) => j.map((abs) => rel(cwd, abs)));
        if (!jobs.length) {
          io.err(`tpu-ready cost: no training config found under ${cwd} (name one: tpu-ready cost CONFIG)\n`);
          return 2;
        }
      }
      const measured = parsed.evidence.length ? measuredStep(parsed, cwd) : null;
      for (const job of jobs) {
        let r = await reportOf(job, parsed, cwd, wasmDir);
        if (measured) {
          const m = measuredThroughput(measured, r);
          if (typeof m === 'string') io.err(`tpu-ready cost: --evidence: ${m}\n`);
          else r = await reportOf(job, { ...parsed, overrides: { ...parsed.overrides, tokensPerSecondPerChip: { ...parsed.overrides.tokensPerSecondPerChip, [m.hw]: m.value } } }, cwd, wasmDir);
        }
        reports.push(r);
      }
      if (parsed.findings.length) for (const r of reports) priced.push(await pricedFindingsOf(parsed.findings.map((p) => path.resolve(cwd, p)), r, cwd, wasmDir, io, parsed.evidence.map((p) => path.resolve(cwd, p))));
    }
  } catch (e) {
    if (e instanceof MissingValuesError) {
      io.err(`tpu-ready cost: cannot estimate from ${e.files.join(', ') || 'the config'}:\n${e.missing.map((m) => `  - ${m.message}: ${m.howToSupply}\n`).join('')}`);
      return 2;
    }
    if (e instanceof UsageError || e instanceof CostConfigError) {
      io.err(`tpu-ready cost: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (diff) {
    const d = costDiff(reports[0], reports[1]);
    io.out(parsed.format === 'json' ? JSON.stringify(d, null, 2) + '\n' : parsed.format === 'markdown' ? diffMarkdown(d) : diffText(d));
    return 0;
  }
  if (parsed.format === 'json') {
    const json = reports.map((r, i) => (parsed.findings.length ? { ...reportJson(r), pricedFindings: priced[i] } : reportJson(r)));
    const body = json.length === 1 ? json[0] : { version: 1, jobs: json };
    io.out(JSON.stringify(body, null, 2) + '\n');
  } else if (parsed.format === 'markdown') {
    io.out(reports.map(toMarkdown).join('\n---\n\n'));
  } else {
    io.out(reports.map((r, i) => formatText(r) + formatFindings(priced[i] ?? [])).join('\n'));
  }
  return 0;
}
