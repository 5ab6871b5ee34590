/**
 * `npm run bench [DIR]`: measured throughput and latency of the engine.
 *
 * On DIR (when given) and on two generated corpora (a mixed tree where most files never mention
 * torch, and a torch-dense tree), it reports MB/s, files/s and p50/p95 per-file latency of
 *   - the engine (all rules, prefilter included),
 *   - parse-only tree-sitter on the same files,
 *   - ruff's linter (its WebAssembly build from npm, the only ruff this machine can install),
 * and the re-analysis latency after one-character edits in a 5,000-line file (incremental parse).
 * Files are read into memory first: the figures measure analysis, not disk I/O.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { initParser, parsePython, treeEditFor, wasmHeapInUse, wasmMemoryBytes, type Tree } from '../src/core/parse';
import v8 from 'node:v8';
import { spawnSync } from 'node:child_process';
import { analyze, collectPhaseTimings, collectRuleTimings, notebookDocument, pythonDocument, type SourceDocument } from '../src/core/engine';
import { RULES } from '../src/rules';
import { DEFAULT_OPTIONS } from '../src/core/types';
import { shortLines, torchFile, torchSources as shapeTorchSources } from './shapes';

interface Corpus {
  name: string;
  files: { path: string; text: string }[];
}

interface Measure {
  totalMs: number;
  perFile: number[];
}

function pct(xs: number[], p: number): number {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

function measure(files: Corpus['files'], fn: (text: string) => void, rounds = 3): Measure {
  let best: Measure | null = null;
  for (let r = 0; r < rounds; r++) {
    const perFile: number[] = [];
    const t0 = performance.now();
    for (const f of files) {
      const s = performance.now();
      fn(f.text);
      perFile.push(performance.now() - s);
    }
    const m = { totalMs: performance.now() - t0, perFile };
    if (!best || m.totalMs < best.totalMs) best = m;
  }
  return best!;
}

// ---------------------------------------------------------------------------------------------
// Corpora

const HERE = path.resolve(__dirname, '..');

const torchSources = () => shapeTorchSources(HERE);

function genericModule(i: number): string {
  const lines = [`"""Utility module ${i}."""`, 'import json', 'import os', 'from dataclasses import dataclass', ''];
  lines.push('@dataclass', `class Record${i}:`, '    name: str', '    value: float = 0.0', '    tags: tuple = ()', '');
  for (let k = 0; k < 12; k++) {
    lines.push(
      `def transform_${k}(items, factor=${k + 1}):`,
      `    """Scale and filter items (${k})."""`,
      '    out = []',
      '    for item in items:',
      `        if item.value > ${k}:`,
      '            out.append(Record' + i + '(item.name.upper(), item.value * factor, tuple(sorted(item.tags))))',
      '        elif item.name.startswith("_"):',
      '            continue',
      '    with open(os.path.join("out", f"{factor}.json"), "w") as fh:',
      '        json.dump([r.__dict__ for r in out], fh)',
      '    return out',
      '',
    );
  }
  return lines.join('\n');
}

function mixedCorpus(n: number): Corpus {
  const torch = torchSources();
  const files = [];
  for (let i = 0; i < n; i++) {
    files.push({ path: `mixed/m${i}.py`, text: i % 10 === 0 ? torch[i % torch.length] : genericModule(i) });
  }
  return { name: `mixed tree (${n} files, 10% torch)`, files };
}

function denseCorpus(n: number): Corpus {
  const torch = torchSources();
  const files = [];
  for (let i = 0; i < n; i++) files.push({ path: `dense/t${i}.py`, text: torch[i % torch.length].replace(/\blr=([\d.e-]+)/g, `lr=${(i + 1) * 1e-4}`) });
  return { name: `torch-dense (${n} files)`, files };
}

function dirCorpus(dir: string): Corpus {
  const files: Corpus['files'] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (!e.name.startsWith('.') && e.name !== 'node_modules' && e.name !== '__pycache__') walk(p);
      } else if (e.name.endsWith('.py')) {
        const st = fs.statSync(p);
        if (st.size < 2 * 1024 * 1024) files.push({ path: p, text: fs.readFileSync(p, 'utf8') });
      }
    }
  };
  walk(dir);
  return { name: `${dir} (${files.length} files)`, files };
}

// ---------------------------------------------------------------------------------------------

type RuffWorkspace = { check(contents: string): unknown };

function loadRuff(): RuffWorkspace | null {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const ruff = require(path.join(HERE, 'node_modules/@astral-sh/ruff-wasm-nodejs/ruff_wasm.js'));
    return new ruff.Workspace(ruff.Workspace.defaultSettings(), ruff.PositionEncoding.Utf16);
  } catch {
    return null;
  }
}

function row(name: string, bytes: number, files: number, m: Measure): string {
  const mb = bytes / 1024 / 1024;
  return `  ${name.padEnd(22)} ${(mb / (m.totalMs / 1000)).toFixed(2).padStart(8)} MB/s ${(files / (m.totalMs / 1000)).toFixed(0).padStart(8)} files/s   p50 ${pct(m.perFile, 50).toFixed(3).padStart(7)} ms   p95 ${pct(m.perFile, 95).toFixed(3).padStart(7)} ms   total ${m.totalMs.toFixed(0).padStart(6)} ms`;
}

function benchCorpus(c: Corpus, ruff: RuffWorkspace | null, results: Record<string, unknown>) {
  const bytes = c.files.reduce((s, f) => s + Buffer.byteLength(f.text), 0);
  console.log(`\n${c.name}, ${(bytes / 1024 / 1024).toFixed(2)} MB`);
  const engine = measure(c.files, (text) => analyze(pythonDocument('b.py', text), RULES, DEFAULT_OPTIONS).tree?.delete());
  const parse = measure(c.files, (text) => parsePython(text).delete());
  console.log(row('engine (61 rules)', bytes, c.files.length, engine));
  console.log(row('parse-only', bytes, c.files.length, parse));
  const entry: Record<string, unknown> = { files: c.files.length, bytes, engineMs: engine.totalMs, parseMs: parse.totalMs, engineP95: pct(engine.perFile, 95) };
  console.log(`  engine keeps ${((parse.totalMs / engine.totalMs) * 100).toFixed(0)}% of parse-only throughput`);
  // one more pass with per-rule timing on (kept out of the figures above)
  const timings = new Map<string, number>();
  collectRuleTimings(timings);
  for (const f of c.files) analyze(pythonDocument('b.py', f.text), RULES, DEFAULT_OPTIONS).tree?.delete();
  collectRuleTimings(null);
  const ranked = [...timings].sort((a, b) => b[1] - a[1]);
  const inRules = ranked.reduce((s, [, ms]) => s + ms, 0);
  if (inRules > 0) {
    console.log(`  slowest rules (one pass; ${inRules.toFixed(0)} ms in rule checks, shared facts charged to the first rule asking):`);
    console.log('    ' + ranked.slice(0, 8).map(([id, ms]) => `${id} ${ms.toFixed(0)} ms`).join(' · '));
  }
  if (ruff) {
    const r = measure(c.files, (text) => ruff.check(text), 1);
    console.log(row('ruff check (wasm)', bytes, c.files.length, r));
    const ratio = r.totalMs / engine.totalMs;
    console.log(ratio >= 1 ? `  engine is ${ratio.toFixed(1)}x faster than ruff (wasm build) on this tree` : `  engine is ${(1 / ratio).toFixed(1)}x slower than ruff (wasm build) on this tree`);
    entry.ruffMs = r.totalMs;
  }
  results[c.name] = entry;
}

function benchIncremental(results: Record<string, unknown>, edits: number) {
  let text = torchFile(HERE);
  const doc = () => pythonDocument('big.py', text);
  let tree: Tree = analyze(doc(), RULES, DEFAULT_OPTIONS).tree!;
  const full = measure([{ path: 'big.py', text }], (t) => analyze(pythonDocument('big.py', t), RULES, DEFAULT_OPTIONS).tree?.delete(), 5);
  const reanalysis: number[] = [];
  const reparse: number[] = [];
  const phases = new Map<string, number>();
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let i = 0; i < edits; i++) {
    // a one-character edit where typing happens: inside a word (identifier, keyword, string or comment),
    // alternately typing a letter and deleting one, so the file stays as parseable as it was
    const before = text;
    let at = Math.floor(rand() * text.length);
    while (!(/[a-z]/.test(before[at] ?? '') && /[a-z]/.test(before[at - 1] ?? ''))) at = (at + 1) % before.length;
    const insert = i % 2 === 0;
    const start = at;
    const end = insert ? at : at + 1;
    const piece = insert ? 'q' : '';
    text = before.slice(0, start) + piece + before.slice(end);
    const edit = treeEditFor(before, start, end, piece);
    const copy = tree.copy();
    copy.edit(edit);
    const p0 = performance.now();
    const reparsed = parsePython(text, copy);
    reparse.push(performance.now() - p0);
    reparsed.delete();
    copy.delete();
    const t0 = performance.now();
    tree.edit(edit);
    collectPhaseTimings(phases);
    const a = analyze(doc(), RULES, DEFAULT_OPTIONS, tree);
    collectPhaseTimings(null);
    reanalysis.push(performance.now() - t0);
    tree.delete();
    tree = a.tree!;
  }
  collectPhaseTimings(null);
  const phaseLine = (ph: Map<string, number>, n: number) =>
    ['parse', 'mirror', 'semantics', 'rules', 'assemble'].map((k) => `${k} ${((ph.get(k) ?? 0) / n).toFixed(1)}`).join(' · ');
  console.log(`\nincremental: 5,000-line torch file (${(Buffer.byteLength(text) / 1024).toFixed(0)} KiB), ${edits} one-character edits inside words`);
  console.log(`  full analysis            ${full.totalMs.toFixed(1)} ms`);
  console.log(`  incremental re-parse     p50 ${pct(reparse, 50).toFixed(2)} ms   p95 ${pct(reparse, 95).toFixed(2)} ms`);
  console.log(`  re-analysis after edit   p50 ${pct(reanalysis, 50).toFixed(2)} ms   p95 ${pct(reanalysis, 95).toFixed(2)} ms   (target p95 <= 30 ms, issue 13)`);
  console.log(`    mean per re-analysis, ms: ${phaseLine(phases, edits)}`);
  // edits that change what other scopes see of the edited one (a summary): an import added at the top, a called
  // function renamed at its def, a host read added to a function, a module-level def added; each undone by the next
  const changing = summaryEdits(text, Math.max(8, Math.round(edits / 4)), rand);
  const summaryTimes: number[] = [];
  const summaryPhases = new Map<string, number>();
  collectPhaseTimings(summaryPhases);
  for (const e of changing) {
    const before = text;
    text = before.slice(0, e.start) + e.piece + before.slice(e.end);
    const t0 = performance.now();
    tree.edit(treeEditFor(before, e.start, e.end, e.piece));
    const a = analyze(doc(), RULES, DEFAULT_OPTIONS, tree);
    summaryTimes.push(performance.now() - t0);
    tree.delete();
    tree = a.tree!;
  }
  collectPhaseTimings(null);
  tree.delete();
  console.log(`  re-analysis, edits that change a summary (${changing.length}: import, rename of a called def, host read in a function, def added; each undone)`);
  console.log(`                           p50 ${pct(summaryTimes, 50).toFixed(2)} ms   p95 ${pct(summaryTimes, 95).toFixed(2)} ms`);
  console.log(`    mean per re-analysis, ms: ${phaseLine(summaryPhases, changing.length)}`);
  results.incremental = {
    fullMs: full.totalMs, reparseP50: pct(reparse, 50), reparseP95: pct(reparse, 95), reanalysisP50: pct(reanalysis, 50), reanalysisP95: pct(reanalysis, 95),
    phasesMs: Object.fromEntries([...phases].map(([k, v]) => [k, v / edits])),
    summaryEditP50: pct(summaryTimes, 50), summaryEditP95: pct(summaryTimes, 95),
  };
}

/**
 * `n` edits (as start, end, inserted text, applied in order) that change a scope's summary, each followed by the
 * edit that undoes it, so the file ends as it began.
 */
