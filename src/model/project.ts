/**
 * Project scope (issue 9): the same-project modules a file imports, parsed once, with their top-level functions,
 * classes (+ methods), module constants and re-exports, so that a rule can follow a call into another module.
 * Pure engine: hosts pass a reader in (the CLI reads from disk through its safe reader, the editor from open
 * documents first). Paths are kept with forward slashes.
 */
import { parsePython, type Node, type Tree } from '../core/parse';
import { Semantics } from '../core/semantics';

export interface ProjectHost {
  /** The file's text, or null when it is absent, unreadable, too large or not a regular file. */
  readFile(path: string): string | null;
  /**
   * The Python files under a project root (absolute, forward slashes), for facts that flow from importers to the
   * modules they import (a helper called from another module's training loop). Optional: without it only the
   * modules reached through imports are known.
   */
  listPython?(root: string, max: number): string[];
}

export interface ProjectLimits {
  /** Modules parsed at most (beyond, imports stay unresolved). */
  maxModules: number;
  /** A module longer than this (UTF-16 units) is not parsed. */
  maxChars: number;
  /** Re-export / attribute hops followed at most. */
  maxDepth: number;
}

export const DEFAULT_PROJECT_LIMITS: ProjectLimits = { maxModules: 400, maxChars: 1_000_000, maxDepth: 6 };

/** What an import binds: a module (`import a.b as m`, `from . import m` when `m` is a module) or a name in one. */
export interface ImportRef {
  /** Leading dots of a relative import (0: absolute). */
  level: number;
  /** Dotted module path after the dots ('' for `from . import x`). */
  module: string;
  /** The imported member (`from m import name`), absent for `import m`. */
  name?: string;
  /** `from m import *` (stored under the key `*:<level>:<module>`): binds whatever m defines. */
  star?: boolean;
  /** `import a.b` binds `a`: the bound name refers to the first segment only. */
  headOnly?: boolean;
  /** The import statement. */
  node: Node;
}

export interface ModuleEntry {
  path: string;
  text: string;
  tree: Tree;
  sema: Semantics;
  functions: Map<string, Node>;
  classes: Map<string, Node>;
  /** `NAME = value` at top level: the assignment's right-hand side. */
  constants: Map<string, Node>;
  /** Top-level import bindings by bound name (re-exports of an `__init__.py` included). */
  imports: Map<string, ImportRef>;
}

export type DefinitionKind = 'function' | 'class' | 'method' | 'constant';

export interface Resolved {
  kind: DefinitionKind;
  /** function_definition, class_definition, or a constant's value. */
  def: Node;
  path: string;
  module: ModuleEntry;
}

/** What rules see (`RuleContext.project`): resolution into the other modules of the project. */
export interface ProjectView {
  /** The definition a call's callee names in another module of the project, or null. */
  resolveCall(call: Node, sema: Semantics, path: string): Resolved | null;
  /** The definition an identifier or attribute chain names in another module, or null. */
  resolveName(node: Node, sema: Semantics, path: string): Resolved | null;
  /** A loaded module (by normalized path). */
  module(path: string): ModuleEntry | null;
  /** The text of a loaded module (to locate related positions). */
  textOf(path: string): string | null;
  /** A fact derived from the whole project, built once and kept until a module changes (see ProjectIndex.derived). */
  derived?<T>(key: string, build: () => T): T;
  /** The project's Python files (empty when the host cannot list them), bounded by the module limit. */
  projectFiles?(): string[];
}

/**
 * Top-level names never looked up as project files (saves reads): the torch family and standard-library modules a
 * project does not shadow. Third-party names (`datasets`, `models`, `transformers`) are looked up: a script's sibling
 * `datasets.py` shadows the library of that name.
 */
