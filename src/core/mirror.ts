/**
 * A compact mirror of a tree-sitter tree, and light node handles over it.
 *
 * web-tree-sitter materialises a JS `Node` for every node a rule touches (about 300 bytes each with its
 * `startPosition` object, its indexed `[0]` slot's elements store and the node cache's properties), and every
 * getter crosses into WebAssembly. Measured on 60 KB of short lines (heap snapshot): 60,000 `Node` objects and
 * their element stores, property arrays and cached child arrays were 17 MB of the 26 MB an analysis retained.
 *
 * The mirror reads the tree once with one TreeCursor walk into typed arrays (preorder: type id, flags, field id,
 * start, end, tree-sitter id, parent, end of the subtree: 24 bytes a node, the field id in one byte while the grammar
 * has fewer than 256 fields; a previous sibling is found from the parent, see `prevSibling`; before, 29 bytes with a
 * two-byte field id and an array of previous siblings) and answers the
 * `Node` API the rules use from them. A handle is two fields (the mirror and the preorder index), interned per
 * node, so a node is always the same object. Indices are web-tree-sitter's: UTF-16 code units for a string input
 * (its binding halves tree-sitter's byte offsets), rows count "\n" only, columns are UTF-16 units from the row
 * start. `.id` is tree-sitter's own node id (unique among live trees, stable across an incremental re-parse).
 *
 * What the mirror does not hold (s-expressions, cursors, `isExtra`, point-range queries) is asked of the real
 * node, found from the root by child positions, and the answer mapped back to handles. `test/mirror.test.ts`
 * compares every answer with web-tree-sitter's on fixtures, broken code, CRLF and non-ASCII text.
 * TPU_READY_NO_MIRROR=1 turns it off (real nodes, as before).
 */
import { Query, Tree, type Node, type Language, type Point } from 'web-tree-sitter';
import { budgetTick, checkBudget } from './budget';
import { LineIndex } from './source';

const NAMED = 1;
const MISSING = 2;
const HAS_ERROR = 4;
const ERROR_SYMBOL = 65535;
/** Child lists longer than this are kept per node (see Mirror.childList). */
const LONG_LIST = 16;

export class Mirror {
  readonly n: number;
  readonly typeId: Uint16Array;
  readonly flags: Uint8Array;
  /** Field id per node: one byte while the language has fewer than 256 fields (tree-sitter-python: 30 or so). */
  readonly field: Uint8Array | Uint16Array;
  readonly start: Int32Array;
  readonly end: Int32Array;
  readonly ids: Int32Array;
  readonly parent: Int32Array;
  /** Preorder index just past the node's last descendant. */
  readonly descEnd: Int32Array;
  readonly text: string;
  readonly types: string[];
  readonly language: Language;
  private readonly handles: (MirrorNode | undefined)[];
  /**
   * The node type whose fields tree-sitter finds through a visible alias of a hidden rule (ts_node_child_by_field_id
   * follows `inherited` field map entries into the child): in tree-sitter-python only `match_statement`, whose
   * `alternative` case clauses sit in `alias($._match_block, $.block)` (grammar.js: match_statement, _match_block).
   * Its field lookups go to the real node; test/mirror.test.ts compares every field of every node.
   */
  readonly inheritsFields: number;
  private lines?: LineIndex;
  /** Field name -> field id of the language (fieldTable, held here: one lookup less per childForFieldName). */
  private readonly fieldIds: Map<string, number>;

