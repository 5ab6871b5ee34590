/** Helpers of the distributed family (5xx): launch targets, SPMD facts, env reads, argument edits. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, kwValue, stringContent } from '../../core/semantics';
import type { Edit } from '../../core/types';
import { projectCallsReaching, type Reached } from '../../model/facts';
import { importedDefinitions } from '../shared';

export const XLA_LAUNCHERS = new Set(['torch_xla.launch', 'torch_xla.distributed.xla_multiprocessing.spawn']);
export const INIT_PG = new Set(['torch.distributed.init_process_group', 'torch.distributed.distributed_c10d.init_process_group']);
export const DDP = new Set(['torch.nn.parallel.DistributedDataParallel', 'torch.nn.parallel.distributed.DistributedDataParallel']);
export const USE_SPMD = 'torch_xla.runtime.use_spmd';

/** Calls whose callee resolves to one of `names`. */
export function callsTo(ctx: RuleContext, names: Set<string> | string[]): Node[] {
  // from the file's callee index (a scan of every call per question was 14% of the callee lookups of a 5,000-line file)
  return ctx.sema.callsResolvedTo(names);
}

/** Launchers of the XLA multi-process paradigm, including the generated module's `launch`. */
export function isXlaLauncher(ctx: RuleContext, call: Node): boolean {
  const callee = ctx.sema.callee(call) ?? '';
  return XLA_LAUNCHERS.has(callee) || callee === `${ctx.options.accelModule}.launch`;
}

/** The function definitions a launcher call starts (`torch_xla.launch(_mp_fn, ...)`). */
export function launchedFunctions(ctx: RuleContext, call: Node): Node[] {
  const first = callArgs(call).positional[0] ?? kwValue(callArgs(call).keywords.get('fn'));
  if (first?.type !== 'identifier') return [];
  return ctx.sema.functionsNamed(first.text).filter((f) => !ctx.sema.enclosingClass(f));
}

/** `xmp.spawn(fn, nprocs=1)` and `torch_xla.launch(fn, debug_single_process=True)` run one process. */
export function singleProcess(call: Node): boolean {
  const { keywords } = callArgs(call);
  const n = kwValue(keywords.get('nprocs'));
  const dbg = kwValue(keywords.get('debug_single_process'));
  return n?.text === '1' || dbg?.text === 'True';
}

/** A function and the same-file functions it calls, up to `depth` levels. */
export function withCallees(ctx: RuleContext, fn: Node, depth = 2): Node[] {
  const out = new Map<number, Node>([[fn.id, fn]]);
  let frontier = [fn];
  for (let d = 0; d < depth; d++) {
    const next: Node[] = [];
    for (const f of frontier) {
      for (const call of ctx.sema.callsWithin(f)) {
        for (const g of ctx.sema.calledFunctions(call)) {
          if (!out.has(g.id)) {
            out.set(g.id, g);
            next.push(g);
          }
        }
      }
    }
    frontier = next;
  }
  return [...out.values()];
}

/** `os.environ['X'] = "1"` / `os.environ.setdefault('X', "1")` / `os.putenv` writes of `name` with a truthy value. */
export function envWrites(ctx: RuleContext, name: string): { node: Node; stmt: Node; value: Node | null }[] {
  const out: { node: Node; stmt: Node; value: Node | null }[] = [];
  for (const a of ctx.sema.nodes('assignment')) {
    const left = a.childForFieldName('left');
    if (left && envKey(ctx, left) === name) out.push({ node: left, stmt: a.parent?.type === 'expression_statement' ? a.parent : a, value: a.childForFieldName('right') });
  }
  for (const call of ctx.sema.nodes('call')) {
    const callee = ctx.sema.callee(call);
    if (callee !== 'os.environ.setdefault' && callee !== 'os.putenv') continue;
    const [k, v] = callArgs(call).positional;
    if (k?.type === 'string' && stringContent(k) === name) {
      const stmt = call.parent?.type === 'expression_statement' ? call.parent : call;
      out.push({ node: call, stmt, value: v ?? null });
    }
  }
  return out;
}

/** The key of `os.environ['KEY']`, else null. */
export function envKey(ctx: RuleContext, node: Node): string | null {
  if (node.type !== 'subscript') return null;
  if (ctx.sema.resolve(node.childForFieldName('value')) !== 'os.environ') return null;
  const key = node.childForFieldName('subscript');
  return key?.type === 'string' ? stringContent(key) : null;
}

/** Env-var reads: `os.environ['X']`, `os.environ.get('X', d)`, `os.getenv('X', d)`; returns the var name. */
export function envRead(ctx: RuleContext, node: Node): { name: string; hasDefault: boolean } | null {
  if (node.type === 'subscript') {
    const name = envKey(ctx, node);
    if (!name) return null;
    const p = node.parent;
    if (p?.type === 'assignment' && p.childForFieldName('left')?.id === node.id) return null;
    if (p?.type === 'augmented_assignment' || p?.type === 'delete_statement') return null;
    return { name, hasDefault: false };
  }
  if (node.type === 'call') {
    const callee = ctx.sema.callee(node);
    if (callee !== 'os.environ.get' && callee !== 'os.getenv') return null;
    const [k, d] = callArgs(node).positional;
    if (k?.type !== 'string') return null;
    const name = stringContent(k);
    return name ? { name, hasDefault: !!d } : null;
  }
  return null;
}