const EXTERNAL = new Set([
  'torch', 'torch_xla', 'torchvision', 'torchaudio', 'numpy', 'os', 'sys', 're', 'math', 'time', 'json', 'argparse', 'logging', 'random',
  'collections', 'itertools', 'functools', 'pathlib', 'typing', 'dataclasses', 'subprocess', 'datetime', 'copy', 'pickle', 'shutil', 'glob',
  'warnings', 'abc', 'io', 'contextlib', '__future__', 'enum', 'string', 'struct', 'threading', 'multiprocessing', 'queue', 'socket',
  'tempfile', 'traceback', 'inspect', 'types', 'hashlib', 'uuid', 'csv', 'gzip', 'zipfile', 'tarfile', 'urllib',
]);

export function normalizePath(p: string): string {
  let s = p.replace(/\\/g, '/');
  const parts: string[] = [];
  const abs = s.startsWith('/');
  const drive = /^[A-Za-z]:\//.test(s) ? s.slice(0, 2) : '';
  if (drive) s = s.slice(2);
  for (const seg of s.split('/')) {
    if (!seg || seg === '.') continue;
    if (seg === '..') {
      if (parts.length && parts[parts.length - 1] !== '..') parts.pop();
      else if (!abs && !drive) parts.push('..');
      continue;
    }
    parts.push(seg);
  }
  return `${drive}${abs || drive ? '/' : ''}${parts.join('/')}`;
}

function dirname(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? (i === 0 ? '/' : '.') : p.slice(0, i);
}

function join(...parts: string[]): string {
  return normalizePath(parts.filter(Boolean).join('/'));
}

/** The top-level import bindings of a module tree (imports inside functions and classes are not project-level). */
export function importBindings(root: Node): Map<string, ImportRef> {
  const out = new Map<string, ImportRef>();
  const visit = (block: Node) => {
    for (const st of block.namedChildren) {
      if (!st) continue;
      if (st.type === 'import_statement') {
        for (const c of st.namedChildren) {
          if (!c) continue;
          if (c.type === 'dotted_name') {
            const head = c.text.split('.')[0];
            if (!out.has(head) || out.get(head)!.headOnly) out.set(head, { level: 0, module: c.text.includes('.') ? c.text : head, headOnly: c.text.includes('.'), node: st });
          } else if (c.type === 'aliased_import') {
            const name = c.childForFieldName('name')?.text;
            const alias = c.childForFieldName('alias')?.text;
            if (name && alias) out.set(alias, { level: 0, module: name, node: st });
          }
        }
      } else if (st.type === 'import_from_statement') {
        const modNode = st.childForFieldName('module_name');
        if (!modNode) continue;
        let level = 0;
        let module = modNode.text;
        if (modNode.type === 'relative_import') {
          const prefix = modNode.namedChildren.find((n) => n?.type === 'import_prefix')?.text ?? '';
          level = prefix.length;
          module = modNode.namedChildren.find((n) => n?.type === 'dotted_name')?.text ?? '';
        }
        // `from utils import *` (StyleTTS2's train script): a name the file does not bind may come from there
        if (st.namedChildren.some((c) => c?.type === 'wildcard_import')) out.set(`*:${level}:${module}`, { level, module, star: true, node: st });
        for (const c of st.childrenForFieldName('name')) {
          if (!c) continue;
          if (c.type === 'dotted_name') out.set(c.text, { level, module, name: c.text, node: st });
          else if (c.type === 'aliased_import') {
            const name = c.childForFieldName('name')?.text;
            const alias = c.childForFieldName('alias')?.text;
            if (name && alias) out.set(alias, { level, module, name, node: st });
          }
        }
      } else if (st.type === 'if_statement' || st.type === 'try_statement') {
        // `try: from .x import f except ImportError: ...` and `if TYPE_CHECKING:` still bind at module level
        for (const b of st.namedChildren) {
          if (!b) continue;
          if (b.type === 'block') visit(b);
          else for (const bb of b.namedChildren) if (bb?.type === 'block') visit(bb);
        }
      }
    }
  };
  visit(root);
  return out;
}

