import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { EXTENSION_ID, open, report, waitDiagnostics, withCode, wsUri } from './helpers';

describe('activation', () => {
  it('is installed and waits for a Python file or notebook before activating', () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, `${EXTENSION_ID} is installed`);
    assert.equal(ext.isActive, false, 'no activation before a Python file or notebook is opened');
  });

  it('activates on opening the training script and shows its findings (cold: activation + grammar load)', async () => {
    const uri = wsUri('train.py');
    const t0 = Date.now();
    await open(uri);
    await waitDiagnostics(uri, (ds) => ds.some((d) => String((d.code as { value: string }).value) === 'TPU101'), 'TPU101 on train.py', 30_000);
    report('first diagnostics after opening train.py (cold)', Date.now() - t0);
    assert.equal(vscode.extensions.getExtension(EXTENSION_ID)!.isActive, true);
    assert.equal(withCode(uri, 'TPU101').length, 2); // `build_model().cuda()`, and `x, y = x.cuda(), y.cuda()` as one finding
  });
});
