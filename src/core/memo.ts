/**
 * A memo per node of one tree, for answers most nodes of a file get (an identifier's resolved name, a node's enclosing
 * function, whether it sits in an XLA-aware branch).
 *
 * Those memos were `Map<number, T>` keyed by node id: a Map entry is about 28 bytes (V8's OrderedHashMap: key, value and
 * chain slots and its bucket), and a 1 MB torch file's heap held 20 MB of Map tables after its analysis (heap snapshot
 * of the bench's `torch code, 1 MB` shape: Semantics.resolveMemo and the enclosing-function memo 3.7 MB each, the
 * XLA-aware memo 1.8 MB, ...). Here a node of the tree's mirror (src/core/mirror.ts) is its preorder index into one
 * typed array (1 to 4 bytes a node), holding the number of the answer in a table of the distinct
 * answers (a memo's answers repeat: a few names, one `{ ancestor, child }` per path walked, two booleans), once the
 * memo holds answers for a sixteenth of the nodes (before, a Map by preorder index: a rare question's memo stays small). Any other
 * node (no mirror: TPU_READY_NO_MIRROR, or a node of another tree) is kept by id in a Map, as before.
 */
import type { Node, Tree } from 'web-tree-sitter';
import { MirrorNode, mirrorIfInstalled, type Mirror } from './mirror';

export class NodeMemo<T> {
  /**
   * Per preorder index: 0 for no answer yet, k for `values[k - 1]`; once `sparse` outgrows a sixteenth of the nodes. One
   * byte a node while there are at most 255 distinct answers (a yes/no memo), two up to 65,535, then four.
   */
  private codes: Uint8Array | Uint16Array | Int32Array | null = null;
  private readonly values: T[] = [];
  private readonly codeOf = new Map<T, number>();
  /** Answers by preorder index while they are few (a memo of a rare question: the Int32Array would be mostly empty). */
  private sparse: Map<number, T> | null = null;
  private byId: Map<number, T> | null = null;
  private readonly mirror: Mirror | null;

  constructor(tree: Tree) {
    this.mirror = mirrorIfInstalled(tree);
  }

  /** The preorder index of a node of this memo's mirror, else -1. */
  private index(node: Node): number {
    const h = node as unknown as MirrorNode;
    return h instanceof MirrorNode && h.m === this.mirror ? h.i : -1;
  }

  get(node: Node): T | undefined {
    const i = this.index(node);
    if (i < 0) return this.byId?.get(node.id);
    if (this.codes) {
      const c = this.codes[i];
      return c ? this.values[c - 1] : undefined;
    }
    return this.sparse?.get(i);
  }

  /** Remembers `value` for `node` (`undefined` is no answer: `get` answers it for a node never set). */
  set(node: Node, value: T): void {
    const i = this.index(node);
    if (i < 0) (this.byId ??= new Map()).set(node.id, value);
    else if (this.codes) this.store(i, this.code(value));
    else {
      const sparse = (this.sparse ??= new Map());
      sparse.set(i, value);
      // a Map entry is 28 bytes or more (its table doubles), a code 1 to 4: dense from a sixteenth of the nodes on
      if (sparse.size > this.mirror!.n >> 4) {
        this.sparse = null;
        for (const [k, v] of sparse) this.store(k, this.code(v));
      }
    }
  }

  private store(i: number, c: number): void {
    let codes = this.codes;
    if (!codes || c > (codes instanceof Uint8Array ? 0xff : codes instanceof Uint16Array ? 0xffff : 0x7fffffff)) {
      const n = this.mirror!.n;
      const wider = c <= 0xff ? new Uint8Array(n) : c <= 0xffff ? new Uint16Array(n) : new Int32Array(n);
      if (codes) wider.set(codes);
      this.codes = codes = wider;
    }
    codes[i] = c;
  }

  private code(value: T): number {
    let c = this.codeOf.get(value);
    if (c === undefined) {
      this.values.push(value);
      this.codeOf.set(value, (c = this.values.length));
    }
    return c;
  }
}
