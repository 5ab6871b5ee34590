import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { EXTENSION_ID, closeAll, open, waitFor, wsPath, wsUri } from './helpers';

const EQ = '='.repeat(80);
const DASH = '-'.repeat(80);
/** A step barrier's block (debug_util.cpp l. 313-414 at v2.9.0), each line stamped as .tpu-ready/profile-run.sh stamps it. */
const barrier = (t: number, kind = 'Execution') =>
  ['', `${kind} Analysis: ${EQ}`, `${kind} Analysis: ${kind} Cause`, `${kind} Analysis:   user torch_xla.sync`, `${kind} Analysis: Graph Info: `, `${kind} Analysis:   Graph Hash: ${kind === 'Execution' ? 'h' : `c${t}`}`,
    `${kind} Analysis: Python Frame Triggered Execution: `, `${kind} Analysis:   train (/vm/proj/train.py:20)`, `${kind} Analysis: ${DASH}`, `${kind} Analysis: ${EQ}`].map((l) => `[tpu-ready ${t.toFixed(3)}] ${l}`);
/** A profiling run's log: one compiling step, then six steps 0.5 s apart; on `accelerator` when given. */
const stampedLog = (accelerator: string | null) =>
  [...(accelerator ? [`[tpu-ready 0.001] tpu-ready: accelerator-type ${accelerator}`] : []), ...barrier(9.99, 'Compilation'), ...[10, 10.5, 11, 11.5, 12, 12.5].flatMap((t) => barrier(t))].join('\n') + '\n';

interface VM {
  status: string;
  estimates: { hardware: string; pricing: string; display: { mfu: string } }[];
  assumptions: { key: string; source: { text: string } }[];
  warnings: string[];
}

/** Lenses VS Code collects for `uri` from every provider, ours filtered by their command. */
async function costLenses(uri: vscode.Uri): Promise<vscode.CodeLens[]> {
  const all = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 10)) ?? [];
  return all.filter((l) => l.command?.command === 'tpuReady.estimateCost');
}

