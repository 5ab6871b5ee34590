/**
 * One model of "this code only runs when CUDA (or MPS) is present" (issue 9): the question every rule asks
 * before it reports CUDA-only work that a TPU host never reaches. Pure engine code.
 *
 * A TPU host has no CUDA and no MPS: `torch.cuda.is_available()` and `torch.backends.mps.is_available()` are
 * False there, `torch.cuda.device_count()` is 0, and no tensor or device can be of type "cuda" or "mps" (making
 * one raises first). From that, `tpuTruth` gives the value a condition takes on a TPU host (true, false, or null
 * when it is not known), following flags through the program model (`use_cuda = torch.cuda.is_available()`,
 * `self.cuda = not args.no_cuda and torch.cuda.is_available()`; `cuda = device.type != "cpu"` is True on an XLA
 * device too, so it is no CUDA-only flag). `cudaOnly(node)` says whether a node runs only when CUDA/MPS is present:
 * - the body of `if <false on TPU>:`, the else of `if <true on TPU>:`, an elif/else after an arm that a TPU host
 *   takes, the arm of a ternary a TPU host does not take, the right operand of `<false> and …` / `<true> or …`;
 * - the statements after an early exit in the same block: `if not torch.cuda.is_available(): return None`
 *   (or raise, continue, break, `sys.exit()`), `assert torch.cuda.is_available()`;
 * - the body of a function whose every call site (in this file and, with a project, in the modules that import
 *   it) is itself under such a guard (one level).
 * A name the model knows nothing about (a `--cuda` flag, an unknown `use_gpu` parameter) counts as a CUDA flag
 * when it is named so (`cuda`, `gpu`, `use_cuda`, `args.gpu is not None`), not when it says the opposite (`no_cuda`).
 */
import type { Node, Tree } from '../core/parse';
import type { Semantics } from '../core/semantics';
import { callArgs, semanticsOf, stringContent } from '../core/semantics';
import { NodeMemo } from '../core/memo';
import { ProgramModel, UNKNOWN as UNKNOWN_VALUE, deviceKinds, type Value } from './index';
import type { ProjectView } from './project';

export type Truth = boolean | null;

/** Calls that are False on a TPU host (no CUDA, no MPS, no cuDNN). */
const FALSE_ON_TPU = /^torch\.(cuda\.(is_available|is_bf16_supported|is_initialized|is_tf32_supported)|backends\.(mps\.(is_available|is_built)|cudnn\.is_available|cuda\.is_built)|mps\.is_available)$/;
/** Of those, the MPS probes. */
const MPS_PROBE = /^torch\.(backends\.mps\.(is_available|is_built)|mps\.is_available)$/;
/** Calls that are 0 on a TPU host. */
const ZERO_ON_TPU = /^torch\.(cuda|mps)\.device_count$/;
/** `torch.cuda.get_device_capability()[0] >= 8` and friends: only evaluated under an availability check (they raise without CUDA). */
const CUDA_PROBE = /^torch\.cuda\.(device_count|get_device_capability|get_device_name|get_device_properties|is_bf16_supported)$/;
/** Device types no TPU host has. */
const CUDA_TYPE = /^(cuda(:\d*)?|mps|gpu|torch\.cuda\.\w*Tensor)$/;
/** CUDA tensor types: no tensor of a TPU host has one. */
const CUDA_TENSOR_TYPE = /^torch\.cuda\.\w*Tensor$/;
/** Names of CUDA flags when the model does not know their value (`args.cuda`, `use_gpu`, `args.gpu`, `n_gpu`). */
const CUDA_NAME = /(^|_)(cuda|gpu|gpus|ngpu|n_gpu|num_gpus|nvidia)(_|$)/i;
const NOT_CUDA_NAME = /(^|_)(no|not|disable|disabled|without|cpu|non)(_|$)|cpu/i;

const semaOfTree = new WeakMap<Tree, Semantics>();
const modelOfSema = new WeakMap<Semantics, ProgramModel>();
const factoryOfSema = new WeakMap<Semantics, () => ProgramModel>();
const projectOfSema = new WeakMap<Semantics, ProjectView>();

