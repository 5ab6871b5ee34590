/** Helpers of the kernels family (TPU701–TPU708): imports of CUDA-only libraries, keyword edits, names in scope. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, isFString, stringContent } from '../../core/semantics';
import { deleteStatement } from '../../core/edits';
import type { Edit, ImportSpec } from '../../core/types';
import { importedDefinitions } from '../shared';

/** Literal content of a plain (non-f) string node, else null. */
export function literal(node: Node | null | undefined): string | null {
  if (!node || node.type !== 'string' || isFString(node)) return null;
  return stringContent(node);
}

/** Offsets of a string's content (between the quotes). */
export function contentRange(node: Node): { start: number; end: number } {
  const kids = node.namedChildren.filter((c): c is Node => !!c);
  const s = kids.find((c) => c.type === 'string_start');
  const e = kids.find((c) => c.type === 'string_end');
  return { start: s ? s.endIndex : node.startIndex, end: e ? e.startIndex : node.endIndex };
}

export interface ImportInfo {
  stmt: Node;
  /** Full module names the statement imports (`from a import b` gives `a.b` and `a`). */
  modules: string[];
  /** Names the statement binds in the file. */
  bound: string[];
}

/** Every import statement with the modules it names and the names it binds. */
export function importInfos(ctx: RuleContext): ImportInfo[] {
  const out: ImportInfo[] = [];
  for (const stmt of ctx.sema.nodes('import_statement')) {
    const modules: string[] = [];
    const bound: string[] = [];
    for (const c of stmt.namedChildren) {
      if (!c) continue;
      if (c.type === 'dotted_name') {
        modules.push(c.text);
        bound.push(c.text.split('.')[0]);
      } else if (c.type === 'aliased_import') {
        const name = c.childForFieldName('name')?.text;
        const alias = c.childForFieldName('alias')?.text;
        if (name) modules.push(name);
        if (alias) bound.push(alias);
      }
    }
    out.push({ stmt, modules, bound });
  }
  for (const stmt of ctx.sema.nodes('import_from_statement')) {
    const mod = stmt.childForFieldName('module_name');
    if (!mod || mod.type === 'relative_import') continue;
    const modules = [mod.text];
    const bound: string[] = [];
    for (const c of stmt.childrenForFieldName('name')) {
      if (!c) continue;
      if (c.type === 'dotted_name') {
        modules.push(`${mod.text}.${c.text}`);
        bound.push(c.text);
      } else if (c.type === 'aliased_import') {
        const name = c.childForFieldName('name')?.text;
        const alias = c.childForFieldName('alias')?.text;
        if (name) modules.push(`${mod.text}.${name}`);
        if (alias) bound.push(alias);
      }
    }
    out.push({ stmt, modules, bound });
  }
  return out.sort((a, b) => a.stmt.startIndex - b.stmt.startIndex);
}

/** `import x` inside `try:` whose handler catches ImportError (an optional dependency with a fallback). */
export function isOptionalImport(stmt: Node): boolean {
  for (let p = stmt.parent; p; p = p.parent) {
    if (p.type === 'try_statement') {
      const handlers = p.namedChildren.filter((c): c is Node => !!c && c.type === 'except_clause' && /ImportError|ModuleNotFoundError|Exception\b|^except\s*:/.test(c.text.split('\n')[0]));
      // a module-level `try: import x / except ImportError: raise ...` makes x required (dinov2's xFormers)
      if (p.parent?.type === 'module' && handlers.length && handlers.every(reRaises)) return false;
      return handlers.length > 0;
    }
    if (p.type === 'function_definition' || p.type === 'class_definition' || p.type === 'module') return false;
  }
  return false;
}

/** An except clause whose body only raises. */
function reRaises(handler: Node): boolean {
  const body = handler.namedChildren.find((c) => c?.type === 'block');
  const stmts = body?.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment') ?? [];
  return stmts.length > 0 && stmts.every((s) => s.type === 'raise_statement');
}

