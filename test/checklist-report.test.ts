/** The readiness report (Markdown, HTML, and `tpu-ready report`) and the checklist's generators. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import * as esbuild from 'esbuild';
import YAML from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checklistVM, ciWorkflow, compileCacheSnippet, emptyProgress, insertCompileCache, NO_FACTS, parseProgress, recordSnapshot, renderHtml, renderMarkdown,
  resumeScaffold, setNote, smokeTest, SMOKE_TEST_MARKER, collectFacts, type ChecklistFinding,
} from '../src/checklist';
import { countErrors, parsePython } from '../src/core/parse';
import { init, ROOT } from './setup';

const XSS = '<img src=x onerror="alert(1)">';

function vm() {
  const findings: ChecklistFinding[] = [
    { rule: 'TPU101', step: 3, severity: 'error', message: '`m.cuda()` places work on a CUDA device <b>', path: 'dir/<evil>.py', uri: 'dir/<evil>.py', line: 5, column: 3, cell: null, fix: { applicability: 'safe' } },
    { rule: 'TPU201', step: 6, severity: 'warning', message: 'host read', path: 'nb.ipynb', uri: 'nb.ipynb', line: 2, column: 1, cell: 4, fix: null },
    { rule: 'TPU102', step: 3, severity: 'error', message: 'x', path: 'j.py', uri: 'javascript:alert(1)', line: 1, column: 1, cell: null, fix: null },
  ];
  let progress = setNote(emptyProgress(), 3, `note ${XSS} | *bold* [link](javascript:x)`);
  progress = recordSnapshot(progress, { date: '2026-03-01', score: 20, done: 0, open: { 1: 1, 2: 2, 3: 3, 4: 0, 5: 0, 6: 1, 7: 0, 8: 0, 9: 0, 10: 0 } });
  return checklistVM({ profile: 'torch_xla', score: 61, findings, facts: NO_FACTS, progress });
}

const OPTS = { project: `proj${XSS}`, generated: '2026-03-02T10:00:00Z' };

describe('report', () => {
  it('markdown: score, steps table, findings with links, notes and history, workspace text escaped', () => {
    const md = renderMarkdown(vm(), OPTS);
    expect(md).toContain('**Readiness score:** 61/100');
    expect(md).toContain('**Checklist:** 0/10 steps done');
    expect(md).toMatch(/^\| 3\. Move model to the XLA device \| \[ \] to do \| 2 \| 0\/2 \|$/m);
    expect(md).toContain('- [dir/&lt;evil&gt;.py:5:3](dir/%3Cevil%3E.py#L5) error [TPU101](https://github.com/tpu-ready/tpu-ready/blob/main/docs/rules/TPU101.md): `m.cuda()` places work on a CUDA device &lt;b&gt;');
    expect(md).toContain('[nb.ipynb:cell 4:2:1](nb.ipynb)');
    expect(md).toContain('](#) error [TPU102]'); // javascript: link dropped
    expect(md).toContain('> **Note:** note &lt;img src=x onerror="alert\\(1\\)"&gt;'.replace('\\(1\\)', '(1)'));
    expect(md).not.toMatch(/<img/);
    expect(md).toContain('\\| \\*bold\\* \\[link\\](javascript:x)');
    expect(md).toMatch(/^\| 2026-03-01 \| 20 \| 0\/10 \| 7 \|$/m);
  });

  it('html: standalone page with a no-script CSP, every workspace value escaped', () => {
    const html = renderHtml(vm(), OPTS);
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`);
    expect(html).not.toMatch(/<img|<script|<b>|<evil>|href="javascript/i);
    expect(html).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
    expect(html).toContain('<a href="dir/%3Cevil%3E.py#L5">dir/&lt;evil&gt;.py:5:3</a>');
    expect(html).toContain('<code>m.cuda()</code> places work on a CUDA device &lt;b&gt;');
    expect(html).toContain('<td>2026-03-01</td><td>20</td><td>0/10</td><td>7</td>');
    expect(html).toContain('<h2 id="step-10">Step 10: CI and reproducibility');
  });
});

describe('generators', () => {
  beforeAll(() => init());
  const parses = (text: string) => {
    const tree = parsePython(text);
    const errors = countErrors(tree);
    tree.delete();
    return errors;
  };

  it('smoke test: device count, matmul benchmark, training steps of the model, valid Python per profile and version', () => {
    for (const target of [{ profile: 'torch_xla', version: '2.9' }, { profile: 'torch_xla', version: '2.3' }, { profile: 'torchtpu', version: 'preview' }] as const) {
      for (const model of [null, { module: 'models.gpt', name: 'GPT' }]) {
        const { path: p, text } = smokeTest(target, model);
        expect(p).toBe('tpu_smoke_test.py');
        expect(parses(text), `${target.profile} ${target.version} ${model?.name}`).toBe(0);
        expect(text).toContain(SMOKE_TEST_MARKER);
        expect(text).toMatch(/a @ b/);
        expect(text).toMatch(/loss\.backward\(\)/);
        if (model) expect(text).toContain('from models.gpt import GPT');
        if (target.profile === 'torch_xla') {
          expect(text).toContain('xr.global_runtime_device_count()');
          expect(text).toContain('device = torch_xla.device()');
          expect(text).toContain('xm.optimizer_step(optimizer)');
          expect(text).toContain(target.version === '2.9' ? 'torch_xla.sync()' : 'xm.mark_step()');
          expect(text).not.toContain('torch_tpu');
        } else {
          expect(text).toContain('import torch_tpu');
          expect(text).toContain('device = torch.device("tpu")');
          expect(text).not.toMatch(/torch_xla|\bxm\./);
        }
        expect(collectFacts([{ path: 'tools/' + p, text }], target.profile).hasSmokeTest).toBe(true);
      }
    }
  });

  it('resume scaffold: valid Python, resumes from the newest checkpoint, recognised as resume evidence', () => {
    for (const profile of ['torch_xla', 'torchtpu'] as const) {
      const { text } = resumeScaffold({ profile, version: '2.9' });
      expect(parses(text)).toBe(0);
      expect(text).toContain('map_location="cpu"');
      expect(text).toContain('def load_latest_checkpoint(directory, model, optimizer)');
      expect(text).toContain(profile === 'torch_xla' ? 'xm.save(state, tmp)' : 'torch.save(cpu_state, tmp)');
      expect(collectFacts([{ path: 'checkpointing.py', text }], profile).hasResume).toBe(true);
    }
  });

  it('CI workflow: runs tpu-ready check --format sarif and uploads it to code scanning', () => {
    const wf = ciWorkflow({ profile: 'torch_xla', version: '2.9' });
    expect(wf.path).toBe('.github/workflows/tpu-ready.yml');
    const doc = YAML.parse(wf.text);
    expect(doc.permissions['security-events']).toBe('write');
    const steps = doc.jobs['tpu-ready'].steps as { run?: string; uses?: string; with?: Record<string, string> }[];
    const scan = steps.find((s) => s.run?.includes('tpu-ready check'))!;
    expect(scan.run).toContain('--format sarif --output tpu-ready.sarif');
    const upload = steps.find((s) => s.uses?.startsWith('github/codeql-action/upload-sarif'))!;
    expect(upload.with!.sarif_file).toBe('tpu-ready.sarif');
    expect(collectFacts([{ path: wf.path, text: wf.text }], 'torch_xla').hasCiWorkflow).toBe(true);
    expect(ciWorkflow({ profile: 'torchtpu', version: 'preview' }).text).toContain('--target torchtpu');
  });

  it('compile cache: inserted after the imports once, valid Python, none for the preview', () => {
    const src = '"""Train."""\nimport torch\nfrom torch import (\n    nn,\n)\n\nmodel = nn.Linear(2, 2)\n';
    const out = insertCompileCache(src, { profile: 'torch_xla', version: '2.9' })!;
    expect(parses(out)).toBe(0);
    expect(out).toMatch(/\)\nimport os\nimport torch_xla\.runtime as xr\n\n# Persistent XLA compilation cache[^\n]*\nxr\.initialize_cache\(/);
    expect(out.indexOf('initialize_cache')).toBeLessThan(out.indexOf('model = '));
    expect(insertCompileCache(out, { profile: 'torch_xla', version: '2.9' })).toBeNull();
    expect(collectFacts([{ path: 'train.py', text: out }], 'torch_xla').hasCompileCache).toBe(true);
    expect(compileCacheSnippet({ profile: 'torchtpu', version: 'preview' })).toBeNull();
    const crlf = insertCompileCache('import torch\r\nx = 1\r\n', { profile: 'torch_xla', version: '2.9' })!;
    expect(crlf).not.toMatch(/[^\r]\n/);
  });
});

describe('tpu-ready report', () => {
  let cli: string;
  beforeAll(async () => {
    // a private build, so this file never races test/cli.test.ts over dist/
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-report-build-'));
    await esbuild.build({
      entryPoints: [path.join(ROOT, 'src/cli/main.ts')], outfile: path.join(out, 'cli.js'), bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'error',
      alias: { 'web-tree-sitter': path.join(ROOT, 'node_modules/web-tree-sitter/web-tree-sitter.cjs') },
    });
    fs.copyFileSync(path.join(ROOT, 'node_modules/web-tree-sitter/web-tree-sitter.wasm'), path.join(out, 'web-tree-sitter.wasm'));
    fs.copyFileSync(path.join(ROOT, 'node_modules/tree-sitter-python/tree-sitter-python.wasm'), path.join(out, 'tree-sitter-python.wasm'));
    cli = path.join(out, 'cli.js');
  });

  const run = (args: string[], cwd: string) => spawnSync(process.execPath, [cli, ...args], { cwd, encoding: 'utf8' });
  const workspace = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-report-'));
    fs.cpSync(path.join(ROOT, 'test/workspace'), dir, { recursive: true });
    return dir;
  };

  it('md: the same findings as check, per step, with the ticks and notes of progress.json', () => {
    const ws = workspace();
    fs.mkdirSync(path.join(ws, '.tpu-ready'));
    fs.writeFileSync(path.join(ws, '.tpu-ready/progress.json'), JSON.stringify({ version: 1, steps: { '1': { ticks: { 'tpu-type': true, host: true }, note: 'v5e-8' } } }));
    const check = JSON.parse(run(['check', '--format', 'json', '--jobs', '1'], ws).stdout);
    const r = run(['report'], ws);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`**Readiness score:** ${check.summary.score}/100`);
    expect(r.stdout).toContain(`**Open findings:** ${check.summary.findings}`);
    for (const [step, n] of Object.entries(check.summary.byStep as Record<string, number>)) expect(r.stdout).toMatch(new RegExp(`^\\| ${step}\\. [^|]+ \\| [^|]+ \\| ${n} \\|`, 'm'));
    expect(r.stdout).toContain('[train.py:6:9](train.py#L6) error [TPU101]');
    expect(r.stdout).toContain('> **Note:** v5e-8');
    expect(r.stdout).toMatch(/^- \[x\] Chose the TPU generation and topology$/m);
  });

  it('--record adds a snapshot; html to --output links relative to the report; a broken progress file is reported, never overwritten', () => {
    const ws = workspace();
    const r = run(['report', '--format', 'html', '--output', 'out/report.html', '--record'], ws);
    expect(r.status).toBe(0);
    const html = fs.readFileSync(path.join(ws, 'out/report.html'), 'utf8');
    expect(html).toContain('<a href="../train.py#L6">train.py:6:9</a>');
    const progress = parseProgress(fs.readFileSync(path.join(ws, '.tpu-ready/progress.json'), 'utf8'));
    expect(progress.history).toHaveLength(1);
    expect(progress.history[0].open[3]).toBeGreaterThan(0);
    expect(html).toContain(`<td>${progress.history[0].date}</td>`);

    fs.writeFileSync(path.join(ws, '.tpu-ready/progress.json'), '{"steps": {"1": {"note": 1}}}');
    const bad = run(['report', '--record'], ws);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('"steps.1.note" must be a string');
    expect(fs.readFileSync(path.join(ws, '.tpu-ready/progress.json'), 'utf8')).toBe('{"steps": {"1": {"note": 1}}}');
    const shown = run(['report'], ws);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toContain('**Progress file:**');
    expect(run(['report', '--format', 'pdf'], ws).status).toBe(2);
  });
});