/** Called by the program model's constructor: the guards of that file ask this model (the first one stays). */
export function registerModel(model: ProgramModel): void {
  if (!modelOfSema.has(model.sema)) modelOfSema.set(model.sema, model);
  if (!semaOfTree.has(model.sema.tree)) semaOfTree.set(model.sema.tree, model.sema);
}

/**
 * Called by the engine for each analysed file, before any rule runs: the file's index, its project (for call sites
 * in importing modules) and the factory of the file's model (built lazily, shared with the rules).
 */
export function registerSemantics(sema: Semantics, project: ProjectView | null, model?: () => ProgramModel): void {
  semaOfTree.set(sema.tree, sema);
  if (project) projectOfSema.set(sema, project);
  if (model) factoryOfSema.set(sema, model);
}

/** The model that answers for a node's file, or null when the file's index is not known. */
function modelOfNode(node: Node): ProgramModel | null {
  const sema = semaOfTree.get(node.tree) ?? semanticsOf(node.tree);
  if (!sema) return null;
  const f = factoryOfSema.get(sema);
  if (f) return f();
  return modelOfSema.get(sema) ?? new ProgramModel(sema); // the constructor registers it
}

// ---------------------------------------------------------------------------------------------
// The value of a condition on a TPU host

/**
 * Which facts a question may use: `all`; `mps` (MPS-only code: MPS probes and "mps" device types only); `probes`
 * (CUDA/MPS probe calls and device counts, no device-type tests: the precision rules' question, where
 * `autocast(...) if device_type == "cuda" else nullcontext()` is a choice that leaves TPU without autocast).
 */
export type GuardFacts = 'all' | 'mps' | 'probes';

interface Eval {
  model: ProgramModel | null;
  facts: GuardFacts;
  /** Count names the model knows nothing about as CUDA flags when named so. */
  guess: boolean;
  depth: number;
}

/** The value `cond` takes on a TPU host: false/true, or null when not known. */
export function tpuTruth(cond: Node, model: ProgramModel | null = modelOfNode(cond), opts: { guess?: boolean; facts?: GuardFacts } = {}): Truth {
  return truth(cond, { model, guess: opts.guess ?? false, facts: opts.facts ?? 'all', depth: 0 });
}

function calleeOf(e: Eval, call: Node): string {
  return e.model?.sema.callee(call) ?? call.childForFieldName('function')?.text ?? '';
}

function opOf(node: Node): string {
  return node.childForFieldName('operator')?.text ?? node.children.filter((c) => !!c && !c.isNamed).map((c) => c!.text).join(' ');
}

/**
 * Per model and question (facts, guess): memos of `truth` (by node id and depth), of `walk` (by the node a walk starts
 * from: a walk from a node is its parent's step or else the walk from its parent) and of each block's first early
 * exit. Every guard question of a file asks the same conditions and climbs the same ancestors: without them a node
 * of a long flat module scanned every statement before it (quadratic in the module's length).
 */
interface GuardMemo {
  truth: Map<number, Truth>;
  walk: [NodeMemo<boolean>, NodeMemo<boolean>];
  exits: Map<number, BlockExits>;
}

/** How far a block's statements have been checked for an early exit on a TPU host, and where the first one starts. */
interface BlockExits {
  /** namedChildren checked (all of them before `next` exit nowhere). */
  next: number;
  /** startIndex of the first statement that exits on TPU, or -1 (none found yet); `stopped`: a null child ends the scan. */
  first: number;
  stopped: boolean;
}

const guardMemos = new WeakMap<ProgramModel, Map<string, GuardMemo>>();

function guardMemo(e: Eval): GuardMemo | null {
  if (!e.model) return null;
  let byQuestion = guardMemos.get(e.model);
  if (!byQuestion) guardMemos.set(e.model, (byQuestion = new Map()));
  const key = `${e.facts}|${e.guess}`;
  let m = byQuestion.get(key);
  if (!m) byQuestion.set(key, (m = { truth: new Map(), walk: [new NodeMemo(e.model.sema.tree), new NodeMemo(e.model.sema.tree)], exits: new Map() }));
  return m;
}

