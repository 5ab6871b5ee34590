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

interface TreeMemo {
  parent: Map<number, Node | null>;
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
    m = { parent: new Map(), field: new Map(), fields: new Map(), named: new Map(), children: new Map(), end: new Map() };
    holder[MEMO] = m;
  }
  return m;
}

let installed = false;

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
    get(this: Node) {
      const m = memoOf(this.tree).parent;
      let p = m.get(this.id);
      if (p === undefined) m.set(this.id, (p = parentGet.call(this)));
      return p;
    },
  });
  Object.defineProperty(proto, 'namedChildren', {
    configurable: true,
    get(this: Node) {
      const m = memoOf(this.tree).named;
      let c = m.get(this.id);
      if (c === undefined) m.set(this.id, (c = namedGet.call(this)));
      return c;
    },
  });
  Object.defineProperty(proto, 'children', {
    configurable: true,
    get(this: Node) {
      const m = memoOf(this.tree).children;
      let c = m.get(this.id);
      if (c === undefined) m.set(this.id, (c = childrenGet.call(this)));
      return c;
    },
  });
  Object.defineProperty(proto, 'endIndex', {
    configurable: true,
    get(this: Node) {
      const m = memoOf(this.tree).end;
      let e = m.get(this.id);
      if (e === undefined) m.set(this.id, (e = endGet.call(this)));
      return e;
    },
  });
  proto.childForFieldName = function (this: Node, fieldName: string): Node | null {
    const m = memoOf(this.tree).field;
    let byName = m.get(this.id);
    if (!byName) m.set(this.id, (byName = new Map()));
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
