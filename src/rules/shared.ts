/** Helpers shared by rule families (not detection primitives: those live in core/semantics). */
import type { Node } from '../core/parse';
import type { FixDraft, ReportOptions, RuleContext } from '../core/rule';
import type { Snippet } from '../core/idioms';
import type { Resolved } from '../model/project';
import { callArgs, enclosingStatement, methodName, nearestAncestor, receiver } from '../core/semantics';
import { cudaOnly } from '../model/guards';

/**
 * What the names of a `from m import a, b as c` statement resolve to in the project (a function, class or module
 * constant of another module), in order; names that do not resolve, or whose resolution fails, are left out.
 */
export function importedDefinitions(ctx: RuleContext, stmt: Node): Resolved[] {
  const project = ctx.project;
  if (!project) return [];
  const out: Resolved[] = [];
  for (const c of stmt.childrenForFieldName('name')) {
    const id = c?.type === 'aliased_import' ? c.childForFieldName('name') : c;
    const ident = id?.type === 'dotted_name' ? id.namedChildren[0] : id;
    if (!ident || ident.type !== 'identifier') continue;
    let r: Resolved | null = null;
    try {
      r = project.resolveName(ident, ctx.sema, ctx.path);
    } catch {
      r = null;
    }
    if (r) out.push(r);
  }
  return out;
}

/**
 * The device expression a fix should use at `node`: an existing `device` variable bound in the
 * same function or at module level (reused as the catalog advises), else the profile's idiom.
 */
export function deviceExprFor(ctx: RuleContext, node: Node): Snippet {
  const fn = ctx.sema.enclosingFunction(node);
  for (const name of ['device', 'dev']) {
    const param = fn?.childForFieldName('parameters')?.namedChildren.some((p) => p?.text === name || p?.childForFieldName('name')?.text === name);
    // bound on every path that reaches `node` (issue 10: a `device` bound only in a sibling `elif` branch raised
    // UnboundLocalError on the default path); a local binding shadows the module's
    const local = fn ? ctx.sema.bindings(name).some((v) => ctx.sema.enclosingFunction(v)?.id === fn.id) : false;
    const bound = param || (fn && local ? boundBefore(name, node, fn) : boundBefore(name, node, null) || (!!fn && !local && moduleBinds(ctx, name)));
    if (bound) return { text: name, imports: [], needsAccel: false };
  }
  return ctx.idiom.device();
}

const JUMP = new Set(['return_statement', 'raise_statement', 'continue_statement', 'break_statement']);

/** Whether the simple statement `stmt` assigns `name` (`name = ...`, `name: T = ...`, `a, name = ...`, `import x as name`). */
function assigns(stmt: Node, name: string): boolean {
  if (stmt.type === 'expression_statement') {
    const e = stmt.namedChildren[0];
    if (e?.type !== 'assignment') return false;
    for (let a: Node | null | undefined = e; a?.type === 'assignment'; a = a.childForFieldName('right')) {
      const left = a.childForFieldName('left');
      if (left && targets(left, name)) return true;
    }
    return false;
  }
  if (stmt.type === 'import_statement' || stmt.type === 'import_from_statement') return new RegExp(`\\b${name}\\b`).test(stmt.text);
  if (stmt.type === 'function_definition' || stmt.type === 'class_definition') return stmt.childForFieldName('name')?.text === name;
  return false;
}

function targets(left: Node, name: string): boolean {
  if (left.type === 'identifier') return left.text === name;
  if (left.type === 'pattern_list' || left.type === 'tuple_pattern' || left.type === 'list_pattern') return left.namedChildren.some((c) => !!c && targets(c, name));
  return false;
}

/** Whether running `block` to its end (or leaving it by a jump) always binds `name`. */
function blockBinds(block: Node | null | undefined, name: string): boolean {
  if (!block) return false;
  for (const s of block.namedChildren) {
    if (!s || s.type === 'comment') continue;
    if (JUMP.has(s.type) || stmtBinds(s, name)) return true;
  }
  return false;
}

/** Whether a statement always binds `name` when control passes it. */
function stmtBinds(stmt: Node, name: string): boolean {
  if (stmt.type === 'decorated_definition') return stmtBinds(stmt.namedChildren[stmt.namedChildren.length - 1]!, name);
  if (assigns(stmt, name)) return true;
  if (stmt.type === 'if_statement') {
    const alts = stmt.childrenForFieldName('alternative').filter((a): a is Node => !!a);
    if (!alts.some((a) => a.type === 'else_clause')) return false;
    return blockBinds(stmt.childForFieldName('consequence'), name) && alts.every((a) => blockBinds(a.childForFieldName(a.type === 'else_clause' ? 'body' : 'consequence'), name));
  }
  if (stmt.type === 'with_statement') return blockBinds(stmt.childForFieldName('body'), name) || new RegExp(`\\bas\\s+${name}\\b`).test(stmt.childForFieldName('body') ? stmt.text.slice(0, stmt.childForFieldName('body')!.startIndex - stmt.startIndex) : '');
  if (stmt.type === 'try_statement') {
    if (!blockBinds(stmt.childForFieldName('body'), name)) return false;
    return stmt.namedChildren.every((c) => !c || c.type !== 'except_clause' || blockBinds(c.namedChildren.find((b) => b?.type === 'block'), name));
  }
  return false;
}