function truth(node: Node | null | undefined, e: Eval): Truth {
  if (!node || e.depth > 12) return null;
  const m = guardMemo(e);
  const key = node.id * 16 + e.depth;
  const hit = m?.truth.get(key);
  if (hit !== undefined) return hit;
  const r = truthUncached(node, e);
  m?.truth.set(key, r);
  return r;
}

function truthUncached(node: Node, e: Eval): Truth {
  switch (node.type) {
    case 'parenthesized_expression':
      return truth(node.namedChildren[0], e);
    case 'true':
      return true;
    case 'false':
    case 'none':
      return false;
    case 'not_operator': {
      const r = truth(node.childForFieldName('argument'), e);
      return r === null ? null : !r;
    }
    case 'boolean_operator': {
      const a = truth(node.childForFieldName('left'), e);
      const b = truth(node.childForFieldName('right'), e);
      if (opOf(node) === 'and') return a === false || b === false ? false : a === true && b === true ? true : null;
      return a === true || b === true ? true : a === false && b === false ? false : null;
    }
    case 'call': {
      const q = calleeOf(e, node);
      if (e.facts === 'mps' ? MPS_PROBE.test(q) : FALSE_ON_TPU.test(q) || ZERO_ON_TPU.test(q)) return false;
      if (e.facts !== 'all') return null;
      // `str(device).startswith("cuda")`
      const f = node.childForFieldName('function');
      if (f?.type === 'attribute' && f.childForFieldName('attribute')?.text === 'startswith') {
        const s = callArgs(node).positional[0];
        if (s?.type === 'string' && CUDA_TYPE.test(stringContent(s) ?? '')) return false;
      }
      // `isinstance(x, torch.cuda.FloatTensor)`
      if (q === 'isinstance') {
        const t = callArgs(node).positional[1];
        if (t && CUDA_TENSOR_TYPE.test(e.model?.sema.resolve(t) ?? '')) return false;
      }
      return null;
    }
    case 'comparison_operator':
      return comparison(node, e);
    case 'conditional_expression': {
      const [a, c, b] = node.namedChildren;
      const t = truth(c, e);
      if (t !== null) return truth(t ? a : b, e);
      const ta = truth(a, e);
      return ta !== null && ta === truth(b, e) ? ta : null;
    }
    case 'identifier':
    case 'attribute':
      return flag(node, e);
    default:
      return null;
  }
}

/** `get_backend(...)` (torch.distributed's) compared with the string "nccl". */
function ncclBackendTest(call: Node, str: Node, e: Eval): boolean {
  return str.type === 'string' && stringContent(str) === 'nccl' && call.type === 'call' && /^torch\.distributed\.get_backend$/.test(calleeOf(e, call));
}

/** A number the operand is on a TPU host: `torch.cuda.device_count()` is 0. */
function zeroOnTpu(node: Node, e: Eval): boolean {
  if (node.type === 'call') {
    const q = calleeOf(e, node);
    if (ZERO_ON_TPU.test(q)) return true;
    if (q === 'len') return false;
  }
  if (node.type === 'identifier' || node.type === 'attribute') {
    const srcs = sources(node, e);
    if (srcs.length && srcs.every((s) => s.expr?.type === 'call' && ZERO_ON_TPU.test(calleeOf(e, s.expr)))) return true;
    if (!srcs.some((s) => s.value.kind !== 'unknown') && e.guess && cudaNamed(node)) return true;
  }
  return false;
}

function hasProbe(node: Node, e: Eval): boolean {
  if (node.type === 'call' && CUDA_PROBE.test(calleeOf(e, node))) return true;
  return node.namedChildren.some((c) => !!c && hasProbe(c, e));
}

function intOf(n: Node | undefined): number | null {
  if (!n) return null;
  if (n.type === 'integer') return Number(n.text);
  if (n.type === 'unary_operator' && /^-\s*\d+$/.test(n.text)) return Number(n.text.replace(/\s+/g, ''));
  return null;
}

