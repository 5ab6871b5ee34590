/** Runtime evidence: the readers (formats from the torch_xla source), mapping to the workspace, findings, join. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyCause, findOpCall, indexPaths, joinWithStatic, mapFrames, mapPath, parseMetricTime, readRunLogs, runtimeFindings, stepTiming, type StaticRow, type WorkspaceFile } from '../src/evidence';
import { RUNTIME_RULES } from '../src/rules/runtime';
import { RULES_BY_ID } from '../src/rules';
import { ROOT } from './setup';

const FIX = path.join(ROOT, 'test/evidence-fixtures');
const log = (n: string) => ({ name: `logs/${n}`, text: fs.readFileSync(path.join(FIX, 'logs', n), 'utf8') });
const workspace = (): WorkspaceFile[] => ['train.py', 'models/net.py', 'tools/net.py'].map((p) => ({ path: p, text: fs.readFileSync(path.join(FIX, 'workspace', p), 'utf8') }));

const EQ = '='.repeat(80);
const DASH = '-'.repeat(80);
/** One block as debug_util.cpp (v2.9.0 l. 313-414) prints it. */
function block(prefix: string, cause: string, hash: string, frames: [string, string, number][], kind = 'Execution'): string[] {
  const p = `${prefix}${kind} Analysis: `;
  return ['', `${p}${EQ}`, `${p}${kind} Cause`, `${p}  ${cause}`, `${p}Graph Info: `, `${p}  Graph Hash: ${hash}`, `${p}  Number of Graph Inputs: 1`, `${p}  Number of Graph Outputs: 1`, `${p}Python Frame Triggered Execution: `, ...frames.map(([f, file, l]) => `${p}  ${f} (${file}:${l})`), `${p}${DASH}`, `${p}${EQ}`];
}

