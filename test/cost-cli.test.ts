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
    // MFU per hardware from the model (no flat 0.4), the range first, two significant figures, region and date
    expect(r.out).toMatch(/TPU v5e: MFU 36% \(24%–56%\): AI 550 FLOP\/byte .* ridge 241/);
    expect(r.out).toMatch(/TPU v5e \(v5e-8\)\s+on-demand\s+\$\d{3}–\$1,\d00 \(≈ \$1,200\)\s+[\d.]+–[\d.]+ days \(≈ 5\.1 days\)\s+24%–56%\s+\$1\.20 us-central1, 2026-11-01/);
    expect(r.out).toMatch(/NVIDIA H100 80GB \(8× H100\)\s+on-demand\s+.*\$5\.38 us-central1, 2026-11-01\s+fastest/);
    expect(r.out).toMatch(/TPU v6e \(Trillium\) \(v6e-8\)\s+spot\s+.*asia-southeast1, 2026-11-01\s+cheapest/);
    // rows sorted cheapest first
    const costs = [...r.out.matchAll(/\(≈ \$([\d,]+)\)/g)].map((m) => Number(m[1].replace(/,/g, '')));
    expect(costs.length).toBeGreaterThan(5);
    expect([...costs].sort((a, b) => a - b)).toEqual(costs);
    expect(r.out).toMatch(/Sensitivity \(cost\)\n\s+Slice\s+Pricing\s+MFU band\s+Price across regions; committed use\s+Preemptions 1 \/ 4 \/ 12 per day/);
    expect(r.out).toMatch(/Young\/Daly/);
    expect(r.out).toMatch(/TPU v5e \(v5e-8, 16 GB per chip\): micro-batch does NOT fit one chip/);
    expect(r.out).toMatch(/Prices and sources\n  - TPU v5e: .*on-demand \$1\.20 us-central1 \(as of 2026-11-01/);
  });

  it('json: config with provenance, assumptions, estimates[] in the documented shape; flags are sources', () => {
    const r = run(['examples/gpt-cuda/config.yaml', '--hardware', 'v6e,h100', '--chips', '16', '--pricing', 'spot', '--mfu', '0.5', '--format', 'json']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.config.fields.steps).toEqual({ value: 600000, source: { kind: 'config', file: 'examples/gpt-cuda/config.yaml', line: 15, key: 'train.max_steps' } });
    expect(j.assumptions.mfu).toEqual({ value: 0.5, source: { kind: 'flag', flag: '--mfu' } });
    expect(j.estimates[0].mfuSource).toBe('assumption');
    expect(j.assumptions.chips).toEqual({ value: 16, source: { kind: 'flag', flag: '--chips' } });
    expect(j.estimates.map((e: { hardware: string; chips: number; pricing: string }) => `${e.hardware}×${e.chips} ${e.pricing}`)).toEqual(['v6e×16 spot', 'h100×16 spot']);
    const v6e = j.estimates[0];
    for (const k of ['hardware', 'chips', 'pricing', 'tokens', 'flopsPerToken', 'tokensPerSecond', 'hours', 'chipHours', 'cost', 'low', 'high', 'breakdown']) expect(v6e).toHaveProperty(k);
    expect(v6e.low.mfu).toBeCloseTo(0.625);
    expect(v6e.high.mfu).toBeCloseTo(0.375);
    // spot in the cheapest region by default; H100 spot is published (us-east4)
    expect(v6e.price).toMatchObject({ perChipHour: 0.267, region: 'asia-southeast1', asOf: '2026-11-01' });
    expect(j.estimates[1].price).toMatchObject({ perChipHour: 4.27, region: 'us-east4' });
    // 16 chips run the config's job (8 devices): the same tokens; GBS 480 ÷ 16 = 30 sequences per chip, not a
    // multiple of the micro-batch 12: the largest micro-batch ≤ 12 that divides 30 is 10, GA 3
    expect(v6e.tokens).toBe(294_912_000_000);
    expect(v6e.perChip).toMatchObject({ sequences: 30, microBatch: 10, gradAccum: 3 });
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
    expect(j.estimates[0].cost).toBeCloseTo(4.2908, 3);
  });

  it('the job stays the config\'s: --chips 8 and --chips 64 on an HF config keep the tokens, and say so', () => {
    const hf = ['test/cost-fixtures/hf/training_args.json', 'test/cost-fixtures/hf/config.json'];
    const at = (n: string) => JSON.parse(run([...hf, '--chips', n, '--hardware', 'v6e', '--pricing', 'on-demand', '--format', 'json']).out);
    const [a, b] = [at('8'), at('64')];
    // no devices in the args; chips = 16 in the fixture's cost.toml is the job: GBS 4 × 8 × 16 = 512, tokens 2000 × 512 × 2048
    expect(a.config.jobDevices.value).toBe(16);
    expect(a.config.tokens.value).toBe(2000 * 512 * 2048);
    expect(b.config.tokens.value).toBe(a.config.tokens.value);
    // 512 ÷ 8 = 64 per chip = micro-batch 4 × GA 16; 512 ÷ 64 = 8 = micro-batch 4 × GA 2
    expect(a.estimates[0].perChip).toMatchObject({ sequences: 64, microBatch: 4, gradAccum: 16 });
    expect(b.estimates[0].perChip).toMatchObject({ sequences: 8, microBatch: 4, gradAccum: 2 });
    const text = run([...hf, '--chips', '64', '--hardware', 'v6e']).out;
    expect(text).toMatch(/the same job on every row: global batch 512 sequences and 2,097,152,000 tokens as the config says \(16 devices\)/);
  });

  it('--hardware takes slice names: v5p-8 is 4 chips, tpu7x-8 is 4 chips, v5litepod-16 is 16', () => {
    const j = JSON.parse(run(['examples/gpt-cuda/config.yaml', '--hardware', 'v5p-8,tpu7x-8,v5litepod-16', '--pricing', 'on-demand', '--format', 'json']).out);
    expect(j.estimates.map((e: { slice: string; chips: number }) => [e.slice, e.chips])).toEqual([['v5p-8', 4], ['tpu7x-8', 4], ['v5e-16', 16]]);
    expect(j.estimates[1].cost).toBeNull();
    const eu = JSON.parse(run(['examples/gpt-cuda/config.yaml', '--hardware', 'v6e', '--region', 'europe-west4', '--format', 'json']).out);
    expect(eu.estimates.map((e: { price: { region: string } }) => e.price.region)).toEqual(['europe-west4', 'europe-west4']);
    const bad = run(['examples/gpt-cuda/config.yaml', '--region', 'us-centrall']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^tpu-ready cost: --region: no catalog price in region "us-centrall" \(did you mean "us-central1"\?\)/);
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
    expect(r.out).toMatch(/^  examples\/gpt-cuda\/train\.py:\d+: TPU201 ≈ \+[\d.]+ h · \+\$[\d.,]+ on v5e-8 on-demand \(estimate: host sync in the hot loop; 20 ms × 600,000 steps; at \$1\.2\/chip-h us-central1 as of 2026-11-01\)$/m);
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

  it('cost diff A B: B − A per hardware and pricing in text, JSON and Markdown; REF:PATH reads a git revision', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-diff-'));
    const base = fs.readFileSync(path.join(ROOT, 'examples/gpt-cuda/config.yaml'), 'utf8');
    fs.writeFileSync(path.join(dir, 'a.yaml'), base);
    // B trains twice as long: 1,200,000 steps
    fs.writeFileSync(path.join(dir, 'b.yaml'), base.replace(/max_steps: 600000/, 'max_steps: 1200000'));
    const args = ['diff', 'a.yaml', 'b.yaml', '--hardware', 'v6e', '--pricing', 'on-demand'];
    const j = JSON.parse(run([...args, '--format', 'json'], dir).out);
    expect(j.rows).toHaveLength(1);
    const row = j.rows[0];
    expect(j.b.tokens).toBe(2 * j.a.tokens);
    // twice the tokens: compute, eval and checkpoint writes double; the one compile does not: Δ ≈ A's cost
    expect(row.deltaCost).toBeCloseTo(row.b.cost - row.a.cost, 9);
    expect(row.deltaCost / row.a.cost).toBeGreaterThan(0.99);
    expect(row.deltaCost / row.a.cost).toBeLessThan(1);
    const text = run(args, dir).out;
    expect(text).toMatch(/^Cost diff \(estimate, as of 2026-11-29\)\n  A: a\.yaml/);
    expect(text).toMatch(/TPU v6e \(Trillium\) \(v6e-8\)\s+on-demand\s+\$[\d,]+–\$[\d,]+\s+\$[\d,]+–\$[\d,]+\s+\+\$[\d,]+ \(\+(99|100)%\)\s+\+[\d.]+ (h|days)/);
    expect(run([...args, '--format', 'markdown'], dir).out).toMatch(/^# Training cost diff \(tpu-ready\)[\s\S]*\| Hardware \| Pricing \| A \| B \| Δ cost \| Δ time \|/);
    // a git revision of the same file: no change
    const git = (...a: string[]) => execFileSync('git', a, { cwd: dir, stdio: 'pipe' });
    git('init', '-q');
    git('-c', 'user.email=t@t', '-c', 'user.name=t', 'add', 'a.yaml');
    git('-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'a');
    const same = JSON.parse(run(['diff', 'HEAD:a.yaml', 'a.yaml', '--hardware', 'v6e', '--pricing', 'on-demand', '--format', 'json'], dir).out);
    expect(same.a.files).toEqual(['HEAD:a.yaml']);
    expect(same.rows[0].deltaCost).toBe(0);
    const one = run(['diff', 'a.yaml'], dir);
    expect(one.code).toBe(2);
    expect(one.err).toMatch(/^tpu-ready cost: cost diff needs two configs/);
    expect(run(['diff', 'HEAD:nope.yaml', 'a.yaml'], dir).err).toMatch(/HEAD:nope\.yaml: no such file, and git cannot show it/);
  });

  it('nanoGPT: the vocabulary comes from data/<dataset>/meta.pkl (read, not unpickled); eval passes and torch.compile counted', () => {
    const j = JSON.parse(run(['test/cost-fixtures/nanogpt-char/config/train_char.py', '--hardware', 'h100', '--chips', '1', '--pricing', 'on-demand', '--format', 'json']).out);
    expect(j.config.fields.vocab).toEqual({ value: 65, source: { kind: 'derived', formula: 'vocab_size in test/cost-fixtures/nanogpt-char/data/shakespeare_char/meta.pkl (read without unpickling)' } });
    // N = 12 × 6 × 384² + 65 × 384 = 10,616,832 + 24,960 = 10,641,792
    expect(j.config.params.value).toBe(10_641_792);
    const e = j.estimates[0];
    // ⌊5000 ÷ 250⌋ + 1 = 21 evaluations × 2 × 200 × 64 × 256 tokens
    expect(e.eval).toMatchObject({ passes: 21, tokensEach: 2 * 200 * 64 * 256 });
    // compile = True: 60 s of torch.compile on the GPU
    expect(e.breakdown.compile).toBeCloseTo(60 / 3600, 9);
    // without the meta.pkl the default vocabulary is named as such
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-char-'));
    fs.cpSync(path.join(FX, 'nanogpt-char/config'), path.join(dir, 'config'), { recursive: true });
    const r = run(['config/train_char.py', '--hardware', 'h100', '--format', 'json'], dir);
    const k = JSON.parse(r.out);
    expect(k.config.fields.vocab.value).toBe(50304);
    expect(k.warnings.join()).toMatch(/dataset "shakespeare_char": data\/shakespeare_char\/meta\.pkl not found: the vocabulary is nanoGPT's default 50,304/);
  });

  it('is listed in tpu-ready --help', () => {
    const r = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    expect(r.stdout).toMatch(/tpu-ready cost \[CONFIG\.\.\.\] \[--hardware v5e,v6e,h100\] \[--chips 8\] \[--pricing on-demand\|spot\]/);
  });
});