const BOUND_STOPS: ReadonlySet<string> = new Set(['block', 'module', 'function_definition']);

/**
 * Whether `name` is bound on every path from the start of `scope` (a function, or the module when null) to `node`:
 * some statement before it, in its block or an enclosing one up to the scope, always binds it.
 */
function boundBefore(name: string, node: Node, scope: Node | null): boolean {
  // only blocks, the module and functions (the scope is one) decide: the walk goes from one to the next
  for (let hop = nearestAncestor(node, BOUND_STOPS); hop; hop = nearestAncestor(hop.ancestor, BOUND_STOPS)) {
    const { ancestor: p, child } = hop;
    if ((p.type === 'block' || p.type === 'module') && firstBinding(p, name) < child.startIndex) return true;
    if (scope ? p.id === scope.id : p.type === 'module') return false;
    // a nested function is its own scope: for a module name, what counts is what the module bound before the def
    if (p.type === 'function_definition') return scope === null ? boundBefore(name, p, null) : false;
  }
  return false;
}

/**
 * The start offset of the first statement of `block` that always binds `name` (Infinity when none), memoized per
 * tree, block and name: fixes ask it once per finding, and scanning the block each time made a file of N
 * `x = t.cuda()` lines quadratic (100 KB: 10 s).
 */
const firstBindings = new WeakMap<object, Map<string, number>>();
function firstBinding(block: Node, name: string): number {
  let memo = firstBindings.get(block.tree);
  if (!memo) firstBindings.set(block.tree, (memo = new Map()));
  const key = `${block.id}:${name}`;
  let at = memo.get(key);
  if (at === undefined) {
    at = Infinity;
    for (const s of block.namedChildren) {
      // a statement that binds `name` spells it: most statements are passed over without reading their children
      // (a module of 30,000 statements kept every child of each alive)
      if (s && s.text.includes(name) && s.type !== 'comment' && stmtBinds(s, name)) {
        at = s.startIndex;
        break;
      }
    }
    memo.set(key, at);
  }
  return at;
}

/** A module-level statement that always binds `name` (for functions that run after the module body). */
function moduleBinds(ctx: RuleContext, name: string): boolean {
  return firstBinding(ctx.sema.root, name) < Infinity;
}

/**
 * `torch.cuda.is_bf16_supported()` raises on a TPU host for the target: before torch 2.5 it reads
 * `torch.cuda.current_device()`, which initialises CUDA and raises without a GPU ("is_bf16_supported() should return
 * False when running on CPU", pytorch/pytorch#132303 on torch 2.2.2); pytorch/pytorch#132313 (merged 2024-08-01, after
 * the 2.4 release, first in 2.5) returns False when CUDA is not available. torch_xla 2.x pairs with torch 2.x, so the
 * target version is the torch version. Not when the call cannot run there: after `torch.cuda.is_available() and`, or
 * under a CUDA-only guard (`if torch.cuda.is_available():`).
 */
export function bf16ProbeRaises(ctx: RuleContext, call: Node): boolean {
  if (ctx.idiom.at('2.5') || ctx.sema.callee(call) !== 'torch.cuda.is_bf16_supported' || cudaOnly(call)) return false;
  const avail = (n: Node | null | undefined) => !!n && (ctx.sema.callee(n) === 'torch.cuda.is_available' || ctx.sema.callsWithin(n).some((c) => ctx.sema.callee(c) === 'torch.cuda.is_available'));
  for (let n: Node = call, p = call.parent; p; n = p, p = p.parent) {
    if (p.type === 'parenthesized_expression' || p.type === 'not_operator') continue;
    if (p.type === 'boolean_operator') {
      if (p.childForFieldName('right')?.id === n.id && avail(p.childForFieldName('left'))) return false;
      continue;
    }
    // `x if torch.cuda.is_available() and ... else y` is handled above; `probe() if torch.cuda.is_available() else False`
    if (p.type === 'conditional_expression' && p.namedChildren[0]?.id === n.id && avail(p.namedChildren[1])) return false;
    return true;
  }
  return true;
}

const DTYPE = /^torch\.(float|bfloat|half|int|long|bool|double|uint|complex)/;
const DEVICE_NAME = /(^|\.|_)device$/;

