/**
 * The shared detection primitives (catalog §0.5): a one-pass node index, import alias resolution,
 * XLA-aware and framework-managed context, hot loops (through same-file calls), throttle guards,
 * CUDA device expressions with their taint. Values of expressions (tensors on the device or the host, numbers,
 * devices) are the program model's (src/model).
 *
 * Everything here is flow-insensitive and computed lazily once per analysed file.
 */
import { Query } from 'web-tree-sitter';
import type { Node, Tree } from './parse';
import { NodeMemo } from './memo';
import { MirrorNode, mirrorIfInstalled, type Mirror } from './mirror';

/** Node types collected by the index walk. */
const INDEXED = new Set([
  'call', 'attribute', 'string', 'assignment', 'augmented_assignment', 'with_statement', 'for_statement',
  'while_statement', 'if_statement', 'function_definition', 'class_definition', 'import_statement',
  'import_from_statement', 'keyword_argument', 'subscript', 'decorated_definition', 'comment', 'assert_statement',
  'conditional_expression', 'return_statement', 'expression_statement', 'lambda', 'typed_parameter',
  'default_parameter', 'typed_default_parameter', 'break_statement', 'comparison_operator', 'boolean_operator',
  'not_operator', 'binary_operator', 'for_in_clause', 'global_statement', 'decorator', 'elif_clause',
]);

/** Indexed on first use only: there are many. */
const LAZY = new Set(['identifier']);

const queries = new Map<string, Query>();

function cachedQuery(tree: Tree, key: string, source: () => string): Query {
  let q = queries.get(key);
  if (!q) queries.set(key, (q = new Query(tree.language, source())));
  return q;
}

/** `(call) @call (attribute) @attribute …`: the capture name is the node type, in document order. */
function indexQuery(tree: Tree): Query {
  return cachedQuery(tree, '', () => [...INDEXED].map((t) => `(${t}) @${t}`).join('\n'));
}

function lazyQuery(tree: Tree, type: string): Query {
  return cachedQuery(tree, type, () => `(${type}) @${type}`);
}

export interface HotInfo {
  /** The loop (for/while) or function (forward, compiled step) that makes the code hot. */
  anchor: Node;
  kind: 'train' | 'eval';
  /** Under `if step % k == 0` (or similar) between the node and the hot anchor. */
  throttled: boolean;
  /** The anchor is a function of this module that hot loops of other project modules call: those call sites. */
  via?: readonly HotVia[];
}

/** A call site in another module of the project that makes a function of this one hot. */
export interface HotVia {
  path: string;
  /** 1-based line of the call. */
  line: number;
  kind: 'train' | 'eval';
  /** The call's span in that module's text (for related locations). */
  start: number;
  end: number;
}

/** What the project scope says about a function of this module: hot loops elsewhere call it. */
export interface ProjectHot {
  kind: 'train' | 'eval';
  /** Every hot call site is under a throttle guard. */
  throttled: boolean;
  via: readonly HotVia[];
}

const EXITS = new Set(['return_statement', 'raise_statement', 'continue_statement', 'break_statement']);
const TRAIN_CALL_ATTRS = new Set(['backward']);
const OPTIMIZER_CTORS = /^(torch\.optim\.[A-Za-z]\w*|.*(Adam|AdamW|SGD|Adafactor|Lion|LAMB|Lamb|RMSprop|Adagrad|Optimizer))$/;
const LOADER_CTORS = /(^|\.)(DataLoader|MpDeviceLoader|ParallelLoader|per_device_loader|StatefulDataLoader)$/;
const LOADER_NAME = /(^|_)(loader|dataloader|data_loader|dl|train_dl|batches)$|loader$/i;
const semanticsByTree = new WeakMap<Tree, Semantics>();
/** The latest index built for a tree (the CUDA guards of src/model/guards.ts answer a bare node through it). */
export function semanticsOf(tree: Tree): Semantics | undefined {
  return semanticsByTree.get(tree);
}

export class Semantics {
  readonly root: Node;
  private readonly byType = new Map<string, Node[]>();
  /** alias → fully qualified name */
  readonly aliases = new Map<string, string>();
  /** Every module named in an import statement (full dotted names). */
  readonly importedModules = new Set<string>();
  /** The same, for imports at module level only (not inside a function or class): what fixes may rely on. */
  readonly topLevelAliases = new Map<string, string>();
  readonly topLevelModules = new Set<string>();
  private readonly functions = new Map<string, Node[]>();
  private hotAnchors?: Map<number, HotInfo>;
  private hotFunctionIds?: Map<number, 'train' | 'eval'>;
  /** Step work under no_grad: functions hot only because a `forward` (or compiled step) calls them, and matcher forwards. */
  private forwardCallees?: Set<number>;
  /** Functions made hot by callers in other project modules (by node id), and the same-file functions they call. */
  private projectHotFns?: Map<number, ProjectHot>;
  private projectHotSource?: () => Map<number, ProjectHot> | null;
  private trainSignalMemo = new Map<number, boolean>();
  private compileWrapped?: Set<string>;

  constructor(readonly tree: Tree, readonly text: string) {
    semanticsByTree.set(tree, this);
    this.root = tree.rootNode;
    this.resolveMemo = new NodeMemo(tree);
    this.calleeMemo = new NodeMemo(tree);
    this.mirror = mirrorIfInstalled(tree);
    this.xlaBranchMemo = new NodeMemo(tree);
    this.xlaAwareMemo = new NodeMemo(tree);
    this.index();
    this.collectImports();
  }

  // -------------------------------------------------------------------------------------------
  // Index

  private index(): void {
    // one query runs the walk inside WebAssembly: far fewer boundary crossings than a JS cursor walk
    for (const { name, node } of indexQuery(this.tree).captures(this.root)) {
      // the capture name is the node's type: remembered on the node, no WebAssembly call when a rule reads `.type`
      (node as Node & { __type?: string }).__type = name;
      let list = this.byType.get(name);
      if (!list) this.byType.set(name, (list = []));
      list.push(node);
    }
    // kept for the whole analysis: exact-length copies (a list grown by push has up to half its length spare)
    for (const [type, list] of this.byType) this.byType.set(type, list.slice());
  }

  /** All nodes of an indexed type, in document order. */
  nodes(type: string): Node[] {
    if (LAZY.has(type) && !this.byType.has(type)) this.byType.set(type, this.collect(type));
    return this.byType.get(type) ?? [];
  }