  constructor(readonly tree: Tree, realRoot: Node) {
    const n = realRoot.descendantCount;
    this.n = n;
    this.language = tree.language;
    this.types = tree.language.types;
    this.text = (tree as unknown as { textCallback: (i: number) => string | null }).textCallback(0) ?? '';
    this.typeId = new Uint16Array(n);
    this.flags = new Uint8Array(n);
    this.field = tree.language.fields.length <= 0xff ? new Uint8Array(n) : new Uint16Array(n);
    this.start = new Int32Array(n);
    this.end = new Int32Array(n);
    this.ids = new Int32Array(n);
    this.parent = new Int32Array(n);
    this.descEnd = new Int32Array(n);
    this.handles = new Array(n);
    this.inheritsFields = tree.language.idForNodeType('match_statement', true) ?? -1;
    this.fieldIds = fieldTable(tree.language);
    const named = namedTable(tree.language);
    const anyError = realRoot.hasError;
    const raw = rawApi;
    const cursor = realRoot.walk();
    // the open ancestors (preorder indices)
    const stack: number[] = [];
    let i = 0;
    try {
      if (raw) i = this.rawWalk(raw, (tree as unknown as { 0: number })[0], anyError, named, stack);
      else {
        walk: for (;;) {
          // a deep file's walk is long (several WebAssembly calls a node): the budget can stop it
          budgetTick();
          const t = cursor.nodeTypeId;
          const depth = stack.length;
          this.typeId[i] = t;
          this.ids[i] = cursor.nodeId;
          this.start[i] = cursor.startIndex;
          this.end[i] = cursor.endIndex;
          this.field[i] = depth ? cursor.currentFieldId : 0;
          let f = t === ERROR_SYMBOL || named[t] ? NAMED : 0;
          // MISSING nodes exist only in a tree with an error: no WebAssembly call per node otherwise
          if (t === ERROR_SYMBOL) f |= HAS_ERROR;
          else if (anyError && cursor.nodeIsMissing) f |= MISSING | HAS_ERROR;
          this.flags[i] = f;
          this.parent[i] = depth ? stack[depth - 1] : -1;
          i++;
          if (cursor.gotoFirstChild()) {
            stack.push(i - 1);
            continue;
          }
          this.descEnd[i - 1] = i;
          for (;;) {
            if (cursor.gotoNextSibling()) continue walk;
            if (!cursor.gotoParent()) break walk;
            this.descEnd[stack.pop()!] = i;
          }
        }
      }
    } finally {
      // the raw walk moved the cursor in tree-sitter's transfer buffer only: its JS copy takes the final state
      // (the cursor's stack may have been reallocated), so that delete() frees what tree-sitter holds
      if (raw) raw.syncCursor(cursor);
      cursor.delete();
    }
    if (i !== n) throw new Error(`tpu-ready: tree mirror saw ${i} nodes, tree-sitter counts ${n}`);
    // a subtree has an error when any node in it is an ERROR or MISSING node (tree-sitter's error cost > 0)
    if (anyError) for (let k = n - 1; k > 0; k--) if (this.flags[k] & HAS_ERROR) this.flags[this.parent[k]] |= HAS_ERROR;
    checkBudget();
  }

  /**
   * The walk of the constructor, calling tree-sitter's cursor functions directly (src/core/parse.ts rawCursorApi):
   * web-tree-sitter's TreeCursor methods write the cursor's four words into the transfer buffer before every call
   * and read them back after each move (eight DataView accesses a call, about half the walk's time). Between
   * these calls nothing else uses the transfer buffer, so the cursor stays there: the same calls, the same
   * answers (test/mirror.test.ts compares every node with web-tree-sitter's). Returns the number of nodes seen.
   */
  private rawWalk(raw: RawCursorApi, tp: number, anyError: boolean, named: Uint8Array, stack: number[]): number {
    const { typeId: typeOf, nodeId, startIndex, endIndex, fieldId, isMissing, firstChild, nextSibling, parent } = raw;
    const typeIds = this.typeId, flags = this.flags, fields = this.field, starts = this.start, ends = this.end;
    const ids = this.ids, parents = this.parent, descEnd = this.descEnd;
    let i = 0;
    let depth = 0;
    for (;;) {
      budgetTick();
      const t = typeOf(tp);
      typeIds[i] = t;
      ids[i] = nodeId(tp);
      starts[i] = startIndex(tp);
      ends[i] = endIndex(tp);
      let f = t === ERROR_SYMBOL || named[t] ? NAMED : 0;
      if (t === ERROR_SYMBOL) f |= HAS_ERROR;
      else if (anyError && isMissing(tp)) f |= MISSING | HAS_ERROR;
      flags[i] = f;
      if (depth) {
        fields[i] = fieldId(tp);
        parents[i] = stack[depth - 1];
      } else {
        fields[i] = 0;
        parents[i] = -1;
      }
      i++;
      if (firstChild(tp)) {
        stack[depth] = i - 1;
        depth++;
        continue;
      }
      descEnd[i - 1] = i;
      for (;;) {
        if (nextSibling(tp)) break;
        if (!parent(tp)) return i;
        depth--;
        descEnd[stack[depth]] = i;
      }
    }
  }

  handle(i: number): MirrorNode {
    return (this.handles[i] ??= new MirrorNode(this, i));
  }

  /**
   * The children (or named children) of node i. Long lists are kept (rules ask for the module's statements once
   * per finding: rebuilding 20,000 handles each time was quadratic); short ones are rebuilt, cheaper than a cache
   * entry. Like web-tree-sitter's own `children`, a kept list is the same array each time.
   */
  childList(i: number, named: boolean): Node[] {
    const keep = this.descEnd[i] - i > LONG_LIST;
    const cache = named ? this.namedLists : this.lists;
    if (keep) {
      const hit = cache.get(i);
      if (hit) return hit;
    }
    const out: Node[] = [];
    for (let k = this.firstChild(i); k >= 0; k = this.next(k)) if (!named || this.flags[k] & NAMED) out.push(this.handle(k) as unknown as Node);
    if (keep && out.length > LONG_LIST) cache.set(i, out);
    return out;
  }
  private readonly lists = new Map<number, Node[]>();
  private readonly namedLists = new Map<number, Node[]>();

