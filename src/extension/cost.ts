/**
 * Editor glue of the cost estimator: the code lens on training configs and the palette command
 * "TPU Readiness: Estimate Training Cost". Everything it shows comes from src/cost (buildCostVM); this
 * file only reads documents and files, asks the quick picks and shows the result.
 */
import * as vscode from 'vscode';
import { exists, readText as readFileText } from './files';
import { initParser } from '../core/parse';
import {
  CostConfigError, FINDING_ASSUMPTIONS, HARDWARE, HARDWARE_IDS, buildCostVM, estimateFromFiles, formatOf, money, parseHardwareList, parsePricingList, priceRange, type Price,
  pricedFindingsVM, sniff, type Assumptions, type ConfigFile, type CostReport, type CostVM, type Estimate, type HardwareId, type PanelFinding, type Pricing,
} from '../cost';
import type { PricedFindingsVM } from '../protocol/cost';
import { PricedFindingHover } from './costHover';
import { CommandId } from './commands';
import { CostLensProvider } from './costLens';
import { measuredThroughput, type MeasuredStep } from '../cost/measured';

const MAX_CHARS = 1_000_000;
const NOT_CONFIGS = /(^|\/)(pyproject\.toml|package(-lock)?\.json|tsconfig\.json|cost\.toml|settings\.json|launch\.json|tasks\.json|extensions\.json|\.?[\w-]*lock[\w-]*\.(json|yaml))$/;
/** nanoGPT-style globals or HF argument calls: a cheap test before parsing a Python file. */
const PY_HINT = /^(block_size|max_iters|gradient_accumulation_steps|n_layer|n_embd|batch_size)\s*=|TrainingArguments\(/gm;

export interface CostEstimateOptions {
  /** false: no quick picks (the lens click); the config's defaults and assumptions as they are. */
  ask?: boolean;
  hardware?: string[];
  chips?: number;
  pricing?: string[];
}

/** A config or assumptions file's text; unreadable files read as empty (they estimate nothing). */
const readTextOrEmpty = async (uri: vscode.Uri) => (await readFileText(uri)) ?? '';
const today = () => new Date().toISOString().slice(0, 10);
const rel = (uri: vscode.Uri) => vscode.workspace.asRelativePath(uri, false);


export interface WorkspaceEstimate {
  report: CostReport;
  estimate: Estimate;
  /** Workspace-relative path of the config. */
  config: string;
}

export class CostService implements vscode.Disposable {
  readonly lens: CostLensProvider;
  private readonly known = new Set<string>();
  /** The newest profiling run's measured step time, or why it has none; null without a run (set by activate.ts). */
  private measured: () => MeasuredStep | string | null = () => null;

  constructor(private readonly wasmDir: string) {
    this.lens = new CostLensProvider((doc) => this.vmOfDocument(doc));
  }

  private isCandidate(doc: vscode.TextDocument): boolean {
    if (doc.uri.scheme !== 'file' && doc.uri.scheme !== 'untitled') return false;
    const p = doc.uri.path;
    if (!formatOf(p) || NOT_CONFIGS.test(p) || doc.getText().length > MAX_CHARS) return false;
    if (formatOf(p) === 'python') return (doc.getText().match(PY_HINT)?.length ?? 0) >= 2;
    return true;
  }

  /** The files an estimate of `uri` reads: its Hydra folder and the assumptions files above it. */
  private async context(uri: vscode.Uri, text: string): Promise<{ folder: ConfigFile[]; assumptionFiles: ConfigFile[] }> {
    const folder: ConfigFile[] = [];
    if (/\.ya?ml$/.test(uri.path) && /^defaults\s*:/m.test(text)) {
      const dir = vscode.Uri.joinPath(uri, '..');
      for (const f of await vscode.workspace.findFiles(new vscode.RelativePattern(dir, '**/*.{yaml,yml}'), '**/node_modules/**', 500)) {
        folder.push({ path: rel(f), text: await readTextOrEmpty(f) });
      }
    }
    const assumptionFiles: ConfigFile[] = [];
    const root = vscode.workspace.getWorkspaceFolder(uri)?.uri;
    let pyproject: vscode.Uri | undefined;
    let costToml: vscode.Uri | undefined;
    for (let dir = vscode.Uri.joinPath(uri, '..'), i = 0; i < 32; i++) {
      const p = vscode.Uri.joinPath(dir, 'pyproject.toml');
      const c = vscode.Uri.joinPath(dir, '.tpu-ready', 'cost.toml');
      if (!pyproject && (await exists(p))) pyproject = p;
      if (!costToml && (await exists(c))) costToml = c;
      if (!root || dir.toString() === root.toString()) break;
      const up = vscode.Uri.joinPath(dir, '..');
      if (up.toString() === dir.toString()) break;
      dir = up;
    }
    for (const f of [pyproject, costToml]) if (f) assumptionFiles.push({ path: rel(f), text: await readTextOrEmpty(f) });
    return { folder, assumptionFiles };
  }

  /** The view model for a document, or null when it is not a training config. */
  async vmOfDocument(doc: vscode.TextDocument, overrides?: Partial<Assumptions>): Promise<CostVM | null> {
    const file: ConfigFile = { path: rel(doc.uri), text: doc.getText() };
    try {
      const report = await this.reportOfDocument(doc, overrides);
      return report ? buildCostVM({ report, forFile: file.path }) : null;
    } catch (e) {
      // a file that was a config and no longer parses shows why; an unrelated malformed file shows nothing
      if (!(e instanceof CostConfigError) || (!this.known.has(doc.uri.toString()) && !/contradictory|cannot estimate|must be/.test(e.message))) return null;
      return buildCostVM({ error: e, files: [file.path] });
    }
  }

  /** The cost report of a training config, null when the document is not one. Throws CostConfigError. */
  async reportOfDocument(doc: vscode.TextDocument, overrides?: Partial<Assumptions>): Promise<CostReport | null> {
    if (!this.isCandidate(doc)) return null;
    const key = doc.uri.toString();
    const file: ConfigFile = { path: rel(doc.uri), text: doc.getText() };
    if (formatOf(file.path) === 'python') await initParser(this.wasmDir);
    const ctx = await this.context(doc.uri, file.text);
    if (!sniff(file, ctx.folder).length) {
      this.known.delete(key);
      return null;
    }
    this.known.add(key);
    const req = { configs: [file], folder: ctx.folder, assumptionFiles: ctx.assumptionFiles, overrides, today: today(), datasetMeta: await datasetMeta(doc.uri, file.text) };
    const report = estimateFromFiles(req);
    const step = this.measured();
    if (!step) return report;
    // the newest run's step time on its TPU replaces the modelled throughput there, as `cost --evidence` does
    const m = measuredThroughput(step, report);
    if (typeof m === 'string') return { ...report, warnings: [...report.warnings, `Profiling run not used: ${m}`] };
    return estimateFromFiles({ ...req, overrides: { ...overrides, tokensPerSecondPerChip: { ...overrides?.tokensPerSecondPerChip, [m.hw]: m.value } } });
  }

  /** The cost views use the newest profiling run's step time from now on: estimates again as it changes. */
  useMeasuredStep(source: () => MeasuredStep | string | null, onChange: vscode.Event<void>): vscode.Disposable {
    this.measured = source;
    return onChange(() => {
      this.invalidate();
      this.lens.refresh();
    });
  }

  private readonly workspaceEstimates = new Map<string, Promise<WorkspaceEstimate | null>>();

  /**
   * The estimate priced findings refer to: the workspace folder's first training config that
   * estimates cleanly, on its first priced hardware and pricing. Cached until a config is saved.
   */
  workspaceEstimate(uri: vscode.Uri): Promise<WorkspaceEstimate | null> {
    const folder = vscode.workspace.getWorkspaceFolder(uri);
    const key = folder?.uri.toString() ?? '';
    let hit = this.workspaceEstimates.get(key);
    if (!hit) {
      hit = (async () => {
        const pattern = folder ? new vscode.RelativePattern(folder, '**/*.{yaml,yml,json,toml,py}') : '**/*.{yaml,yml,json,toml,py}';
        const uris = (await vscode.workspace.findFiles(pattern, '**/{node_modules,.git,.venv,venv,dist,build}/**', 400)).sort((a, b) => a.path.localeCompare(b.path));
        for (const u of uris) {
          if (!formatOf(u.path) || NOT_CONFIGS.test(u.path)) continue;
          try {
            const report = await this.reportOfDocument(await vscode.workspace.openTextDocument(u));
            const estimate = report?.estimates.find((e) => e.cost !== null) ?? report?.estimates[0];
            if (report && estimate) return { report, estimate, config: rel(u) };
          } catch {
            // not a usable config: try the next one
          }
        }
        return null;
      })();
      this.workspaceEstimates.set(key, hit);
    }
    return hit;
  }

  /**
   * The panel's priced findings: the findings with an impact model, priced on the workspace folder's
   * training config (as the hover prices them); null when none can be priced or there is no config.
   */
  async pricedFindings(uri: vscode.Uri, findings: PanelFinding[]): Promise<PricedFindingsVM | null> {
    const priceable = findings.filter((f) => FINDING_ASSUMPTIONS[f.rule]);
    if (!priceable.length) return null;
    const ws = await this.workspaceEstimate(uri);
    return ws ? pricedFindingsVM(priceable, ws.report, ws.estimate, ws.config) : null;
  }

  private readonly invalidated = new vscode.EventEmitter<void>();
  /** Fires when a config or an assumptions file was saved: priced findings may have changed. */
  readonly onDidInvalidate = this.invalidated.event;

  /** Forget cached workspace estimates (a config or an assumptions file changed). */
  invalidate(): void {
    this.workspaceEstimates.clear();
    this.invalidated.fire();
  }

  private async pickConfig(): Promise<vscode.TextDocument | undefined> {
    const active = vscode.window.activeTextEditor?.document;
    if (active && (await this.vmOfDocument(active))) return active;
    const found: vscode.Uri[] = [];
    for (const uri of await vscode.workspace.findFiles('**/*.{yaml,yml,json,toml,py}', '**/{node_modules,.git,.venv,venv,dist,build}/**', 400)) {
      const doc = await vscode.workspace.openTextDocument(uri);
      if (await this.vmOfDocument(doc)) found.push(uri);
    }
    if (!found.length) {
      void vscode.window.showWarningMessage('TPU Readiness: no training config found (YAML, JSON, TOML or Python with batch, sequence length and steps).');
      return undefined;
    }
    if (found.length === 1) return vscode.workspace.openTextDocument(found[0]);
    const pick = await vscode.window.showQuickPick(found.map((u) => ({ label: rel(u), uri: u })), { placeHolder: 'Which training config?' });
    return pick && vscode.workspace.openTextDocument(pick.uri);
  }

  /** The palette command: quick picks prefilled from the config, then the result. Returns the view model. */
  async estimate(uri?: vscode.Uri, opts: CostEstimateOptions = {}): Promise<CostVM | undefined> {
    const doc = uri instanceof vscode.Uri ? await vscode.workspace.openTextDocument(uri) : await this.pickConfig();
    if (!doc) return undefined;
    const base = await this.vmOfDocument(doc);
    if (!base) {
      void vscode.window.showWarningMessage(`TPU Readiness: ${rel(doc.uri)} is not a training config the estimator reads.`);
      return undefined;
    }
    if (base.status !== 'ok') {
      await this.show(base);
      return base;
    }
    const src = { kind: 'flag' as const, flag: 'editor' };
    const overrides: Partial<Assumptions> = {};
    const given = opts.hardware || opts.chips || opts.pricing;
    if (given) {
      if (opts.hardware) overrides.hardware = { value: parseHardwareList(opts.hardware, 'hardware'), source: src };
      if (opts.chips) overrides.chips = { value: opts.chips, source: src };
      if (opts.pricing) overrides.pricing = { value: parsePricingList(opts.pricing, 'pricing'), source: src };
    } else if (opts.ask !== false) {
      const hw = await vscode.window.showQuickPick(
        HARDWARE_IDS.map((id) => ({ label: id, description: HARDWARE[id].name, detail: `on-demand ${priceLabel(HARDWARE[id], 'on-demand')} · spot ${priceLabel(HARDWARE[id], 'spot')} per chip-hour`, picked: base.defaults.hardware.includes(id) })),
        { canPickMany: true, title: 'Estimate Training Cost (1/3)', placeHolder: 'Hardware to compare' },
      );
      if (!hw?.length) return undefined;
      const chips = await vscode.window.showInputBox({
        title: 'Estimate Training Cost (2/3)', prompt: 'Chips (GPUs) per estimate', value: String(base.defaults.chips),
        validateInput: (v) => (/^[1-9]\d*$/.test(v.trim()) ? null : 'a whole number of chips'),
      });
      if (!chips) return undefined;
      const pricing = await vscode.window.showQuickPick(
        (['on-demand', 'spot'] as Pricing[]).map((p) => ({ label: p, picked: base.defaults.pricing.includes(p) })),
        { canPickMany: true, title: 'Estimate Training Cost (3/3)', placeHolder: 'Pricing' },
      );
      if (!pricing?.length) return undefined;
      overrides.hardware = { value: hw.map((h) => h.label as HardwareId), source: src };
      overrides.chips = { value: Number(chips), source: src };
      overrides.pricing = { value: pricing.map((p) => p.label as Pricing), source: src };
    }
    const vm = (await this.vmOfDocument(doc, overrides)) ?? base;
    await this.show(vm);
    return vm;
  }

  /** Shows the result: in the integration panel when it offers `tpuReady.showCostPanel`, else as a Markdown preview. */
  private async show(vm: CostVM): Promise<void> {
    const commands = await vscode.commands.getCommands(true);
    if (commands.includes('tpuReady.showCostPanel')) {
      await vscode.commands.executeCommand('tpuReady.showCostPanel', vm);
      return;
    }
    const content = vm.status === 'ok' ? vm.markdown : `# Training cost estimate\n\n${vm.error?.message ?? vm.missing.map((m) => `- ${m.message}: ${m.howToSupply}`).join('\n')}\n`;
    const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content });
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: true });
    if (commands.includes('markdown.showPreview')) await vscode.commands.executeCommand('markdown.showPreview', doc.uri);
  }

  dispose(): void {
    this.lens.dispose();
    this.invalidated.dispose();
  }
}

