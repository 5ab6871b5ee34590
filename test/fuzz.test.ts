/**
 * Bounded fuzz (issue 14): seeded mutants of the rule fixtures through the CLI's per-file pipeline. Asserts no
 * internal error, every file within its budget, and no fix that adds a syntax error. FUZZ_SEED=n replays a run;
 * FUZZ_SEED=random explores; FUZZ_COUNT sets the number of mutants.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { processFile } from '../src/cli/process';
import { countErrors, parsePython } from '../src/core/parse';
import { DEFAULT_OPTIONS, type AnalyzeOptions } from '../src/core/types';

const SEED = process.env.FUZZ_SEED === 'random' ? (Date.now() % 2 ** 31) : Number(process.env.FUZZ_SEED ?? 20261201);
const COUNT = Number(process.env.FUZZ_COUNT ?? 2000);
const BUDGET_MS = 2000;
/** Slack over the budget: the check runs between rules and reports, and the parse itself is not interruptible. */
const SLACK_MS = 1500;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOKENS = [
  '(', ')', '[', ']', '{', '}', ':', ',', '\n', '\r', '\r\n', '\t', '    ', '"""', "'", '"', '#', '\\', '\x00', '\x1b[31m', 'é', '😀', '中',
  '\ufeff', '\u202e', 'torch.cuda()', '.cuda()', 'xm.mark_step()', 'torch_xla.sync()', '.item()', 'for i in range(10):\n    ', 'if x:\n', 'def f(x):\n',
  'lambda: ', 'await ', '@torch.no_grad()\n', '# tpu-ready: ignore\r', '# tpu-ready: ignore-file\n', 'f(' .repeat(50), ')'.repeat(50), ' + a'.repeat(200),
  'import torch_xla.core.xla_model as xm\n', 'from torch.cuda.amp import GradScaler\n', "device = 'cuda'\n",
];

function mutate(text: string, rnd: () => number): string {
  const pick = <T,>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const at = () => Math.floor(rnd() * (text.length + 1));
  const ops = 1 + Math.floor(rnd() * 3);
  for (let k = 0; k < ops; k++) {
    const op = Math.floor(rnd() * 5);
    const i = at();
    if (op === 0) text = text.slice(0, i) + pick(TOKENS) + text.slice(i);
    else if (op === 1) text = text.slice(0, i) + text.slice(Math.min(text.length, i + 1 + Math.floor(rnd() * 40)));
    else if (op === 2) {
      const j = Math.min(text.length, i + Math.floor(rnd() * 200));
      text = text.slice(0, j) + text.slice(i, j) + text.slice(j);
    } else if (op === 3) {
      const lines = text.split('\n');
      const a = Math.floor(rnd() * lines.length);
      const b = Math.floor(rnd() * lines.length);
      [lines[a], lines[b]] = [lines[b], lines[a]];
      text = lines.join('\n');
    } else text = text.replace(/\n/g, () => (rnd() < 0.1 ? pick(['\r\n', '\r', '\n\n']) : '\n'));
  }
  return text;
}

const fixtures: string[] = [];
let dir: string;

beforeAll(async () => {
  await init();
  const rules = path.join(ROOT, 'src/rules');
  for (const fam of fs.readdirSync(rules)) {
    const fx = path.join(rules, fam, 'fixtures');
    if (!fs.existsSync(fx)) continue;
    for (const f of fs.readdirSync(fx).sort()) if (f.endsWith('.py')) fixtures.push(fs.readFileSync(path.join(fx, f), 'utf8'));
  }
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-fuzz-'));
});

describe('fuzz', () => {
  it(`${COUNT} mutants of the fixtures: no internal error, within the budget, no fix adds a syntax error (seed ${SEED})`, () => {
    const rnd = mulberry32(SEED);
    const styles: AnalyzeOptions[] = [DEFAULT_OPTIONS, { ...DEFAULT_OPTIONS, fixStyle: 'tpu-only' }, { ...DEFAULT_OPTIONS, target: { profile: 'torchtpu', version: 'preview' } }];
    const file = path.join(dir, 'm.py');
    expect(fixtures.length).toBeGreaterThan(50);
    for (let n = 0; n < COUNT; n++) {
      const text = mutate(fixtures[Math.floor(rnd() * fixtures.length)], rnd);
      const options = styles[n % styles.length];
      fs.writeFileSync(file, text);
      const where = `FUZZ_SEED=${SEED} mutant #${n}: ${JSON.stringify(text.slice(0, 300))}`;
      const t0 = performance.now();
      const o = processFile({ abs: file, display: 'm.py', options, fix: n % 2 ? { unsafe: true } : null, maxBytes: 2048 * 1024, budgetMs: BUDGET_MS });
      const ms = performance.now() - t0;
      expect(ms, `${where}: took ${ms.toFixed(0)} ms`).toBeLessThan(BUDGET_MS + SLACK_MS);
      expect(o.ruleErrors, where).toEqual([]);
      expect(o.failed ?? false, `${where}: ${o.skipped}`).toBe(false);
      if (o.fixed) {
        const before = parsePython(text.replace(/\r(?!\n)/g, '\n'));
        const after = parsePython(o.fixed.after.replace(/\r(?!\n)/g, '\n'));
        try {
          expect(countErrors(after), `${where}: the fix added a syntax error:\n${o.fixed.after}`).toBeLessThanOrEqual(countErrors(before));
          expect(countErrors(before), where).toBe(0);
        } finally {
          before.delete();
          after.delete();
        }
      }
    }
  }, 120_000);
});
