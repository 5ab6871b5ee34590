/**
 * Memoizes web-tree-sitter node navigation per tree.
 *
 * Every `Node` getter and method crosses into WebAssembly (marshal the node, call, unmarshal a new
 * `Node` object), and rules ask the same questions of the same nodes many times
 * (`childForFieldName('function')`, `.parent`, `.type`). The answers never change while a tree is
 * unedited, so they are cached per tree and dropped when the tree is edited. Cached navigation
 * also returns the same `Node` objects, so web-tree-sitter's own per-object child caches are
 * reused. Results are identical; only the number of WebAssembly calls changes
 * (TPU_READY_NO_NODE_CACHE=1 turns it off, to compare in a benchmark).
 */
import { Node, Tree } from 'web-tree-sitter';
import { budgetTick } from './budget';

interface TreeMemo {
  parent: Map<number, Node | null>;
  /** Milliseconds spent in parent lookups that crossed into WebAssembly (each O(depth) there: tree-sitter nodes keep no parent link). */
  parentMs: number;
  /** What indexing every parent is expected to cost (ms, from the tree's node count): set on the first lookup. */
  parentIndexMs?: number;
  /** Parent lookups that crossed into WebAssembly. */
  parentMisses: number;
  /** child id → parent node, for the whole tree: built by one cursor walk once lookups add up. */
  parentIndex?: Map<number, Node>;
  field: Map<number, Map<string, Node | null>>;
  fields: Map<number, Map<string, (Node | null)[]>>;
  named: Map<number, (Node | null)[]>;
  children: Map<number, (Node | null)[]>;
  end: Map<number, number>;
}

/** The memo lives on the tree object itself (a symbol-keyed property: cheaper than a WeakMap lookup). */
const MEMO = Symbol('tpu-ready.nodeMemo');
type MemoHolder = Tree & { [MEMO]?: TreeMemo };

function memoOf(tree: Tree): TreeMemo {
  const holder = tree as MemoHolder;
  let m = holder[MEMO];
  if (!m) {
    m = { parent: new Map(), parentMs: 0, parentMisses: 0, field: new Map(), fields: new Map(), named: new Map(), children: new Map(), end: new Map() };
    holder[MEMO] = m;
  }
  return m;
}

/**
 * The same answers are also kept on each `Node` object (a property read is far cheaper than a Map
 * lookup by id); the per-tree maps share them between objects that stand for the same node. Edits
 * drop the maps; Node objects of an edited tree are never reused (the engine re-reads the tree).
 */
type CachedNode = Node & {
  __parent?: Node | null;
  __named?: (Node | null)[];
  __children?: (Node | null)[];
  __end?: number;
  __fields?: Map<string, Node | null>;
};

let installed = false;

/**
 * One O(n) walk indexes every parent once single lookups have cost what the walk would (a deep tree made them
 * O(n·depth)); before that, lookups cross into WebAssembly one by one. Rules ask for the parents of about a quarter
 * of a typical file's nodes, each a short walk down from the root, so most files never pay for the index (measured
 * on the bench's torch-dense corpus: indexing after 32 lookups cost as much as parsing). Ski rental: at most twice the
 * cheaper of the two. The answers are the same either way.
 */
const PARENT_INDEX_MS_PER_NODE = 0.002;
/** Lookups before the index is considered at all. */
const PARENT_INDEX_AFTER = 32;
/**
 * A module with more top-level statements than this gets the index after PARENT_INDEX_AFTER lookups: tree-sitter finds
 * a parent by scanning each ancestor's children from the first, so every lookup in a long flat module scans its
 * top level (measured on the bench's 5,000-line file: lookups one by one cost 25% more CPU than indexing early).
 */
const FLAT_MODULE_STATEMENTS = 64;

function buildParentIndex(tree: Tree): Map<number, Node> {
  const index = new Map<number, Node>();
  const cursor = tree.walk();
  const stack: Node[] = [];
  try {
    for (;;) {
      if (cursor.gotoFirstChild()) {
        // the parent (the node the cursor was on) is created once, when its children are visited
        cursor.gotoParent();
        const parent = cursor.currentNode;
        cursor.gotoFirstChild();
        stack.push(parent);
        index.set(cursor.nodeId, parent);
        continue;
      }
      for (;;) {
        if (cursor.gotoNextSibling()) {
          index.set(cursor.nodeId, stack[stack.length - 1]);
          break;
        }
        if (!cursor.gotoParent()) return index;
        stack.pop();
      }
    }
  } finally {
    cursor.delete();
  }
}

type Getter<T> = (this: Node) => T;