function comparison(node: Node, e: Eval): Truth {
  const parts = node.namedChildren.filter((c): c is Node => !!c);
  const op = opOf(node);
  if (parts.length !== 2) return null;
  const [l, r] = parts;
  const typeStr = (n: Node) => n.type === 'string' && (e.facts === 'mps' ? stringContent(n) === 'mps' : e.facts === 'all' && CUDA_TYPE.test(stringContent(n) ?? ''));
  // `device.type == "cuda"`, `args.device == "mps"`, `"cuda" in str(device)`: no CUDA or MPS device exists on a TPU host
  if (op === '==' && (typeStr(l) || typeStr(r))) return false;
  if (op === '!=' && (typeStr(l) || typeStr(r))) return true;
  if (op === 'in' && (typeStr(l) || CUDA_TENSOR_TYPE.test(e.model?.sema.resolve(l) ?? ''))) return false;
  if (op === 'not in' && typeStr(l)) return true;
  // `dist.get_backend(group) == "nccl"` (fairseq broadcast_tensors: `dist_device = torch.device("cuda")` then): the process
  // group a TPU run initialised is `xla` (or gloo), never NCCL, which needs CUDA GPUs
  if ((op === '==' || op === '!=') && e.facts === 'all' && (ncclBackendTest(l, r, e) || ncclBackendTest(r, l, e))) return op === '!=';
  // `torch.cuda.device_count() > 0`, `n_gpu >= 1`, `torch.cuda.get_device_capability()[0] >= 8`
  const k = intOf(r);
  if (e.facts === 'mps') return null;
  if (k !== null && zeroOnTpu(l, e)) {
    switch (op) {
      case '>': return 0 > k;
      case '>=': return 0 >= k;
      case '==': return k === 0;
      case '!=': return k !== 0;
      case '<': return 0 < k;
      case '<=': return 0 <= k;
    }
  }
  if ((op === '>' || op === '>=') && k !== null && k > 0 && hasProbe(l, e)) return false;
  // `args.gpu is not None` (a GPU index flag the model does not know)
  if (e.guess && r.type === 'none' && (op === 'is not' || op === 'is') && (l.type === 'identifier' || l.type === 'attribute') && cudaNamed(l) && !known(l, e)) {
    return op === 'is';
  }
  return null;
}

/**
 * `device != "cpu"`, `device not in ["cpu"]`, `device.type not in ("cpu",)` where the model knows the device is CUDA or
 * else the CPU (`"cuda" if torch.cuda.is_available() else "cpu"`): False on a TPU host today (no CUDA device, so the CPU),
 * True once the device is migrated to XLA. Not a CUDA-only flag for the guards (`cuda = device.type != "cpu"` keeps
 * running its arm on XLA); the rules that report CUDA-only calls in its arm say both.
 */
export function notCpuTest(cond: Node, model: ProgramModel | null = modelOfNode(cond)): boolean {
  let c = cond;
  while (c.type === 'parenthesized_expression' && c.namedChildren[0]) c = c.namedChildren[0];
  if (c.type !== 'comparison_operator') return false;
  const parts = c.namedChildren.filter((x): x is Node => !!x);
  const op = opOf(c);
  return parts.length === 2 && (op === '!=' || op === 'not in') && cpuLiteral(parts[1]) && cudaOrCpu(parts[0], { model, guess: false, facts: 'all', depth: 0 });
}

/** `"cpu"`, or a list/tuple of only `"cpu"` strings. */
function cpuLiteral(n: Node): boolean {
  if (n.type === 'string') return stringContent(n) === 'cpu';
  if (n.type !== 'list' && n.type !== 'tuple') return false;
  const items = n.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
  return items.length > 0 && items.every((c) => c.type === 'string' && stringContent(c) === 'cpu');
}

