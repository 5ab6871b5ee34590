/**
 * Runs every rule fixture (src/rules/<family>/fixtures/TPUnnn*.py|.ipynb):
 * - the exact set of findings per line matches the `# expect: TPUnnn` markers (`# expect[+1]: …`
 *   for the next line); every unmarked line must stay clean;
 * - fix invariants: fixes converge, add no syntax error, applying twice equals once, declared
 *   availability holds, every fix has a title;
 * - a snapshot per fixture: findings plus the fully fixed file in each fix style and profile.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { RULES_BY_ID } from '../src/rules';
import {
  analyze, analysedText, fixDocument, locateAll, notebookDocument, pythonDocument, textDocument, textFileKind, type SourceDocument,
} from '../src/core/engine';
import { parseIpynb } from '../src/core/notebook';
import { countErrors, parsePython } from '../src/core/parse';
import { importsAfterUse, topLevelImportSpecs } from '../src/core/imports';
import { DEFAULT_OPTIONS, type AnalyzeOptions } from '../src/core/types';
import { ACCEL_FUNCTIONS } from '../src/core/accel';
import type { Rule } from '../src/core/rule';

const fixtureFiles: string[] = [];
for (const family of fs.readdirSync(path.join(ROOT, 'src/rules'))) {
  const dir = path.join(ROOT, 'src/rules', family, 'fixtures');
  if (!fs.existsSync(dir)) continue;
  for (const f of fs.readdirSync(dir).sort()) if (/^TPU\d{3}/.test(f) && !f.endsWith('.snap')) fixtureFiles.push(path.join(dir, f));
}

const MARKER = /#\s*expect(?:\[([+-]\d+)\])?:\s*([A-Z0-9, ]+)/g;

/** (cell|-1):line → expected rule ids, from the markers in each code line. */
function expectedMarkers(texts: { cell: number | null; text: string }[], ruleId: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const { cell, text } of texts) {
    text.split('\n').forEach((line, i) => {
      MARKER.lastIndex = 0;
      for (let m = MARKER.exec(line); m; m = MARKER.exec(line)) {
        const target = i + (m[1] ? parseInt(m[1], 10) : 0);
        const ids = m[2].split(',').map((s) => s.trim()).filter((s) => s === ruleId);
        if (!ids.length) continue;
        const key = `${cell ?? '-'}:${target + 1}`;
        out.set(key, [...(out.get(key) ?? []), ...ids].sort());
      }
    });
  }
  return out;
}

/** Options from a `# tpu-ready-test: target=torchtpu target-version=2.4 fix-style=tpu-only` header. */
function fixtureOptions(text: string): Partial<AnalyzeOptions> {
  const m = /#\s*tpu-ready-test:([^\n]*)/.exec(text);
  if (!m) return {};
  const o: Partial<AnalyzeOptions> = {};
  for (const kv of m[1].trim().split(/\s+/)) {
    const [k, v] = kv.split('=');
    if (k === 'target') o.target = { profile: v as 'torch_xla' | 'torchtpu', version: v === 'torchtpu' ? 'preview' : '2.9' };
    if (k === 'target-version') o.target = { profile: 'torch_xla', version: v };
  }
  return o;
}

/** `TPU110__requirements.txt` is read as a `requirements.txt`, `TPU109__Dockerfile` as a Dockerfile. */
function load(file: string): SourceDocument {
  const raw = fs.readFileSync(file, 'utf8');
  if (file.endsWith('.ipynb')) return notebookDocument(file, parseIpynb(raw).cells);
  if (file.endsWith('.py')) return pythonDocument(file, raw);
  const realName = path.basename(file).split('__')[1] ?? '';
  const kind = textFileKind(realName);
  if (!kind) throw new Error(`${file}: name a text fixture TPUnnn__<real file name>`);
  return textDocument(file, raw, kind);
}

function texts(doc: SourceDocument): { cell: number | null; text: string }[] {
  return doc.kind !== 'notebook' ? [{ cell: null, text: doc.text }] : doc.cells.map((c, i) => ({ cell: i, text: c.kind === 'code' ? c.text : '' }));
}

function render(doc: SourceDocument): string {
  if (doc.kind !== 'notebook') return doc.text;
  return doc.cells.map((c, i) => `# ---- cell ${i} (${c.kind})\n${c.text}`).join('\n');
}

const STYLES: { name: string; options: Partial<AnalyzeOptions> }[] = [
  { name: 'torch_xla 2.9, tpu-only', options: { fixStyle: 'tpu-only' } },
  { name: 'torch_xla 2.9, dual-path', options: { fixStyle: 'dual-path' } },
  { name: 'torchtpu preview, tpu-only', options: { fixStyle: 'tpu-only', target: { profile: 'torchtpu', version: 'preview' } } },
];

beforeAll(async () => {
  await init();
});

