/** `tpu-ready evidence` and `check --evidence` as a user runs them: the built dist/cli.js in a subprocess. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { oneLine, ROOT } from './setup';

const CLI = path.join(ROOT, 'dist/cli.js');
const FIX = path.join(ROOT, 'test/evidence-fixtures');

function run(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** The fixture workspace as its own project (a .git folder marks the root), the logs beside it. */
function project(): string {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-evidence-'));
  fs.cpSync(path.join(FIX, 'workspace'), path.join(base, 'ws'), { recursive: true });
  fs.mkdirSync(path.join(base, 'ws', '.git'));
  fs.cpSync(path.join(FIX, 'logs'), path.join(base, 'logs'), { recursive: true });
  return path.join(base, 'ws');
}

beforeAll(() => {
  execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT });
});

describe('tpu-ready evidence', () => {
  it('JSON: runtime findings with source and evidence, against a golden file', async () => {
    const ws = project();
    const r = run(['evidence', '../logs/run-a.log', '../logs/run-b-truncated.log', '../logs/metrics.txt', '--format', 'json'], ws);
    expect(r.code).toBe(1);
    const json = JSON.parse(r.out);
    expect(json.findings.length).toBeGreaterThan(0);
    for (const f of json.findings) {
      expect(f.source).toBe('runtime');
      expect(f.evidence).toHaveProperty('kind');
      expect(f.evidence).toHaveProperty('count');
      expect(f.evidence).toHaveProperty('seconds');
      expect(f.evidence).toHaveProperty('graphHashes');
    }
    // the run-b log (another checkout path, 2.3 wording) adds its compilations and its read to the same lines
    const recompile = json.findings.find((f: { rule: string; path: string; line: number }) => f.rule === 'TPU001' && f.path === 'train.py' && f.line === 20);
    expect(recompile.evidence.count).toBe(10);
    expect(recompile.evidence.graphHashes).toHaveLength(10);
    expect(json.summary).toMatchObject({ compilations: 17, executions: 7, truncatedBlocks: 1, steps: 11 });
    await expect(r.out).toMatchFileSnapshot(path.join(FIX, 'golden.json'));
    expect(r.err).toMatch(/^tpu-ready: read 3 logs: 17 compilation and 7 execution blocks \(1 cut off\)/);
  });

  it('text and SARIF name the line and the rule', () => {
    const ws = project();
    const t = run(['evidence', '../logs/run-a.log'], ws);
    expect(t.out).toContain('train.py:18:9: TPU002 Seen in the run: executed a graph here 6 times');
    const s = JSON.parse(run(['evidence', '../logs/run-a.log', '--format', 'sarif'], ws).out);
    const res = s.runs[0].results.find((x: { ruleId: string }) => x.ruleId === 'TPU003');
    expect(res.locations[0].physicalLocation).toMatchObject({ artifactLocation: { uri: 'train.py' }, region: { startLine: 15 } });
    expect(s.runs[0].tool.driver.rules[res.ruleIndex].id).toBe('TPU003');
    const read = s.runs[0].results.find((x: { ruleId: string; locations: { physicalLocation: { region: { startLine: number } } }[] }) => x.ruleId === 'TPU002' && x.locations[0].physicalLocation.region.startLine === 18);
    expect(read.properties).toMatchObject({ source: 'runtime', evidence: { kind: 'host-read', count: 6 } });
    expect(read.relatedLocations).toEqual([{ id: 0, message: { text: 'same host read: called through <module>' }, physicalLocation: { artifactLocation: { uri: 'train.py', uriBaseId: '%SRCROOT%' }, region: { startLine: 24 } } }]);
  });

  it('bad input: one line and exit 2', () => {
    const ws = project();
    // usage errors: the message and a --help hint
    expect(run(['evidence'], ws).code).toBe(2);
    expect(run(['evidence', '../logs/run-a.log', '--format', 'xml'], ws).code).toBe(2);
    for (const args of [['evidence', 'missing.log'], ['evidence', 'train.py'], ['evidence', '../logs/run-a.log', '--root', 'nowhere'], ['check', '.', '--evidence', 'missing.log']]) {
      const r = run(args, ws);
      expect(r.code, args.join(' ')).toBe(2);
      oneLine(r.err);
    }
    expect(run(['check', '.', '--evidence', 'missing.log'], ws).err).toBe('tpu-ready: --evidence missing.log: no such file\n');
    fs.writeFileSync(path.join(ws, 'bin.log'), Buffer.from([0x50, 0, 1, 2, 3]));
    const r = run(['evidence', 'bin.log'], ws);
    expect(r.code).toBe(2);
    oneLine(r.err);
  });
});

