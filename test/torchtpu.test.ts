/**
 * The torchtpu preview profile speaks its own idioms (issue 10, item 4), over every rule fixture and every rule:
 * - no finding message or fix title names a torch_xla API (`xm.`, `xr.`, `torch_xla`, `MpDeviceLoader`, ...);
 * - every fix advertised as safe (`[*]`) is applied by `--fix` (safe fixes only) and edits the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { RULES } from '../src/rules';
import { analyze, analysedText, fixDocument, notebookDocument, pythonDocument, textDocument, textFileKind, type SourceDocument } from '../src/core/engine';
import { parseIpynb } from '../src/core/notebook';
import { DEFAULT_OPTIONS, type AnalyzeOptions } from '../src/core/types';

const fixtureFiles: string[] = [];
for (const family of fs.readdirSync(path.join(ROOT, 'src/rules'))) {
  const dir = path.join(ROOT, 'src/rules', family, 'fixtures');
  if (!fs.existsSync(dir)) continue;
  for (const f of fs.readdirSync(dir).sort()) if (/^TPU\d{3}/.test(f) && !f.endsWith('.snap')) fixtureFiles.push(path.join(dir, f));
}

function load(file: string): SourceDocument {
  const raw = fs.readFileSync(file, 'utf8');
  if (file.endsWith('.ipynb')) return notebookDocument(file, parseIpynb(raw).cells);
  if (file.endsWith('.py')) return pythonDocument(file, raw);
  const kind = textFileKind(path.basename(file).split('__')[1] ?? '');
  return textDocument(file, raw, kind!);
}

/** torch_xla API names: modules, their usual aliases, and the names only torch_xla has. */
const TORCH_XLA_NAMES = /\btorch_xla(\.\w+)*|\b(xm|xr|xmp|xser|xs|pl|xu|xp|met)\.\w+|\bMpDeviceLoader\b|\bParallelLoader\b|\bmark_step\b|\bxla_device\b|\bopenxla\w*|\bXLA_[A-Z_]+|\bPJRT_DEVICE\b|\bxla:\/\//g;

/**
 * The torch_xla names a text recommends: those that the flagged source lines (`quoted`) do not already
 * hold. A message may quote the user's own torch_xla code; it may not tell a torchtpu user to write torch_xla.
 */
export function torchXlaNames(text: string, quoted = ''): string[] {
  return [...text.matchAll(TORCH_XLA_NAMES)].map((m) => m[0]).filter((name) => !quoted.includes(name));
}

function flaggedLines(text: string, start: number, end: number): string {
  const from = text.lastIndexOf('\n', start - 1) + 1;
  const to = text.indexOf('\n', end);
  return text.slice(from, to < 0 ? text.length : to);
}

/** Rules whose torchtpu messages may still name torch_xla: none (keep it empty; a rule listed here is not scanned). */
const OUTSTANDING = new Set<string>();

const STYLES: Partial<AnalyzeOptions>[] = [{ fixStyle: 'tpu-only' }, { fixStyle: 'dual-path' }];
const torchtpu = (style: Partial<AnalyzeOptions>): AnalyzeOptions => ({ ...DEFAULT_OPTIONS, ...style, target: { profile: 'torchtpu', version: 'preview' } });

beforeAll(async () => {
  await init();
});

describe('torchtpu profile', () => {
  it('names no torch_xla API in any finding message or fix title', () => {
    const leaks: string[] = [];
    for (const file of fixtureFiles) {
      for (const style of STYLES) {
        const doc = load(file);
        const analysis = analyze(doc, RULES, torchtpu(style));
        analysis.tree?.delete();
        const text = analysedText(doc);
        for (const f of analysis.findings) {
          if (OUTSTANDING.has(f.rule)) continue;
          const quoted = flaggedLines(text, f.start, f.end);
          if (torchXlaNames(f.message, quoted).length) leaks.push(`${path.basename(file)} ${f.rule} [${style.fixStyle}]: ${f.message}`);
          if (f.fix && torchXlaNames(f.fix.title, quoted).length) leaks.push(`${path.basename(file)} ${f.rule} [${style.fixStyle}] fix: ${f.fix.title}`);
        }
      }
    }
    expect([...new Set(leaks)]).toEqual([]);
  });

  it('the scan can fail: a torch_xla name is caught', () => {
    expect(torchXlaNames('use `xm.optimizer_step(opt)`')).toEqual(['xm.optimizer_step']);
    expect(torchXlaNames('wrap the loader in `pl.MpDeviceLoader`')).toEqual(['pl.MpDeviceLoader']);
    expect(torchXlaNames('compile with `backend="tpu", dynamic=False`')).toEqual([]);
    // quoting the flagged code is not a recommendation; naming another torch_xla API is
    expect(torchXlaNames('`xm.xla_device()` is deprecated; use `torch_xla.device()`', 'd = xm.xla_device()')).toEqual(['torch_xla.device']);
  });

  it('applies every fix it advertises as safe', () => {
    const unapplied: string[] = [];
    for (const file of fixtureFiles) {
      const doc = load(file);
      for (const style of STYLES) {
        const options = torchtpu(style);
        const analysis = analyze(doc, RULES, options);
        analysis.tree?.delete();
        const safe = analysis.findings.filter((f) => f.fix?.applicability === 'safe');
        for (const rule of new Set(safe.map((f) => f.rule))) {
          // that rule's safe fixes alone, as `--fix --select <rule>` applies them
          const rules = RULES.filter((r) => r.id === rule);
          const fixed = fixDocument(doc, rules, options, { unsafe: false });
          if (!fixed.applied || analysedText(fixed.doc) === analysedText(doc)) unapplied.push(`${path.basename(file)} ${rule} [${style.fixStyle}]`);
          const left = analyze(fixed.doc, rules, options);
          left.tree?.delete();
          if (left.findings.some((f) => f.fix?.applicability === 'safe')) unapplied.push(`${path.basename(file)} ${rule} [${style.fixStyle}]: a safe fix is left after --fix`);
        }
      }
    }
    expect(unapplied).toEqual([]);
  });
});