  orNull(i: number): Node | null {
    return i < 0 ? null : (this.handle(i) as unknown as Node);
  }

  /** Next sibling's index, or -1. */
  next(i: number): number {
    const p = this.parent[i];
    return p >= 0 && this.descEnd[i] < this.descEnd[p] ? this.descEnd[i] : -1;
  }

  firstChild(i: number): number {
    return this.descEnd[i] > i + 1 ? i + 1 : -1;
  }

  /**
   * Previous sibling's index, or -1 (no array of them: 4 bytes a node less). In preorder the node just before i is the
   * last descendant of i's previous sibling (when i is not the first child): its ancestors lead up to that sibling, a
   * short walk in most trees. A deep previous sibling (nested calls: thousands of levels) is found among the parent's
   * children instead: a few hops along subtree ends, or a binary search in the kept list of a long one (childList).
   */
  prevSibling(i: number): number {
    const p = this.parent[i];
    if (p < 0 || i === p + 1) return -1;
    const parent = this.parent;
    let k = i - 1;
    for (let d = 0; d < 32; d++) {
      const q = parent[k];
      if (q === p) return k;
      k = q;
    }
    let c = p + 1;
    for (let hops = 0; hops < LONG_LIST; hops++) {
      const e = this.descEnd[c];
      if (e === i) return c;
      c = e;
    }
    const kids = this.childList(p, false) as unknown as MirrorNode[];
    let lo = 0;
    let hi = kids.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (kids[mid].i < i) lo = mid;
      else hi = mid - 1;
    }
    return kids[lo].i;
  }

  point(offset: number): Point {
    const li = (this.lines ??= new LineIndex(this.text));
    const row = li.lineOf(offset);
    return { row, column: offset - li.starts[row] };
  }

  /** The handle of a real node of this tree (found by start offset and id), or null when it is not in the mirror. */
  fromReal(node: Node | null | undefined): Node | null {
    if (!node) return null;
    if (node instanceof MirrorNode) return node as unknown as Node;
    const id = node.id;
    const s = node.startIndex;
    // a node of the tree read again after a release carries that tree's ids
    const ids = this.revived && node.tree === this.revived ? this.revivedIds! : this.ids;
    if (ids[0] === id) return this.orNull(0);
    // preorder starts never decrease after the root: binary search, then the run of equal starts
    let lo = 1;
    let hi = this.n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.start[mid] < s) lo = mid + 1;
      else hi = mid;
    }
    for (let k = lo; k < this.n && this.start[k] === s; k++) if (ids[k] === id) return this.orNull(k);
    for (let k = 0; k < this.n; k++) if (ids[k] === id) return this.orNull(k);
    return null;
  }

  /** The real web-tree-sitter node of index i (from the root, by child positions: O(depth) WebAssembly calls). */
  real(i: number): Node {
    const path: number[] = [];
    for (let k = i; this.parent[k] >= 0; k = this.parent[k]) {
      let pos = 0;
      for (let s = this.parent[k] + 1; s !== k; s = this.descEnd[s]) pos++;
      path.push(pos);
    }
    let node = realRootOf(this.realTree());
    for (let d = path.length - 1; d >= 0; d--) node = node.child(path[d])!;
    return node;
  }

  /**
   * A real tree of this text: the parsed one, or after `release()` the same text parsed again (a full parse of the same
   * text by the same grammar: the same nodes in the same order, only tree-sitter's node ids differ, kept in `revivedIds`).
   */
  realTree(): Tree {
    if (!this.released) return this.tree;
    if (!this.revived) {
      if (!reparse) throw new Error('tpu-ready: the tree was released and no parser is installed to read it again');
      const t = reparse(this.text);
      const ids = new Int32Array(this.n);
      const cursor = realRootOf(t).walk();
      let k = 0;
      try {
        walk: for (;;) {
          budgetTick();
          if (k === this.n) {
            k++;
            break;
          }
          ids[k++] = cursor.nodeId;
          if (cursor.gotoFirstChild()) continue;
          while (!cursor.gotoNextSibling()) if (!cursor.gotoParent()) break walk;
        }
      } finally {
        cursor.delete();
      }
      if (k !== this.n) {
        t.delete();
        throw new Error(`tpu-ready: the tree read again has ${k} nodes, the mirror ${this.n}`);
      }
      this.revivedIds = ids;
      this.revived = t;
    }
    return this.revived;
  }

  /** Released: tree-sitter's tree was deleted once mirrored (`releaseTree`); a fallback reads the text again. */
  private released = false;
  private revived: Tree | null = null;
  private revivedIds: Int32Array | null = null;

  /**
   * Frees tree-sitter's tree (its WebAssembly memory: 34-131 bytes per source byte) and keeps answering from the mirror:
   * what the mirror does not hold (see the header) parses the text again on first need. For a host that never
   * re-parses incrementally (the CLI); the language server keeps its trees for incremental parses.
   */
  release(): void {
    if (this.released) return;
    this.released = true;
    deleteReal(this.tree);
  }

  /** Frees the tree read again after a release (the tree's own `delete()`). */
  dispose(): void {
    this.revived?.delete();
    this.revived = null;
    this.revivedIds = null;
  }

  get isReleased(): boolean {
    return this.released;
  }

  /**
   * tree-sitter's ts_node__descendant_for_byte_range (lib/src/node.c) over the mirror: from node i, go into the first
   * child that ends at or after `end`, ends after `start` (an empty child: at or after it) and starts at or before
   * `start`, while there is one; the answer is the last node gone into (with `named`, the last named one). The walk
   * goes over visible children where tree-sitter's iterator also enters hidden nodes: the same nodes are tested in the
   * same order, and a hidden node that contains the range holds every visible child that can. The index of the answer,
   * -1 for none (start after end), or -2 where the real node must answer: a subtree with an error (ERROR nodes keep
   * hidden children of their own) or a negative offset. A long child list (a module's statements) is entered by a
   * binary search on the children's ends, which never decrease. test/mirror.test.ts compares every node's range.
   */
  descendantFor(i: number, start: number, end: number, named: boolean): number {
    if (this.flags[i] & HAS_ERROR || start < 0 || end < 0) return -2;
    if (start > end) return -1;
    let node = i;
    let last = i;
    for (let descended = true; descended; ) {
      descended = false;
      budgetTick();
      let k = this.firstChild(node);
      if (this.descEnd[node] - node > LONG_LIST * 4) {
        const kids = this.childList(node, false) as unknown as MirrorNode[];
        let lo = 0;
        let hi = kids.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (this.end[kids[mid].i] < end) lo = mid + 1;
          else hi = mid;
        }
        k = lo < kids.length ? kids[lo].i : -1;
      }
      for (; k >= 0; k = this.next(k)) {
        const ce = this.end[k];
        if (ce < end) continue;
        const cs = this.start[k];
        if (cs === ce ? ce < start : ce <= start) continue;
        if (start < cs) break;
        node = k;
        if (!named || this.flags[k] & NAMED) last = k;
        descended = true;
        break;
      }
    }
    return last;
  }

  fieldId(name: string): number {
    return this.fieldIds.get(name) ?? -1;
  }
}

