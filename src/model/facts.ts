/**
 * Facts that cross module boundaries (issue 9): what a call into another module of the project does, found in that
 * module's own tree (bounded depth, same-module helpers followed, no cycles). Rules ask these at the caller and
 * report there, with the other module's line as a related location.
 */
import type { Node } from '../core/parse';
import type { RuleContext } from '../core/rule';
import type { Semantics } from '../core/semantics';
import type { ProjectView, Resolved } from './project';

/** A place in another module. */
export interface Reached {
  path: string;
  /** The node the predicate matched, in `sema`'s tree. */
  node: Node;
  sema: Semantics;
  /** The function of the other module the caller calls. */
  callee: Resolved;
}

/**
 * The first call (in source order) that `pred` accepts inside the project function `call` resolves to, following
 * the calls it makes into its own module's functions and into further project modules, up to `depth` calls deep.
 */
export function reachesInProject(ctx: RuleContext, call: Node, pred: (sema: Semantics, call: Node) => boolean, depth = 3): Reached | null {
  const project = ctx.project;
  if (!project) return null;
  const first = project.resolveCall(call, ctx.sema, ctx.path);
  if (!first || (first.kind !== 'function' && first.kind !== 'method')) return null;
  return search(project, first, pred, depth, new Set(), first);
}

function search(project: ProjectView, def: Resolved, pred: (sema: Semantics, call: Node) => boolean, depth: number, seen: Set<string>, top: Resolved): Reached | null {
  const key = `${def.path}:${def.def.startIndex}`;
  if (seen.has(key) || depth < 0) return null;
  seen.add(key);
  const sema = def.module.sema;
  const calls = sema.within('call', def.def).filter((c) => sema.enclosingFunction(c)?.id === def.def.id);
  for (const c of calls) if (pred(sema, c)) return { path: def.path, node: c, sema, callee: top };
  if (depth === 0) return null;
  for (const c of calls) {
    for (const g of sema.calledFunctions(c)) {
      const hit = search(project, { kind: 'function', def: g, path: def.path, module: def.module }, pred, depth - 1, seen, top);
      if (hit) return hit;
    }
    const ext = project.resolveCall(c, sema, def.path);
    if (ext && (ext.kind === 'function' || ext.kind === 'method')) {
      const hit = search(project, ext, pred, depth - 1, seen, top);
      if (hit) return hit;
    }
  }
  return null;
}

/** The called name: `f` of `f(...)`, `g` of `a.b.g(...)` (never the text of a long receiver chain). */
export function lastName(fn: Node): string {
  return fn.type === 'attribute' ? fn.childForFieldName('attribute')?.text ?? '' : fn.type === 'identifier' ? fn.text : '';
}

/** `file.py:line` of a node in another module, for messages. */
export function whereIn(r: { path: string; node: Node; sema: Semantics }): string {
  return `${r.path.split('/').pop() ?? r.path}:${r.sema.text.slice(0, r.node.startIndex).split('\n').length}`;
}

/** Calls of this file that reach `pred` in another module of the project (memoized per rule run by the caller). */
export function projectCallsReaching(ctx: RuleContext, pred: (sema: Semantics, call: Node) => boolean, depth = 3, name?: RegExp): { call: Node; reached: Reached }[] {
  if (!ctx.project) return [];
  const out: { call: Node; reached: Reached }[] = [];
  for (const call of ctx.sema.nodes('call')) {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'identifier' && fn?.type !== 'attribute') continue;
    // a name filter keeps unrelated calls from being resolved (each resolution may parse another module)
    if (name && !name.test(lastName(fn))) continue;
    // same-file functions and library calls are not the project's other modules
    if (fn.type === 'identifier' && ctx.sema.calledFunctions(call).length) continue;
    const reached = reachesInProject(ctx, call, pred, depth);
    if (reached) out.push({ call, reached });
  }
  return out;
}
