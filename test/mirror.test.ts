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
import { parsePython, treeEditFor, type Node, type Tree } from '../src/core/parse';
import { MirrorNode, realRootNode, simpleTypes } from '../src/core/mirror';

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
});
