/**
 * The tree mirror (src/core/mirror.ts) answers the Node API from typed arrays. Every answer must be web-tree-sitter's:
 * each node of each rule fixture, of broken code (ERROR and MISSING nodes), CRLF, non-ASCII and empty text is
 * compared, property by property, with the real node at the same preorder position; queries started on a handle
 * give the real captures; handles are interned; an edit drops the mirror.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Query } from 'web-tree-sitter';
import { init, ROOT } from './setup';
import { parsePython, treeEditFor, wasmHeapInUse, type Node, type Tree } from '../src/core/parse';
import { MirrorNode, mirrorOf, realRootNode, releaseTree, simpleTypes } from '../src/core/mirror';

beforeAll(async () => {
  await init();
});

/** The real nodes of a tree in preorder (a cursor walk). */
function realPreorder(tree: Tree): Node[] {
  const out: Node[] = [];
  const cursor = realRootNode(tree).walk();
  for (;;) {
    out.push(cursor.currentNode);
    if (cursor.gotoFirstChild()) continue;
    for (;;) {
      if (cursor.gotoNextSibling()) break;
      if (!cursor.gotoParent()) {
        cursor.delete();
        return out;
      }
    }
  }
}

/** The handles in preorder (walked through the handle API itself). */
function handlePreorder(root: Node): Node[] {
  const out: Node[] = [];
  const visit = (n: Node) => {
    out.push(n);
    for (const c of n.children) if (c) visit(c);
  };
  visit(root);
  return out;
}

const ids = (xs: (Node | null)[]) => xs.map((x) => x?.id ?? null);

/** Every difference between the mirror and web-tree-sitter on one text (empty when they agree). */
function differences(text: string, fieldsToo = true): string[] {
  const tree = parsePython(text);
  const bad: string[] = [];
  try {
    const root = tree.rootNode;
    expect(root).toBeInstanceOf(MirrorNode);
    const real = realPreorder(tree);
    const mine = handlePreorder(root);
    if (real.length !== mine.length) return [`node count ${mine.length} != ${real.length}`];
    const fields = (tree.language.fields as (string | null)[]).filter((f): f is string => !!f);
    for (let i = 0; i < real.length; i++) {
      const r = real[i];
      const h = mine[i];
      const at = `${r.type}@${r.startIndex}`;
      const same = (what: string, a: unknown, b: unknown) => {
        if (JSON.stringify(a) !== JSON.stringify(b)) bad.push(`${at} ${what}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`);
      };
      same('id', h.id, r.id);
      same('type', h.type, r.type);
      same('typeId', h.typeId, r.typeId);
      same('start', h.startIndex, r.startIndex);
      same('end', h.endIndex, r.endIndex);
      same('startPosition', h.startPosition, r.startPosition);
      same('endPosition', h.endPosition, r.endPosition);
      same('text', h.text, r.text);
      same('isNamed', h.isNamed, r.isNamed);
      same('isMissing', h.isMissing, r.isMissing);
      same('isError', h.isError, r.isError);
      same('hasError', h.hasError, r.hasError);
      same('childCount', h.childCount, r.childCount);
      same('namedChildCount', h.namedChildCount, r.namedChildCount);
      same('descendantCount', h.descendantCount, r.descendantCount);
      same('parent', h.parent?.id ?? null, r.parent?.id ?? null);
      same('children', ids(h.children), ids(r.children));
      same('namedChildren', ids(h.namedChildren), ids(r.namedChildren));
      same('nextSibling', h.nextSibling?.id ?? null, r.nextSibling?.id ?? null);
      same('previousSibling', h.previousSibling?.id ?? null, r.previousSibling?.id ?? null);
      same('nextNamedSibling', h.nextNamedSibling?.id ?? null, r.nextNamedSibling?.id ?? null);
      same('previousNamedSibling', h.previousNamedSibling?.id ?? null, r.previousNamedSibling?.id ?? null);
      same('firstNamedChild', h.firstNamedChild?.id ?? null, r.firstNamedChild?.id ?? null);
      same('lastChild', h.lastChild?.id ?? null, r.lastChild?.id ?? null);
      same('child(1)', h.child(1)?.id ?? null, r.child(1)?.id ?? null);
      same('namedChild(0)', h.namedChild(0)?.id ?? null, r.namedChild(0)?.id ?? null);
      same('fieldNameForChild(0)', h.fieldNameForChild(0), r.fieldNameForChild(0));
      if (fieldsToo && r.childCount > 0) {
        for (const f of fields) {
          same(`field ${f}`, h.childForFieldName(f)?.id ?? null, r.childForFieldName(f)?.id ?? null);
          same(`fields ${f}`, ids(h.childrenForFieldName(f)), ids(r.childrenForFieldName(f)));
        }
      }
    }
    for (const types of [['identifier'], ['call', 'attribute'], ['ERROR'], ['string', 'comment', 'module'], ['(', ',']]) {
      for (const k of [0, Math.floor(real.length / 3), Math.floor(real.length / 2)]) {
        if (k >= real.length) continue;
        const a = ids(mine[k].descendantsOfType(types));
        const b = ids(real[k].descendantsOfType(types));
        if (JSON.stringify(a) !== JSON.stringify(b)) bad.push(`descendantsOfType(${types}) at ${k}: ${a.length} != ${b.length}`);
      }
    }
    // a real node found by the handle API maps back to the same handle
    for (const k of [0, real.length >> 2, real.length >> 1, real.length - 1]) {
      const r = real[k];
      const h = root.descendantForIndex(r.startIndex, Math.max(r.startIndex, r.endIndex - 1));
      const want = realRootNode(tree).descendantForIndex(r.startIndex, Math.max(r.startIndex, r.endIndex - 1));
      if (h?.id !== want?.id || h?.startIndex !== want?.startIndex) bad.push(`descendantForIndex at ${r.startIndex}`);
    }
  } finally {
    tree.delete();
  }
  return bad.slice(0, 20);
}