function getter<T>(proto: object, name: string): Getter<T> {
  const d = Object.getOwnPropertyDescriptor(proto, name);
  if (!d?.get) throw new Error(`web-tree-sitter Node has no getter ${name}`);
  return d.get as Getter<T>;
}

export function installNodeCache(): void {
  if (installed) return;
  installed = true;
  const proto = Node.prototype as unknown as Record<string, unknown>;
  const typeGet = getter<string>(proto, 'type');
  const parentGet = getter<Node | null>(proto, 'parent');
  const namedGet = getter<(Node | null)[]>(proto, 'namedChildren');
  const childrenGet = getter<(Node | null)[]>(proto, 'children');
  const endGet = getter<number>(proto, 'endIndex');
  const childForFieldName = proto.childForFieldName as (this: Node, f: string) => Node | null;
  const childrenForFieldName = proto.childrenForFieldName as (this: Node, f: string) => (Node | null)[];
  const edit = (Tree.prototype as unknown as Record<string, (this: Tree, ...a: unknown[]) => void>).edit;

  Object.defineProperty(proto, 'type', {
    configurable: true,
    get(this: Node & { __type?: string }) {
      return this.__type ?? (this.__type = typeGet.call(this));
    },
  });
  Object.defineProperty(proto, 'parent', {
    configurable: true,
    get(this: CachedNode) {
      budgetTick();
      let p = this.__parent;
      if (p !== undefined) return p;
      const memo = memoOf(this.tree);
      const m = memo.parent;
      p = m.get(this.id);
      if (p === undefined) {
        if (memo.parentIndex) p = memo.parentIndex.get(this.id) ?? (this.id === this.tree.rootNode.id ? null : parentGet.call(this));
        else {
          const t0 = performance.now();
          p = parentGet.call(this);
          memo.parentMs += performance.now() - t0;
          if (++memo.parentMisses === PARENT_INDEX_AFTER && this.tree.rootNode.childCount > FLAT_MODULE_STATEMENTS) memo.parentIndexMs = 0;
          memo.parentIndexMs ??= this.tree.rootNode.descendantCount * PARENT_INDEX_MS_PER_NODE;
          if (memo.parentMs > memo.parentIndexMs && memo.parentMisses >= PARENT_INDEX_AFTER) memo.parentIndex = buildParentIndex(this.tree);
        }
        m.set(this.id, p);
      }
      return (this.__parent = p);
    },
  });
  Object.defineProperty(proto, 'namedChildren', {
    configurable: true,
    get(this: CachedNode) {
      budgetTick();
      let c = this.__named;
      if (c !== undefined) return c;
      const m = memoOf(this.tree).named;
      c = m.get(this.id);
      if (c === undefined) m.set(this.id, (c = namedGet.call(this)));
      return (this.__named = c);
    },
  });
  Object.defineProperty(proto, 'children', {
    configurable: true,
    get(this: CachedNode) {
      budgetTick();
      let c = this.__children;
      if (c !== undefined) return c;
      const m = memoOf(this.tree).children;
      c = m.get(this.id);
      if (c === undefined) m.set(this.id, (c = childrenGet.call(this)));
      return (this.__children = c);
    },
  });
  Object.defineProperty(proto, 'endIndex', {
    configurable: true,
    get(this: CachedNode) {
      let e = this.__end;
      if (e !== undefined) return e;
      const m = memoOf(this.tree).end;
      e = m.get(this.id);
      if (e === undefined) m.set(this.id, (e = endGet.call(this)));
      return (this.__end = e);
    },
  });
  proto.childForFieldName = function (this: CachedNode, fieldName: string): Node | null {
    budgetTick();
    let byName = this.__fields;
    if (!byName) {
      const m = memoOf(this.tree).field;
      byName = m.get(this.id);
      if (!byName) m.set(this.id, (byName = new Map()));
      this.__fields = byName;
    }
    let c = byName.get(fieldName);
    if (c === undefined) byName.set(fieldName, (c = childForFieldName.call(this, fieldName)));
    return c;
  };
  proto.childrenForFieldName = function (this: Node, fieldName: string): (Node | null)[] {
    const m = memoOf(this.tree).fields;
    let byName = m.get(this.id);
    if (!byName) m.set(this.id, (byName = new Map()));
    let c = byName.get(fieldName);
    if (c === undefined) byName.set(fieldName, (c = childrenForFieldName.call(this, fieldName)));
    return c;
  };
  // an edited tree's positions change: forget what was cached for it
  (Tree.prototype as unknown as Record<string, unknown>).edit = function (this: Tree, ...args: unknown[]) {
    delete (this as MemoHolder)[MEMO];
    return edit.apply(this, args);
  };
}