/** Field name -> field id, once per language (a linear `fields.indexOf` per `childForFieldName` was 3.9% of a 5,000-line analysis). */
const fieldTables = new WeakMap<Language, Map<string, number>>();
function fieldTable(lang: Language): Map<string, number> {
  let t = fieldTables.get(lang);
  if (!t) {
    t = new Map();
    lang.fields.forEach((name, id) => {
      if (name !== null && !t!.has(name)) t!.set(name, id);
    });
    fieldTables.set(lang, t);
  }
  return t;
}

const namedTables = new WeakMap<Language, Uint8Array>();
function namedTable(lang: Language): Uint8Array {
  let t = namedTables.get(lang);
  if (!t) {
    t = new Uint8Array(lang.types.length);
    for (let i = 0; i < t.length; i++) t[i] = lang.nodeTypeIsNamed(i) ? 1 : 0;
    namedTables.set(lang, t);
  }
  return t;
}

/** A node of a mirrored tree: the subset of web-tree-sitter's `Node` the rules use, answered from the mirror. */
export class MirrorNode {
  /**
   * What src/core/semantics.ts remembers of this node when it is a call (its callee, method name and split arguments:
   * `callMemo`). Answers of the tree alone, so one slot serves every analysis of the tree. Rules ask them of the same
   * calls hundreds of thousands of times an analysis; a WeakMap or a sparse NodeMemo lookup per question was about 9%
   * of a re-analysis of the bench's 5,000-line file (CPU profile), a field read is one load. Set in the constructor so
   * every handle has the same shape.
   */
  memo: unknown = undefined;
  constructor(readonly m: Mirror, readonly i: number) {}