/** Whether `name` is used outside `except` (identifier nodes in the file, not counting those inside `except`). */
export function nameUsedOutside(ctx: RuleContext, name: string, except: Node): boolean {
  return ctx.sema.identifiersNamed(name).some((id) => {
    if (id.startIndex >= except.startIndex && id.endIndex <= except.endIndex) return false;
    const p = id.parent;
    // module paths of other imports, `x.name` attribute fields and `f(name=...)` keywords are not uses
    if (p?.type === 'dotted_name' || p?.type === 'aliased_import') return false;
    if (p?.type === 'attribute' && p.childForFieldName('attribute')?.id === id.id) return false;
    if (p?.type === 'keyword_argument' && p.childForFieldName('name')?.id === id.id) return false;
    return true;
  });
}

/** Deletes an import statement whose bindings are all unused (a safe cleanup once usages were replaced). */
export function deleteUnusedImport(ctx: RuleContext, info: ImportInfo): Edit[] | null {
  if (!info.bound.length || info.bound.some((n) => nameUsedOutside(ctx, n, info.stmt))) return null;
  const stmt = info.stmt.parent?.type === 'block' || info.stmt.parent?.type === 'module' ? info.stmt : null;
  if (!stmt) return null;
  return [deleteStatement(ctx.text, stmt)];
}

/**
 * How to spell a fully qualified name here: through an existing alias of it or of a parent module
 * (`nn.LayerNorm` when `torch.nn` is bound as `nn`), else the full name with `import <head>`.
 */
export function refFor(ctx: RuleContext, fq: string): { text: string; imports: ImportSpec[] } {
  let best: { text: string; len: number } | null = null;
  for (const [alias, full] of ctx.sema.aliases) {
    if (fq === full || fq.startsWith(full + '.')) {
      const text = alias + fq.slice(full.length);
      if (!best || full.length > best.len) best = { text, len: full.length };
    }
  }
  if (best) return { text: best.text, imports: [] };
  const head = fq.split('.')[0];
  return { text: fq, imports: [{ module: head }] };
}

/** Removes a keyword (or positional) argument with its separating comma. */
export function removeArg(ctx: RuleContext, arg: Node): Edit {
  const list = arg.parent!;
  const args = list.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
  const i = args.findIndex((a) => a.id === arg.id);
  if (i + 1 < args.length) return { start: arg.startIndex, end: args[i + 1].startIndex, text: '' };
  if (i > 0) {
    // keep a trailing comma or comment after the removed last argument out of the edit
    return { start: args[i - 1].endIndex, end: arg.endIndex, text: '' };
  }
  // the only argument: drop it and a trailing comma
  const after = ctx.text.slice(arg.endIndex, list.endIndex - 1);
  const comma = /^\s*,/.exec(after);
  return { start: arg.startIndex, end: arg.endIndex + (comma ? comma[0].length : 0), text: '' };
}

/** Whether an expression is a plain name or dotted attribute chain (safe to repeat in a rewrite). */
export function isSimpleRef(node: Node | null | undefined): boolean {
  if (!node) return false;
  if (node.type === 'identifier') return true;
  if (node.type === 'attribute') return isSimpleRef(node.childForFieldName('object'));
  return false;
}

/** Literal `True`. */
export function isTrue(node: Node | null | undefined): boolean {
  return !!node && node.type === 'true';
}

/** Literal zero (`0`, `0.0`, `0.`). */
export function isZero(node: Node | null | undefined): boolean {
  return !!node && (node.type === 'integer' || node.type === 'float') && Number(node.text) === 0;
}

/** Keyword names of a call and its positional count. */
export function argShape(call: Node): { positional: Node[]; keywords: ReadonlyMap<string, Node>; hasSplat: boolean } {
  const { positional, keywords, list } = callArgs(call);
  const hasSplat = !!list?.namedChildren.some((a) => !!a && (a.type === 'list_splat' || a.type === 'dictionary_splat'));
  return { positional: positional.filter((p) => p.type !== 'list_splat' && p.type !== 'dictionary_splat'), keywords, hasSplat };
}