describe('tpu-ready check --evidence', () => {
  it('confirms static findings on the same line instead of duplicating them; runtime-only ones stay', () => {
    const ws = project();
    const r = run(['check', '.', '--evidence', '../logs/run-a.log', '--format', 'json'], ws);
    const json = JSON.parse(r.out);
    const at = (rule: string, p: string, line: number) => json.findings.filter((f: { rule: string; path: string; line: number }) => f.rule === rule && f.path === p && f.line === line);
    expect(at('TPU201', 'train.py', 18)[0].message).toMatch(/\(seen in the run: 6 host reads, 0\.55 per step, 1\.2 s\)$/);
    expect(at('TPU201', 'train.py', 18)[0].evidence.kind).toBe('host-read');
    expect(at('TPU002', 'train.py', 18)).toHaveLength(0);
    expect(at('TPU203', 'models/net.py', 11)[0].message).toMatch(/\(seen in the run: 6 compilations, 3 min\)$/);
    expect(at('TPU708', 'train.py', 15)[0].message).toMatch(/seen in the run: aten::_ctc_loss, aten::_ctc_loss_backward on the CPU ×22/);
    expect(at('TPU001', 'train.py', 20)[0].source).toBe('runtime');
    expect(json.summary.findings).toBe(json.findings.length);
    // without --evidence: the same static findings, no runtime ones, no evidence
    const plain = JSON.parse(run(['check', '.', '--format', 'json'], ws).out);
    expect(plain.findings.some((f: { source?: string; evidence?: unknown }) => f.source || f.evidence)).toBe(false);
    expect(plain.findings.length).toBe(json.findings.length - 2);
  });
});

describe('tpu-ready report with a profiling run', () => {
  it('step 9 lists the newest run\'s runtime-only findings and is met by a newer clean run', () => {
    const ws = project();
    const runs = path.join(ws, '.tpu-ready', 'runs');
    fs.mkdirSync(runs, { recursive: true });
    fs.copyFileSync(path.join(FIX, 'logs', 'run-a.log'), path.join(runs, '2026-12-01T10-00-00Z.log'));
    const step9 = (md: string) => md.slice(md.indexOf('## Step 9'), md.indexOf('## Step 10'));
    const md = run(['report', '--format', 'md'], ws).out;
    expect(step9(md)).toContain('Open findings (2)');
    expect(step9(md)).toContain('[TPU001]');
    expect(step9(md)).toContain('- [ ] A profiling run newer than the code was read (.tpu-ready/runs/), with no open runtime finding (from a run)');
    expect(md).toContain('(seen in the run: 6 host reads, 0.55 per step, 1.2 s)'); // TPU201, step 6
    // a newer run with nothing to report, newer than the code
    const clean = path.join(runs, '2026-12-02T10-00-00Z.log');
    fs.writeFileSync(clean, 'Counter: MarkStep\n  Value: 20\n');
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(clean, later, later);
    const md2 = run(['report', '--format', 'md'], ws).out;
    expect(step9(md2)).not.toContain('Open findings');
    expect(step9(md2)).toContain('- [x] A profiling run newer than the code was read');
    // the code changed after the run: no longer met
    const touched = new Date(Date.now() + 120_000);
    fs.utimesSync(path.join(ws, 'train.py'), touched, touched);
    expect(step9(run(['report', '--format', 'md'], ws).out)).toContain('- [ ] A profiling run newer than the code was read');
  });
});

