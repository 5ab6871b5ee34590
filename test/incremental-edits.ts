/**
 * Seeded random edits for the incremental re-analysis oracle (test/incremental*.test.ts): what typing does
 * (a character inside a word, a pasted or deleted line) and edits that change what other scopes see of the
 * edited one (a function called from a loop renamed, an import added, `.item()` added to a helper, a loop
 * turned into a training loop, a `def` added or removed, an unbalanced bracket). Each edit keeps the file's
 * line ending, so a CRLF file stays CRLF, and never splits a surrogate pair.
 */

export type Rand = () => number;

export function rng(seed: number): Rand {
  let s = seed >>> 0 || 1;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
}

export interface Edited {
  kind: string;
  text: string;
}

const pick = <T>(xs: readonly T[], rand: Rand): T => xs[Math.floor(rand() * xs.length)];

/** Line starts (offsets) of `text`. */
function lineStarts(text: string): number[] {
  const out = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) out.push(i + 1);
  return out;
}

const eolOf = (text: string) => (text.includes('\r\n') ? '\r\n' : '\n');
const lineAt = (text: string, start: number) => {
  const end = text.indexOf('\n', start);
  return text.slice(start, end < 0 ? text.length : end).replace(/\r$/, '');
};

/** An offset that does not split a surrogate pair or a "\r\n". */
function safeOffset(text: string, at: number): number {
  if (at > 0 && at < text.length) {
    const prev = text.charCodeAt(at - 1);
    if (prev >= 0xd800 && prev <= 0xdbff) return at - 1;
    if (prev === 13 && text.charCodeAt(at) === 10) return at - 1;
  }
  return at;
}

/** Offsets of matches of `re` (global) in `text`. */
function matches(text: string, re: RegExp): RegExpExecArray[] {
  return [...text.matchAll(re)];
}

/** One character typed (or deleted) inside a word: the bench's edit. */
function inWord(text: string, rand: Rand): Edited | null {
  if (text.length < 2) return null;
  let at = Math.floor(rand() * text.length);
  for (let k = 0; k < text.length && !(/[a-z]/i.test(text[at] ?? '') && /[a-z]/i.test(text[at - 1] ?? '')); k++) at = (at + 1) % text.length;
  if (!(/[a-z]/i.test(text[at] ?? '') && /[a-z]/i.test(text[at - 1] ?? ''))) return null;
  return rand() < 0.5 ? { kind: 'word+', text: text.slice(0, at) + 'q' + text.slice(at) } : { kind: 'word-', text: text.slice(0, at) + text.slice(at + 1) };
}

/** A statement typed at the indentation of an indented line, before it (inside a function, loop or class body). */
function inBody(text: string, rand: Rand): Edited | null {
  const eol = eolOf(text);
  const starts = lineStarts(text).filter((s) => /^[ \t]+[A-Za-z_]/.test(lineAt(text, s)));
  if (!starts.length) return null;
  const s = pick(starts, rand);
  const indent = /^[ \t]*/.exec(lineAt(text, s))![0];
  const stmt = pick(['tmp_q = 1', 'x = x.cuda()', 'print(loss.item())', 'n_q = len(batch)', 'if x.sum() > 0:' + eol + indent + '    pass', 'xm.mark_step()', 'return None'], rand);
  return { kind: 'body', text: text.slice(0, s) + indent + stmt + eol + text.slice(s) };
}

/** A function that is called somewhere renamed at its def (or at its call sites). */
function renameCalled(text: string, rand: Rand): Edited | null {
  const defs = matches(text, /^([ \t]*)def (\w+)\(/gm).filter((m) => new RegExp(`(?<![\\w.])${m[2]}\\(`, 'g').exec(text.slice(0, m.index) + text.slice(m.index + m[0].length)));
  if (!defs.length) return null;
  const m = pick(defs, rand);
  const name = m[2];
  if (rand() < 0.5) {
    const at = m.index + m[0].length - 1;
    return { kind: 'rename-def', text: text.slice(0, at) + 'q' + text.slice(at) };
  }
  const callRe = new RegExp(`(?<![\\w.])${name}\\(`, 'g');
  return { kind: 'rename-calls', text: text.replace(callRe, (s, off: number) => (off === m.index + m[1].length + 4 ? s : `${name}q(`)) };
}

/** An import added at the top or before a module-level statement. */
function addImport(text: string, rand: Rand): Edited | null {
  const eol = eolOf(text);
  const starts = lineStarts(text).filter((s) => /^(import|from|def|class|[A-Za-z_]\w* *=)/.test(lineAt(text, s)));
  const s = starts.length && rand() < 0.7 ? pick(starts, rand) : 0;
  const imp = pick(['import torch_xla.core.xla_model as xm', 'import torch_xla', 'import torch_xla.distributed.parallel_loader as pl', 'import torch', 'from torch.cuda.amp import autocast, GradScaler', 'import numpy as np', 'import deepspeed'], rand);
  return { kind: 'import', text: text.slice(0, s) + imp + eol + text.slice(s) };
}

/** `.item()` (or another host read) added as the first statement of a function. */
function hostReadInHelper(text: string, rand: Rand): Edited | null {
  const eol = eolOf(text);
  const defs = matches(text, /^([ \t]*)def (\w+)\(([^)\n]*)\)[^\n]*:[ \t]*\r?\n/gm);
  if (!defs.length) return null;
  const m = pick(defs, rand);
  const after = m.index + m[0].length;
  const next = /^[ \t]*/.exec(text.slice(after))![0];
  const indent = next.length > m[1].length ? next : m[1] + '    ';
  const param = (m[3].split(',').map((p) => p.trim().split(/[:=]/)[0].trim()).find((p) => p && p !== 'self' && /^\w+$/.test(p))) ?? 'x';
  const read = pick([`${param}.item()`, `print(${param}.cpu().numpy())`, `float(${param}.sum())`, `${param}.tolist()`], rand);
  return { kind: 'host-read', text: text.slice(0, after) + indent + read + eol + text.slice(after) };
}

