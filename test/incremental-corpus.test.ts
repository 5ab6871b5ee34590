/**
 * The incremental re-analysis oracle on large and real files: after seeded random edits (test/incremental-edits.ts:
 * typing inside words and bodies, renames of called functions, imports, host reads in helpers, training loops,
 * defs added and removed, unbalanced brackets; LF, CRLF and non-ASCII variants), the language server's
 * DocumentAnalyzer finds exactly what a full analysis of the same text finds (rule, range, message, severity,
 * related locations, fix, rule errors).
 *
 *  - the bench's 5,000-line torch file (scripts/bench.ts builds it the same way): always;
 *  - real projects' files: every .py and .ipynb under the directories of INCREMENTAL_CORPUS (a ':'-separated
 *    list, e.g. `INCREMENTAL_CORPUS=/work/eval9/files:/work/eval10/files`), INCREMENTAL_EDITS edits each
 *    (default 3). Skipped without it: CI has no such corpus, and the full run takes minutes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { analyze, analysedText, notebookDocument, pythonDocument, type SourceDocument } from '../src/core/engine';
import { DocumentAnalyzer } from '../src/core/incremental';
import { parseIpynb, type NotebookCell } from '../src/core/notebook';
import { RULES } from '../src/rules';
import { DEFAULT_OPTIONS, type Finding } from '../src/core/types';
import { randomEdit, rng, type Rand } from './incremental-edits';
import { torchFile } from '../scripts/shapes';

const SEED = process.env.INCREMENTAL_SEED === 'random' ? Date.now() % 2147483647 : Number(process.env.INCREMENTAL_SEED ?? 20261202);
const CORPUS = (process.env.INCREMENTAL_CORPUS ?? '').split(':').filter(Boolean);
const EDITS = Number(process.env.INCREMENTAL_EDITS ?? 3);

beforeAll(() => init());

const view = (fs: Finding[]) => fs.map((f) => ({ rule: f.rule, start: f.start, end: f.end, severity: f.severity, message: f.message, related: f.related ?? [], fix: f.fix }));

/** One document's run: `edits` seeded edits, each compared with a full analysis. Returns the edit kinds. */
function oracle(name: string, first: SourceDocument, edit: (doc: SourceDocument, rand: Rand) => { kind: string; doc: SourceDocument }, edits: number, rand: Rand): string[] {
  const analyzer = new DocumentAnalyzer();
  const kinds: string[] = [];
  try {
    analyzer.analyze(first, RULES, DEFAULT_OPTIONS);
    let doc = first;
    for (let step = 0; step < edits; step++) {
      const e = edit(doc, rand);
      doc = e.doc;
      kinds.push(e.kind);
      const inc = analyzer.analyze(doc, RULES, DEFAULT_OPTIONS);
      const full = analyze(doc, RULES, DEFAULT_OPTIONS);
      full.tree?.delete();
      const where = `${name} (seed ${SEED}) after edit ${step + 1} (${kinds.join(', ')})`;
      expect(view(inc.findings), `${where}:\n${analysedText(doc).slice(0, 4000)}`).toEqual(view(full.findings));
      expect(inc.ruleErrors.map((r) => r.rule), where).toEqual(full.ruleErrors.map((r) => r.rule));
    }
  } finally {
    analyzer.dispose();
  }
  return kinds;
}

const editPython = (doc: SourceDocument, rand: Rand) => {
  const e = randomEdit(analysedText(doc), rand);
  return { kind: e.kind, doc: pythonDocument(doc.path, e.text) };
};

/** An edit of one random code cell of a notebook. */
const editNotebook = (doc: SourceDocument, rand: Rand) => {
  if (doc.kind !== 'notebook') throw new Error('not a notebook');
  const code = doc.cells.map((c, i) => (c.kind === 'code' ? i : -1)).filter((i) => i >= 0);
  const c = code.length ? code[Math.floor(rand() * code.length)] : 0;
  const e = randomEdit(doc.cells[c]?.text ?? '', rand);
  const cells: NotebookCell[] = doc.cells.map((cell, i) => (i === c ? { ...cell, text: e.text } : cell));
  return { kind: `cell:${e.kind}`, doc: notebookDocument(doc.path, cells) };
};

/** The bench's 5,000-line file (scripts/shapes.ts, as scripts/bench.ts builds it). */
const benchFile = () => torchFile(ROOT);

function corpusFiles(): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(py|ipynb)$/.test(e.name)) out.push(p);
    }
  };
  for (const d of CORPUS) walk(d);
  return out.sort();
}

describe('incremental re-analysis equals full analysis on large and real files', () => {
  it('the bench 5,000-line file, with edits that keep and that change summaries', () => {
    const rand = rng(SEED);
    const text = benchFile();
    expect(text.split('\n').length).toBe(5000);
    const kinds = oracle('bench 5,000-line file', pythonDocument('big.py', text), editPython, 8, rand);
    expect(kinds.length).toBe(8);
  }, 600_000);

  it.skipIf(!CORPUS.length)('every file of INCREMENTAL_CORPUS, a few seeded edits each (LF, CRLF, non-ASCII)', () => {
    const rand = rng(SEED + 1);
    const files = corpusFiles();
    expect(files.length).toBeGreaterThan(0);
    const kinds = new Map<string, number>();
    let compared = 0;
    const differences: string[] = [];
    for (const [i, p] of files.entries()) {
      const raw = fs.readFileSync(p, 'utf8');
      let doc: SourceDocument;
      if (p.endsWith('.ipynb')) {
        let cells: NotebookCell[];
        try {
          cells = parseIpynb(raw).cells;
        } catch {
          continue;
        }
        doc = notebookDocument(p, cells);
      } else {
        const text = i % 3 === 1 ? raw.replace(/\r?\n/g, '\r\n') : i % 3 === 2 ? `# données é 🙂 ü\n${raw}` : raw;
        doc = pythonDocument(p, text);
      }
      // every file is run (a difference is collected, not thrown at once), so one run reports them all
      try {
        for (const k of oracle(p, doc, doc.kind === 'notebook' ? editNotebook : editPython, EDITS, rand)) {
          kinds.set(k, (kinds.get(k) ?? 0) + 1);
          compared++;
        }
      } catch (e) {
        differences.push(String((e as Error).message).slice(0, 2000));
      }
    }
    console.log(`incremental oracle (seed ${SEED}): ${files.length} files, ${compared} edits compared, ${differences.length} files differ: ${[...kinds].sort().map(([k, n]) => `${k} ${n}`).join(', ')}`);
    expect(differences).toEqual([]);
    expect(compared).toBeGreaterThan(files.length);
  }, 3_600_000);
});