describe('readers', () => {
  it('parses MetricFnTime strings (metrics.cpp l. 304-329)', () => {
    expect(parseMetricTime('04m21s432ms102.004us')).toBeCloseTo(261.432102004, 9);
    expect(parseMetricTime('860ms120.000us')).toBeCloseTo(0.86012, 9);
    expect(parseMetricTime('012.500us')).toBeCloseTo(0.0000125, 12);
    expect(parseMetricTime('01d02h03m04s005ms000.000us')).toBeCloseTo(93784.005, 6);
    expect(parseMetricTime('12.5GB')).toBeNull();
    expect(parseMetricTime('')).toBeNull();
  });

  it('classifies the causes of 2.9 and 2.3', () => {
    expect(classifyCause('most likely user code trying to access tensor value before torch_xla.sync')).toBe('tensor-read');
    expect(classifyCause('most likely user code trying to access tensor value before mark_step')).toBe('tensor-read');
    expect(classifyCause('user torch_xla.sync')).toBe('step-barrier');
    expect(classifyCause('mark_step in parallel loader at step end')).toBe('step-barrier');
    expect(classifyCause('torch_xla.compile')).toBe('compile');
    expect(classifyCause('dynamo is compiling a FX graph to HLO')).toBe('dynamo');
  });

  it('reads blocks, post-compilation sizes, checks and the last metrics report through prefixes, ANSI and CRLF', () => {
    const ev = readRunLogs([log('run-a.log')]);
    expect(ev.recognized).toBe(true);
    expect(ev.blocks.filter((b) => b.kind === 'compilation')).toHaveLength(12);
    expect(ev.blocks.filter((b) => b.kind === 'execution')).toHaveLength(6);
    expect(ev.blocks.every((b) => b.process === '[worker-0]' && !b.truncated)).toBe(true);
    const first = ev.blocks[0];
    expect(first).toMatchObject({ cause: 'user torch_xla.sync', causeKind: 'step-barrier', graphHash: '000000000000000000000000000000a0', inputs: 3, outputs: 2 });
    expect(first.frames[1]).toEqual({ function: 'train', file: '/home/alice/jobs/run-7/proj/train.py', line: 20 });
    expect(ev.blocks.find((b) => b.frames[0]?.function === 'nonzero')?.moreFrames).toBe(true);
    expect(ev.post).toHaveLength(6);
    expect(ev.post[0]).toMatchObject({ computationHash: '000000000000000000000000000000b0', programGB: 0.000031, inputGB: 0.000122 });
    expect(ev.checks.filter((c) => c.kind === 'too-frequent').map((c) => c.count)).toEqual([1, 2, 3, 4, 5, 6, 12]);
    expect(ev.checks.find((c) => c.kind === 'not-lowered')?.ops).toEqual(['aten::_ctc_loss', 'aten::_ctc_loss_backward']);
    expect(ev.metrics).toHaveLength(1);
    expect(ev.metrics[0].metrics.get('CompileTime')).toEqual({ totalSamples: 12, accumulator: 360 });
    expect(ev.metrics[0].counters.get('MarkStep')).toBe(11);
  });

  it('keeps the blocks of two processes apart when their lines interleave', () => {
    const a = block('[host-a] ', 'most likely user code trying to access tensor value before torch_xla.sync', 'aaa', [['train', '/a/proj/train.py', 18]]);
    const b = block('[host-b] ', 'user torch_xla.sync', 'bbb', [['train', '/b/proj/train.py', 20]], 'Compilation');
    const mixed: string[] = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) mixed.push(...(a[i] !== undefined ? [a[i]] : []), ...(b[i] !== undefined ? [b[i]] : []));
    const ev = readRunLogs([{ name: 'mixed.log', text: mixed.join('\n') }]);
    expect(ev.blocks.map((x) => [x.process, x.kind, x.graphHash, x.frames[0].line, x.truncated])).toEqual([
      ['[host-a]', 'execution', 'aaa', 18, false],
      ['[host-b]', 'compilation', 'bbb', 20, false],
    ]);
  });

  it('keeps a block cut off by the end of the log, marked truncated', () => {
    const ev = readRunLogs([log('run-b-truncated.log')]);
    expect(ev.blocks).toHaveLength(6);
    expect(ev.truncatedBlocks).toBe(1);
    expect(ev.blocks[5]).toMatchObject({ truncated: true, graphHash: '00000000000000000000000000000104', frames: [] });
    // a log cut in the middle of a frame line: the partial line is not a frame
    const cut = block('', 'user torch_xla.sync', 'h', [['train', '/p/train.py', 20]], 'Compilation').slice(0, 10);
    cut[9] = cut[9].slice(0, cut[9].length - 6);
    const ev2 = readRunLogs([{ name: 'cut.log', text: cut.join('\r\n') }]);
    expect(ev2.blocks).toHaveLength(1);
    expect(ev2.blocks[0].frames).toEqual([]);
    expect(ev2.blocks[0].truncated).toBe(true);
  });

  it('reads XLA_METRICS_FILE: the last step\'s report counts', () => {
    const ev = readRunLogs([log('metrics.txt')]);
    expect(ev.metrics).toHaveLength(1);
    expect(ev.metrics[0].step).toBe(2);
    expect(ev.metrics[0].counters.get('aten::nonzero')).toBe(15);
    expect(ev.metrics[0].metrics.get('CompileTime')).toEqual({ totalSamples: 3, accumulator: 60 });
  });

  it('recognizes nothing in a log that is not a torch_xla run', () => {
    const ev = readRunLogs([{ name: 'x.log', text: 'epoch 1 loss 0.3\nMetric of the day: none\n' }]);
    expect(ev.recognized).toBe(false);
    expect(runtimeFindings(ev, workspace())).toEqual([]);
  });
});