/** A device (or its `.type`, or `str(...)` of it) that the model knows is CUDA/MPS on one path and the CPU on the others. */
function cudaOrCpu(n: Node, e: Eval): boolean {
  const m = e.model;
  if (!m) return false;
  let x = n;
  if (x.type === 'attribute' && x.childForFieldName('attribute')?.text === 'type') x = x.childForFieldName('object')!;
  else if (x.type === 'call' && x.childForFieldName('function')?.text === 'str' && callArgs(x).positional.length === 1) x = callArgs(x).positional[0]!;
  const v = m.value(x);
  const names = v.kind === 'string' ? v.values : null;
  if (names) return names.includes('cpu') && names.every((s) => s === 'cpu' || /^(cuda(:\d+)?|mps)$/.test(s));
  if (v.kind !== 'device') return false;
  const kinds = deviceKinds(v);
  return kinds.includes('cpu') && kinds.every((k) => k === 'cpu' || k === 'cuda');
}

function lastName(node: Node): string {
  return node.type === 'attribute' ? node.childForFieldName('attribute')?.text ?? '' : node.text;
}

function cudaNamed(node: Node): boolean {
  const n = lastName(node);
  return CUDA_NAME.test(n) && !NOT_CUDA_NAME.test(n);
}

/**
 * What a name may hold where it is read: the value of each binding that reaches it (or of the one that dominates);
 * for an attribute, each assignment's and argparse default's expression. Parameters count as unknown (the model
 * joins the call sites' arguments, and a join of two flags keeps one).
 */
function sources(node: Node, e: Eval): { value: Value; expr: Node | null }[] {
  const m = e.model;
  if (!m) return [];
  if (node.type === 'identifier') return m.bindingExpressions(node).map((expr) => ({ value: expr ? m.value(expr) : UNKNOWN_VALUE, expr }));
  if (node.type !== 'attribute') return [];
  return m.attributeSources(node).map((s) => ({ value: m.value(s.value), expr: s.value }));
}

function known(node: Node, e: Eval): boolean {
  return sources(node, e).some((s) => s.value.kind !== 'unknown');
}

/** A flag: its value on a TPU host from each source that reaches it; a CUDA-named name the model does not know, when guessing. */
function flag(node: Node, e: Eval): Truth {
  if (node.type === 'attribute') {
    const attr = node.childForFieldName('attribute')?.text ?? '';
    if (attr === (e.facts === 'mps' ? 'is_mps' : 'is_cuda') || attr === 'is_mps') return false;
  }
  const all = sources(node, e);
  const srcs = all.filter((s) => s.value.kind !== 'unknown');
  if (!srcs.length) return e.guess && e.facts === 'all' && cudaNamed(node) ? false : null;
  if (srcs.length < all.length) return null;
  let out: Truth | undefined;
  for (const s of srcs) {
    let t: Truth = null;
    if (s.expr && e.depth < 12) t = truth(s.expr, { ...e, depth: e.depth + 1 });
    if (t === null) return null;
    if (out === undefined) out = t;
    else if (out !== t) return null;
  }
  return out ?? null;
}

// ---------------------------------------------------------------------------------------------
// Guarded nodes

const EXIT_TYPES = new Set(['return_statement', 'continue_statement', 'break_statement']);

function stmts(block: Node | null | undefined): Node[] {
  return (block?.namedChildren ?? []).filter((s): s is Node => !!s && s.type !== 'comment');
}

/**
 * A block that leaves the rest of its block quietly: its last statement returns, continues or breaks. Not a raise,
 * `sys.exit()` or a failed assert: then CUDA is required, the program stops on a TPU host (TPU103 reports the check),
 * and the code after the check is the program's only path, which the migration has to change.
 */
function exits(block: Node | null | undefined): boolean {
  const last = stmts(block).pop();
  return !!last && EXIT_TYPES.has(last.type);
}

/** `if <true on TPU>: return` (or `if <false on TPU>: … else: return`): what follows in the block runs only with CUDA. */
function exitsOnTpu(s: Node, e: Eval): boolean {
  if (s.type !== 'if_statement') return false;
  const alts = s.childrenForFieldName('alternative').filter((a): a is Node => !!a);
  const t = truth(s.childForFieldName('condition'), e);
  if (t === true) return exits(s.childForFieldName('consequence'));
  if (t === false && alts.length === 1 && alts[0].type === 'else_clause') return exits(alts[0].childForFieldName('body'));
  return false;
}