describe('rule fixtures', () => {
  it('has fixtures', () => {
    expect(fixtureFiles.length).toBeGreaterThan(0);
  });

  for (const file of fixtureFiles) {
    const name = path.basename(file);
    const ruleId = name.slice(0, 6);
    describe(name, () => {
      const rule = RULES_BY_ID.get(ruleId) as Rule;
      const base = (): AnalyzeOptions => ({ ...DEFAULT_OPTIONS, fixStyle: 'tpu-only', ...fixtureOptions(fs.readFileSync(file, 'utf8')) });

      it('flags exactly the marked lines', () => {
        expect(rule, `no rule ${ruleId} in the registry`).toBeDefined();
        const doc = load(file);
        const analysis = analyze(doc, [rule], base());
        expect(analysis.ruleErrors).toEqual([]);
        const actual = new Map<string, string[]>();
        for (const f of locateAll(analysis)) {
          const key = `${f.cell ?? '-'}:${f.startPos.line + 1}`;
          actual.set(key, [...(actual.get(key) ?? []), f.rule].sort());
        }
        const expected = expectedMarkers(texts(doc), ruleId);
        const sortMap = (m: Map<string, string[]>) => Object.fromEntries([...m].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true })));
        expect(sortMap(actual), 'too few or too many findings').toEqual(sortMap(expected));
        expect(expected.size, 'a fixture must hit its rule').toBeGreaterThan(0);
      });

      it('fixes keep the invariants and match the snapshot', async () => {
        const doc = load(file);
        const parts: string[] = [];
        for (const style of STYLES) {
          const options: AnalyzeOptions = { ...base(), ...style.options };
          const analysis = analyze(doc, [rule], options);
          analysis.tree?.delete();
          for (const f of analysis.findings) {
            if (rule.fix.availability === 'none') expect(f.fix, `${ruleId} declares no fix`).toBeNull();
            if (rule.fix.availability === 'always' && options.target.profile === 'torch_xla' && options.fixStyle === 'tpu-only') {
              expect(f.fix, `${ruleId} declares a fix for every finding`).not.toBeNull();
            }
            if (f.fix) {
              expect(f.fix.title.length).toBeGreaterThan(0);
              for (const spec of f.fix.imports) expect(spec.module).toMatch(/^[\w.]+$/);
            }
          }
          const once = fixDocument(doc, [rule], options, { unsafe: true, strict: true });
          expect(once.converged, `${style.name}: fixes converge`).toBe(true);
          if (doc.kind !== 'text') {
            const before = countErrors(parsePython(analysedText(doc)));
            const after = countErrors(parsePython(analysedText(once.doc)));
            expect(after, `${style.name}: no new syntax errors`).toBeLessThanOrEqual(before);
          }
          if (doc.kind !== 'text' && once.applied) {
            // every name a fix's import binds is imported before the first statement that reads it (a line
            // inserted above the import it needs fails at import time)
            const tree = parsePython(analysedText(once.doc));
            expect(importsAfterUse(tree.rootNode, once.imports), `${style.name}: imports precede their first use`).toEqual([]);
            // nor does an edit move a read of any imported name (`os.environ[...]`, `xm.…`) above its import
            const orig = parsePython(analysedText(doc));
            const specs = [...topLevelImportSpecs(tree.rootNode), ...topLevelImportSpecs(orig.rootNode)];
            const already = new Set(importsAfterUse(orig.rootNode, specs));
            expect(importsAfterUse(tree.rootNode, specs).filter((k) => !already.has(k)), `${style.name}: no read above its import`).toEqual([]);
            tree.delete();
            orig.delete();
          }
          const twice = fixDocument(once.doc, [rule], options, { unsafe: true, strict: true });
          expect(render(twice.doc), `${style.name}: applying twice equals once`).toBe(render(once.doc));
          // dual-path fixes call only functions the generated module defines
          for (const m of render(once.doc).matchAll(/\baccel\.(\w+)\(/g)) expect(ACCEL_FUNCTIONS as readonly string[]).toContain(m[1]);
          const located = locateAll(analyze(doc, [rule], options));
          parts.push(
            `## ${style.name}\n` +
              located
                .map((f) => `${f.cell !== null ? `cell ${f.cell}:` : ''}${f.startPos.line + 1}:${f.startPos.character + 1} ${f.rule} [${f.severity}] ${f.message}${f.fix ? ` (fix: ${f.fix.applicability}: ${f.fix.title})` : ''}`)
                .join('\n') +
              `\n### fixed (${once.applied} fixes, unsafe included)\n` +
              (once.applied ? render(once.doc) : '(unchanged)\n'),
          );
        }
        await expect(parts.join('\n')).toMatchFileSnapshot(path.join(path.dirname(file), '__snapshots__', `${name}.snap`));
      });
    });
  }
});