/** Statement node of an expression-statement call (`f(...)` alone on its line), else null. */
export function statementOfCall(call: Node): Node | null {
  const p = call.parent;
  if (p?.type === 'expression_statement' && p.namedChildren.length === 1) return p;
  return null;
}

/** Appends the argument text `kw` after the last argument of a call. */
export function insertKw(call: Node, kw: string): Edit {
  const list = call.childForFieldName('arguments')!;
  const args = list.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
  const last = args[args.length - 1];
  if (!last) return { start: list.startIndex + 1, end: list.startIndex + 1, text: kw };
  return { start: last.endIndex, end: last.endIndex, text: `, ${kw}` };
}

/** Removes several arguments of one argument list with non-overlapping edits (runs of neighbours merged). */
export function removeArgs(ctx: RuleContext, remove: Node[]): Edit[] {
  if (!remove.length) return [];
  const list = remove[0].parent!;
  const args = list.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
  const ids = new Set(remove.map((r) => r.id));
  const edits: Edit[] = [];
  for (let i = 0; i < args.length; i++) {
    if (!ids.has(args[i].id)) continue;
    let j = i;
    while (j + 1 < args.length && ids.has(args[j + 1].id)) j++;
    if (j + 1 < args.length) edits.push({ start: args[i].startIndex, end: args[j + 1].startIndex, text: '' });
    else if (i > 0) edits.push({ start: args[i - 1].endIndex, end: args[j].endIndex, text: '' });
    else {
      const comma = /^\s*,/.exec(ctx.text.slice(args[j].endIndex, list.endIndex - 1));
      edits.push({ start: args[i].startIndex, end: args[j].endIndex + (comma ? comma[0].length : 0), text: '' });
    }
    i = j;
  }
  return edits;
}

/**
 * Groups import statements of one library that sit in one run of imports (same block, only imports or
 * comments between them): `from flash_attn import …` on three consecutive lines is one problem.
 */
export function importRuns(infos: ImportInfo[]): ImportInfo[][] {
  const runs: ImportInfo[][] = [];
  for (const info of infos) {
    const run = runs.find((r) => inOneImportRun(r[r.length - 1].stmt, info.stmt));
    if (run) run.push(info);
    else runs.push([info]);
  }
  return runs;
}

function inOneImportRun(a: Node, b: Node): boolean {
  if (!a.parent || a.parent.id !== b.parent?.id || a.startIndex > b.startIndex) return false;
  for (let s = a.nextNamedSibling; s && s.id !== b.id; s = s.nextNamedSibling) {
    if (s.type !== 'comment' && s.type !== 'import_statement' && s.type !== 'import_from_statement') return false;
  }
  return true;
}

/** CUDA-only libraries whose module-level import in a project module makes importing that module fail or pull CUDA kernels. */
const CUDA_ONLY_IMPORT = /^(flash_attn|triton|cupy|pycuda|numba\.cuda|apex|bitsandbytes|xentropy_cuda_lib|rotary_emb|fused_dense_lib|dropout_layer_norm|fused_softmax_lib|amp_C|fused_layer_norm_cuda|selective_scan_cuda|causal_conv1d_cuda|flash_attn_cuda|flash_attn_2_cuda)(\.|$)/;

export interface ProjectCudaImport {
  /** The import statement of this file. */
  stmt: Node;
  /** The project module it imports (its path) and the CUDA-only import there. */
  path: string;
  inner: Node;
  /** The CUDA-only module the project module imports (`flash_attn`, `rotary_emb`). */
  lib: string;
}

