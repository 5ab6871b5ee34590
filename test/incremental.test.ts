/**
 * Re-analysis after edits (what the language server runs on every change) finds exactly what a full analysis
 * of the same text finds: seeded random edits (typing and deleting characters, pasting lines, CRLF files,
 * non-ASCII text before the edit) on rule fixtures and examples, and on notebooks.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { analyze, analysedText, notebookDocument, pythonDocument, type SourceDocument } from '../src/core/engine';
import { changedSpan, DocumentAnalyzer } from '../src/core/incremental';
import type { NotebookCell } from '../src/core/notebook';
import { RULES } from '../src/rules';
import { parsePython } from '../src/core/parse';
import { DEFAULT_OPTIONS, type Finding } from '../src/core/types';
import { randomEdit as structuredEdit, rng as seeded } from './incremental-edits';

const files: { name: string; text: string }[] = [];

beforeAll(async () => {
  await init();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && e.name !== '__snapshots__') walk(p);
      else if (e.name.endsWith('.py')) files.push({ name: path.relative(ROOT, p), text: fs.readFileSync(p, 'utf8') });
    }
  };
  walk(path.join(ROOT, 'src/rules'));
  walk(path.join(ROOT, 'examples'));
  files.sort((a, b) => a.name.localeCompare(b.name));
});

/** A fixed seed keeps CI reproducible; INCREMENTAL_SEED=random explores new cases locally. */
const SEED = process.env.INCREMENTAL_SEED === 'random' ? Date.now() % 2147483647 : Number(process.env.INCREMENTAL_SEED ?? 20261201);

function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
}

const PIECES = ['q', 'x', '_', '.', '(', ')', ' ', '\n', ':', '"', '#', 'é', '🙂', 'cuda', 'torch', '.cuda()', '\n    ', 'import torch_xla\n', 'xm.mark_step()\n', 'for b in loader:\n    loss.item()\n'];

/** One random edit: type or delete one character (mostly), or paste/delete a piece or a line. */
function randomEdit(text: string, rand: () => number): string {
  const at = Math.floor(rand() * (text.length + 1));
  const r = rand();
  if (r < 0.4) return text.slice(0, at) + PIECES[Math.floor(rand() * 3)] + text.slice(at);
  if (r < 0.7) {
    // never split a surrogate pair: the editor does not either
    const end = Math.min(text.length, at + (/[\uD800-\uDBFF]/.test(text[at] ?? '') ? 2 : 1));
    return text.slice(0, at) + text.slice(end);
  }
  if (r < 0.9) return text.slice(0, at) + PIECES[Math.floor(rand() * PIECES.length)] + text.slice(at);
  const lineStart = text.lastIndexOf('\n', at - 1) + 1;
  const lineEnd = text.indexOf('\n', at);
  return text.slice(0, lineStart) + text.slice(lineEnd < 0 ? text.length : lineEnd + 1);
}

const view = (fs: Finding[]) => fs.map((f) => ({ rule: f.rule, start: f.start, end: f.end, severity: f.severity, message: f.message, related: f.related ?? [], fix: f.fix }));

function fullAnalysis(doc: SourceDocument) {
  const a = analyze(doc, RULES, DEFAULT_OPTIONS);
  a.tree?.delete();
  return a;
}

function fullFindings(doc: SourceDocument): Finding[] {
  return fullAnalysis(doc).findings;
}


/** One of three variants of a corpus file, by its index: as it is, with CRLF line ends, or after a non-ASCII first line. */
function variant(text: string, i: number): string {
  return i % 3 === 1 ? text.replace(/\r?\n/g, '\r\n') : i % 3 === 2 ? `# données é 🙂 ü\n${text}` : text;
}

