/** Property tests on the core: arbitrary, truncated and mutated Python never breaks the engine. */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { analyze, analysedText, fixDocument, Locator, notebookDocument, pythonDocument } from '../src/core/engine';
import { combineCells, spanAt } from '../src/core/notebook';
import { countErrors, parsePython } from '../src/core/parse';
import { overlaps } from '../src/core/edits';
import { RULES } from '../src/rules';
import { DEFAULT_OPTIONS, type AnalyzeOptions } from '../src/core/types';

const corpus: string[] = [];
function collect(dir: string) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) collect(p);
    else if (e.name.endsWith('.py')) corpus.push(fs.readFileSync(p, 'utf8'));
  }
}

const STYLES: AnalyzeOptions[] = [
  { ...DEFAULT_OPTIONS, fixStyle: 'tpu-only' },
  DEFAULT_OPTIONS,
  { ...DEFAULT_OPTIONS, target: { profile: 'torchtpu', version: 'preview' } },
];

// A fixed seed keeps CI reproducible; PROPERTY_SEED=random explores new cases locally.
const seedEnv = process.env.PROPERTY_SEED;
fc.configureGlobal({ seed: seedEnv === 'random' ? Date.now() : Number(seedEnv ?? 20261129) });

beforeAll(async () => {
  await init();
  collect(path.join(ROOT, 'examples'));
  collect(path.join(ROOT, 'src/rules'));
});

/** Source text: a corpus file cut, spliced, with CRLF or non-ASCII inserted. */
const pythonish = () =>
  fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 300 }),
    fc.tuple(fc.nat(), fc.nat(), fc.nat(), fc.constantFrom('', '\r\n', '😀', 'é', '(', '"""', ':', '\t', 'torch.cuda.', '%pip x\n', '.cuda()')).map(([i, a, b, ins]) => {
      const src = corpus[i % corpus.length];
      const x = a % (src.length + 1);
      const y = Math.min(src.length, x + (b % 400));
      return src.slice(0, x) + ins + src.slice(y);
    }),
    fc.tuple(fc.nat(), fc.nat()).map(([i, n]) => corpus[i % corpus.length].slice(0, n % (corpus[i % corpus.length].length + 1))),
    fc.nat().map((i) => corpus[i % corpus.length].replace(/\n/g, '\r\n')),
  );

describe('engine properties', () => {
  it('never throws, no rule errors, every range lies in the document, fix edits never overlap', () => {
    fc.assert(
      fc.property(pythonish(), fc.constantFrom(...STYLES), (text, options) => {
        const a = analyze(pythonDocument('p.py', text), RULES, options);
        expect(a.ruleErrors).toEqual([]);
        for (const f of a.findings) {
          expect(f.start).toBeGreaterThanOrEqual(0);
          expect(f.end).toBeLessThanOrEqual(text.length);
          expect(f.start).toBeLessThanOrEqual(f.end);
          if (f.fix) {
            const e = f.fix.edits;
            for (const x of e) expect(x.start >= 0 && x.end <= text.length && x.start <= x.end).toBe(true);
            for (let i = 0; i < e.length; i++) for (let j = i + 1; j < e.length; j++) expect(overlaps(e[i], e[j]), `${f.rule} edits overlap`).toBe(false);
          }
        }
        a.tree?.delete();
      }),
      { numRuns: 300 },
    );
  });

  it('fixing is idempotent and adds no syntax errors', () => {
    fc.assert(
      fc.property(pythonish(), fc.constantFrom(...STYLES), (text, options) => {
        const doc = pythonDocument('p.py', text);
        const once = fixDocument(doc, RULES, options, { unsafe: true });
        const twice = fixDocument(once.doc, RULES, options, { unsafe: true });
        expect(analysedText(twice.doc)).toBe(analysedText(once.doc));
        expect(countErrors(parsePython(analysedText(once.doc)))).toBeLessThanOrEqual(countErrors(parsePython(text)));
      }),
      { numRuns: 120 },
    );
  });

  it('notebook (cell, offset) ↔ combined offset round-trips', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ kind: fc.constantFrom('code' as const, 'markdown' as const), text: fc.string({ maxLength: 60 }) }), { minLength: 1, maxLength: 8 }),
        (cells) => {
          const program = combineCells(cells);
          for (const span of program.spans) {
            expect(program.text.slice(span.start, span.end).length).toBe(cells[span.cell].text.length);
            for (let o = span.start; o <= span.end; o += Math.max(1, Math.floor((span.end - span.start) / 4))) {
              expect(spanAt(program, o)?.cell).toBe(span.cell);
            }
          }
          const doc = notebookDocument('n.ipynb', cells);
          const loc = new Locator(doc);
          for (const span of program.spans) {
            const mid = span.start + Math.floor((span.end - span.start) / 2);
            const c = loc.cellOffset(mid);
            expect(c.cell).toBe(span.cell);
            expect(span.start + c.offset).toBe(mid);
          }
          const a = analyze(doc, RULES, DEFAULT_OPTIONS);
          expect(a.ruleErrors).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
