import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as vscode from 'vscode';
import { closeAll, codeOf, open, ours, report, sleep, waitDiagnostics, waitFor, withCode, wsPath, wsUri } from './helpers';

const TPU101_DOCS = 'https://github.com/tpu-ready/tpu-ready/blob/main/docs/rules/TPU101.md';

describe('diagnostics on a Python file', () => {
  const uri = wsUri('train.py');
  afterEach(async () => {
    await vscode.commands.executeCommand('workbench.action.files.revert');
  });

  it('reports each `.cuda()` call with source, code, docs link, severity and checklist step', async () => {
    await open(uri);
    const ds = await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 2, 'two TPU101');
    const cuda = ds.filter((d) => codeOf(d) === 'TPU101').sort((a, b) => a.range.start.compareTo(b.range.start));
    assert.deepEqual(
      cuda.map((d) => [d.range.start.line, d.range.start.character]),
      [[17, 12], [25, 19]],
    );
    for (const d of cuda) {
      assert.equal(d.source, 'tpu-ready');
      assert.deepEqual(d.code, { value: 'TPU101', target: vscode.Uri.parse(TPU101_DOCS) });
      assert.equal(d.severity, vscode.DiagnosticSeverity.Error);
      assert.match(d.message, /\.cuda\(\)` places work on a CUDA device/);
      assert.match(d.relatedInformation?.[0]?.message ?? '', /^Checklist step 3 of 10: Move model to the XLA device$/);
    }
    assert.match(cuda[0].message, /^`build_model\(\)\.cuda\(\)`/);
    // `x, y = x.cuda(), y.cuda()`: one finding on `x.cuda()`, `y.cuda()` a related location after the checklist step
    assert.equal(cuda[1].relatedInformation?.[1]?.message, 'also moved to CUDA in this statement');
    assert.deepEqual([cuda[1].relatedInformation?.[1]?.location.range.start.line, cuda[1].relatedInformation?.[1]?.location.range.start.character], [25, 29]);
  });

  it('updates as a line is edited, and never shows results of an older version', async () => {
    const editor = await open(uri);
    await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 2, 'two TPU101');
    const line = editor.document.lineAt(25);
    assert.equal(line.text.trim(), 'x, y = x.cuda(), y.cuda()');
    await editor.edit((b) => b.replace(line.range, '            x, y = x.to("cpu"), y.to("cpu")'));
    await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 1, 'one TPU101 after the edit');
    // several quick edits in a row (faster than the debounce): only the final text's findings appear
    for (let i = 0; i < 5; i++) await editor.edit((b) => b.insert(new vscode.Position(0, 0), '\n'));
    const ds = await waitDiagnostics(uri, (d) => d.some((x) => codeOf(x) === 'TPU101' && x.range.start.line === 17 + 5), 'findings moved down 5 lines');
    assert.deepEqual(
      ds.filter((d) => codeOf(d) === 'TPU101').map((d) => d.range.start.line).sort((a, b) => a - b),
      [22],
    );
  });

  it('clears the diagnostics when the file is closed', async () => {
    const extra = wsUri('closing.py');
    fs.writeFileSync(extra.fsPath, 'import torch\nx = torch.zeros(1).cuda()\n');
    // opened as a user would (an extension's openTextDocument keeps the document alive for minutes)
    await vscode.commands.executeCommand('vscode.open', extra);
    await waitDiagnostics(extra, (d) => d.length > 0, 'diagnostics on closing.py');
    await closeAll();
    await waitFor(() => ours(extra).length === 0, 'diagnostics cleared on close', 60_000);
  });

  it('reports on a 5,000-line file (time to first diagnostics printed)', async function () {
    this.timeout(180_000);
    const block = (i: number) => [
      `def step_${i}(model, batch, optimizer):`,
      `    x, y = batch`,
      `    x = x.cuda(non_blocking=True)`,
      `    y = y.cuda(non_blocking=True)`,
      `    loss = torch.nn.functional.cross_entropy(model(x), y)`,
      `    loss.backward()`,
      `    optimizer.step()`,
      `    optimizer.zero_grad()`,
      `    return loss`,
      ``,
    ];
    const lines = ['import torch', ''];
    for (let i = 0; lines.length < 5000; i++) lines.push(...block(i));
    const text = lines.slice(0, 5000).join('\n') + '\n';
    fs.writeFileSync(wsPath('big_train.py'), text);
    const big = wsUri('big_train.py');
    const t0 = Date.now();
    await open(big);
    const ds = await waitDiagnostics(big, (d) => d.length > 0, 'diagnostics on big_train.py', 150_000);
    report('first diagnostics after opening a 5,000-line file', Date.now() - t0);
    assert.ok(withCode(big, 'TPU101').length >= 900, `TPU101 on every block (got ${ds.length})`);
    // an edit re-parses incrementally and republishes
    const editor = vscode.window.activeTextEditor!;
    const t1 = Date.now();
    await editor.edit((b) => b.insert(new vscode.Position(2, 0), 'extra = torch.ones(1).cuda()\n'));
    await waitFor(() => withCode(big, 'TPU101').some((d) => d.range.start.line === 2), 'finding on the inserted line', 60_000);
    report('diagnostics after an edit in the 5,000-line file (debounce included)', Date.now() - t1);
    await vscode.commands.executeCommand('workbench.action.files.revert');
    await closeAll();
    await sleep(100);
    // leave the workspace as the other suites expect it (the scan and the report read every file)
    fs.rmSync(wsPath('big_train.py'), { force: true });
  });
});