/** Whether SPMD is switched on in this file: `xr.use_spmd()` or `XLA_USE_SPMD=1` written to the environment. */
export function spmdEnabled(ctx: RuleContext): boolean {
  if (callsTo(ctx, [USE_SPMD]).length) return true;
  return envWrites(ctx, 'XLA_USE_SPMD').some((w) => !!w.value && /^['"]?(1|true)['"]?$/i.test(w.value.text.trim()));
}

/** Condition text that selects one rank: `rank == 0`, `xm.is_master_ordinal()`, `master_process`, … */
export function isRankGuard(cond: string): boolean {
  return (
    /\b\w*(rank|ordinal)\w*(\(\))?\s*(==|!=)\s*0\b/.test(cond) ||
    /\b0\s*==\s*\w*(rank|ordinal)/.test(cond) ||
    /\b(is_master_ordinal|is_main_process|is_master|is_rank_zero|is_local_main_process|is_world_process_zero)\b/.test(cond) ||
    /\b(master_process|is_master|main_process|is_main)\b/.test(cond)
  );
}

/** The `if` statements between `node` and its enclosing function whose body selects one rank. */
export function rankGuardAbove(node: Node): Node | null {
  for (let p = node.parent, child: Node = node; p; child = p, p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'lambda') return null;
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      const cond = p.childForFieldName('condition');
      if (cond && cond.id !== child.id && isRankGuard(cond.text)) return p;
    }
    if (p.type === 'conditional_expression') {
      const [, cond] = p.namedChildren;
      if (cond && cond.id !== child.id && isRankGuard(cond.text)) return p;
    }
  }
  return null;
}

/** Replaces the content of a string literal, keeping its prefix and quotes. */
export function replaceStringContent(node: Node, content: string): Edit {
  const start = node.namedChildren.find((c) => c?.type === 'string_start');
  const end = node.namedChildren.find((c) => c?.type === 'string_end');
  if (!start || !end) return { start: node.startIndex, end: node.endIndex, text: JSON.stringify(content) };
  return { start: start.endIndex, end: end.startIndex, text: content };
}

/** Arguments of a call in order (positional and keyword), comments excluded. */
function argNodes(call: Node): Node[] {
  const list = call.childForFieldName('arguments');
  return list?.type === 'argument_list' ? list.namedChildren.filter((a): a is Node => !!a && a.type !== 'comment') : [];
}

/**
 * Edits removing some arguments of a call (with their commas) and appending `add` (`name=value`
 * texts). Edits never overlap each other.
 */
export function editArgs(call: Node, remove: Node[], add: string[] = []): Edit[] {
  const args = argNodes(call);
  const list = call.childForFieldName('arguments')!;
  const gone = new Set(remove.map((r) => r.id));
  const edits: Edit[] = [];
  let trailingRemoved = false;
  let i = 0;
  while (i < args.length) {
    if (!gone.has(args[i].id)) {
      i++;
      continue;
    }
    let j = i;
    while (j + 1 < args.length && gone.has(args[j + 1].id)) j++;
    const next = args[j + 1];
    const prev = args[i - 1];
    if (next) edits.push({ start: args[i].startIndex, end: next.startIndex, text: '' });
    else if (prev) {
      trailingRemoved = true;
      edits.push({ start: prev.endIndex, end: args[j].endIndex, text: add.map((a) => `, ${a}`).join('') });
    } else {
      trailingRemoved = true;
      edits.push({ start: args[i].startIndex, end: args[j].endIndex, text: add.join(', ') });
    }
    i = j + 1;
  }
  if (add.length && !trailingRemoved) {
    const kept = args.filter((a) => !gone.has(a.id));
    const last = kept[kept.length - 1];
    if (last) edits.push({ start: last.endIndex, end: last.endIndex, text: add.map((a) => `, ${a}`).join('') });
    else edits.push({ start: list.endIndex - 1, end: list.endIndex - 1, text: add.join(', ') });
  }
  return edits;
}