describe('cost estimator', () => {
  before(async () => {
    // a YAML file alone does not activate the extension (Python files and notebooks do)
    await vscode.extensions.getExtension(EXTENSION_ID)?.activate();
  });

  afterEach(async () => {
    await closeAll();
  });

  it('the code lens appears above the sample config and updates as the file is edited', async () => {
    const uri = wsUri('cost', 'config.yaml');
    const editor = await open(uri);
    const [lens] = await waitFor(async () => {
      const ls = await costLenses(uri);
      return ls.length ? ls : undefined;
    }, 'the cost lens');
    // the range first, with the region and date of each price
    assert.match(lens.command!.title, /^≈ \$[\d,]+–\$[\d,]+ · [\d.]+–[\d.]+ days on v5e-8 \(us-central1, 2026-11-01\) · spot \$[\d,]+–\$[\d,]+ \(northamerica-northeast1, 2026-11-01\)$/);
    assert.match(lens.command!.tooltip ?? '', /on-demand \$1\.2\/chip-h us-central1 as of 2026-11-01/);
    assert.equal(lens.range.start.line, 5, 'above model.n_layer, the first key setting');
    assert.deepEqual(lens.command!.arguments?.[1], { ask: false });
    const before = lens.command!.title;
    const text = editor.document.getText();
    const at = text.indexOf('max_steps: 600000');
    assert.ok(at > 0);
    const edited = await editor.edit((e) => e.replace(new vscode.Range(editor.document.positionAt(at), editor.document.positionAt(at + 'max_steps: 600000'.length)), 'max_steps: 60000'));
    assert.ok(edited, 'the edit applied');
    let seen: string[] = [];
    const after = await waitFor(async () => {
      const ls = await costLenses(uri);
      seen = ls.map((l) => l.command!.title);
      return ls.length && ls[0].command!.title !== before ? ls[0].command!.title : undefined;
    }, 'the lens to follow the edit').catch((e: Error) => {
      throw new Error(`${e.message}; lenses: ${JSON.stringify(seen)}; line 15: ${editor.document.lineAt(14).text}`);
    });
    assert.match(after, /^≈ \$[\d,.]+–\$[\d,.]+ · [\d.]+–[\d.]+ (h|days) on v5e-8 \(us-central1, 2026-11-01\) · spot \$[\d,.]+(–\$[\d,.]+)? \(northamerica-northeast1, 2026-11-01\)$/);
  });

  it('Estimate Training Cost runs with the chosen hardware, chips and pricing and returns the estimate', async () => {
    const uri = wsUri('cost', 'config.yaml');
    const vm = await vscode.commands.executeCommand<{ status: string; estimates: { hardware: string; chips: number; pricing: string; cost: number | null; display: { price: string } }[]; fields: { key: string; source: { line?: number } }[]; markdown: string }>(
      'tpuReady.estimateCost', uri, { hardware: ['v6e', 'h100'], chips: 16, pricing: ['on-demand'] },
    );
    assert.ok(vm, 'the command returns the view model');
    assert.equal(vm.status, 'ok');
    assert.deepEqual(vm.estimates.map((e) => `${e.hardware}×${e.chips} ${e.pricing}`), ['v6e×16 on-demand', 'h100×16 on-demand']);
    assert.ok(vm.estimates.every((e) => typeof e.cost === 'number' && e.cost > 0));
    assert.equal(vm.fields.find((f) => f.key === 'globalBatch')?.source.line, 12);
    // what the panel shows: every price with its region, date and source
    assert.match(vm.estimates[0].display.price, /^\$2\.7\/chip-h us-central1 as of 2026-11-01 \(SkyPilot catalog/);
    assert.match(vm.estimates[1].display.price, /^\$5\.38\/chip-h us-central1 as of 2026-11-01/);
    assert.match(vm.markdown, /\$2\.70 us-central1, 2026-11-01/);
    // the result is shown: in the integration panel once it offers tpuReady.showCostPanel, else as a Markdown report beside the config
    await waitFor(
      () =>
        vscode.workspace.textDocuments.some((d) => d.languageId === 'markdown' && d.getText().startsWith('# Training cost estimate')) ||
        vscode.window.tabGroups.all.some((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.includes('tpuReady'))),
      'the result in the panel or a Markdown report',
    );
  });

  it('the hover of a hot-loop finding prices it on the workspace config, as an estimate with its assumptions', async () => {
    const uri = wsUri('train.py');
    await open(uri);
    const priced = await waitFor(
      () => vscode.languages.getDiagnostics(uri).find((d) => d.source === 'tpu-ready' && ['TPU204', 'TPU401', 'TPU201'].includes(String(typeof d.code === 'object' ? d.code.value : d.code))),
      'a priced hot-loop finding on train.py',
    );
    const text = await waitFor(async () => {
      const hovers = (await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri, priced.range.start)) ?? [];
      const all = hovers.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : '')));
      return all.find((t) => t.includes('estimated impact'));
    }, 'the priced-finding hover');
    assert.match(text, /cost\/config\.yaml/, 'names the config it prices against');
    assert.match(text, /≈ \+/, 'gives the added time (and cost)');
    assert.match(text, /Assumptions/, 'shows the editable assumptions');
    assert.match(text, /estimate, not a measurement/);
  });

  describe('with a profiling run in .tpu-ready/runs/', () => {
    const runs = () => wsPath('.tpu-ready', 'runs');
    after(() => fs.rmSync(runs(), { recursive: true, force: true }));

    it('the newest run\'s measured step time is the estimate on the TPU it ran on; a run that cannot be used says why', async function () {
      this.timeout(120_000);
      const uri = wsUri('cost', 'config.yaml');
      await open(uri);
      const tooltip = async () => (await costLenses(uri))[0]?.command?.tooltip ?? '';
      await waitFor(async () => /MFU [\d.]+% on /.test(await tooltip()), 'the modelled lens first');
      fs.mkdirSync(runs(), { recursive: true });
      const first = path.join(runs(), '2026-12-01T10-00-00Z.log');
      fs.writeFileSync(first, stampedLog('v5litepod-8'));
      await waitFor(async () => (await tooltip()).includes('measured tokens/s'), 'the lens to use the measured step time', 45_000).catch(async (e: Error) => {
        const now = await vscode.commands.executeCommand<VM>('tpuReady.estimateCost', uri, { ask: false });
        throw new Error(`${e.message}; lens: ${await tooltip()}; notes: ${JSON.stringify(now?.warnings)}; runs: ${fs.readdirSync(runs()).join(', ')}`);
      });
      const vm = await vscode.commands.executeCommand<VM>('tpuReady.estimateCost', uri, { ask: false });
      assert.equal(vm.status, 'ok');
      const v5e = vm.estimates.filter((e) => e.hardware === 'v5e');
      assert.ok(v5e.length, 'a v5e row');
      assert.ok(v5e.every((e) => e.display.mfu === 'measured tokens/s'), JSON.stringify(v5e.map((e) => e.display)));
      assert.ok(vm.estimates.filter((e) => e.hardware !== 'v5e').every((e) => e.display.mfu !== 'measured tokens/s'), 'only the TPU the run used');
      const measured = vm.assumptions.find((a) => a.key === 'tokens-per-second.v5e');
      assert.match(measured?.source.text ?? '', /measured in the run \(\.tpu-ready\/runs\/2026-12-01T10-00-00Z\.log:\d+\): median step 0\.5 s over 5 steps .* on v5e-8; 480 × 1024 tokens per step ÷ 8 chips/);
      // a newer run that does not say its TPU: modelled again, and the notes say why
      const second = path.join(runs(), '2026-12-01T11-00-00Z.log');
      fs.writeFileSync(second, stampedLog(null));
      const later = new Date(Date.now() + 5000);
      fs.utimesSync(second, later, later);
      await waitFor(async () => /MFU [\d.]+% on /.test(await tooltip()), 'the lens to model the throughput again', 45_000);
      const again = await vscode.commands.executeCommand<VM>('tpuReady.estimateCost', uri, { ask: false });
      assert.ok(again.estimates.every((e) => e.display.mfu !== 'measured tokens/s'));
      assert.ok(again.warnings.some((w) => /^Profiling run not used: step time 0\.5 s measured \(\.tpu-ready\/runs\/2026-12-01T11-00-00Z\.log:\d+\), but the log does not say which TPU it ran on/.test(w)), JSON.stringify(again.warnings));
    });
  });
});
