/**
 * The node cache (src/core/nodecache.ts) answers `node.parent` either one lookup at a time or from a parent index
 * built once lookups add up (at once in long flat modules, after a time budget elsewhere). Both paths must give
 * every node its real parent: checked against a cursor walk on a small module, a long flat module and a deep
 * expression, with lookups in document order and in reverse (so both paths answer for many nodes).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { init } from './setup';
import { parsePython, type Node } from '../src/core/parse';

beforeAll(async () => {
  await init();
});

/** Every node with its parent's id as the cursor sees it (the root's parent: null). */
function nodesWithParents(text: string): { tree: ReturnType<typeof parsePython>; pairs: { node: Node; parent: number | null }[] } {
  const tree = parsePython(text);
  const pairs: { node: Node; parent: number | null }[] = [];
  const cursor = tree.walk();
  const stack: number[] = [];
  for (;;) {
    const node = cursor.currentNode;
    pairs.push({ node, parent: stack.length ? stack[stack.length - 1] : null });
    if (cursor.gotoFirstChild()) {
      stack.push(node.id);
      continue;
    }
    let done = false;
    while (!cursor.gotoNextSibling()) {
      if (!cursor.gotoParent()) {
        done = true;
        break;
      }
      stack.pop();
    }
    if (done) break;
  }
  cursor.delete();
  return { tree, pairs };
}

const shapes: [string, string][] = [
  ['small module', 'import torch\n\ndef f(x):\n    return x.cuda() + 1\n\nclass M:\n    def g(self):\n        return f(2)\n'],
  ['long flat module', Array.from({ length: 120 }, (_, i) => `x${i} = torch.zeros(${i}).to(dev)[0] + f(a, b=${i})`).join('\n') + '\n'],
  ['deep expression', 'import torch\nx = ' + 'f(t.cuda(), "s", '.repeat(200) + '1' + ')'.repeat(200) + '\n'],
];

describe('node cache parents', () => {
  for (const [name, text] of shapes) {
    for (const order of ['document order', 'reverse order'] as const) {
      it(`gives every node its parent: ${name}, ${order}`, () => {
        const { tree, pairs } = nodesWithParents(text);
        try {
          expect(pairs.length).toBeGreaterThan(40);
          const seq = order === 'document order' ? pairs : [...pairs].reverse();
          const wrong = seq.filter(({ node, parent }) => (node.parent?.id ?? null) !== parent);
          expect(wrong.map(({ node }) => `${node.type}@${node.startIndex}`)).toEqual([]);
          // asked again (now from the per-node and per-tree memo): the same answers, the same objects
          const again = seq.filter(({ node, parent }) => {
            const p = node.parent;
            return (p?.id ?? null) !== parent || node.parent !== p;
          });
          expect(again.length).toBe(0);
        } finally {
          tree.delete();
        }
      });
    }
  }
});