function indexModule(path: string, text: string): ModuleEntry {
  const tree = parsePython(text);
  const sema = new Semantics(tree, text);
  const functions = new Map<string, Node>();
  const classes = new Map<string, Node>();
  const constants = new Map<string, Node>();
  for (const st0 of tree.rootNode.namedChildren) {
    if (!st0) continue;
    const st = st0.type === 'decorated_definition' ? st0.childForFieldName('definition') ?? st0 : st0;
    if (st.type === 'function_definition') {
      const n = st.childForFieldName('name')?.text;
      if (n) functions.set(n, st);
    } else if (st.type === 'class_definition') {
      const n = st.childForFieldName('name')?.text;
      if (n) classes.set(n, st);
    } else if (st.type === 'expression_statement' && st.namedChildren[0]?.type === 'assignment') {
      const a = st.namedChildren[0]!;
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (left?.type === 'identifier' && right) constants.set(left.text, right);
    }
  }
  return { path, text, tree, sema, functions, classes, constants, imports: importBindings(tree.rootNode) };
}

/** The module graph of one or more project roots. */
export class ProjectIndex implements ProjectView {
  readonly roots: string[];
  private readonly limits: ProjectLimits;
  private readonly modules = new Map<string, ModuleEntry>();
  /** Texts read (null: absent), so that a missing candidate is asked for once. */
  private readonly reads = new Map<string, string | null>();
  /** Module → the modules it imports (resolved paths), for dependants. */
  private readonly deps = new Map<string, Set<string>>();
  private readonly bindingsMemo = new WeakMap<Semantics, Map<string, ImportRef>>();
  /** Files analysed with their own text (an editor's unsaved document): resolution from them uses that text. */
  parsed = 0;
  /** Project-wide facts (cross-module hot functions, reverse call edges), dropped on any update. */
  private readonly derivedFacts = new Map<string, unknown>();
  private files?: string[];

  /** Relative paths (the CLI's display paths) are taken from here. */
  private readonly cwd: string;

  constructor(roots: string[], private readonly host: ProjectHost, limits: Partial<ProjectLimits> & { cwd?: string } = {}) {
    this.cwd = normalizePath(limits.cwd ?? '/');
    this.roots = roots.map((r) => this.abs(r));
    this.limits = { ...DEFAULT_PROJECT_LIMITS, ...limits };
  }