/** Registers the cost lens and the "Estimate Training Cost" command (called once from activate.ts). */
export function registerCost(context: vscode.ExtensionContext): CostService {
  const service = new CostService(vscode.Uri.joinPath(context.extensionUri, 'dist').fsPath);
  const register = (id: CommandId, fn: (...args: never[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  context.subscriptions.push(service, vscode.languages.registerCodeLensProvider({ pattern: '**/*.{yaml,yml,json,toml,py}' }, service.lens));
  register(CommandId.EstimateCost, (uri?: vscode.Uri, opts?: CostEstimateOptions) => service.estimate(uri, opts));
  // priced findings: the hover of a hot-loop finding estimates its time and cost on the workspace's run
  context.subscriptions.push(
    vscode.languages.registerHoverProvider([{ language: 'python' }, { notebookType: 'jupyter-notebook', language: 'python' }], new PricedFindingHover(service)),
    vscode.workspace.onDidSaveTextDocument((doc) => {
      if (formatOf(doc.uri.path) || doc.uri.path.endsWith('cost.toml')) service.invalidate();
    }),
  );
  return service;
}

/** "$1.20 (us-central1, 2026-11-01) – $1.56 (europe-west4)" or "not published". */
function priceLabel(hw: (typeof HARDWARE)[HardwareId], pricing: Pricing): string {
  const r = priceRange(hw, pricing);
  if (!r) return 'not published';
  const one = (p: Price) => `${money(p.usdPerChipHour)} (${p.region}, ${p.asOf})`;
  return r.min === r.max ? one(r.min) : `${one(r.min)} – ${one(r.max)}`;
}

/** nanoGPT `dataset = 'x'`: the bytes of data/x/meta.pkl beside the config's repository (read, never unpickled). */
async function datasetMeta(uri: vscode.Uri, text: string): Promise<{ path: string; bytes: Uint8Array } | undefined> {
  const name = /^dataset\s*=\s*['"]([\w.-]+)['"]/m.exec(text)?.[1];
  if (!name) return undefined;
  const dir = vscode.Uri.joinPath(uri, '..');
  for (const root of [dir, vscode.Uri.joinPath(dir, '..')]) {
    const meta = vscode.Uri.joinPath(root, 'data', name, 'meta.pkl');
    try {
      const st = await vscode.workspace.fs.stat(meta);
      if (st.size > 64 * 1024 * 1024) continue;
      return { path: rel(meta), bytes: await vscode.workspace.fs.readFile(meta) };
    } catch {
      // not there
    }
  }
  return undefined;
}