/** The conditions of an if/elif chain before `arm` (an elif_clause or else_clause), the `if`'s own first. */
function earlierConditions(ifs: Node, arm: Node): Node[] {
  const out: Node[] = [];
  const c = ifs.childForFieldName('condition');
  if (c) out.push(c);
  for (const a of ifs.childrenForFieldName('alternative')) {
    if (!a || a.id === arm.id) break;
    const ac = a.type === 'elif_clause' ? a.childForFieldName('condition') : null;
    if (ac) out.push(ac);
  }
  return out;
}

const memo = new WeakMap<ProgramModel, NodeMemo<boolean>>();
const fnMemo = new WeakMap<ProgramModel, Map<number, boolean>>();

/**
 * Whether `node` runs only when CUDA (or MPS) is present (see the file comment). `functions: false` stops at the
 * enclosing function (the call-site check of one level uses it).
 */
export function cudaOnly(node: Node, model: ProgramModel | null = modelOfNode(node), opts: { functions?: boolean; guess?: boolean; facts?: GuardFacts } = {}): boolean {
  const e: Eval = { model, guess: opts.guess ?? true, facts: opts.facts ?? 'all', depth: 0 };
  const functions = opts.functions ?? true;
  let m: NodeMemo<boolean> | undefined;
  if (model && functions && e.guess && e.facts === 'all') {
    m = memo.get(model);
    if (!m) memo.set(model, (m = new NodeMemo(model.sema.tree)));
    const hit = m.get(node);
    if (hit !== undefined) return hit;
  }
  const r = walk(node, e, functions);
  m?.set(node, r);
  return r;
}

function walk(node: Node, e: Eval, functions: boolean): boolean {
  const memo = guardMemo(e)?.walk[functions ? 1 : 0];
  const path: Node[] = [];
  let r = false;
  for (let child: Node = node, p = node.parent; p; child = p, p = p.parent) {
    const hit = memo?.get(child);
    if (hit !== undefined) {
      r = hit;
      break;
    }
    path.push(child);
    const s = step(p, child, e, functions);
    if (s !== undefined) {
      r = s;
      break;
    }
  }
  if (memo) for (const c of path) memo.set(c, r);
  return r;
}

/** What `p` says of its child `child`: true (CUDA-only), false (the walk ends: not CUDA-only), undefined (ask p's parent). */
function step(p: Node, child: Node, e: Eval, functions: boolean): boolean | undefined {
  switch (p.type) {
    case 'function_definition':
      return functions && e.facts === 'all' && !!e.model && calledOnlyUnderGuard(p, e.model);
    case 'class_definition':
    case 'lambda':
      return false;
    case 'if_statement':
      if (child.id === p.childForFieldName('consequence')?.id && truth(p.childForFieldName('condition'), e) === false) return true;
      break;
    case 'elif_clause': {
      if (child.id !== p.childForFieldName('consequence')?.id) break;
      if (truth(p.childForFieldName('condition'), e) === false) return true;
      if (p.parent && earlierConditions(p.parent, p).some((c) => truth(c, e) === true)) return true;
      break;
    }
    case 'else_clause':
      if (p.parent?.type === 'if_statement' && earlierConditions(p.parent, p).some((c) => truth(c, e) === true)) return true;
      break;
    case 'conditional_expression': {
      const [a, cond, b] = p.namedChildren;
      if (cond && a && child.id === a.id && truth(cond, e) === false) return true;
      if (cond && b && child.id === b.id && truth(cond, e) === true) return true;
      break;
    }
    case 'boolean_operator': {
      const l = p.childForFieldName('left');
      if (l && child.id === p.childForFieldName('right')?.id) {
        const t = truth(l, e);
        if (opOf(p) === 'and' ? t === false : t === true) return true;
      }
      break;
    }
    case 'block':
    case 'module':
      if (exitBefore(p, child, e)) return true;
      break;
  }
  return undefined;
}

/**
 * Some statement of `block` before `child` exits on a TPU host (`if not torch.cuda.is_available(): return`). The
 * statements are checked once per block and question, in order, as far as the latest child asked about.
 */
