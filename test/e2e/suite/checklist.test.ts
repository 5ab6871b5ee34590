import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as vscode from 'vscode';
import { waitFor, wsPath, wsUri } from './helpers';

describe('migration checklist', () => {
  it('ticking an item writes .tpu-ready/progress.json (merge-friendly, every step present) and keeps notes made by hand', async () => {
    const file = wsPath('.tpu-ready', 'progress.json');
    fs.mkdirSync(wsPath('.tpu-ready'), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ version: 1, steps: { '4': { note: 'bucket to 128/256/512', ticks: {} } }, reviewer: 'ana' }));
    assert.equal(await vscode.commands.executeCommand('tpuReady.toggleStepItem', 2, 'smoke-passed', true), true);
    const text = fs.readFileSync(file, 'utf8');
    const p = JSON.parse(text);
    assert.deepEqual(Object.keys(p.steps), ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
    assert.deepEqual(p.steps['2'].ticks, { 'smoke-passed': true });
    assert.equal(p.steps['4'].note, 'bucket to 128/256/512');
    assert.equal(p.reviewer, 'ana');
    // a malformed file is reported and never overwritten
    fs.writeFileSync(file, '{"steps": ');
    assert.equal(await vscode.commands.executeCommand('tpuReady.toggleStepItem', 1, 'host', true), false);
    assert.equal(fs.readFileSync(file, 'utf8'), '{"steps": ');
    fs.writeFileSync(file, text);
  });

  it('exports the readiness report with the scanned findings linked to the code', async () => {
    await vscode.commands.executeCommand('tpuReady.scanWorkspace');
    const target = wsUri('out', 'report.md');
    fs.mkdirSync(wsPath('out'), { recursive: true });
    const written = await vscode.commands.executeCommand<vscode.Uri>('tpuReady.exportReport', 'md', target);
    assert.equal(written?.toString(), target.toString());
    const md = fs.readFileSync(target.fsPath, 'utf8');
    assert.match(md, /\*\*Readiness score:\*\* \d+\/100/);
    assert.match(md, /\| 3\. Move model to the XLA device \| \[[ ~]\] (to do|in progress) \| [1-9]\d* \|/);
    // a scanned error finding is listed with a link to its line (earlier tests may have fixed train.py: take one that is open now)
    const [uri, diags] = vscode.languages
      .getDiagnostics()
      .find(([u, ds]) => u.path.endsWith('.py') && ds.some((d) => d.source === 'tpu-ready' && d.severity === vscode.DiagnosticSeverity.Error)) ?? [];
    assert.ok(uri && diags, 'the scan found an error somewhere in the workspace');
    const d = diags.find((x) => x.source === 'tpu-ready' && x.severity === vscode.DiagnosticSeverity.Error)!;
    const rel = vscode.workspace.asRelativePath(uri, false);
    const code = typeof d.code === 'object' ? d.code.value : d.code;
    const line = d.range.start.line + 1;
    const plain = md.replace(/\\(.)/g, '$1'); // Markdown escapes (train\_dual.py)
    assert.ok(plain.includes(`[${rel}:${line}:`) && plain.includes(`(../${rel}#L${line}) error [${code}]`), `report links ${rel}:${line} ${code}`);
  });

  it('the generators write the smoke test and the CI workflow, and the checklist sees them as evidence', async () => {
    const smoke = await vscode.commands.executeCommand<vscode.Uri>('tpuReady.createSmokeTest');
    assert.ok(smoke && fs.existsSync(smoke.fsPath));
    assert.match(fs.readFileSync(smoke.fsPath, 'utf8'), /xr\.global_runtime_device_count\(\)/);
    const wf = await vscode.commands.executeCommand<vscode.Uri>('tpuReady.createCiWorkflow');
    assert.ok(wf && fs.readFileSync(wf.fsPath, 'utf8').includes('tpu-ready check --format sarif'));
    const out = wsUri('out', 'report2.md');
    await waitFor(async () => {
      await vscode.commands.executeCommand('tpuReady.exportReport', 'md', out);
      const md = fs.readFileSync(out.fsPath, 'utf8');
      return md.includes('- [x] The project has a TPU smoke test') && md.includes('- [x] A CI workflow runs tpu-ready');
    }, 'the smoke test and CI workflow as met evidence in the report', 20_000);
  });
});
