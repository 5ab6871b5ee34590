/**
 * Jupyter notebooks as one Python program: code cells joined in order (cell boundaries kept in an
 * index), IPython magics masked to comments of the same length so offsets map 1:1 to the cell text.
 */

export type CellKind = 'code' | 'markdown' | 'raw';

export interface NotebookCell {
  kind: CellKind;
  /** The cell's source as the user sees it. */
  text: string;
  /** Cell language when known (VS Code cells); `python` assumed for code cells otherwise. */
  language?: string;
}

export interface MagicLine {
  /** Cell index, counting every cell from 0. */
  cell: number;
  /** Offset of the line start in the combined program. */
  start: number;
  end: number;
  /** `%`, `%%` or `!` */
  kind: '%' | '%%' | '!';
  /** The original text of the line. */
  text: string;
}

export interface CellSpan {
  cell: number;
  /** Offsets of the cell's text in the combined program. */
  start: number;
  end: number;
}

export interface CombinedProgram {
  /** Code cells joined by "\n", magics masked. */
  text: string;
  spans: CellSpan[];
  magics: MagicLine[];
  cellCount: number;
}

/** Cell magics whose body is not Python: the whole cell is masked. */
const FOREIGN_CELL_MAGICS = new Set([
  'bash', 'sh', 'script', 'writefile', 'file', 'html', 'javascript', 'js', 'latex', 'markdown', 'perl', 'ruby',
  'sql', 'svg', 'system', 'sx', 'python2', 'pypy', 'cmd', 'powershell', 'md', 'capture_output',
]);

const MAGIC_LINE = /^[ \t]*(%%|%|!)/;
const SHELL_ASSIGN = /^[ \t]*[A-Za-z_][\w.,\s]*=[ \t]*[!%]/;
const HELP_LINE = /^[ \t]*(\?{1,2}[\w.]+|[\w.]+\?{1,2})[ \t]*$/;

function maskLine(line: string): string {
  const i = line.search(/\S/);
  if (i < 0) return line;
  return line.slice(0, i) + '#' + line.slice(i + 1);
}

/** Masks magics in one code cell; returns the masked text and the magic lines found (cell-relative offsets). */
export function maskCell(text: string): { text: string; magics: { start: number; end: number; kind: '%' | '%%' | '!' }[] } {
  const lines = text.split('\n');
  const magics: { start: number; end: number; kind: '%' | '%%' | '!' }[] = [];
  let offset = 0;
  let foreign = false;
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const end = offset + line.length - (line.endsWith('\r') ? 1 : 0);
    const m = MAGIC_LINE.exec(line);
    if (i === 0 && m && m[1] === '%%') {
      const name = /^[ \t]*%%(\w+)/.exec(line)?.[1] ?? '';
      foreign = FOREIGN_CELL_MAGICS.has(name);
      magics.push({ start: offset, end, kind: '%%' });
      out.push(maskLine(line));
    } else if (foreign) {
      out.push(maskLine(line));
    } else if (m && m[1] !== '%%') {
      magics.push({ start: offset, end, kind: m[1] as '%' | '!' });
      out.push(maskLine(line));
    } else if (SHELL_ASSIGN.test(line) && !/^[ \t]*[A-Za-z_][\w.,\s]*=[ \t]*[!%]=/.test(line)) {
      const bang = line.search(/[!%]/);
      magics.push({ start: offset, end, kind: line[bang] === '!' ? '!' : '%' });
      out.push(maskLine(line));
    } else if (HELP_LINE.test(line)) {
      out.push(maskLine(line));
    } else {
      out.push(line);
    }
    offset += line.length + 1;
  }
  return { text: out.join('\n'), magics };
}

export function isPythonCell(cell: NotebookCell): boolean {
  return cell.kind === 'code' && (!cell.language || cell.language === 'python');
}

export function combineCells(cells: NotebookCell[]): CombinedProgram {
  const parts: string[] = [];
  const spans: CellSpan[] = [];
  const magics: MagicLine[] = [];
  let offset = 0;
  cells.forEach((cell, index) => {
    if (!isPythonCell(cell)) return;
    if (parts.length) offset += 1; // the "\n" joining cells
    const masked = maskCell(cell.text);
    spans.push({ cell: index, start: offset, end: offset + cell.text.length });
    for (const m of masked.magics) {
      magics.push({ cell: index, start: offset + m.start, end: offset + m.end, kind: m.kind, text: cell.text.slice(m.start, m.end) });
    }
    parts.push(masked.text);
    offset += cell.text.length;
  });
  return { text: parts.join('\n'), spans, magics, cellCount: cells.length };
}

