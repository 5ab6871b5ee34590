import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as vscode from 'vscode';
import { closeAll, open, report, setSetting, sleep, waitDiagnostics, withCode, wsPath, wsUri } from './helpers';

/** A 5,000-line training file: a `.cuda()` step function per ten lines (as the benchmark's torch-dense shape). */
function bigTrainingFile(): string {
  const lines = ['import torch', ''];
  for (let i = 0; lines.length < 5000; i++) {
    lines.push(
      `def step_${i}(model, batch, optimizer):`,
      `    # step ${i}`,
      `    x, y = batch`,
      `    x = x.cuda(non_blocking=True)`,
      `    loss = torch.nn.functional.cross_entropy(model(x), y.cuda())`,
      `    loss.backward()`,
      `    optimizer.step()`,
      `    optimizer.zero_grad()`,
      `    return loss.item()`,
      ``,
    );
  }
  return lines.slice(0, 5000).join('\n') + '\n';
}

const PING = 'tpuReady.e2e.ping';
const BUDGET_MS = 50;

describe('the extension host stays responsive (issue 13)', () => {
  after(() => fs.rmSync(wsPath('responsive_train.py'), { force: true }));

  it('while a 5,000-line file is typed into and analysed, another command answers within 50 ms', async function () {
    this.timeout(240_000);
    fs.writeFileSync(wsPath('responsive_train.py'), bigTrainingFile());
    const uri = wsUri('responsive_train.py');
    const ping = vscode.commands.registerCommand(PING, () => 'pong');
    // every analysis runs to its end, however loaded the machine (the default budget would skip the file there)
    await setSetting('analysis.fileBudgetMs', 60_000);
    const editor = await open(uri);
    try {
      await waitDiagnostics(uri, (d) => withCode(uri, 'TPU101').length >= 500, 'the first analysis of responsive_train.py', 180_000);
      let analyses = 0;
      const sub = vscode.languages.onDidChangeDiagnostics((e) => {
        if (e.uris.some((u) => u.toString() === uri.toString())) analyses++;
      });
      // The probe: a ping every 20 ms; its latency counts from when it was due, so a host thread held up by
      // anything (an analysis on it, or a ping stuck behind one) shows as a late answer.
      let latencies: number[] = [];
      let probing = true;
      const probe = (async () => {
        const PERIOD = 20;
        let due = performance.now();
        while (probing) {
          due += PERIOD;
          const wait = due - performance.now();
          if (wait > 0) await sleep(wait);
          assert.equal(await vscode.commands.executeCommand(PING), 'pong');
          // pings keep their schedule: after a stall, each one due meanwhile counts how long it waited
          latencies.push(performance.now() - due);
        }
      })();
      // the machine's own noise first: the same probe for 3 s with nothing analysed
      await sleep(3000);
      const idle = [...latencies].sort((a, b) => a - b);
      const idleP95 = idle[Math.floor(0.95 * idle.length)] ?? 0;
      latencies = [];
      // typing: a character every 250 ms into `x.cuda()` on line 6 (debounce 200 ms): each analysis moves a finding
      const line = 5; // "    x = x.cuda(non_blocking=True)"
      assert.equal(editor.document.lineAt(line).text, '    x = x.cuda(non_blocking=True)');
      const t0 = Date.now();
      for (let i = 0; i < 24; i++) {
        await editor.edit((b) => b.insert(new vscode.Position(line, 8), 'a'));
        await sleep(250);
      }
      // the last edit is analysed too: the window closes when its diagnostics arrive
      const last = '`' + 'a'.repeat(24) + 'x.cuda()`';
      await waitDiagnostics(uri, () => withCode(uri, 'TPU101').some((d) => d.range.start.line === line && d.message.startsWith(last)), 'the analysis of the last keystroke', 120_000);
      probing = false;
      await probe;
      sub.dispose();
      const sorted = [...latencies].sort((a, b) => a - b);
      const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
      report(`command latency while typing into a 5,000-line file (${latencies.length} pings, ${analyses} analyses in ${Date.now() - t0} ms): p50`, p(0.5));
      report('command latency while typing into a 5,000-line file: p90', p(0.9));
      report('command latency while typing into a 5,000-line file: p95', p(0.95));
      report('command latency while typing into a 5,000-line file: max', sorted[sorted.length - 1]);
      report(`command latency with nothing analysed (${idle.length} pings): p95`, idleP95);
      assert.ok(analyses >= 2, `the server analysed the file while the probe ran (${analyses} analyses)`);
      assert.ok(latencies.length >= 100, `the probe ran (${latencies.length} pings)`);
      // 9 in 10, not every one: the host still decodes each analysis's diagnostics (about 640 KB for this file's
      // 1,000 findings), a burst of some tens of ms on a loaded machine; an analysis on the host thread holds every
      // command for the whole analysis (p50 about 1 s here before issue 13). What the machine's load adds when nothing
      // is analysed (idle p95) is not the extension's doing.
      const limit = BUDGET_MS + idleP95;
      assert.ok(p(0.9) <= limit, `90% of the commands answered within ${BUDGET_MS} ms (+${Math.round(idleP95)} ms idle noise): p90 ${Math.round(p(0.9))} ms, p95 ${Math.round(p(0.95))} ms, max ${Math.round(sorted[sorted.length - 1])} ms`);
    } finally {
      ping.dispose();
      await setSetting('analysis.fileBudgetMs', undefined);
      await vscode.commands.executeCommand('workbench.action.files.revert');
      await closeAll();
    }
  });
});
