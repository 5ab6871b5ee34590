/**
 * `.tpu-ready/progress.json`: the team's ticks, notes and a history of snapshots, kept in the
 * repository. The serialisation is merge-friendly: keys in a stable order, one key per step (all ten
 * always present), each history snapshot on one line, so two branches that tick different steps or add
 * snapshots on different days merge line by line. Parsing keeps unknown keys (written back as they
 * were) and reports malformed content with the path of the bad value, so a host never overwrites a
 * file it could not read.
 */
import type { Step } from '../core/types';

export const PROGRESS_PATH = '.tpu-ready/progress.json';
export const PROGRESS_VERSION = 1;

export interface StepProgress {
  /** Manual sub-item id → ticked. Only ticked items are kept. */
  ticks: Record<string, boolean>;
  note: string;
  /** Keys this version does not know, kept verbatim. */
  extra: Record<string, unknown>;
}

export interface Snapshot {
  /** YYYY-MM-DD */
  date: string;
  score: number;
  /** Steps done (of 10). */
  done: number;
  /** Open findings per step, steps 1–10. */
  open: Record<Step, number>;
}

export interface Progress {
  version: number;
  steps: Record<Step, StepProgress>;
  history: Snapshot[];
  extra: Record<string, unknown>;
}

export class ProgressFormatError extends Error {
  constructor(message: string) {
    super(`${PROGRESS_PATH}: ${message}`);
    this.name = 'ProgressFormatError';
  }
}

const STEP_NUMBERS: Step[] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