describe('incremental re-analysis', () => {
  it('changedSpan describes the one differing span', () => {
    expect(changedSpan('abc', 'abc')).toBeNull();
    expect(changedSpan('abcdef', 'abXdef')).toEqual({ start: 2, oldEnd: 3, newText: 'X' });
    expect(changedSpan('aaa', 'aaaa')).toEqual({ start: 3, oldEnd: 3, newText: 'a' });
    expect(changedSpan('x\r\ny', 'x\ny')).toEqual({ start: 1, oldEnd: 2, newText: '' });
  });

  it('equals full analysis after seeded random edits of Python files (LF, CRLF, non-ASCII)', () => {
    const rand = rng(SEED);
    // a spread of the corpus: every fourth file, each in one of three variants
    const picked = files.filter((_, i) => i % 4 === 0);
    expect(picked.length).toBeGreaterThan(20);
    let compared = 0;
    let withFindings = 0;
    for (const [i, f] of picked.entries()) {
      let text = variant(f.text, i);
      const analyzer = new DocumentAnalyzer();
      try {
        analyzer.analyze(pythonDocument('t.py', text), RULES, DEFAULT_OPTIONS);
        for (let step = 0; step < 6; step++) {
          text = randomEdit(text, rand);
          const doc = pythonDocument('t.py', text);
          const inc = analyzer.analyze(doc, RULES, DEFAULT_OPTIONS);
          expect(analyzer.lastIncremental || !inc.tree).toBe(true);
          const want = fullFindings(doc);
          expect(view(inc.findings), `${f.name} (seed ${SEED}) after edit ${step + 1}:\n${text}`).toEqual(view(want));
          // the re-used tree is the tree of this text: the same as a fresh parse (the module node leaves out leading
          // blank lines, so its text is not always the whole text)
          if (inc.tree) {
            const fresh = parsePython(text);
            try {
              expect(inc.tree.rootNode.toString()).toBe(fresh.rootNode.toString());
              expect(inc.tree.rootNode.text).toBe(fresh.rootNode.text);
            } finally {
              fresh.delete();
            }
          }
          compared++;
          if (want.length) withFindings++;
        }
      } finally {
        analyzer.dispose();
      }
    }
    expect(compared).toBe(picked.length * 6);
    // the comparison is not vacuous: most edited files still have findings
    expect(withFindings).toBeGreaterThan(compared / 2);
  }, 240_000); // ~500 analyses: minutes on a loaded 2-core machine

  it('equals full analysis after edits that change what other scopes see (renames, imports, host reads, loops, defs, brackets)', () => {
    const rand = seeded(SEED + 2);
    const picked = files.filter((_, i) => i % 4 === 1);
    const kinds = new Map<string, number>();
    let withFindings = 0;
    for (const [i, f] of picked.entries()) {
      let text = variant(f.text, i);
      const analyzer = new DocumentAnalyzer();
      try {
        analyzer.analyze(pythonDocument('t.py', text), RULES, DEFAULT_OPTIONS);
        for (let step = 0; step < 5; step++) {
          const e = structuredEdit(text, rand);
          text = e.text;
          kinds.set(e.kind, (kinds.get(e.kind) ?? 0) + 1);
          const doc = pythonDocument('t.py', text);
          const inc = analyzer.analyze(doc, RULES, DEFAULT_OPTIONS);
          const full = fullAnalysis(doc);
          const want = full.findings;
          expect(view(inc.findings), `${f.name} (seed ${SEED}) after edit ${step + 1} (${e.kind}):\n${text}`).toEqual(view(want));
          expect(inc.ruleErrors.map((r) => r.rule)).toEqual(full.ruleErrors.map((r) => r.rule));
          if (want.length) withFindings++;
        }
      } finally {
        analyzer.dispose();
      }
    }
    // every kind of edit was exercised, and most edited files still have findings
    for (const k of ['word+', 'word-', 'body', 'import', 'host-read', 'train-loop', 'bracket']) expect(kinds.get(k), k).toBeGreaterThan(0);
    expect(kinds.has('rename-def') || kinds.has('rename-calls')).toBe(true);
    expect(kinds.has('add-def') && kinds.has('remove-def')).toBe(true);
    expect(withFindings).toBeGreaterThan(picked.length * 2);
  }, 240_000);

  it('equals full analysis after seeded random edits of notebook cells', () => {
    const rand = rng(SEED + 1);
    const cells: NotebookCell[] = [
      { kind: 'code', text: '%matplotlib inline\nimport torch as t\nimport torch.nn as nn\n' },
      { kind: 'markdown', text: '# Training — données\n' },
      { kind: 'code', text: 'model = nn.Linear(4, 2).cuda()\nopt = t.optim.SGD(model.parameters(), lr=0.1)\n' },
      { kind: 'code', text: 'for x, y in loader:\n    loss = (model(x.cuda()) - y).pow(2).mean()\n    loss.backward()\n    opt.step()\n    print(loss.item())\nt.cuda.synchronize()\n' },
    ];
    const analyzer = new DocumentAnalyzer();
    try {
      let current = cells;
      analyzer.analyze(notebookDocument('nb.ipynb', current), RULES, DEFAULT_OPTIONS);
      for (let step = 0; step < 30; step++) {
        const c = [0, 2, 3][Math.floor(rand() * 3)];
        current = current.map((cell, i) => (i === c ? { ...cell, text: randomEdit(cell.text, rand) } : cell));
        const doc = notebookDocument('nb.ipynb', current);
        const inc = analyzer.analyze(doc, RULES, DEFAULT_OPTIONS);
        expect(view(inc.findings), `step ${step + 1} (seed ${SEED}):\n${analysedText(doc)}`).toEqual(view(fullFindings(doc)));
      }
    } finally {
      analyzer.dispose();
    }
  });
});
