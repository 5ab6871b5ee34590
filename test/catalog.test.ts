/** Catalog-level checks: the registry, file naming, docs, import walls, versions. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAMILIES, RULES } from '../src/rules';
import { docsUrl } from '../src/core/rule';
import { VERSION } from '../src/cli/version';
import { ROOT } from './setup';

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

describe('rule registry', () => {
  it('ids are unique, sorted and well-formed', () => {
    const ids = RULES.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(/^TPU[1-9]\d\d$/);
  });

  it('each rule lives in its family folder, in a file named after its id', () => {
    const files = walk(path.join(ROOT, 'src/rules')).filter((f) => /TPU\d{3}-[\w-]+\.ts$/.test(f));
    const byId = new Map(files.map((f) => [path.basename(f).slice(0, 6), f]));
    for (const r of RULES) {
      const file = byId.get(r.id);
      expect(file, `${r.id} has a file src/rules/<family>/${r.id}-<slug>.ts`).toBeDefined();
      expect(path.basename(path.dirname(file!))).toBe(FAMILIES[r.id[3]]);
    }
    expect(files.length, 'every rule file is registered').toBe(RULES.length);
  });

  it('names read as patterns, messages are one line, docs are complete', () => {
    for (const r of RULES) {
      expect(r.name).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
      expect(r.message.length).toBeGreaterThan(10);
      expect(r.message).not.toContain('\n');
      for (const k of ['what', 'why', 'example', 'useInstead'] as const) expect(r.docs[k].trim().length, `${r.id} docs.${k}`).toBeGreaterThan(5);
      expect(r.docs.sources.length, `${r.id} cites its sources`).toBeGreaterThan(0);
      if (r.fix.availability !== 'none') expect(r.fix.applicability, `${r.id} declares fix applicability`).toBeDefined();
      if (r.fix.applicability === 'unsafe' || r.fix.availability === 'sometimes') expect(r.docs.fixSafety, `${r.id} explains fix safety`).toBeTruthy();
      expect(r.step).toBeGreaterThanOrEqual(1);
      expect(r.step).toBeLessThanOrEqual(10);
      expect([1, 3, 5, 7, 13]).toContain(r.effort);
      expect(r.check || r.checkText, `${r.id} detects something`).toBeTruthy();
      expect(docsUrl(r.id)).toMatch(new RegExp(`/docs/rules/${r.id}\\.md$`));
    }
  });

  it('every rule has a fixture that hits it', () => {
    const fixtures = walk(path.join(ROOT, 'src/rules')).filter((f) => f.includes(`${path.sep}fixtures${path.sep}`) && !f.includes('__snapshots__'));
    for (const r of RULES) {
      const mine = fixtures.filter((f) => path.basename(f).startsWith(r.id));
      expect(mine.length, `${r.id} has a fixture`).toBeGreaterThan(0);
      expect(mine.some((f) => fs.readFileSync(f, 'utf8').includes(r.id)), `${r.id} fixture marks an expected finding`).toBe(true);
    }
  });

  it('a rule is fixable exactly when its snapshots show a fix', () => {
    for (const r of RULES) {
      const dir = path.join(ROOT, 'src/rules', FAMILIES[r.id[3]], 'fixtures', '__snapshots__');
      const snaps = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.startsWith(r.id)).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')) : [];
      const fixed = snaps.some((s) => /### fixed \([1-9]\d* fix/.test(s));
      expect(fixed, `${r.id}: availability ${r.fix.availability}`).toBe(r.fix.availability !== 'none');
    }
  });
});

describe('architecture', () => {
  it('the engine, rules, cost and checklist never import vscode, node:fs or the hosts', () => {
    for (const dir of ['src/core', 'src/rules', 'src/cost', 'src/checklist', 'src/protocol']) {
      const abs = path.join(ROOT, dir);
      if (!fs.existsSync(abs)) continue;
      for (const f of walk(abs).filter((x) => x.endsWith('.ts'))) {
        const text = fs.readFileSync(f, 'utf8');
        const imports = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]/gm), ...text.matchAll(/require\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]);
        for (const imp of imports) {
          expect(imp, `${path.relative(ROOT, f)} imports ${imp}`).not.toMatch(/^(vscode|node:fs|fs|fs\/promises|node:fs\/promises)$/);
          expect(imp, `${path.relative(ROOT, f)} imports ${imp}`).not.toMatch(/(^|\/)(extension|cli)(\/|$)/);
        }
      }
    }
  });

  it('the CLI version matches package.json', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(VERSION).toBe(pkg.version);
  });

  it('web-tree-sitter is pinned exactly', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.dependencies['web-tree-sitter']).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
