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

/** Writes new cell texts back, keeping everything else in the notebook JSON as it was. */
export function serializeIpynb(parsed: ParsedIpynb, newTexts: Map<number, string>): string {
  for (const [i, text] of newTexts) {
    const cell = parsed.json.cells[i];
    cell.source = parsed.sourceIsList[i] ? toSourceLines(text) : text;
  }
  const out = JSON.stringify(parsed.json, null, parsed.indent);
  return parsed.trailingNewline ? out + '\n' : out;
}