  get id(): number {
    return this.m.ids[this.i];
  }
  get tree(): Tree {
    return this.m.tree;
  }
  get typeId(): number {
    return this.m.typeId[this.i];
  }
  get type(): string {
    return this.m.types[this.m.typeId[this.i]] || 'ERROR';
  }
  get grammarId(): number {
    return this.m.real(this.i).grammarId;
  }
  get grammarType(): string {
    return this.m.real(this.i).grammarType;
  }
  get startIndex(): number {
    return this.m.start[this.i];
  }
  get endIndex(): number {
    return this.m.end[this.i];
  }
  get startPosition(): Point {
    return this.m.point(this.m.start[this.i]);
  }
  get endPosition(): Point {
    return this.m.point(this.m.end[this.i]);
  }
  get text(): string {
    return this.m.text.slice(this.m.start[this.i], this.m.end[this.i]);
  }
  get isNamed(): boolean {
    return (this.m.flags[this.i] & NAMED) !== 0;
  }
  get isMissing(): boolean {
    return (this.m.flags[this.i] & MISSING) !== 0;
  }
  get isError(): boolean {
    return this.m.typeId[this.i] === ERROR_SYMBOL;
  }
  get hasError(): boolean {
    return (this.m.flags[this.i] & HAS_ERROR) !== 0;
  }
  get isExtra(): boolean {
    return this.m.real(this.i).isExtra;
  }
  get hasChanges(): boolean {
    return this.m.real(this.i).hasChanges;
  }
  get parseState(): number {
    return this.m.real(this.i).parseState;
  }
  get nextParseState(): number {
    return this.m.real(this.i).nextParseState;
  }
  equals(other: Node): boolean {
    return this.tree === other.tree && this.id === other.id;
  }

