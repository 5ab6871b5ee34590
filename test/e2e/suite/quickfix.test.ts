import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { apply, closeAll, codeActions, codeOf, extensionsSettled, open, read, setSetting, waitDiagnostics, waitFor, withCode, wsUri } from './helpers';

describe('quick-fixes and fix-all on a Python file', () => {
  const uri = wsUri('train.py');
  let original = '';
  before(() => {
    original = read('train.py');
  });
  afterEach(async () => {
    await vscode.commands.executeCommand('workbench.action.files.revert');
    await closeAll();
  });

  async function firstCuda(): Promise<vscode.Diagnostic> {
    await open(uri);
    const ds = await waitDiagnostics(uri, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 2, 'two TPU101');
    return ds.find((d) => codeOf(d) === 'TPU101' && d.range.start.line === 17)!;
  }

  it('offers the fix, then Ignore, then Learn, in that order; the safe fix is preferred', async () => {
    const d = await firstCuda();
    const actions = await codeActions(uri, d.range);
    const titles = actions.map((a) => a.title);
    const fix = titles.indexOf('Replace `.cuda()` with `.to(torch_xla.device())`');
    const ignore = titles.indexOf('Ignore TPU101 on this line');
    const learn = titles.indexOf('Learn about TPU101');
    assert.ok(fix >= 0 && fix < ignore && ignore < learn, `order of ${JSON.stringify(titles)}`);
    assert.equal(actions[fix].isPreferred, true);
    assert.equal(actions[fix].kind?.value, 'quickfix');
    assert.deepEqual(actions[learn].command?.arguments, ['TPU101']);
    assert.equal(actions[learn].command?.command, 'tpuReady.openRuleDocs');
    assert.ok(titles.includes('Fix all TPU101 in this file'), `fix-all for the rule in ${JSON.stringify(titles)}`);
  });

  it('applying the fix changes exactly that call and adds the import once; one undo restores the file', async () => {
    const d = await firstCuda();
    const actions = await codeActions(uri, d.range);
    await apply(actions.find((a) => a.title === 'Replace `.cuda()` with `.to(torch_xla.device())`'));
    const doc = vscode.window.activeTextEditor!.document;
    const expected = original
      .replace('import torch\n', 'import torch\nimport torch_xla\n')
      .replace('model = build_model().cuda()', 'model = build_model().to(torch_xla.device())');
    assert.equal(doc.getText(), expected);
    await waitFor(() => withCode(uri, 'TPU101').length === 1, 'the fixed finding disappears');
    await vscode.commands.executeCommand('undo');
    assert.equal(doc.getText(), original);
  });

  it('"Ignore TPU101 on this line" adds the suppression comment and the finding goes away', async () => {
    const d = await firstCuda();
    const actions = await codeActions(uri, d.range);
    await apply(actions.find((a) => a.title === 'Ignore TPU101 on this line'));
    const doc = vscode.window.activeTextEditor!.document;
    assert.equal(doc.lineAt(17).text, '    model = build_model().cuda()  # tpu-ready: ignore[TPU101]');
    assert.equal(doc.getText(), original.replace('model = build_model().cuda()\n', 'model = build_model().cuda()  # tpu-ready: ignore[TPU101]\n'));
    await waitFor(() => withCode(uri, 'TPU101').length === 1 && !withCode(uri, 'TPU101').some((x) => x.range.start.line === 17), 'suppressed');
  });

  it('"Fix all TPU101 in this file" fixes every call with one import', async () => {
    const d = await firstCuda();
    const actions = await codeActions(uri, d.range);
    await apply(actions.find((a) => a.title === 'Fix all TPU101 in this file'));
    const expected = original
      .replace('import torch\n', 'import torch\nimport torch_xla\n')
      .replace('model = build_model().cuda()', 'model = build_model().to(torch_xla.device())')
      .replace('x, y = x.cuda(), y.cuda()', 'x, y = x.to(torch_xla.device()), y.to(torch_xla.device())');
    assert.equal(vscode.window.activeTextEditor!.document.getText(), expected);
  });

  it('fix-all runs on save through editor.codeActionsOnSave (source.fixAll.tpuReady)', async () => {
    const file = wsUri('fixall', 'fix_on_save.py');
    // what users write in their settings: fix on an explicit save (Ctrl+S), not on auto-save
    await setSetting('codeActionsOnSave', { 'source.fixAll.tpuReady': 'explicit' }, 'editor');
    try {
      await waitFor(() => JSON.stringify(vscode.workspace.getConfiguration('editor', file).get('codeActionsOnSave')).includes('tpuReady'), 'the setting');
      await extensionsSettled();
      const editor = await open(file);
      await waitDiagnostics(file, (d) => d.filter((x) => codeOf(x) === 'TPU101').length === 3, 'three TPU101 in fix_on_save.py');
      await editor.edit((b) => b.insert(new vscode.Position(0, 0), '# saved\n'));
      assert.equal(vscode.window.activeTextEditor?.document.uri.toString(), file.toString(), 'the file is the active editor');
      // Ctrl+S: the workbench's save command on the active editor (an explicit save runs the save participants)
      await vscode.commands.executeCommand('workbench.action.files.save');
      const expected =
        '# saved\nimport torch\nimport torch_xla\n\n' +
        'model = torch.nn.Linear(4, 4).to(torch_xla.device())\n' +
        'x = torch.randn(2, 4).to(torch_xla.device())\n' +
        'y = model(x).to(torch_xla.device())\n';
      // the participant's edit reaches the extension host as a model change: wait for it, then compare
      await waitFor(() => editor.document.getText() === expected && !editor.document.isDirty, 'the fixed text, saved', 10_000).catch(() => undefined);
      // on failure, say which step did not happen: the save itself (still dirty) or the participant's edit
      const state = `dirty: ${editor.document.isDirty}; on disk: ${JSON.stringify(read('fixall', 'fix_on_save.py'))}`;
      assert.equal(editor.document.getText(), expected, `${state}; in the editor: ${JSON.stringify(editor.document.getText())}`);
      assert.equal(read('fixall', 'fix_on_save.py'), expected);
      await waitFor(() => withCode(file, 'TPU101').length === 0, 'no TPU101 left');
    } finally {
      await setSetting('codeActionsOnSave', undefined, 'editor');
    }
  });

  it('source.fixAll.tpuReady is also available on request, computed by the engine', async () => {
    await open(uri);
    await waitDiagnostics(uri, (d) => d.length > 0, 'diagnostics');
    const actions = await codeActions(uri, new vscode.Range(0, 0, 0, 0), 'source.fixAll.tpuReady');
    assert.equal(actions.length, 1);
    assert.equal(actions[0].title, 'Fix all safe TPU issues in this file');
    await apply(actions[0]);
    assert.ok(!vscode.window.activeTextEditor!.document.getText().includes('.cuda()'));
  });
});
