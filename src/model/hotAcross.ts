/**
 * Cross-module hot facts (issue 9): which functions of a project module run inside a hot loop of another module
 * (reverse edges: the importers' loops call them), resolved through imports, instances of classes from another
 * module (`logger = utils.MetricLogger()`, `self.trainer = Trainer()`, an instance passed in as a parameter) and
 * their `__call__`. Built once per project index (ProjectIndex.derived, dropped when a module changes), never per
 * query: every module of the project is scanned once, its calls in hot scopes resolved once.
 */
import type { Node } from '../core/parse';
import type { HotVia, ProjectHot, Semantics } from '../core/semantics';
import { callArgs, kwValue } from '../core/semantics';
import type { ModuleEntry, ProjectView, Resolved } from './project';
import { importBindings } from './project';

/** A call site (in some project module) that reaches a function of another module. */
export interface CallerRef {
  module: ModuleEntry;
  call: Node;
  target: Resolved;
}

/**
 * Demand-driven, memoized per project index state (ProjectIndex.derived): the facts of a module are built when a
 * file asks, from the project files whose text names that module (its importers), following at most MAX_HOPS
 * modules up the reverse edges.
 */
export interface HotFacts {
  /** The functions of the module at `path` that hot loops of other modules call, by definition start offset. */
  hotDefs(path: string): Map<number, ProjectHot>;
  /** The calls of the module at `path` (by start offset) in hot scopes that reach another module's function. */
  hotCalls(path: string): Map<number, Resolved>;
  /** The calls of other modules (any scope) that reach the definition `def` of the module at `path`. */
  callers(path: string, def: Node): CallerRef[];
  /**
   * The calls of other modules that reach the method `def` (of the module at `path`) on an instance of its class
   * (`model = Vocoder().to(device); model.save(p)`, `stopper = EarlyStopping(); stopper(loss, model, p)` for
   * `__call__`), which `callers` (imports only) does not see.
   */
  instanceCallers(path: string, def: Node): CallerRef[];
}

const MAX_HOPS = 3;

export function defKey(r: { path: string; def: Node }): string {
  return `${r.path}:${r.def.startIndex}`;
}

/** The project's cross-module hot facts (null without a project that can list its files). */
export function hotFacts(project: ProjectView | null | undefined): HotFacts | null {
  if (!project?.derived || !project.projectFiles) return null;
  return project.derived('hot-across', () => new Facts(project));
}