  get parent(): Node | null {
    budgetTick();
    return this.m.orNull(this.m.parent[this.i]);
  }
  get childCount(): number {
    let c = 0;
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) c++;
    return c;
  }
  get namedChildCount(): number {
    let c = 0;
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) if (this.m.flags[k] & NAMED) c++;
    return c;
  }
  get children(): Node[] {
    budgetTick();
    return this.m.childList(this.i, false);
  }
  get namedChildren(): Node[] {
    budgetTick();
    return this.m.childList(this.i, true);
  }
  /** semantics.ts remembers a captured node's type on the node (`__type`): a handle knows it, keep no property. */
  get __type(): string {
    return this.type;
  }
  set __type(_: string) {}
  child(index: number): Node | null {
    let c = 0;
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) if (c++ === index) return this.m.orNull(k);
    return null;
  }
  namedChild(index: number): Node | null {
    let c = 0;
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) if (this.m.flags[k] & NAMED && c++ === index) return this.m.orNull(k);
    return null;
  }
  get firstChild(): Node | null {
    return this.m.orNull(this.m.firstChild(this.i));
  }
  get lastChild(): Node | null {
    let last = -1;
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) last = k;
    return this.m.orNull(last);
  }
  get firstNamedChild(): Node | null {
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) if (this.m.flags[k] & NAMED) return this.m.orNull(k);
    return null;
  }
  get lastNamedChild(): Node | null {
    let last = -1;
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) if (this.m.flags[k] & NAMED) last = k;
    return this.m.orNull(last);
  }
  /**
   * Siblings under a parent that contains an error are tree-sitter's (ts_node_next_sibling walks the raw children
   * of hidden ERROR repeats and may answer null where the visible children go on).
   */
  private get siblingsQuirky(): boolean {
    const p = this.m.parent[this.i];
    return p >= 0 && (this.m.flags[p] & HAS_ERROR) !== 0;
  }
  get nextSibling(): Node | null {
    if (this.siblingsQuirky) return this.m.fromReal(this.m.real(this.i).nextSibling);
    return this.m.orNull(this.m.next(this.i));
  }
  get previousSibling(): Node | null {
    if (this.siblingsQuirky) return this.m.fromReal(this.m.real(this.i).previousSibling);
    return this.m.orNull(this.m.prevSibling(this.i));
  }
  get nextNamedSibling(): Node | null {
    if (this.siblingsQuirky) return this.m.fromReal(this.m.real(this.i).nextNamedSibling);
    let k = this.m.next(this.i);
    while (k >= 0 && !(this.m.flags[k] & NAMED)) k = this.m.next(k);
    return this.m.orNull(k);
  }
  get previousNamedSibling(): Node | null {
    if (this.siblingsQuirky) return this.m.fromReal(this.m.real(this.i).previousNamedSibling);
    let k = this.m.prevSibling(this.i);
    while (k >= 0 && !(this.m.flags[k] & NAMED)) k = this.m.prevSibling(k);
    return this.m.orNull(k);
  }
  get descendantCount(): number {
    return this.m.descEnd[this.i] - this.i;
  }

  childForFieldId(fieldId: number): Node | null {
    budgetTick();
    if (fieldId <= 0) return null;
    if (this.m.typeId[this.i] === this.m.inheritsFields) return this.m.fromReal(this.m.real(this.i).childForFieldId(fieldId));
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) if (this.m.field[k] === fieldId) return this.m.orNull(k);
    return null;
  }
  childForFieldName(fieldName: string): Node | null {
    const f = this.m.fieldId(fieldName);
    return f === -1 ? null : this.childForFieldId(f);
  }
  childrenForFieldId(fieldId: number): Node[] {
    const out: Node[] = [];
    if (fieldId <= 0) return out;
    if (this.m.typeId[this.i] === this.m.inheritsFields) return this.m.real(this.i).childrenForFieldId(fieldId).map((n) => this.m.fromReal(n)!);
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) if (this.m.field[k] === fieldId) out.push(this.m.handle(k) as unknown as Node);
    return out;
  }
  childrenForFieldName(fieldName: string): Node[] {
    const f = this.m.fieldId(fieldName);
    return f === -1 || f === 0 ? [] : this.childrenForFieldId(f);
  }
  fieldNameForChild(index: number): string | null {
    let c = 0;
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) if (c++ === index) return this.m.language.fields[this.m.field[k]] ?? null;
    return null;
  }
  fieldNameForNamedChild(index: number): string | null {
    let c = 0;
    for (let k = this.m.firstChild(this.i); k >= 0; k = this.m.next(k)) if (this.m.flags[k] & NAMED && c++ === index) return this.m.language.fields[this.m.field[k]] ?? null;
    return null;
  }

  /**
   * web-tree-sitter's `descendantsOfType` (binding.c ts_node_descendants_of_type_wasm): this node and its
   * descendants in preorder, whose type is one of `types`; with the default (zero) range, a node ending at
   * (0, 0) is skipped with its subtree (`point_lte(end, start_point)`). Point ranges go to the real node.
   */
  descendantsOfType(types: string | string[], startPosition?: Point, endPosition?: Point): Node[] {
    if ((startPosition && (startPosition.row || startPosition.column)) || (endPosition && (endPosition.row || endPosition.column))) {
      return this.m.real(this.i).descendantsOfType(types, startPosition, endPosition).map((n) => this.m.fromReal(n)!);
    }
    const want = new Set(Array.isArray(types) ? types : [types]);
    const m = this.m;
    const out: Node[] = [];
    const stop = m.descEnd[this.i];
    for (let k = this.i; k < stop; ) {
      budgetTick();
      if (m.end[k] === 0) {
        k = m.descEnd[k];
        continue;
      }
      const t = m.typeId[k];
      if (t === ERROR_SYMBOL ? want.has('ERROR') : want.has(m.types[t])) out.push(m.handle(k) as unknown as Node);
      k++;
    }
    return out;
  }

  descendantForIndex(start: number, end = start): Node | null {
    const k = this.m.descendantFor(this.i, start, end, false);
    return k === -2 ? this.m.fromReal(this.m.real(this.i).descendantForIndex(start, end)) : this.m.orNull(k);
  }
  namedDescendantForIndex(start: number, end = start): Node | null {
    const k = this.m.descendantFor(this.i, start, end, true);
    return k === -2 ? this.m.fromReal(this.m.real(this.i).namedDescendantForIndex(start, end)) : this.m.orNull(k);
  }
  descendantForPosition(start: Point, end = start): Node | null {
    return this.m.fromReal(this.m.real(this.i).descendantForPosition(start, end));
  }
  namedDescendantForPosition(start: Point, end = start): Node | null {
    return this.m.fromReal(this.m.real(this.i).namedDescendantForPosition(start, end));
  }
  firstChildForIndex(index: number): Node | null {
    return this.m.fromReal(this.m.real(this.i).firstChildForIndex(index));
  }
  firstNamedChildForIndex(index: number): Node | null {
    return this.m.fromReal(this.m.real(this.i).firstNamedChildForIndex(index));
  }
  childWithDescendant(descendant: Node): Node | null {
    const d = descendant instanceof MirrorNode ? descendant.m.real(descendant.i) : descendant;
    return this.m.fromReal(this.m.real(this.i).childWithDescendant(d));
  }
  walk() {
    return this.m.real(this.i).walk();
  }
  toString(): string {
    return this.m.real(this.i).toString();
  }
  /** What web-tree-sitter's marshalNode reads (a query or cursor started on a handle): the real node's slot. */
  get 0(): number {
    return (this.m.real(this.i) as unknown as { 0: number })[0];
  }
}

// -------------------------------------------------------------------------------------------------
// Installation: `tree.rootNode` answers a handle; queries started on a handle answer handles.