/** `'cpu'`, `torch.device("cpu")`, or a device the model knows as the CPU: a copy there is no upload. */
function onCpu(ctx: RuleContext, a: Node): boolean {
  if (a.type === 'string') return /^[rbuf]*["']cpu/i.test(a.text);
  if (a.type === 'call' && /^torch\.device$/.test(ctx.sema.callee(a) ?? '')) return /["']cpu/.test(a.text);
  const v = ctx.model.value(a);
  return v.kind === 'device' && v.device === 'cpu';
}

/** A device-valued argument: what the model knows as a device, or a name of the `device` convention (`self.device`). */
function deviceArg(ctx: RuleContext, a: Node | null | undefined): boolean {
  if (!a) return false;
  if (ctx.model.value(a).kind === 'device') return true;
  return (a.type === 'identifier' || a.type === 'attribute') && DEVICE_NAME.test(a.text);
}

/**
 * A host-to-device copy: `.to(device)` / `.cuda()`, `torch.tensor(x, device=d)`, or a helper handed the data and a
 * device (`obs_as_tensor(obs, self.device)`).
 */
export function isDeviceCopy(ctx: RuleContext, call: Node): boolean {
  const meth = methodName(call);
  const { positional, keywords } = callArgs(call);
  if (meth === 'cuda') return !!receiver(call) && !ctx.sema.resolve(receiver(call));
  if (meth === 'to') {
    if (!receiver(call) || ctx.sema.resolve(receiver(call))) return false;
    const first = keywords.get('device')?.childForFieldName('value') ?? positional[0];
    if (!first || onCpu(ctx, first)) return false;
    if (keywords.has('device')) return true;
    return !DTYPE.test(ctx.sema.resolve(first) ?? '') && ctx.model.value(first).kind !== 'dtype';
  }
  const device = keywords.get('device')?.childForFieldName('value');
  if (device && !onCpu(ctx, device) && deviceArg(ctx, device)) return true;
  // a helper given data and a device: `obs_as_tensor(obs, device)`
  return positional.length >= 2 && positional.slice(1).some((a) => deviceArg(ctx, a)) && !/^torch\./.test(ctx.sema.callee(call) ?? '');
}

/** A finding a rule has decided on, before `reportRuns` folds runs of them. */
export interface Draft {
  at: Node;
  opts: ReportOptions;
}

/**
 * One finding per run of adjacent statements (issue 9, one finding per problem): drafts whose statements are
 * consecutive siblings of one block (comments between them allowed) are one problem (`x.to(d, non_blocking=True)` on
 * three lines of one step, `torch.save(G…)` then `torch.save(D…)`). The first is reported, the others become related
 * locations (`also` names them) and its fix makes every draft's edits (drafts of one run have the same kind of fix).
 */
/** Same severity and the same fix (none, or one of the same title and applicability): one edit set serves them all. */
function sameKind(a: Draft, b: Draft): boolean {
  const fa = a.opts.fix ?? null, fb = b.opts.fix ?? null;
  return a.opts.severity === b.opts.severity && !!fa === !!fb && (fa?.applicability ?? 'safe') === (fb?.applicability ?? 'safe') && fa?.title === fb?.title;
}

export function reportRuns(ctx: RuleContext, drafts: readonly Draft[], also: (d: Draft) => string): void {
  const sorted = [...drafts].sort((a, b) => a.at.startIndex - b.at.startIndex);
  const next = (s: Node): Node | null => {
    let n = s.nextNamedSibling;
    while (n && n.type === 'comment') n = n.nextNamedSibling;
    return n;
  };
  const runs: Draft[][] = [];
  let prevStmt: Node | null = null;
  for (const d of sorted) {
    const stmt = enclosingStatement(d.at);
    const run = runs[runs.length - 1];
    if (run && prevStmt && sameKind(d, run[0]) && (prevStmt.id === stmt.id || next(prevStmt)?.id === stmt.id)) run.push(d);
    else runs.push([d]);
    prevStmt = stmt;
  }
  for (const [first, ...rest] of runs) {
    if (!rest.length) {
      ctx.report(first.at, first.opts);
      continue;
    }
    const all = [first, ...rest];
    const fixes = all.map((d) => d.opts.fix ?? null);
    const fix = fixes.every((f): f is FixDraft => !!f)
      ? {
          ...fixes[0],
          title: `${fixes[0].title ?? 'Fix'} (${all.length} statements)`,
          edits: fixes.flatMap((f) => f.edits),
          imports: fixes.flatMap((f) => f.imports ?? []).filter((x, i, a) => a.findIndex((y) => JSON.stringify(y) === JSON.stringify(x)) === i),
          needsAccel: fixes.some((f) => f.needsAccel) || undefined,
        }
      : null;
    ctx.report(first.at, {
      ...first.opts,
      fix,
      related: [...(first.opts.related ?? []), ...rest.flatMap((d) => [{ start: d.at.startIndex, end: d.at.endIndex, message: also(d) }, ...(d.opts.related ?? [])])],
    });
  }
}