function exitBefore(block: Node, child: Node, e: Eval): boolean {
  const kids = block.namedChildren;
  const memo = guardMemo(e)?.exits;
  let x = memo?.get(block.id);
  if (!x) {
    x = { next: 0, first: -1, stopped: false };
    memo?.set(block.id, x);
  }
  if (x.first >= 0) return x.first < child.startIndex;
  for (; !x.stopped && x.next < kids.length; x.next++) {
    const s = kids[x.next];
    if (!s) {
      x.stopped = true;
      break;
    }
    if (s.id === child.id || s.startIndex >= child.startIndex) return false;
    if (exitsOnTpu(s, e)) {
      x.first = s.startIndex;
      x.next++;
      return true;
    }
  }
  return false;
}

/** Every call site of a function (in this file; with a project, in the modules that import it) is under a CUDA guard. */
function calledOnlyUnderGuard(fn: Node, model: ProgramModel): boolean {
  let m = fnMemo.get(model);
  if (!m) fnMemo.set(model, (m = new Map()));
  const hit = m.get(fn.id);
  if (hit !== undefined) return hit;
  m.set(fn.id, false); // recursion: not guarded
  const r = callSitesGuarded(fn, model);
  m.set(fn.id, r);
  return r;
}

function callSitesGuarded(fn: Node, model: ProgramModel): boolean {
  const name = fn.childForFieldName('name')?.text;
  if (!name || name.startsWith('__')) return false;
  const sema = model.sema;
  const calls: Node[] = [];
  for (const id of sema.identifiersNamed(name)) {
    if (id.parent?.id === fn.id) continue; // the definition's name
    const p = id.parent;
    // `f(...)`, `self.f(...)`
    const fnExpr = p?.type === 'attribute' && p.childForFieldName('attribute')?.id === id.id ? p : id;
    const call = fnExpr.parent;
    if (call?.type !== 'call' || call.childForFieldName('function')?.id !== fnExpr.id) return false; // used as a value: callers unknown
    if (fnExpr.type === 'attribute' && !/^(self|cls)$/.test(fnExpr.childForFieldName('object')?.text ?? '')) return false;
    calls.push(call);
  }
  // a module-level function of a module that others import: their call sites count too
  const project = projectOfSema.get(sema);
  if (project && !sema.enclosingClass(fn) && model.path) {
    const deps = (project as ProjectView & { dependants?: (path: string) => string[] }).dependants?.(model.path) ?? [];
    for (const dep of deps) {
      const entry = project.module(dep);
      if (!entry) continue;
      for (const id of entry.sema.identifiersNamed(name)) {
        const call = id.parent?.type === 'attribute' ? id.parent.parent : id.parent;
        if (call?.type !== 'call') continue;
        const hit = project.resolveCall(call, entry.sema, dep);
        if (hit?.def.id !== fn.id || hit.path !== model.path) continue;
        const other = modelOfSema.get(entry.sema) ?? null;
        if (!walk(call, { model: other, guess: true, facts: 'all', depth: 0 }, false)) return false;
      }
    }
  }
  if (!calls.length) return false;
  return calls.every((c) => walk(c, { model, guess: true, facts: 'all', depth: 0 }, false));
}

/** Whether `node` runs only on an MPS (Apple) host: `elif torch.backends.mps.is_available():`, `if device.type == "mps":`. */
export function mpsOnly(node: Node, model: ProgramModel | null = modelOfNode(node)): boolean {
  return cudaOnly(node, model, { facts: 'mps', guess: false, functions: false });
}

// ---------------------------------------------------------------------------------------------
// Guards that only gate CUDA extras

