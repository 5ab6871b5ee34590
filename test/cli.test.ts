/** The CLI as a user runs it: the built dist/cli.js in a subprocess. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import Ajv from 'ajv-draft-04';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './setup';

const CLI = path.join(ROOT, 'dist/cli.js');
const WS = path.join(ROOT, 'test/workspace');

function run(args: string[], cwd = WS) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function tmpCopy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-cli-'));
  fs.cpSync(WS, dir, { recursive: true });
  return dir;
}

beforeAll(() => {
  execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT });
});

describe('tpu-ready check', () => {
  it('text output: findings with path:line:col, notices for skipped files, summary', async () => {
    const r = run(['check', '.', '--jobs', '1']);
    // the workspace holds a broken notebook: reported, the scan goes on, exit code 2
    expect(r.code).toBe(2);
    expect(r.out).toMatch(/^train\.py:6:9: TPU101 \[\*\] `nn\.Linear\(16, 4\)\.cuda\(\)` places work on a CUDA device/m);
    expect(r.out).toMatch(/^notebooks\/nb\.ipynb:cell 2:2:5: TPU101 /m);
    expect(r.out).toMatch(/error: notebooks\/broken\.ipynb: not analysed: broken notebook: not valid JSON/);
    expect(r.out).toMatch(/notice: weights\.py: skipped: binary file/);
    expect(r.out).not.toContain('vendored');
    expect(r.out).toMatch(/TPU readiness score: \d+\/100/);
    await expect(r.out).toMatchFileSnapshot('__snapshots__/cli-text.snap');
  });

  it('json output has the documented shape', async () => {
    const r = run(['check', '--format', 'json', '--jobs', '1']);
    expect(r.code).toBe(2);
    const j = JSON.parse(r.out);
    expect(j.version).toBe(1);
    expect(j.target).toEqual({ profile: 'torch_xla', version: '2.9' });
    expect(Object.keys(j.summary)).toEqual(expect.arrayContaining(['files', 'findings', 'score', 'errors', 'warnings', 'info', 'fixable', 'effort', 'byStep', 'skipped']));
    expect(j.summary.findings).toBe(j.findings.length);
    for (const f of j.findings) {
      expect(Object.keys(f).sort()).toEqual(['cell', 'column', 'effort', 'endColumn', 'endLine', 'fix', 'line', 'message', 'path', 'rule', 'severity', 'step'].sort());
      expect(f.line).toBeGreaterThanOrEqual(1);
      expect(f.column).toBeGreaterThanOrEqual(1);
      expect(path.isAbsolute(f.path)).toBe(false);
      expect(f.cell === null).toBe(!f.path.endsWith('.ipynb'));
    }
    const nb = j.findings.find((f: { rule: string; path: string }) => f.rule === 'TPU101' && f.path.endsWith('nb.ipynb'));
    expect(nb).toMatchObject({ cell: 2, line: 2, column: 5, endColumn: 13 });
    await expect(r.out).toMatchFileSnapshot('__snapshots__/cli-json.snap');
  });

  it('sarif output validates against the SARIF 2.1.0 schema', async () => {
    const r = run(['check', '--format', 'sarif', '--jobs', '1']);
    const log = JSON.parse(r.out);
    const schema = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json'), 'utf8'));
    const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false, unicodeRegExp: false });
    const validate = ajv.compile(schema);
    expect(validate(log), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true);
    expect(log.runs[0].tool.driver.rules.length).toBeGreaterThan(0);
    expect(log.runs[0].results.length).toBeGreaterThan(0);
    await expect(r.out).toMatchFileSnapshot('__snapshots__/cli-sarif.snap');
  });

  it('github output emits workflow annotations', async () => {
    const r = run(['check', '--format', 'github', '--jobs', '1']);
    expect(r.out).toMatch(/^::error title=TPU101,file=train\.py,line=6,col=9,endLine=6,endColumn=\d+::TPU101 /m);
    await expect(r.out).toMatchFileSnapshot('__snapshots__/cli-github.snap');
  });

  it('exit codes: 0 clean, 1 findings, 2 usage or missing path; --exit-zero', () => {
    expect(run(['check', 'clean.py']).code).toBe(0);
    expect(run(['check', 'train.py']).code).toBe(1);
    expect(run(['check', 'train.py', '--exit-zero']).code).toBe(0);
    // a file that cannot be analysed is an error, even with --exit-zero; the rest is still scanned
    const broken = run(['check', 'notebooks/broken.ipynb', 'train.py', '--exit-zero']);
    expect(broken.code).toBe(2);
    expect(broken.out).toMatch(/^error: notebooks\/broken\.ipynb: not analysed: broken notebook: not valid JSON at line 1, column \d+$/m);
    expect(broken.out).toMatch(/^train\.py:\d+:\d+: TPU101 /m);
    expect(broken.out).toMatch(/1 file could not be analysed/);
    const bad = run(['check', '--format', 'xml']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--format must be text, json, sarif or github/);
    expect(run(['check', '--bogus']).code).toBe(2);
    expect(run(['check', 'no/such/file.py']).code).toBe(2);
    expect(run(['check', '--target-version', '3.1']).code).toBe(2);
  });

  it('--select and --ignore take ids and prefixes', () => {
    const only = JSON.parse(run(['check', '--format', 'json', '--select', 'TPU1']).out);
    expect(only.findings.length).toBeGreaterThan(0);
    expect(only.findings.every((f: { rule: string }) => f.rule.startsWith('TPU1'))).toBe(true);
    const none = JSON.parse(run(['check', '--format', 'json', '--ignore', 'TPU']).out);
    expect(none.findings).toEqual([]);
  });

  it('skips non-UTF-8 files with a notice and goes on', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-enc-'));
    fs.writeFileSync(path.join(dir, 'latin1.py'), Buffer.from([0x78, 0x20, 0x3d, 0x20, 0x22, 0xff, 0xfe, 0x22, 0x0a]));
    fs.writeFileSync(path.join(dir, 'ok.py'), 'import torch\ntorch.ones(1).cuda()\n');
    const r = run(['check', '.'], dir);
    expect(r.out).toMatch(/notice: latin1\.py: skipped: not valid UTF-8/);
    expect(r.out).toMatch(/^ok\.py:2:1: TPU101 /m);
    expect(r.code).toBe(1);
  });

  it('skips files over the size limit with a notice', () => {
    const r = run(['check', 'train.py', '--max-file-size', '0.1']);
    expect(r.out).toMatch(/skipped: larger than/);
    expect(r.code).toBe(0);
  });

  it('counts the cells of a notebook against the size limit, not its outputs (an embedded plot)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-nbsize-'));
    const cell = (source: string, outputs: unknown[] = []) => ({ cell_type: 'code', metadata: {}, execution_count: 1, source, outputs });
    const png = { output_type: 'display_data', metadata: {}, data: { 'image/png': 'iVBORw0KGgo'.repeat(30_000) } };
    const nb = (cells: unknown[]) => JSON.stringify({ nbformat: 4, nbformat_minor: 5, metadata: { kernelspec: { name: 'python3', language: 'python' } }, cells });
    fs.writeFileSync(path.join(dir, 'plots.ipynb'), nb([cell('import torch\nx = torch.ones(1).cuda()\n', [png])]));
    fs.writeFileSync(path.join(dir, 'code.ipynb'), nb([cell('import torch\n' + 'y = 1\n'.repeat(40_000))]));
    const r = run(['check', '.', '--max-file-size', '100'], dir);
    expect(fs.statSync(path.join(dir, 'plots.ipynb')).size).toBeGreaterThan(300_000);
    expect(r.out).toMatch(/^plots\.ipynb:cell 0:2:\d+: TPU101 /m);
    expect(r.out).toMatch(/notice: code\.ipynb: skipped: cells larger than 100 KiB \(\d+ KiB, outputs not counted\)/);
  });

  it('--diff writes nothing; --fix applies safe fixes once, writes accel.py, and converges', () => {
    const dir = tmpCopy();
    const before = fs.readFileSync(path.join(dir, 'train.py'), 'utf8');
    const diff = run(['check', 'train.py', '--diff'], dir);
    expect(diff.out).toContain('--- a/train.py');
    expect(diff.out).toMatch(/^\+model = nn\.Linear\(16, 4\)\.to\(device\)$/m);
    expect(fs.readFileSync(path.join(dir, 'train.py'), 'utf8')).toBe(before);
    expect(fs.existsSync(path.join(dir, 'accel.py'))).toBe(false);

    const fixed = run(['check', 'train.py', '--fix'], dir);
    expect(fixed.out).toMatch(/Fixed \d+ issues?\./);
    const after = fs.readFileSync(path.join(dir, 'train.py'), 'utf8');
    expect(after).not.toBe(before);
    expect(after).toContain('model = nn.Linear(16, 4).to(device)');
    expect(fs.existsSync(path.join(dir, 'accel.py'))).toBe(after.includes('import accel'));
    const again = run(['check', 'train.py', '--fix'], dir);
    expect(again.out).not.toMatch(/Fixed/);
    expect(fs.readFileSync(path.join(dir, 'train.py'), 'utf8')).toBe(after);
  });

  it('--fix writes the device module when a dual-path fix calls it, once', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-accel-'));
    fs.writeFileSync(path.join(dir, 'a.py'), 'import torch\n\nx = torch.ones(2).cuda()\n');
    fs.writeFileSync(path.join(dir, 'b.py'), 'import torch\n\ny = torch.zeros(2).cuda()\n');
    const r = run(['check', '.', '--fix', '--select', 'TPU101'], dir);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'a.py'), 'utf8')).toBe('import torch\nimport accel\n\nx = torch.ones(2).to(accel.device())\n');
    expect(fs.readFileSync(path.join(dir, 'accel.py'), 'utf8')).toContain('def device():');
    expect(r.out.match(/created the device-abstraction module/g)?.length).toBe(1);
  });

  it('--fix leaves a file unfixed when the existing accel module cannot serve its fixes (older format, missing functions)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-stale-'));
    const src = 'import torch\n\nx = torch.ones(2).cuda()\n';
    fs.writeFileSync(path.join(dir, 'a.py'), src);
    // a module written by an older tpu-ready: no format mark
    const stale = '"""Device abstraction.\n\nGenerated by tpu-ready as `accel`.\n"""\nimport torch\n\n\ndef device():\n    return torch.device("cpu")\n';
    fs.writeFileSync(path.join(dir, 'accel.py'), stale);
    const r = run(['check', '.', '--fix', '--select', 'TPU101'], dir);
    expect(fs.readFileSync(path.join(dir, 'a.py'), 'utf8')).toBe(src);
    expect(r.out).toMatch(/a\.py: not fixed: accel\.py cannot serve these fixes \(generated by an older tpu-ready \(format 1, fixes need \d+\)\)/);
    expect(fs.readFileSync(path.join(dir, 'accel.py'), 'utf8')).toBe(stale);
    // the user's own module that lacks a called function
    fs.writeFileSync(path.join(dir, 'accel.py'), 'def sync():\n    pass\n');
    const mine = run(['check', '.', '--fix', '--select', 'TPU101'], dir);
    expect(mine.out).toContain('(no `device()`)');
    expect(fs.readFileSync(path.join(dir, 'a.py'), 'utf8')).toBe(src);
    // deleted: --fix writes the current module and fixes the file
    fs.rmSync(path.join(dir, 'accel.py'));
    run(['check', '.', '--fix', '--select', 'TPU101'], dir);
    expect(fs.readFileSync(path.join(dir, 'a.py'), 'utf8')).toContain('.to(accel.device())');
    expect(fs.readFileSync(path.join(dir, 'accel.py'), 'utf8')).toMatch(/^# tpu-ready accel format \d+$/m);
  });

  it('the generated accel module has no findings and does not count toward the score', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-score-'));
    fs.writeFileSync(path.join(dir, 'a.py'), 'import torch\n\nx = torch.ones(2).cuda()\n');
    fs.writeFileSync(path.join(dir, 'b.py'), 'import torch\n\ny = torch.zeros(2).cuda()\n');
    const score = (out: string) => out.match(/TPU readiness score: (\d+)\/100/)![1];
    const before = run(['check', '.'], dir);
    run(['check', 'a.py', '--fix', '--select', 'TPU101'], dir);
    expect(fs.existsSync(path.join(dir, 'accel.py'))).toBe(true);
    fs.writeFileSync(path.join(dir, 'a.py'), 'import torch\n\nx = torch.ones(2).cuda()\n'); // the same findings as before
    const after = run(['check', '.'], dir);
    expect(after.out).not.toMatch(/^accel\.py:/m);
    expect(score(after.out)).toBe(score(before.out));
  });

  it('--fix writes the device module where `import accel` resolves: the package\'s import root', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-pkg-'));
    fs.mkdirSync(path.join(dir, 'pkg/sub'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'pkg/__init__.py'), '');
    fs.writeFileSync(path.join(dir, 'pkg/sub/__init__.py'), '');
    fs.writeFileSync(path.join(dir, 'pkg/trainer.py'), 'import torch\n\nx = torch.ones(2).cuda()\n');
    fs.writeFileSync(path.join(dir, 'pkg/sub/deep.py'), 'import torch\n\ny = torch.ones(2).cuda()\n');
    run(['check', '.', '--fix', '--select', 'TPU101'], dir);
    expect(fs.readFileSync(path.join(dir, 'pkg/trainer.py'), 'utf8')).toContain('import accel\n');
    expect(fs.existsSync(path.join(dir, 'accel.py'))).toBe(true);
    expect(fs.existsSync(path.join(dir, 'pkg/accel.py'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'pkg/sub/accel.py'))).toBe(false);
    // a dotted accel-module is a path under that root
    const dir2 = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-pkg-'));
    fs.cpSync(dir, dir2, { recursive: true });
    fs.rmSync(path.join(dir2, 'accel.py'));
    fs.writeFileSync(path.join(dir2, 'pkg/sub/deep.py'), 'import torch\n\ny = torch.ones(2).cuda()\n');
    fs.writeFileSync(path.join(dir2, 'pyproject.toml'), '[tool.tpu-ready]\naccel-module = "pkg.accel"\n');
    run(['check', 'pkg/sub/deep.py', '--fix', '--select', 'TPU101'], dir2);
    expect(fs.existsSync(path.join(dir2, 'pkg/accel.py'))).toBe(true);
    expect(fs.existsSync(path.join(dir2, 'pkg/sub/pkg/accel.py'))).toBe(false);
    expect(fs.existsSync(path.join(dir2, 'pkg/sub/accel.py'))).toBe(false);
  });

  it('--fix keeps a UTF-8 BOM, CRLF and lone-CR line endings', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-eol-'));
    fs.writeFileSync(path.join(dir, 'bom.py'), '\ufeffimport torch\r\n# é\r\nx = torch.ones(2).cuda()\r\n');
    fs.writeFileSync(path.join(dir, 'cr.py'), 'import torch\rx = torch.ones(2).cuda()\rprint(x)\r');
    const r = run(['check', '.', '--fix', '--select', 'TPU101', '--fix-style', 'tpu-only'], dir);
    expect(r.out).not.toContain('syntax errors');
    expect(fs.readFileSync(path.join(dir, 'bom.py'), 'utf8')).toBe('\ufeffimport torch\r\nimport torch_xla\r\n# é\r\nx = torch.ones(2).to(torch_xla.device())\r\n');
    expect(fs.readFileSync(path.join(dir, 'cr.py'), 'utf8')).toBe('import torch\rimport torch_xla\rx = torch.ones(2).to(torch_xla.device())\rprint(x)\r');
  });

  it('--fix on a notebook changes only the fixed source bytes (compact JSON, big ints, 1.0, CRLF)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-nb-'));
    const cell = (src: string) => `{"cell_type":"code","execution_count":1,"metadata":{"z":1,"a":2},"outputs":[{"output_type":"execute_result","data":{"text/plain":["1234567890123456789"]},"metadata":{},"execution_count":1,"n":1234567890123456789,"f":1.0}],"source":${src}}`;
    const compact = `{"nbformat":4,"nbformat_minor":5,"metadata":{},"cells":[${cell('["import torch\\n","x = torch.ones(2).cuda()"]')}]}`;
    fs.writeFileSync(path.join(dir, 'c.ipynb'), compact);
    const crlf = `{\r\n "cells": [\r\n  ${cell('[\r\n    "import torch\\n",\r\n    "x = torch.ones(2).cuda()"\r\n   ]')}\r\n ],\r\n "nbformat": 4, "nbformat_minor": 5, "metadata": {}\r\n}\r\n`;
    fs.writeFileSync(path.join(dir, 'r.ipynb'), crlf);
    run(['check', '.', '--fix', '--select', 'TPU101', '--fix-style', 'tpu-only'], dir);
    expect(fs.readFileSync(path.join(dir, 'c.ipynb'), 'utf8')).toBe(compact.replace('"import torch\\n",', '"import torch\\n","import torch_xla\\n",').replace('.cuda()', '.to(torch_xla.device())'));
    expect(fs.readFileSync(path.join(dir, 'r.ipynb'), 'utf8')).toBe(
      crlf.replace('"import torch\\n",\r\n', '"import torch\\n",\r\n    "import torch_xla\\n",\r\n').replace('.cuda()', '.to(torch_xla.device())'),
    );
  });

  it('--fix on a notebook edits the right cell and keeps the JSON layout', () => {
    const dir = tmpCopy();
    const file = path.join(dir, 'notebooks/nb.ipynb');
    const before = JSON.parse(fs.readFileSync(file, 'utf8'));
    run(['check', 'notebooks/nb.ipynb', '--fix', '--fix-style', 'tpu-only'], dir);
    const text = fs.readFileSync(file, 'utf8');
    const after = JSON.parse(text);
    expect(text.startsWith('{\n "cells": [\n')).toBe(true);
    expect(after.cells[0]).toEqual(before.cells[0]);
    expect(after.cells[2].source.join('')).toContain('u = t.to(dev)');
    expect(after.metadata).toEqual(before.metadata);
  });

  it('honours .gitignore and pyproject exclude', () => {
    const dir = tmpCopy();
    fs.mkdirSync(path.join(dir, 'build'));
    fs.writeFileSync(path.join(dir, 'build/gen.py'), 'import torch\ntorch.ones(1).cuda()\n');
    fs.writeFileSync(path.join(dir, '.gitignore'), 'build/\n');
    const j = JSON.parse(run(['check', '--format', 'json'], dir).out);
    expect(j.findings.some((f: { path: string }) => f.path.startsWith('build/') || f.path.startsWith('vendored/'))).toBe(false);
    const all = JSON.parse(run(['check', '--format', 'json', '--no-gitignore'], dir).out);
    expect(all.findings.some((f: { path: string }) => f.path.startsWith('build/'))).toBe(true);
  });

  it('worker threads give the same result as one thread on a large tree', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-big-'));
    const src = fs.readFileSync(path.join(WS, 'train.py'), 'utf8');
    for (let i = 0; i < 150; i++) {
      fs.mkdirSync(path.join(dir, `pkg${i % 10}`), { recursive: true });
      fs.writeFileSync(path.join(dir, `pkg${i % 10}`, `m${i}.py`), i % 3 ? `def f${i}(x):\n    return x + ${i}\n` : src);
    }
    const one = run(['check', '--format', 'json', '--jobs', '1'], dir);
    const many = run(['check', '--format', 'json', '--jobs', '3'], dir);
    expect(many.code).toBe(1);
    expect(JSON.parse(many.out)).toEqual(JSON.parse(one.out));
  });

  it('the sample workspace yields findings in every rule family', () => {
    const j = JSON.parse(run(['check', 'examples', '--format', 'json'], ROOT).out);
    const families = new Set(j.findings.map((f: { rule: string }) => f.rule[3]));
    expect([...families].sort()).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9']);
    expect(j.findings.some((f: { path: string; cell: number | null }) => f.path.endsWith('.ipynb') && f.cell !== null)).toBe(true);
  });

  it('related locations in every format: a tie in model.py behind the move in train.py (project scope)', () => {
    const args = ['check', 'examples/gpt-cuda', '--select', 'TPU108', '--jobs', '1'];
    const text = run(args, ROOT).out;
    expect(text).toMatch(/^examples\/gpt-cuda\/train\.py:65:5: TPU108 `GPT` \(model\.py\) ties `lm_head\.weight` to `wte\.weight`.*\n {4}related: examples\/gpt-cuda\/model\.py:44:9: the tie /m);
    const j = JSON.parse(run([...args, '--format', 'json'], ROOT).out);
    const tie = j.findings.find((f: { line: number }) => f.line === 65);
    expect(tie.related).toEqual([{ path: 'examples/gpt-cuda/model.py', line: 44, column: 9, endLine: 44, endColumn: 46, cell: null, message: expect.stringMatching(/^the tie `lm_head\.weight` = `wte\.weight`/) }]);
    const log = JSON.parse(run([...args, '--format', 'sarif'], ROOT).out);
    const schema = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json'), 'utf8'));
    const validate = new Ajv({ allErrors: true, strict: false, validateFormats: false, unicodeRegExp: false }).compile(schema);
    expect(validate(log), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true);
    const res = log.runs[0].results.find((r: { locations: { physicalLocation: { region: { startLine: number } } }[] }) => r.locations[0].physicalLocation.region.startLine === 65);
    expect(res.relatedLocations[0].physicalLocation).toEqual({ artifactLocation: { uri: 'examples/gpt-cuda/model.py', uriBaseId: '%SRCROOT%' }, region: { startLine: 44, startColumn: 9, endLine: 44, endColumn: 46 } });
    expect(run([...args, '--format', 'github'], ROOT).out).toMatch(/line=65,.*\(related: examples\/gpt-cuda\/model\.py:44:9: the tie /);
    // the file alone (no project folder around it that holds model.py) has no such finding
    const alone = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-alone-'));
    fs.copyFileSync(path.join(ROOT, 'examples/gpt-cuda/train.py'), path.join(alone, 'train.py'));
    expect(run(['check', 'train.py', '--select', 'TPU108', '--format', 'json'], alone).out).not.toContain('ties');
  });

  it('a checkout without .git or pyproject.toml, checked from its top: a script in a subfolder resolves the package beside it', () => {
    const top = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-unmarked-'));
    fs.mkdirSync(path.join(top, 'scripts'));
    fs.mkdirSync(path.join(top, 'mylib'));
    fs.writeFileSync(path.join(top, 'mylib', '__init__.py'), '');
    fs.writeFileSync(path.join(top, 'mylib', 'model.py'), 'import torch.nn as nn\n\n\nclass LM(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.wte = nn.Embedding(8, 4)\n        self.lm_head = nn.Linear(4, 8, bias=False)\n        self.lm_head.weight = self.wte.weight\n');
    fs.writeFileSync(path.join(top, 'scripts', 'train.py'), 'import torch\nfrom mylib.model import LM\n\nmodel = LM()\nmodel.to("cuda")\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n');
    const j = JSON.parse(run(['check', 'scripts/train.py', '--select', 'TPU108', '--format', 'json'], top).out);
    expect(j.findings.map((f: { path: string; line: number; related: { path: string }[] }) => `${f.path}:${f.line} ${f.related.map((r) => r.path).join(',')}`)).toEqual(['scripts/train.py:5 mylib/model.py']);
    // with a project marker in the subfolder, that folder is the project: the package outside it is not read
    fs.writeFileSync(path.join(top, 'scripts', 'pyproject.toml'), '[project]\nname = "x"\n');
    expect(JSON.parse(run(['check', 'scripts/train.py', '--select', 'TPU108', '--format', 'json'], top).out).findings).toEqual([]);
    fs.rmSync(top, { recursive: true, force: true });
  });

  it('rules, --version and --help', () => {
    expect(run(['--version']).out).toMatch(/^tpu-ready \d+\.\d+\.\d+/);
    expect(run(['rules']).out).toMatch(/^TPU101 /m);
    expect(run(['--help']).out).toContain('Exit codes');
  });
});
