/**
 * File-level near-misses: whole files on which one rule must stay silent (a rule fixture must hit its rule, so a rule
 * that reports once per file cannot hold its near-miss there). `test/nearmiss/<RULE>-<case>.<ext>`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { init, ROOT } from './setup';
import { analyze, locateAll, notebookDocument, pythonDocument } from '../src/core/engine';
import { RULES_BY_ID } from '../src/rules';
import { DEFAULT_OPTIONS } from '../src/core/types';
import { parseIpynb } from '../src/core/notebook';

const DIR = path.join(ROOT, 'test', 'nearmiss');
const files = fs.readdirSync(DIR).filter((f) => /^TPU\d{3}-.+\.(py|ipynb)$/.test(f)).sort();

beforeAll(async () => {
  await init();
});

describe('file-level near-misses', () => {
  it('has cases', () => expect(files.length).toBeGreaterThan(0));
  for (const file of files) {
    const id = file.slice(0, 6);
    it(`${file}: no ${id}`, () => {
      const rule = RULES_BY_ID.get(id);
      expect(rule, `unknown rule ${id}`).toBeDefined();
      const text = fs.readFileSync(path.join(DIR, file), 'utf8');
      const doc = file.endsWith('.ipynb') ? notebookDocument(file, parseIpynb(text).cells) : pythonDocument(file, text);
      // the whole registry runs, as the CLI does; only the named rule is asserted
      const findings = locateAll(analyze(doc, [...RULES_BY_ID.values()], DEFAULT_OPTIONS)).filter((f) => f.rule === id);
      expect(findings.map((f) => `${f.startPos.line + 1}: ${f.message}`)).toEqual([]);
    });
  }
});