/** CUDA bookkeeping a TPU run does not need: memory statistics, caches, RNG state, device names, synchronisation, MPS twins. */
const CUDA_EXTRA_CALL = /^torch\.(cuda\.(\w*memory\w*|reset_\w+|empty_cache|mem_get_info|get_device_name|get_device_properties|utilization|synchronize|(get|set)_rng_state(_all)?|manual_seed(_all)?|seed(_all)?|initial_seed|ipc_collect)|mps\.\w+|backends\.[\w.]+)$|^(print|warnings\.warn|logging\.\w+)$|^\w*(log|logger|LOGGER)\.\w+$/;
/** Printing and logging calls. */
const LOG_CALL = /^(print|warnings\.warn|logging\.\w+)$|^\w*(log|logger|LOGGER)\.(info|debug|warning|warn|error|critical|log|print)$/;
/** What makes a guard a decision rather than bookkeeping: placement, process groups, AMP, compilation. */
const DECISION = /(\.(cuda|to)\(|init_process_group|autocast|GradScaler|DataParallel|set_device|torch\.compile)/;

/** Every call under `node` is CUDA bookkeeping, logging or a builtin, and nothing places, launches or casts. */
function bookkeeping(sema: Semantics, node: Node): boolean {
  if (DECISION.test(node.text)) return false;
  const calls = node.type === 'call' ? [node, ...sema.callsWithin(node)] : sema.callsWithin(node);
  const isLog = (c: Node) => LOG_CALL.test(sema.callee(c) ?? c.childForFieldName('function')?.text ?? '');
  // what a log call formats is read for the message only (`logger.info(f"GPU: {get_device_name(idist.get_local_rank())}")`)
  const inLog = (c: Node) => {
    for (let p = c.parent; p && p.id !== node.id; p = p.parent) if (p.type === 'call' && isLog(p)) return true;
    return false;
  };
  return calls.length > 0 && calls.every((c) => {
    const q = sema.callee(c) ?? c.childForFieldName('function')?.text ?? '';
    return CUDA_EXTRA_CALL.test(q) || /^(round|int|float|str|len|max|min|dict|list|getattr|isinstance)$/.test(q) || inLog(c);
  });
}

const CONSTANT = new Set(['none', 'integer', 'float', 'string', 'true', 'false']);

/**
 * A CUDA check that only gates bookkeeping (src/model/guards.ts decides what a TPU host runs):
 * - `torch.cuda.get_rng_state() if torch.cuda.is_available() else None`: the CUDA arm is bookkeeping, the other a constant;
 * - `if torch.cuda.is_available(): <bookkeeping, nested ifs of it>` with no other arm, or an `else` of bookkeeping;
 * - `if not torch.cuda.is_available(): return None` when what the early return skips is bookkeeping (peak memory).
 * The TPU host takes the other path, and nothing it needs is decided there.
 */
export function guardsCudaExtrasOnly(sema: Semantics, owner: Node, model: ProgramModel | null = modelOfNode(owner)): boolean {
  if (owner.type === 'conditional_expression') {
    const [a, cond, b] = owner.namedChildren;
    if (!a || !cond || !b) return false;
    const t = tpuTruth(cond, model);
    if (t === null) return false;
    const cudaArm = t ? b : a;
    const tpuArm = t ? a : b;
    return CONSTANT.has(tpuArm.type) && bookkeeping(sema, cudaArm);
  }
  if (owner.type !== 'if_statement') return false;
  const alts = owner.childrenForFieldName('alternative').filter((x): x is Node => !!x);
  if (alts.some((x) => x.type === 'elif_clause')) return false;
  const t = tpuTruth(owner.childForFieldName('condition')!, model);
  if (t === null) return false;
  const body = owner.childForFieldName('consequence');
  const other = alts[0]?.childForFieldName('body') ?? null;
  if (t === false) return !!body && bookkeeping(sema, body) && (!other || bookkeeping(sema, other));
  // early exit on a TPU host: `return` / `return None`, then bookkeeping to the end of the block
  const exit = stmts(body).pop();
  if (alts.length || stmts(body).length !== 1 || exit?.type !== 'return_statement' || (exit.namedChildren[0] && exit.namedChildren[0].type !== 'none')) return false;
  const block = owner.parent;
  const rest = stmts(block).filter((s) => s.startIndex > owner.startIndex);
  return rest.length > 0 && rest.every((s) => s.type === 'return_statement' || !DECISION.test(s.text)) && rest.some((s) => bookkeeping(sema, s) || sema.callsWithin(s).some((c) => /^torch\.cuda\./.test(sema.callee(c) ?? '') && CUDA_EXTRA_CALL.test(sema.callee(c) ?? '')));
}
