/** The migration checklist: step status from evidence and ticks, the progress file, messages from the panel. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  checklistVM, collectFacts, emptyProgress, findModel, NO_FACTS, parseProgress, parseToHost, ProgressFormatError, recordSnapshot, rulesOfStep,
  serializeProgress, setNote, setTick, snapshotOf, stepStates, STEPS, type ChecklistFinding, type ChecklistInput, type Snapshot,
} from '../src/checklist';
import { RULES } from '../src/rules';
import type { Step } from '../src/core/types';

function finding(step: Step, over: Partial<ChecklistFinding> = {}): ChecklistFinding {
  return { rule: RULES.find((r) => r.step === step)!.id, step, severity: 'error', message: 'm', path: 'train.py', uri: 'train.py', line: 3, column: 1, cell: null, fix: null, ...over };
}

function input(over: Partial<ChecklistInput> = {}): ChecklistInput {
  return { profile: 'torch_xla', score: 50, findings: [], facts: { ...NO_FACTS }, progress: emptyProgress(), ...over };
}

describe('steps', () => {
  it('ten steps in order, each driven by the rules of its step; every rule belongs to one', () => {
    expect(STEPS.map((s) => s.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const all = STEPS.flatMap((s) => rulesOfStep(s.step));
    expect(new Set(all).size).toBe(RULES.length);
    expect(rulesOfStep(3)).toContain('TPU101');
    for (const s of STEPS) {
      expect(s.explanation.torch_xla.length).toBeGreaterThan(40);
      expect(new Set(s.items.map((i) => i.id)).size).toBe(s.items.length);
      for (const i of s.items) expect(i.id).toMatch(/^[a-z0-9-]+$/);
    }
  });
});

describe('status', () => {
  it('step 3 is done only when no device finding remains and the code uses an XLA device', () => {
    const facts = { ...NO_FACTS, importsTpuStack: true, usesTpuDevice: true };
    expect(stepStates(input({ findings: [finding(3)], facts }))[2].status).toBe('in-progress');
    expect(stepStates(input({ findings: [finding(3)] }))[2].status).toBe('todo');
    expect(stepStates(input({ facts: { ...facts, usesTpuDevice: false } }))[2].status).toBe('in-progress');
    expect(stepStates(input({ facts }))[2].status).toBe('done');
  });

  it('manual steps are done when the team ticks every item and no finding is open', () => {
    let progress = setTick(emptyProgress(), 1, 'tpu-type', true);
    expect(stepStates(input({ progress }))[0].status).toBe('in-progress');
    progress = setTick(progress, 1, 'host', true);
    const states = stepStates(input({ progress }));
    expect(states[0].status).toBe('done');
    expect(stepStates(input({ progress, findings: [finding(1)] }))[0].status).toBe('in-progress');
    progress = setTick(progress, 1, 'host', false);
    expect(stepStates(input({ progress }))[0].status).toBe('in-progress');
  });

  it('the view model counts done steps, lists findings per step sorted by severity and location, and offers actions', () => {
    const findings = [
      finding(3, { severity: 'warning', line: 9 }),
      finding(3, { severity: 'error', line: 20, fix: { applicability: 'safe' } }),
      finding(3, { severity: 'error', line: 2, path: 'a.py' }),
    ];
    const progress = setNote(setTick(setTick(emptyProgress(), 1, 'tpu-type', true), 1, 'host', true), 1, 'v5e-8 in us-central2');
    const vm = checklistVM(input({ findings, progress }));
    expect(vm.done).toBe(1);
    expect(vm.total).toBe(10);
    const s3 = vm.steps[2];
    expect(s3.findings.map((f) => `${f.path}:${f.line + 1}`)).toEqual(['a.py:2', 'train.py:20', 'train.py:9']);
    expect(s3.open).toBe(3);
    expect(s3.actions.map((a) => a.id)).toEqual(['fixSafe']);
    expect(vm.steps[0].note).toBe('v5e-8 in us-central2');
    expect(vm.steps[1].actions.map((a) => a.id)).toEqual(['smokeTest']);
    expect(vm.steps[9].actions.map((a) => a.id)).toEqual(['ciWorkflow', 'compileCache']);
    expect(checklistVM(input({ profile: 'torchtpu' })).steps[9].actions.map((a) => a.id)).toEqual(['ciWorkflow']);
    expect(s3.findings[0].docsUrl).toMatch(/docs\/rules\/TPU1\d\d\.md$/);
  });
});

describe('facts', () => {
  const files = [
    { path: 'train.py', text: 'import torch\nimport torch_xla\nimport torch_xla.runtime as xr\nxr.initialize_cache("/tmp/c")\ndevice = torch_xla.device()\n' },
    { path: 'requirements.txt', text: 'torch==2.8.0\ntorch_xla[tpu]==2.8.0\n' },
    { path: '.github/workflows/ci.yml', text: 'steps:\n  - run: npx tpu-ready check --format sarif\n' },
    { path: 'ckpt.py', text: 'def resume(path):\n    state = torch.load(path, map_location="cpu")\n' },
    { path: 'prof.py', text: 'import torch_xla.debug.metrics as met\nprint(met.metrics_report())\n' },
  ];
  it('reads the evidence each step needs from the sources', () => {
    expect(collectFacts(files, 'torch_xla')).toEqual({
      importsTpuStack: true, usesTpuDevice: true, pinsTpuStack: true, hasSmokeTest: false, hasResume: true, usesProfiler: true, hasCompileCache: true, hasCiWorkflow: true, hasRunEvidence: false,
    });
    expect(collectFacts([{ path: 'train.py', text: 'x = "import torch_xla"\ndevice = "cuda"\n' }], 'torch_xla')).toEqual(NO_FACTS);
    const tpu = collectFacts([{ path: 'train.py', text: 'import torch_tpu\nd = torch.device("tpu")\n' }], 'torchtpu');
    expect(tpu.importsTpuStack && tpu.usesTpuDevice).toBe(true);
    expect(collectFacts([{ path: 'train.py', text: 'import torch_tpu\n' }], 'torch_xla').importsTpuStack).toBe(false);
  });

  it('finds a model class for the smoke test, preferring model files', () => {
    expect(findModel([{ path: 'train.py', text: 'class Helper(nn.Module):\n  pass\n' }, { path: 'pkg/model.py', text: 'class GPT(torch.nn.Module):\n  pass\n' }])).toEqual({ module: 'pkg.model', name: 'GPT' });
    expect(findModel([{ path: 'tests/test_x.py', text: 'class M(nn.Module):\n  pass\n' }])).toBeNull();
  });
});

function snap(date: string, score: number, open3 = 0): Snapshot {
  const open = { 1: 0, 2: 0, 3: open3, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0, 9: 0, 10: 0 } as Record<Step, number>;
  return { date, score, done: 0, open };
}

describe('progress.json', () => {
  it('round-trips, with every step present in order and keys sorted', () => {
    let p = setTick(setTick(emptyProgress(), 2, 'smoke-passed', true), 1, 'tpu-type', true);
    p = setNote(p, 4, 'pad to 512 "tokens"\nand <b>bucket</b>');
    p = recordSnapshot(p, snap('2026-01-02', 40, 7));
    const text = serializeProgress(p);
    expect(parseProgress(text)).toEqual(p);
    expect(serializeProgress(parseProgress(text))).toBe(text);
    const keys = [...text.matchAll(/^ {4}"(\d+)": \{$/gm)].map((m) => m[1]);
    expect(keys).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
    // each snapshot on one line
    expect(text).toMatch(/^ {4}\{"date": "2026-01-02", "score": 40, "done": 0, "open": \{"1": 0, "2": 0, "3": 7,[^\n]*\}\}$/m);
  });

  it('keeps keys it does not know', () => {
    const text = JSON.stringify({ version: 1, owner: { team: 'ml' }, steps: { '3': { note: 'x', reviewer: 'ana', ticks: { custom: true } } }, history: [] });
    const p = parseProgress(text);
    const out = parseProgress(serializeProgress(p));
    expect(out.extra).toEqual({ owner: { team: 'ml' } });
    expect(out.steps[3].extra).toEqual({ reviewer: 'ana' });
    expect(out.steps[3].ticks).toEqual({ custom: true });
  });

  it('reports malformed files with the path of the bad value', () => {
    const bad: [string, RegExp][] = [
      ['{', /not valid JSON/],
      ['[]', /top level must be an object/],
      ['{"version": 9}', /newer than this tpu-ready/],
      ['{"steps": {"11": {}}}', /"steps\.11" is not a step/],
      ['{"steps": {"2": {"note": 3}}}', /"steps\.2\.note" must be a string/],
      ['{"steps": {"2": {"ticks": {"a": "yes"}}}}', /"steps\.2\.ticks\.a" must be true or false/],
      ['{"history": [{"date": "yesterday", "score": 1, "done": 0, "open": {}}]}', /"history\[0\]"\.date must be a date/],
      ['{"history": [{"date": "2026-01-01", "score": 1, "done": 0, "open": {"3": -1}}]}', /open\.3 must be a non-negative integer/],
    ];
    for (const [text, re] of bad) {
      expect(() => parseProgress(text)).toThrow(ProgressFormatError);
      expect(() => parseProgress(text)).toThrow(re);
    }
  });

  it('history: one snapshot per day, unchanged days skipped, sorted by date', () => {
    let p = recordSnapshot(emptyProgress(), snap('2026-01-01', 30, 5));
    p = recordSnapshot(p, snap('2026-01-01', 35, 4));
    expect(p.history).toHaveLength(1);
    expect(p.history[0].score).toBe(35);
    p = recordSnapshot(p, snap('2026-01-02', 35, 4));
    expect(p.history).toHaveLength(1);
    p = recordSnapshot(p, snap('2026-01-05', 60, 1));
    p = recordSnapshot(p, snap('2026-01-03', 50, 2));
    expect(p.history.map((h) => h.date)).toEqual(['2026-01-01', '2026-01-03', '2026-01-05']);
    const states = stepStates(input({ findings: [finding(3), finding(3), finding(5)] }));
    expect(snapshotOf(states, 42, '2026-02-01')).toMatchObject({ date: '2026-02-01', score: 42, done: 0, open: { 3: 2, 5: 1, 1: 0 } });
  });

  it('is merge-friendly: two branches ticking different steps and adding snapshots merge without conflict', () => {
    let base = recordSnapshot(emptyProgress(), snap('2026-01-01', 30, 5));
    base = setTick(base, 1, 'tpu-type', true);
    const ours = recordSnapshot(setNote(setTick(base, 2, 'smoke-passed', true), 2, 'passes on v5e'), snap('2026-01-02', 40, 3));
    const theirs = setNote(setTick(base, 8, 'resume-tested', true), 9, 'profile in gs://bucket');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-merge-'));
    const f = (n: string, p: typeof base) => {
      fs.writeFileSync(path.join(dir, n), serializeProgress(p));
      return path.join(dir, n);
    };
    const [o, b, t] = [f('ours', ours), f('base', base), f('theirs', theirs)];
    execFileSync('git', ['merge-file', o, b, t]); // throws on conflict (non-zero exit)
    const merged = parseProgress(fs.readFileSync(o, 'utf8'));
    expect(merged.steps[2].ticks).toEqual({ 'smoke-passed': true });
    expect(merged.steps[2].note).toBe('passes on v5e');
    expect(merged.steps[8].ticks).toEqual({ 'resume-tested': true });
    expect(merged.steps[9].note).toBe('profile in gs://bucket');
    expect(merged.history).toHaveLength(2);
  });
});

describe('panel messages', () => {
  it('accepts the ToHost messages and nothing else', () => {
    expect(parseToHost({ type: 'tick', body: { step: 3, item: 'device', checked: true } })).toEqual({ type: 'tick', body: { step: 3, item: 'device', checked: true } });
    expect(parseToHost({ type: 'note', body: { step: 10, text: 'x'.repeat(20000) } })?.body).toMatchObject({ step: 10 });
    expect((parseToHost({ type: 'note', body: { step: 10, text: 'x'.repeat(20000) } })!.body as { text: string }).text).toHaveLength(10000);
    expect(parseToHost({ type: 'action', body: { step: 2, action: 'smokeTest' } })).not.toBeNull();
    expect(parseToHost({ type: 'exportReport', body: { format: 'html' } })).not.toBeNull();
    expect(parseToHost({ type: 'openFinding', body: { uri: 'file:///a.py', line: 1, character: 0, cell: null } })).not.toBeNull();
    for (const bad of [
      null, 'tick', { type: 'tick' }, { type: 'tick', body: { step: 11, item: 'a', checked: true } }, { type: 'tick', body: { step: 1, item: '<x>', checked: true } },
      { type: 'tick', body: { step: 1, item: 'a', checked: 'yes' } }, { type: 'action', body: { step: 2, action: 'rm -rf' } }, { type: 'exportReport', body: { format: 'pdf' } },
      { type: 'openFinding', body: { uri: 'x', line: -1, character: 0, cell: null } }, { type: 'eval', body: {} }, { type: '__proto__', body: {} },
    ]) expect(parseToHost(bad)).toBeNull();
  });
});