/** The span holding a combined offset (an offset on a joining "\n" belongs to the cell before it). */
export function spanAt(program: CombinedProgram, offset: number): CellSpan | undefined {
  const s = program.spans;
  let lo = 0;
  let hi = s.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (s[mid].start <= offset) lo = mid;
    else hi = mid - 1;
  }
  return s[lo];
}

// ---------------------------------------------------------------------------------------------
// .ipynb files

export class NotebookFormatError extends Error {}

interface IpynbCell {
  cell_type?: unknown;
  source?: unknown;
  metadata?: unknown;
}

export interface ParsedIpynb {
  cells: NotebookCell[];
  /** Kernel language; cells of other languages are not analysed. */
  language: string;
  json: { cells: IpynbCell[] } & Record<string, unknown>;
  indent: string | number;
  trailingNewline: boolean;
  /** Per cell, whether the source was stored as a list of lines. */
  sourceIsList: boolean[];
}

/** " at line L, column C" from a JSON.parse error (its wording differs between Node versions). */
function jsonErrorWhere(raw: string, message: string): string {
  const lc = /line (\d+) column (\d+)/.exec(message);
  if (lc) return ` at line ${lc[1]}, column ${lc[2]}`;
  const pos = /position (\d+)/.exec(message);
  if (pos) {
    const before = raw.slice(0, Number(pos[1]));
    const line = before.split('\n').length;
    return ` at line ${line}, column ${before.length - before.lastIndexOf('\n')}`;
  }
  return /Unexpected end/i.test(message) ? ' (the file ends early)' : '';
}