function summaryEdits(text: string, n: number, rand: () => number): { start: number; end: number; piece: string }[] {
  const out: { start: number; end: number; piece: string }[] = [];
  const defs = [...text.matchAll(/^([ \t]*)def (\w+)\(([^)\n]*)\)[^\n]*:[ \t]*\n/gm)];
  const called = defs.filter((m) => text.split(`${m[2]}(`).length > 2);
  const topLevel = [...text.matchAll(/^(def|class) /gm)];
  for (let i = 0; out.length < 2 * n; i++) {
    const kind = i % 4;
    let start: number;
    let piece: string;
    if (kind === 0) {
      start = 0;
      piece = 'import torch_xla.core.xla_model as xm\n';
    } else if (kind === 1 && called.length) {
      const m = called[Math.floor(rand() * called.length)];
      start = m.index! + m[0].indexOf('(');
      piece = 'q';
    } else if (kind === 2 && defs.length) {
      const m = defs[Math.floor(rand() * defs.length)];
      start = m.index! + m[0].length;
      const indent = /^[ \t]*/.exec(text.slice(start))![0] || `${m[1]}    `;
      piece = `${indent}print(float(${m[3].split(',')[0].split(/[:=]/)[0].trim() || 'x'}.sum()))\n`;
    } else if (topLevel.length) {
      start = topLevel[Math.floor(rand() * topLevel.length)].index!;
      piece = 'def helper_q(t):\n    return t.cpu().numpy()\n\n';
    } else continue;
    out.push({ start, end: start, piece }, { start, end: start + piece.length, piece: '' });
  }
  return out;
}

