import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as vscode from 'vscode';
import { EXTENSION_ID, closeAll, codeActions, codeOf, open, ours, setSetting, sleep, waitDiagnostics, waitFor, withCode, wsPath, wsUri } from './helpers';

const fixTitles = async (uri: vscode.Uri) => {
  const d = await waitDiagnostics(uri, (ds) => ds.some((x) => codeOf(x) === 'TPU101'), `TPU101 on ${uri.path}`);
  const first = d.find((x) => codeOf(x) === 'TPU101')!;
  return (await codeActions(uri, first.range)).map((a) => a.title);
};

describe('settings and pyproject.toml configuration', () => {
  afterEach(async () => {
    await vscode.commands.executeCommand('workbench.action.files.revert');
    await closeAll();
  });

  it('tpuReady.ignore in the settings takes effect', async () => {
    const uri = wsUri('train.py');
    await open(uri);
    await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 2, 'two TPU101');
    await setSetting('ignore', ['TPU101']);
    try {
      await waitFor(() => withCode(uri, 'TPU101').length === 0, 'TPU101 ignored through the setting');
    } finally {
      await setSetting('ignore', undefined);
    }
    await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 2, 'TPU101 back');
  });

  it('[tool.tpu-ready] wins over the settings, and the nearest pyproject.toml applies', async () => {
    await setSetting('fixStyle', 'dual-path');
    try {
      // root pyproject.toml: fix-style = "tpu-only" beats the dual-path setting
      await open(wsUri('train.py'));
      assert.ok((await fixTitles(wsUri('train.py'))).includes('Replace `.cuda()` with `.to(torch_xla.device())`'));
      // dualpath/pyproject.toml: its own fix-style = "dual-path"
      await open(wsUri('dualpath', 'train_dual.py'));
      assert.ok((await fixTitles(wsUri('dualpath', 'train_dual.py'))).includes('Replace `.cuda()` with `.to(accel.device())`'));
    } finally {
      await setSetting('fixStyle', undefined);
    }
  });

  it('editing pyproject.toml re-analyses the open files', async () => {
    const uri = wsUri('train.py');
    await open(uri);
    await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 2, 'two TPU101');
    const file = wsPath('pyproject.toml');
    const before = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, before.replace('[tool.tpu-ready]\n', '[tool.tpu-ready]\nignore = ["TPU1"]\n'));
    try {
      await waitFor(() => withCode(uri, 'TPU101').length === 0, 'TPU1xx ignored through pyproject.toml');
    } finally {
      fs.writeFileSync(file, before);
    }
    await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 2, 'TPU101 back after restoring pyproject.toml', 30_000);
  });

  it('problems in [tool.tpu-ready] show on pyproject.toml at their line, follow the file and clear when fixed', async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)?.activate();
    const uri = wsUri('pyproject.toml');
    const file = wsPath('pyproject.toml');
    const configProblems = () => ours(uri).filter((d) => codeOf(d).startsWith('config'));
    const before = fs.readFileSync(file, 'utf8');
    assert.equal(configProblems().length, 0, 'the fixture configuration is clean');
    const bad = before.replace('[tool.tpu-ready]\n', '[tool.tpu-ready]\nbogus-key = 1\n');
    const badLine = bad.split('\n').indexOf('bogus-key = 1');
    assert.ok(badLine > 0);
    fs.writeFileSync(file, bad);
    try {
      const d = (await waitDiagnostics(uri, (ds) => ds.some((x) => x.message.includes('unknown key "bogus-key"')), 'the unknown key on pyproject.toml', 30_000)).find((x) => x.message.includes('bogus-key'))!;
      assert.equal(d.message, '[tool.tpu-ready] unknown key "bogus-key"');
      assert.equal(d.source, 'tpu-ready');
      assert.equal(d.severity, vscode.DiagnosticSeverity.Warning);
      assert.deepEqual([d.range.start.line, d.range.start.character, d.range.end.character], [badLine, 0, 'bogus-key = 1'.length]);
      // invalid TOML: an error at the parser's line
      fs.writeFileSync(file, before.replace('[tool.tpu-ready]\n', '[tool.tpu-ready]\nselect = ["TPU1"\n'));
      const t = (await waitDiagnostics(uri, (ds) => ds.some((x) => x.message.includes('not valid TOML')), 'invalid TOML on pyproject.toml', 30_000)).find((x) => x.message.includes('not valid TOML'))!;
      assert.equal(t.severity, vscode.DiagnosticSeverity.Error);
      assert.equal(configProblems().length, 1, 'the unknown-key diagnostic was replaced');
    } finally {
      fs.writeFileSync(file, before);
    }
    await waitFor(() => configProblems().length === 0, 'the diagnostics cleared after restoring pyproject.toml', 30_000);
    // edited in the editor (not saved): the problem shows as you type, and goes when the edit is undone
    const editor = await open(uri);
    const header = editor.document.getText().split('\n').indexOf('[tool.tpu-ready]');
    await editor.edit((b) => b.insert(new vscode.Position(header + 1, 0), 'target = "gpu"\n'));
    const v = (await waitDiagnostics(uri, (ds) => ds.some((x) => x.message.includes('target must be')), 'the bad value while editing')).find((x) => x.message.includes('target must be'))!;
    assert.equal(v.range.start.line, header + 1);
    await vscode.commands.executeCommand('workbench.action.files.revert');
    await waitFor(() => configProblems().length === 0, 'cleared after reverting the edit');
  });

  it('exclude in [tool.tpu-ready] keeps a folder out', async () => {
    await open(wsUri('vendored', 'cuda_ext.py'));
    await open(wsUri('utils.py'));
    await waitDiagnostics(wsUri('utils.py'), (d) => d.length > 0, 'utils.py analysed');
    await sleep(500);
    assert.equal(ours(wsUri('vendored', 'cuda_ext.py')).length, 0);
  });

  it('tpuReady.run = onSave analyses on save only', async () => {
    const uri = wsUri('utils.py');
    const editor = await open(uri);
    await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 1, 'one TPU101');
    await setSetting('run', 'onSave');
    await sleep(800); // the settings change re-analyses open files once; let that settle before typing
    try {
      await editor.edit((b) => b.insert(new vscode.Position(editor.document.lineCount - 1, 0), 'z = torch.ones(1).cuda()\n'));
      await sleep(1000);
      assert.equal(withCode(uri, 'TPU101').length, 1, 'not analysed while typing');
      await editor.document.save();
      await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 2, 'analysed on save');
    } finally {
      await setSetting('run', undefined);
      fs.writeFileSync(wsPath('utils.py'), 'import torch\n\n\ndef to_gpu(batch):\n    return [t.cuda() for t in batch]\n');
    }
  });
});