  /**
   * Identifier nodes spelled `name`, in document order. ASCII names are found in the text first and each
   * occurrence mapped to its node (a name is rare next to all identifiers of a file); others from the
   * identifier index.
   */
  identifiersNamed(name: string): Node[] {
    let hit = this.identifierMemo.get(name);
    if (hit) return hit;
    hit = [];
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      for (const at of this.wordOffsets(name)) {
        const n = descendantForRange(this.root, at, at + name.length - 1);
        if (n?.type === 'identifier' && n.startIndex === at && n.endIndex === at + name.length) hit.push(n);
      }
    } else {
      hit = this.nodes('identifier').filter((id) => id.text === name);
    }
    this.identifierMemo.set(name, hit);
    return hit;
  }

  private readonly identifierMemo = new Map<string, Node[]>();
  /** Start offsets of every maximal run of ASCII word characters, by its text: one pass over the text, built once several names are asked. */
  private words?: Map<string, number[]>;
  private wordQueries = 0;

  /** Where `name` occurs in the text as a whole word (no ASCII letter, digit or `_` on either side), in text order. */
  private wordOffsets(name: string): number[] {
    if (!this.words && ++this.wordQueries > 2) {
      // the runs of /[A-Za-z0-9_]+/g, scanned by character code (no match object per word)
      const words = new Map<string, number[]>();
      const text = this.text;
      for (let i = 0, n = text.length; i < n; ) {
        if (!isWordCode(text.charCodeAt(i))) {
          i++;
          continue;
        }
        const start = i;
        while (++i < n && isWordCode(text.charCodeAt(i)));
        const word = text.slice(start, i);
        const list = words.get(word);
        if (list) list.push(start);
        else words.set(word, [start]);
      }
      // exact-length copies of the lists that grew (a pushed list holds at least 17 slots)
      for (const [word, list] of words) if (list.length > 1) words.set(word, list.slice());
      this.words = words;
    }
    if (this.words) return this.words.get(name) ?? [];
    const out: number[] = [];
    const re = new RegExp(`(?<![A-Za-z0-9_])${name}(?![A-Za-z0-9_])`, 'g');
    for (let m = re.exec(this.text); m; m = re.exec(this.text)) out.push(m.index);
    return out;
  }

  private collect(type: string): Node[] {
    return lazyQuery(this.tree, type).captures(this.root).map((c) => {
      (c.node as Node & { __type?: string }).__type = type;
      return c.node;
    });
  }

  // -------------------------------------------------------------------------------------------
  // Imports and names

  private collectImports(): void {
    const bind = (imp: Node, alias: string, full: string, onlyIfAbsent = false) => {
      const top = this.enclosingFunction(imp) === null && this.enclosingClass(imp) === null;
      if (!onlyIfAbsent || !this.aliases.has(alias)) this.aliases.set(alias, full);
      if (top && (!onlyIfAbsent || !this.topLevelAliases.has(alias))) this.topLevelAliases.set(alias, full);
    };
    const module = (imp: Node, full: string) => {
      this.importedModules.add(full);
      if (this.enclosingFunction(imp) === null && this.enclosingClass(imp) === null) this.topLevelModules.add(full);
    };
    for (const imp of this.nodes('import_statement')) {
      for (const child of imp.namedChildren) {
        if (!child) continue;
        if (child.type === 'dotted_name') {
          const full = child.text;
          module(imp, full);
          const head = full.split('.')[0];
          bind(imp, head, head, true);
        } else if (child.type === 'aliased_import') {
          const name = child.childForFieldName('name')?.text;
          const alias = child.childForFieldName('alias')?.text;
          if (name && alias) {
            module(imp, name);
            bind(imp, alias, name);
          }
        }
      }
    }
    for (const imp of this.nodes('import_from_statement')) {
      const modNode = imp.childForFieldName('module_name');
      if (!modNode || modNode.type === 'relative_import') continue;
      const mod = modNode.text;
      module(imp, mod);
      for (const child of imp.childrenForFieldName('name')) {
        if (!child) continue;
        if (child.type === 'dotted_name') {
          bind(imp, child.text, `${mod}.${child.text}`);
          module(imp, `${mod}.${child.text}`);
        } else if (child.type === 'aliased_import') {
          const name = child.childForFieldName('name')?.text;
          const alias = child.childForFieldName('alias')?.text;
          if (name && alias) {
            bind(imp, alias, `${mod}.${name}`);
            module(imp, `${mod}.${name}`);
          }
        }
      }
    }
  }

  // per node of this tree (src/core/memo.ts: 4 bytes a node, not a Map entry)
  private readonly resolveMemo: NodeMemo<string | null>;
  private readonly calleeMemo: NodeMemo<string | null>;
  private readonly mirror: Mirror | null;
  private readonly xlaBranchMemo: NodeMemo<boolean>;
  private readonly xlaAwareMemo: NodeMemo<boolean>;
  /** Per block: where its first early-exit XLA guard starts (Infinity: none). */
  private readonly xlaGuardMemo = new Map<number, number>();
  private readonly helperMemo = new Map<number, boolean>();
  private readonly throttleMemo = new Map<number, boolean>();
  /** Per block: where its first early exit unless a logging step starts (Infinity: none). */
  private readonly exitThrottleMemo = new Map<number, number>();

  /** Fully qualified dotted name of an identifier or attribute chain rooted in an import, else null. */
  resolve(node: Node | null | undefined): string | null {
    if (!node) return null;
    const hit = this.resolveMemo.get(node);
    if (hit !== undefined) return hit;
    const r = this.resolveUncached(node);
    this.resolveMemo.set(node, r);
    return r;
  }

  private resolveUncached(node: Node): string | null {
    if (node.type === 'identifier') return this.aliases.get(node.text) ?? null;
    if (node.type === 'attribute') {
      const obj = node.childForFieldName('object');
      const attr = node.childForFieldName('attribute');
      const base = this.resolve(obj);
      return base && attr ? `${base}.${attr.text}` : null;
    }
    if (node.type === 'parenthesized_expression') return this.resolve(node.namedChildren[0]);
    return null;
  }

  /** Qualified name of a call's callee (see resolve). */
  callee(call: Node): string | null {
    // a call of this tree's mirror keeps its callee on its handle (callMemo: the imports are the tree's own)
    if (call instanceof MirrorNode && call.m === this.mirror) {
      const m = callMemo(call);
      let r = m.callee;
      if (r === undefined) r = m.callee = this.resolve(call.childForFieldName('function'));
      return r;
    }
    let r = this.calleeMemo.get(call);
    if (r === undefined) this.calleeMemo.set(call, (r = this.resolve(call.childForFieldName('function'))));
    return r;
  }

  /**
   * The calls whose callee (see callee) is one of `names` ('' stands for an unresolved callee), in document order: the
   * same nodes as `nodes('call').filter((c) => names.has(callee(c) ?? ''))`, from an index built once per file (rules
   * asked it per call site, each time resolving every call of the file). A new array each time.
   */
  callsResolvedTo(names: Iterable<string>): Node[] {
    const index = this.calleeIndexed();
    const lists: number[][] = [];
    for (const name of new Set(names)) {
      const list = index.get(name);
      if (list) lists.push(list);
    }
    return this.callsAt(lists);
  }

  /**
   * The calls whose callee passes `test` (`callee(c) ?? ''`, '' for an unresolved one), in document order: the same
   * nodes as `nodes('call').filter((c) => test(callee(c) ?? ''))`, with `test` asked once per distinct callee of the
   * file instead of once per call (rules that pass every call of the file to a regular expression). `test` must be a
   * function of the name alone. A new array each time.
   */
  callsResolvedWhere(test: (callee: string) => boolean): Node[] {
    const lists: number[][] = [];
    for (const [name, list] of this.calleeIndexed()) if (test(name)) lists.push(list);
    return this.callsAt(lists);
  }

  /** Positions in nodes('call') by callee ('' for none), each list ascending; built once per file. */
  private calleeIndexed(): Map<string, number[]> {
    if (!this.calleeIndex) {
      const index = new Map<string, number[]>();
      this.nodes('call').forEach((c, k) => {
        const key = this.callee(c) ?? '';
        let list = index.get(key);
        if (!list) index.set(key, (list = []));
        list.push(k);
      });
      this.calleeIndex = index;
    }
    return this.calleeIndex;
  }

  /** The calls at positions of nodes('call') from disjoint ascending lists, in document order. */
  private callsAt(lists: number[][]): Node[] {
    const calls = this.nodes('call');
    // one list as it is, several merged (the lists are disjoint)
    const at = lists.length === 1 ? lists[0] : lists.flat().sort((a, b) => a - b);
    return at.map((k) => calls[k]);
  }
  private calleeIndex?: Map<string, number[]>;

  /** True when `name` (e.g. "torch_xla") or a submodule of it is imported. */
  imports(name: string): boolean {
    for (const m of this.importedModules) if (m === name || m.startsWith(name + '.')) return true;
    return false;
  }

  /** The file imports torch_xla (or torch_tpu): XLA-aware context. */
  get xlaAware(): boolean {
    return this.imports('torch_xla') || this.imports('torch_tpu');
  }

  /** Training frameworks that own device placement, the step barrier and data loading. */
  get framework(): 'hf-trainer' | 'accelerate' | 'lightning' | null {
    if (this.imports('transformers.Trainer') || this.imports('transformers.Seq2SeqTrainer') || this.imports('trl')) return 'hf-trainer';
    if (this.imports('accelerate')) return 'accelerate';
    if (this.imports('lightning') || this.imports('pytorch_lightning')) return 'lightning';
    return null;
  }

  usesTorch(): boolean {
    return this.imports('torch');
  }

  // -------------------------------------------------------------------------------------------
  // Functions

  private functionIndex(): Map<string, Node[]> {
    if (this.functions.size === 0) {
      for (const fn of this.nodes('function_definition')) {
        const name = fn.childForFieldName('name')?.text;
        if (!name) continue;
        let list = this.functions.get(name);
        if (!list) this.functions.set(name, (list = []));
        list.push(fn);
      }
    }
    return this.functions;
  }

  /** Same-file function definitions a call may reach (`f(...)`, `self.f(...)`, `obj.f(...)` by name). */
  calledFunctions(call: Node): Node[] {
    const fn = call.childForFieldName('function');
    if (!fn) return [];
    let name: string | undefined;
    let own = false;
    if (fn.type === 'identifier') name = fn.text;
    else if (fn.type === 'attribute') {
      const obj = fn.childForFieldName('object');
      if (obj?.type === 'identifier' && (obj.text === 'self' || obj.text === 'cls')) {
        name = fn.childForFieldName('attribute')?.text;
        own = true;
      }
    }
    if (!name) return [];
    const all = this.functionIndex().get(name) ?? [];
    // `loss_scaler(loss, optimizer, ...)` where `loss_scaler = NativeScaler()` and the file defines that class: the
    // instance's `__call__` (timm's NativeScaler runs backward and the optimizer step there)
    if (!all.length && fn.type === 'identifier') return this.instanceCallMethods(name);
    // `self.train_step()`: the enclosing class's own method when it defines one (several trainer classes of a file
    // each define train_step); else any class's (a method inherited from a base class of the file)
    if (own && all.length > 1) {
      const cls = this.enclosingClass(call);
      const mine = cls ? all.filter((d) => this.enclosingClass(d)?.id === cls.id) : [];
      if (mine.length) return mine;
    }
    return all;
  }

  /** `__call__` of the same-file classes that a plain name is bound to by `name = Cls(...)` (indexed once per name). */
  private instanceCallMethods(name: string): Node[] {
    const hit = this.instanceCallMemo.get(name);
    if (hit) return hit;
    const calls = this.functionIndex().get('__call__') ?? [];
    const out: Node[] = [];
    if (calls.length) {
      // `name = Cls(...)` assignments, indexed once by name (class names in document order): one scan of the
      // assignments per file, not one per name asked about
      if (!this.instanceClassIndex) {
        const index = new Map<string, string[]>();
        for (const a of this.nodes('assignment')) {
          const left = a.childForFieldName('left');
          if (left?.type !== 'identifier') continue;
          const right = a.childForFieldName('right');
          if (right?.type !== 'call') continue;
          const cls = right.childForFieldName('function');
          if (cls?.type !== 'identifier') continue;
          let list = index.get(left.text);
          if (!list) index.set(left.text, (list = []));
          list.push(cls.text);
        }
        this.instanceClassIndex = index;
      }
      for (const clsName of this.instanceClassIndex.get(name) ?? []) {
        for (const m of calls) if (this.enclosingClass(m)?.childForFieldName('name')?.text === clsName && !out.includes(m)) out.push(m);
      }
    }
    this.instanceCallMemo.set(name, out);
    return out;
  }
  private instanceCallMemo = new Map<string, Node[]>();
  private instanceClassIndex?: Map<string, string[]>;

  /**
   * The calls of this file whose function is the identifier `name` or an attribute `….name` (`f(...)`, `self.f(...)`,
   * `obj.f(...)`), in document order (indexed once: do not modify): rules that asked it scanned every call per question.
   */
  callsNamed(name: string): readonly Node[] {
    if (!this.callNameIndex) {
      const index = new Map<string, Node[]>();
      for (const call of this.nodes('call')) {
        const f = call.childForFieldName('function');
        const key = f?.type === 'identifier' ? f.text : f?.type === 'attribute' ? f.childForFieldName('attribute')?.text : undefined;
        if (key === undefined) continue;
        let list = index.get(key);
        if (!list) index.set(key, (list = []));
        list.push(call);
      }
      this.callNameIndex = index;
    }
    return this.callNameIndex.get(name) ?? [];
  }
  private callNameIndex?: Map<string, Node[]>;

  /** callsNamed of several names, in document order (the order of nodes('call')). A new array each time. */
  callsNamedAny(names: readonly string[]): Node[] {
    const out: Node[] = [];
    for (const name of new Set(names)) out.push(...this.callsNamed(name));
    // preorder: by start, an enclosing call (same start, later end: `a.to(d).cuda()`) before the calls inside it
    return names.length > 1 ? out.sort((a, b) => a.startIndex - b.startIndex || b.endIndex - a.endIndex) : out;
  }

  /** The function definitions of this file named `name`, in document order (indexed once: do not modify). */
  functionsNamed(name: string): readonly Node[] {
    return this.functionIndex().get(name) ?? [];
  }

  /** The innermost enclosing function definition. */
  enclosingFunction(node: Node): Node | null {
    // the shared per-tree memo of nearestAncestor, held here: a hit costs one lookup, not two WeakMap lookups first
    const memo = (this.functionMemo ??= nearestMemo(FUNCTION_DEF, this.tree));
    const hit = node.tree === this.tree ? memo.get(node) : undefined;
    if (hit !== undefined) return hit?.ancestor ?? null;
    return nearestAncestor(node, FUNCTION_DEF)?.ancestor ?? null;
  }
  private functionMemo?: NodeMemo<{ ancestor: Node; child: Node } | null>;
  private classMemo?: NodeMemo<{ ancestor: Node; child: Node } | null>;

  /** The innermost enclosing class definition. */
  enclosingClass(node: Node): Node | null {
    const memo = (this.classMemo ??= nearestMemo(CLASS_DEF, this.tree));
    const hit = node.tree === this.tree ? memo.get(node) : undefined;
    if (hit !== undefined) return hit?.ancestor ?? null;
    return nearestAncestor(node, CLASS_DEF)?.ancestor ?? null;
  }

  /** Name of the method when `node` is inside `class X(nn.Module)`'s `forward`/`__init__`, else null. */
  moduleMethod(node: Node): string | null {
    const fn = this.enclosingFunction(node);
    if (!fn) return null;
    const cls = this.enclosingClass(fn);
    if (!cls) return null;
    const name = fn.childForFieldName('name')?.text ?? '';
    const supers = cls.childForFieldName('superclasses')?.text ?? '';
    if (!/Module|nn\.|LightningModule|PreTrainedModel/.test(supers) && name !== 'forward') return null;
    return name;
  }

  decorators(fn: Node): Node[] {
    const parent = fn.parent;
    if (parent?.type !== 'decorated_definition') return [];
    return parent.namedChildren.filter((c): c is Node => !!c && c.type === 'decorator');
  }

  // -------------------------------------------------------------------------------------------
  // Hot loops

  /** Whether a statement block contains a training signal, directly or via ≤ `depth` same-file calls. */
  containsTrainSignal(node: Node, depth = 2): boolean {
    const key = node.id * 4 + depth;
    const memo = this.trainSignalMemo.get(key);
    if (memo !== undefined) return memo;
    this.trainSignalMemo.set(key, false); // recursion guard
    let found = false;
    for (const call of this.callsWithin(node)) {
      if (this.isTrainSignal(call)) {
        found = true;
        break;
      }
      if (depth > 0) {
        for (const fn of this.calledFunctions(call)) {
          if (fn.id !== node.id && !isAncestor(fn, call) && this.containsTrainSignal(fn, depth - 1)) {
            found = true;
            break;
          }
        }
        if (found) break;
      }
    }
    this.trainSignalMemo.set(key, found);
    return found;
  }

  /** A train signal in `scope` that is not inside a loop nested in `scope` (directly or via ≤ `depth` same-file calls). */
  private trainSignalOutsideLoops(scope: Node, depth: number, seen = new Set<number>()): boolean {
    if (seen.has(scope.id)) return false;
    seen.add(scope.id);
    for (const call of this.callsWithin(scope)) {
      let nested = false;
      for (let p = call.parent; p && p.id !== scope.id; p = p.parent) {
        // (`for opt, sched in zip(optimizers, schedulers): opt.step()` steps every optimizer once per step: no loop of work)
        if ((p.type === 'for_statement' && !this.overOptimizers(p)) || p.type === 'while_statement') {
          nested = true;
          break;
        }
      }
      if (nested) continue;
      if (this.isTrainSignal(call)) return true;
      if (depth > 0) {
        for (const fn of this.calledFunctions(call)) {
          const body = fn.childForFieldName('body');
          if (body && !isAncestor(fn, call) && this.trainSignalOutsideLoops(body, depth - 1, seen)) return true;
        }
      }
    }
    return false;
  }

  /**
   * `for opt in optimizers: opt.step()` / `for opt, sched in zip(optimizers, schedulers): opt.step(); sched.step()`:
   * a loop whose target is the optimizer its body steps (a train signal) walks the optimizers of one step, not data.
   */
  overOptimizers(loop: Node): boolean {
    const left = loop.childForFieldName('left');
    const first = left?.type === 'identifier' ? left : left?.namedChildren[0];
    const body = loop.childForFieldName('body');
    if (first?.type !== 'identifier' || !body) return false;
    return this.callsWithin(body).some((c) => {
      const fn = c.childForFieldName('function');
      return fn?.type === 'attribute' && fn.childForFieldName('attribute')?.text === 'step' && fn.childForFieldName('object')?.text === first.text && this.isTrainSignal(c);
    });
  }

  /** `.backward(`, `<optimizer>.step(`, `xm.optimizer_step(`, `scaler.step(`. */
  isTrainSignal(call: Node): boolean {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'attribute') {
      return fn?.type === 'identifier' && fn.text === 'optimizer_step';
    }
    const attr = fn.childForFieldName('attribute')?.text;
    if (!attr) return false;
    if (TRAIN_CALL_ATTRS.has(attr)) return true;
    if (attr === 'optimizer_step') return true;
    if (attr === 'step') {
      const obj = fn.childForFieldName('object');
      if (!obj) return false;
      const t = obj.text;
      if (/(^|\.|_)(opt|optim|optimizer|optimiser|scaler)\w*$/i.test(t) || /optim/i.test(t)) return true;
      if (obj.type === 'identifier' && this.isBoundTo(obj.text, (v) => OPTIMIZER_CTORS.test(this.callee(v) ?? calleeText(v)))) return true;
    }
    return false;
  }

  /** Whether a loop iterates a DataLoader-like object. */
  iteratesLoader(loop: Node): boolean {
    if (loop.type !== 'for_statement') return false;
    let it = loop.childForFieldName('right');
    // enumerate(loader), tqdm(loader), zip(loader, ...)
    for (let k = 0; k < 3 && it?.type === 'call'; k++) {
      const name = this.callee(it) ?? calleeText(it);
      if (LOADER_CTORS.test(name)) return true;
      // tqdm(range(NUM_BATCHES)) yields ints, whatever the bound is named
      if (name === 'range') return false;
      const first = it.childForFieldName('arguments')?.namedChildren[0];
      if (!first) break;
      it = first;
    }
    if (!it) return false;
    if (it.type === 'identifier' || it.type === 'attribute') {
      const name = it.text;
      if (LOADER_NAME.test(name.split('.').pop() ?? '')) return true;
      if (it.type === 'identifier') {
        if (this.isBoundTo(name, (v) => LOADER_CTORS.test(this.callee(v) ?? calleeText(v)))) return true;
        // `pbar = tqdm(dataloader, ...)` then `for i, batch in enumerate(pbar)` (yolov5 val.py: `TQDM(dataloader)`)
        return this.isBoundTo(name, (v) => {
          if (v.type !== 'call' || !/(^|\.)tqdm$/i.test(this.callee(v) ?? calleeText(v))) return false;
          const first = v.childForFieldName('arguments')?.namedChildren[0];
          return !!first && (first.type === 'identifier' || first.type === 'attribute') && LOADER_NAME.test(first.text.split('.').pop() ?? '');
        });
      }
    }
    return false;
  }

  private computeHot(): void {
    const anchors = new Map<number, HotInfo>();
    const hotFns = new Map<number, 'train' | 'eval'>();
    const forwards: Node[] = [];
    const matchers: number[] = [];
    const loops = [...this.nodes('for_statement'), ...this.nodes('while_statement')];
    for (const loop of loops) {
      const body = loop.childForFieldName('body');
      if (!body) continue;
      const train = this.containsTrainSignal(body);
      const loader = this.iteratesLoader(loop);
      if (!train && !loader) continue;
      // an epoch loop (`for epoch in range(n): train_one_epoch(loader)`): every train signal it reaches sits in an
      // inner loop, which is the hot loop; the epoch loop's own code runs once per epoch
      // (a loop that pulls its own batch, `batch = next(data)`, is a step loop whose train signals sit in a micro-batch loop)
      if (!loader && !this.trainSignalOutsideLoops(body, 2) && !this.pullsBatch(body)) continue;
      const kind = this.underNoGrad(loop) ? 'eval' : train ? 'train' : this.bodyUnderNoGrad(body) || afterEvalMode(loop) ? 'eval' : 'train';
      anchors.set(loop.id, { anchor: loop, kind, throttled: false });
      // functions called from the loop body (≤ 2 levels) are hot too
      this.markCalledHot(body, kind, 2, hotFns);
    }
    for (const fn of this.nodes('function_definition')) {
      const name = fn.childForFieldName('name')?.text;
      const compiled = this.decorators(fn).some((d) => /compile/.test(d.text));
      if ((name === 'forward' && this.enclosingClass(fn)) || compiled || this.isWrappedByCompile(name)) {
        // a `@torch.no_grad()` forward that solves an assignment (`linear_sum_assignment`: a Hungarian matcher of
        // predictions to targets, DETR) builds the loss's targets: training-step work, not an eval pass
        const matcher = this.callsWithin(fn).some((c) => /(^|\.)linear_sum_assignment$/.test(this.callee(c) ?? calleeText(c)));
        if (!hotFns.has(fn.id)) hotFns.set(fn.id, this.underNoGrad(fn) && !matcher ? 'eval' : 'train');
        if (matcher) matchers.push(fn.id);
        forwards.push(fn);
      }
    }
    // the methods `forward` calls (`self._dequeue_and_enqueue(k)`, MoCo) run every step with it (<= 2 levels); a
    // `@torch.no_grad()` one among them is still step work (a queue update, a momentum encoder), not an eval pass
    const before = new Set(hotFns.keys());
    for (const fn of forwards) {
      const body = fn.childForFieldName('body');
      if (body) this.markCalledHot(body, hotFns.get(fn.id)!, 2, hotFns);
    }
    this.forwardCallees = new Set([...[...hotFns.keys()].filter((id) => !before.has(id)), ...matchers]);
    this.hotAnchors = anchors;
    this.hotFunctionIds = hotFns;
  }

  /** `x = next(it)` directly in a loop body (not in a nested loop): the loop takes one batch per iteration. */
  private pullsBatch(body: Node): boolean {
    for (const call of this.callsWithin(body)) {
      const fn = call.childForFieldName('function');
      if (fn?.type !== 'identifier' || fn.text !== 'next' || this.resolve(fn)) continue;
      if (call.parent?.type !== 'assignment') continue;
      let nested = false;
      for (let p: Node | null = call.parent; p && p.id !== body.id; p = p.parent) {
        if (p.type === 'for_statement' || p.type === 'while_statement' || p.type === 'function_definition') {
          nested = true;
          break;
        }
      }
      if (!nested) return true;
    }
    return false;
  }

  private isWrappedByCompile(name: string | undefined): boolean {
    if (!name) return false;
    if (!this.compileWrapped) {
      // names passed to torch.compile / torch_xla.compile, collected once (was one scan of every call per function)
      this.compileWrapped = new Set();
      for (const call of this.callsResolvedTo(['torch.compile', 'torch_xla.compile'])) {
        const first = call.childForFieldName('arguments')?.namedChildren[0];
        if (first?.type === 'identifier') this.compileWrapped.add(first.text);
      }
    }
    return this.compileWrapped.has(name);
  }

  private markCalledHot(scope: Node, kind: 'train' | 'eval', depth: number, out: Map<number, 'train' | 'eval'>): void {
    if (depth === 0) return;
    for (const call of this.callsWithin(scope)) {
      if (this.inStepClosureBody(call, scope)) continue;
      for (const fn of this.calledFunctions(call)) {
        if (out.has(fn.id) || isAncestor(fn, scope)) continue;
        out.set(fn.id, kind);
        const body = fn.childForFieldName('body');
        if (body) this.markCalledHot(body, kind, depth - 1, out);
      }
    }
  }

  /**
   * Whether `call` sits (below `scope`) in the body of a step closure: a nested def passed by name to
   * `add_step_closure`, or a lambda passed to it. That body runs after the step's graph executed, so the
   * functions it calls are not step code.
   */
  private inStepClosureBody(call: Node, scope: Node): boolean {
    for (let p = call.parent; p && p.id !== scope.id; p = p.parent) {
      if (p.type === 'lambda' && this.closureArgument(p)) return true;
      if (p.type === 'function_definition' && this.isStepClosureDef(p)) return true;
    }
    return false;
  }

  private readonly stepClosureMemo = new Map<number, boolean>();

  /** A nested def passed by name, in its enclosing block, as the closure of `add_step_closure(...)`. */
  private isStepClosureDef(def: Node): boolean {
    let r = this.stepClosureMemo.get(def.id);
    if (r !== undefined) return r;
    const name = def.childForFieldName('name')?.text;
    const holder = def.parent;
    r =
      !!name &&
      !!holder &&
      this.identifiersNamed(name).some(
        (id) => id.startIndex >= holder.startIndex && id.endIndex <= holder.endIndex && id.parent?.type === 'argument_list' && this.closureArgument(id),
      );
    this.stepClosureMemo.set(def.id, r);
    return r;
  }

  /** `fn` is the closure (first argument) of an `add_step_closure(...)` call. */
  private closureArgument(fn: Node): boolean {
    const args = fn.parent;
    const call = args?.type === 'argument_list' ? args.parent : null;
    if (call?.type !== 'call' || args!.namedChildren[0]?.id !== fn.id) return false;
    return /(^|\.)add_step_closure$/.test(this.callee(call) ?? calleeText(call));
  }

  /**
   * Project scope: a source of the functions of this module (keyed by the definition's start offset) that hot loops
   * in other modules call. Asked once, on the first hot query; the functions they call in this file (≤ 2 levels)
   * are hot too.
   */
  useProjectHot(source: () => Map<number, ProjectHot> | null): void {
    this.projectHotSource = source;
    this.projectHotFns = undefined;
  }

  /** Adds functions made hot from other modules (by definition start offset); returns the node ids newly hot. */
  addProjectHot(defs: Map<number, ProjectHot>): Node[] {
    const fns = (this.projectHotFns ??= new Map<number, ProjectHot>());
    const added: Node[] = [];
    if (!defs.size) return added;
    const mark = (fn: Node, info: ProjectHot, depth: number) => {
      const old = fns.get(fn.id);
      if (old && (old.kind === 'train' || info.kind === 'eval') && (!old.throttled || info.throttled)) return;
      const merged: ProjectHot = old
        ? { kind: old.kind === 'train' || info.kind === 'train' ? 'train' : 'eval', throttled: old.throttled && info.throttled, via: [...old.via, ...info.via.filter((v) => !old.via.some((o) => o.path === v.path && o.start === v.start))] }
        : info;
      fns.set(fn.id, merged);
      if (!old) added.push(fn);
      if (depth === 0) return;
      const body = fn.childForFieldName('body');
      if (!body) return;
      for (const call of this.callsWithin(body)) {
        if (this.inStepClosureBody(call, body)) continue;
        for (const g of this.calledFunctions(call)) if (!isAncestor(g, call)) mark(g, merged, depth - 1);
      }
    };
    for (const fn of this.nodes('function_definition')) {
      const info = defs.get(fn.startIndex);
      if (info) mark(fn, info, 2);
    }
    return added;
  }

  private projectHotFor(fn: Node): ProjectHot | null {
    if (this.projectHotSource) {
      const src = this.projectHotSource;
      this.projectHotSource = undefined;
      const defs = src();
      if (defs) this.addProjectHot(defs);
    }
    return this.projectHotFns?.get(fn.id) ?? null;
  }

  /** The hot context of a node, or null when it is not in a hot loop, `forward`, or compiled step. */
  hot(node: Node): HotInfo | null {
    if (!this.hotAnchors) this.computeHot();
    let throttled = false;
    for (let p: Node | null = node.parent, child: Node = node; p; child = p, p = p.parent) {
      if ((p.type === 'if_statement' || p.type === 'elif_clause') && p.childForFieldName('condition')?.id !== child.id && this.isThrottleCondition(p)) throttled = true;
      if (p.type === 'block' && !throttled && earlyExitThrottle(p, child, this.exitThrottleMemo)) throttled = true;
      if ((p.type === 'for_statement' || p.type === 'while_statement') && child.type === 'block' && child.id === p.childForFieldName('body')?.id) {
        const info = this.hotAnchors!.get(p.id);
        // a no_grad block in a training loop is eval work only when it holds its own loop (a validation pass);
        // a metric computed under no_grad every step (`with torch.no_grad(): kl = ...item()`) is step cost
        if (info) return { ...info, kind: info.kind === 'train' && this.noGradLoop(node, p) ? 'eval' : info.kind, throttled };
      }
      if (p.type === 'function_definition') {
        const kind = this.hotFunctionIds!.get(p.id);
        // a helper called from the training loop that runs under `@torch.no_grad()` (nanoGPT's estimate_loss) is eval work;
        // one that the hot code calls only under a throttle guard (`if step % k == 0: self.log_metrics(...)`) is throttled
        if (kind) return { anchor: p, kind: kind === 'train' && !(this.forwardCallees!.has(p.id) && !loopBetween(node, p)) && this.underNoGrad(node, p.parent ?? undefined) ? 'eval' : kind, throttled: throttled || this.calledOnlyThrottled(p) };
        // a helper that another module's hot loop calls (project scope)
        const ext = this.projectHotFns || this.projectHotSource ? this.projectHotFor(p) : null;
        if (ext) {
          // eval work when the whole helper runs without grad (`@torch.no_grad()`, a body under `with torch.no_grad():`);
          // a no_grad block around a per-parameter update inside it (norms, clipping, EMA) is still step work
          const body = p.childForFieldName('body');
          const noGrad = this.decorators(p).some((d) => /no_grad|inference_mode/.test(d.text)) || (!!body && this.bodyUnderNoGrad(body));
          const k = ext.kind === 'train' && noGrad ? 'eval' : ext.kind;
          return { anchor: p, kind: k, throttled: throttled || ext.throttled, via: ext.via };
        }
      }
    }
    return null;
  }

  private readonly throttledFnMemo = new Map<number, boolean>();

  /**
   * A function of this file whose hot call sites (calls by name or `self.name(...)` that resolve to it) all sit under a
   * throttle guard: nanotron's `if (step - 1) % interval == 0: self.train_step_logs(...)`. Memoised per function.
   */
  private calledOnlyThrottled(fn: Node): boolean {
    let r = this.throttledFnMemo.get(fn.id);
    if (r !== undefined) return r;
    this.throttledFnMemo.set(fn.id, false); // recursion guard
    const name = fn.childForFieldName('name')?.text;
    let any = false;
    r = true;
    for (const id of name ? this.identifiersNamed(name) : []) {
      const p = id.parent;
      const call =
        p?.type === 'call' && p.childForFieldName('function')?.id === id.id
          ? p
          : p?.type === 'attribute' && p.childForFieldName('attribute')?.id === id.id && p.parent?.type === 'call' && p.parent.childForFieldName('function')?.id === p.id
            ? p.parent
            : null;
      if (!call || isAncestor(fn, call) || !this.calledFunctions(call).some((f) => f.id === fn.id)) continue;
      const h = this.hot(call);
      if (!h) continue;
      any = true;
      if (!h.throttled) {
        r = false;
        break;
      }
    }
    r = any && r;
    this.throttledFnMemo.set(fn.id, r);
    return r;
  }

  /** The hot-loop anchors found in the file (loops only). */
  hotLoops(): HotInfo[] {
    if (!this.hotAnchors) this.computeHot();
    return [...this.hotAnchors!.values()];
  }

  /** `if step % k == 0`, `if step == last_step`, `if step in {...}`, `if not step % k`. */
  isThrottleCondition(ifNode: Node): boolean {
    let r = this.throttleMemo.get(ifNode.id);
    if (r === undefined) this.throttleMemo.set(ifNode.id, (r = this.throttleUncached(ifNode)));
    return r;
  }

  private throttleUncached(ifNode: Node): boolean {
    const condNode = conditionOf(ifNode);
    // `is_metric_step = (i % metric_every == 0) or is_console_step` ... `if is_metric_step:` (open_clip's train loop):
    // a flag bound once to a throttle expression throttles like the expression itself
    if (condNode?.type === 'identifier') {
      if (this.throttleFlag(condNode, 2)) return true;
      const bs = this.bindings(condNode.text);
      if (bs.length !== 1) return false;
      if (this.throttleText(bs[0].text)) return true;
      // `flag = self.should_log_this_step()` whose def in this file returns `self.global_step % interval == 0` (OLMo)
      const b = bs[0];
      const fn = b.type === 'call' ? b.childForFieldName('function') : null;
      const fname = fn?.type === 'identifier' ? fn.text : fn?.type === 'attribute' && fn.childForFieldName('object')?.text === 'self' ? fn.childForFieldName('attribute')?.text : null;
      if (!fname || callArgs(b).positional.length) return false;
      const defs = this.functionsNamed(fname);
      return defs.length === 1 && this.within('return_statement', defs[0]).some((r) => this.throttleText(r.text));
    }
    return this.throttleText(condNode?.text ?? '');
  }

  /**
   * `do_eval = False` then `if step % k == 0: do_eval = True` ... `if do_eval:` (wavenet_vocoder's train loop): a flag
   * whose bindings in its scope are all `True`/`False` literals, every `True` one under a throttle guard, throttles like
   * the guard. A parameter flag (`def train_step(..., do_eval)`) throttles when every call of the function in this file
   * passes such a flag (`depth` levels of parameters).
   */
  private throttleFlag(id: Node, depth: number): boolean {
    const scope = this.enclosingFunction(id);
    const own = (n: Node) => (this.enclosingFunction(n)?.id ?? null) === (scope?.id ?? null);
    const bs = this.bindings(id.text).filter(own);
    const param = !!scope && (scope.childForFieldName('parameters')?.namedChildren ?? []).some((p) => !!p && (p.type === 'identifier' ? p : p.childForFieldName('name') ?? p.namedChildren[0])?.text === id.text);
    if (bs.length && bs.every((b) => b.type === 'true' || b.type === 'false')) {
      const trues = bs.filter((b) => b.type === 'true');
      if (param || !trues.length) return false;
      return trues.every((t) => {
        for (let p = t.parent, child: Node = t; p && p.id !== scope?.id; child = p, p = p.parent) {
          if (p.type === 'if_statement' && p.childForFieldName('condition')?.id !== child.id && this.isThrottleCondition(p)) return true;
        }
        return false;
      });
    }
    if (bs.length || !param || depth <= 0 || !scope) return false;
    const params = (scope.childForFieldName('parameters')?.namedChildren ?? []).filter((p): p is Node => !!p && p.type !== 'comment');
    const index = params.findIndex((p) => (p.type === 'identifier' ? p : p.childForFieldName('name') ?? p.namedChildren[0])?.text === id.text);
    const name = scope.childForFieldName('name')?.text;
    if (index < 0 || !name) return false;
    let calls = 0;
    for (const ref of this.identifiersNamed(name)) {
      const call = ref.parent?.type === 'call' && ref.parent.childForFieldName('function')?.id === ref.id ? ref.parent : null;
      if (!call) continue;
      const { positional, keywords } = callArgs(call);
      const kw = keywords.get(id.text);
      const arg = kw ? kw.childForFieldName('value') : positional[index] ?? null;
      if (arg?.type !== 'identifier' || !this.throttleFlag(arg, depth - 1)) return false;
      calls++;
    }
    return calls > 0;
  }

  private throttleText(cond: string): boolean {
    return (
      // `i % 100 is 0` (old tutorials): identity of small ints, true exactly when `== 0` is
      /%\s*[\w.()\[\]'"]+\s*(==|is)\s*0/.test(cond) ||
      /^not\s+[\w.]+\s*%/.test(cond) ||
      /\b\w*(step|iter|it|epoch|batch_idx|i)\w*\s*==\s*\w*(last|final|max|total|num|end)\w*/i.test(cond) ||
      stepMembership(cond) ||
      /\b(master_process|is_master|rank\s*==\s*0|is_main_process)\b/.test(cond) && /%/.test(cond)
    );
  }

  /** Under `with torch.no_grad()` / `torch.inference_mode()` or a function decorated with them (up to `stop`). */
  underNoGrad(node: Node, stop?: Node): boolean {
    for (let p = node.parent; p && p.id !== stop?.id; p = p.parent) {
      if (p.type === 'with_statement' && noGradClause(p.child(0)?.nextSibling?.text ?? p.text.split('\n')[0])) return true;
      if (p.type === 'function_definition' && this.decorators(p).some((d) => /no_grad|inference_mode/.test(d.text))) return true;
    }
    return false;
  }

  /**
   * A no_grad block below `stop` that holds a loop around `node` (a validation pass inside the training loop). A no_grad
   * block inside a per-crop loop of the step (`for crop in crops: with torch.no_grad(): ...`, SwAV) is step work.
   */
  private noGradLoop(node: Node, stop: Node): boolean {
    let loop = false;
    for (let p = node.parent; p && p.id !== stop.id; p = p.parent) {
      if (p.type === 'for_statement' || p.type === 'while_statement') loop = true;
      if (p.type === 'with_statement' && noGradClause(p.child(0)?.nextSibling?.text ?? p.text.split('\n')[0]) && loop) return true;
      if (p.type === 'function_definition' && loop && this.decorators(p).some((d) => /no_grad|inference_mode/.test(d.text))) return true;
    }
    return false;
  }

  private bodyUnderNoGrad(body: Node): boolean {
    const first = body.namedChildren[0];
    return !!first && first.type === 'with_statement' && noGradClause(first.text.split('\n')[0]);
  }

  /** Calls inside `node`, in document order (uses the index). */
  callsWithin(node: Node): Node[] {
    return this.within('call', node);
  }

  /** Indexed nodes of a type inside `node` (binary search: the index is in document order). */
  within(type: string, node: Node): Node[] {
    const list = this.nodes(type);
    const start = node.startIndex;
    const end = node.endIndex;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid].startIndex < start) lo = mid + 1;
      else hi = mid;
    }
    const out: Node[] = [];
    for (let i = lo; i < list.length; i++) {
      const n = list[i];
      if (n.startIndex >= end) break;
      if (n.endIndex <= end) out.push(n);
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Bindings

  /** Right-hand sides assigned to a simple name anywhere in the file (a copy: callers may filter it). */
  bindings(name: string): Node[] {
    return (this.bindingIndex().get(name) ?? []).slice();
  }

  private bindingByName?: Map<string, Node[]>;

  /** name → right-hand sides, built in one pass over the assignments (`a = x`, `a, b = x, y`). */
  private bindingIndex(): Map<string, Node[]> {
    if (this.bindingByName) return this.bindingByName;
    const index = new Map<string, Node[]>();
    const add = (name: string, value: Node) => {
      const list = index.get(name);
      if (list) list.push(value);
      else index.set(name, [value]);
    };
    for (const a of this.nodes('assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (!left || !right) continue;
      if (left.type === 'pattern_list' || left.type === 'tuple_pattern') {
        if (right.type === 'expression_list') {
          const rs = right.namedChildren;
          left.namedChildren.forEach((l, i) => {
            if (l && rs[i]) add(l.text, rs[i]!);
          });
        }
        continue;
      }
      add(left.text, right);
    }
    return (this.bindingByName = index);
  }

  /** Same-file call sites that may reach the function definition `fn` (see calledFunctions), in document order. */
  callSitesOf(fn: Node): readonly Node[] {
    if (!this.callSites) {
      this.callSites = new Map();
      for (const call of this.nodes('call')) {
        for (const f of this.calledFunctions(call)) {
          let list = this.callSites.get(f.id);
          if (!list) this.callSites.set(f.id, (list = []));
          list.push(call);
        }
      }
    }
    return this.callSites.get(fn.id) ?? [];
  }

  private callSites?: Map<number, Node[]>;

  /** The `for` loops whose innermost enclosing function is `fn` (null: module level), in document order. */
  forLoopsIn(fn: Node | null): readonly Node[] {
    if (!this.loopsByScope) {
      this.loopsByScope = new Map();
      for (const loop of this.nodes('for_statement')) {
        const key = this.enclosingFunction(loop)?.id ?? null;
        let list = this.loopsByScope.get(key);
        if (!list) this.loopsByScope.set(key, (list = []));
        list.push(loop);
      }
    }
    return this.loopsByScope.get(fn?.id ?? null) ?? [];
  }

  private loopsByScope?: Map<number | null, Node[]>;

  /** Assignments whose target is an attribute named `attr` (`self.attr = …`, `obj.attr = …`), in document order. */
  attributeAssignments(attr: string): readonly Node[] {
    if (!this.attrAssignments) {
      this.attrAssignments = new Map();
      for (const a of this.nodes('assignment')) {
        const left = a.childForFieldName('left');
        const name = left?.type === 'attribute' ? left.childForFieldName('attribute')?.text : undefined;
        if (name === undefined) continue;
        let list = this.attrAssignments.get(name);
        if (!list) this.attrAssignments.set(name, (list = []));
        list.push(a);
      }
    }
    return this.attrAssignments.get(attr) ?? [];
  }

  private attrAssignments?: Map<string, Node[]>;

  isBoundTo(name: string, pred: (value: Node) => boolean): boolean {
    return this.bindings(name).some((v) => v.type === 'call' && pred(v));
  }

  // -------------------------------------------------------------------------------------------
  // CUDA device strings (where a value lives is the program model's: ProgramModel.namesCuda)

  /** String literal (or f-string) naming a CUDA device: "cuda", "cuda:0", f"cuda:{rank}". */
  isCudaString(node: Node): boolean {
    if (node.type !== 'string') return false;
    const content = stringContent(node);
    if (content === null) return false;
    if (isFString(node)) return /^cuda(:|$|\{)/.test(content);
    return /^cuda(:\d+)?$/.test(content);
  }

  /** Inside an `if`/ternary that has an XLA or TPU arm or condition: code already made XLA-aware. */
  inXlaAwareBranch(node: Node): boolean {
    const hit = this.xlaAwareMemo.get(node);
    if (hit !== undefined) return hit;
    // the answer for a node is its parent's test plus the answer for the parent (memoized per node)
    return memoizedUp(node, this.xlaAwareMemo, false, (p, n) => {
      if (p.type === 'if_statement' || p.type === 'conditional_expression') {
        let hit = this.xlaBranchMemo.get(p);
        if (hit === undefined) this.xlaBranchMemo.set(p, (hit = this.codeMentionsXla(p.startIndex, p.endIndex)));
        // the condition or another branch names XLA; XLA calls in the node's own branch alone
        // (`if step % 100 == 0: torch_xla.sync(); print(torch.cuda.max_memory_allocated())`) do not make it XLA-aware
        if (hit && (p.type !== 'if_statement' || this.xlaOutside(p, n))) return true;
      }
      if ((p.type === 'block' || p.type === 'module') && this.afterXlaGuard(p, n)) return true;
      if (p.type === 'function_definition') return this.helperOfXlaAwareBranch(p);
      return p.type === 'module' ? false : undefined;
    });
  }

  /**
   * A private module-level helper (`def _infer_slurm_init(cfg):`) that the file calls only from XLA-aware branches and
   * never passes around: fairseq's distributed utils return early from `infer_init_method` with
   * `if cfg.distributed_init_method is not None or cfg.tpu: return`, then call `_infer_slurm_init`,
   * `_infer_torch_distributed_launch_init`, ...: their bodies are the non-TPU arm too.
   */
  private helperOfXlaAwareBranch(fn: Node): boolean {
    const known = this.helperMemo.get(fn.id);
    if (known !== undefined) return known;
    this.helperMemo.set(fn.id, false); // recursion (a helper that calls itself) answers no
    const name = fn.childForFieldName('name')?.text ?? '';
    const owner = fn.parent?.type === 'decorated_definition' ? fn.parent.parent : fn.parent;
    let r = false;
    if (/^_[A-Za-z0-9]\w*$/.test(name) && !name.endsWith('__') && owner?.type === 'module') {
      const refs = this.identifiersNamed(name).filter((id) => id.id !== fn.childForFieldName('name')?.id);
      r = refs.length > 0 && refs.every((id) => {
        const call = id.parent;
        return call?.type === 'call' && call.childForFieldName('function')?.id === id.id && this.inXlaAwareBranch(call);
      });
    }
    this.helperMemo.set(fn.id, r);
    return r;
  }

  /**
   * Whether `stmt` follows, in `block`, an early-exit guard on XLA: `if <XLA/TPU condition>: return …` (no else),
   * so the statements after it are the non-XLA arm (Accelerate's `collate_fn`: `if accelerator.distributed_type ==
   * DistributedType.TPU: return tokenizer.pad(..., padding="max_length")` then `return tokenizer.pad(..., padding="longest")`).
   */
  private afterXlaGuard(block: Node, stmt: Node): boolean {
    let first = this.xlaGuardMemo.get(block.id);
    if (first === undefined) {
      first = Infinity;
      for (const s of block.namedChildren) {
        if (!s || s.type !== 'if_statement' || s.childForFieldName('alternative')) continue;
        const cond = s.childForFieldName('condition');
        const body = s.childForFieldName('consequence');
        const last = body?.namedChildren.filter((c) => c?.type !== 'comment').pop();
        if (cond && last && EXITS.has(last.type) && mentionsXla(cond.text)) {
          first = s.startIndex;
          break;
        }
      }
      this.xlaGuardMemo.set(block.id, first);
    }
    return first < stmt.startIndex;
  }

  /** Whether `ifNode`'s text outside its branch `branch` names XLA. */
  private xlaOutside(ifNode: Node, clause: Node): boolean {
    // an `elif` condition belongs to the test, not to the branch's body
    const branch = clause.type === 'elif_clause' ? clause.childForFieldName('consequence') : clause.type === 'else_clause' ? clause.childForFieldName('body') ?? clause : clause;
    if (!branch || branch.type !== 'block' && branch.type !== 'else_clause') return true;
    return this.codeMentionsXla(ifNode.startIndex, branch.startIndex) || this.codeMentionsXla(branch.endIndex, ifNode.endIndex);
  }

  /**
   * Whether the code in [start, end) names XLA or a TPU, its comments left out: a note in a CUDA branch (`# on TPU this
   * is the XLA device`, a migration TODO) is no guard, and it silenced every finding of the branch.
   */
  private codeMentionsXla(start: number, end: number): boolean {
    if (!mentionsXla(this.text.slice(start, end))) return false;
    const comments = this.nodes('comment');
    // the first comment ending after `start` (comments are in document order)
    let lo = 0;
    for (let hi = comments.length; lo < hi; ) {
      const mid = (lo + hi) >> 1;
      if (comments[mid].endIndex <= start) lo = mid + 1;
      else hi = mid;
    }
    let code = '';
    let at = start;
    for (let i = lo; i < comments.length && comments[i].startIndex < end; i++) {
      code += this.text.slice(at, Math.max(at, comments[i].startIndex)) + ' ';
      at = Math.min(end, Math.max(at, comments[i].endIndex));
    }
    return mentionsXla(code + this.text.slice(at, end));
  }
}

// ---------------------------------------------------------------------------------------------
// Node helpers

const FUNCTION_DEF: ReadonlySet<string> = new Set(['function_definition']);
const CLASS_DEF: ReadonlySet<string> = new Set(['class_definition']);
const nearestMemos = new WeakMap<ReadonlySet<string>, WeakMap<Tree, NodeMemo<{ ancestor: Node; child: Node } | null>>>();

/**
 * The nearest proper ancestor of `node` whose type is in `types`, with its child on the way to `node` (null: none).
 * Memoized per `types` set (pass a module-level constant), tree and node, each walk stopping at an answered node: asking
 * it for every node costs one visit per ancestor, not one walk per node (a 20,000-deep `a + b + …` chain was quadratic).
 */
export function nearestAncestor(node: Node, types: ReadonlySet<string>): { ancestor: Node; child: Node } | null {
  return memoizedUp<{ ancestor: Node; child: Node } | null>(node, nearestMemo(types, node.tree), null, (p, n) => (types.has(p.type) ? { ancestor: p, child: n } : undefined));
}

/** nearestAncestor's memo for `types` in `tree` (created on first use). */
function nearestMemo(types: ReadonlySet<string>, tree: Tree): NodeMemo<{ ancestor: Node; child: Node } | null> {
  let byTree = nearestMemos.get(types);
  if (!byTree) nearestMemos.set(types, (byTree = new WeakMap()));
  let memo = byTree.get(tree);
  if (!memo) byTree.set(tree, (memo = new NodeMemo(tree)));
  return memo;
}

/**
 * Walks up from `node` until a step answers (`step(parent, child)` returns a value), a node on the way is already
 * answered in `memo`, or the root (`fallback`); every node passed gets that answer. Asked for every node, that is one
 * visit per ancestor, not one walk per node, and a loop: a recursion as deep as the tree overflowed the stack on a
 * 20,000-term `a + b + …` chain.
 */
export function memoizedUp<T>(node: Node, memo: NodeMemo<T>, fallback: T, step: (parent: Node, child: Node) => T | undefined): T {
  // an answered node (most asks): no path to record
  const known = memo.get(node);
  if (known !== undefined) return known;
  const path: Node[] = [];
  let r = fallback;
  for (let n: Node = node; ; ) {
    const hit = memo.get(n);
    if (hit !== undefined) {
      r = hit;
      break;
    }
    path.push(n);
    const p = n.parent;
    if (!p) break;
    const answer = step(p, n);
    if (answer !== undefined) {
      r = answer;
      break;
    }
    n = p;
  }
  for (const n of path) memo.set(n, r);
  return r;
}

/**
 * `root.descendantForIndex(start, end)` answered by a walk down the node API: tree-sitter's
 * ts_node__descendant_for_byte_range (lib/src/node.c) over the visible children, the same tests in the same order (a
 * child that ends before `end`, or at/before `start` unless it is empty, is passed over; one that starts after `start`
 * ends the search; else the walk goes into it). A long child list (the module's statements) is entered by a binary
 * search on the children's ends, which never decrease. web-tree-sitter's own call walked every earlier statement of
 * the module inside WebAssembly, once per occurrence of a name: quadratic in the module's length (a 1 MB file).
 */
export function descendantForRange(root: Node, start: number, end: number): Node {
  let node = root;
  for (let descended = true; descended; ) {
    descended = false;
    const kids = node.children;
    let k = 0;
    if (kids.length > 8) {
      let hi = kids.length;
      while (k < hi) {
        const mid = (k + hi) >> 1;
        if (kids[mid]!.endIndex < end) k = mid + 1;
        else hi = mid;
      }
    }
    for (; k < kids.length; k++) {
      const child = kids[k];
      if (!child) continue;
      const childEnd = child.endIndex;
      if (childEnd < end) continue;
      const childStart = child.startIndex;
      if (childStart === childEnd ? childEnd < start : childEnd <= start) continue;
      if (start < childStart) break;
      node = child;
      descended = true;
      break;
    }
  }
  return node;
}

/** An ASCII letter, digit or `_` (a character of /[A-Za-z0-9_]/). */
function isWordCode(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}

export function isAncestor(ancestor: Node, node: Node): boolean {
  return node.startIndex >= ancestor.startIndex && node.endIndex <= ancestor.endIndex && !(ancestor.id === node.id);
}

export function calleeText(call: Node): string {
  return call.childForFieldName('function')?.text ?? '';
}

/**
 * A loop with no training signal that runs after `model.eval()` in the same block, with no `.train()` call in
 * between: an evaluation pass without `torch.no_grad()` (pytorch/xla colab resnet18-training's test_loop_fn).
 */
function afterEvalMode(loop: Node): boolean {
  for (let s = loop.previousNamedSibling; s; s = s.previousNamedSibling) {
    const call = s.type === 'expression_statement' ? s.namedChildren[0] : null;
    const fn = call?.type === 'call' ? call.childForFieldName('function') : null;
    const method = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : null;
    if (method === 'eval' && call!.childForFieldName('arguments')?.namedChildren.length === 0) return true;
    if (/\.train\(/.test(s.text)) return false;
  }
  return false;
}

/** A loop iterable that is `enumerate(...)`, also inside a progress bar: `tqdm(enumerate(loader))` (yields (int, batch)). */
export function isEnumerateIter(right: Node | null | undefined): boolean {
  for (let k = 0; k < 3 && right?.type === 'call'; k++) {
    const callee = calleeText(right);
    if (/(^|\.)enumerate$/.test(callee)) return true;
    if (!/(^|\.)tqdm(_notebook)?$/.test(callee)) return false;
    right = callArgs(right).positional[0];
  }
  return false;
}

/** The literal content of a string node (without quotes/prefix); f-strings keep `{...}` text. Null for concatenations. */
export function stringContent(node: Node): string | null {
  if (node.type !== 'string') return null;
  let out = '';
  for (const c of node.namedChildren) {
    if (!c) continue;
    if (c.type === 'string_start' || c.type === 'string_end') continue;
    out += c.text;
  }
  return out;
}

export function isFString(node: Node): boolean {
  const start = node.namedChildren[0];
  return !!start && start.type === 'string_start' && /f/i.test(start.text);
}

export function mentionsXla(text: string): boolean {
  return /\bxla\b|torch_xla|\bxm\.|\btpu\b|torch_tpu|\bTPU\b|use_tpu|is_tpu|_xla\b|xla_/i.test(text);
}

/** Argument nodes of a call: positional and keyword. */
export interface CallArgs {
  readonly positional: readonly Node[];
  readonly keywords: ReadonlyMap<string, Node>;
  readonly list: Node | null;
}

/**
 * What is remembered of a call node: answers of its tree alone (the text and the imports), asked of the same calls over
 * and over by many rules. Kept on the mirror's handle (MirrorNode.memo); a node without a mirror in a WeakMap.
 */
class CallMemo {
  args: CallArgs | undefined = undefined;
  method: string | null | undefined = undefined;
  callee: string | null | undefined = undefined;
}

const callMemos = new WeakMap<Node, CallMemo>();

function callMemo(call: Node): CallMemo {
  if (call instanceof MirrorNode) return (call.memo ??= new CallMemo()) as CallMemo;
  let r = callMemos.get(call);
  if (!r) callMemos.set(call, (r = new CallMemo()));
  return r;
}

export function callArgs(call: Node): CallArgs {
  const m = callMemo(call);
  return (m.args ??= splitArgs(call));
}

/**
 * The keywords of every call without one: most calls have none, and an empty Map per call was the largest item of a
 * call-dense file's heap (heap snapshot, 20,000 calls: 13 MB of 40 MB). Read-only like every CallArgs.keywords.
 */
const NO_KEYWORDS: ReadonlyMap<string, Node> = new Map();

function splitArgs(call: Node): CallArgs {
  const list = call.childForFieldName('arguments');
  const positional: Node[] = [];
  const kv: (string | Node)[] = [];
  if (list && list.type === 'argument_list') {
    for (const a of list.namedChildren) {
      if (!a || a.type === 'comment') continue;
      if (a.type === 'keyword_argument') {
        const name = a.childForFieldName('name')?.text;
        if (name) setKeyword(kv, name, a);
      } else positional.push(a);
    }
  }
  // copies of exact length: an array grown by push from empty holds 17 slots (V8 grows capacity to n + n/2 + 16), and
  // every call's arguments are kept for the whole analysis
  return { positional: positional.length ? positional.slice() : positional, keywords: kv.length ? new Keywords(kv.slice()) : NO_KEYWORDS, list };
}

/** Adds a keyword to name, node, name, node, ...: a repeated name keeps its first place and takes the last node (a Map's `set`). */
function setKeyword(kv: (string | Node)[], name: string, node: Node): void {
  for (let k = 0; k < kv.length; k += 2) {
    if (kv[k] === name) {
      kv[k + 1] = node;
      return;
    }
  }
  kv.push(name, node);
}

/**
 * A call's keyword arguments by name: a Map's behaviour (a repeated name keeps its first place and its last node) over
 * one exact-length array of names and nodes (setKeyword). A Map of one to three entries is about 184 bytes (V8's smallest
 * OrderedHashMap: four entries of three slots and two buckets); this 80-112, and a keyword-dense 1 MB file held 16,800
 * of them after its analysis (3.1 MB; heap snapshot of the bench's torch shape).
 */
class Keywords implements ReadonlyMap<string, Node> {
  /** name, node, name, node, ... in first-seen order, each name once */
  constructor(private readonly kv: readonly (string | Node)[]) {}

  get(name: string): Node | undefined {
    const kv = this.kv;
    for (let k = 0; k < kv.length; k += 2) if (kv[k] === name) return kv[k + 1] as Node;
    return undefined;
  }
  has(name: string): boolean {
    return this.get(name) !== undefined;
  }
  get size(): number {
    return this.kv.length >> 1;
  }
  forEach(fn: (value: Node, key: string, map: ReadonlyMap<string, Node>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }
  *entries(): MapIterator<[string, Node]> {
    const kv = this.kv;
    for (let k = 0; k < kv.length; k += 2) yield [kv[k] as string, kv[k + 1] as Node];
  }
  *keys(): MapIterator<string> {
    for (const [k] of this.entries()) yield k;
  }
  *values(): MapIterator<Node> {
    for (const [, v] of this.entries()) yield v;
  }
  [Symbol.iterator](): MapIterator<[string, Node]> {
    return this.entries();
  }
}

/** The value node of a keyword argument node. */
export function kwValue(kw: Node | undefined): Node | null {
  return kw?.childForFieldName('value') ?? null;
}

/** Method name of `x.meth(...)`, else null (remembered per node, like callArgs: two field lookups each). */
export function methodName(call: Node): string | null {
  const m = callMemo(call);
  let r = m.method;
  if (r === undefined) {
    const fn = call.childForFieldName('function');
    r = m.method = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text ?? null : null;
  }
  return r;
}

/** Receiver of `x.meth(...)`, else null. */
export function receiver(call: Node): Node | null {
  const fn = call.childForFieldName('function');
  return fn?.type === 'attribute' ? fn.childForFieldName('object') : null;
}

/** The statement (direct child of a block or module) containing `node`. */
/**
 * A `with` clause that turns grad off: `torch.no_grad()`, `torch.inference_mode()`; not a mode picked at run time
 * (`with (torch.enable_grad() if is_train else torch.no_grad()):`, one loop for training and evaluation).
 */
function noGradClause(text: string): boolean {
  return /no_grad|inference_mode/.test(text) && !/enable_grad|\bif\b[^:]*\belse\b/.test(text);
}

/**
 * The test of an `if`/`elif`/`while` (or a ternary's) without the parentheses around it: `if(train_on_gpu):` and
 * `if (args.cuda and not fp16):` test `train_on_gpu` and the `and`. Compare node identity with the raw field instead.
 */
export function conditionOf(stmt: Node | null | undefined): Node | null {
  let c = stmt ? (stmt.type === 'conditional_expression' ? stmt.namedChildren[1] ?? null : stmt.childForFieldName('condition')) : null;
  while (c?.type === 'parenthesized_expression' && c.namedChildren.length === 1) c = c.namedChildren[0]!;
  return c;
}

export function enclosingStatement(node: Node): Node {
  let n: Node = node;
  while (n.parent && n.parent.type !== 'block' && n.parent.type !== 'module') n = n.parent;
  return n;
}

/**
 * Names of a process, not of a step: `if RANK in {-1, 0}:` / `if args.local_rank in [-1, 0]:` runs its block on every step
 * of those ranks, so it throttles nothing.
 */
const PROCESS_NAME = /rank|gpu|device|process|proc|node|world|worker|host|master|main/i;

/** `step in {10, 1000}` / `epoch in (0, last)`: a literal-collection membership test of something other than a rank (nor `not in`). */
function stepMembership(cond: string): boolean {
  for (const m of cond.matchAll(/([\w.]+)\s+in\s+[{[(]/g)) {
    const left = m[1].split('.').pop() ?? '';
    if (left === 'not' || PROCESS_NAME.test(left)) continue;
    return true;
  }
  return false;
}

/**
 * An earlier statement of the block that leaves unless it is a logging step: `if not self.metrics_processor.should_log(step): return`
 * (torchtitan), `if step % log_every != 0: continue`. What follows runs only on those steps.
 */
function earlyExitThrottle(block: Node, child: Node, memo: Map<number, number>): boolean {
  // where the block's first such statement starts (Infinity: none; a null child ends the statements looked at)
  let first = memo.get(block.id);
  if (first === undefined) {
    first = Infinity;
    for (const st of block.namedChildren) {
      if (!st) break;
      if (st.type !== 'if_statement' || st.childrenForFieldName('alternative').some(Boolean)) continue;
      const body = (st.childForFieldName('consequence')?.namedChildren ?? []).filter((b): b is Node => !!b && b.type !== 'comment');
      if (body.length !== 1 || !/^(return_statement|continue_statement)$/.test(body[0].type)) continue;
      const cond = st.childForFieldName('condition')?.text ?? '';
      if (/^not\s+[\w.]*\b(should_log|should_report|is_log_step|log_step)\w*\s*\(/.test(cond) || /%\s*[\w.()[\]]+\s*!=\s*0\s*$/.test(cond)) {
        first = st.startIndex;
        break;
      }
    }
    memo.set(block.id, first);
  }
  return first < child.startIndex;
}

/** A `for`/`while` loop strictly between `node` and its ancestor `stop`. */
function loopBetween(node: Node, stop: Node): boolean {
  for (let p = node.parent; p && p.id !== stop.id; p = p.parent) if (p.type === 'for_statement' || p.type === 'while_statement') return true;
  return false;
}