/**
 * Memory one file's analysis adds, per byte of the file, in two parts:
 *   - JS: the peak of the JS heap plus external memory (the tree mirror's typed arrays), sampled by the per-file memory
 *     budget's own probe on every budget check, minus any growth of tree-sitter's WebAssembly memory;
 *   - wasm: tree-sitter's WebAssembly heap in use after the analysis (the tree it keeps), by wasmHeapInUse
 *     (src/core/parse.ts). The budget's probe cannot see it: the runtime's memory starts at 32 MB (the grammar's
 *     minimum) and only its growth counts as external memory, so a parse that fits in it looks free.
 * Reported, not asserted (test/budget.test.ts holds a generous bound). Run with --expose-gc (npm run bench does) for a
 * clean baseline. Each shape is measured in a fresh process (`--memory-shape i`): after the other sections, garbage they
 * left and the WebAssembly heap's growth made the baseline move (a run printed a negative "retained" and 0x for two shapes).
 */
function benchMemory(results: Record<string, unknown>, only?: number) {
  const gc = (globalThis as { gc?: () => void }).gc;
  const short = shortLines;
  const torch = torchSources().join('\n\n');
  const shapes: { name: string; doc: SourceDocument }[] = [
    { name: 'short lines, 300 KB', doc: pythonDocument('a.py', short(300_000)) },
    { name: 'nested calls, 60 KB', doc: pythonDocument('a.py', 'import torch\nx = ' + 'f(t.cuda(), "s", '.repeat(3333) + '1' + ')'.repeat(3333) + '\n') },
    // a 20,000-term `t.cuda() + …` chain: 20,000 levels deep and 20,000 findings on one line (test/hardening.test.ts asserts its findings)
    { name: '+ chain, 200 KB', doc: pythonDocument('a.py', 'import torch\ny = ' + Array(20_000).fill('t.cuda()').join(' + ') + '\n') },
    { name: 'long strings, 1 MB', doc: pythonDocument('a.py', 'import torch\n' + Array.from({ length: 200 }, (_, i) => `s${i} = "${'a'.repeat(5000)}"; t.cuda()`).join('\n') + '\n') },
    { name: 'torch code, 1 MB', doc: pythonDocument('a.py', torch.repeat(Math.ceil(1e6 / torch.length)).slice(0, 1e6).replace(/\n[^\n]*$/, '\n')) },
    { name: 'notebook, 300 KB', doc: notebookDocument('a.ipynb', Array.from({ length: 100 }, (_, c) => ({ kind: 'code' as const, language: 'python', text: ['import torch', ...Array.from({ length: 100 }, (_, k) => `x${k} = t.cuda()  # ${c}`)].join('\n') }))) },
  ];
  console.log('\nmemory per file (peak JS heap and typed arrays + the tree in WebAssembly, added by one analysis; target <= 50x the file;\n  "released": the CLI, tree-sitter\'s tree deleted once mirrored, peak = the larger of tree + mirror then and the rules\' JS after):');
  const out: Record<string, unknown> = {};
  // one function call per shape: nothing of the previous shape's analysis stays reachable from this frame
  const one = (name: string, doc: SourceDocument, release: boolean) => {
    const len = doc.kind === 'notebook' ? doc.program.text.length : doc.kind === 'python' ? doc.text.length : 0;
    gc?.();
    gc?.();
    // the WebAssembly memory's growth is external memory too: left out here, counted as the heap in use below
    const wasm0 = wasmMemoryBytes();
    const inUse = () => {
      const h = v8.getHeapStatistics();
      return h.used_heap_size + h.external_memory - (wasmMemoryBytes() - wasm0);
    };
    const wasmBase = wasmHeapInUse();
    let base = inUse();
    // released (the CLI): the tree is in WebAssembly only until it is mirrored. That moment's tree and JS (the same
    // parse and mirror, measured first and freed) against the rules' JS peak after it: the larger is the peak
    let beforeRelease = 0;
    if (release) {
      const t = parsePython(doc.kind === 'notebook' ? doc.program.text : doc.kind === 'python' ? doc.text : '');
      void t.rootNode;
      beforeRelease = wasmHeapInUse() - wasmBase + (inUse() - base);
      t.delete();
      gc?.();
      gc?.();
      base = inUse();
    }
    let peak = base;
    const usage = () => {
      const u = inUse();
      if (u > peak) peak = u;
      return u;
    };
    const t0 = performance.now();
    const a = analyze(doc, RULES, { ...DEFAULT_OPTIONS, memory: { maxBytes: Number.MAX_SAFE_INTEGER, usage }, releaseTree: release });
    const ms = performance.now() - t0;
    usage();
    const wasm = wasmHeapInUse() - wasmBase;
    gc?.();
    const retained = inUse() - base;
    a.tree?.delete();
    const js = peak - base;
    const total = Math.max(js + wasm, beforeRelease);
    const x = total / len;
    const mb = (n: number, w = 6) => (n / 1e6).toFixed(1).padStart(w);
    const parts = release ? `max(tree ${mb(beforeRelease, 5)}, JS ${mb(js, 5)} + ${mb(wasm, 4)})` : `JS ${mb(js, 5)} + wasm ${mb(wasm, 5)}`;
    const label = release ? `${name}, released` : name;
    console.log(`  ${label.padEnd(32)} peak ${mb(total)} MB = ${parts}  ${x.toFixed(0).padStart(5)}x   retained ${mb(retained + wasm)} MB   ${ms.toFixed(0).padStart(6)} ms   ${a.findings.length} findings`);
    out[label] = { bytes: len, peakBytes: total, jsPeakBytes: js, wasmBytes: wasm, beforeReleaseBytes: beforeRelease, perByte: x, retainedBytes: retained + wasm, ms };
  };
  if (only !== undefined) {
    one(shapes[only].name, shapes[only].doc, process.argv.includes('--release'));
    console.log(`@json ${JSON.stringify(out)}`);
    return;
  }
  // kept: the language server's analysis (the tree stays for incremental parses); released: the CLI's (releaseTree)
  for (const release of [false, true]) {
    for (let i = 0; i < shapes.length; i++) {
      const child = spawnSync(process.execPath, ['--expose-gc', __filename, '--memory-shape', String(i), ...(release ? ['--release'] : [])], { encoding: 'utf8', maxBuffer: 1 << 26 });
      const lines = (child.stdout ?? '').split('\n');
      const json = lines.find((l) => l.startsWith('@json '));
      const row = lines.find((l) => l.startsWith(`  ${shapes[i].name}`));
      if (child.status !== 0 || !json || !row) {
        console.log(`  ${shapes[i].name.padEnd(22)} failed (exit ${child.status}): ${(child.stderr ?? '').trim().split('\n').pop()}`);
        continue;
      }
      console.log(row);
      Object.assign(out, JSON.parse(json.slice(6)));
    }
  }
  results.memory = out;
}