const MIRROR = Symbol('tpu-ready.mirror');
type MirrorHolder = Tree & { [MIRROR]?: Mirror };
let realRootGet: ((this: Tree) => Node) | undefined;

function realRootOf(tree: Tree): Node {
  return realRootGet!.call(tree);
}

/** web-tree-sitter's own root node of a tree (tests compare the mirror with it). */
export function realRootNode(tree: Tree): Node {
  return realRootGet ? realRootOf(tree) : tree.rootNode;
}

/** The tree's mirror (built on first use; dropped when the tree is edited or deleted). */
export function mirrorOf(tree: Tree): Mirror {
  const holder = tree as MirrorHolder;
  return (holder[MIRROR] ??= new Mirror(tree, realRootOf(tree)));
}

let installed = false;

/** The tree's mirror when the mirror is installed (rules navigate its handles), else null (TPU_READY_NO_MIRROR). */
export function mirrorIfInstalled(tree: Tree): Mirror | null {
  return installed ? mirrorOf(tree) : null;
}

/** Parses a text again (src/core/parse.ts installs it): what a released tree's fallbacks read. */
let reparse: ((text: string) => Tree) | null = null;
let deleteReal: (tree: Tree) => void = (tree) => tree.delete();

/**
 * Deletes tree-sitter's tree once its mirror is built (Mirror.release): the tree keeps answering `rootNode` and every
 * handle; its WebAssembly memory is freed. No-op without the mirror (TPU_READY_NO_MIRROR).
 */
export function releaseTree(tree: Tree): void {
  if (!installed) return;
  mirrorOf(tree).release();
}

/** tree-sitter's cursor functions, called on the cursor held in its transfer buffer (Mirror.rawWalk). */
interface RawCursorApi {
  typeId(tree: number): number;
  nodeId(tree: number): number;
  startIndex(tree: number): number;
  endIndex(tree: number): number;
  fieldId(tree: number): number;
  isMissing(tree: number): number;
  firstChild(tree: number): number;
  nextSibling(tree: number): number;
  parent(tree: number): number;
  /** Copies the cursor in the transfer buffer into the JS cursor object (web-tree-sitter's unmarshalTreeCursor). */
  syncCursor(cursor: object): void;
}
let rawApi: RawCursorApi | null = null;

/**
 * The raw API from web-tree-sitter's emscripten module (the object passed to Parser.init holds its exports after init:
 * `_ts_tree_cursor_*_wasm` of lib/binding_web/lib/tree-sitter.c, each reading the cursor from TRANSFER_BUFFER, the
 * moves writing it back). `_ts_init()` only stores the language versions in the buffer's first two words and returns
 * its address. Null when any export is missing (another web-tree-sitter build): the walk goes through TreeCursor.
 */
function rawCursorApi(module: object, memory: WebAssembly.Memory): RawCursorApi | null {
  const m = module as Record<string, unknown>;
  const fn = (name: string) => (typeof m[name] === 'function' ? (m[name] as (tree: number) => number) : null);
  const names = ['current_node_type_id', 'current_node_id', 'start_index', 'end_index', 'current_field_id', 'current_node_is_missing', 'goto_first_child', 'goto_next_sibling', 'goto_parent'];
  const fns = names.map((n) => fn(`_ts_tree_cursor_${n}_wasm`));
  const init = m._ts_init as (() => number) | undefined;
  if (fns.some((f) => !f) || typeof init !== 'function') return null;
  const tb = init();
  const [typeId, nodeId, startIndex, endIndex, fieldId, isMissing, firstChild, nextSibling, parent] = fns as ((tree: number) => number)[];
  return {
    typeId, nodeId, startIndex, endIndex, fieldId, isMissing, firstChild, nextSibling, parent,
    syncCursor(cursor: object) {
      const view = new DataView(memory.buffer);
      const c = cursor as Record<number, number>;
      for (let k = 0; k < 4; k++) c[k] = view.getInt32(tb + 4 * k, true);
    },
  };
}

