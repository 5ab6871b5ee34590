import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { EXTENSION_ID, codeOf, waitFor, wsPath, wsUri } from './helpers';

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
  // run alone (E2E_GREP), nothing else has activated the extension: no Python file is opened here
  before(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)?.activate();
  });
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

  it('on the line of a static finding it is material for, the static diagnostic says what the run saw (no second diagnostic)', async function () {
    this.timeout(60_000);
    const uri = wsUri('train.py');
    await vscode.window.showTextDocument(uri);
    const staticAt20 = () => vscode.languages.getDiagnostics(uri).find((d) => d.source === 'tpu-ready' && codeOf(d) === 'TPU403' && d.range.start.line === 19);
    const before = await waitFor(staticAt20, 'static TPU403 on line 20');
    assert.doesNotMatch(before.message, /seen in the run/);
    fs.writeFileSync(path.join(runs(), '2026-12-01T12-00-00Z.log'), [...compileBlock('a1', 20), ...compileBlock('a2', 20), ...compileBlock('a3', 20)].join('\n'));
    const d = await waitFor(() => staticAt20()?.message.endsWith(' (seen in the run: 3 compilations)') && staticAt20(), 'the confirmation in the TPU403 message', 40_000);
    assert.equal(d.message, `${before.message} (seen in the run: 3 compilations)`);
    assert.equal(d.severity, before.severity);
    assert.equal(runtimeOf(uri).filter((x) => x.range.start.line === 19).length, 0, 'no runtime diagnostic of its own on that line');
    // its quick-fixes still come with it
    const titles = (await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', uri, d.range)).map((a) => a.title);
    assert.ok(titles.includes('Ignore TPU403 on this line'), JSON.stringify(titles));
    // a run without the recompilations: the message is the static one again
    fs.writeFileSync(path.join(runs(), '2026-12-01T13-00-00Z.log'), 'Counter: MarkStep\n  Value: 2\n');
    await waitFor(() => staticAt20()?.message === before.message, 'the confirmation gone with a clean run', 40_000);
  });

  it('"Prepare a Profiling Run" writes the launcher', async () => {
    // the checklist suite's smoke test wrote one beside it: gone, so the command does not ask to overwrite
    fs.rmSync(wsPath('.tpu-ready', 'profile-run.sh'), { force: true });
    const uri = await vscode.commands.executeCommand<vscode.Uri | undefined>('tpuReady.prepareProfilingRun');
    assert.ok(uri);
    const text = fs.readFileSync(wsPath('.tpu-ready', 'profile-run.sh'), 'utf8');
    assert.match(text, /export PT_XLA_DEBUG_LEVEL=2/);
    // every line goes to the terminal and, stamped with the seconds since launch, to the log (the step time)
    assert.match(text, /log\.write\("\[tpu-ready %\.3f\] "/);
    assert.match(text, /echo "tpu-ready: accelerator-type \$\{acc:-unknown\}"/);
  });
});
