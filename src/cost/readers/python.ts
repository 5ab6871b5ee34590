/**
 * Python configs (nanoGPT's train.py and config/*.py, scripts building TrainingArguments) → entries.
 * Read with tree-sitter, never executed: module-level assignments of literals, arithmetic on literals and
 * on earlier globals, and keyword arguments of `TrainingArguments(...)`/`*Config(...)` calls.
 * The host must have completed `initParser` (src/core/parse.ts).
 */
import { parsePython, type Node } from '../../core/parse';
import { CostConfigError, type Entries } from '../types';
import { checkSize } from './yaml';

const NOT_LITERAL = Symbol('not a literal');
type Val = number | string | boolean | null | Val[] | typeof NOT_LITERAL;

export function readPython(file: string, text: string): { entries: Entries } {
  checkSize(file, text);
  let tree;
  try {
    tree = parsePython(text);
  } catch (e) {
    throw new CostConfigError(`${file}: cannot parse Python: ${(e as Error).message}`, file);
  }
  const entries: Entries = new Map();
  const env = new Map<string, Val>();
  const line = (n: Node) => n.startPosition.row + 1;
  for (const stmt of tree.rootNode.namedChildren) {
    if (!stmt || stmt.type !== 'expression_statement') continue;
    const expr = stmt.namedChild(0);
    if (!expr || expr.type !== 'assignment') continue;
    const left = expr.childForFieldName('left');
    const right = expr.childForFieldName('right');
    if (!left || left.type !== 'identifier' || !right) continue;
    const v = evaluate(right, env);
    if (v === NOT_LITERAL) {
      env.delete(left.text);
      entries.delete(left.text);
      continue;
    }
    env.set(left.text, v);
    entries.set(left.text, { value: v, file, line: line(left) });
  }
  // keyword arguments of TrainingArguments(...) / SFTConfig(...) / GPTConfig(...) anywhere in the file
  const stack: Node[] = [tree.rootNode];
  let visited = 0;
  while (stack.length && visited++ < 200_000) {
    const n = stack.pop()!;
    if (n.type === 'call') {
      const fn = n.childForFieldName('function');
      const name = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : fn?.text;
      if (name && /(TrainingArguments|Config)$/.test(name)) {
        for (const arg of n.childForFieldName('arguments')?.namedChildren ?? []) {
          if (arg?.type !== 'keyword_argument') continue;
          const k = arg.childForFieldName('name')?.text;
          const vn = arg.childForFieldName('value');
          if (!k || !vn || entries.has(k)) continue;
          const v = evaluate(vn, env);
          if (v !== NOT_LITERAL) entries.set(k, { value: v, file, line: line(arg) });
        }
      }
    }
    for (const c of n.namedChildren) if (c) stack.push(c);
  }
  return { entries };
}

function evaluate(n: Node, env: Map<string, Val>): Val {
  switch (n.type) {
    case 'integer': {
      const t = n.text.replace(/_/g, '').replace(/[lL]$/, '');
      const v = /^0[xob]/i.test(t) ? Number(t) : Number.parseInt(t, 10);
      return Number.isFinite(v) ? v : NOT_LITERAL;
    }
    case 'float': {
      const v = Number(n.text.replace(/_/g, ''));
      return Number.isFinite(v) ? v : NOT_LITERAL;
    }
    case 'true':
      return true;
    case 'false':
      return false;
    case 'none':
      return null;
    case 'string': {
      if (n.namedChildren.some((c) => c?.type === 'interpolation')) return NOT_LITERAL;
      const m = /^[rRbBuU]*("""|'''|"|')([\s\S]*)\1$/.exec(n.text);
      return m ? m[2] : NOT_LITERAL;
    }
    case 'concatenated_string': {
      const parts = n.namedChildren.map((c) => (c ? evaluate(c, env) : NOT_LITERAL));
      return parts.every((p) => typeof p === 'string') ? (parts as string[]).join('') : NOT_LITERAL;
    }
    case 'identifier':
      return env.has(n.text) ? env.get(n.text)! : NOT_LITERAL;
    case 'parenthesized_expression':
      return n.namedChild(0) ? evaluate(n.namedChild(0)!, env) : NOT_LITERAL;
    case 'unary_operator': {
      const v = evaluate(n.childForFieldName('argument')!, env);
      const op = n.childForFieldName('operator')?.text ?? n.child(0)?.text;
      if (typeof v !== 'number') return NOT_LITERAL;
      return op === '-' ? -v : op === '+' ? v : NOT_LITERAL;
    }
    case 'binary_operator': {
      const a = evaluate(n.childForFieldName('left')!, env);
      const b = evaluate(n.childForFieldName('right')!, env);
      const op = n.childForFieldName('operator')?.text;
      if (typeof a === 'string' && typeof b === 'string' && op === '+') return a + b;
      if (typeof a !== 'number' || typeof b !== 'number') return NOT_LITERAL;
      switch (op) {
        case '+': return a + b;
        case '-': return a - b;
        case '*': return a * b;
        case '/': return b === 0 ? NOT_LITERAL : a / b;
        case '//': return b === 0 ? NOT_LITERAL : Math.floor(a / b);
        case '%': return b === 0 ? NOT_LITERAL : a % b;
        case '**': {
          const r = a ** b;
          return Number.isFinite(r) ? r : NOT_LITERAL;
        }
        default: return NOT_LITERAL;
      }
    }
    case 'list':
    case 'tuple': {
      const items = n.namedChildren.map((c) => (c ? evaluate(c, env) : NOT_LITERAL));
      return items.includes(NOT_LITERAL) ? NOT_LITERAL : items;
    }
    default:
      return NOT_LITERAL;
  }
}