describe('tpu-ready cost --evidence', () => {
  const EQ = '='.repeat(80);
  const DASH = '-'.repeat(80);
  /** A step barrier's execution block (debug_util.cpp l. 313-414 at v2.9.0), stamped as profile-run.sh stamps lines. */
  const barrier = (t: number, kind = 'Execution') => ['', `${kind} Analysis: ${EQ}`, `${kind} Analysis: ${kind} Cause`, `${kind} Analysis:   user torch_xla.sync`, `${kind} Analysis: Graph Info: `, `${kind} Analysis:   Graph Hash: ${kind === 'Execution' ? 'h' : `c${t}`}`, `${kind} Analysis: Python Frame Triggered Execution: `, `${kind} Analysis:   train (/vm/proj/train.py:20)`, `${kind} Analysis: ${DASH}`, `${kind} Analysis: ${EQ}`].map((l) => `[tpu-ready ${t.toFixed(3)}] ${l}`);
  function runLog(dir: string, accelerator: string | null): string {
    const lines = [...(accelerator ? [`[tpu-ready 0.001] tpu-ready: accelerator-type ${accelerator}`] : []), ...barrier(9.99, 'Compilation'), ...[10, 10.5, 11, 11.5, 12, 12.5].flatMap((t) => barrier(t))];
    const p = path.join(dir, 'run.log');
    fs.writeFileSync(p, lines.join('\n') + '\n');
    return p;
  }
  const hfConfig = ['cost', ...['test/cost-fixtures/hf/training_args.json', 'test/cost-fixtures/hf/config.json'].map((p) => path.join(ROOT, p))];

  it('the measured step time replaces the modelled throughput on the TPU the run names, with the log as the source', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-cost-ev-'));
    const log = runLog(dir, 'v5litepod-8');
    const p0 = run([...hfConfig, '--hardware', 'v5e,v6e', '--chips', '8', '--format', 'json', '--today', '2026-11-29'], dir);
    expect(p0.code, p0.err).toBe(0);
    const plain = JSON.parse(p0.out);
    const r = run([...hfConfig, '--hardware', 'v5e,v6e', '--chips', '8', '--format', 'json', '--today', '2026-11-29', '--evidence', log], dir);
    expect(r.code, r.err).toBe(0);
    const json = JSON.parse(r.out);
    const est = (j: { estimates: { hardware: string; pricing: string; mfuSource: string; mfuFormula: string; tokensPerSecond: number }[] }, hw: string) => j.estimates.find((e) => e.hardware === hw && e.pricing === 'on-demand')!;
    const v5e = est(json, 'v5e');
    expect(v5e.mfuSource).toBe('measured');
    const fields = json.config?.fields ?? {};
    const tokensPerStep = (fields.globalBatch?.value ?? 0) * (fields.seqLen?.value ?? 0);
    expect(tokensPerStep).toBe(512 * 2048);
    expect(v5e.tokensPerSecond).toBeCloseTo(tokensPerStep / 0.5, 3); // 0.5 s per step on all 8 chips
    expect(JSON.stringify(json)).toContain('measured in the run (run.log:');
    expect(JSON.stringify(json)).toContain('median step 0.5 s over 5 steps');
    expect(est(json, 'v6e').mfuSource).toBe('assumption'); // measured on v5e only (the fixture's cost.toml sets an MFU)
    expect(est(plain, 'v5e').mfuSource).toBe('assumption');
    expect(est(plain, 'v5e').tokensPerSecond).not.toBeCloseTo(v5e.tokensPerSecond, 0);
  });

  it('says why a step time cannot be used, and --measured-on names the TPU when the log does not', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-cost-ev-'));
    const log = runLog(dir, null);
    const r = run([...hfConfig, '--hardware', 'v5e', '--format', 'json', '--evidence', log], dir);
    expect(r.code).toBe(0);
    oneLine(r.err);
    expect(r.err).toContain('tpu-ready cost: --evidence: step time 0.5 s measured (run.log:');
    expect(r.err).toContain('pass --measured-on');
    expect(JSON.parse(r.out).estimates[0].mfuSource).toBe('assumption');
    const named = run([...hfConfig, '--hardware', 'v5e', '--format', 'json', '--evidence', log, '--measured-on', 'v5litepod-8'], dir);
    expect(named.err).toBe('');
    expect(JSON.parse(named.out).estimates[0].mfuSource).toBe('measured');
    const elsewhere = run([...hfConfig, '--hardware', 'v6e', '--format', 'json', '--evidence', log, '--measured-on', 'v5litepod-8'], dir);
    expect(elsewhere.err).toContain('which is not among the estimated hardware');
    const bad = run([...hfConfig, '--measured-on', 'v5e', '--evidence', log], dir);
    expect(bad.code).toBe(2);
    oneLine(bad.err);
    expect(bad.err).toContain('--measured-on needs a slice name with its size');
    expect(run([...hfConfig, '--measured-on', 'v5e-8'], dir).err).toContain('--measured-on needs --evidence');
    fs.writeFileSync(path.join(dir, 'plain.log'), 'hello\n');
    expect(run([...hfConfig, '--evidence', path.join(dir, 'plain.log')], dir).err).toContain('no step time in plain.log');
  });
});