function fixtureTexts(): [string, string][] {
  const out: [string, string][] = [];
  const rules = path.join(ROOT, 'src/rules');
  for (const fam of fs.readdirSync(rules)) {
    const dir = path.join(rules, fam, 'fixtures');
    if (!fs.existsSync(dir)) continue;
    for (const f of fs.readdirSync(dir)) if (f.endsWith('.py')) out.push([`${fam}/${f}`, fs.readFileSync(path.join(dir, f), 'utf8')]);
  }
  return out;
}

const shapes: [string, string][] = [
  ['empty', ''],
  ['only a comment', '# hi\n'],
  ['comment first, blank lines', '\n\n# c\nimport torch  # x\n\n\nx = 1\n'],
  ['CRLF', 'import torch\r\ndef f(x):\r\n    return x.cuda()\r\n'],
  ['non-ASCII and emoji', 's = "héllo 😀 wörld"; t = f"{s} 中文"\nx = torch.zeros(2).to("cuda")  # ünï\n'],
  ['broken: missing paren', 'import torch\nx = f(a, b\ny = g(\n'],
  ['broken: stray tokens', 'def f(:\n  return )\nclass :\n  pass\n@@@\nx = [1, 2\n'],
  ['broken: missing colon', 'if x\n    y = 1\nfor i in range(3)\n    print(i)\n'],
  ['broken: zero-width at start', ')\nx = 1\n'],
  ['deep expression', 'x = ' + 'f(t.cuda(), "s", '.repeat(60) + '1' + ')'.repeat(60) + '\n'],
  // previous siblings deeper than the mirror's walk up (Mirror.prevSibling): among few children, and in a long list
  ['deep siblings in a long list', Array.from({ length: 20 }, (_, k) => `x${k} = ${'-'.repeat(40)}1`).join('\n') + `\nh(${'-'.repeat(40)}1, ${'~'.repeat(40)}2)\n`],
  ['broken: error inside a match', 'match x:\n    case 1:\n        y = (\n    case 2 if:\n        pass\nz = ]\n'],
  ['decorators, lambdas, match', '@dec(1)\ndef f(*a, b: int = 2, **k) -> int:\n    return (lambda y: y + 1)(b)\nmatch x:\n    case [1, *rest]:\n        pass\n    case {"k": v} if v:\n        pass\n'],
];