export function emptyProgress(): Progress {
  const steps = {} as Record<Step, StepProgress>;
  for (const n of STEP_NUMBERS) steps[n] = { ticks: {}, note: '', extra: {} };
  return { version: PROGRESS_VERSION, steps, history: [], extra: {} };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(where: string, what: string): never {
  throw new ProgressFormatError(`${where} ${what}`);
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Parses the file's text. Throws ProgressFormatError (with the JSON path of the problem) when malformed. */
export function parseProgress(text: string): Progress {
  let raw: unknown;
  try {
    raw = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    throw new ProgressFormatError(`not valid JSON (${(e as Error).message})`);
  }
  if (!isObject(raw)) fail('the top level', 'must be an object');
  const p = emptyProgress();
  for (const [k, v] of Object.entries(raw)) {
    if (k === 'version') {
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) fail('"version"', 'must be a positive integer');
      if (v > PROGRESS_VERSION) fail('"version"', `is ${v}, newer than this tpu-ready understands (${PROGRESS_VERSION}); update tpu-ready`);
      p.version = v;
    } else if (k === 'steps') {
      if (!isObject(v)) fail('"steps"', 'must be an object keyed by step number');
      for (const [sk, sv] of Object.entries(v)) {
        const n = Number(sk);
        if (!/^(10|[1-9])$/.test(sk)) fail(`"steps.${sk}"`, 'is not a step (1 to 10)');
        if (!isObject(sv)) fail(`"steps.${sk}"`, 'must be an object');
        const sp = p.steps[n as Step];
        for (const [fk, fv] of Object.entries(sv)) {
          if (fk === 'ticks') {
            if (!isObject(fv)) fail(`"steps.${sk}.ticks"`, 'must be an object of item → true/false');
            for (const [tk, tv] of Object.entries(fv)) {
              if (typeof tv !== 'boolean') fail(`"steps.${sk}.ticks.${tk}"`, 'must be true or false');
              if (tv) sp.ticks[tk] = true;
            }
          } else if (fk === 'note') {
            if (typeof fv !== 'string') fail(`"steps.${sk}.note"`, 'must be a string');
            sp.note = fv;
          } else sp.extra[fk] = fv;
        }
      }
    } else if (k === 'history') {
      if (!Array.isArray(v)) fail('"history"', 'must be an array');
      v.forEach((h, i) => p.history.push(parseSnapshot(h, `"history[${i}]"`)));
    } else p.extra[k] = v;
  }
  return p;
}

function parseSnapshot(h: unknown, where: string): Snapshot {
  if (!isObject(h)) fail(where, 'must be an object');
  const { date, score, done, open } = h;
  if (typeof date !== 'string' || !DATE.test(date)) fail(`${where}.date`, 'must be a date YYYY-MM-DD');
  if (typeof score !== 'number' || !(score >= 0 && score <= 100)) fail(`${where}.score`, 'must be a number from 0 to 100');
  if (typeof done !== 'number' || !Number.isInteger(done) || done < 0 || done > 10) fail(`${where}.done`, 'must be an integer from 0 to 10');
  if (!isObject(open)) fail(`${where}.open`, 'must be an object of step → open findings');
  const o = {} as Record<Step, number>;
  for (const n of STEP_NUMBERS) {
    const c = open[String(n)] ?? 0;
    if (typeof c !== 'number' || !Number.isInteger(c) || c < 0) fail(`${where}.open.${n}`, 'must be a non-negative integer');
    o[n] = c;
  }
  for (const k of Object.keys(open)) if (!/^(10|[1-9])$/.test(k)) fail(`${where}.open.${k}`, 'is not a step (1 to 10)');
  return { date, score, done, open: o };
}

function sortedEntries(o: Record<string, unknown>): [string, unknown][] {
  return Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Canonical JSON of a value with object keys sorted (for unknown values kept verbatim). */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (isObject(v)) return Object.fromEntries(sortedEntries(v).map(([k, x]) => [k, canonical(x)]));
  return v;
}

function snapshotLine(s: Snapshot): string {
  const open = STEP_NUMBERS.map((n) => `"${n}": ${s.open[n]}`).join(', ');
  return `{"date": ${JSON.stringify(s.date)}, "score": ${s.score}, "done": ${s.done}, "open": {${open}}}`;
}

function indentJson(v: unknown, indent: string): string {
  return JSON.stringify(canonical(v), null, 2).replace(/\n/g, `\n${indent}`);
}

/** The file's text: stable key order (version, steps 1–10, history, then unknown keys sorted). */
export function serializeProgress(p: Progress): string {
  const out: string[] = ['{', `  "version": ${p.version},`, '  "steps": {'];
  STEP_NUMBERS.forEach((n, i) => {
    const s = p.steps[n];
    const fields: string[] = [];
    const ticks = Object.keys(s.ticks).filter((k) => s.ticks[k]).sort();
    fields.push(`      "note": ${JSON.stringify(s.note)}`);
    fields.push(ticks.length ? `      "ticks": {\n${ticks.map((t) => `        ${JSON.stringify(t)}: true`).join(',\n')}\n      }` : '      "ticks": {}');
    for (const [k, v] of sortedEntries(s.extra)) fields.push(`      ${JSON.stringify(k)}: ${indentJson(v, '      ')}`);
    out.push(`    "${n}": {\n${fields.join(',\n')}\n    }${i < 9 ? ',' : ''}`);
  });
  out.push('  },');
  const extra = sortedEntries(p.extra);
  out.push(p.history.length ? `  "history": [\n${p.history.map((h) => `    ${snapshotLine(h)}`).join(',\n')}\n  ]${extra.length ? ',' : ''}` : `  "history": []${extra.length ? ',' : ''}`);
  extra.forEach(([k, v], i) => out.push(`  ${JSON.stringify(k)}: ${indentJson(v, '  ')}${i < extra.length - 1 ? ',' : ''}`));
  out.push('}');
  return out.join('\n') + '\n';
}

export function setTick(p: Progress, step: Step, item: string, checked: boolean): Progress {
  const next = clone(p);
  if (checked) next.steps[step].ticks[item] = true;
  else delete next.steps[step].ticks[item];
  return next;
}

export function setNote(p: Progress, step: Step, note: string): Progress {
  const next = clone(p);
  next.steps[step].note = note;
  return next;
}

/**
 * Adds a snapshot to the history: replaces the one of the same day, skips one identical to the
 * previous entry (nothing changed), appends otherwise, keeping the history sorted by date.
 */
export function recordSnapshot(p: Progress, s: Snapshot): Progress {
  const next = clone(p);
  const h = next.history;
  const i = h.findIndex((x) => x.date === s.date);
  if (i >= 0) {
    h[i] = s;
    return next;
  }
  const before = h.filter((x) => x.date < s.date).pop();
  if (before && sameCounts(before, s) && !h.some((x) => x.date > s.date)) return next;
  h.push(s);
  h.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
  return next;
}

function sameCounts(a: Snapshot, b: Snapshot): boolean {
  return a.score === b.score && a.done === b.done && STEP_NUMBERS.every((n) => a.open[n] === b.open[n]);
}

function clone(p: Progress): Progress {
  return JSON.parse(JSON.stringify(p)) as Progress;
}

export function isoDate(d: Date): string {
  return d.toISOString().slice(0, 10);
}
