/** `tpu-ready cost` as a user runs it: the built dist/cli.js in a subprocess. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './setup';

const CLI = path.join(ROOT, 'dist/cli.js');
const FX = path.join(ROOT, 'test/cost-fixtures');

function run(args: string[], cwd = ROOT) {
  const r = spawnSync(process.execPath, [CLI, 'cost', ...args, '--today', '2026-11-29'], { cwd, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

beforeAll(() => {
  execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT });
});

describe('tpu-ready cost', () => {
  it('text: the sample config gives a sourced estimate with ranges and a TPU-vs-GPU comparison', () => {
    const r = run(['examples/gpt-cuda/config.yaml']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Training cost estimate: examples\/gpt-cuda\/config\.yaml \(LitGPT\)/);
    expect(r.out).toMatch(/GBS \(global batch, sequences per optimizer step\)\s+480\s+examples\/gpt-cuda\/config\.yaml:12 `train\.global_batch_size`/);
    expect(r.out).toMatch(/tokens\s+294,912,000,000\s+= STEPS 600,000/);
    expect(r.out).toMatch(/mfu\s+0\.4\s+default: /);
    expect(r.out).toMatch(/TPU v5e \(v5e-8\)\s+on-demand\s+\$1\.20\s+[\d,.e]+\s+5\.06 days\s+971\s+\$1,165\s+\$932 – \$1,553/);
    expect(r.out).toMatch(/NVIDIA H100 80GB \(8× H100\)\s+on-demand/);
    expect(r.out).toMatch(/Young\/Daly/);
    expect(r.out).toMatch(/smallest slice that fits: v5e-1/);
  });

  it('json: config with provenance, assumptions, estimates[] in the documented shape; flags are sources', () => {
    const r = run(['examples/gpt-cuda/config.yaml', '--hardware', 'v6e,h100', '--chips', '16', '--pricing', 'spot', '--mfu', '0.5', '--format', 'json']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.config.fields.steps).toEqual({ value: 600000, source: { kind: 'config', file: 'examples/gpt-cuda/config.yaml', line: 15, key: 'train.max_steps' } });
    expect(j.assumptions.mfu).toEqual({ value: 0.5, source: { kind: 'flag', flag: '--mfu' } });
    expect(j.assumptions.chips).toEqual({ value: 16, source: { kind: 'flag', flag: '--chips' } });
    expect(j.estimates.map((e: { hardware: string; chips: number; pricing: string }) => `${e.hardware}×${e.chips} ${e.pricing}`)).toEqual(['v6e×16 spot', 'h100×16 spot']);
    const v6e = j.estimates[0];
    for (const k of ['hardware', 'chips', 'pricing', 'tokens', 'flopsPerToken', 'tokensPerSecond', 'hours', 'chipHours', 'cost', 'low', 'high', 'breakdown']) expect(v6e).toHaveProperty(k);
    expect(v6e.low.mfu).toBeCloseTo(0.625);
    expect(v6e.high.mfu).toBeCloseTo(0.375);
    expect(v6e.price).toMatchObject({ perChipHour: 0.593, asOf: '2026-11-01' });
    expect(j.estimates[1].cost).toBeNull();
  });

  it('--price overrides the one hardware', () => {
    const r = run(['examples/gpt-cuda/config.yaml', '--hardware', 'v5e', '--price', '1', '--format', 'json']);
    expect(r.code).toBe(0);
    const [e] = JSON.parse(r.out).estimates;
    expect(e.pricing).toBe('on-demand');
    expect(e.price).toMatchObject({ perChipHour: 1, overridden: true, source: 'flag --price' });
    expect(e.cost).toBeCloseTo(e.chipHours * 1, 6);
    expect(run(['examples/gpt-cuda/config.yaml', '--price', '1']).err).toMatch(/--price needs exactly one --hardware/);
  });

  it('several files are one job; .tpu-ready/cost.toml beside them is read', () => {
    const r = run(['test/cost-fixtures/hf/training_args.json', 'test/cost-fixtures/hf/config.json', '--format', 'json']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.config.frameworks).toEqual(['hf-trainer', 'hf-model']);
    expect(j.assumptions.chips.source).toMatchObject({ kind: 'assumption', file: 'test/cost-fixtures/hf/.tpu-ready/cost.toml', line: 3 });
    expect(j.estimates[0]).toMatchObject({ hardware: 'v6e', pricing: 'spot', chips: 16 });
    expect(j.estimates[0].cost).toBeCloseTo(10.367, 2);
  });

  it('no CONFIG: discovers the configs under the working directory (Hydra group files belong to their primary)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-cost-'));
    fs.cpSync(path.join(FX, 'hydra'), path.join(dir, 'hydra'), { recursive: true });
    fs.cpSync(path.join(FX, 'nanogpt'), path.join(dir, 'nanogpt'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'README.json'), '{"name": "not a config"}');
    const r = run(['--format', 'json', '--hardware', 'v5e', '--pricing', 'on-demand'], dir);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.jobs.map((x: { config: { files: string[] } }) => x.config.files)).toEqual([['hydra/configs/train.yaml'], ['nanogpt/config/train_gpt2.py']]);
    expect(j.jobs[0].config.frameworks).toEqual(['hydra', 'lightning']);
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-cost-'));
    const none = run([], empty);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/no training config found/);
  });

  it('--findings prices the hot-loop findings of the scanned files on the first estimate', () => {
    const r = run(['examples/gpt-cuda/config.yaml', '--hardware', 'v5e', '--findings', 'examples/gpt-cuda/train.py']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Priced findings \(estimates on v5e-8 on-demand: ≈ \+[\d.]+ (h|days), \+\$[\d,]+ in all\)$/m);
    expect(r.out).toMatch(/^  examples\/gpt-cuda\/train\.py:\d+: TPU201 ≈ \+[\d.]+ h · \+\$[\d.,]+ on v5e-8 on-demand \(estimate: host sync in the hot loop; 20 ms × 600,000 steps\)$/m);
    const j = JSON.parse(run(['examples/gpt-cuda/config.yaml', '--hardware', 'v5e', '--findings', 'examples/gpt-cuda/train.py', '--format', 'json']).out);
    expect(j.pricedFindings.length).toBeGreaterThan(2);
    for (const p of j.pricedFindings) {
      expect(p.label).toBe('estimate');
      expect(p.path).toBe('examples/gpt-cuda/train.py');
      expect(p.assumptions.length).toBeGreaterThan(0);
    }
  });

  it('markdown export', () => {
    const r = run(['test/cost-fixtures/lightning/config.yaml', '--format', 'markdown']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^# Training cost estimate \(tpu-ready\)/);
    expect(r.out).toContain('| DEV (devices in the job) | 8 | = trainer.devices (4, test/cost-fixtures/lightning/config.yaml:5) × trainer.num_nodes (2, test/cost-fixtures/lightning/config.yaml:6) |');
  });

  it('bad configs: a clear message naming the field, exit 2, never a crash', () => {
    const cases: [string, RegExp][] = [
      ['bad/malformed.yaml', /bad\/malformed\.yaml:\d: malformed YAML at `\w+`/],
      ['bad/alias-bomb.yaml', /alias-bomb\.yaml: refused: .*alias/i],
      ['bad/no-seq.json', /cannot estimate from test\/cost-fixtures\/bad\/no-seq\.json:\n  - missing SEQ \(sequence length\): set the sequence length/],
      ['bad/contradictory.json', /contradictory\.json:2: contradictory batch keys: `train_batch_size`/],
    ];
    for (const [f, re] of cases) {
      const r = run([`test/cost-fixtures/${f}`]);
      expect(r.code, f).toBe(2);
      expect(r.err, f).toMatch(re);
      expect(r.err, f).not.toMatch(/internal error|    at /);
      expect(r.out).toBe('');
    }
    expect(run(['nope.yaml']).err).toMatch(/nope\.yaml: no such file/);
    expect(run(['examples/gpt-cuda/config.yaml', '--hardware', 'v9']).err).toMatch(/unknown hardware "v9"/);
    expect(run(['examples/gpt-cuda/config.yaml', '--mfu', '2']).code).toBe(2);
    expect(run(['examples/gpt-cuda/config.yaml', '--format', 'xml']).err).toMatch(/--format must be text, json or markdown/);
  });

  it('is listed in tpu-ready --help', () => {
    const r = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    expect(r.stdout).toMatch(/tpu-ready cost \[CONFIG\.\.\.\] \[--hardware v5e,v6e,h100\] \[--chips 8\] \[--pricing on-demand\|spot\]/);
  });
});