  /** The normalized absolute form of a path (relative ones from `cwd`). */
  abs(path: string): string {
    const p = path.replace(/\\/g, '/');
    return normalizePath(p.startsWith('/') || /^[A-Za-z]:\//.test(p) ? p : `${this.cwd}/${p}`);
  }

  private read(path: string): string | null {
    if (this.reads.has(path)) return this.reads.get(path)!;
    let text: string | null = null;
    if (this.inRoots(path)) {
      try {
        text = this.host.readFile(path);
      } catch {
        text = null;
      }
    }
    if (text !== null && text.length > this.limits.maxChars) text = null;
    this.reads.set(path, text);
    return text;
  }

  private inRoots(path: string): boolean {
    if (!this.roots.length) return true;
    return this.roots.some((r) => path === r || path.startsWith(r.endsWith('/') ? r : `${r}/`));
  }

  private exists(path: string): boolean {
    return this.read(path) !== null;
  }

  /** The parsed module at `path` (read through the host), or null. */
  module(path: string): ModuleEntry | null {
    const p = this.abs(path);
    const hit = this.modules.get(p);
    if (hit) return hit;
    if (this.modules.size >= this.limits.maxModules) return null;
    const text = this.read(p);
    if (text === null) return null;
    const entry = indexModule(p, text);
    this.parsed++;
    this.modules.set(p, entry);
    return entry;
  }

  /** A project-wide fact, built once per index state: every `update` drops them all (a change anywhere can move them). */
  derived<T>(key: string, build: () => T): T {
    if (this.derivedFacts.has(key)) return this.derivedFacts.get(key) as T;
    const v = build();
    this.derivedFacts.set(key, v);
    return v;
  }

  /** The Python files under the roots (through the host's lister, once; bounded by the module limit). */
  projectFiles(): string[] {
    if (this.files) return this.files;
    const out = new Set<string>();
    if (this.host.listPython) {
      for (const r of this.roots) {
        let list: string[] = [];
        try {
          list = this.host.listPython(r, this.limits.maxModules);
        } catch {
          list = [];
        }
        for (const f of list) if (out.size < this.limits.maxModules) out.add(this.abs(f));
      }
    }
    return (this.files = [...out].sort());
  }

  textOf(path: string): string | null {
    const p = this.abs(path);
    return this.modules.get(p)?.text ?? this.read(p);
  }

  /**
   * A file changed (`text`) or was deleted (null): its parse is dropped and read again on the next use.
   * Returns the files whose analysis may change: the file and its dependants.
   */
  update(path: string, text: string | null): string[] {
    const p = this.abs(path);
    const affected = [p, ...this.dependants(p)];
    const old = this.modules.get(p);
    if (old && old.text === text) return [];
    this.derivedFacts.clear();
    if (text === null || !this.reads.has(p) || this.reads.get(p) === null) this.files = undefined;
    if (old) {
      old.tree.delete();
      this.modules.delete(p);
    }
    this.reads.delete(p);
    if (text !== null) this.reads.set(p, text.length > this.limits.maxChars ? null : text);
    else this.reads.set(p, null);
    this.deps.delete(p);
    // a created or deleted file can change what other imports resolve to: forget every cached absence
    for (const [k, v] of [...this.reads]) if (v === null && k !== p) this.reads.delete(k);
    return affected;
  }

  /** The loaded files that import `path`, directly or through other modules. */
  dependants(path: string): string[] {
    const p = this.abs(path);
    const out = new Set<string>();
    const todo = [p];
    while (todo.length) {
      const cur = todo.pop()!;
      for (const [from, to] of this.deps) {
        if (to.has(cur) && !out.has(from) && from !== p) {
          out.add(from);
          todo.push(from);
        }
      }
    }
    return [...out].sort();
  }

  /**
   * The project modules the module at `path` imports, directly or through at most `hops` modules (as recorded by
   * the last `load`): facts that flow from importers (a helper called from a hot loop) can change in them when
   * `path` changes.
   */
  dependencies(path: string, hops = 3): string[] {
    const p = this.abs(path);
    const out = new Set<string>();
    let frontier = [p];
    for (let hop = 0; hop < hops && frontier.length; hop++) {
      const next: string[] = [];
      for (const cur of frontier) {
        for (const dep of this.deps.get(cur) ?? []) {
          if (dep === p || out.has(dep)) continue;
          out.add(dep);
          next.push(dep);
        }
      }
      frontier = next;
    }
    return [...out].sort();
  }

  /** Loads `path` and the project modules it imports (transitively, bounded): the editor's view of one file. */
  load(path: string, text?: string): void {
    const p = this.abs(path);
    if (text !== undefined) this.update(p, text);
    const seen = new Set<string>();
    const todo: { path: string; depth: number }[] = [{ path: p, depth: 0 }];
    while (todo.length) {
      const { path: cur, depth } = todo.shift()!;
      if (seen.has(cur) || depth > this.limits.maxDepth) continue;
      seen.add(cur);
      const m = this.module(cur);
      if (!m) continue;
      for (const dep of this.importedPaths(cur, m.imports)) {
        this.record(cur, dep);
        todo.push({ path: dep, depth: depth + 1 });
      }
    }
  }

  /** The project files the import bindings of the module at `from` resolve to (recorded for `dependants`). */
  private importedPaths(from: string, imports: Map<string, ImportRef>): string[] {
    const out = new Set<string>();
    for (const ref of imports.values()) {
      const mod = this.resolveModule(from, ref.level, ref.headOnly ? ref.module : ref.module);
      if (mod) out.add(mod);
      if (ref.name !== undefined) {
        const sub = this.resolveModule(from, ref.level, ref.module ? `${ref.module}.${ref.name}` : ref.name);
        if (sub) out.add(sub);
      }
    }
    return [...out];
  }

  private record(from: string, to: string): void {
    if (from === to) return;
    let s = this.deps.get(from);
    if (!s) this.deps.set(from, (s = new Set()));
    s.add(to);
  }

  /** The directory `import x` resolves from for a module at `file`: up past every package directory. */
  private importRoot(file: string): string {
    let dir = dirname(file);
    for (let i = 0; i < 16 && this.exists(join(dir, '__init__.py')); i++) {
      const up = dirname(dir);
      if (up === dir) break;
      dir = up;
    }
    return dir;
  }

  /** The file of module `dotted` imported from `from` with `level` leading dots, or null (outside the project). */
  resolveModule(from: string, level: number, dotted: string): string | null {
    const parts = dotted ? dotted.split('.') : [];
    let bases: string[];
    if (level > 0) {
      let base = dirname(from);
      for (let i = 1; i < level; i++) base = dirname(base);
      bases = [base];
    } else {
      if (!parts.length || EXTERNAL.has(parts[0])) return null;
      // a script's sibling module, the package root above it, then each project root
      bases = [...new Set([dirname(from), this.importRoot(from), ...this.roots])];
    }
    for (const base of bases) {
      if (!parts.length) {
        const init = join(base, '__init__.py');
        if (this.exists(init)) return init;
        continue;
      }
      const stem = join(base, ...parts);
      for (const cand of [`${stem}.py`, `${stem}/__init__.py`]) if (this.exists(cand)) return cand;
    }
    return null;
  }

  private bindingsOf(sema: Semantics): Map<string, ImportRef> {
    let b = this.bindingsMemo.get(sema);
    if (!b) this.bindingsMemo.set(sema, (b = importBindings(sema.root)));
    return b;
  }

  resolveCall(call: Node, sema: Semantics, path: string): Resolved | null {
    const fn = call.childForFieldName('function');
    return fn ? this.resolveName(fn, sema, path) : null;
  }

  resolveName(node: Node, sema: Semantics, path: string): Resolved | null {
    const chain: string[] = [];
    let n: Node | null = node;
    while (n && n.type === 'attribute') {
      const attr = n.childForFieldName('attribute');
      if (!attr) return null;
      chain.unshift(attr.text);
      n = n.childForFieldName('object');
    }
    if (!n || n.type !== 'identifier') return null;
    const from = this.abs(path);
    const bindings = this.bindingsOf(sema);
    const ref = bindings.get(n.text);
    const stars = ref ? [] : [...bindings.values()].filter((r) => r.star);
    if (!ref && !stars.length) return null;
    // a name the file binds again itself (a local def or assignment) is not the import
    if (sema.bindings(n.text).some((v) => sema.enclosingFunction(v) === null) || this.localDef(sema, n.text)) return null;
    if (ref) return this.follow(from, ref, chain, 0, new Set());
    // a name only a star import can bind: the first star-imported module that defines it (a later import would win
    // in Python; the names a file uses this way are rarely defined twice)
    for (const s of stars) {
      const mod = this.resolveModule(from, s.level, s.module);
      const m = mod ? this.module(mod) : null;
      if (!m || !(m.functions.has(n.text) || m.classes.has(n.text) || m.constants.has(n.text))) continue;
      this.record(from, mod!);
      const hit = this.lookup(mod!, [n.text, ...chain], 0, new Set());
      if (hit) return hit;
    }
    return null;
  }

  private localDef(sema: Semantics, name: string): boolean {
    for (const st of sema.root.namedChildren) {
      const d = st?.type === 'decorated_definition' ? st.childForFieldName('definition') : st;
      if ((d?.type === 'function_definition' || d?.type === 'class_definition') && d.childForFieldName('name')?.text === name) return true;
    }
    return false;
  }

  /** Follows an import binding then attribute names into the module that defines the last one. */
  private follow(from: string, ref: ImportRef, chain: string[], depth: number, seen: Set<string>): Resolved | null {
    if (depth > this.limits.maxDepth) return null;
    const key = `${from}|${ref.level}|${ref.module}|${ref.name ?? ''}|${chain.join('.')}`;
    if (seen.has(key)) return null;
    seen.add(key);
    let names = [...chain];
    let modPath: string | null;
    if (ref.name !== undefined) {
      // `from m import name`: name is a member of m, or a submodule m.name
      modPath = this.resolveModule(from, ref.level, ref.module);
      const sub = this.resolveModule(from, ref.level, ref.module ? `${ref.module}.${ref.name}` : ref.name);
      if (modPath) this.record(from, modPath);
      const member = modPath ? this.module(modPath) : null;
      // a submodule wins over an import binding of the same name in the package (`from . import data`)
      const defined = member && (member.functions.has(ref.name) || member.classes.has(ref.name) || member.constants.has(ref.name) || (!sub && member.imports.has(ref.name)));
      if (!defined && sub) {
        this.record(from, sub);
        modPath = sub;
      } else names = [ref.name, ...names];
    } else {
      // `import a.b.c` binds `a`: walk the chain's leading names as submodules as far as they exist
      const head = ref.headOnly ? ref.module.split('.')[0] : ref.module;
      modPath = this.resolveModule(from, 0, head);
      let dotted = head;
      while (modPath && names.length) {
        const next = this.resolveModule(from, 0, `${dotted}.${names[0]}`);
        if (!next) break;
        dotted = `${dotted}.${names.shift()}`;
        modPath = next;
      }
      if (modPath) this.record(from, modPath);
    }
    if (!modPath) return null;
    return this.lookup(modPath, names, depth, seen);
  }

  /** `names` looked up in the module at `modPath`: a function, a class (then a method), a constant or a re-export. */
  private lookup(modPath: string, names: string[], depth: number, seen: Set<string>): Resolved | null {
    const m = this.module(modPath);
    if (!m || !names.length) return null;
    const [first, ...rest] = names;
    const fn = m.functions.get(first);
    if (fn) return rest.length ? null : { kind: 'function', def: fn, path: m.path, module: m };
    const cls = m.classes.get(first);
    if (cls) {
      if (!rest.length) return { kind: 'class', def: cls, path: m.path, module: m };
      if (rest.length > 1) return null;
      const body = cls.childForFieldName('body');
      for (const st of body?.namedChildren ?? []) {
        const d = st?.type === 'decorated_definition' ? st.childForFieldName('definition') : st;
        if (d?.type === 'function_definition' && d.childForFieldName('name')?.text === rest[0]) return { kind: 'method', def: d, path: m.path, module: m };
      }
      return null;
    }
    const reexport = m.imports.get(first);
    if (reexport) return this.follow(m.path, reexport, rest, depth + 1, seen);
    const c = m.constants.get(first);
    if (c && !rest.length) return { kind: 'constant', def: c, path: m.path, module: m };
    // `pkg.sub.f` through a package's `__init__.py` that does not import `sub`
    if (/\/__init__\.py$/.test(modPath)) {
      const sub = this.resolveModule(modPath, 1, first);
      if (sub && sub !== modPath) {
        this.record(modPath, sub);
        return this.lookup(sub, rest, depth + 1, seen);
      }
    }
    return null;
  }

  /** Modules parsed so far. */
  get size(): number {
    return this.modules.size;
  }

  /** Frees the parse trees (web-tree-sitter memory). */
  dispose(): void {
    for (const m of this.modules.values()) m.tree.delete();
    this.modules.clear();
    this.derivedFacts.clear();
    this.files = undefined;
    this.reads.clear();
    this.deps.clear();
  }
}
