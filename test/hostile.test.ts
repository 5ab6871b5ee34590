/** A second hostile-input pass (issue 14): odd notebooks, configs, file names, read-only files, a symlinked root. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './setup';
import { toUri } from '../src/cli/formatters/sarif';
import { parseAssumptionsFile } from '../src/cost/assumptions';

const CLI = path.join(ROOT, 'dist/cli.js');
const FIXABLE = 'import torch\nx = torch.randn(3).cuda()\n';

function run(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function project(files: Record<string, string> = {}): string {
  const ws = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-hostile-')), 'ws');
  fs.mkdirSync(path.join(ws, '.git'), { recursive: true });
  for (const [f, t] of Object.entries(files)) fs.writeFileSync(path.join(ws, f), t);
  return ws;
}

const noTrace = (s: string) => expect(s).not.toMatch(/\n\s+at |internal error/);

beforeAll(() => {
  execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT });
});

describe('file names', () => {
  it('SARIF locations are URIs: a tab, newline, CR, escape, #, % or space in a name is percent-encoded, non-ASCII as UTF-8', () => {
    expect(toUri('src/a b#%.py')).toBe('src/a%20b%23%25.py');
    expect(toUri('n\nl\r\t\u001b.py')).toBe('n%0Al%0D%09%1B.py');
    expect(toUri('ünï😀.py')).toBe('%C3%BCn%C3%AF%F0%9F%98%80.py');
    expect(toUri('win\\dir\\x.py')).toBe('win/dir/x.py');
    const ws = project({ 'a b#.py': FIXABLE });
    const sarif = JSON.parse(run(['check', '.', '--format', 'sarif', '--exit-zero'], ws).out);
    expect(sarif.runs[0].results[0].locations[0].physicalLocation.artifactLocation.uri).toBe('a%20b%23.py');
  });

  it('a file name that is not valid UTF-8 is named as such (was "cannot read: ENOENT"), exit 2; the others are analysed', () => {
    const ws = project({ 'ok.py': FIXABLE });
    fs.writeFileSync(Buffer.concat([Buffer.from(ws + '/bad'), Buffer.from([0xff]), Buffer.from('.py')]), FIXABLE);
    const r = run(['check', '.', '--format', 'json'], ws);
    expect(r.code).toBe(2);
    const j = JSON.parse(r.out);
    expect(j.notices).toContainEqual({ path: 'bad\ufffd.py', message: 'not analysed: its name is not valid UTF-8 (rename it to scan it)', error: true });
    expect(j.findings.map((f: { path: string }) => f.path)).toEqual(['ok.py']);
    expect(r.err).not.toContain('ENOENT');
  });
});

describe('--fix on read-only files', () => {
  it('a read-only file stays unfixed (even for root) and is named; the other files are fixed; exit 2', () => {
    const ws = project({ 'a_ro.py': FIXABLE, 'b_rw.py': FIXABLE });
    fs.chmodSync(path.join(ws, 'a_ro.py'), 0o444);
    const r = run(['check', '.', '--fix', '--format', 'json'], ws);
    expect(r.code).toBe(2);
    noTrace(r.err);
    expect(fs.readFileSync(path.join(ws, 'a_ro.py'), 'utf8')).toBe(FIXABLE);
    expect(fs.readFileSync(path.join(ws, 'b_rw.py'), 'utf8')).toContain('.to(accel.device())');
    expect(fs.existsSync(path.join(ws, 'accel.py'))).toBe(true);
    const j = JSON.parse(r.out);
    expect(j.notices).toContainEqual({ path: 'a_ro.py', message: 'not fixed: the file is read-only (make it writable to apply the fixes)', error: true });
    expect(j.summary.fixed).toBe(1);
  });
});

describe('a workspace whose root is a symlink', () => {
  it('is scanned and fixed in place (the real folder), accel.py beside the file', () => {
    const real = project({ 't.py': FIXABLE });
    const link = path.join(path.dirname(real), 'link');
    fs.symlinkSync(real, link);
    const r = run(['check', '.', '--fix'], link);
    expect(r.code).toBe(0);
    noTrace(r.err);
    expect(fs.readFileSync(path.join(real, 't.py'), 'utf8')).toContain('accel.device()');
    expect(fs.existsSync(path.join(real, 'accel.py'))).toBe(true);
  });
});

describe('notebooks with odd JSON', () => {
  const nb = (cells: string, extra = '"nbformat": 4, "nbformat_minor": 5') => `{"cells": ${cells}, "metadata": {}, ${extra}}`;

  it('duplicate keys: the last one counts (as in Python json and Jupyter), and --fix edits that one', () => {
    const ws = project({ 'd.ipynb': nb('[{"cell_type": "code", "source": "import os\\n", "source": "import torch\\nx = torch.randn(3).cuda()\\n", "metadata": {}, "outputs": []}]') });
    expect(run(['check', 'd.ipynb', '--fix', '--fix-style', 'tpu-only'], ws).code).toBe(0);
    const text = fs.readFileSync(path.join(ws, 'd.ipynb'), 'utf8');
    expect(text).toContain('"source": "import os\\n"');
    expect(JSON.parse(text).cells[0].source).toBe('import torch\nimport torch_xla\nx = torch.randn(3).to(torch_xla.device())\n');
  });

  it('non-string sources, an nbformat 3 notebook, cells that are not objects: one line naming the file, exit 2', () => {
    const ws = project({
      'num.ipynb': nb('[{"cell_type": "code", "source": 123, "metadata": {}, "outputs": []}]'),
      'mixed.ipynb': nb('[{"cell_type": "code", "source": ["import torch\\n", 5, null], "metadata": {}, "outputs": []}]'),
      'v3.ipynb': '{"worksheets": [{"cells": [{"cell_type": "code", "input": ["import torch\\n"], "language": "python", "outputs": []}]}], "metadata": {}, "nbformat": 3, "nbformat_minor": 0}',
      'odd.ipynb': nb('[null, 5, "x"]'),
    });
    for (const f of ['num', 'mixed', 'v3', 'odd']) {
      const r = run(['check', `${f}.ipynb`], ws);
      expect(r.code, f).toBe(2);
      noTrace(r.err + r.out);
      expect(r.out + r.err, f).toMatch(new RegExp(`${f}\\.ipynb: not analysed: broken notebook: `));
    }
  });

  it('huge outputs: not counted against the size limit (the cells are analysed); a file past 64 MiB is skipped unread', () => {
    const cell = (text: string) => `[{"cell_type": "code", "source": "import torch\\nx.cuda()\\n", "metadata": {}, "outputs": [{"output_type": "stream", "name": "stdout", "text": "${text}"}]}]`;
    const ws = project({ 'h.ipynb': nb(cell('a'.repeat(2100 * 1024))) });
    const r = run(['check', 'h.ipynb', '--format', 'json'], ws);
    const report = JSON.parse(r.out);
    expect(report.notices).toEqual([]);
    expect(report.findings.map((f: { rule: string }) => f.rule)).toContain('TPU101');
    fs.writeFileSync(path.join(ws, 'h.ipynb'), nb(cell('a'.repeat(65 * 1024 * 1024))));
    const big = run(['check', 'h.ipynb', '--format', 'json'], ws);
    expect(big.code).toBe(0);
    expect(JSON.parse(big.out).notices[0].message).toMatch(/^skipped: larger than 65536 KiB/);
  });
});

describe('cost.toml with odd types', () => {
  const bad = (text: string) => {
    try {
      parseAssumptionsFile('.tpu-ready/cost.toml', text);
    } catch (e) {
      return (e as Error).message;
    }
    return 'accepted';
  };

  it('nan, inf and 1e400 are named as written (JSON.stringify printed "null")', () => {
    expect(bad('mfu = nan\n')).toBe('.tpu-ready/cost.toml:1: `mfu` must be a number, not nan');
    expect(bad('mfu = -inf\n')).toBe('.tpu-ready/cost.toml:1: `mfu` must be a number, not -inf');
    expect(bad('distinct-shapes = 1e400\n')).toBe('.tpu-ready/cost.toml:1: `distinct-shapes` must be a number, not inf');
  });

  it('a quoted number is a string, as TOML types it (was accepted silently)', () => {
    expect(bad('chips = "8"\n')).toBe('.tpu-ready/cost.toml:1: `chips` must be a number, not the string "8" (write it without quotes)');
    expect(bad('mfu = "0.4"\n')).toBe('.tpu-ready/cost.toml:1: `mfu` must be a number, not the string "0.4" (write it without quotes)');
    expect(bad('chips = 8\n')).toBe('accepted');
  });

  it('a table where a list of names goes is named a table (was "[object Object]")', () => {
    expect(bad('pricing = { a = 1 }\n')).not.toContain('[object Object]');
    expect(bad('pricing = { a = 1 }\n')).toMatch(/pricing must be on-demand or spot, not a table$/);
    expect(bad('hardware = [{ a = 1 }]\n')).toMatch(/hardware must be names such as v5e, not a table$/);
  });
});

describe('a reader that closes the pipe', () => {
  it('`check | head` ends the output quietly: no EPIPE stack trace, the exit status is the scan\'s', () => {
    const ws = project(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`t${i}.py`, FIXABLE.repeat(40)])));
    const r = spawnSync('bash', ['-c', `"${process.execPath}" "${CLI}" check . 2>err.txt | head -c 10 >/dev/null; echo "\${PIPESTATUS[0]}"`], { cwd: ws, encoding: 'utf8', timeout: 60_000 });
    expect(fs.readFileSync(path.join(ws, 'err.txt'), 'utf8')).toBe('');
    expect(r.stdout.trim()).toBe('1'); // findings: 1, as with a reader that read everything
  });
});