/**
 * Imports of project modules (`from fastchat.train.llama2_flash_attn_monkey_patch import replace_...`, `from
 * .fused_rotary_embedding import apply_rotary_emb_func`, a package re-export) whose own module level imports a
 * CUDA-only library unconditionally (not under `try/except ImportError`, a CUDA check or an XLA branch): importing
 * the project module runs that import. One level: the module that defines the imported name.
 */
export function projectCudaImports(ctx: RuleContext): ProjectCudaImport[] {
  const project = ctx.project;
  // a library the file imports itself already has its finding there: one per problem (FastChat's flash-attn patch module
  // importing its sibling patch inside its GPU self-test); another library is another problem (TinyLlama's model.py
  // imports flash_attn and, through fused_rotary_embedding, rotary_emb)
  if (!project) return [];
  const own = ownCudaLibs(ctx.sema);
  const out: ProjectCudaImport[] = [];
  for (const stmt of ctx.sema.nodes('import_from_statement')) {
    if (isOptionalImport(stmt) || ctx.sema.inXlaAwareBranch(stmt) || /cuda\.is_available|torch\.version\.cuda/.test(guardText(stmt))) continue;
    const mod = stmt.childForFieldName('module_name');
    if (mod && CUDA_ONLY_IMPORT.test(mod.text)) continue;
    const seen = new Set<string>();
    // `from fastchat.train.patch import f` inside fastchat/train/: the package chain is the file's own folders (the repo
    // root is on sys.path, as with `pip install -e .`), even where no `__init__.py` marks the package
    const pkgModule = mod && mod.type === 'dotted_name' ? ownPackageModule(project, ctx.path, mod.text) : null;
    if (pkgModule) {
      const inner = cudaOnlyImportIn(pkgModule.sema);
      if (inner) {
        if (!own.has(inner.lib)) out.push({ stmt, path: pkgModule.path, inner: inner.stmt, lib: inner.lib });
        continue;
      }
    }
    for (const r of importedDefinitions(ctx, stmt)) {
      if (r.path === ctx.path || seen.has(r.path)) continue;
      seen.add(r.path);
      const inner = cudaOnlyImportIn(r.module.sema);
      if (inner) {
        if (!own.has(inner.lib)) out.push({ stmt, path: r.path, inner: inner.stmt, lib: inner.lib });
        break;
      }
    }
  }
  return out;
}

/** The module `a.b.c` as `<D>/a/b/c.py` where the importing file lives in `<D>/a/b/` (or deeper under `<D>/a/`). */
function ownPackageModule(project: NonNullable<RuleContext['project']>, path: string, dotted: string) {
  const parts = dotted.split('.');
  if (parts.length < 2) return null;
  const dirs = path.replace(/\\/g, '/').split('/').slice(0, -1);
  const pkg = parts.slice(0, -1);
  for (let i = dirs.length - pkg.length; i >= 0; i--) {
    if (pkg.every((p, k) => dirs[i + k] === p)) {
      const base = dirs.slice(0, i).join('/');
      const m = project.module(`${base ? base + '/' : ''}${parts.join('/')}.py`);
      if (m && m.path !== path) return m;
    }
  }
  return null;
}

/** The CUDA-only libraries a module imports itself at module level (their findings are there already). */
function ownCudaLibs(sema: RuleContext['sema']): Set<string> {
  const out = new Set<string>();
  for (const stmt of [...sema.nodes('import_statement'), ...sema.nodes('import_from_statement')]) {
    if (sema.enclosingFunction(stmt) || isOptionalImport(stmt)) continue;
    const names = stmt.type === 'import_statement'
      ? stmt.namedChildren.map((c) => (c?.type === 'aliased_import' ? c.childForFieldName('name')?.text : c?.text) ?? '')
      : [stmt.childForFieldName('module_name')?.text ?? ''];
    for (const n of names) if (CUDA_ONLY_IMPORT.test(n) && !underLibGuard(stmt, n.split('.')[0])) out.add(n.split('.')[0]);
  }
  return out;
}

const innerMemo = new WeakMap<object, { stmt: Node; lib: string } | null>();