async function main() {
  await initParser(__dirname);
  const shape = process.argv.includes('--memory-shape') ? Number(process.argv[process.argv.indexOf('--memory-shape') + 1]) : undefined;
  if (shape !== undefined) return benchMemory({}, shape);
  // `--only incremental` (or a comma list of mixed, dense, incremental, memory): some sections only (what
  // `node --cpu-prof dist/bench.js --only incremental` profiles); `--edits N`: that many edits in the incremental section
  const flag = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
  const only = flag('--only')?.split(',');
  const run = (section: string) => !only || only.includes(section);
  const flagValues = new Set([flag('--only'), flag('--edits')]);
  const dir = only ? undefined : process.argv.slice(2).find((a) => !a.startsWith('--') && !flagValues.has(a));
  const ruff = loadRuff();
  console.log(`tpu-ready benchmark: node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'}, ${RULES.length} rules${ruff ? '' : ' (ruff wasm not installed: no ruff comparison)'}`);
  const results: Record<string, unknown> = { date: new Date().toISOString(), rules: RULES.length };
  console.log(`load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} on ${os.cpus().length} cores at the start`);
  if (dir) benchCorpus(dirCorpus(path.resolve(dir)), ruff, results);
  if (run('mixed')) benchCorpus(mixedCorpus(2000), ruff, results);
  if (run('dense')) benchCorpus(denseCorpus(300), ruff, results);
  if (run('incremental')) benchIncremental(results, Number(flag('--edits') ?? 200));
  if (run('memory')) benchMemory(results);
  console.log(`load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} at the end`);
  fs.mkdirSync(path.join(HERE, '.bench'), { recursive: true });
  fs.writeFileSync(path.join(HERE, '.bench', 'last.json'), JSON.stringify(results, null, 2));
  console.log('\nwritten .bench/last.json');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
