import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as vscode from 'vscode';
import { apply, closeAll, codeActions, codeOf, open, ours, read, waitDiagnostics, wsPath, wsUri } from './helpers';

describe('commands', () => {
  afterEach(async () => {
    await vscode.commands.executeCommand('workbench.action.files.revert');
    await closeAll();
  });

  it('Scan Workspace reports files that are not open in the Problems panel, and returns the summary', async () => {
    fs.writeFileSync(wsPath('scan_only.py'), 'import torch\n\nw = torch.zeros(2).cuda()\n');
    fs.copyFileSync(wsPath('notebook.ipynb'), wsPath('scan_nb.ipynb'));
    const summary = await vscode.commands.executeCommand<{ score: number; files: number; findings: number; scanned: number; cancelled: boolean }>('tpuReady.scanWorkspace');
    assert.ok(summary, 'the command returns a summary');
    assert.equal(summary.cancelled, false);
    assert.ok(summary.scanned >= 8, `scanned ${summary.scanned}`);
    assert.ok(summary.findings > 0 && summary.score >= 0 && summary.score < 100, JSON.stringify(summary));
    const py = ours(wsUri('scan_only.py'));
    assert.deepEqual(py.filter((d) => codeOf(d) === 'TPU101').map((d) => d.range.start.line), [2]);
    const nb = ours(wsUri('scan_nb.ipynb')).filter((d) => codeOf(d) === 'TPU101');
    assert.deepEqual(nb.map((d) => d.message.split(':')[0]).sort(), ['cell 4, line 2', 'cell 4, line 3']);
    assert.equal(ours(wsUri('vendored', 'cuda_ext.py')).length, 0, 'excluded folder not scanned');
  });

  it('Show Readiness returns the workspace score', async () => {
    const s = await vscode.commands.executeCommand<{ score: number; files: number }>('tpuReady.showReadiness');
    assert.ok(s && s.files > 0 && s.score >= 0 && s.score <= 100, JSON.stringify(s));
  });

  it('Fix All Safe Issues in This File applies the safe fixes and returns how many', async () => {
    fs.writeFileSync(wsPath('fix_cmd.py'), 'import torch\n\na = torch.zeros(1).cuda()\nb = torch.ones(1).cuda()\n');
    const uri = wsUri('fix_cmd.py');
    const editor = await open(uri);
    await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 2, 'two TPU101');
    const result = await vscode.commands.executeCommand<{ applied: number }>('tpuReady.fixAllInFile');
    assert.ok(result && result.applied >= 2, JSON.stringify(result));
    assert.equal(
      editor.document.getText(),
      'import torch\nimport torch_xla\n\na = torch.zeros(1).to(torch_xla.device())\nb = torch.ones(1).to(torch_xla.device())\n',
    );
  });

  it('a dual-path fix creates the accel module beside the file in the same edit', async () => {
    const uri = wsUri('dualpath', 'train_dual.py');
    assert.equal(fs.existsSync(wsPath('dualpath', 'accel.py')), false);
    await open(uri);
    const ds = await waitDiagnostics(uri, (d) => d.some((x) => codeOf(x) === 'TPU101'), 'TPU101');
    const actions = await codeActions(uri, ds[0].range);
    await apply(actions.find((a) => a.title === 'Replace `.cuda()` with `.to(accel.device())`'));
    assert.equal(vscode.window.activeTextEditor!.document.getText(), 'import torch\nimport accel\n\nmodel = torch.nn.Linear(4, 4).to(accel.device())\n');
    assert.ok(fs.existsSync(wsPath('dualpath', 'accel.py')), 'accel.py created');
    // its text is part of the same (unsaved, undoable) edit as the fix
    const accel = (await vscode.workspace.openTextDocument(wsUri('dualpath', 'accel.py'))).getText();
    assert.match(accel, /^"""Device abstraction/);
    assert.match(accel, /def device\(/);
    // already there: the command creates nothing
    assert.equal(await vscode.commands.executeCommand('tpuReady.createAccelModule', uri), undefined);
  });

  it('Create Device-Abstraction Module writes accel.py beside the file', async () => {
    const uri = wsUri('utils.py');
    await open(uri);
    const created = await vscode.commands.executeCommand<vscode.Uri>('tpuReady.createAccelModule', uri);
    assert.equal(created?.fsPath, wsPath('accel.py'));
    assert.match(read('accel.py'), /def device\(/, 'written to disk');
    await open(wsUri('accel.py'));
  });
});