function lineOf(text: string, offset: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** The name other modules import a module by: its file stem, or its package folder for `__init__.py`. */
function stemOf(path: string): string {
  const parts = path.split('/');
  const file = parts.pop() ?? '';
  return file === '__init__.py' ? parts.pop() ?? '' : file.replace(/\.py$/, '');
}

class Facts implements HotFacts {
  private readonly defsMemo = new Map<string, Map<number, ProjectHot>>();
  private readonly callsMemo = new Map<string, Map<number, Resolved>>();
  private readonly callersMemo = new Map<string, Map<number, CallerRef[]>>();
  private readonly importersMemo = new Map<string, ModuleEntry[]>();
  private readonly instanceMemo = new Map<string, CallerRef[]>();
  private readonly inProgress = new Set<string>();
  private hops = 0;

  constructor(private readonly project: ProjectView) {}

  /** Project modules (other than `path`'s) whose text names the module at `path` and imports something. */
  private importers(path: string): ModuleEntry[] {
    let hit = this.importersMemo.get(path);
    if (hit) return hit;
    hit = [];
    const stem = stemOf(path);
    // an import statement that names the module (`import utils`, `from util.misc import f`, `from . import misc`)
    const re = stem && /^[A-Za-z_]\w*$/.test(stem) ? new RegExp(`^[ \\t]*(from[ \\t]+[\\w.]*\\b${stem}\\b|(from[ \\t]+[\\w.]+[ \\t]+)?import[ \\t][^\\n]*\\b${stem}\\b)`, 'm') : null;
    if (re) {
      for (const f of this.project.projectFiles!()) {
        if (f === path) continue;
        const text = this.project.textOf(f);
        if (!text || !re.test(text)) continue;
        const m = this.project.module(f);
        if (m) hit.push(m);
      }
    }
    this.importersMemo.set(path, hit);
    return hit;
  }

  callers(path: string, def: Node): CallerRef[] {
    let byDef = this.callersMemo.get(path);
    if (!byDef) {
      byDef = new Map();
      this.callersMemo.set(path, byDef);
      for (const m of this.importers(path)) {
        for (const call of m.sema.nodes('call')) {
          const head = headName(call.childForFieldName('function'));
          if (!head || (!m.imports.has(head) && !hasStarImport(m))) continue;
          const r = this.project.resolveCall(call, m.sema, m.path);
          if (!r || r.path !== path || (r.kind !== 'function' && r.kind !== 'method' && r.kind !== 'class')) continue;
          push(byDef, r.def.startIndex, { module: m, call, target: r });
        }
      }
    }
    return byDef.get(def.startIndex) ?? [];
  }

  instanceCallers(path: string, def: Node): CallerRef[] {
    const key = `${path}:${def.startIndex}`;
    const hit = this.instanceMemo.get(key);
    if (hit) return hit;
    const out: CallerRef[] = [];
    this.instanceMemo.set(key, out);
    const name = def.childForFieldName('name')?.text;
    if (!name) return out;
    for (const m of this.importers(path)) {
      for (const call of m.sema.nodes('call')) {
        const fn = call.childForFieldName('function');
        if (!(fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text === name : name === '__call__' && fn?.type === 'identifier')) continue;
        const r = resolveCallee(this.project, this, m, call, 2);
        if (r && r.path === path && r.def.startIndex === def.startIndex) out.push({ module: m, call, target: r });
      }
    }
    return out;
  }

  hotDefs(path: string): Map<number, ProjectHot> {
    const hit = this.defsMemo.get(path);
    if (hit) return hit;
    const out = new Map<number, ProjectHot>();
    if (this.inProgress.has(path) || this.hops >= MAX_HOPS) return out;
    this.inProgress.add(path);
    this.hops++;
    try {
      for (const m of this.importers(path)) {
        for (const [start, target] of this.hotCalls(m.path)) {
          if (target.path !== path) continue;
          const call = m.sema.root.descendantForIndex(start);
          let c: Node | null = call;
          while (c && !(c.type === 'call' && c.startIndex === start)) c = c.parent;
          const h = c ? m.sema.hot(c) ?? this.stepLoops(m).get(start) ?? null : null;
          if (!c || !h) continue;
          const via: HotVia = { path: m.path, line: lineOf(m.text, start), kind: h.kind, start, end: c.endIndex };
          const old = out.get(target.def.startIndex);
          out.set(
            target.def.startIndex,
            old
              ? { kind: old.kind === 'train' || h.kind === 'train' ? 'train' : 'eval', throttled: old.throttled && h.throttled, via: old.via.some((v) => v.path === via.path && v.start === via.start) ? old.via : [...old.via, via] }
              : { kind: h.kind, throttled: h.throttled, via: [via] },
          );
        }
      }
    } finally {
      this.hops--;
      this.inProgress.delete(path);
    }
    if (this.hops === 0 || out.size) this.defsMemo.set(path, out);
    return out;
  }

  hotCalls(path: string): Map<number, Resolved> {
    const hit = this.callsMemo.get(path);
    if (hit) return hit;
    const out = new Map<number, Resolved>();
    const m = this.project.module(path);
    if (!m) return out;
    this.callsMemo.set(path, out);
    // this module's own functions that other modules' hot loops call are hot scopes too
    m.sema.addProjectHot(this.hotDefs(path));
    for (const call of m.sema.nodes('call')) {
      const h = m.sema.hot(call);
      if (!h) continue;
      // model code (forward) is not a loop: its helpers are layers, not step work
      if (h.anchor.type === 'function_definition' && !h.via && h.anchor.childForFieldName('name')?.text === 'forward') continue;
      const target = resolveCallee(this.project, this, m, call, 2);
      if (target && target.path !== m.path) out.set(call.startIndex, target);
    }
    for (const start of this.stepLoops(m).keys()) {
      if (out.has(start)) continue;
      const call = this.stepLoopNodes.get(m)?.get(start);
      const target = call ? resolveCallee(this.project, this, m, call, 2) : null;
      if (target && target.path !== m.path) out.set(start, target);
    }
    return out;
  }

  private readonly stepLoopMemo = new WeakMap<ModuleEntry, Map<number, { kind: 'train'; throttled: boolean }>>();
  private readonly stepLoopNodes = new WeakMap<ModuleEntry, Map<number, Node>>();

  /**
   * The calls (by start offset) in loops of `m` that are no hot loop of its own but whose iteration calls another
   * module's method running a whole training step, once per call (an RL loop's `dqn.learn(mem)` between environment
   * steps, `policy.train(replay_buffer)`): the loop is a training loop, so the other calls of its iteration
   * (`dqn.act(state)` every env step) are hot too; each is throttled when a throttle guard in the loop covers it.
   */
  private stepLoops(m: ModuleEntry): Map<number, { kind: 'train'; throttled: boolean }> {
    let hit = this.stepLoopMemo.get(m);
    if (hit) return hit;
    hit = new Map();
    const nodes = new Map<number, Node>();
    this.stepLoopMemo.set(m, hit);
    this.stepLoopNodes.set(m, nodes);
    const sema = m.sema;
    for (const loop of [...sema.nodes('for_statement'), ...sema.nodes('while_statement')]) {
      const body = loop.childForFieldName('body');
      if (!body || sema.hot(loop) || sema.hot(body)) continue;
      const scope = sema.enclosingFunction(loop)?.id ?? null;
      const own = sema.within('call', body).filter((c) => (sema.enclosingFunction(c)?.id ?? null) === scope && !loopBetween(c, loop));
      const steps = new Set<number>();
      for (const c of own) {
        if (c.childForFieldName('function')?.type !== 'attribute') continue;
        const def = resolveCallee(this.project, this, m, c, 2);
        if (def && def.path !== m.path && runsStep(def)) steps.add(c.id);
      }
      if (!steps.size) continue;
      for (const c of own) {
        // (the step itself, `if T % replay_frequency == 0: dqn.learn(mem)`, is every training step: not throttled)
        let throttled = false;
        if (!steps.has(c.id))
        for (let p = c.parent, child: Node = c; p && p.id !== loop.id; child = p, p = p.parent) {
          if (p.type === 'if_statement' && p.childForFieldName('condition')?.id !== child.id && sema.isThrottleCondition(p)) throttled = true;
        }
        hit.set(c.startIndex, { kind: 'train', throttled });
        nodes.set(c.startIndex, c);
      }
    }
    return hit;
  }
}

/** A loop between `node` and `outer` (exclusive). */
function loopBetween(node: Node, outer: Node): boolean {
  for (let p = node.parent; p && p.id !== outer.id; p = p.parent) if (p.type === 'for_statement' || p.type === 'while_statement') return true;
  return false;
}

/** The function runs, once per call, a backward and an optimizer step (not in a loop of its own). */
function runsStep(def: Resolved): boolean {
  const sema = def.module.sema;
  const own = sema.within('call', def.def).filter((c) => sema.enclosingFunction(c)?.id === def.def.id && !loopBetween(c, def.def));
  return own.some((c) => c.childForFieldName('function')?.childForFieldName('attribute')?.text === 'backward') && own.some((c) => c.childForFieldName('function')?.childForFieldName('attribute')?.text === 'step' && sema.isTrainSignal(c));
}

const starMemo = new WeakMap<ModuleEntry, boolean>();

/** The module has a `from m import *` (a name it calls may come from another module without a binding of its own). */
function hasStarImport(m: ModuleEntry): boolean {
  let r = starMemo.get(m);
  if (r === undefined) starMemo.set(m, (r = [...m.imports.values()].some((i) => i.star)));
  return r;
}

function push<K, V>(map: Map<K, V[]>, key: K, v: V): void {
  const list = map.get(key);
  if (list) list.push(v);
  else map.set(key, [v]);
}

function headName(fn: Node | null): string | null {
  let n = fn;
  while (n?.type === 'attribute') n = n.childForFieldName('object');
  return n?.type === 'identifier' ? n.text : null;
}

/**
 * The function of another project module a call reaches: an imported function or class method, a method of an
 * instance whose class is defined in another module (a local binding, a `self.x` attribute, a parameter whose
 * callers pass one), or that instance's `__call__`.
 */
export function resolveCallee(project: ProjectView, facts: HotFacts, m: ModuleEntry, call: Node, depth: number): Resolved | null {
  const r = project.resolveCall(call, m.sema, m.path);
  if (r) return r.kind === 'function' || r.kind === 'method' ? r : null;
  const fn = call.childForFieldName('function');
  if (!fn) return null;
  if (fn.type === 'attribute') {
    const obj = fn.childForFieldName('object');
    const name = fn.childForFieldName('attribute')?.text;
    if (!obj || !name || (obj.type === 'identifier' && (obj.text === 'self' || obj.text === 'cls'))) return null;
    const cls = classOf(project, facts, m, obj, depth);
    if (cls) return methodOf(cls, name, project);
    // an instance of a class a project registry picks by name (`algorithm_class = algorithms.get_algorithm_class(name)`
    // returning `globals()[name]`, then `algorithm = algorithm_class(...)`): the registry's classes' method of that name
    const picked = registryMethod(project, m, obj, name);
    if (picked) return picked;
    // an object a project factory made whose class the factory picks at run time (a registry, `getattr(module,
    // model_type)`): the project's methods of that name, the first that runs a step (BasicSR's create_model)
    return factoryObject(project, m, obj) ? projectMethodNamed(project, name) : null;
  }
  if (fn.type === 'identifier' && !m.sema.calledFunctions(call).length) {
    const cls = classOf(project, facts, m, fn, depth);
    return cls ? methodOf(cls, '__call__', project) : null;
  }
  return null;
}

interface ClassRef {
  cls: Node;
  module: ModuleEntry;
}

/**
 * The method `name` of a class, its own or (given the project) inherited from a project base class, nearest first
 * (`class Mixup(ERM): pass` runs `ERM.update`), up to `depth` bases deep.
 */
function methodOf(c: ClassRef, name: string, project?: ProjectView, depth = 3): Resolved | null {
  const body = c.cls.childForFieldName('body');
  for (const st of body?.namedChildren ?? []) {
    const d = st?.type === 'decorated_definition' ? st.childForFieldName('definition') : st;
    if (d?.type === 'function_definition' && d.childForFieldName('name')?.text === name) return { kind: 'method', def: d, path: c.module.path, module: c.module };
  }
  if (!project || depth <= 0) return null;
  for (const base of c.cls.childForFieldName('superclasses')?.namedChildren ?? []) {
    const b = base ? baseClass(project, c.module, base) : null;
    const hit = b && b.cls.id !== c.cls.id ? methodOf(b, name, project, depth - 1) : null;
    if (hit) return hit;
  }
  return null;
}

/** A base-class expression of a class of `m` that names a project class (same module or imported). */
function baseClass(project: ProjectView, m: ModuleEntry, base: Node): ClassRef | null {
  if (base.type === 'identifier') {
    const local = m.classes.get(base.text);
    if (local) return { cls: local, module: m };
  }
  if (base.type !== 'identifier' && base.type !== 'attribute') return null;
  const r = project.resolveName(base, m.sema, m.path);
  return r?.kind === 'class' ? { cls: r.def, module: r.module } : null;
}

/**
 * The classes a registry function returns by name: `return globals()[name]` (every class of its module),
 * `return ALGORITHMS[name]` / `ALGORITHMS.get(name)` over a module-level dict of classes; null for any other function.
 */
function registryClasses(project: ProjectView, r: Resolved): ClassRef[] | null {
  const m = r.module;
  const out: ClassRef[] = [];
  for (const ret of m.sema.within('return_statement', r.def)) {
    if (m.sema.enclosingFunction(ret)?.id !== r.def.id) continue;
    const v = ret.namedChildren[0];
    let table: Node | null = null;
    if (v?.type === 'subscript') table = v.childForFieldName('value');
    else if (v?.type === 'call' && v.childForFieldName('function')?.type === 'attribute' && v.childForFieldName('function')?.childForFieldName('attribute')?.text === 'get') table = v.childForFieldName('function')?.childForFieldName('object') ?? null;
    if (!table) continue;
    if (table.type === 'call' && table.childForFieldName('function')?.text === 'globals') {
      for (const cls of m.classes.values()) out.push({ cls, module: m });
      continue;
    }
    const dict = table.type === 'identifier' ? m.constants.get(table.text) : null;
    if (dict?.type !== 'dictionary') continue;
    for (const pair of dict.namedChildren) {
      const val = pair?.type === 'pair' ? pair.childForFieldName('value') : null;
      const c = val ? baseClass(project, m, val) : null;
      if (c) out.push(c);
    }
  }
  return out.length ? out : null;
}

/**
 * The method `name` of an instance made by a class that a project registry picked (`cls = registry(name); obj =
 * cls(...)` or `registry(name)(...)`, in the instance's scope): among the registry's classes the first whose method
 * (own or inherited) runs a training step, else the first that has one; marked as picked at run time.
 */
function registryMethod(project: ProjectView, m: ModuleEntry, obj: Node, name: string): Resolved | null {
  if (obj.type !== 'identifier') return null;
  const scope = m.sema.enclosingFunction(obj)?.startIndex ?? -1;
  const same = (n: Node) => (m.sema.enclosingFunction(n)?.startIndex ?? -1) === scope;
  for (const rhs of m.sema.bindings(obj.text)) {
    if (rhs.type !== 'call' || !same(rhs)) continue;
    const fn = rhs.childForFieldName('function');
    const pickers = fn?.type === 'call' ? [fn] : fn?.type === 'identifier' && !m.classes.has(fn.text) && !m.functions.has(fn.text) ? m.sema.bindings(fn.text).filter((v) => v.type === 'call' && same(v)) : [];
    for (const p of pickers) {
      const pf = p.childForFieldName('function');
      const local = pf?.type === 'identifier' ? m.functions.get(pf.text) : undefined;
      const r = local ? { kind: 'function' as const, def: local, path: m.path, module: m } : project.resolveCall(p, m.sema, m.path);
      const classes = r?.kind === 'function' ? registryClasses(project, r) : null;
      if (!classes) continue;
      const methods = classes.map((c) => methodOf(c, name, project)).filter((x): x is Resolved => !!x);
      const hit = methods.find((d) => runsStep(d)) ?? methods[0];
      if (!hit) continue;
      if (classes.length > 1) byName.add(hit);
      return hit;
    }
  }
  return null;
}

const SELF_RETURNING = /^(to|cuda|cpu|train|eval|float|half|double|bfloat16|requires_grad_)$/;

/** The class (of any project module) an expression's value is an instance of, or null. */
function classOf(project: ProjectView, facts: HotFacts, m: ModuleEntry, expr: Node, depth: number): ClassRef | null {
  if (depth < 0) return null;
  const sema = m.sema;
  if (expr.type === 'call') {
    const r = project.resolveCall(expr, sema, m.path);
    if (r?.kind === 'class') return { cls: r.def, module: r.module };
    // a factory (`model = define_Model(opt)`, `create_model(opt)`): the class of what it returns
    if (r?.kind === 'function') return factoryClass(project, facts, r.module, r.def, depth - 1);
    const fn = expr.childForFieldName('function');
    // `Net().to(device)`, `Net().cuda().eval()`: nn.Module's placement and mode methods return the module itself
    if (fn?.type === 'attribute' && SELF_RETURNING.test(fn.childForFieldName('attribute')?.text ?? '')) {
      const obj = fn.childForFieldName('object');
      // (one hop: `x = x.to(device)` binds x to a call on itself, which the bindings step below follows at the same depth)
      return obj ? classOf(project, facts, m, obj, depth - 1) : null;
    }
    if (fn?.type === 'identifier') {
      const local = m.classes.get(fn.text);
      if (local) return { cls: local, module: m };
      const localFn = m.functions.get(fn.text);
      if (localFn && sema.enclosingFunction(expr)?.id !== localFn.id) return factoryClass(project, facts, m, localFn, depth - 1);
      // `from models.model_plain import ModelPlain as M` inside the factory's branches (KAIR's define_Model)
      return localImportClass(project, m, expr, fn.text);
    }
    return null;
  }
  if (expr.type === 'identifier') {
    const scope = sema.enclosingFunction(expr);
    // a parameter: what the callers pass (this module's call sites, then other modules')
    const param = scope ? parameterIndex(scope, expr.text) : -1;
    if (scope && param >= 0) {
      const method = isMethod(sema, scope);
      const fromCalls = (callSites: readonly Node[], mod: ModuleEntry) => {
        for (const c of callSites) {
          const arg = argumentAt(c, expr.text, param, method);
          const hit = arg ? classOf(project, facts, mod, arg, depth - 1) : null;
          if (hit) return hit;
        }
        return null;
      };
      const local = fromCalls(sema.callSitesOf(scope), m);
      if (local) return local;
      for (const ref of facts.callers(m.path, scope)) {
        const hit = fromCalls([ref.call], ref.module);
        if (hit) return hit;
      }
      return null;
    }
    // (scopes compared by offset: `expr` may come from the analysed file's tree, `rhs` from the project's parse of it)
    for (const rhs of sema.bindings(expr.text)) {
      const s = sema.enclosingFunction(rhs);
      if (s !== null && s.startIndex !== scope?.startIndex) continue;
      // (a call is no hop of its own: a factory behind it costs one, `m = M(opt)` resolves at once)
      const hit = classOf(project, facts, m, rhs, rhs.type === 'call' ? depth : depth - 1);
      if (hit) return hit;
    }
    return null;
  }
  if (expr.type === 'attribute') {
    const obj = expr.childForFieldName('object');
    const name = expr.childForFieldName('attribute')?.text;
    if (obj?.type !== 'identifier' || obj.text !== 'self' || !name) return null;
    const cls = sema.enclosingClass(expr);
    for (const a of sema.attributeAssignments(name)) {
      // (classes compared by offset: `expr` may come from the analysed file's tree, `a` from the project's parse of it)
      if (a.childForFieldName('left')?.childForFieldName('object')?.text !== 'self' || sema.enclosingClass(a)?.startIndex !== cls?.startIndex) continue;
      const rhs = a.childForFieldName('right');
      const hit = rhs ? classOf(project, facts, m, rhs, depth - 1) : null;
      if (hit) return hit;
    }
  }
  return null;
}

/**
 * The class of the instance a project factory function returns (`return m` after `m = M(opt)`, `return
 * ModelPlain(opt)`): the first returned expression whose class resolves. An if-chain that binds the class per branch
 * (`if model == 'plain': from models.model_plain import ModelPlain as M`) yields its first class: every branch's
 * class is a model of the same interface.
 */
function factoryClass(project: ProjectView, facts: HotFacts, m: ModuleEntry, def: Node, depth: number): ClassRef | null {
  if (depth < 0) return null;
  for (const ret of m.sema.within('return_statement', def)) {
    if (m.sema.enclosingFunction(ret)?.id !== def.id) continue;
    const value = ret.namedChildren[0];
    if (!value || (value.type !== 'identifier' && value.type !== 'call')) continue;
    const hit = classOf(project, facts, m, value, depth);
    if (hit) return hit;
  }
  return null;
}

/** A class bound by a `from X import C [as name]` inside the function that makes the call (function-local imports). */
function localImportClass(project: ProjectView, m: ModuleEntry, call: Node, name: string): ClassRef | null {
  const scope = m.sema.enclosingFunction(call);
  const resolveModule = (project as { resolveModule?: (from: string, level: number, dotted: string) => string | null }).resolveModule?.bind(project);
  if (!scope || !resolveModule) return null;
  for (const st of m.sema.within('import_from_statement', scope)) {
    if (m.sema.enclosingFunction(st)?.id !== scope.id) continue;
    const refs = importBindings({ namedChildren: [st] } as unknown as Node);
    const ref = refs.get(name);
    if (!ref?.name) continue;
    const path = resolveModule(m.path, ref.level, ref.module);
    const target = path ? project.module(path) : null;
    const cls = target?.classes.get(ref.name);
    if (cls && target) return { cls, module: target };
  }
  return null;
}

/** `obj` is bound (in its scope) to a call of a function of another project module: an object a project factory made. */
function factoryObject(project: ProjectView, m: ModuleEntry, obj: Node): boolean {
  if (obj.type !== 'identifier') return false;
  const scope = m.sema.enclosingFunction(obj);
  return m.sema.bindings(obj.text).some((rhs) => {
    if (rhs.type !== 'call' || (m.sema.enclosingFunction(rhs)?.startIndex ?? -1) !== (scope?.startIndex ?? -1)) return false;
    const r = project.resolveCall(rhs, m.sema, m.path);
    return r?.kind === 'function' && r.path !== m.path;
  });
}

/**
 * The methods named `name` of the project's classes, found from the project files' text (a file is parsed only when
 * it defines a method of that name): the first whose body runs a backward or an optimizer step, else null. Memoised
 * per project index state.
 */
const byName = new WeakSet<Resolved>();

/** A method `resolveCallee` picked by name among the project's classes (the factory picks the class at run time). */
export function pickedByName(r: Resolved): boolean {
  return byName.has(r);
}

function projectMethodNamed(project: ProjectView, name: string): Resolved | null {
  if (!project.derived || !project.projectFiles || !/^[A-Za-z_]\w*$/.test(name)) return null;
  const memo = project.derived('methods-by-name', () => new Map<string, Resolved | null>());
  if (memo.has(name)) return memo.get(name)!;
  let hit: Resolved | null = null;
  const re = new RegExp(`^[ \\t]+def[ \\t]+${name}[ \\t]*\\(`, 'm');
  for (const f of project.projectFiles()) {
    const text = project.textOf(f);
    if (!text || !re.test(text)) continue;
    const mod = project.module(f);
    if (!mod) continue;
    for (const cls of mod.classes.values()) {
      const r = methodOf({ cls, module: mod }, name);
      if (r && /\.backward\(|\.step\(/.test(r.def.text)) {
        byName.add(r);
        hit = r;
        break;
      }
    }
    if (hit) break;
  }
  memo.set(name, hit);
  return hit;
}

function paramNodes(fn: Node): Node[] {
  return fn.childForFieldName('parameters')?.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment') ?? [];
}

export function paramName(p: Node): string | null {
  const n = p.type === 'identifier' ? p : p.childForFieldName('name') ?? (p.type === 'typed_parameter' || /splat/.test(p.type) ? p.namedChildren[0] : null);
  return n?.type === 'identifier' ? n.text : null;
}

function parameterIndex(fn: Node, name: string): number {
  return paramNodes(fn).findIndex((p) => paramName(p) === name);
}

function isMethod(sema: Semantics, fn: Node): boolean {
  const first = paramNodes(fn)[0];
  return !!sema.enclosingClass(fn) && (first?.text === 'self' || first?.text === 'cls');
}

/** The argument a call passes to parameter `name` at `index` (a method's `self` not counted when called on an object). */
export function argumentAt(call: Node, name: string, index: number, method: boolean): Node | null {
  const { positional, keywords } = callArgs(call);
  const kw = kwValue(keywords.get(name));
  if (kw) return kw;
  const shift = method && call.childForFieldName('function')?.type === 'attribute' ? 1 : 0;
  const i = index - shift;
  if (i < 0 || positional.slice(0, i).some((x) => x.type === 'list_splat')) return null;
  const pos = positional[i];
  return pos && pos.type !== 'list_splat' && pos.type !== 'dictionary_splat' ? pos : null;
}

/** The other module's function a call of the analysed file reaches from a hot scope (by the call's offsets). */
export function hotCallTarget(project: ProjectView | null | undefined, path: string, call: Node): Resolved | null {
  const facts = hotFacts(project);
  if (!facts) return null;
  const abs = (project as { abs?: (p: string) => string }).abs?.(path) ?? path;
  return facts.hotCalls(abs).get(call.startIndex) ?? null;
}

/** The functions of the module at `path` that hot loops of other modules call (for Semantics.useProjectHot). */
export function hotDefsOf(project: ProjectView | null | undefined, path: string): Map<number, ProjectHot> | null {
  const facts = hotFacts(project);
  if (!facts) return null;
  const abs = (project as { abs?: (p: string) => string }).abs?.(path) ?? path;
  return facts.hotDefs(abs);
}

/** A call in another module's helper that a predicate accepted. */
export interface HelperHit {
  path: string;
  node: Node;
  sema: Semantics;
  /** The helper the analysed file calls. */
  callee: Resolved;
}

/**
 * The first call `pred` accepts inside the other-module functions that `calls` (of the analysed file, in hot scopes)
 * reach, following the helper's own same-module calls and its further cross-module calls, up to `depth` levels.
 */
export function reachesInHelpers(project: ProjectView | null | undefined, path: string, calls: readonly Node[], pred: (sema: Semantics, call: Node) => boolean, depth = 3): HelperHit | null {
  const facts = hotFacts(project);
  if (!facts || !project) return null;
  const seen = new Set<string>();
  const search = (def: Resolved, top: Resolved, d: number): HelperHit | null => {
    const key = defKey(def);
    if (seen.has(key) || d < 0) return null;
    seen.add(key);
    const sema = def.module.sema;
    const own = sema.within('call', def.def).filter((c) => sema.enclosingFunction(c)?.id === def.def.id);
    for (const c of own) if (pred(sema, c)) return { path: def.path, node: c, sema, callee: top };
    if (d === 0) return null;
    const ext = facts.hotCalls(def.path);
    for (const c of own) {
      for (const g of sema.calledFunctions(c)) {
        const hit = search({ kind: 'function', def: g, path: def.path, module: def.module }, top, d - 1);
        if (hit) return hit;
      }
      const t = ext.get(c.startIndex);
      if (t) {
        const hit = search(t, top, d - 1);
        if (hit) return hit;
      }
    }
    return null;
  };
  for (const call of calls) {
    const t = hotCallTarget(project, path, call);
    if (!t) continue;
    const hit = search(t, t, depth);
    if (hit) return hit;
  }
  return null;
}
