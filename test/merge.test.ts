/**
 * One finding per problem (issue 9): with every rule on, two rules that describe one problem on one expression
 * report once. test/merge-fixtures/*.py mark lines with `# has: TPUa, TPUb` (each reported on that line) and
 * `# not: TPUc` (none on that line) and `# once: TPUd` (exactly one on that line). `quiet_*.py` hold near misses of once-per-file rules, which a rule fixture
 * (it must hit its rule) cannot.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { init, ROOT } from './setup';
import { analyze, locateAll, pythonDocument } from '../src/core/engine';
import { RULES, RULES_BY_ID } from '../src/rules';
import { DEFAULT_OPTIONS } from '../src/core/types';

const DIR = path.join(ROOT, 'test/merge-fixtures');

beforeAll(async () => {
  await init();
});

function marks(text: string, kind: 'has' | 'not' | 'once'): Map<number, string[]> {
  const out = new Map<number, string[]>();
  text.split('\n').forEach((line, i) => {
    const m = new RegExp(`#\\s*${kind}:\\s*([A-Z0-9, ]+)`).exec(line);
    if (m) out.set(i, m[1].split(',').map((s) => s.trim()).filter(Boolean));
  });
  return out;
}

describe('one finding per problem', () => {
  for (const name of fs.readdirSync(DIR).filter((f) => f.endsWith('.py'))) {
    it(name, () => {
      const text = fs.readFileSync(path.join(DIR, name), 'utf8');
      const analysis = analyze(pythonDocument(name, text), [...RULES], { ...DEFAULT_OPTIONS });
      expect(analysis.ruleErrors).toEqual([]);
      const byLine = new Map<number, string[]>();
      for (const f of locateAll(analysis)) byLine.set(f.startPos.line, [...(byLine.get(f.startPos.line) ?? []), f.rule]);
      const has = marks(text, 'has');
      expect(has.size + marks(text, 'not').size + marks(text, 'once').size).toBeGreaterThan(0);
      for (const [line, ids] of has) for (const id of ids) expect(byLine.get(line) ?? [], `${name}:${line + 1} reports ${id}`).toContain(id);
      for (const [line, ids] of marks(text, 'once')) for (const id of ids) expect((byLine.get(line) ?? []).filter((r) => r === id), `${name}:${line + 1} reports ${id} once`).toHaveLength(1);
      for (const [line, ids] of marks(text, 'not')) for (const id of ids) expect(byLine.get(line) ?? [], `${name}:${line + 1} does not report ${id}`).not.toContain(id);
    });
  }

  it('a rule run alone reports where the whole run does: the hand copy, not the loop header TPU204 carries', () => {
    const text = fs.readFileSync(path.join(DIR, 'loader.py'), 'utf8');
    const alone = locateAll(analyze(pythonDocument('loader.py', text), [RULES_BY_ID.get('TPU401')!], { ...DEFAULT_OPTIONS }));
    expect(alone.filter((f) => f.startPos.line < 16).map((f) => f.startPos.line)).toEqual([9]);
  });
});