describe('mapping to the workspace', () => {
  const idx = indexPaths(['train.py', 'models/net.py', 'tools/net.py', 'net.py']);
  it('picks the longest matching path suffix', () => {
    expect(mapPath('/home/alice/jobs/run-7/proj/models/net.py', idx)).toBe('models/net.py');
    expect(mapPath('/somewhere/else/net.py', idx)).toBe('net.py');
    expect(mapPath('C:\\work\\proj\\tools\\net.py', idx)).toBe('tools/net.py');
    expect(mapPath('/x/eval.py', idx)).toBeNull();
  });
  it('skips torch, torch_xla and site-packages frames for the user frame', () => {
    const m = mapFrames([
      { function: 'mark_step', file: '/usr/local/lib/python3.10/site-packages/torch_xla/core/xla_model.py', line: 1 },
      { function: 'f', file: '/opt/conda/lib/python3.10/site-packages/mylib/train.py', line: 2 },
      { function: 'train', file: '/home/u/proj/train.py', line: 20 },
    ], idx);
    expect(m.user).toMatchObject({ path: 'train.py', line: 20 });
    expect(m.frames.map((f) => f.path)).toEqual([null, null, 'train.py']);
  });
  it('a torch source tree outside the workspace is library code; a workspace that is such a tree is not', () => {
    const ws = indexPaths(['module.py', 'torch_xla/core/xla_model.py', 'src/transformers/trainer.py']);
    const user = (file: string) => mapFrames([{ function: 'f', file, line: 3 }], ws).user?.path ?? null;
    expect(user('/opt/pytorch/torch/nn/modules/module.py')).toBeNull();
    expect(user('/home/u/xla/torch_xla/core/xla_model.py')).toBe('torch_xla/core/xla_model.py');
    expect(user('/usr/lib/python3/dist-packages/torch_xla/core/xla_model.py')).toBeNull();
    expect(user('/home/u/transformers/src/transformers/trainer.py')).toBe('src/transformers/trainer.py');
  });

  it('finds the call an aten op comes from', () => {
    expect(findOpCall('aten::_ctc_loss_backward', workspace())).toEqual([{ path: 'train.py', line: 15 }]);
    expect(findOpCall('aten::nonzero', workspace())).toEqual([{ path: 'models/net.py', line: 11 }]);
    expect(findOpCall('aten::bogus_op', workspace())).toEqual([]);
  });
});

describe('runtime findings', () => {
  it('puts each cause on its first user line, with counts, measured seconds and the other frames', () => {
    const fs_ = runtimeFindings(readRunLogs([log('run-a.log')]), workspace());
    const at = (rule: string, p: string, line: number) => fs_.find((f) => f.rule === rule && f.path === p && f.line === line);
    const recompile = at('TPU001', 'train.py', 20)!;
    expect(recompile.evidence).toMatchObject({ kind: 'recompilation', count: 6, steps: 11 });
    expect(recompile.evidence.graphHashes).toHaveLength(6);
    expect(recompile.evidence.seconds).toBeCloseTo(180, 6); // CompileTime 6 min / 12 samples × 6
    expect(recompile.evidence.checks).toEqual(['pt-xla-profiler: CompileTime too frequent: 12 counts during 11 steps']);
    expect(recompile.related).toEqual([{ path: 'train.py', line: 24, column: 1, endLine: 24, endColumn: 1, cell: null, message: 'same compilations: called through <module>' }]);
    const read = at('TPU002', 'train.py', 18)!;
    expect(read.evidence).toMatchObject({ kind: 'host-read', count: 6 });
    expect(read.evidence.seconds).toBeCloseTo(1.2, 6); // ExecuteTime 8 s / 40 × 6
    expect(read.evidence.checks).toEqual(['pt-xla-profiler: TransferFromDeviceTime too frequent: 6 counts during 6 steps']);
    expect(read.column).toBe(9);
    const fallback = at('TPU003', 'train.py', 15)!;
    expect(fallback.evidence).toMatchObject({ kind: 'cpu-fallback', count: 22, ops: ['aten::_ctc_loss', 'aten::_ctc_loss_backward'] });
    expect(at('TPU001', 'models/net.py', 11)?.related).toMatchObject([{ path: 'train.py', line: 14, message: 'same compilations: called through train' }]);
    // aten::_local_scalar_dense is a host read, not a fallback; nothing lands in tools/net.py
    expect(fs_.some((f) => f.evidence.ops.includes('aten::_local_scalar_dense'))).toBe(false);
    expect(fs_.some((f) => f.path === 'tools/net.py')).toBe(false);
    expect(fs_.every((f) => f.source === 'runtime' && f.fix === null && f.inWorkspace)).toBe(true);
  });

  it('a step barrier compiling twice is the expected warm-up, not a finding', () => {
    const text = [1, 2].flatMap((i) => block('', 'user torch_xla.sync', `h${i}`, [['train', '/p/train.py', 20]], 'Compilation')).join('\n');
    expect(runtimeFindings(readRunLogs([{ name: 'l', text }]), workspace())).toEqual([]);
  });

  it('a check with no line to point at goes on the log line', () => {
    const ev = readRunLogs([{ name: 'l', text: 'x\npt-xla-profiler: CompileTime too slow: longest instance took 05m01s000ms000.000us. Please open a GitHub issue with the graph dump for our team to optimize.\n' }]);
    const [f] = runtimeFindings(ev, workspace());
    expect(f).toMatchObject({ rule: 'TPU004', path: 'l', line: 2, inWorkspace: false });
    expect(f.evidence.seconds).toBe(301);
  });
});

