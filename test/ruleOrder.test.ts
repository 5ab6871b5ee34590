/**
 * The program model answers the same whichever rule asks first (issue 9): every rule fixture and every project
 * fixture is analysed with the rules in the default order, reversed, and in two seeded shuffles, and the findings
 * (positions, severities, messages, related locations, fixes) must be identical.
 *
 * The same check over any folders: `RULE_ORDER_DIRS=/a:/b npx vitest run test/ruleOrder.test.ts` (each folder is one
 * project; `RULE_ORDER_OUT=file.json` writes the differing files and findings).
 *
 * Also: a finding keeps the related locations it was reported with, and a rule that fills its list after reporting
 * fails (src/core/engine.ts freezes the list).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { RULES } from '../src/rules';
import { analyze, locateAll, pythonDocument } from '../src/core/engine';
import { DEFAULT_OPTIONS, type AnalyzeOptions } from '../src/core/types';
import { ProjectIndex, type ProjectHost } from '../src/model/project';
import { listPythonFiles } from '../src/cli/process';
import type { Rule } from '../src/core/rule';

beforeAll(async () => {
  await init();
});

function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const out = [...xs];
  let s = seed >>> 0;
  const rnd = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const ORDERS: { name: string; rules: Rule[] }[] = [
  { name: 'default', rules: RULES },
  { name: 'reversed', rules: [...RULES].reverse() },
  { name: 'shuffle-9', rules: shuffled(RULES, 9) },
  { name: 'shuffle-2026', rules: shuffled(RULES, 2026) },
];

/** One line per finding: everything a user sees. */
function findingsOf(file: string, text: string, rules: Rule[], options: AnalyzeOptions): string[] {
  const analysis = analyze(pythonDocument(file, text), rules, options);
  const out = locateAll(analysis).map((f) =>
    JSON.stringify([f.rule, f.start, f.end, f.severity, f.message, (f.related ?? []).map((r) => [r.path, r.start, r.end, r.message]), f.fix ? [f.fix.title, f.fix.applicability, f.fix.edits.map((e) => [e.start, e.end, e.text])] : null]),
  );
  expect(analysis.ruleErrors).toEqual([]);
  analysis.tree?.delete();
  return out;
}

function diskHost(): ProjectHost {
  return { readFile: (p) => (fs.existsSync(p) && fs.statSync(p).isFile() ? fs.readFileSync(p, 'utf8') : null), listPython: (root, max) => listPythonFiles(root, max) };
}

/** Differences between the default order and the others, per file (a fresh project index per order: no shared models). */
function orderDifferences(files: string[], projectRoot: string | null): { file: string; order: string; only: string[]; missing: string[] }[] {
  const texts = files.map((f) => fs.readFileSync(f, 'utf8'));
  const per = ORDERS.map((o) => {
    const options = projectRoot ? { ...DEFAULT_OPTIONS, project: new ProjectIndex([projectRoot], diskHost()) } : DEFAULT_OPTIONS;
    return files.map((f, i) => findingsOf(f, texts[i]!, o.rules, options));
  });
  const diffs: { file: string; order: string; only: string[]; missing: string[] }[] = [];
  files.forEach((file, i) => {
    const base = per[0]![i]!;
    for (let k = 1; k < ORDERS.length; k++) {
      const other = per[k]![i]!;
      const only = other.filter((x) => !base.includes(x));
      const missing = base.filter((x) => !other.includes(x));
      if (only.length || missing.length || other.length !== base.length) diffs.push({ file, order: ORDERS[k]!.name, only, missing });
    }
  });
  return diffs;
}

function pyFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? (e.name === '__snapshots__' ? [] : pyFiles(path.join(dir, e.name))) : e.name.endsWith('.py') ? [path.join(dir, e.name)] : [])).sort();
}

describe('findings do not depend on rule order', () => {
  it('rule fixtures', () => {
    const files: string[] = [];
    for (const family of fs.readdirSync(path.join(ROOT, 'src/rules'))) {
      const dir = path.join(ROOT, 'src/rules', family, 'fixtures');
      if (fs.existsSync(dir)) for (const f of fs.readdirSync(dir).sort()) if (/^TPU\d{3}.*\.py$/.test(f)) files.push(path.join(dir, f));
    }
    expect(files.length).toBeGreaterThan(100);
    expect(orderDifferences(files, null)).toEqual([]);
  }, 600_000);

  it('project fixtures', () => {
    const cases = path.join(ROOT, 'test/project-fixtures');
    const diffs = fs.readdirSync(cases).filter((c) => fs.statSync(path.join(cases, c)).isDirectory()).flatMap((c) => orderDifferences(pyFiles(path.join(cases, c)), path.join(cases, c)));
    expect(diffs).toEqual([]);
  }, 600_000);

  const dirs = (process.env.RULE_ORDER_DIRS ?? '').split(':').filter(Boolean);
  for (const dir of dirs) {
    it(`folder ${dir}`, () => {
      const diffs = orderDifferences(listPythonFiles(dir, 100_000).sort(), dir);
      if (process.env.RULE_ORDER_OUT) fs.writeFileSync(process.env.RULE_ORDER_OUT, JSON.stringify(diffs, null, 1));
      expect(diffs.map((d) => `${d.order} ${path.relative(dir, d.file)}: +${d.only.length} -${d.missing.length}`)).toEqual([]);
    }, 3_600_000);
  }
});

describe('related locations are kept as reported', () => {
  const base: Omit<Rule, 'check'> = {
    id: 'TPU999', name: 'test', title: 'test', severity: 'info', step: 'code', effort: 'trivial', message: 'm',
    fix: { availability: 'none' }, docs: { summary: '', why: '', sources: [] } as unknown as Rule['docs'], triggers: ['torch'],
  } as unknown as Omit<Rule, 'check'>;
  const text = 'import torch\nx = torch.zeros(1)\n';

  it('a list given at report time is the finding\'s', () => {
    const rule: Rule = {
      ...base,
      check(ctx) {
        const call = ctx.sema.nodes('call')[0]!;
        ctx.report(call, { related: [{ start: 0, end: 6, message: 'the import' }] });
      },
    } as Rule;
    const a = analyze(pythonDocument('t.py', text), [rule], DEFAULT_OPTIONS);
    expect(a.ruleErrors).toEqual([]);
    expect(locateAll(a)[0]?.related?.map((r) => r.message)).toEqual(['the import']);
    a.tree?.delete();
  });

  it('filling the list after reporting is a rule error, not a silent loss', () => {
    const rule: Rule = {
      ...base,
      check(ctx) {
        const related: { start: number; end: number; message: string }[] = [];
        ctx.report(ctx.sema.nodes('call')[0]!, { related });
        related.push({ start: 0, end: 6, message: 'late' });
      },
    } as Rule;
    const a = analyze(pythonDocument('t.py', text), [rule], DEFAULT_OPTIONS);
    expect(a.ruleErrors.map((e) => e.rule)).toEqual(['TPU999']);
    expect(a.ruleErrors[0]!.error).toMatch(/not extensible|read.only|frozen/i);
    a.tree?.delete();
  });
});