/** A `for` loop's body made a training step (backward and optimizer step), or a loader loop added. */
function trainingLoop(text: string, rand: Rand): Edited | null {
  const eol = eolOf(text);
  const loops = matches(text, /^([ \t]*)for [^\n]*:[ \t]*\r?\n/gm);
  if (!loops.length || rand() < 0.2) {
    const tail = text.endsWith('\n') || !text ? '' : eol;
    const loop = ['for batch in loader:', '    loss = model(batch).mean()', '    loss.backward()', '    optimizer.step()', '    print(loss.item())', ''].join(eol);
    return { kind: 'add-loop', text: text + tail + loop };
  }
  const m = pick(loops, rand);
  const after = m.index + m[0].length;
  const next = /^[ \t]*/.exec(text.slice(after))![0];
  const indent = next.length > m[1].length ? next : m[1] + '    ';
  return { kind: 'train-loop', text: text.slice(0, after) + indent + 'loss.backward()' + eol + indent + 'optimizer.step()' + eol + text.slice(after) };
}

/** A module-level `def` added, or one removed (from its line to the next module-level line). */
function addOrRemoveDef(text: string, rand: Rand): Edited | null {
  const eol = eolOf(text);
  const starts = lineStarts(text);
  const top = starts.filter((s) => /^(def|class|async def|@)/.test(lineAt(text, s)));
  if (top.length && rand() < 0.5) {
    const i = starts.indexOf(pick(top, rand));
    let j = i + 1;
    while (j < starts.length && (/^([ \t]|#|$)/.test(lineAt(text, starts[j])) || /^(def|class|async def)/.test(lineAt(text, starts[j])) && /^@/.test(lineAt(text, starts[j - 1])))) j++;
    return { kind: 'remove-def', text: text.slice(0, starts[i]) + text.slice(j < starts.length ? starts[j] : text.length) };
  }
  const modLevel = starts.filter((s) => /^[A-Za-z_@]/.test(lineAt(text, s)));
  const s = modLevel.length ? pick(modLevel, rand) : text.length;
  const def = pick([['def helper_q(t):', '    return t.cpu().numpy()'], ['def train_step(model, batch, optimizer):', '    loss = model(batch).mean()', '    loss.backward()', '    optimizer.step()', '    return loss.item()'], ['class Net(torch.nn.Module):', '    def forward(self, x):', '        return x.cuda()']], rand);
  return { kind: 'add-def', text: text.slice(0, s) + def.join(eol) + eol + eol + text.slice(s) };
}

/** An unbalanced bracket or quote: the file gets a syntax error (or loses one). */
function unbalanced(text: string, rand: Rand): Edited | null {
  const at = safeOffset(text, Math.floor(rand() * (text.length + 1)));
  const piece = pick(['(', ')', '[', ']', '{', '"', "'''", ':'], rand);
  return { kind: 'bracket', text: text.slice(0, at) + piece + text.slice(at) };
}

/** A line deleted, or a line duplicated (pasted). */
function lineEdit(text: string, rand: Rand): Edited | null {
  const starts = lineStarts(text);
  const i = Math.floor(rand() * starts.length);
  const s = starts[i];
  const e = i + 1 < starts.length ? starts[i + 1] : text.length;
  if (rand() < 0.5) return { kind: 'delete-line', text: text.slice(0, s) + text.slice(e) };
  const line = text.slice(s, e);
  return { kind: 'paste-line', text: text.slice(0, s) + line + (line.endsWith('\n') ? '' : eolOf(text)) + text.slice(s) };
}

/** A character typed or deleted anywhere (non-ASCII included). */
function anyChar(text: string, rand: Rand): Edited | null {
  const at = safeOffset(text, Math.floor(rand() * (text.length + 1)));
  if (rand() < 0.5 && at < text.length) {
    const n = /[\uD800-\uDBFF]/.test(text[at]) || (text[at] === '\r' && text[at + 1] === '\n') ? 2 : 1;
    return { kind: 'delete-char', text: text.slice(0, at) + text.slice(at + n) };
  }
  return { kind: 'type-char', text: text.slice(0, at) + pick(['x', '_', '.', ' ', 'é', '🙂', eolOf(text), '#'], rand) + text.slice(at) };
}

const KINDS: [number, (t: string, r: Rand) => Edited | null][] = [
  [3, inWord], [2, inBody], [1, renameCalled], [1, addImport], [1, hostReadInHelper], [1, trainingLoop], [1, addOrRemoveDef], [1, unbalanced], [1, lineEdit], [1, anyChar],
];
const TOTAL = KINDS.reduce((s, [w]) => s + w, 0);

/** One seeded random edit of `text` (falls back to a character typed when the chosen kind finds no place). */
export function randomEdit(text: string, rand: Rand): Edited {
  let r = rand() * TOTAL;
  for (const [w, fn] of KINDS) {
    if ((r -= w) < 0) return fn(text, rand) ?? anyChar(text, rand)!;
  }
  return anyChar(text, rand)!;
}