describe('join with static findings', () => {
  it('a runtime finding on a line of a static finding it is material for confirms it', () => {
    const runtime = runtimeFindings(readRunLogs([log('run-a.log')]), workspace());
    const statics: StaticRow[] = [
      { path: 'train.py', rule: 'TPU201', line: 18, message: 'host read' },
      { path: 'models/net.py', rule: 'TPU203', line: 11, message: 'dynamic shape' },
      { path: 'train.py', rule: 'TPU101', line: 20, message: 'unrelated' },
    ];
    const j = joinWithStatic(statics, runtime);
    expect(j.statics[0].message).toBe('host read (seen in the run: 6 host reads, 0.55 per step, 1.2 s)');
    expect(j.statics[0].evidence?.kind).toBe('host-read');
    expect(j.statics[1].message).toMatch(/^dynamic shape \(seen in the run: 6 compilations, 3 min\)$/);
    expect(j.statics[2].message).toBe('unrelated');
    expect(j.confirmed).toBe(2);
    expect(j.runtime.some((r) => r.rule === 'TPU002' && r.line === 18)).toBe(false);
    expect(j.runtime.some((r) => r.rule === 'TPU001' && r.path === 'train.py' && r.line === 20)).toBe(true);
  });
});

describe('runtime rule catalog', () => {
  it('ids, docs and material rules are well-formed', () => {
    for (const r of RUNTIME_RULES) {
      expect(r.id).toMatch(/^TPU0\d\d$/);
      expect(RULES_BY_ID.has(r.id)).toBe(false);
      expect(r.docs.sources.length).toBeGreaterThan(0);
      expect(r.fix.availability).toBe('none');
      for (const m of r.material) expect(RULES_BY_ID.has(m), `${r.id} material ${m}`).toBe(true);
      expect(fs.existsSync(path.join(ROOT, 'docs/rules', `${r.id}.md`)), `${r.id} docs page`).toBe(true);
    }
  });
});

describe('into the estimate', () => {
  it('measured seconds, reads per step and distinct graphs replace the default assumptions, the log named as the source', async () => {
    const { estimateFromFiles } = await import('../src/cost');
    const cfg = (p: string) => ({ path: p, text: fs.readFileSync(path.join(ROOT, p), 'utf8') });
    const r = estimateFromFiles({ configs: [cfg('test/cost-fixtures/hf/training_args.json'), cfg('test/cost-fixtures/hf/config.json')], today: '2026-11-29' });
    const est = r.estimates.find((e) => e.pricing === 'on-demand')!;
    const { priceFindings } = await import('../src/cost');
    const log = { file: 'logs/run-a.log', line: 12 };
    const base = { severity: 'warning' as const, message: 'm', path: 'train.py', line: 18 };
    const [plainRead, read, plainShapes, shapes] = priceFindings([
      { ...base, rule: 'TPU201' },
      { ...base, rule: 'TPU201', evidence: { kind: 'host-read', count: 6, seconds: 1.2, graphHashes: [], perStep: 0.5, log } },
      { ...base, rule: 'TPU404', line: 14 },
      { ...base, rule: 'TPU404', path: 'other.py', line: 14, evidence: { kind: 'recompilation', count: 6, seconds: 180, graphHashes: ['a', 'b', 'c', 'd', 'e', 'f'], perStep: 0.5, log } },
    ], r, est);
    const steps = plainRead.hours * 3600 / 0.02; // default: 20 ms per step
    // measured: 1.2 s / 6 = 200 ms per read, one read every 2 steps
    expect(read.hours * 3600).toBeCloseTo((steps / 2) * 0.2, 6);
    expect(read.assumptions.find((a) => a.key === 'ms-per-sync')?.value).toBeCloseTo(200, 9);
    expect(read.assumptions.find((a) => a.key === 'ms-per-sync')).toMatchObject({ source: { kind: 'derived', formula: expect.stringContaining('measured in the run (logs/run-a.log:12)') } });
    expect(read.assumptions.find((a) => a.key === 'throttle-steps')?.value).toBe(2);
    // (TPU404 is priced once per file: the measured one is in another file)
    // measured: 6 distinct graphs = 5 extra, 30 s per compilation, instead of 16 × the default compile seconds
    expect(plainShapes.assumptions.find((a) => a.key === 'extra-shapes')?.value).toBe(16);
    expect(shapes.assumptions.find((a) => a.key === 'extra-shapes')?.value).toBe(5);
    expect(shapes.hours / plainShapes.hours).toBeCloseTo((5 * 30) / (16 * r.assumptions.compileSeconds.value), 6);
    expect(shapes.summary).toContain('30 s compile (measured)');
  });
});

