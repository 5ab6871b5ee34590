/** `tpu-ready cost [CONFIG...]`: training time and cost from the training config, with every source shown. */
import fs from 'node:fs';
import path from 'node:path';
import { initParser } from '../core/parse';
import {
  CostConfigError, ESTIMATE_HEADER, FRAMEWORK_LABELS, HARDWARE, MissingValuesError, assumptionList, configRows, describeSource,
  duration, estimateFromFiles, estimateRow, formatOf, parseHardwareList, parsePricingList, pct, reportJson, sig, sniff, toMarkdown,
  type Assumptions, type ConfigFile, type CostReport,
} from '../cost';
import { MAX_CONFIG_CHARS } from '../cost/readers/limits';
import { DEFAULT_OPTIONS } from '../core/types';
import { evidenceFindings, mergeEvidence, readLogs } from './evidence';
import type { OutFinding } from './process';
import { priceFindings, moneyShort, type PricedFinding } from '../cost';
import { processFile } from './process';
import { collectFiles, findProjectRoot } from './walk';
import type { Io } from './io';
import { eachArg, UsageError } from './args';

export const COST_HELP = `Usage: tpu-ready cost [CONFIG...] [options]

Estimates training time and cost on TPUs and GPUs from your training config (YAML, JSON, TOML or
Python globals; nanoGPT, HF, Lightning, Hydra, Accelerate, DeepSpeed, LitGPT, torchtitan). Without
CONFIG, finds the training configs under the working directory. Several CONFIGs are one job.
Assumptions: .tpu-ready/cost.toml or [tool.tpu-ready.cost] in pyproject.toml; flags win.

Options:
  --hardware LIST        v4, v5e, v5p, v6e, tpu7x, a100, h100 (default v5e,v6e,v5p,a100,h100)
  --chips N              chips (GPUs) per estimate (default: the config's device count, else 8)
  --pricing P            on-demand, spot or both comma-separated (default both)
  --mfu X                expected MFU; the band is 0.75X to 1.25X (default 0.4)
  --price P              price per chip-hour for the one --hardware (--pricing's, default on-demand)
  --format F             text (default), json or markdown
  --findings PATHS       also scan these files (comma-separated) and price their hot-loop findings
                         (host syncs, recompilations, step barrier, autocast) on the first estimate
  --evidence LOGS        with --findings: a PyTorch/XLA run's logs (comma-separated); measured host-read
                         and compile seconds, reads per step and distinct graphs replace the defaults
  --today YYYY-MM-DD     date for price staleness (default: today)
`;


export interface CostArgs {
  paths: string[];
  format: 'text' | 'json' | 'markdown';
  today: string;
  overrides: Partial<Assumptions>;
  findings: string[];
  /** Run logs whose measurements replace the priced findings' default assumptions (with --findings). */
  evidence: string[];
}

export function parseCostArgs(argv: string[], today: string): CostArgs {
  const a: CostArgs = { paths: [], format: 'text', today, overrides: {}, findings: [], evidence: [] };
  let price: number | undefined;
  let pricingGiven = false;
  eachArg(argv, (arg) => {
    const { flag } = arg;
    const value = arg.value;
    const number = arg.number;
    switch (flag) {
      case '--hardware':
        a.overrides.hardware = { value: parseHardwareList(value(), '--hardware'), source: { kind: 'flag', flag: '--hardware' } };
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
  if (a.evidence.length && !a.findings.length) throw new UsageError('--evidence needs --findings (the files whose findings the run measured)');
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
  s += `\nEstimates (expected MFU ${pct(r.assumptions.mfu.value)}; ranges from MFU ${pct(r.assumptions.mfuHigh.value)} to ${pct(r.assumptions.mfuLow.value)})\n`;
  s += table([ESTIMATE_HEADER, ...r.estimates.map(estimateRow)]);
  s += '\nBreakdown of the time (expected MFU)\n';
  s += table([['Slice', 'Pricing', 'Compute', 'Comm.', 'Input', 'Compile', 'Ckpt', 'Preempt'], ...r.estimates.map((e) => [e.slice, e.pricing, duration(e.breakdown.compute), duration(e.breakdown.communication), duration(e.breakdown.inputStall), duration(e.breakdown.compile), duration(e.breakdown.checkpoint), duration(e.breakdown.preemption)])]);
  const spot = r.estimates.find((e) => e.checkpoint.suggestedIntervalMinutes !== null);
  if (spot) s += `\nCheckpoint interval that minimises lost work on spot (Young/Daly √(2 × write × MTBP)): ${sig(spot.checkpoint.suggestedIntervalMinutes!)} min (assumed ${spot.checkpoint.intervalMinutes} min).\n`;
  const seen = new Set<string>();
  s += `\nMemory: ${sig(r.estimates[0].memory.bytes / 1e9)} GB of weights, gradients and optimizer state (${r.assumptions.bytesPerParam.value} bytes/parameter)\n`;
  for (const e of r.estimates) {
    if (seen.has(e.hardware)) continue;
    seen.add(e.hardware);
    s += `  ${HARDWARE[e.hardware].name}: ${e.memory.fits ? 'fits' : 'does NOT fit'} in ${e.slice}; smallest slice that fits: ${e.memory.smallestSlice?.name ?? 'none'}\n`;
  }
  const notes = [...r.warnings, ...new Set(r.estimates.flatMap((e) => e.warnings))];
  if (notes.length) s += '\nNotes\n' + notes.map((n) => `  - ${n}\n`).join('');
  return s;
}

function today(): string {
  return new Date().toISOString().slice(0, 10);
}

export async function runCost(args: string[], io: Io, wasmDir: string): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    io.out(COST_HELP);
    return 0;
  }
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
    let jobs: string[][];
    if (parsed.paths.length) jobs = [parsed.paths.map((p) => path.resolve(cwd, p))];
    else {
      if (fs.readdirSync(cwd).length) await initParser(wasmDir);
      jobs = discover(cwd, io);
      if (!jobs.length) {
        io.err(`tpu-ready cost: no training config found under ${cwd} (name one: tpu-ready cost CONFIG)\n`);
        return 2;
      }
    }
    for (const job of jobs) {
      const configs = job.map((abs) => readConfig(abs, rel(cwd, abs)));
      if (configs.some((c) => formatOf(c.path) === 'python')) await initParser(wasmDir);
      for (const c of configs) if (!formatOf(c.path)) throw new UsageError(`${c.path}: not a YAML, JSON, TOML or Python config`);
      const folder = configs.some((c) => /\.ya?ml$/.test(c.path) && /^defaults\s*:/m.test(c.text)) ? hydraFolder(job[0], cwd) : [];
      reports.push(estimateFromFiles({ configs, folder, assumptionFiles: assumptionFiles(path.dirname(job[0]), cwd), overrides: parsed.overrides, today: parsed.today }));
    }
    if (parsed.findings.length) for (const r of reports) priced.push(await pricedFindingsOf(parsed.findings.map((p) => path.resolve(cwd, p)), r, cwd, wasmDir, io, parsed.evidence.map((p) => path.resolve(cwd, p))));
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