export function installMirror(module?: object, memory?: WebAssembly.Memory, parseAgain?: (text: string) => Tree): void {
  if (installed) return;
  installed = true;
  reparse = parseAgain ?? null;
  if (module && memory && !process.env.TPU_READY_NO_RAW_CURSOR) rawApi = rawCursorApi(module, memory);
  const treeProto = Tree.prototype as unknown as Record<string, unknown>;
  const d = Object.getOwnPropertyDescriptor(treeProto, 'rootNode');
  if (!d?.get) throw new Error('web-tree-sitter Tree has no rootNode getter');
  realRootGet = d.get as (this: Tree) => Node;
  Object.defineProperty(treeProto, 'rootNode', {
    configurable: true,
    get(this: Tree) {
      return mirrorOf(this).orNull(0);
    },
  });
  treeProto.walk = function (this: Tree) {
    const m = (this as MirrorHolder)[MIRROR];
    return realRootOf(m ? m.realTree() : this).walk();
  };
  const edit = treeProto.edit as (this: Tree, ...a: unknown[]) => void;
  treeProto.edit = function (this: Tree, ...args: unknown[]) {
    const m = (this as MirrorHolder)[MIRROR];
    if (m?.isReleased) throw new Error('tpu-ready: a released tree cannot be edited (parse the new text afresh)');
    m?.dispose();
    delete (this as MirrorHolder)[MIRROR];
    return edit.apply(this, args);
  };
  const del = treeProto.delete as (this: Tree) => void;
  deleteReal = (tree) => del.call(tree);
  treeProto.delete = function (this: Tree) {
    (this as MirrorHolder)[MIRROR]?.dispose();
    delete (this as MirrorHolder)[MIRROR];
    return del.call(this);
  };
  const queryProto = Query.prototype as unknown as Record<string, unknown>;
  const captures = queryProto.captures as (this: Query, node: Node, options?: object) => { name: string; node: Node; patternIndex: number }[];
  queryProto.captures = function (this: Query, node: Node, options?: object) {
    if (!(node instanceof MirrorNode)) return captures.call(this, node, options);
    const m = node.m;
    const simple = !options ? simpleTypes(this, m.language) : null;
    if (simple) return mirrorCaptures(m, node.i, simple);
    return captures.call(this, m.real(node.i), options).map((c) => ({ ...c, node: m.fromReal(c.node)! }));
  };
  const matches = queryProto.matches as (this: Query, node: Node, options?: object) => { captures: { name: string; node: Node }[] }[];
  queryProto.matches = function (this: Query, node: Node, options?: object) {
    if (!(node instanceof MirrorNode)) return matches.call(this, node, options);
    const m = node.m;
    return matches.call(this, m.real(node.i), options).map((x) => ({ ...x, captures: x.captures.map((c) => ({ ...c, node: m.fromReal(c.node)! })) }));
  };
}

/**
 * A query made only of `(type) @type` patterns, one per capture, with no predicates (src/core/semantics.ts's
 * index queries): the capture name of each pattern (by pattern index), or null for any other query. Recognised
 * from what web-tree-sitter keeps of the source: each pattern's source span has exactly that length, its one
 * capture is named after a node type of the language, and it has no predicates or properties.
 */
const simpleMemo = new WeakMap<Query, Map<string, number> | null>();
export function simpleTypes(q: Query, lang: Language): Map<string, number> | null {
  if (simpleMemo.has(q)) return simpleMemo.get(q)!;
  let out: Map<string, number> | null = new Map();
  const names = q.captureNames;
  const count = q.patternCount();
  const types = new Set(lang.types);
  if (names.length !== count) out = null;
  for (let p = 0; out && p < count; p++) {
    const name = names[p];
    const len = q.endIndexForPattern(p) - q.startIndexForPattern(p);
    const expected = `(${name}) @${name}`.length;
    const quant = q.captureQuantifiers[p];
    // TSQuantifier: 0 zero, 3 one
    const one = quant.every((x, j) => (j === p ? x === 3 : x === 0));
    if (!types.has(name) || name === 'ERROR' || (len !== expected && len !== expected + 1) || !one || q.predicates[p].length || (q as unknown as { textPredicates: unknown[][] }).textPredicates[p].length || Object.keys(q.setProperties[p] ?? {}).length || Object.keys(q.assertedProperties[p] ?? {}).length || Object.keys(q.refutedProperties[p] ?? {}).length) out = null;
    else out.set(name, p);
  }
  simpleMemo.set(q, out);
  return out;
}

/** Captures of a simple query: matching nodes in preorder from `root` (itself included). */
function mirrorCaptures(m: Mirror, root: number, byName: Map<string, number>): { name: string; node: Node; patternIndex: number }[] {
  const out: { name: string; node: Node; patternIndex: number }[] = [];
  // per type id: the pattern index, or -1
  const pattern = new Int32Array(m.types.length).fill(-1);
  for (let t = 0; t < m.types.length; t++) {
    const p = byName.get(m.types[t]);
    if (p !== undefined) pattern[t] = p;
  }
  const stop = m.descEnd[root];
  for (let k = root; k < stop; k++) {
    budgetTick();
    const t = m.typeId[k];
    const p = t < pattern.length ? pattern[t] : -1;
    // a query's `(name)` matches named nodes only
    if (p >= 0 && m.flags[k] & NAMED) out.push({ name: m.types[t], node: m.handle(k) as unknown as Node, patternIndex: p });
  }
  return out;
}