function cudaOnlyImportIn(sema: RuleContext['sema']): { stmt: Node; lib: string } | null {
  const memo = innerMemo.get(sema);
  if (memo !== undefined) return memo;
  let found: { stmt: Node; lib: string } | null = null;
  for (const stmt of [...sema.nodes('import_statement'), ...sema.nodes('import_from_statement')].sort((a, b) => a.startIndex - b.startIndex)) {
    // module level only: an import inside a function runs only when it is called
    if (sema.enclosingFunction(stmt) || isOptionalImport(stmt) || sema.inXlaAwareBranch(stmt) || /cuda\.is_available|torch\.version\.cuda/.test(guardText(stmt))) continue;
    const names = stmt.type === 'import_statement'
      ? stmt.namedChildren.map((c) => (c?.type === 'aliased_import' ? c.childForFieldName('name')?.text : c?.text) ?? '')
      : [stmt.childForFieldName('module_name')?.text ?? ''];
    // `if is_apex_available(): from apex import amp` (HF Trainer copies): not imported on a TPU host
    const lib = names.find((n) => CUDA_ONLY_IMPORT.test(n) && !underLibGuard(stmt, n.split('.')[0]));
    if (lib) {
      found = { stmt, lib: lib.split('.')[0] };
      break;
    }
  }
  innerMemo.set(sema, found);
  return found;
}

/** The conditions of the `if` statements around a statement. */
function guardText(stmt: Node): string {
  let out = '';
  for (let p = stmt.parent; p; p = p.parent) if (p.type === 'if_statement') out += ' ' + (p.childForFieldName('condition')?.text ?? '');
  return out;
}

/** A non-optional `import deepspeed` in this file: TPU705 reports the DeepSpeed engine there (its ZeRO config dict is a related location, not a TPU508 finding). */
export function importsDeepSpeed(ctx: RuleContext): boolean {
  return importInfos(ctx).some((info) => info.modules.some((m) => /^deepspeed(\.|$)/.test(m)) && !isOptionalImport(info.stmt));
}

/**
 * Whether `node` only runs when a guard names the library `lib` it needs: the body of an `if`/`elif` whose condition
 * names it (`if is_apex_available():`, `if self.use_apex:`, `if args.deepspeed:`, `if isinstance(fabric.strategy,
 * DeepSpeedStrategy):`) or the value of `x if self.use_apex else y`. On a TPU host, where the library is not installed
 * and not chosen, that branch is not taken. A negated condition (`if not has_apex:`) guards nothing.
 */
export function underLibGuard(node: Node, lib: string): boolean {
  const name = lib.toLowerCase();
  const names = (cond: Node | null | undefined): boolean => {
    // the name in a string is an option value the user picks (`if use_amp == 'apex':`), not a check that it is there
    const t = (cond?.text ?? '').replace(/(['"]).*?\1/g, '""');
    return t.toLowerCase().includes(name) && !/\bnot\b|\bis\s+None\b|==\s*(False|None)\b|!=\s*True\b/.test(t);
  };
  const inside = (outer: Node | null | undefined, n: Node) => !!outer && n.startIndex >= outer.startIndex && n.endIndex <= outer.endIndex;
  for (let p = node.parent; p; p = p.parent) {
    if ((p.type === 'if_statement' || p.type === 'elif_clause') && inside(p.childForFieldName('consequence'), node) && names(p.childForFieldName('condition'))) return true;
    if (p.type === 'conditional_expression') {
      const [value, cond] = p.namedChildren;
      if (value && inside(value, node) && names(cond)) return true;
    }
  }
  return false;
}

/** An import statement under a guard that names the library it imports (see underLibGuard). */
export function isGuardedImport(info: ImportInfo): boolean {
  const heads = [...new Set(info.modules.map((m) => m.split('.')[0]))];
  return heads.length > 0 && heads.every((h) => underLibGuard(info.stmt, h));
}
