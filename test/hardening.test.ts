/** Hostile workspaces and bad inputs (issue 14): the built CLI in a subprocess. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { oneLine, ROOT } from './setup';

const CLI = path.join(ROOT, 'dist/cli.js');

function run(args: string[], cwd: string, timeout = 30_000) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', timeout, env: { ...process.env, NO_COLOR: '1' } });
  return { code: r.status, out: r.stdout, err: r.stderr, signal: r.signal };
}

const FIXABLE = 'import torch\nx = torch.randn(3).cuda()\nprint(x.sum())\n';

/** A project folder (with .git so it is the root) and a sibling folder outside it. */
function project(files: Record<string, string> = { 't.py': FIXABLE }): { ws: string; outside: string } {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-harden-'));
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  fs.mkdirSync(path.join(ws, '.git'), { recursive: true });
  fs.mkdirSync(outside);
  for (const [f, t] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, f)), { recursive: true });
    fs.writeFileSync(path.join(ws, f), t);
  }
  return { ws, outside };
}

beforeAll(() => {
  execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT });
});

describe('no writes outside the workspace', () => {
  it('report --record refuses a planted .tpu-ready/progress.json symlink and leaves its target alone', () => {
    const { ws, outside } = project();
    const victim = path.join(outside, 'victim.json');
    fs.writeFileSync(victim, '{"keep": 1}\n');
    fs.mkdirSync(path.join(ws, '.tpu-ready'));
    fs.symlinkSync(victim, path.join(ws, '.tpu-ready', 'progress.json'));
    const r = run(['report', '--record'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('refusing to record progress in .tpu-ready/progress.json: it is a symlink');
    expect(fs.readFileSync(victim, 'utf8')).toBe('{"keep": 1}\n');
  });

  it('report --record refuses a symlinked .tpu-ready folder pointing outside', () => {
    const { ws, outside } = project();
    fs.symlinkSync(outside, path.join(ws, '.tpu-ready'));
    const r = run(['report', '--record'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('outside the workspace');
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it('--fix does not create the target of a dangling accel.py symlink, and leaves the file unfixed', () => {
    const { ws, outside } = project();
    fs.symlinkSync(path.join(outside, 'planted.py'), path.join(ws, 'accel.py'));
    const r = run(['check', 't.py', '--fix'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('refusing to create accel.py: it is a symlink');
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.readFileSync(path.join(ws, 't.py'), 'utf8')).toBe(FIXABLE);
  });

  it('--fix does not write through a symlinked source file', () => {
    const { ws, outside } = project({});
    fs.writeFileSync(path.join(outside, 'real.py'), FIXABLE);
    fs.symlinkSync(path.join(outside, 'real.py'), path.join(ws, 'link.py'));
    const r = run(['check', 'link.py', '--fix', '--fix-style', 'tpu-only'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('refusing to fix link.py: it is a symlink');
    expect(fs.readFileSync(path.join(outside, 'real.py'), 'utf8')).toBe(FIXABLE);
  });

  it('--output: a path the user names (also outside the workspace, as CI temp folders are), never through a symlink, over a scanned file or into a missing folder', () => {
    const { ws, outside } = project();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-out-'));
    let r = run(['check', 't.py', '--output', path.join(tmp, 'r.sarif'), '--format', 'sarif', '--exit-zero'], ws);
    expect(r.code).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(tmp, 'r.sarif'), 'utf8')).version).toBe('2.1.0');
    fs.symlinkSync(path.join(outside, 'r2.txt'), path.join(ws, 'r.txt'));
    r = run(['check', 't.py', '--output', 'r.txt'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('it is a symlink');
    expect(fs.readdirSync(outside)).toEqual([]);
    r = run(['check', '.', '--output', 't.py'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('refusing to overwrite a scanned file');
    expect(fs.readFileSync(path.join(ws, 't.py'), 'utf8')).toBe(FIXABLE);
    r = run(['check', 't.py', '--output', 'nodir/x.json'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--output nodir/x.json: folder nodir does not exist');
    oneLine(r.err);
    fs.symlinkSync(path.join(outside, 'r3.md'), path.join(tmp, 'r.md'));
    r = run(['report', '--output', path.join(tmp, 'r.md')], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('it is a symlink');
    expect(fs.readdirSync(outside)).toEqual([]);
    // inside the workspace: written
    r = run(['check', 't.py', '--output', 'out.txt', '--exit-zero'], ws);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(ws, 'out.txt'), 'utf8')).toContain('TPU readiness score');
  });
});

describe('special files', () => {
  it('a FIFO named on the command line is refused without blocking', () => {
    const { ws } = project({});
    execFileSync('mkfifo', [path.join(ws, 'f.py')]);
    const r = run(['check', 'f.py'], ws, 10_000);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
    expect(r.out).toContain('f.py: not analysed: cannot read: a FIFO, not read');
  });

  it('a symlink to /dev/zero is not read', () => {
    const { ws } = project({});
    fs.symlinkSync('/dev/zero', path.join(ws, 'z.py'));
    const r = run(['check', 'z.py', '--format', 'json'], ws, 10_000);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out).notices[0]).toMatchObject({ path: 'z.py', message: expect.stringContaining('a device, not read'), error: true });
  });

  it('the size limit counts the bytes read', async () => {
    const { readRegularFile } = await import('../src/cli/safefs');
    const { ws } = project({ 'big.py': 'x = 1\n'.repeat(400) });
    expect(() => readRegularFile(path.join(ws, 'big.py'), 1000)).toThrow(/larger than/);
    expect(readRegularFile(path.join(ws, 'big.py'), 4000).length).toBe(2400);
  });
});

describe('bad inputs end in one line and exit 2', () => {
  it('check t.py missing.py --exit-zero exits 2 and the JSON names the missing path', () => {
    const { ws } = project();
    const r = run(['check', 't.py', 'missing.py', '--exit-zero', '--format', 'json'], ws);
    expect(r.code).toBe(2);
    const j = JSON.parse(r.out);
    expect(j.notices).toContainEqual({ path: 'missing.py', message: 'not analysed: no such file or directory', error: true });
    expect(j.summary.failed).toBe(1);
  });

  it('a symlink loop is named as such', () => {
    const { ws } = project();
    fs.symlinkSync('loop.py', path.join(ws, 'loop.py'));
    const r = run(['check', 't.py', 'loop.py', '--exit-zero'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('loop.py: symlink loop');
  });
});

describe('bad inputs to cost and to the rule/hardware selectors', () => {
  const cost = (files: Record<string, string>, args: string[]) => {
    const { ws } = project(files);
    return run(['cost', ...args], ws);
  };
  const NANO = 'batch_size: 8\nblock_size: 1024\nn_layer: 12\nn_head: 12\nn_embd: 768\n';

  it('a 100,000-deep YAML or JSON is refused in one line', () => {
    let r = cost({ 'deep.yaml': `a: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n` }, ['deep.yaml']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('deep.yaml: nesting deeper than 64 levels');
    oneLine(r.err);
    r = cost({ 'deep.json': `{"a": ${'['.repeat(100_000)}${']'.repeat(100_000)}}\n` }, ['deep.json']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('deep.json: nesting deeper than 64 levels');
    oneLine(r.err);
  });

  it('a ${…} interpolation expansion bomb is refused, naming the key', () => {
    const lines = ['a0: "xxxxxxxxxx"'];
    for (let i = 1; i < 30; i++) lines.push(`a${i}: "\${a${i - 1}}\${a${i - 1}}"`);
    const r = cost({ 'bomb.yaml': NANO + lines.join('\n') + '\nmax_iters: ${a29}\n' }, ['bomb.yaml']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/bomb\.yaml:\d+: `a\d+`: interpolation expands past 1000000 characters/);
    oneLine(r.err);
  });

  it('[__proto__] in cost.toml and --hardware constructor are unknown names, not crashes', () => {
    let r = cost({ 'train.yaml': NANO + 'max_iters: 100\n', '.tpu-ready/cost.toml': '[__proto__]\nmfu = 0.5\n' }, ['train.yaml']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('.tpu-ready/cost.toml:1: `__proto__` is not a cost assumption');
    oneLine(r.err);
    r = cost({ 'train.yaml': NANO + 'max_iters: 100\n' }, ['train.yaml', '--hardware', 'constructor']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('unknown hardware "constructor"');
    oneLine(r.err);
    r = cost({ 'train.yaml': NANO + 'max_iters: 100\n' }, ['train.yaml', '--hardware', 'v6']);
    expect(r.err).toContain('unknown hardware "v6" (did you mean "v6e"?)');
  });

  it('absurd, zero and negative config numbers are named, not "Infinity days" or "missing"', () => {
    let r = cost({ 'train.yaml': NANO + 'max_iters: 1e308\n' }, ['train.yaml']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('train.yaml:6: `max_iters` = 1e+308 is not a plausible value for steps');
    expect(r.out).not.toContain('Infinity');
    r = cost({ 'train.yaml': NANO.replace('batch_size: 8', 'batch_size: 0') + 'max_iters: 100\n' }, ['train.yaml']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('train.yaml:1: `batch_size` must be positive, not 0');
    r = cost({ 'train.yaml': NANO + 'max_iters: -5\n' }, ['train.yaml']);
    expect(r.err).toContain('`max_iters` must be positive, not -5');
    oneLine(r.err);
  });

  it('unknown --select/--ignore ids are errors with "did you mean"', () => {
    const { ws } = project();
    let r = run(['check', 't.py', '--select', 'FOO'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--select: "FOO" matches no rule');
    oneLine(r.err);
    r = run(['check', 't.py', '--ignore', 'TPU10l'], ws);
    expect(r.code).toBe(2);
    expect(r.err).toContain('(did you mean "TPU101"?)');
    r = run(['report', '--select', 'TPU9999'], ws);
    expect(r.code).toBe(2);
    oneLine(r.err);
    // prefixes stay valid
    expect(run(['check', 't.py', '--select', 'tpu1', '--exit-zero'], ws).code).toBe(0);
  });
});

describe('output injection', () => {
  const EVIL = 'a\n::error::pwned\x1b[31m.py';

  it('text and github formats escape control characters and newlines in file names', () => {
    const { ws } = project({ [EVIL]: FIXABLE, 'http:/evil.py': FIXABLE });
    const gh = run(['check', '.', '--format', 'github'], ws);
    expect(gh.code).toBe(1);
    const lines = gh.out.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l).toMatch(/^::error title=TPU101,file=/);
    expect(gh.out).toContain('file=a%0A%3A%3Aerror%3A%3Apwned\\x1b[31m.py,line=2');
    expect(gh.out).not.toContain('\x1b');
    const text = run(['check', '.'], ws);
    expect(text.out).toContain('a\\n::error::pwned\\x1b[31m.py:2:5: TPU101');
    expect(text.out).not.toContain('\x1b');
    expect(text.out.split('\n').filter((l) => l.startsWith('::'))).toEqual([]);
    // notices on stderr (non-text formats) too
    fs.writeFileSync(path.join(ws, 'b\n::warning::x.py'), Buffer.from([0, 1, 2]));
    const j = run(['check', '.', '--format', 'json'], ws);
    expect(j.err).toContain('tpu-ready: b\\n::warning::x.py: skipped: binary file');
  });

  it('report links to a first folder named http: stay relative', () => {
    const { ws } = project({ 'http:/evil.py': FIXABLE });
    const md = run(['report', '--format', 'md'], ws);
    expect(md.out).toContain('(./http:/evil.py#L2)');
    expect(md.out).not.toMatch(/\]\(http:/);
    const html = run(['report', '--format', 'html'], ws);
    expect(html.out).toContain('href="./http:/evil.py#L2"');
    expect(html.out).not.toContain('href="http:');
  });

  it('a comment ending in a lone CR does not hide the rest of a notebook cell', () => {
    const nb = { cells: [{ cell_type: 'code', metadata: {}, outputs: [], execution_count: null, source: ['import torch  # hi\rx = torch.randn(3).cuda()\rprint(x)\n'] }], metadata: { kernelspec: { language: 'python', name: 'python3' } }, nbformat: 4, nbformat_minor: 5 };
    const { ws } = project({ 'cr.ipynb': JSON.stringify(nb), 'cr.py': 'import torch  # hi\rx = torch.randn(3).cuda()\n' });
    const r = run(['check', 'cr.ipynb', 'cr.py', '--format', 'json'], ws);
    const found = JSON.parse(r.out).findings.map((f: { path: string; rule: string; line: number }) => `${f.path}:${f.line}:${f.rule}`);
    expect(found).toEqual(expect.arrayContaining(['cr.ipynb:2:TPU101', 'cr.py:2:TPU101']));
    // the fix keeps the lone CRs of the cell
    run(['check', 'cr.ipynb', '--fix', '--fix-style', 'tpu-only'], ws);
    const cell = JSON.parse(fs.readFileSync(path.join(ws, 'cr.ipynb'), 'utf8')).cells[0].source.join('');
    expect(cell).not.toContain('.cuda()');
    expect(cell).toContain('# hi\r');
    expect(cell).not.toContain('# hi\n');
  });
});

describe('per-file analysis budget and linear paths', () => {
  const nested = (kb: number) => 'import torch\nx = ' + 'f(t.cuda(), "s", '.repeat(Math.floor((kb * 1000) / 18)) + '1' + ')'.repeat(Math.floor((kb * 1000) / 18)) + '\n';

  // 1 s, not less: the deep file's parse is now stopped before any rule has run, so the next file runs with a cold JIT
  // (on a loaded machine t.py alone took 0.1 s); a megabyte of nested calls takes seconds to parse
  it('a file over --file-budget is skipped with the reason; the others are analysed', () => {
    const { ws } = project({ 'deep.py': nested(1000), 't.py': FIXABLE });
    const r = run(['check', '.', '--file-budget', '1', '--format', 'json'], ws);
    const j = JSON.parse(r.out);
    expect(j.notices).toContainEqual({ path: 'deep.py', message: expect.stringMatching(/^skipped: analysis took longer than the 1 s budget per file .*--file-budget$/), error: false });
    expect(j.findings.map((f: { path: string }) => f.path)).toEqual(['t.py']);
    expect(run(['check', '.', '--file-budget', '0'], ws).err).toContain('--file-budget must be a number of seconds');
  });

  // the budget reaches into tree-sitter's parse (its progress callback): a deep file's parse took 0.4-0.6 s on a quiet
  // machine (seconds on a loaded one) before the first budget check; now the parse itself stops
  it('a 0.05 s budget stops the parse of a deep file near 0.05 s; the parser then parses afresh and the budget is disarmed', async () => {
    const { init } = await import('./setup');
    await init();
    const { analyze, pythonDocument } = await import('../src/core/engine');
    const { BudgetExceeded, budgetSkipReason } = await import('../src/core/budget');
    const { parsePython, countErrors } = await import('../src/core/parse');
    const { RULES } = await import('../src/rules');
    const { DEFAULT_OPTIONS } = await import('../src/core/types');
    const deep = nested(600);
    let thrown: unknown;
    const t0 = performance.now();
    try {
      analyze(pythonDocument('deep.py', deep), RULES, { ...DEFAULT_OPTIONS, deadline: performance.now() + 50 });
    } catch (e) {
      thrown = e;
    }
    const ms = performance.now() - t0;
    expect(thrown).toBeInstanceOf(BudgetExceeded);
    const e = thrown as InstanceType<typeof BudgetExceeded>;
    expect([e.kind, e.parsing, e.rule]).toEqual(['time', true, null]);
    expect(budgetSkipReason(e, { ms: 50, bytes: 1 }, ms, { time: '--file-budget', memory: 'M' })).toMatch(/^analysis took longer than the 0\.05 s budget per file \(stopped after \d+\.\d s, while parsing\); raise it with --file-budget$/);
    // generous for a loaded machine: an unstopped parse of this file takes seconds
    expect(ms).toBeLessThan(500);
    // the cancelled parse is not resumed: the same text parses whole, and a small file after it too
    const tree = parsePython(deep);
    expect([tree.rootNode.endIndex, countErrors(tree), tree.rootNode.namedChildren.length]).toEqual([deep.length, 0, 2]);
    tree.delete();
    // no budget is left armed (its deadline has passed: a leak would stop this analysis)
    const ok = analyze(pythonDocument('t.py', FIXABLE), RULES, DEFAULT_OPTIONS);
    expect(ok.findings.map((f) => f.rule)).toEqual(['TPU101']);
    ok.tree?.delete();
  }, 120_000);

  it('LineIndex.codePointColumn equals codePointColumn(lineText) for BMP, astral and lone surrogates', async () => {
    const { LineIndex, codePointColumn } = await import('../src/core/source');
    const parts = ['a', 'é', '😀', '\ud800', '\udc00', '中', ' ', '\r\n', '\n'];
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) % parts.length);
    for (let k = 0; k < 200; k++) {
      const text = Array.from({ length: 40 }, () => parts[rnd()]).join('');
      const li = new LineIndex(text);
      for (let line = 0; line < li.lineCount; line++) {
        const lt = li.lineText(line);
        for (let c = 0; c <= lt.length + 1; c++) expect(li.codePointColumn(line, c), JSON.stringify([text, line, c])).toBe(codePointColumn(lt, c));
      }
    }
  });

  // Speed is the benchmark's (`npm run bench`: its "nested calls, 60 KB" and "+ chain, 200 KB" shapes, were 16 s and 14 s
  // before their linear paths); this asserts what such files get: a complete analysis, no rule lost to a stack overflow
  // (the chain's 20,000 levels overflowed two recursions) and every finding. The budget is raised so that a loaded
  // machine cannot skip the file: the test asserts behaviour, not time.
  it('60 KB of nested calls and a 200 KB + chain are analysed completely: every finding, no internal error, nothing skipped', () => {
    const chain = 'import torch\ny = ' + Array(20_000).fill('t.cuda()').join(' + ') + '\n';
    const { ws } = project({ 'nested.py': nested(60), 'chain.py': chain });
    const expected: Record<string, number> = { 'nested.py': 3333, 'chain.py': 20_000 };
    for (const f of ['nested.py', 'chain.py']) {
      const r = run(['check', f, '--exit-zero', '--statistics', '--file-budget', '3600'], ws, 590_000);
      expect(r.signal, f).toBeNull();
      expect(r.code, f).toBe(0);
      // no notice (skipped, internal error in a rule) and one count line per rule: TPU101 on every `.cuda()`
      expect(r.err, f).toBe('');
      expect(r.out.split('\n').filter((l) => /^\d+\t/.test(l)).map((l) => l.split('\t').slice(0, 2).join(' ')), f).toEqual([`${expected[f]} TPU101`]);
      expect(r.out, f).toContain(`Found ${expected[f]} issues in 1 file`);
    }
  }, 600_000);
});

describe('special files met in a walk', () => {
  it('a FIFO and a symlink to /dev/zero inside a scanned folder are neither opened nor read', () => {
    const { ws } = project();
    execFileSync('mkfifo', [path.join(ws, 'pipe.py')]);
    fs.symlinkSync('/dev/zero', path.join(ws, 'zero.py'));
    const r = run(['check', '.', '--format', 'json', '--exit-zero'], ws, 15_000);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.summary.files).toBe(1);
    expect(j.findings.every((f: { path: string }) => f.path === 't.py')).toBe(true);
  });
});

describe('--debug', () => {
  it('an internal error is one line without --debug, the stack trace with it', async () => {
    const { main } = await import('../src/cli/main');
    const capture = () => {
      let err = '';
      return { io: { out: () => { throw new Error('boom\nmore'); }, err: (s: string) => void (err += s), isTTY: false }, err: () => err };
    };
    let c = capture();
    expect(await main(['rules'], c.io)).toBe(2);
    expect(c.err()).toBe('tpu-ready: rules: boom (internal error; --debug prints the trace)\n');
    c = capture();
    expect(await main(['rules', '--debug'], c.io)).toBe(2);
    expect(c.err()).toMatch(/^tpu-ready: internal error: Error: boom\nmore\n\s+at /);
  });
});

describe('checkWritable (also guards the extension’s progress and generated files)', () => {
  it('refuses a symlink (dangling or not), a symlinked folder out of the root and a path outside; allows new files inside', async () => {
    const { checkWritable, realRoots } = await import('../src/cli/safefs');
    const { ws, outside } = project();
    const roots = realRoots([ws]);
    fs.symlinkSync(path.join(outside, 'nope.py'), path.join(ws, 'dangling.py'));
    fs.symlinkSync(path.join(ws, 't.py'), path.join(ws, 'inner.py'));
    fs.symlinkSync(outside, path.join(ws, 'out'));
    expect(() => checkWritable(path.join(ws, 'dangling.py'), roots)).toThrow(/it is a symlink/);
    expect(() => checkWritable(path.join(ws, 'inner.py'), roots)).toThrow(/it is a symlink/);
    expect(() => checkWritable(path.join(ws, 'out', 'new', 'x.json'), roots)).toThrow(/outside the workspace .*through a symlinked folder/);
    expect(() => checkWritable(path.join(outside, 'x.json'), roots)).toThrow(/outside the workspace/);
    expect(() => checkWritable(path.join(ws, '.tpu-ready', 'progress.json'), roots)).not.toThrow();
    expect(() => checkWritable(path.join(ws, 't.py'), roots)).not.toThrow();
  });
});