export function parseIpynb(raw: string): ParsedIpynb {
  let json: unknown;
  try {
    json = JSON.parse(raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw);
  } catch (e) {
    throw new NotebookFormatError(`not valid JSON${jsonErrorWhere(raw, (e as Error).message)}`);
  }
  if (!json || typeof json !== 'object' || !Array.isArray((json as { cells?: unknown }).cells)) {
    throw new NotebookFormatError('no "cells" array: not an nbformat 4 notebook');
  }
  const nb = json as ParsedIpynb['json'];
  const meta = (nb.metadata ?? {}) as { language_info?: { name?: unknown }; kernelspec?: { language?: unknown } };
  const lang = String(meta.language_info?.name ?? meta.kernelspec?.language ?? 'python').toLowerCase();
  const sourceIsList: boolean[] = [];
  const cells = nb.cells.map((c, i): NotebookCell => {
    if (!c || typeof c !== 'object') throw new NotebookFormatError(`cell ${i} is not an object`);
    const src = c.source;
    let text: string;
    if (Array.isArray(src)) {
      if (!src.every((s) => typeof s === 'string')) throw new NotebookFormatError(`cell ${i}: "source" has non-string lines`);
      text = src.join('');
      sourceIsList.push(true);
    } else if (typeof src === 'string') {
      text = src;
      sourceIsList.push(false);
    } else if (src === undefined) {
      text = '';
      sourceIsList.push(true);
    } else {
      throw new NotebookFormatError(`cell ${i}: "source" is neither a string nor a list of strings`);
    }
    const kind: CellKind = c.cell_type === 'code' ? 'code' : c.cell_type === 'markdown' ? 'markdown' : 'raw';
    return { kind, text, language: kind === 'code' ? lang : undefined };
  });
  const indentMatch = /^\{\r?\n([ \t]+)"/.exec(raw);
  return {
    cells,
    language: lang,
    json: nb,
    indent: indentMatch ? (indentMatch[1].includes('\t') ? '\t' : indentMatch[1].length) : 1,
    trailingNewline: /\n$/.test(raw),
    sourceIsList,
  };
}

/** Splits cell text into nbformat source lines (each keeps its "\n"). */
function toSourceLines(text: string): string[] {
  if (!text) return [];
  const lines = text.split(/(?<=\n)/);
  return lines;
}

// ---------------------------------------------------------------------------------------------
// Byte-preserving notebook edits: only the changed cells' "source" values are rewritten in the raw JSON

interface RawSpan {
  start: number;
  end: number;
}

/** Where a cell's "source" value lies in the raw JSON: a string, or an array of strings (each item's span). */
export interface SourceValueSpan extends RawSpan {
  kind: 'string' | 'array';
  items: RawSpan[];
}

/** A small JSON scanner: positions of values, never their meaning (the file already parsed as JSON). */
class JsonScanner {
  pos = 0;
  constructor(readonly s: string) {}
  ws(): void {
    const s = this.s;
    while (this.pos < s.length) {
      const c = s.charCodeAt(this.pos);
      if (c === 32 || c === 9 || c === 10 || c === 13 || c === 0xfeff) this.pos++;
      else break;
    }
  }
  fail(what: string): never {
    throw new NotebookFormatError(`JSON scanner: expected ${what} at offset ${this.pos}`);
  }
  string(): RawSpan {
    const start = this.pos;
    if (this.s[this.pos] !== '"') this.fail('a string');
    this.pos++;
    while (this.pos < this.s.length) {
      const c = this.s[this.pos];
      if (c === '\\') this.pos += 2;
      else if (c === '"') return { start, end: ++this.pos };
      else this.pos++;
    }
    return this.fail('the end of a string');
  }
  /** Skips any value; calls `onMember(key, this)` for object members when given (it must consume the value). */
  value(onMember?: (key: string, index: number) => boolean, onItem?: (index: number) => boolean): RawSpan {
    this.ws();
    const start = this.pos;
    const c = this.s[this.pos];
    if (c === '"') return this.string();
    if (c === '{') {
      this.pos++;
      this.ws();
      let i = 0;
      if (this.s[this.pos] === '}') return { start, end: ++this.pos };
      for (;;) {
        this.ws();
        const k = this.string();
        const key = JSON.parse(this.s.slice(k.start, k.end)) as string;
        this.ws();
        if (this.s[this.pos] !== ':') this.fail('":"');
        this.pos++;
        if (!onMember || !onMember(key, i)) this.value();
        i++;
        this.ws();
        if (this.s[this.pos] === ',') this.pos++;
        else if (this.s[this.pos] === '}') return { start, end: ++this.pos };
        else this.fail('"," or "}"');
      }
    }
    if (c === '[') {
      this.pos++;
      this.ws();
      let i = 0;
      if (this.s[this.pos] === ']') return { start, end: ++this.pos };
      for (;;) {
        if (!onItem || !onItem(i)) this.value();
        i++;
        this.ws();
        if (this.s[this.pos] === ',') this.pos++;
        else if (this.s[this.pos] === ']') return { start, end: ++this.pos };
        else this.fail('"," or "]"');
      }
    }
    const m = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(this.s.slice(this.pos, this.pos + 400));
    if (!m) this.fail('a value');
    this.pos += m[0].length;
    return { start, end: this.pos };
  }
}

/** The raw span of each cell's "source" value (null when the cell has none), in cell order. */
export function sourceValueSpans(raw: string): (SourceValueSpan | null)[] {
  const sc = new JsonScanner(raw);
  const spans: (SourceValueSpan | null)[] = [];
  sc.value((key) => {
    if (key !== 'cells') return false;
    sc.ws();
    if (raw[sc.pos] !== '[') return false;
    sc.value(undefined, (cellIndex) => {
      sc.ws();
      spans[cellIndex] = null;
      if (raw[sc.pos] !== '{') return false;
      sc.value((k) => {
        if (k !== 'source') return false;
        sc.ws();
        const items: RawSpan[] = [];
        if (raw[sc.pos] === '[') {
          const span = sc.value(undefined, () => {
            sc.ws();
            items.push(sc.value());
            return true;
          });
          spans[cellIndex] = { ...span, kind: 'array', items }; // a repeated key: the last wins, as in JSON.parse
        } else {
          const span = sc.value();
          spans[cellIndex] = { ...span, kind: 'string', items: [] };
        }
        return true;
      });
      return true;
    });
    return true;
  });
  return spans;
}

/** A JSON string literal in the file's own escaping: `\uXXXX` for non-ASCII when the file is ASCII-only, `\/` when it escapes slashes. */
function encoder(raw: string): (s: string) => string {
  const asciiOnly = !/[^\x00-\x7f]/.test(raw) && /\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])[0-9a-fA-F]{2}/.test(raw);
  const slashes = raw.includes('\\/');
  const upperHex = /\\u[0-9a-f]*[A-F][0-9a-fA-F]*/.test(raw.replace(/\\\\/g, ''));
  return (s) => {
    let out = JSON.stringify(s);
    if (asciiOnly) out = out.replace(/[^\x00-\x7f]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
    if (upperHex) out = out.replace(/\\u([0-9a-f]{4})/g, (_m, h: string) => '\\u' + h.toUpperCase());
    if (slashes) out = out.replace(/\//g, '\\/');
    return out;
  };
}

/**
 * Writes new cell texts into the notebook's raw JSON, changing only those cells' "source" values (in the
 * file's style: a list of lines or one string, its escaping, indentation and line endings); every other
 * byte (outputs, metadata, key order, number spelling) stays. Throws when the result would not read back.
 */
export function editIpynb(raw: string, parsed: ParsedIpynb, newTexts: Map<number, string>): string {
  const spans = sourceValueSpans(raw);
  const enc = encoder(raw);
  const eol = raw.includes('\r\n') ? '\r\n' : '\n';
  const unit = typeof parsed.indent === 'number' ? ' '.repeat(parsed.indent) : parsed.indent;
  const edits: { start: number; end: number; text: string }[] = [];
  for (const [i, text] of newTexts) {
    const span = spans[i];
    if (!span) throw new NotebookFormatError(`cell ${i} has no "source" to edit`);
    if (span.kind === 'string') {
      edits.push({ start: span.start, end: span.end, text: enc(text) });
      continue;
    }
    const lines = toSourceLines(text);
    const old = span.items.map((it) => JSON.parse(raw.slice(it.start, it.end)) as string);
    // keep the items (their bytes) that lead and trail unchanged
    let pre = 0;
    while (pre < old.length && pre < lines.length && old[pre] === lines[pre]) pre++;
    let suf = 0;
    while (suf < old.length - pre && suf < lines.length - pre && old[old.length - 1 - suf] === lines[lines.length - 1 - suf]) suf++;
    const items = span.items;
    let open: string;
    let sep: string;
    let close: string;
    if (items.length >= 2) {
      open = raw.slice(span.start + 1, items[0].start);
      sep = raw.slice(items[0].end, items[1].start);
      close = raw.slice(items[items.length - 1].end, span.end - 1);
    } else if (items.length === 1) {
      open = raw.slice(span.start + 1, items[0].start);
      close = raw.slice(items[0].end, span.end - 1);
      sep = ',' + open; // `[\n   "a"\n  ]` → `,\n   `; `["a"]` → `,`
    } else {
      // an empty list: lay the lines out as the file lays out nested values
      const lineStart = raw.lastIndexOf('\n', span.start) + 1;
      const keyIndent = /^[ \t]*/.exec(raw.slice(lineStart))![0];
      const multiline = raw.includes('\n') && parsed.indent !== 0;
      open = multiline ? eol + keyIndent + unit : '';
      sep = multiline ? ',' + eol + keyIndent + unit : ',';
      close = multiline ? eol + keyIndent : '';
    }
    const keptPre = items.slice(0, pre);
    const keptSuf = items.slice(items.length - suf);
    const middle = lines.slice(pre, lines.length - suf).map(enc);
    const parts = [...keptPre.map((it) => raw.slice(it.start, it.end)), ...middle, ...keptSuf.map((it) => raw.slice(it.start, it.end))];
    edits.push({ start: span.start, end: span.end, text: parts.length ? '[' + open + parts.join(sep) + close + ']' : '[]' });
  }
  edits.sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const e of edits) {
    out += raw.slice(at, e.start) + e.text;
    at = e.end;
  }
  out += raw.slice(at);
  // read it back: every cell's text is the intended one
  const check = parseIpynb(out);
  check.cells.forEach((c, i) => {
    const want = newTexts.get(i) ?? parsed.cells[i].text;
    if (c.text !== want) throw new NotebookFormatError(`editing cell ${i} did not read back`);
  });
  return out;
}