describe('step time', () => {
  /** A stamped log as profile-run.sh writes it: `[tpu-ready <s>] ` before every line. */
  const stamped = (entries: [number, string[]][], prefix = '') => entries.flatMap(([t, lines]) => lines.map((l) => `[tpu-ready ${t.toFixed(3)}] ${prefix}${l}`));
  const step = (t: number, compile = false): [number, string[]][] => [
    ...(compile ? [[t - 0.01, block('', 'user torch_xla.sync', `c${t}`, [['train', '/p/train.py', 20]], 'Compilation')] as [number, string[]]] : []),
    [t, block('', 'user torch_xla.sync', 'h', [['train', '/p/train.py', 20]])],
  ];

  it('is the median interval between step-barrier executions, leaving out the steps that compiled', () => {
    // step 1 compiles (not an interval), step 2 compiles a second graph (left out), then 0.40, 0.42, 0.41, 0.90 (a slow one), 0.40
    const times = [5, 17, 17.4, 17.82, 18.23, 19.13, 19.53];
    const lines = ['[tpu-ready 0.000] tpu-ready: accelerator-type v5litepod-8', ...stamped(times.flatMap((t, i) => step(t, i < 2)))];
    const ev = readRunLogs([{ name: 'runs/a.log', text: lines.join('\r\n') }]);
    expect(ev.acceleratorType).toBe('v5litepod-8');
    expect(ev.blocks.every((b) => b.process === '' && b.time !== null)).toBe(true); // the stamp is no process prefix
    const t = stepTiming(ev)!;
    expect(t).toMatchObject({ steadySteps: 5, compiledSteps: 1, logLine: 15 }); // the first barrier's block (after step 1's compilation)
    expect(t.seconds).toBeCloseTo(0.41, 9);
    expect(t.min).toBeCloseTo(0.4, 9);
    expect(t.max).toBeCloseTo(0.9, 9);
  });

  it('is unknown without stamps, with fewer than 3 steady steps, and read per process', () => {
    const plain = readRunLogs([{ name: 'a.log', text: [0, 1, 2, 3, 4].flatMap(() => block('', 'user torch_xla.sync', 'h', [['train', '/p/train.py', 20]])).join('\n') }]);
    expect(plain.blocks).toHaveLength(5);
    expect(stepTiming(plain)).toBeNull();
    expect(plain.acceleratorType).toBeNull();
    const short = readRunLogs([{ name: 'a.log', text: stamped([1, 2, 3].flatMap((t) => step(t))).join('\n') }]);
    expect(stepTiming(short)).toBeNull();
    // two launcher-prefixed processes: each its own series (0.5 s and 0.25 s); the one with more steady steps counts
    const a = stamped([1, 1.5, 2, 2.5, 3].flatMap((t) => step(t)), '[worker-0] ');
    const b = stamped([1, 1.25, 1.5, 1.75, 2, 2.25].flatMap((t) => step(t)), '[worker-1] ');
    const mixed = readRunLogs([{ name: 'a.log', text: [...a, ...b].join('\n') }]);
    expect(stepTiming(mixed)).toMatchObject({ seconds: 0.25, steadySteps: 5, process: '[worker-1]' });
  });

  it('turns into measured tokens/s per chip on the TPU the run used, the log named as the source', async () => {
    const { estimateFromFiles } = await import('../src/cost');
    const cfg = (p: string) => ({ path: p, text: fs.readFileSync(path.join(ROOT, p), 'utf8') });
    const configs = [cfg('test/cost-fixtures/hf/training_args.json'), cfg('test/cost-fixtures/hf/config.json')];
    const r = estimateFromFiles({ configs, today: '2026-11-29' });
    const f = r.config.fields;
    expect(f.globalBatch && f.seqLen).toBeTruthy();
    const perChip = (f.globalBatch!.value * f.seqLen!.value) / 0.5 / 8;
    const m = estimateFromFiles({ configs, today: '2026-11-29', overrides: { tokensPerSecondPerChip: { v5e: { value: perChip, source: { kind: 'derived', formula: 'measured in the run (runs/a.log:2)' } } } } });
    const e = m.estimates.find((x) => x.hardware === 'v5e' && x.pricing === 'on-demand')!;
    expect(e.mfuSource).toBe('measured');
    expect(e.tokensPerSecond).toBeCloseTo(perChip * e.chips, 6);
    expect(m.estimates.find((x) => x.hardware === 'v6e')!.mfuSource).toBe('model');
  });
});

