import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { codeOf, waitFor, wsPath, wsUri } from './helpers';

const RUNTIME = 'tpu-ready runtime';
const EQ = '='.repeat(80);
const DASH = '-'.repeat(80);

/** An "Execution Analysis" block as torch_xla 2.9 prints it (debug_util.cpp l. 313-414), frames from another checkout. */
function readBlock(hash: string): string[] {
  const p = 'Execution Analysis: ';
  return ['', p + EQ, p + 'Execution Cause', p + '  most likely user code trying to access tensor value before torch_xla.sync', p + 'Graph Info: ', p + `  Graph Hash: ${hash}`,
    p + '  Number of Graph Inputs: 2', p + '  Number of Graph Outputs: 1', p + 'Python Frame Triggered Execution: ',
    p + '  _local_scalar_dense (/usr/local/lib/python3.10/site-packages/torch/_ops.py:513)', p + '  main (/home/someone/checkouts/project/train.py:31)',
    p + '  <module> (/home/someone/checkouts/project/train.py:35)', p + DASH, p + EQ];
}

/** A "Compilation Analysis" block at a step barrier (debug_util.cpp l. 313-414 at v2.9.0). */
function compileBlock(hash: string, line: number): string[] {
  const p = 'Compilation Analysis: ';
  return ['', p + EQ, p + 'Compilation Cause', p + '  user torch_xla.sync', p + 'Graph Info: ', p + `  Graph Hash: ${hash}`, p + '  Number of Graph Inputs: 4', p + '  Number of Graph Outputs: 3',
    p + 'Python Frame Triggered Execution: ', p + '  sync (/usr/local/lib/python3.10/site-packages/torch_xla/torch_xla.py:90)', p + `  main (/srv/ci/checkout/train.py:${line})`, p + DASH, p + EQ];
}

const runtimeOf = (uri: vscode.Uri) => vscode.languages.getDiagnostics(uri).filter((d) => d.source === RUNTIME);

describe('runtime evidence from .tpu-ready/runs/', () => {
  const runs = () => wsPath('.tpu-ready', 'runs');
  after(() => {
    fs.rmSync(wsPath('.tpu-ready', 'runs'), { recursive: true, force: true });
    fs.rmSync(wsPath('.tpu-ready', 'profile-run.sh'), { force: true });
  });

  it('a log dropped into .tpu-ready/runs/ shows in the Problems panel on the line that caused it', async function () {
    this.timeout(60_000);
    fs.mkdirSync(runs(), { recursive: true });
    const text = [...readBlock('aaa'), ...readBlock('aaa'), 'Counter: MarkStep', '  Value: 2', ''].join('\n');
    fs.writeFileSync(path.join(runs(), '2026-12-01T10-00-00Z.log'), text);
    const uri = wsUri('train.py');
    const [d] = await waitFor(() => {
      const ds = runtimeOf(uri);
      return ds.length ? ds : undefined;
    }, 'runtime diagnostics on train.py', 40_000);
    assert.equal(codeOf(d), 'TPU002');
    assert.equal(d.range.start.line, 30); // train.py:31, `print(f"epoch ... {loss.item():.4f}")`
    assert.equal(d.range.start.character, 8);
    assert.match(d.message, /^Seen in the run: executed a graph here 2 times to read a tensor value before the step barrier \(1 per step over 2 steps\)/);
    assert.equal(d.severity, vscode.DiagnosticSeverity.Warning);
    assert.ok(d.relatedInformation?.some((r) => r.location.uri.fsPath === uri.fsPath && r.location.range.start.line === 34));
    assert.ok(d.relatedInformation?.some((r) => r.location.uri.fsPath.endsWith('2026-12-01T10-00-00Z.log')));
    // a newer run without the read replaces it
    fs.writeFileSync(path.join(runs(), '2026-12-01T11-00-00Z.log'), 'Counter: MarkStep\n  Value: 2\n');
    await waitFor(() => runtimeOf(uri).length === 0, 'runtime diagnostics cleared by a clean run', 40_000);
  });

  it('on the line of a static finding it is material for, the runtime diagnostic is its confirmation', async function () {
    this.timeout(60_000);
    const uri = wsUri('train.py');
    await vscode.window.showTextDocument(uri);
    await waitFor(() => vscode.languages.getDiagnostics(uri).some((d) => d.source === 'tpu-ready' && codeOf(d) === 'TPU403' && d.range.start.line === 19), 'static TPU403 on line 20');
    fs.writeFileSync(path.join(runs(), '2026-12-01T12-00-00Z.log'), [...compileBlock('a1', 20), ...compileBlock('a2', 20), ...compileBlock('a3', 20)].join('\n'));
    const d = await waitFor(() => runtimeOf(uri).find((x) => x.range.start.line === 19), 'runtime diagnostic on line 20', 40_000);
    assert.equal(codeOf(d), 'TPU001');
    assert.match(d.message, /^Seen in the run, confirming TPU403: 3 compilations$/);
    assert.equal(d.severity, vscode.DiagnosticSeverity.Hint);
  });

  it('"Prepare a Profiling Run" writes the launcher', async () => {
    // the checklist suite's smoke test wrote one beside it: gone, so the command does not ask to overwrite
    fs.rmSync(wsPath('.tpu-ready', 'profile-run.sh'), { force: true });
    const uri = await vscode.commands.executeCommand<vscode.Uri | undefined>('tpuReady.prepareProfilingRun');
    assert.ok(uri);
    const text = fs.readFileSync(wsPath('.tpu-ready', 'profile-run.sh'), 'utf8');
    assert.match(text, /export PT_XLA_DEBUG_LEVEL=2/);
    assert.match(text, /tee "\$log"/);
  });
});
