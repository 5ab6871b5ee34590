/** Per-file memory budget and memory proportional to the file (issue 14): the engine in process, the CLI in a subprocess. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { analyze, pythonDocument } from '../src/core/engine';
import { arm, budgetRule, BudgetExceeded, budgetSkipReason, disarm } from '../src/core/budget';
import { parsePython, type Node } from '../src/core/parse';
import { parseProjectConfig } from '../src/core/config';
import { RULES } from '../src/rules';
import { DEFAULT_OPTIONS } from '../src/core/types';
import { memoryInUse } from '../src/cli/process';
import { shortLines } from '../scripts/shapes';

const CLI = path.join(ROOT, 'dist/cli.js');


const inUse = memoryInUse;

beforeAll(async () => {
  await init();
  execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT });
});

describe('memory budget per file', () => {
  it('memory grows in proportion to the file: 200 KB of short lines stays under 2,500x its size (about 500x today)', () => {
    const text = shortLines(200_000);
    let peak = 0;
    const usage = () => {
      const u = inUse();
      if (u > peak) peak = u;
      return u;
    };
    const base = inUse();
    // the budget itself is the probe: checked on findings, between rules and every 1,024 node navigations
    const a = analyze(pythonDocument('big.py', text), RULES, { ...DEFAULT_OPTIONS, memory: { maxBytes: 2500 * text.length, usage } });
    expect(a.findings.filter((f) => f.rule === 'TPU101')).toHaveLength(Math.ceil((text.split('\n').length - 2) / 5));
    a.tree?.delete();
    expect(peak - base).toBeGreaterThan(0);
    expect(peak - base).toBeLessThan(2500 * text.length);
  });

  it('past its memory budget the analysis stops with BudgetExceeded (memory), naming the rule; the tree is released', () => {
    const text = shortLines(300_000);
    let thrown: unknown;
    // the heap this thread shares with earlier test files may shrink under a GC while the analysis allocates: the
    // probe reports the peak so far, as a process that starts with this file would see it
    let peak = 0;
    const usage = () => (peak = Math.max(peak, inUse()));
    try {
      analyze(pythonDocument('big.py', text), RULES, { ...DEFAULT_OPTIONS, memory: { maxBytes: 1024 * 1024, usage } });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(BudgetExceeded);
    const e = thrown as BudgetExceeded;
    expect(e.kind).toBe('memory');
    expect(e.usedBytes).toBeGreaterThan(1024 * 1024);
    expect(budgetSkipReason(e, { ms: 1500, bytes: 1024 * 1024 }, 10, { time: 'T', memory: 'the setting M' }))
      .toMatch(/^analysis needed more than the 1 MB memory budget per file \(\d+ MB when stopped(, in TPU\d{3})?\); raise it with the setting M$/);
    // the next file is analysed normally (the budget was disarmed)
    const ok = analyze(pythonDocument('t.py', 'import torch\nx = torch.randn(3).cuda()\n'), RULES, DEFAULT_OPTIONS);
    expect(ok.findings.map((f) => f.rule)).toEqual(['TPU101']);
    ok.tree?.delete();
  });

  it('a time budget stops a rule that walks the tree without reporting (checked on node navigation)', () => {
    // the parse and the mirror are stopped by the budget themselves (hardening.test.ts); here both are done
    // unbudgeted, so only the navigation ticks of a rule walking the tree can stop it
    const tree = parsePython(shortLines(20_000));
    const root = tree.rootNode;
    const prev = arm(performance.now() - 1, undefined);
    let thrown: unknown = null;
    let steps = 0;
    try {
      budgetRule('TPU302');
      const walk = (n: Node): void => {
        steps++;
        for (const c of n.children) walk(c);
      };
      walk(root);
    } catch (e) {
      thrown = e;
    } finally {
      disarm(prev);
      tree.delete();
    }
    expect(thrown).toBeInstanceOf(BudgetExceeded);
    expect((thrown as BudgetExceeded).rule).toBe('TPU302');
    // the check runs every 1,024 ticks: the walk stopped long before the end of a 20,000-line tree
    expect(steps).toBeLessThan(5_000);
  });
});

function project(files: Record<string, string>): string {
  const ws = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-budget-')), 'ws');
  fs.mkdirSync(path.join(ws, '.git'), { recursive: true });
  for (const [f, t] of Object.entries(files)) fs.writeFileSync(path.join(ws, f), t);
  return ws;
}

function run(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', timeout: 60_000, maxBuffer: 256 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const FIXABLE = 'import torch\nx = torch.randn(3).cuda()\n';

describe('CLI: --memory-budget and [tool.tpu-ready] file-budget / memory-budget', () => {
  it('a file over --memory-budget is skipped with the reason (never an out-of-memory crash); the others are analysed', () => {
    const ws = project({ 'big.py': shortLines(300_000), 't.py': FIXABLE });
    const r = run(['check', '.', '--memory-budget', '16', '--file-budget', '120', '--format', 'json'], ws);
    expect(r.code).toBe(1);
    const j = JSON.parse(r.out);
    expect(j.notices).toContainEqual({ path: 'big.py', message: expect.stringMatching(/^skipped: analysis needed more than the 16 MB memory budget per file \(\d+ MB when stopped.*\); raise it with --memory-budget$/), error: false });
    expect(j.findings.map((f: { path: string }) => f.path)).toEqual(['t.py']);
    expect(run(['check', '.', '--memory-budget', '1'], ws).err).toBe('tpu-ready: --memory-budget must be a number of MB (16-65536), not "1"\nRun `tpu-ready --help` for usage.\n');
  });

  it('pyproject file-budget and memory-budget apply to the CLI; the flags win; bad values are named with their line', () => {
    const ws = project({ 'big.py': shortLines(300_000), 't.py': FIXABLE, 'pyproject.toml': '[tool.tpu-ready]\nmemory-budget = 16\n' });
    let j = JSON.parse(run(['check', '.', '--format', 'json'], ws).out);
    expect(j.notices).toContainEqual(expect.objectContaining({ path: 'big.py', message: expect.stringContaining('16 MB memory budget') }));
    j = JSON.parse(run(['check', '.', '--format', 'json', '--memory-budget', '4096', '--file-budget', '120'], ws).out);
    expect(j.notices ?? []).toEqual([]);
    expect(j.findings.some((f: { path: string }) => f.path === 'big.py')).toBe(true);
    fs.writeFileSync(path.join(ws, 'pyproject.toml'), '[tool.tpu-ready]\nfile-budget = 0.001\n');
    j = JSON.parse(run(['check', 'big.py', '--format', 'json'], ws).out);
    expect(j.notices).toContainEqual(expect.objectContaining({ path: 'big.py', message: expect.stringMatching(/^skipped: analysis took longer than the 0\.001 s budget/) }));
    fs.writeFileSync(path.join(ws, 'pyproject.toml'), '[tool.tpu-ready]\nselect = ["TPU1"]\nfile-budget = "fast"\n');
    const r = run(['check', 't.py'], ws);
    expect(r.err).toContain('pyproject.toml:3: [tool.tpu-ready] file-budget must be a number of seconds (0.001-3600), not "fast"');
  });

  it('parseProjectConfig: budgets are numbers within the CLI ranges', () => {
    expect(parseProjectConfig('[tool.tpu-ready]\nfile-budget = 2.5\nmemory-budget = 256\n')).toEqual({ config: { fileBudget: 2.5, memoryBudget: 256 }, problems: [] });
    for (const bad of ['0', '-1', '1e308', 'inf', 'nan', '"1"', 'true', '[1]', '{ a = 1 }']) {
      const { config, problems } = parseProjectConfig(`[tool.tpu-ready]\nfile-budget = ${bad}\nmemory-budget = ${bad}\n`);
      expect(config.fileBudget, bad).toBeUndefined();
      expect(config.memoryBudget, bad).toBeUndefined();
      expect(problems.map((p) => p.line), bad).toEqual([2, 3]);
    }
  });
});
