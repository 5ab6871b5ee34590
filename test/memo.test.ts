/**
 * NodeMemo (src/core/memo.ts), the per-node memo of the shared primitives: it must answer what a Map by node id
 * answered, for every node, whatever its storage (sparse, dense one/two/four bytes a node, by id for nodes of
 * another tree), and a call's keyword arguments (semantics.ts Keywords) must behave as the Map they replaced.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { init } from './setup';
import { parsePython, type Node, type Tree } from '../src/core/parse';
import { NodeMemo } from '../src/core/memo';
import { callArgs } from '../src/core/semantics';

beforeAll(async () => {
  await init();
});

/** Every node of a tree, breadth first. */
function preorder(root: Node): Node[] {
  const out = [root];
  for (let k = 0; k < out.length; k++) for (const c of out[k].children) if (c) out.push(c);
  return out;
}

const SOURCE = Array.from({ length: 60 }, (_, i) => `def f${i}(a, b=${i}):\n    x = a.cuda() + b * ${i}\n    return torch.sum(x, dim=${i % 3})\n`).join('');

/** Sets answers on a pseudo-random subset of nodes (every node with `fraction` 1) and compares with a Map. */
function compare(tree: Tree, value: (k: number) => unknown, fraction: number): NodeMemo<unknown> {
  const nodes = preorder(tree.rootNode);
  const memo = new NodeMemo<unknown>(tree);
  const byId = new Map<number, unknown>();
  let seed = 7;
  nodes.forEach((n, k) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    if (seed / 0x7fffffff >= fraction) return;
    memo.set(n, value(k));
    byId.set(n.id, value(k));
  });
  for (const n of nodes) expect(memo.get(n)).toBe(byId.get(n.id));
  // answers replaced later keep the newest
  for (const n of nodes.slice(0, 20)) {
    memo.set(n, 'again');
    expect(memo.get(n)).toBe('again');
  }
  return memo;
}

describe('NodeMemo', () => {
  it('answers like a Map by node id, sparse or dense', () => {
    const tree = parsePython(SOURCE);
    const n = preorder(tree.rootNode).length;
    expect(n).toBeGreaterThan(2000);
    // sparse (a few answers), dense with one byte (booleans, null), two bytes (hundreds of answers), four (thousands)
    const codes = (m: NodeMemo<unknown>) => (m as unknown as { codes: unknown }).codes;
    expect(codes(compare(tree, (k) => k % 2 === 0, 0.05))).toBeNull();
    expect(codes(compare(tree, (k) => (k % 3 === 0 ? null : k % 3 === 1), 1))).toBeInstanceOf(Uint8Array);
    // widened on the way: the first answers fit one byte
    expect(codes(compare(tree, (k) => `name${k % 700}`, 0.6))).toBeInstanceOf(Uint16Array);
    tree.delete();
    const big = parsePython(SOURCE.repeat(30));
    const objs = Array.from({ length: preorder(big.rootNode).length }, (_, k) => ({ k }));
    expect(objs.length).toBeGreaterThan(65535);
    expect(codes(compare(big, (k) => objs[k], 1))).toBeInstanceOf(Int32Array);
    big.delete();
  });

  it('keeps nodes of another tree by id', () => {
    const a = parsePython(SOURCE);
    const b = parsePython(SOURCE);
    const memo = new NodeMemo<string>(a);
    const na = preorder(a.rootNode);
    const nb = preorder(b.rootNode);
    for (const n of na) memo.set(n, 'a');
    for (const n of nb.slice(0, 50)) memo.set(n, 'b');
    expect(na.every((n) => memo.get(n) === 'a')).toBe(true);
    expect(nb.slice(0, 50).every((n) => memo.get(n) === 'b')).toBe(true);
    expect(memo.get(nb[60])).toBeUndefined();
    a.delete();
    b.delete();
  });
});

describe('call keywords', () => {
  it('behave as a Map: order, repeated names, iteration', () => {
    const tree = parsePython('f(x, a=1, b=2, a=3, *r, c=4, **k)\ng(y)\n');
    const calls = preorder(tree.rootNode).filter((n) => n.type === 'call');
    const kw = callArgs(calls[0]).keywords;
    expect(kw.size).toBe(3);
    expect([...kw.keys()]).toEqual(['a', 'b', 'c']);
    expect(kw.get('a')?.text).toBe('a=3');
    expect(kw.has('b')).toBe(true);
    expect(kw.has('z')).toBe(false);
    expect(kw.get('z')).toBeUndefined();
    expect([...kw].map(([k, v]) => `${k}:${v.text}`)).toEqual(['a:a=3', 'b:b=2', 'c:c=4']);
    expect([...kw.values()].map((v) => v.text)).toEqual(['a=3', 'b=2', 'c=4']);
    const seen: string[] = [];
    kw.forEach((v, k, m) => {
      expect(m).toBe(kw);
      seen.push(`${k}=${v.childForFieldName('value')?.text}`);
    });
    expect(seen).toEqual(['a=3', 'b=2', 'c=4']);
    expect(new Map(kw).get('c')?.text).toBe('c=4');
    expect(callArgs(calls[1]).keywords.size).toBe(0);
    tree.delete();
  });
});
