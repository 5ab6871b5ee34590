/**
 * Indentation errors as CPython's tokenizer reports them (Parser/tokenizer.c, tok_get's indentation block):
 * tree-sitter recovers from these silently, Python refuses the file. A fixed program must still compile, so
 * the fix loop treats them like syntax errors.
 *
 * - Each logical line's indentation is measured twice: `col` with tabs to the next multiple of 8, `altcol`
 *   with tabs as 1. Blank lines, comment-only lines, continuation lines (inside brackets, after a backslash,
 *   inside a triple-quoted string) do not count.
 * - Equal `col` with a different `altcol`, or an indent/dedent on which the two measures disagree, is
 *   "TabError: inconsistent use of tabs and spaces in indentation".
 * - A dedent to a column no enclosing block has is "unindent does not match any outer indentation level".
 * - An indent after a line that does not open a block (does not end with `:`) is "unexpected indent"; a
 *   line ending with `:` followed by no indent is "expected an indented block".
 */

export interface IndentationProblem {
  /** 0-based line. */
  line: number;
  message: string;
}

const TABSIZE = 8;

export function indentationError(text: string): IndentationProblem | null {
  const n = text.length;
  const stack = [0];
  const altStack = [0];
  let i = 0;
  let line = 0;
  let opensBlock = false; // the previous logical line ended with ':'
  let sawLine = false;
  while (i < n) {
    // ---- start of a logical line: measure its indentation
    let col = 0;
    let alt = 0;
    for (; i < n; i++) {
      const c = text[i];
      if (c === ' ') {
        col++;
        alt++;
      } else if (c === '\t') {
        col = (Math.floor(col / TABSIZE) + 1) * TABSIZE;
        alt++;
      } else if (c === '\f') {
        col = alt = 0;
      } else break;
    }
    if (i >= n) break;
    const c0 = text[i];
    if (c0 === '#' || c0 === '\n' || c0 === '\r' || (c0 === '\\' && (text[i + 1] === '\n' || text[i + 1] === '\r'))) {
      // blank or comment-only line: skip it (a lone backslash line joins the next; treat it as blank too)
      while (i < n && text[i] !== '\n') i++;
      i++;
      line++;
      continue;
    }
    const top = stack[stack.length - 1];
    const altTop = altStack[altStack.length - 1];
    if (col === top) {
      if (alt !== altTop) return { line, message: 'inconsistent use of tabs and spaces in indentation (TabError)' };
      if (opensBlock) return { line, message: 'expected an indented block' };
    } else if (col > top) {
      if (alt <= altTop) return { line, message: 'inconsistent use of tabs and spaces in indentation (TabError)' };
      if (!opensBlock) return { line, message: sawLine ? 'unexpected indent' : 'unexpected indent (the first line is indented)' };
      stack.push(col);
      altStack.push(alt);
    } else {
      if (opensBlock) return { line, message: 'expected an indented block' };
      while (stack.length > 1 && col < stack[stack.length - 1]) {
        stack.pop();
        altStack.pop();
      }
      if (col !== stack[stack.length - 1]) return { line, message: 'unindent does not match any outer indentation level' };
      if (alt !== altStack[altStack.length - 1]) return { line, message: 'inconsistent use of tabs and spaces in indentation (TabError)' };
    }
    sawLine = true;
    // ---- the rest of the logical line: strings, comments, brackets, continuations
    let depth = 0;
    let last = ''; // last significant character outside strings and comments
    for (;;) {
      if (i >= n) break;
      const c = text[i];
      if (c === '\n') {
        line++;
        i++;
        if (depth === 0) break;
        continue;
      }
      if (c === '\\' && (text[i + 1] === '\n' || (text[i + 1] === '\r' && text[i + 2] === '\n'))) {
        i += text[i + 1] === '\r' ? 3 : 2;
        line++;
        continue;
      }
      if (c === '#') {
        while (i < n && text[i] !== '\n') i++;
        continue;
      }
      if (c === '"' || c === "'") {
        const triple = text.startsWith(c.repeat(3), i);
        const q = triple ? c.repeat(3) : c;
        i += q.length;
        while (i < n) {
          if (text[i] === '\\') {
            if (text[i + 1] === '\n') line++;
            i += 2;
            continue;
          }
          if (text.startsWith(q, i)) {
            i += q.length;
            break;
          }
          if (text[i] === '\n') {
            line++;
            if (!triple) break; // an unterminated one-line string: the parser reports it
          }
          i++;
        }
        last = 'string';
        continue;
      }
      if (c === '(' || c === '[' || c === '{') depth++;
      else if (c === ')' || c === ']' || c === '}') depth = Math.max(0, depth - 1);
      if (c !== ' ' && c !== '\t' && c !== '\r' && c !== '\f') last = c;
      i++;
    }
    opensBlock = last === ':';
  }
  return opensBlock ? { line, message: 'expected an indented block (at the end of the file)' } : null;
}