describe('collecting runs', () => {
  it('the launcher sets the debug variables, tees to .tpu-ready/runs and prints the report at exit; bash parses it', async () => {
    const { profilingRun } = await import('../src/checklist');
    const f = profilingRun({ profile: 'torch_xla', version: '2.9' })!;
    expect(f.path).toBe('.tpu-ready/profile-run.sh');
    for (const s of ['export PT_XLA_DEBUG_LEVEL=2', 'export PT_XLA_DEBUG=1', 'export XLA_METRICS_FILE="$runs/$stamp.metrics"', 'runs="$root/.tpu-ready/runs"', 'met.metrics_report()', 'runpy.run_path(sys.argv[0], run_name="__main__")']) expect(f.text).toContain(s);
    expect(profilingRun({ profile: 'torchtpu', version: 'preview' })).toBeNull();
    const { spawnSync } = await import('node:child_process');
    const dir = fs.mkdtempSync(path.join((await import('node:os')).tmpdir(), 'tpu-ready-run-'));
    fs.mkdirSync(path.join(dir, '.tpu-ready'));
    fs.writeFileSync(path.join(dir, '.tpu-ready/profile-run.sh'), f.text);
    expect(spawnSync('bash', ['-n', path.join(dir, '.tpu-ready/profile-run.sh')]).status).toBe(0);
    // run it on a script that prints what torch_xla would (no torch_xla here: the report at exit says so)
    // ... and the step barriers torch_xla would print, 60 ms apart after a compiling first step (debug_util.cpp format)
    const compile = JSON.stringify(block('', 'user torch_xla.sync', 'c', [['train', '/p/fake.py', 9]], 'Compilation').join('\n'));
    const exec = JSON.stringify(block('', 'user torch_xla.sync', 'h', [['train', '/p/fake.py', 9]]).join('\n'));
    fs.writeFileSync(path.join(dir, 'fake.py'), [
      'import os, sys, time',
      'print("PT_XLA_DEBUG_LEVEL=" + os.environ["PT_XLA_DEBUG_LEVEL"], sys.argv[1:])',
      'sys.stderr.write("pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps\\n")',
      `C, E = ${compile}, ${exec}`,
      'for i in range(6):',
      '    sys.stderr.write((C + "\\n" if i == 0 else "") + E + "\\n")',
      '    sys.stderr.flush()',
      '    time.sleep(0.06)',
      'sys.exit(3)',
    ].join('\n') + '\n');
    const r = spawnSync('bash', ['.tpu-ready/profile-run.sh', 'fake.py', '--lr', '1'], { cwd: dir, encoding: 'utf8', env: { ...process.env, TPU_ACCELERATOR_TYPE: 'v6e-8', PYTHON: fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3' } });
    expect(r.status).toBe(3); // the program's own exit status
    expect(r.stdout).toContain("PT_XLA_DEBUG_LEVEL=2 ['--lr', '1']"); // the terminal gets the lines as printed
    expect(r.stdout).not.toContain('[tpu-ready ');
    const logs = fs.readdirSync(path.join(dir, '.tpu-ready/runs'));
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.log$/);
    const text = fs.readFileSync(path.join(dir, '.tpu-ready/runs', logs[0]), 'utf8');
    expect(text).toContain("PT_XLA_DEBUG_LEVEL=2 ['--lr', '1']");
    expect(text).toContain('pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps'); // stderr is in the log
    expect(text).toContain('tpu-ready: no metrics report');
    expect(text.split('\n').filter(Boolean).every((l) => /^\[tpu-ready \d+\.\d{3}\] /.test(l))).toBe(true);
    const ev = readRunLogs([{ name: logs[0], text }]);
    expect(ev.acceleratorType).toBe('v6e-8');
    const t = stepTiming(ev)!;
    expect(t.steadySteps).toBe(5);
    expect(t.compiledSteps).toBe(0);
    expect(t.seconds).toBeGreaterThan(0.05);
    expect(t.seconds).toBeLessThan(1);
  });

  it('the newest run counts for step 9 when it is newer than the code and has no runtime finding', async () => {
    const { latestRun, groupRuns } = await import('../src/evidence');
    const a = { path: '.tpu-ready/runs/2026-12-01T10-00-00Z.log', mtimeMs: 1000, text: log('run-a.log').text };
    const clean = { path: '.tpu-ready/runs/2026-12-02T10-00-00Z.log', mtimeMs: 3000, text: block('', 'user torch_xla.sync', 'h', [['train', '/p/train.py', 20]], 'Compilation').join('\n') };
    const metrics = { path: '.tpu-ready/runs/2026-12-02T10-00-00Z.metrics', mtimeMs: 3001, text: 'Counter: MarkStep\n  Value: 10\n' };
    expect(groupRuns([a, clean, metrics]).map((r) => r.map((f) => f.path))).toEqual([[clean.path, metrics.path], [a.path]]);
    const newest = latestRun([a, clean, metrics], workspace(), 2000)!;
    expect(newest).toMatchObject({ fresh: true, met: true, findings: [], summary: '1 compilation in 10 steps (0.1 per step); no CPU fallbacks' });
    expect(latestRun([a, clean, metrics], workspace(), 5000)).toMatchObject({ fresh: false, met: false });
    const old = latestRun([a], workspace(), 500)!;
    expect(old.met).toBe(false); // fresh, but runtime findings are open
    expect(old.findings.length).toBeGreaterThan(0);
    expect(old.summary).toBe('12 compilations in 11 steps (1.09 per step); CPU fallbacks: aten::_ctc_loss ×11, aten::_ctc_loss_backward ×11');
    expect(latestRun([], workspace(), 0)).toBeNull();
  });

  it('checklist step 9: done with fresh clean evidence, open while runtime findings are; the panel shows the run', async () => {
    const { checklistVM, emptyProgress, NO_FACTS } = await import('../src/checklist');
    const base = { profile: 'torch_xla' as const, score: 90, progress: emptyProgress(), run: '12 compilations in 11 steps (1.09 per step); no CPU fallbacks' };
    const done = checklistVM({ ...base, findings: [], facts: { ...NO_FACTS, usesProfiler: true, hasRunEvidence: true } });
    expect(done.steps[8].status).toBe('done');
    expect(done.steps[8].items.map((i) => i.id)).toEqual(['profiler', 'run-evidence']);
    expect(done.steps[8].explanation).toContain('Last profiling run: 12 compilations in 11 steps (1.09 per step); no CPU fallbacks.');
    const runtime = { rule: 'TPU001', step: 9 as const, severity: 'warning' as const, message: 'm', path: 'train.py', uri: 'train.py', line: 20, column: 9, cell: null, fix: null };
    const open = checklistVM({ ...base, findings: [runtime], facts: { ...NO_FACTS, usesProfiler: true, hasRunEvidence: false } });
    expect(open.steps[8].status).toBe('in-progress');
    expect(open.steps[8].findings.map((f) => f.rule)).toEqual(['TPU001']);
    const preview = checklistVM({ ...base, profile: 'torchtpu', findings: [], facts: NO_FACTS });
    expect(preview.steps[8].items.map((i) => i.id)).toEqual(['profiler', 'profile-captured']);
  });
});

describe('log prefixes', () => {
  it('lines stamped by a logging agent still form one block per process', async () => {
    const { processKey } = await import('../src/evidence');
    expect(processKey('2026-12-01T10:00:00.123Z ')).toBe('');
    expect(processKey('[2026-12-01 10:00:01,5] [worker-1] ')).toBe('[] [worker-1]');
    expect(processKey('10:00:02 host-2: ')).toBe('host-2:');
    const lines = block('', 'most likely user code trying to access tensor value before torch_xla.sync', 'abc', [['train', '/x/train.py', 18]]);
    const stamped = lines.map((l, i) => `2026-12-01T10:00:${String(i).padStart(2, '0')}.${i}Z [w0] ${l}`);
    const other = lines.map((l, i) => `2026-12-01T10:00:${String(i).padStart(2, '0')}.${i}Z [w1] ${l.replace('abc', 'def')}`);
    const mixed = stamped.flatMap((l, i) => [l, other[i]]);
    const ev = readRunLogs([{ name: 'l', text: mixed.join('\n') }]);
    expect(ev.blocks.map((b) => [b.process, b.graphHash, b.frames.length, b.truncated])).toEqual([['[w0]', 'abc', 1, false], ['[w1]', 'def', 1, false]]);
  });
});

describe('hostile and damaged logs', () => {
  it('cuts, dropped lines, doubled lines and stray bytes never throw, and findings stay on real lines', () => {
    const src = log('run-a.log').text + log('run-b-truncated.log').text + log('metrics.txt').text;
    const lines = src.split('\n');
    const files = workspace();
    const lineCount = new Map(files.map((f) => [f.path, f.text.split('\n').length]));
    let seed = 12345;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
    for (let k = 0; k < 60; k++) {
      const out: string[] = [];
      for (const l of lines) {
        const r = rnd(20);
        if (r === 0) continue; // dropped
        if (r === 1) out.push(l, l); // doubled
        else if (r === 2) out.push(l.slice(0, rnd(l.length + 1))); // cut
        else if (r === 3) out.push('\x1b[31m' + l + '\x00\ufffd');
        else out.push(l);
      }
      const text = out.join(rnd(2) ? '\n' : '\r\n').slice(0, rnd(src.length + 1));
      const ev = readRunLogs([{ name: 'fuzz.log', text }]);
      for (const b of ev.blocks) for (const f of b.frames) expect(Number.isInteger(f.line)).toBe(true);
      for (const f of runtimeFindings(ev, files)) {
        if (f.inWorkspace) expect(f.line).toBeLessThanOrEqual(lineCount.get(f.path)!);
        expect(f.evidence.count).toBeGreaterThanOrEqual(0);
        expect(Number.isFinite(f.evidence.seconds ?? 0)).toBe(true);
      }
    }
  });

  it('a frame past the end of its file (changed since the run) or outside the workspace goes on the log line', () => {
    const text = [1, 2, 3].flatMap((i) => block('', 'user torch_xla.sync', `h${i}`, [['train', '/p/train.py', 400]], 'Compilation')).join('\n');
    const [f] = runtimeFindings(readRunLogs([{ name: 'l', text }]), workspace());
    expect(f).toMatchObject({ rule: 'TPU001', path: 'l', line: 2, inWorkspace: false });
    expect(f.message).toMatch(/\(at \/p\/train\.py:400, not a line of the workspace: the file changed since the run\?\)$/);
    const elsewhere = [1, 2].flatMap((i) => block('', 'most likely user code trying to access tensor value before torch_xla.sync', `r${i}`, [['run', '/opt/jobs/launch.py', 7]])).join('\n');
    const [g] = runtimeFindings(readRunLogs([{ name: 'l2', text: elsewhere }]), workspace());
    expect(g).toMatchObject({ rule: 'TPU002', path: 'l2', inWorkspace: false });
    expect(g.message).toMatch(/\(at \/opt\/jobs\/launch\.py:7, not a line of the workspace\)$/);
  });
});