describe('tree mirror', () => {
  for (const [name, text] of shapes) {
    it(`answers as web-tree-sitter: ${name}`, () => {
      expect(differences(text)).toEqual([]);
    }, 60_000);
  }

  it('answers as web-tree-sitter on every rule fixture', () => {
    const texts = fixtureTexts();
    expect(texts.length).toBeGreaterThan(100);
    const bad: string[] = [];
    // every fifth fixture compares every field lookup too (the rest: everything else), to keep the test short
    texts.forEach(([name, text], k) => bad.push(...differences(text, k % 5 === 0).map((d) => `${name}: ${d}`)));
    expect(bad.slice(0, 20)).toEqual([]);
  }, 120_000);

  it('gives the captures of index queries and of other queries as web-tree-sitter', () => {
    const text = fixtureTexts().slice(0, 60).map(([, t]) => t).join('\n') + '\ndef f(:\n  x = (1,\n';
    const tree = parsePython(text);
    try {
      const sources = [
        ['call', 'attribute', 'string', 'identifier', 'comment', 'keyword_argument'].map((t) => `(${t}) @${t}`).join('\n'),
        '(identifier) @identifier',
        '(call function: (attribute) @fn) @call',
        '((identifier) @id (#eq? @id "torch"))',
      ];
      for (const [k, source] of sources.entries()) {
        const q = new Query(tree.language, source);
        // the first two are answered from the mirror, the others by tree-sitter
        expect(simpleTypes(q, tree.language) !== null).toBe(k < 2);
        const mine = q.captures(tree.rootNode).map((c) => [c.name, c.patternIndex, c.node.id, c.node.startIndex]);
        const real = q.captures(realRootNode(tree)).map((c) => [c.name, c.patternIndex, c.node.id, c.node.startIndex]);
        expect(mine.length).toBeGreaterThan(0);
        expect(mine).toEqual(real);
        for (const c of q.captures(tree.rootNode)) expect(c.node).toBeInstanceOf(MirrorNode);
        q.delete();
      }
    } finally {
      tree.delete();
    }
  }, 60_000);

  it('interns handles, and an edit gives a new mirror', () => {
    const text = 'import torch\nx = torch.zeros(3).cuda()\n';
    const tree = parsePython(text);
    const call = tree.rootNode.descendantsOfType('call')[0];
    expect(call.parent?.children.includes(call)).toBe(true);
    expect(tree.rootNode).toBe(tree.rootNode);
    expect(call.childForFieldName('function')).toBe(call.childForFieldName('function'));
    const edited = text.replace('zeros(3)', 'zeros(30)');
    tree.edit(treeEditFor(text, text.indexOf('(3)') + 2, text.indexOf('(3)') + 2, '0'));
    const next = parsePython(edited, tree);
    try {
      expect(next.rootNode.descendantsOfType('call')[1].text).toBe('torch.zeros(30)');
      expect(differences(edited)).toEqual([]);
    } finally {
      tree.delete();
      next.delete();
    }
  });

  it('finds the descendant for a range as tree-sitter, for every node range and offset', () => {
    const texts = [...shapes.map(([, t]) => t), ...fixtureTexts().map(([, t]) => t), 'x = 1\n' + 'y = (2)\n'.repeat(200) + '\n\n# end\n'];
    const bad: string[] = [];
    let asked = 0;
    for (const text of texts) {
      const tree = parsePython(text);
      try {
        const real = realPreorder(tree);
        const mine = handlePreorder(tree.rootNode);
        const roots: [Node, Node][] = [[mine[0], real[0]], [mine[mine.length >> 1], real[real.length >> 1]], [mine[1] ?? mine[0], real[1] ?? real[0]]];
        const ranges: [number, number][] = [];
        for (const r of real) ranges.push([r.startIndex, r.endIndex], [r.startIndex, Math.max(r.startIndex, r.endIndex - 1)], [r.endIndex, r.endIndex]);
        for (let o = 0; o <= text.length; o += 7) ranges.push([o, o], [o, o + 3], [o + 3, o]);
        for (const [h, r] of roots) {
          for (const [s0, e0] of ranges) {
            asked++;
            const a = h.descendantForIndex(s0, e0);
            const b = r.descendantForIndex(s0, e0);
            if ((a?.id ?? null) !== (b?.id ?? null)) bad.push(`${JSON.stringify(text.slice(0, 30))} descendantForIndex(${s0}, ${e0}) from ${r.type}: ${a?.type} != ${b?.type}`);
            const c = h.namedDescendantForIndex(s0, e0);
            const d = r.namedDescendantForIndex(s0, e0);
            if ((c?.id ?? null) !== (d?.id ?? null)) bad.push(`${JSON.stringify(text.slice(0, 30))} namedDescendantForIndex(${s0}, ${e0}) from ${r.type}: ${c?.type} != ${d?.type}`);
          }
        }
      } finally {
        tree.delete();
      }
    }
    expect(asked).toBeGreaterThan(100_000);
    expect(bad.slice(0, 10)).toEqual([]);
  }, 300_000);

  /**
   * Released (the CLI's `releaseTree`): tree-sitter's tree is deleted once mirrored; what the mirror does not hold is
   * asked of the same text parsed again. Every such answer, as a preorder position, must be the kept tree's.
   */
  it('answers the same after its tree-sitter tree is released', () => {
    const pos = (n: Node | null | undefined) => (n ? (n as unknown as MirrorNode).i : null);
    const texts = [...shapes.map(([, t]) => t), ...fixtureTexts().slice(0, 40).map(([, t]) => t)];
    const queries = ['(call function: (attribute) @fn) @call', '((identifier) @id (#eq? @id "torch"))', '(ERROR) @e'];
    for (const text of texts) {
      const kept = parsePython(text);
      const released = parsePython(text);
      try {
        const a = handlePreorder(kept.rootNode);
        releaseTree(released);
        expect(mirrorOf(released).isReleased).toBe(true);
        // the tree object is gone in tree-sitter (its address is 0), its handles answer on
        expect((released as unknown as { 0: number })[0]).toBe(0);
        const b = handlePreorder(released.rootNode);
        expect(b.length).toBe(a.length);
        const bad: string[] = [];
        const same = (what: string, x: unknown, y: unknown) => {
          if (JSON.stringify(x) !== JSON.stringify(y)) bad.push(`${what}: ${JSON.stringify(x)} != ${JSON.stringify(y)}`);
        };
        for (let i = 0; i < a.length; i++) {
          const [x, y] = [a[i], b[i]];
          same(`${i} id kept`, y.id, mirrorOf(released).ids[i]);
          same(`${i} nextSibling`, pos(y.nextSibling), pos(x.nextSibling));
          same(`${i} previousNamedSibling`, pos(y.previousNamedSibling), pos(x.previousNamedSibling));
          same(`${i} isExtra`, y.isExtra, x.isExtra);
          same(`${i} grammarType`, y.grammarType, x.grammarType);
          if (x.type === 'match_statement') same(`${i} alternative`, y.childrenForFieldName('alternative').map(pos), x.childrenForFieldName('alternative').map(pos));
          const end = Math.max(x.startIndex, x.endIndex - 1);
          same(`${i} descendantForIndex`, pos(y.descendantForIndex(x.startIndex, end)), pos(x.descendantForIndex(x.startIndex, end)));
          same(`${i} namedDescendantForIndex`, pos(released.rootNode.namedDescendantForIndex(x.startIndex, end)), pos(kept.rootNode.namedDescendantForIndex(x.startIndex, end)));
        }
        same('toString', released.rootNode.toString(), kept.rootNode.toString());
        for (const source of queries) {
          const q = new Query(kept.language, source);
          same(source, q.captures(released.rootNode).map((c) => [c.name, pos(c.node)]), q.captures(kept.rootNode).map((c) => [c.name, pos(c.node)]));
          q.delete();
        }
        const c1 = released.walk();
        const c2 = kept.walk();
        const types: [string, string][] = [];
        do types.push([c1.nodeType, c2.nodeType]);
        while (c1.gotoFirstChild() && c2.gotoFirstChild());
        c1.delete();
        c2.delete();
        for (const [t1, t2] of types) same('walk', t1, t2);
        expect(bad.slice(0, 10)).toEqual([]);
      } finally {
        kept.delete();
        released.delete();
      }
    }
  }, 120_000);

  it('frees the WebAssembly memory of a released tree, and of the tree read again on delete', () => {
    const text = 'import torch\n' + Array.from({ length: 4000 }, (_, i) => `x${i} = f(t.cuda(), ${i})`).join('\n') + '\n';
    const before = wasmHeapInUse();
    const tree = parsePython(text);
    const parsed = wasmHeapInUse() - before;
    expect(parsed).toBeGreaterThan(2_000_000);
    releaseTree(tree);
    expect(wasmHeapInUse() - before).toBeLessThan(parsed / 10);
    // the handles still answer from the mirror
    expect(tree.rootNode.namedChildCount).toBe(4001);
    expect(tree.rootNode.namedChild(4000)?.text).toBe('x3999 = f(t.cuda(), 3999)');
    // answered from the mirror: no tree-sitter tree needed
    expect(tree.rootNode.descendantForIndex(text.indexOf('t.cuda'))?.text).toBe('t');
    expect(wasmHeapInUse() - before).toBeLessThan(parsed / 10);
    // a fallback (what the mirror does not hold) reads the text again: another tree in WebAssembly ...
    expect(tree.rootNode.namedChild(5)!.isExtra).toBe(false);
    expect(wasmHeapInUse() - before).toBeGreaterThan(parsed / 2);
    // ... freed with the tree; an edit of a released tree is refused (nothing to re-parse from)
    expect(() => tree.edit(treeEditFor(text, 0, 0, ' '))).toThrow(/released/);
    tree.delete();
    expect(wasmHeapInUse() - before).toBeLessThan(parsed / 10);
  }, 60_000);
});