/** The same-file string literal a name or `args.attr` is bound to (assignment, parameter or argparse default). */
export function stringSource(ctx: RuleContext, node: Node): { literal: Node; fromUser: boolean } | null {
  if (node.type === 'string') return { literal: node, fromUser: false };
  if (node.type === 'identifier') {
    const fn = ctx.sema.enclosingFunction(node);
    const values = ctx.sema.bindings(node.text).filter((v) => {
      const owner = ctx.sema.enclosingFunction(v);
      return owner === null || owner.id === fn?.id;
    });
    const params = fn?.childForFieldName('parameters')?.namedChildren.filter(
      (p): p is Node => !!p && (p.type === 'default_parameter' || p.type === 'typed_default_parameter') && p.childForFieldName('name')?.text === node.text,
    ) ?? [];
    const all = [...values, ...params.map((p) => p.childForFieldName('value')!)];
    if (all.length !== 1 || all[0].type !== 'string') return null;
    return { literal: all[0], fromUser: params.length > 0 };
  }
  if (node.type === 'attribute') {
    // `args.backend` with an argparse default, `args.dist_backend = 'nccl'` set on the namespace, `self.backend = 'nccl'`:
    // the program model's sources of the attribute; exactly one string literal, so that one edit changes every path
    const sources = ctx.model.attributeSources(node);
    if (sources.length > 1) {
      // `args.dist_backend = 'nccl'` in the reading function's own body, before the read (detr/deit-style
      // init_distributed_mode, next to a `--dist-backend` flag): that write is what the read sees, whatever the flag says
      const fn = ctx.sema.enclosingFunction(node);
      const body = fn?.childForFieldName('body');
      const writes = sources.filter((s) => {
        const stmt = s.value.parent?.parent;
        return !s.argparse && !!body && stmt?.type === 'expression_statement' && stmt.parent?.id === body.id && s.value.endIndex < node.startIndex;
      });
      const last = writes[writes.length - 1];
      if (last) return last.value.type === 'string' ? { literal: last.value, fromUser: false } : null;
    }
    if (sources.length !== 1 || sources[0].value.type !== 'string') return null;
    return { literal: sources[0].value, fromUser: sources[0].argparse };
  }
  return null;
}

/** A short rendering of an expression for messages. */
export function short(text: string, max = 40): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

const pgMemo = new WeakMap<object, { call: Node; reached: Reached }[]>();

/**
 * Calls of this file into other project modules that create the process group (`utils.init_distributed_mode(args)`
 * calling `dist.init_process_group`): the program is distributed although this file never calls it (issue 9).
 */
export function projectProcessGroups(ctx: RuleContext): { call: Node; reached: Reached }[] {
  if (!ctx.project) return [];
  let hit = pgMemo.get(ctx.sema);
  if (!hit) pgMemo.set(ctx.sema, (hit = projectCallsReaching(ctx, (s, c) => INIT_PG.has(s.callee(c) ?? ''), 3, /dist|init|setup|launch|ddp|parallel|world/i)));
  return hit;
}

/**
 * A name bound (once, in the function or at module level) to `"gloo" if not torch.cuda.is_available() else "nccl"` or
 * its mirror: the conditional, when one arm is "nccl" and the other "gloo" and the test reads CUDA availability.
 */
export function ncclChoice(ctx: RuleContext, name: Node): Node | null {
  const c = soleConditionalBinding(ctx, name);
  if (!c) return null;
  const arms = [c.namedChildren[0], c.namedChildren[2]].map((a) => (a?.type === 'string' ? stringContent(a) ?? '' : ''));
  const test = c.namedChildren[1]?.text ?? '';
  return arms.includes('nccl') && arms.includes('gloo') && /cuda\.is_available\(\)/.test(test) ? c : null;
}

/**
 * `cfg.attr` read here, whose value the project sets as a keyword of a call in a module this file imports from
 * (`HParams(dist_backend="nccl", ...)` in tacotron2's hparams.py, reached through `from hparams import create_hparams`):
 * the one string literal the imported modules give `attr`, or null (none, several, or not a string).
 */
export function projectConfigString(ctx: RuleContext, node: Node): { literal: Node; path: string; name: string } | null {
  const project = ctx.project;
  const attr = node.childForFieldName('attribute')?.text;
  if (!project || !attr) return null;
  const found: { literal: Node; path: string; name: string }[] = [];
  const seen = new Set<string>();
  for (const stmt of ctx.sema.nodes('import_from_statement')) {
    for (const r of importedDefinitions(ctx, stmt)) {
      if (r.kind !== 'function' || r.path === ctx.path || seen.has(r.path)) continue;
      seen.add(r.path);
      for (const kw of r.module.sema.within('keyword_argument', r.def)) {
        if (kw.childForFieldName('name')?.text !== attr) continue;
        const v = kw.childForFieldName('value');
        if (v) found.push({ literal: v, path: r.path, name: attr });
      }
    }
  }
  return found.length === 1 && found[0].literal.type === 'string' ? found[0] : null;
}

/** The value `name` is bound to when it is bound once (in its function or at module level), if that is a conditional expression. */
export function soleConditionalBinding(ctx: RuleContext, name: Node): Node | null {
  const fn = ctx.sema.enclosingFunction(name);
  const values = ctx.sema.bindings(name.text).filter((v) => {
    const owner = ctx.sema.enclosingFunction(v);
    return owner === null || owner.id === fn?.id;
  });
  return values.length === 1 && values[0].type === 'conditional_expression' ? values[0] : null;
}
