/** JSON → dotted entries. JSON.parse validates; a small scanner locates errors; the YAML walker gives lines. */
import { CostConfigError, type Entries } from '../types';
import { checkSize, readYaml } from './yaml';

export function readJson(file: string, text: string): { entries: Entries; data: unknown } {
  checkSize(file, text);
  const body = text.replace(/^\uFEFF/, '');
  try {
    JSON.parse(body);
  } catch (e) {
    const at = errorOffset(body);
    const line = body.slice(0, at).split('\n').length;
    const m = /"([^"\\]+)"\s*:[^\n]*$/.exec(body.slice(0, at));
    const near = m ? ` at \`${m[1]}\`` : '';
    throw new CostConfigError(`${file}:${line}: malformed JSON${near}: ${(e as Error).message.split('\n')[0].replace(/, ".*$/s, '')}`, file, line, m?.[1]);
  }
  // JSON is YAML 1.2 flow syntax: the YAML walker gives every key its line
  return readYaml(file, body, 'JSON');
}

/** Offset of the first syntax error (the scanner accepts exactly what JSON.parse accepts, roughly). */
function errorOffset(s: string): number {
  let i = 0;
  const ws = () => {
    while (i < s.length && /[ \t\r\n]/.test(s[i])) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const value = (depth: number): void => {
    if (depth > 512) fail();
    ws();
    const c = s[i];
    if (c === '{') {
      i++;
      ws();
      if (s[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (s[i] !== '"') fail();
        str();
        ws();
        if (s[i] !== ':') fail();
        i++;
        value(depth + 1);
        ws();
        if (s[i] === ',') i++;
        else if (s[i] === '}') {
          i++;
          return;
        } else fail();
      }
    } else if (c === '[') {
      i++;
      ws();
      if (s[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value(depth + 1);
        ws();
        if (s[i] === ',') i++;
        else if (s[i] === ']') {
          i++;
          return;
        } else fail();
      }
    } else if (c === '"') str();
    else {
      const m = /^(-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(s.slice(i, i + 64));
      if (!m) fail();
      i += m![0].length;
    }
  };
  const str = () => {
    i++;
    while (i < s.length && s[i] !== '"') {
      if (s[i] === '\\') i++;
      else if (s[i] === '\n') fail();
      i++;
    }
    if (i >= s.length) fail();
    i++;
  };
  try {
    value(0);
    ws();
    return i;
  } catch (at) {
    return typeof at === 'number' ? at : 0;
  }
}
