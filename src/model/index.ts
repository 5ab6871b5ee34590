/**
 * The program model (issue 9): an abstract value for each expression of a file, between the parser (and the
 * `Semantics` index) and the rules. Pure engine code: no `vscode`, no file system.
 *
 * Values are followed through assignments, tuple unpacking, augmented assignments, attributes (`self.x`,
 * `args.x`, incl. `args.x = ...`), dict entries with constant keys, function returns and parameters (call
 * sites' arguments flow into parameters; a default counts only when no call site passes a known value),
 * comprehensions and for-loop targets, argparse defaults and module-level globals.
 *
 * Flow-insensitive (the join of every binding of a name in its scope) except for straight-line code: the last
 * binding before a use, in a block enclosing the use, with no later binding of the name inside a loop around
 * the use, is the only one that reaches it (`v = t.cpu(); int(v[0])` reads a host tensor).
 *
 * Each value is memoized per node; recursion is cut at a fixed depth and on cycles (unknown), so one query
 * costs at most the bindings it reaches once.
 */
import { budgetTick } from '../core/budget';
import type { Node } from '../core/parse';
import type { Semantics } from '../core/semantics';
import { callArgs, calleeText, isFString, kwValue, methodName, receiver, stringContent } from '../core/semantics';
import {
  DTYPE_ALIASES, UNKNOWN, bool, deviceKinds, deviceOf, deviceOfString, deviceTensor, hostTensor, isDeviceTensor, isHostValue, join, none, num, seq, str,
  type DeviceKind, type LoaderValue, type TensorValue, type Value,
} from './values';

export * from './values';
import { registerModel } from './guards';

/** A call's target: a function or class definition, in this file's model or another module's. */
export interface CallTarget {
  def: Node /* function_definition or class_definition */;
  model: ProgramModel;
  path: string;
}
/** Resolves a call to its definition (null: not resolvable). The project scope plugs its cross-module resolver in here. */
export type CallResolver = (call: Node, model: ProgramModel) => CallTarget | null;

const MAX_DEPTH = 48;
const IN_PROGRESS: Value = Object.freeze({ kind: 'unknown', origin: null }) as Value;

/** Tensor methods that return a tensor on the receiver's device. */
const TENSOR_METHODS = new Set([
  'sum', 'mean', 'max', 'min', 'amax', 'amin', 'any', 'all', 'norm', 'abs', 'argmax', 'argmin', 'prod', 'std', 'var',
  'isnan', 'isinf', 'isfinite', 'eq', 'ne', 'gt', 'lt', 'ge', 'le', 'logical_and', 'logical_or', 'logical_not',
  'float', 'half', 'bfloat16', 'double', 'long', 'int', 'bool', 'detach', 'clone', 'contiguous', 'squeeze', 'unsqueeze',
  'view', 'reshape', 'flatten', 'sqrt', 'exp', 'log', 'pow', 'clamp', 'softmax', 'log_softmax', 'sigmoid', 'masked_fill',
  'count_nonzero', 'cumsum', 'sign', 'round', 'type_as', 'square', 'neg', 'mul', 'add', 'sub', 'div', 'permute', 'transpose',
  'expand', 'repeat', 'masked_select', 'nonzero', 'unique', 'topk', 'sort', 'gather', 'index_select', 'matmul', 'mm', 'bmm',
  'tanh', 'relu', 'exp_', 'add_', 'mul_', 'div_', 'sub_', 'zero_', 'fill_', 'copy_', 'clamp_', 'detach_', 'requires_grad_',
  'type', 'new_zeros', 'new_ones', 'new_full', 'new_empty', 'new_tensor', 'chunk', 'split', 'unbind', 'kthvalue', 'median',
  'mode', 'aminmax', 't', 'flip', 'roll', 'narrow', 'index_fill', 'scatter', 'scatter_add', 'where', 'lerp', 'baddbmm',
  'expand_as', 'view_as', 'reshape_as', 'logsumexp',
]);
/** Of those, the ones that return several tensors. */
const MULTI_METHODS = new Set(['chunk', 'split', 'unbind', 'topk', 'sort', 'kthvalue', 'median', 'mode', 'aminmax', 'max', 'min']);
/** Methods that read metadata: Python ints. */
const INT_METHODS = new Set(['dim', 'numel', 'element_size', 'data_ptr', 'nelement', 'ndimension', 'get_device', '__len__']);
/** Dtype spellings of `.to(...)`/`.type(...)` strings. */
const DTYPE_METHOD: Record<string, string> = { half: 'float16', float: 'float32', double: 'float64', bfloat16: 'bfloat16', long: 'int64', int: 'int32', bool: 'bool' };
/** torch factory functions: a CPU tensor unless `device=` says otherwise. */
const TORCH_FACTORIES = /^torch\.(tensor|as_tensor|from_numpy|zeros|ones|empty|full|arange|range|linspace|logspace|eye|rand|randn|randint|randperm|empty_strided|tril_indices|triu_indices|Tensor|FloatTensor|LongTensor|IntTensor|BoolTensor|ByteTensor|DoubleTensor|HalfTensor)$/;
/** Factories that copy their first argument (a wrap) rather than build from sizes; the legacy type constructors do either. */
const WRAP_FACTORIES = /^(tensor|as_tensor|from_numpy|Tensor|FloatTensor|LongTensor|IntTensor|BoolTensor|ByteTensor|DoubleTensor|HalfTensor)$/;
/** NumPy's legacy global RNG (`np.random.normal`, `np.random.rand`, …): host random numbers. */
const HOST_RNG = /^numpy\.random\.(rand|randn|randint|random|random_sample|normal|uniform|choice|permutation|binomial|beta|gamma|poisson|exponential|standard_normal|multivariate_normal|laplace|logistic|lognormal|dirichlet)$/;
const TORCH_LIKE = /^torch\.(zeros_like|ones_like|empty_like|full_like|rand_like|randn_like|randint_like)$/;
const NON_TENSOR_TORCH = /^torch\.(cuda|backends|distributed|device|no_grad|inference_mode|enable_grad|autocast|manual_seed|set_|get_|is_|optim|utils|nn\.(?!functional)|compile|save|load|jit|amp|multiprocessing|Generator|dtype|finfo|iinfo|Size|onnx|profiler|hub|numel|use_deterministic|seed|initial_seed|random|testing|fx|export|library|overrides|sparse\.|special\.(?!\w)|version|__version__)/;
const HOST_MODULES = /^(numpy|pandas|math|random|statistics|scipy|sklearn|PIL|cv2)(\.|$)/;
const HOST_NUMBER_CALLS = /^(time\.(time|perf_counter|monotonic|process_time|time_ns|perf_counter_ns)|math\.\w+|os\.cpu_count|multiprocessing\.cpu_count|random\.(random|randint|uniform|gauss|choice|randrange)|torch\.cuda\.(device_count|current_device|memory_allocated|max_memory_allocated|memory_reserved|max_memory_reserved)|torch\.distributed\.(get_rank|get_world_size|get_local_rank)|torch_xla\.core\.xla_model\.(get_ordinal|xrt_world_size|get_local_ordinal|xla_device_hw)|torch_xla\.runtime\.(global_ordinal|world_size|local_ordinal|global_runtime_device_count|local_process_count|process_index|process_count)|torch\.numel)$/;
const RANK_CALLS = /(get_rank|get_local_rank|get_ordinal|get_local_ordinal|global_ordinal|local_ordinal|process_index)$/;
const RANK_NAME = /(^|_)(local_rank|rank|global_rank|node_rank|gpu|local_gpu|device_id|ordinal)$/i;
const XLA_DEVICE_CALLS = /^(torch_xla\.device|torch_xla\.core\.xla_model\.xla_device|torch_xla\.runtime\.xla_device|torch_tpu\.device)$/;
const LOADER_CTORS = /(^|\.)(DataLoader|StatefulDataLoader)$/;
const XLA_LOADERS = /(^|\.)(MpDeviceLoader|ParallelLoader|per_device_loader)$/;
/** Callables named like models and losses: `model(x)`, `criterion(out, y)`, `self.lm_head(h)` (when their binding is not known). */
const MODULE_NAME = /^(model|net|network|module|criterion|loss_fn|lossfn|loss_func|loss_function|ddp_model|raw_model|encoder|decoder|classifier|backbone|generator|discriminator|unet|vae|teacher|student|ema_model|head|lm_head|policy|critic|actor|q_net|value_net)$|model$/i;
const SELF_MODULE_ATTR = /model|net|head|criterion|loss|encoder|decoder|layer|block|proj|embed|mlp|attn|conv|linear|fc|norm|backbone/i;
const MODULE_CALLS = /^(torch\.nn\.(?!functional)[A-Z]\w*|torch\.nn\.parallel\.\w+|torch\.nn\.utils\.(spectral_norm|weight_norm|parametrizations\.\w+)|torchvision\.models\.[\w.]+|timm\.create_model|transformers\.\w+\.from_pretrained|torch\.compile|torch\.jit\.(script|trace)|torch_xla\.compile)$/;
const MOVE_CALL = /\.(to|cuda)\(|to_device\(/;
const OUTPUT_TUPLES = /^(hidden_states|attentions)$/;
const OUTPUT_ATTRS = /^(loss|logits|last_hidden_state|hidden_states|pooler_output|attentions|sample|prev_sample|pred_original_sample|image_embeds|text_embeds)$/;
const META_BOOL = /^(is_cuda|requires_grad|is_leaf|training|is_xla|is_sparse|is_floating_point|is_contiguous)$/;
const HOT_PARAM_EXCLUDED = [
  /(^|_)(loader|dataloader|data_loader|dl|dataset|ds)$|loader$/i,
  /^((global|train|cur|current)_)?(step|steps|epoch|epochs|iteration|iter|it|idx|index|batch_idx|rank)$|^[ijkn]$/i,
  /(^|_)(path|paths|file|filename|fname|dir|directory|folder|name|prefix|suffix|url|tag)$/i,
];

interface Binding {
  readonly name: string;
  /** Start of the binding statement (text order). */
  readonly pos: number;
  /** The statement that binds (a direct child of a block when it dominates what follows). */
  readonly stmt: Node;
  /** Comprehension targets are visible inside their comprehension only. */
  readonly within?: Node;
  readonly aug?: boolean;
  readonly param?: Node;
  value(m: ProgramModel): Value;
}

interface AttrBinding {
  readonly recv: Node;
  readonly cls: Node | null;
  readonly value: Node;
  /** `self.register_buffer("name", value)`: module state that moves with the module (`model.to(device)`). */
  readonly buffer?: boolean;
}

export class ProgramModel {
  private readonly memo = new Map<number, Value>();
  private readonly bindingMemo = new Map<Binding, Value>();
  private readonly returnMemo = new Map<number, Value>();
  private scopes?: Map<number, Map<string, Binding[]>>;
  private attrs?: Map<string, AttrBinding[]>;
  private subscripts?: Map<string, Node[]>;
  private argparse?: Map<string, Node[]>;
  private classes?: Map<string, Node[]>;
  private globalsDeclared?: Map<number, Set<string>>;
  private depth = 0;
  /** Open memo frames (value, binding, return) by key, with their nesting number, and the lowest one the current frame read. */
  private readonly open = new Map<object, Map<unknown, number>>();
  private frames = 0;
  private frameIds = 0;
  private readonly stack: number[] = [];
  private readonly openIds = new Map<number, number>();
  private readonly provisionalOf = new Map<object, Map<unknown, { v: Value; dep: number }>>();
  private lowestRead = Infinity;
  private readonly resolvers: CallResolver[];

  constructor(readonly sema: Semantics, readonly path = '', resolvers: CallResolver[] = []) {
    this.resolvers = [localResolver, ...resolvers];
    registerModel(this);
  }

  /** Plugs in another resolver (the project scope's cross-module resolver), tried after the local one. */
  addResolver(r: CallResolver): void {
    this.resolvers.push(r);
  }

  // -------------------------------------------------------------------------------------------
  // Queries

  /** The abstract value of an expression. */
  value(node: Node | null | undefined): Value {
    if (!node) return UNKNOWN;
    const hit = this.memo.get(node.id);
    if (hit !== undefined) return hit === IN_PROGRESS ? this.cycle(this.memo, node.id) : hit;
    const pv = this.provisional(this.memo, node.id);
    if (pv) return pv;
    // the per-file budget reaches into the model: a query that keeps computing (a pathological program, a model defect)
    // stops the file's analysis with a skip reason instead of running until the heap is gone
    budgetTick();
    if (this.depth > MAX_DEPTH) return UNKNOWN;
    this.depth++;
    try {
      return this.frameOf(this.memo, node.id, () => this.evaluate(node));
    } finally {
      this.depth--;
    }
  }

  /**
   * Cycles (issue 9: the model answers the same whichever rule asks first). A value that reads one of its own callers
   * while that caller is still being computed (`for x, y in loader: x, y = x.to(d), y.to(d)`) sees it as unknown; the
   * result is then provisional, true only for that entry point, and is not memoized unless the frame it read is its
   * own: otherwise the first asker's entry point would decide what every later rule is told.
   */
  private frameOf<K>(memo: Map<K, Value>, key: K, compute: () => Value): Value {
    const frame = ++this.frames;
    const id = ++this.frameIds;
    this.stack[frame] = id;
    this.openIds.set(id, frame);
    const outer = this.lowestRead;
    this.lowestRead = Infinity;
    memo.set(key, IN_PROGRESS);
    let open = this.open.get(memo);
    if (!open) this.open.set(memo, (open = new Map()));
    open.set(key, frame);
    let v: Value = UNKNOWN;
    try {
      v = compute();
    } finally {
      open.delete(key);
      this.openIds.delete(id);
      this.frames--;
      const low = this.lowestRead;
      this.lowestRead = Math.min(outer, low);
      if (low < frame) {
        // provisional: reused only while the frame it read is open (the same entry point), dropped after
        memo.delete(key);
        let p = this.provisionalOf.get(memo);
        if (!p) this.provisionalOf.set(memo, (p = new Map()));
        p.set(key, { v, dep: this.stack[low]! });
      } else memo.set(key, v);
      // a top-level query is done: every provisional result's frame has closed
      if (this.frames === 0 && this.provisionalOf.size) this.provisionalOf.clear();
    }
    return v;
  }

  /** A provisional result of `key` whose open frame is still open (the reader then depends on that frame too). */
  private provisional<K>(memo: Map<K, Value>, key: K): Value | undefined {
    const p = this.provisionalOf.get(memo);
    const hit = p?.get(key);
    if (!hit) return undefined;
    const depth = this.openIds.get(hit.dep);
    if (depth === undefined) {
      p!.delete(key);
      return undefined;
    }
    this.lowestRead = Math.min(this.lowestRead, depth);
    return hit.v;
  }

  /** A read of an entry still being computed: unknown, and the reader's result depends on that frame. */
  private cycle<K>(memo: Map<K, Value>, key: K): Value {
    const frame = this.open.get(memo)?.get(key);
    if (frame !== undefined) this.lowestRead = Math.min(this.lowestRead, frame);
    return UNKNOWN;
  }

  /**
   * The expressions a name may hold where `node` reads it: the right-hand side of each binding that reaches it (only
   * the dominating one in straight-line code); null for a binding with no single expression (a parameter, tuple
   * unpacking, a loop target, `+=`); [] for a name with no known binding (imports, builtins). The CUDA guards read
   * flags through it (`use_cuda = torch.cuda.is_available()`).
   */
  bindingExpressions(node: Node): (Node | null)[] {
    if (node.type !== 'identifier' || this.sema.resolve(node)) return [];
    const bindings = this.visibleBindings(node);
    const only = this.dominating(node, bindings);
    return (only ? [only] : bindings).filter((b) => b.param || !contains(b.stmt, node)).map((b) => {
      if (b.param || b.aug || b.within) return null;
      const a = b.stmt.type === 'expression_statement' ? b.stmt.namedChildren[0] : null;
      if (a?.type !== 'assignment' || a.childForFieldName('left')?.type !== 'identifier') return null;
      let right = a.childForFieldName('right');
      while (right?.type === 'assignment') right = right.childForFieldName('right'); // `a = b = x`
      return right ?? null;
    });
  }

  /** A tensor on the accelerator (or one a loader yields). `strong`: known from value flow, not from a naming convention. */
  isDeviceTensor(node: Node | null | undefined, strong = false): boolean {
    return isDeviceTensor(this.value(node), strong);
  }

  /** Any tensor, host or device. */
  isTensor(node: Node | null | undefined): boolean {
    return this.value(node).kind === 'tensor';
  }

  /** Host data (Python numbers, strings, CPU tensors, NumPy arrays, containers of those). */
  isHost(node: Node | null | undefined): boolean {
    return isHostValue(this.value(node));
  }

  /** The device an expression names (a device, a device string, a rank int given to `.to()`), else null. */
  deviceOf(node: Node | null | undefined): DeviceKind | null {
    return deviceOf(this.value(node));
  }

  /**
   * The expression names a CUDA device on some path (`"cuda"`, `torch.device("cuda", i)`, `"cuda:%d" % r`, a name or
   * attribute bound to one, a helper returning one, `torch.cuda.current_device()`, or a run-time choice with a CUDA arm:
   * `"cuda" if torch.cuda.is_available() else "cpu"`) and an XLA device on none.
   */
  namesCuda(node: Node | null | undefined): boolean {
    if (!node) return false;
    const v = this.value(node);
    const kinds = deviceKinds(v);
    if (kinds.includes('cuda')) return !kinds.includes('xla');
    return v.kind === 'number' && v.rank === true && v.origin?.type === 'call' && this.sema.callee(v.origin) === 'torch.cuda.current_device';
  }

  /** The definition a call reaches, through the local resolver and then any plugged-in one. */
  resolveCall(call: Node): CallTarget | null {
    for (const r of this.resolvers) {
      const t = r(call, this);
      if (t) return t;
    }
    return null;
  }

  /**
   * What a call into another module gives: that module's model answers, and the value is re-anchored on the call (its
   * origin is a node of this file, so a rule reporting at a value's origin stays in this file).
   */
  private foreignResult(node: Node, target: CallTarget): Value {
    if (target.def.type === 'class_definition') return isModuleClass(target.def) ? { kind: 'module', origin: node } : UNKNOWN;
    const v = target.model.helperReturn(target.def, this.helperArguments(node, target.def, (a) => this.value(a))) ?? target.model.returnValue(target.def);
    return v.kind === 'unknown' ? v : ({ ...v, origin: node } as Value);
  }

  /**
   * A small pure helper's return evaluated with this call's arguments (call-site sensitive): `default(val, d)`
   * (`return val if exists(val) else d`) called with a number gives a number here even when another call site passes
   * it a tensor; the context-insensitive `returnValue` joins every call site. Null: not such a helper, or a return it
   * cannot evaluate from the arguments alone (then the caller uses `returnValue`).
   */
  helperReturn(def: Node, args: Map<string, Value> | null, depth = 0): Value | null {
    if (!args || depth > 3 || !isSmallPureHelper(def)) return null;
    const body = def.childForFieldName('body');
    if (!body) return null;
    let v: Value = UNKNOWN;
    let any = false;
    for (const r of this.sema.within('return_statement', body)) {
      const e = r.namedChildren[0];
      const rv = e ? this.valueWith(e, args, depth) : none(r);
      if (!rv) return null;
      v = join(v, rv);
      any = true;
    }
    return any ? v : none(def);
  }

  /** The parameters of plain function `def` bound to what `call` passes (`valueOf` evaluates an argument); null: not matched. */
  helperArguments(call: Node, def: Node, valueOf: (arg: Node) => Value | null): Map<string, Value> | null {
    if (def.type !== 'function_definition' || this.sema.enclosingClass(def) || !isSmallPureHelper(def)) return null;
    const params = def.childForFieldName('parameters')?.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment') ?? [];
    const { positional, keywords } = callArgs(call);
    if (positional.some((x) => x.type === 'list_splat' || x.type === 'dictionary_splat')) return null;
    const out = new Map<string, Value>();
    let i = 0;
    for (const p of params) {
      if (p.type === 'list_splat_pattern' || p.type === 'dictionary_splat_pattern' || p.type === 'keyword_separator' || p.type === 'positional_separator') return null;
      const name = (p.type === 'identifier' ? p : p.childForFieldName('name') ?? p.namedChildren[0])?.text;
      if (!name) return null;
      const arg = kwValue(keywords.get(name)) ?? positional[i++] ?? null;
      const dflt = p.childForFieldName('value');
      const v = arg ? valueOf(arg) : dflt ? this.value(dflt) : null;
      if (!v) return null;
      out.set(name, conventionOnly(v) ? UNKNOWN : v);
    }
    return out;
  }

  /** `e` inside a helper with its parameters bound to `args`; null when `e` reads a parameter in a way not modelled here. */
  private valueWith(e: Node, args: Map<string, Value>, depth: number): Value | null {
    switch (e.type) {
      case 'identifier':
        if (args.has(e.text)) return args.get(e.text)!;
        break;
      case 'parenthesized_expression':
        return e.namedChildren[0] ? this.valueWith(e.namedChildren[0], args, depth) : null;
      case 'conditional_expression': {
        // `val if exists(val) else d`: either arm (the condition only picks one)
        const [a, , b] = e.namedChildren;
        const va = a ? this.valueWith(a, args, depth) : null;
        const vb = b ? this.valueWith(b, args, depth) : null;
        return va && vb ? join(va, vb) : null;
      }
      case 'call': {
        const fn = e.childForFieldName('function');
        // `d()` of a parameter (a default factory): what it returns is not known
        if (fn?.type === 'identifier' && args.has(fn.text)) return UNKNOWN;
        const target = this.readsAny(e, args) ? this.resolveCall(e) : null;
        if (target) {
          const inner = this.helperArguments(e, target.def, (a) => this.valueWith(a, args, depth));
          return target.model.helperReturn(target.def, inner, depth + 1);
        }
        break;
      }
    }
    return this.readsAny(e, args) ? null : this.value(e);
  }

  private readsAny(e: Node, args: Map<string, Value>): boolean {
    if (e.type === 'identifier') return args.has(e.text);
    return e.descendantsOfType('identifier').some((id) => !!id && args.has(id.text) && id.parent?.type !== 'keyword_argument');
  }

  /** The join of a function's return values (None when it returns nothing). */
  returnValue(def: Node): Value {
    const hit = this.returnMemo.get(def.id);
    if (hit !== undefined) return hit === IN_PROGRESS ? this.cycle(this.returnMemo, def.id) : hit;
    const pv = this.provisional(this.returnMemo, def.id);
    if (pv) return pv;
    return this.frameOf(this.returnMemo, def.id, () => {
      let v: Value = UNKNOWN;
      let any = false;
      const body = def.childForFieldName('body');
      if (body && !/\byield\b/.test(body.text)) {
        for (const r of this.sema.within('return_statement', body)) {
          if (this.sema.enclosingFunction(r)?.id !== def.id) continue;
          any = true;
          const e = r.namedChildren[0];
          v = join(v, e ? this.value(e) : none(r));
        }
        if (!any) v = none(def);
      }
      return v;
    });
  }

  /**
   * What one sample of a project Dataset looks like: the value of its `__getitem__`'s return (`return img, target,
   * path`), when the dataset argument is a construction `Ds(...)` of a class the resolver reaches (directly or through
   * the one assignment of a name). Undefined: not such a dataset (a torchvision/HF dataset, a parameter).
   */
  private datasetItem(arg: Node | null): Value | undefined {
    let call = arg;
    if (call?.type === 'identifier') {
      const bs = this.sema.bindings(call.text);
      call = bs.length === 1 ? bs[0] : null;
    }
    if (call?.type !== 'call') return undefined;
    const target = this.resolveCall(call);
    if (target?.def.type !== 'class_definition') return undefined;
    const body = target.def.childForFieldName('body');
    const getitem = body?.namedChildren.find((c) => c?.type === 'function_definition' && c.childForFieldName('name')?.text === '__getitem__');
    return getitem ? target.model.returnValue(getitem) : undefined;
  }

  /** The class definitions of this file named `name`. */
  classesNamed(name: string): readonly Node[] {
    if (!this.classes) {
      this.classes = new Map();
      for (const c of this.sema.nodes('class_definition')) {
        const n = c.childForFieldName('name')?.text;
        if (!n) continue;
        const list = this.classes.get(n);
        if (list) list.push(c);
        else this.classes.set(n, [c]);
      }
    }
    return this.classes.get(name) ?? [];
  }

  // -------------------------------------------------------------------------------------------
  // Evaluation

  private evaluate(node: Node): Value {
    switch (node.type) {
      case 'integer':
        return num(node, { value: Number(node.text.replace(/_/g, '')) });
      case 'float':
        return num(node, { value: Number(node.text.replace(/_/g, '')) });
      case 'true':
      case 'false':
        return bool(node);
      case 'none':
        return none(node);
      case 'string': {
        const c = stringContent(node);
        if (c === null) return str(node, []);
        // an f-string without a replacement field is a literal (`f"cuda"`)
        if (isFString(node)) return str(node, /^cuda:?\{/.test(c) ? ['cuda:{}'] : c.includes('{') ? [] : [c]);
        return str(node, [c]);
      }
      case 'concatenated_string':
        return str(node, []);
      case 'parenthesized_expression':
        return this.value(node.namedChildren[0]);
      case 'identifier':
        return this.identifier(node);
      case 'attribute':
        return this.attribute(node);
      case 'subscript':
        return this.subscript(node);
      case 'call':
        return this.call(node);
      case 'binary_operator':
        return this.binary(node);
      case 'unary_operator': {
        const v = this.value(node.childForFieldName('argument') ?? node.namedChildren[node.namedChildren.length - 1]);
        if (v.kind === 'number' && v.value !== undefined && node.text.startsWith('-')) return { ...v, origin: node, value: -v.value };
        return v;
      }
      case 'not_operator':
        return this.truth(node.childForFieldName('argument'), node);
      case 'boolean_operator': {
        const l = this.value(node.childForFieldName('left'));
        const r = this.value(node.childForFieldName('right'));
        // two bools: a bool of this expression (the guards re-read `a and b` from the origin)
        return isDeviceTensor(l) || isDeviceTensor(r) ? join(l, r) : l.kind === 'bool' && r.kind === 'bool' ? bool(node) : join(l, r);
      }
      case 'comparison_operator': {
        const ops = node.children.filter((c) => c && !c.isNamed).map((c) => c!.type);
        if (ops.some((o) => o === 'is' || o === 'is not' || o === 'in' || o === 'not in' || o === 'not')) return bool(node);
        // `mode == 'image'`: a comparison with a string is Python equality (a str argument), never a tensor test
        if (node.namedChildren.some((c) => c?.type === 'string' || (c?.type === 'identifier' && this.value(c).kind === 'string'))) return bool(node);
        let out: Value = bool(node);
        for (const c of node.namedChildren) {
          const v = this.value(c);
          if (v.kind === 'tensor') out = out.kind === 'tensor' ? join(out, v) : v;
        }
        if (out.kind === 'tensor') out = { ...out, origin: node, dtype: 'bool', batch: undefined };
        return out;
      }
      case 'conditional_expression': {
        const [a, cond, b] = node.namedChildren;
        // `g.item() if isinstance(g, torch.Tensor) else g`: the other arm is `g` when it is not a tensor
        if (cond?.type === 'call' && cond.childForFieldName('function')?.text === 'isinstance' && /Tensor/.test(callArgs(cond).positional[1]?.text ?? '') && b?.text === callArgs(cond).positional[0]?.text) {
          return this.value(a);
        }
        const va = this.value(a);
        const vb = this.value(b);
        // two bools: a bool of this expression (the guards re-read `x if c else y` from the origin)
        return va.kind === 'bool' && vb.kind === 'bool' ? bool(node) : join(va, vb);
      }
      case 'tuple':
      case 'list':
      case 'expression_list': {
        const items = node.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
        if (items.some((c) => c.type === 'list_splat')) {
          const vals = items.map((c) => (c.type === 'list_splat' ? elementOf(this.value(c.namedChildren[0]), c) : this.value(c)));
          return seq(node, vals.reduce<Value>((a, b) => join(a, b), UNKNOWN));
        }
        const vals = items.map((c) => this.value(c));
        return seq(node, vals.reduce<Value>((a, b) => join(a, b), UNKNOWN), vals);
      }
      case 'set':
        return seq(node, node.namedChildren.reduce<Value>((a, c) => join(a, this.value(c)), UNKNOWN));
      case 'list_comprehension':
      case 'set_comprehension':
      case 'generator_expression':
        return seq(node, this.value(node.childForFieldName('body')));
      case 'dictionary': {
        const entries = new Map<string, Value>();
        for (const p of node.namedChildren) {
          if (p?.type !== 'pair') continue;
          const k = p.childForFieldName('key');
          const key = k?.type === 'string' ? stringContent(k) : null;
          if (key !== null) entries.set(key, this.value(p.childForFieldName('value')));
        }
        return { kind: 'dict', origin: node, entries };
      }
      case 'dictionary_comprehension':
        return { kind: 'dict', origin: node, entries: new Map() };
      case 'assignment':
        return this.value(node.childForFieldName('right'));
      case 'named_expression':
        return this.value(node.childForFieldName('value'));
      case 'await':
        return this.value(node.namedChildren[0]);
      default:
        return UNKNOWN;
    }
  }

  /** `not x`: a Python bool (reading a device tensor's truth value is the rules' business). */
  private truth(arg: Node | null, node: Node): Value {
    const v = this.value(arg);
    return v.kind === 'tensor' ? { ...v, origin: node, dtype: 'bool' } : bool(node);
  }

  private binary(node: Node): Value {
    const left = node.childForFieldName('left');
    const right = node.childForFieldName('right');
    const op = node.childForFieldName('operator')?.type ?? node.children.find((c) => c && !c.isNamed)?.type ?? '';
    const l = this.value(left);
    // "cuda:%d" % rank names a CUDA device
    if (l.kind === 'string' && op === '%' && left?.type === 'string' && /^cuda:(%d|%s)$/.test(stringContent(left) ?? '')) return str(node, ['cuda:%d']);
    if (l.kind === 'string') return str(node, []); // "%f" % t, "a" + b, "-" * 80
    const r = this.value(right);
    if (r.kind === 'string' && op === '+') return str(node, []);
    return arith(node, l, r);
  }

  // ----- names

  private identifier(node: Node): Value {
    if (this.sema.resolve(node)) return this.qualified(node, this.sema.resolve(node)!);
    const bindings = this.visibleBindings(node);
    if (!bindings.length) {
      const cls = this.classesNamed(node.text);
      if (cls.length) return UNKNOWN;
      return UNKNOWN;
    }
    const only = this.dominating(node, bindings) ?? this.parameterReaching(node, bindings);
    if (only) return this.bindingValue(only);
    let v: Value = UNKNOWN;
    for (const b of bindings) v = join(v, this.bindingValue(b));
    if (v.kind === 'unknown' && MODULE_NAME.test(node.text) && !RANK_NAME.test(node.text)) return { kind: 'module', origin: node };
    return v;
  }

  /** The value of a name when no binding is known: model-like names are modules. */
  private bindingValue(b: Binding): Value {
    const hit = this.bindingMemo.get(b);
    if (hit !== undefined) return hit === IN_PROGRESS ? this.cycle(this.bindingMemo, b) : hit;
    const pv = this.provisional(this.bindingMemo, b);
    if (pv) return pv;
    this.depth++;
    try {
      return this.frameOf(this.bindingMemo, b, () => (this.depth > MAX_DEPTH ? UNKNOWN : b.value(this)));
    } finally {
      this.depth--;
    }
  }

  /** The bindings of an identifier's name visible at the identifier (its function, enclosing functions, the module). */
  private visibleBindings(node: Node): Binding[] {
    const scopes = this.scopeIndex();
    const name = node.text;
    for (let fn = this.sema.enclosingFunction(node); ; fn = fn ? this.sema.enclosingFunction(fn) : null) {
      const key = fn?.id ?? 0;
      if (fn && this.declaredGlobal(fn).has(name)) continue;
      const list = scopes.get(key)?.get(name);
      if (list?.length) {
        const inner = list.filter((b) => b.within && contains(b.within, node));
        if (inner.length) return inner;
        const plain = list.filter((b) => !b.within);
        if (plain.length) return plain;
      }
      if (!fn) return [];
    }
  }

  /**
   * The parameter, when it is the only binding before `use` in its function and no loop around `use` rebinds the name:
   * `def mel(y): if torch.min(y) < -1: ...` then `y = F.pad(y, ...)` later reads the caller's `y` at the test.
   */
  private parameterReaching(use: Node, bindings: Binding[]): Binding | null {
    const param = bindings.find((b) => b.param);
    if (!param || this.sema.enclosingFunction(use)?.id !== param.stmt.id) return null;
    if (bindings.some((b) => b !== param && (b.pos < use.startIndex || contains(b.stmt, use)))) return null;
    // `batch = move_to_device(batch, device)` below the use: what the caller passes is the loader's host batch, which
    // the join with the moved value describes (OLMo's train_step writes `batch["index"]` before the move)
    if (bindings.some((b) => b !== param && MOVE_CALL.test(b.stmt.text) && new RegExp(`\\b${use.text}\\b`).test(b.stmt.text.slice(b.stmt.text.indexOf('=') + 1)))) return null;
    for (let p = use.parent; p && p.id !== param.stmt.id; p = p.parent) {
      if ((p.type === 'for_statement' || p.type === 'while_statement') && bindings.some((b) => b !== param && contains(p!, b.stmt))) return null;
    }
    return param;
  }

  /** The one binding that reaches `use` in straight-line code (see the file comment), else null. */
  private dominating(use: Node, bindings: Binding[]): Binding | null {
    let last: Binding | null = null;
    for (const b of bindings) {
      if (b.pos < use.startIndex && !contains(b.stmt, use) && (!last || b.pos > last.pos)) last = b;
    }
    if (!last || last.param) return last?.param ? null : null;
    // a `with` body always runs: `with torch.no_grad(): preds = validate(...)` binds for the statements after the `with`
    let holder: Node = last.stmt;
    while (holder.parent?.type === 'block' && holder.parent.parent?.type === 'with_statement' && !contains(holder.parent, use)) holder = holder.parent.parent;
    const block = holder.parent;
    if (!block || !contains(block, use)) return null;
    if (this.sema.enclosingFunction(last.stmt)?.id !== this.sema.enclosingFunction(use)?.id) return null;
    // a later binding inside a loop around the use reaches it through the back edge
    for (let p = use.parent; p && p.id !== block.id; p = p.parent) {
      if (p.type !== 'for_statement' && p.type !== 'while_statement') continue;
      if (bindings.some((b) => b !== last && b.pos > use.startIndex && contains(p!, b.stmt))) return null;
    }
    if (last.aug) return null;
    return last;
  }

  private declaredGlobal(fn: Node): Set<string> {
    if (!this.globalsDeclared) {
      this.globalsDeclared = new Map();
      for (const g of this.sema.nodes('global_statement')) {
        const f = this.sema.enclosingFunction(g);
        if (!f) continue;
        let set = this.globalsDeclared.get(f.id);
        if (!set) this.globalsDeclared.set(f.id, (set = new Set()));
        for (const id of g.namedChildren) if (id?.type === 'identifier') set.add(id.text);
      }
    }
    return this.globalsDeclared.get(fn.id) ?? EMPTY_SET;
  }

  // ----- the binding index (one pass per node type)

  private scopeIndex(): Map<number, Map<string, Binding[]>> {
    if (this.scopes) return this.scopes;
    const scopes = new Map<number, Map<string, Binding[]>>();
    const add = (scopeNode: Node | null, b: Binding) => {
      const key = scopeNode?.id ?? 0;
      let s = scopes.get(key);
      if (!s) scopes.set(key, (s = new Map()));
      const list = s.get(b.name);
      if (list) list.push(b);
      else s.set(b.name, [b]);
    };
    const sema = this.sema;
    const scopeOf = (n: Node): Node | null => {
      const fn = sema.enclosingFunction(n);
      const cls = sema.enclosingClass(n);
      // a class body's names are the class's (reached through `self.x` / `Cls.x`), not the module's
      if (cls && (!fn || contains(fn, cls))) return cls;
      return fn;
    };
    const bindTarget = (target: Node | null, stmt: Node, scope: Node | null, val: (m: ProgramModel) => Value, within?: Node) => {
      if (!target) return;
      if (target.type === 'identifier') {
        add(scope, { name: target.text, pos: stmt.startIndex, stmt, within, value: val });
      } else if (/^(pattern_list|tuple_pattern|list_pattern|expression_list|tuple|list)$/.test(target.type)) {
        const parts = target.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
        parts.forEach((p, i) => {
          if (p.type === 'list_splat_pattern' || p.type === 'list_splat') {
            const id = p.namedChildren[0];
            bindTarget(id, stmt, scope, (m) => seq(p, elementOf(val(m), p)), within);
          } else bindTarget(p, stmt, scope, (m) => itemOf(val(m), i, p), within);
        });
      } else if (target.type === 'parenthesized_expression') bindTarget(target.namedChildren[0], stmt, scope, val, within);
    };
    for (const a of sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      // `a = b = x` nests: the inner assignment binds b, this one a (both to x)
      if (!left || !right) continue;
      const stmt = a.parent?.type === 'expression_statement' ? a.parent : a;
      const outer = outerStatement(stmt);
      bindTarget(left, outer, scopeOf(a), (m) => m.value(right));
    }
    for (const a of sema.nodes('augmented_assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (left?.type !== 'identifier' || !right) continue;
      const scope = scopeOf(a);
      const stmt = outerStatement(a.parent?.type === 'expression_statement' ? a.parent : a);
      add(scope, {
        name: left.text, pos: stmt.startIndex, stmt, aug: true,
        value: (m) => {
          const init = (m.scopeIndex().get(scope?.id ?? 0)?.get(left.text) ?? []).filter((b) => !b.aug && !b.within);
          let v: Value = UNKNOWN;
          for (const b of init) v = join(v, m.bindingValue(b));
          return arith(a, v, m.value(right));
        },
      });
    }
    for (const loop of sema.nodes('for_statement')) {
      const right = loop.childForFieldName('right');
      bindTarget(loop.childForFieldName('left'), loop, scopeOf(loop), (m) => m.iterationValue(right, loop));
    }
    for (const clause of sema.nodes('for_in_clause')) {
      const comp = clause.parent;
      const right = clause.childForFieldName('right');
      bindTarget(clause.childForFieldName('left'), clause, comp ? scopeOf(comp) : null, (m) => m.iterationValue(right, null), comp ?? undefined);
    }
    for (const w of sema.nodes('with_statement')) {
      for (const item of (w.namedChildren.find((c) => c?.type === 'with_clause') ?? w).descendantsOfType('as_pattern').filter((x): x is Node => !!x && sema.enclosingFunction(x)?.id === sema.enclosingFunction(w)?.id)) {
        const target = item.childForFieldName('alias')?.namedChildren[0] ?? item.namedChildren[item.namedChildren.length - 1];
        // `with open(path) as f`: a text file, which iterates as its lines (strings); other context managers: unknown
        const ctx = item.namedChildren[0];
        const opensFile = ctx?.type === 'call' && /^(open|io\.open|codecs\.open)$/.test(ctx.childForFieldName('function')?.text ?? '');
        if (target) bindTarget(target, w, scopeOf(w), opensFile ? (m) => m.value(ctx) : () => UNKNOWN);
      }
    }
    for (const fn of sema.nodes('function_definition')) {
      const params = fn.childForFieldName('parameters')?.namedChildren ?? [];
      params.forEach((p, index) => {
        if (!p) return;
        const nameNode = p.type === 'identifier' ? p : p.childForFieldName('name') ?? (p.type === 'typed_parameter' ? p.namedChildren[0] : null);
        if (nameNode?.type !== 'identifier') return;
        add(fn, { name: nameNode.text, pos: fn.startIndex, stmt: fn, param: p, value: (m) => m.parameterValue(fn, p, nameNode.text, index) });
      });
    }
    for (const imp of [...sema.nodes('import_statement'), ...sema.nodes('import_from_statement')]) {
      // a local import shadows nothing we model; names bound by imports resolve through Semantics.aliases
      void imp;
    }
    for (const fn of sema.nodes('function_definition')) {
      const name = fn.childForFieldName('name');
      const holder = fn.parent?.type === 'decorated_definition' ? fn.parent : fn;
      if (name) add(scopeOf(holder), { name: name.text, pos: holder.startIndex, stmt: holder, value: () => UNKNOWN });
    }
    // kept for the whole analysis: exact-length copies of the lists that grew (a pushed list holds at least 17 slots)
    for (const s of scopes.values()) for (const [name, list] of s) if (list.length > 1) s.set(name, list.slice());
    return (this.scopes = scopes);
  }

  /** A parameter: the join of what the same-file (and resolved) call sites pass; the default only when none is known. */
  private parameterValue(fn: Node, p: Node, name: string, index: number): Value {
    if (p.type === 'list_splat_pattern' || p.type === 'dictionary_splat_pattern') return UNKNOWN;
    const params = fn.childForFieldName('parameters')?.namedChildren.filter((x): x is Node => !!x) ?? [];
    const first = params[0];
    const firstName = first?.type === 'identifier' ? first.text : null;
    const method = !!this.sema.enclosingClass(fn) && (firstName === 'self' || firstName === 'cls');
    if (method && index === 0) return UNKNOWN;
    let v: Value = UNKNOWN;
    for (const arg of this.argumentsFor(fn, p).args) v = join(v, this.value(arg));
    if (v.kind !== 'unknown') return v;
    const def = p.childForFieldName('value');
    // `mask=None` says nothing about what the callers pass: only a real default is a value
    if (def && def.type !== 'none') return this.value(def);
    // the inputs of forward(): tensors on the model's device
    const fname = fn.childForFieldName('name')?.text;
    const cls = this.sema.enclosingClass(fn);
    const annotation = p.childForFieldName('type')?.text;
    if (annotation && /Tensor/.test(annotation)) return deviceTensor(p, 'unknown', { weak: fname !== 'forward', batch: !/^(torch\.)?Tensor$/.test(annotation) || undefined });
    if (annotation && !/Tensor|Any|^torch\./.test(annotation)) return UNKNOWN;
    // `def forward(self, *args, unet_number=None, **kwargs)`: a keyword-only option after `*args` is a setting, not an input
    const keywordOnly = !!def && params.slice(0, index).some((x) => x.type === 'list_splat_pattern' || x.type === 'keyword_separator');
    if (fname === 'forward' && cls && !keywordOnly) {
      // `self.attention = LSA(...)` … `self.attention(enc, query, t)` with `t` a Python int (a decoder step from
      // `range(...)`): what the module's same-file calls pass, when every one of them passes a host scalar
      let passed: Value = UNKNOWN;
      // a `torch.autograd.Function`'s static `forward(ctx, ...)`: its calls are `Cls.apply(...)` (ctx not passed)
      const args = firstName === 'ctx' && !method ? this.applyCallArguments(cls, index - 1, name) : this.moduleCallArguments(cls, index - (method ? 1 : 0), name);
      for (const a of args) passed = join(passed, this.value(a));
      if (args.length && passed.kind !== 'tensor' && passed.kind !== 'unknown' && isHostValue(passed)) return passed;
      return deviceTensor(p, 'unknown', { batch: true });
    }
    // a parameter of a hot function that nothing else explains (`def train_step(x, y)` called from the loop)
    if (!HOT_PARAM_EXCLUDED.some((re) => re.test(name))) {
      const hot = this.sema.hot(p);
      // a helper hot through another module's calls: its callers' arguments say what it gets (TPU201 asks them)
      if (hot && hot.anchor.id === fn.id && !hot.via) return deviceTensor(p, 'unknown', { weak: true });
    }
    return def ? none(def) : UNKNOWN;
  }

  /**
   * The argument expressions same-file call sites pass to parameter `p` of `fn` (positionally or by keyword), and
   * whether the default is dead: `fn` is a plain function (or the `__init__` of a class, whose calls are its
   * constructions) whose name is used only by its calls, each of which passes the parameter.
   */
  argumentsFor(fn: Node, p: Node): { args: Node[]; allPass: boolean } {
    const memo = this.argsMemo.get(p.id);
    if (memo) return memo;
    const params = fn.childForFieldName('parameters')?.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment') ?? [];
    const index = params.findIndex((x) => x.id === p.id);
    const nameNode = p.type === 'identifier' ? p : p.childForFieldName('name') ?? p.namedChildren[0];
    const name = nameNode?.text ?? '';
    const first = params[0];
    const firstName = first?.type === 'identifier' ? first.text : null;
    const method = !!this.sema.enclosingClass(fn) && (firstName === 'self' || firstName === 'cls');
    const args: Node[] = [];
    let passing = 0;
    // `__init__` of a class with one same-file definition: its call sites are the constructions `Cls(...)` (self is not
    // passed); every other use of the class name (a subclass, `super().__init__` through it, a factory table) keeps the
    // default alive
    const cls = method && fn.childForFieldName('name')?.text === '__init__' && fn.parent?.parent?.type === 'class_definition' ? fn.parent.parent : null;
    const clsName = cls?.childForFieldName('name')?.text ?? '';
    const ctor = !!cls && this.classesNamed(clsName).length === 1;
    const calls = ctor
      ? this.sema.identifiersNamed(clsName).filter((id) => id.parent?.type === 'call' && id.parent.childForFieldName('function')?.id === id.id).map((id) => id.parent!)
      : this.sema.callSitesOf(fn);
    for (const call of calls) {
      if (contains(fn, call) && this.sema.enclosingFunction(call)?.id === fn.id) continue; // recursion
      const { positional, keywords } = callArgs(call);
      const fnNode = call.childForFieldName('function');
      const shift = ctor || (method && fnNode?.type === 'attribute') ? 1 : 0;
      let arg: Node | null = kwValue(keywords.get(name));
      if (!arg && index >= 0) {
        const pos = positional[index - shift];
        if (pos && pos.type !== 'list_splat' && pos.type !== 'dictionary_splat' && !positional.slice(0, index - shift).some((x) => x.type === 'list_splat')) arg = pos;
      }
      if (arg) {
        args.push(arg);
        passing++;
      }
    }
    const sema = this.sema;
    let dead: boolean | undefined;
    const out = {
      args,
      // the def's own name plus one use per call: no callback, no export through another name (computed on demand:
      // finding a name's uses scans the text)
      get allPass(): boolean {
        if (dead === undefined) {
          const fname = ctor ? clsName : fn.childForFieldName('name')?.text ?? '';
          let uses = fname ? sema.identifiersNamed(fname).length : 0;
          // `Cls.helper(...)` (a static helper called through the class) builds no instance, unless a classmethod
          // constructs one as `cls(...)`
          if (ctor && cls && !sema.within('call', cls).some((c) => /^(cls|type\(self\))$/.test(c.childForFieldName('function')?.text ?? ''))) {
            uses -= sema.identifiersNamed(fname).filter((id) => {
              const p = id.parent;
              return p?.type === 'attribute' && p.childForFieldName('object')?.id === id.id && p.childForFieldName('attribute')?.text !== '__init__';
            }).length;
          }
          dead = (!method || ctor) && calls.length > 0 && passing === calls.length && !!fname && uses === calls.length + 1;
        }
        return dead;
      },
    };
    this.argsMemo.set(p.id, out);
    return out;
  }

  private readonly argsMemo = new Map<number, { args: Node[]; allPass: boolean }>();

  /**
   * The arguments same-file calls of an instance of module class `cls` pass to its `forward` at `index` (self not
   * counted) or by keyword `name`: instances bound to an attribute (`self.attn = Attn(...)`, called `self.attn(...)`).
   * Empty when any such call passes nothing there or splats its arguments.
   */
  moduleCallArguments(cls: Node, index: number, name: string): Node[] {
    const clsName = cls.childForFieldName('name')?.text;
    if (!clsName || index < 0) return [];
    let byAttr = this.moduleCallsMemo.get(cls.id);
    if (!byAttr) {
      const attrs = new Set<string>();
      for (const [attr, list] of this.attrIndex()) {
        if (list.some((b) => b.recv.text === 'self' && b.value.type === 'call' && b.value.childForFieldName('function')?.text === clsName)) attrs.add(attr);
      }
      byAttr = attrs.size ? this.sema.nodes('call').filter((c) => {
        const fn = c.childForFieldName('function');
        return fn?.type === 'attribute' && fn.childForFieldName('object')?.text === 'self' && attrs.has(fn.childForFieldName('attribute')?.text ?? '');
      }) : [];
      this.moduleCallsMemo.set(cls.id, byAttr);
    }
    return argumentsAt(byAttr, index, name);
  }

  private readonly moduleCallsMemo = new Map<number, Node[]>();

  /** The arguments same-file `Cls.apply(...)` calls pass at `index` (ctx not counted); empty when one passes nothing there. */
  applyCallArguments(cls: Node, index: number, name: string): Node[] {
    const clsName = cls.childForFieldName('name')?.text;
    if (!clsName || index < 0) return [];
    const calls: Node[] = [];
    for (const id of this.sema.identifiersNamed(clsName)) {
      const attr = id.parent;
      const call = attr?.type === 'attribute' && attr.childForFieldName('object')?.id === id.id && attr.childForFieldName('attribute')?.text === 'apply' ? attr.parent : null;
      if (call?.type === 'call' && call.childForFieldName('function')?.id === attr!.id) calls.push(call);
    }
    return argumentsAt(calls, index, name);
  }

  /** What one iteration of `for t in right` binds to `t`. */
  iterationValue(right: Node | null, loop: Node | null): Value {
    if (!right) return UNKNOWN;
    if (right.type === 'call') {
      const callee = this.sema.callee(right) ?? calleeText(right);
      const args = callArgs(right).positional;
      if (/^enumerate$/.test(callee)) return seq(right, UNKNOWN, [num(right), this.iterationValue(args[0] ?? null, loop)]);
      if (/^zip$/.test(callee)) return seq(right, UNKNOWN, args.map((a) => this.iterationValue(a, loop)));
      if (/^(range|itertools\.count|count)$/.test(callee)) return num(right);
      if (/(^|\.)(tqdm|tqdm_notebook|trange|iter|list|sorted|reversed|tuple|islice|itertools\.islice|cycle|itertools\.cycle)$/.test(callee) && args[0]) {
        if (/trange$/.test(callee)) return num(right);
        return this.iterationValue(args[0], loop);
      }
      const meth = methodName(right);
      if (meth === 'items') {
        const d = this.value(receiver(right));
        const vals = d.kind === 'dict' ? [...d.entries.values()].reduce<Value>((a, b) => join(a, b), UNKNOWN) : UNKNOWN;
        return seq(right, UNKNOWN, [str(right, []), vals]);
      }
      if (meth === 'keys') return str(right, []);
    }
    const v = this.value(right);
    if (v.kind === 'loader') return loaderBatch(v, right);
    if (v.kind === 'unknown' && loop && this.sema.iteratesLoader(loop)) return deviceTensor(right, 'unknown', { batch: true });
    return elementOf(v, right);
  }

  // ----- attributes

  private attribute(node: Node): Value {
    const q = this.sema.resolve(node);
    if (q) return this.qualified(node, q);
    const obj = node.childForFieldName('object');
    const attr = node.childForFieldName('attribute')?.text ?? '';
    if (!obj) return UNKNOWN;
    switch (attr) {
      case 'shape':
        return seq(node, num(node), undefined, true);
      case 'ndim':
        return num(node);
      case 'dtype': {
        const o = this.value(obj);
        if (o.kind === 'tensor' || o.kind === 'module') return { kind: 'dtype', origin: node, name: o.kind === 'tensor' ? o.dtype ?? null : null };
        const b = this.attributeBindings(node, obj, attr);
        return b.kind !== 'unknown' ? b : { kind: 'dtype', origin: node, name: null };
      }
      case 'device': {
        const o = this.value(obj);
        if (o.kind === 'tensor') return { kind: 'device', origin: node, device: o.device === 'cpu' ? 'cpu' : o.device };
        break;
      }
      case 'T':
      case 'mT':
      case 'H':
      case 'data':
      case 'real':
      case 'imag': {
        const o = this.value(obj);
        if (o.kind === 'tensor') return { ...o, origin: node, batch: undefined } as Value;
        break;
      }
      case 'grad': {
        const o = this.value(obj);
        // only tensors have a `.grad`: known by the attribute, even when the owner is a tensor by convention only
        return o.kind === 'tensor' ? { ...o, origin: node, weak: undefined, batch: undefined } : deviceTensor(node);
      }
    }
    if (META_BOOL.test(attr)) return bool(node);
    if (OUTPUT_ATTRS.test(attr)) {
      const o = this.value(obj);
      if (o.kind === 'tensor' || obj.type === 'call' || (o.kind === 'unknown' && attr !== 'sample')) {
        const t = o.kind === 'tensor' && o.where === 'host' ? o : deviceTensor(node, o.kind === 'tensor' ? o.device : 'unknown', { weak: o.kind !== 'tensor' && obj.type !== 'call' && !/^(loss|logits)$/.test(attr) });
        // a model output's `hidden_states`/`attentions` is a tuple with one tensor per layer (transformers ModelOutput):
        // iterating it walks the tuple, indexing it gives a layer's tensor
        return OUTPUT_TUPLES.test(attr) ? seq(node, { ...t, origin: node } as Value) : t;
      }
    }
    const bound = this.attributeBindings(node, obj, attr);
    if (bound.kind !== 'unknown') return bound;
    if (obj.type === 'identifier' && obj.text === 'self' && SELF_MODULE_ATTR.test(attr)) return { kind: 'module', origin: node };
    return UNKNOWN;
  }

  /** `self.x` (assignments in the class, class-body fields), `args.x` (assignments to `args.x`, argparse defaults), `Cfg.x`. */
  private attributeBindings(node: Node, obj: Node, attr: string): Value {
    const all = this.attrIndex().get(attr) ?? [];
    let v: Value = UNKNOWN;
    if (obj.type === 'identifier' && (obj.text === 'self' || obj.text === 'cls')) {
      const cls = this.sema.enclosingClass(node);
      // a registered buffer lives where its module does: on the accelerator once the model is moved (MoCo's queue_ptr)
      for (const b of all) if (b.recv.text === obj.text && b.cls?.id === cls?.id) v = join(v, b.buffer ? bufferValue(this.value(b.value), b.value) : this.value(b.value));
      if (cls && v.kind === 'unknown') v = this.classField(cls, attr);
      return v;
    }
    for (const b of all) if (b.recv.text === obj.text) v = join(v, this.value(b.value));
    const o = obj.type === 'identifier' || obj.type === 'attribute' ? this.value(obj) : UNKNOWN;
    if (o.kind === 'args' || (o.kind === 'unknown' && /^(args|opt|opts|options|cfg|config|hparams|params|flags|FLAGS|hp|conf|a)$/.test(obj.text))) {
      for (const d of this.argparseDefaults(attr)) v = join(v, d.type === 'argparse-flag' ? bool(d) : this.value(d));
    }
    if (v.kind === 'unknown' && obj.type === 'identifier') {
      // `Config.device` / `cfg = Config(); cfg.device`: a class-level field
      const classes = this.classesNamed(obj.text);
      const target = classes.length ? classes : this.instanceClasses(obj);
      for (const c of target) v = join(v, this.classField(c, attr));
    }
    return v;
  }

  /**
   * The expressions an attribute read can take its value from, as the model joins them: `args.x = v` assignments
   * (same receiver), `self.x = v` in the class, and argparse defaults of dest `x` (each with `argparse: true`).
   */
  attributeSources(node: Node): { value: Node; argparse: boolean }[] {
    if (node.type !== 'attribute') return [];
    const obj = node.childForFieldName('object');
    const attr = node.childForFieldName('attribute')?.text ?? '';
    if (!obj) return [];
    const all = this.attrIndex().get(attr) ?? [];
    if (obj.type === 'identifier' && (obj.text === 'self' || obj.text === 'cls')) {
      const cls = this.sema.enclosingClass(node);
      return all.filter((b) => b.recv.text === obj.text && b.cls?.id === cls?.id).map((b) => ({ value: b.value, argparse: false }));
    }
    const out = all.filter((b) => b.recv.text === obj.text).map((b) => ({ value: b.value, argparse: false }));
    const o = this.value(obj);
    if (o.kind === 'args' || (o.kind === 'unknown' && /^(args|opt|opts|options|cfg|config|hparams|params|flags|FLAGS|hp|conf|a)$/.test(obj.text))) {
      for (const d of this.argparseDefaults(attr)) if (d.type !== 'argparse-flag') out.push({ value: d, argparse: true });
    }
    return out;
  }

  /** Classes whose instance a name is bound to (`cfg = Config()`). */
  private instanceClasses(name: Node): Node[] {
    const out: Node[] = [];
    for (const b of this.visibleBindings(name)) {
      const right = b.stmt.type === 'expression_statement' ? b.stmt.namedChildren[0]?.childForFieldName('right') : null;
      const fn = right?.type === 'call' ? right.childForFieldName('function') : null;
      if (fn?.type === 'identifier') out.push(...this.classesNamed(fn.text));
    }
    return out;
  }

  /** A class-body binding `device = "cuda"` / `device: str = "cuda"` (dataclasses, config classes). */
  private classField(cls: Node, attr: string): Value {
    const list = this.scopeIndex().get(cls.id)?.get(attr) ?? [];
    let v: Value = UNKNOWN;
    for (const b of list) v = join(v, this.bindingValue(b));
    return v;
  }

  private attrIndex(): Map<string, AttrBinding[]> {
    if (this.attrs) return this.attrs;
    const out = new Map<string, AttrBinding[]>();
    const push = (attr: string, b: AttrBinding) => {
      const list = out.get(attr);
      if (list) list.push(b);
      else out.set(attr, [b]);
    };
    const add = (left: Node, value: Node) => {
      const attr = left.childForFieldName('attribute')?.text;
      const recv = left.childForFieldName('object');
      if (attr && recv) push(attr, { recv, cls: this.sema.enclosingClass(left), value });
    };
    for (const call of this.sema.callsNamed('register_buffer')) {
      const fn = call.childForFieldName('function');
      const recv = fn?.type === 'attribute' ? fn.childForFieldName('object') : null;
      const [name, value] = callArgs(call).positional;
      const attr = name?.type === 'string' ? stringContent(name) : null;
      if (recv?.type === 'identifier' && recv.text === 'self' && attr && value && value.type !== 'none') push(attr, { recv, cls: this.sema.enclosingClass(call), value, buffer: true });
    }
    for (const a of this.sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (!left || !right) continue;
      if (left.type === 'attribute') add(left, right);
      else if (/^(pattern_list|tuple_pattern)$/.test(left.type) && right.type === 'expression_list') {
        left.namedChildren.forEach((l, i) => {
          const r = right.namedChildren[i];
          if (l?.type === 'attribute' && r) add(l, r);
        });
      }
    }
    return (this.attrs = out);
  }

  /** `parser.add_argument('--device', default='cuda')` → the default node of dest `device` (flags: a marker node). */
  private argparseDefaults(dest: string): Node[] {
    if (!this.argparse) {
      this.argparse = new Map();
      const overridden = new Map<string, Node>();
      for (const call of this.sema.nodes('call')) {
        // `parser.set_defaults(pin_mem=True)` (MAE, DeiT): the default of a store_true/store_false pair
        if (methodName(call) === 'set_defaults') {
          for (const [k, v] of callArgs(call).keywords) {
            const val = kwValue(v);
            if (val) overridden.set(k, val);
          }
          continue;
        }
        if (methodName(call) !== 'add_argument') continue;
        const { positional, keywords } = callArgs(call);
        const destKw = kwValue(keywords.get('dest'));
        const flags = positional.filter((x) => x.type === 'string').map((x) => stringContent(x) ?? '');
        const long = flags.find((f) => f.startsWith('--')) ?? flags.find((f) => !f.startsWith('-'));
        const name = destKw?.type === 'string' ? stringContent(destKw) : long ? long.replace(/^-+/, '').replace(/-/g, '_') : null;
        if (!name) continue;
        const def = kwValue(keywords.get('default'));
        const action = kwValue(keywords.get('action'));
        const type = kwValue(keywords.get('type'))?.text;
        let node: Node | null = def;
        if (!node && action && /store_true|store_false/.test(action.text)) node = Object.assign(Object.create(null), { type: 'argparse-flag', id: -call.id, startIndex: call.startIndex, endIndex: call.endIndex, text: action.text }) as Node;
        if (!node) continue;
        if (type && /^(int|float)$/.test(type) && def && def.type !== 'integer' && def.type !== 'float' && def.type !== 'unary_operator' && def.type !== 'none') continue;
        const list = this.argparse.get(name);
        if (list) list.push(node);
        else this.argparse.set(name, [node]);
      }
      // set_defaults wins over each add_argument default of that dest (argparse applies parser-level defaults last)
      for (const [k, v] of overridden) this.argparse.set(k, [v]);
    }
    return this.argparse.get(dest) ?? [];
  }

  // ----- subscripts

  private subscript(node: Node): Value {
    const value = node.childForFieldName('value');
    const index = node.childForFieldName('subscript') ?? node.namedChildren[1];
    const v = this.value(value);
    const q = value ? this.sema.resolve(value) : null;
    if (q === 'os.environ') return str(node, []);
    if (v.kind === 'tensor') {
      // indexing a batch of a loader (`batch[0]`, `batch["input_ids"]`) gives one of its tensors
      return { ...v, origin: node, batch: undefined } as Value;
    }
    if (v.kind === 'seq') {
      if (v.shape) return index?.type === 'slice' ? v : num(node);
      if (index?.type === 'slice') return v;
      const i = index?.type === 'integer' ? Number(index.text) : index?.type === 'unary_operator' && /^-\d+$/.test(index.text) ? Number(index.text) : null;
      if (i !== null && v.items) {
        const it = v.items[i < 0 ? v.items.length + i : i];
        if (it) return it;
      }
      return v.elem;
    }
    const key = index?.type === 'string' ? stringContent(index) : null;
    if (v.kind === 'dict' && key !== null && v.entries.has(key)) return v.entries.get(key)!;
    if (key !== null && value) {
      let out: Value = UNKNOWN;
      for (const r of this.subscriptIndex().get(`${value.text}[${key}]`) ?? []) out = join(out, this.value(r));
      if (out.kind !== 'unknown') return out;
    }
    if (v.kind === 'dict') return [...v.entries.values()].reduce<Value>((a, b) => join(a, b), UNKNOWN);
    return UNKNOWN;
  }

  private subscriptIndex(): Map<string, Node[]> {
    if (this.subscripts) return this.subscripts;
    const out = new Map<string, Node[]>();
    for (const a of this.sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (left?.type !== 'subscript' || !right) continue;
      const idx = left.childForFieldName('subscript');
      const key = idx?.type === 'string' ? stringContent(idx) : null;
      const recv = left.childForFieldName('value');
      if (key === null || !recv) continue;
      const k = `${recv.text}[${key}]`;
      const list = out.get(k);
      if (list) list.push(right);
      else out.set(k, [right]);
    }
    return (this.subscripts = out);
  }

  // ----- qualified names (imports)

  private qualified(node: Node, q: string): Value {
    const dt = /^torch\.(\w+)$/.exec(q);
    if (dt && DTYPE_ALIASES[dt[1]] && !/^(float|int|bool|long|half|double|short)$/.test(dt[1]) === true) return { kind: 'dtype', origin: node, name: DTYPE_ALIASES[dt[1]] };
    if (dt && /^(float|half|double|long|short)$/.test(dt[1])) return { kind: 'dtype', origin: node, name: DTYPE_ALIASES[dt[1]] };
    if (/^numpy\.(float16|float32|float64|int64|int32|bool_|uint8)$/.test(q)) return { kind: 'dtype', origin: node, name: q.slice(6).replace(/_$/, '') };
    if (q === 'os.environ') return { kind: 'dict', origin: node, entries: new Map() };
    return UNKNOWN;
  }

  // ----- calls

  private call(node: Node): Value {
    const fnNode = node.childForFieldName('function');
    const callee = this.sema.callee(node);
    if (callee) {
      const lib = this.libraryCall(node, callee);
      // an imported name the library table does not know may be a function of another project module
      if (lib !== UNKNOWN || this.resolvers.length === 1 || /^(torch|numpy|np|torchvision|transformers|math|os|sys)\./.test(callee)) return lib;
      const target = this.resolveCall(node);
      return target && target.model !== this ? this.foreignResult(node, target) : lib;
    }
    if (!fnNode) return UNKNOWN;
    if (fnNode.type === 'identifier') {
      const builtin = this.builtinCall(node, fnNode.text);
      if (builtin) return builtin;
    }
    const target = this.resolveCall(node);
    if (target) {
      if (target.model !== this) return this.foreignResult(node, target);
      if (target.def.type === 'class_definition') return isModuleClass(target.def) ? { kind: 'module', origin: node } : UNKNOWN;
      return this.helperReturn(target.def, this.helperArguments(node, target.def, (a) => this.value(a))) ?? target.model.returnValue(target.def);
    }
    const meth = methodName(node);
    if (meth) {
      // methods only `str` has (torch.Tensor has none of them): a file name or caption cleaned up, `line.strip()`
      if (/^(strip|lstrip|rstrip|lower|upper|casefold|capitalize|title|removeprefix|removesuffix)$/.test(meth)) return str(node, []);
      const r = this.methodCall(node, meth, receiver(node)!);
      if (r) return r;
      // `accelerator.clip_grad_norm_(params, max_norm)` returns the total norm of the gradients, a tensor on their device
      // (accelerate src/accelerate/accelerator.py clip_grad_norm_: "Returns: `torch.Tensor`: Total norm of the parameter gradients")
      if (meth === 'clip_grad_norm_' && /accelerator/i.test(receiver(node)?.text ?? '')) return deviceTensor(node);
      // Accelerate / Fabric collectives return what they were given, gathered across processes (on the device):
      // `predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))`
      const first = callArgs(node).positional[0];
      if (first && (/^(gather_for_metrics|pad_across_processes)$/.test(meth) || (/^(gather|reduce|all_gather|all_reduce)$/.test(meth) && /accelerator|fabric/i.test(receiver(node)?.text ?? '')))) {
        const v = this.value(first);
        if (v.kind === 'tensor' || v.kind === 'seq' || v.kind === 'dict') return { ...v, origin: node } as Value;
      }
    }
    // a module's output is a tensor or a tuple/dict of them (`logits, loss = model(x, y)`): a bundle
    const f = this.value(fnNode);
    if (f.kind === 'module') return deviceTensor(node, 'unknown', { batch: true });
    // a submodule of a model called on a device tensor (`model.visual_encoder(image)`, BLIP): its output, on that device
    if (fnNode.type === 'attribute') {
      const owner = fnNode.childForFieldName('object');
      if (owner && this.value(owner).kind === 'module') {
        const arg = callArgs(node).positional.find((a) => isDeviceTensor(this.value(a), true));
        if (arg) {
          const a = this.value(arg) as TensorValue;
          return deviceTensor(node, a.device, { batch: true });
        }
      }
    }
    // `self(x)` inside an nn.Module: its forward
    if (fnNode.type === 'identifier' && fnNode.text === 'self') {
      const cls = this.sema.enclosingClass(node);
      if (cls && isModuleClass(cls)) return deviceTensor(node, 'unknown', { batch: true });
    }
    if (fnNode.type === 'identifier' && (MODULE_NAME.test(fnNode.text) || /^(compute_loss|get_loss|loss)$/.test(fnNode.text))) return deviceTensor(node, 'unknown', { batch: true });
    return UNKNOWN;
  }

  private libraryCall(node: Node, callee: string): Value {
    const { positional, keywords } = callArgs(node);
    if (callee === 'torch.device') {
      const first = kwValue(keywords.get('type')) ?? positional[0];
      const fv = first ? this.value(first) : UNKNOWN;
      const d = deviceOf(fv);
      const kinds = deviceKinds(fv);
      return { kind: 'device', origin: node, device: d ?? (first ? 'runtime' : 'unknown'), kinds: kinds.length > 1 ? kinds : undefined };
    }
    if (XLA_DEVICE_CALLS.test(callee)) return { kind: 'device', origin: node, device: 'xla' };
    if (callee === 'torch.cuda.current_device') return num(node, { rank: true });
    if (/^torch\.cuda\.(is_available|is_bf16_supported|is_initialized)$|^torch\.distributed\.(is_available|is_initialized)$|^torch\.(is_tensor|is_floating_point|is_grad_enabled)$/.test(callee)) return bool(node);
    if (HOST_NUMBER_CALLS.test(callee)) return num(node, { rank: RANK_CALLS.test(callee) || undefined });
    if (/^torch\.utils\.data\.(DataLoader|dataloader\.DataLoader)$/.test(callee) || LOADER_CTORS.test(callee)) {
      // a custom collate_fn decides the batch's shape itself: its item stays unknown (every part a tensor, as before)
      const item = keywords.has('collate_fn') ? undefined : this.datasetItem(kwValue(keywords.get('dataset')) ?? positional[0] ?? null);
      return { kind: 'loader', origin: node, device: 'unknown', item };
    }
    if (XLA_LOADERS.test(callee)) {
      const inner = positional[0] ? this.value(positional[0]) : UNKNOWN;
      return { kind: 'loader', origin: node, device: 'xla', item: inner.kind === 'loader' ? inner.item : undefined };
    }
    if (/^argparse\.ArgumentParser$/.test(callee)) return UNKNOWN;
    if (/^collections\.(defaultdict|Counter|OrderedDict)$/.test(callee)) return { kind: 'dict', origin: node, entries: new Map() };
    if (MODULE_CALLS.test(callee) || /\.from_pretrained$/.test(callee)) return { kind: 'module', origin: node };
    // a file path (`os.path.join(out_dir, "checkpoint_{}".format(i))`): a string, never a tensor
    if (/^os\.path\.(join|basename|dirname|abspath|realpath|normpath|expanduser|expandvars|relpath)$/.test(callee)) return str(node, []);
    // text processing: strings (`re.sub(r"\s+", " ", caption)`), lists of strings (`re.findall`, `shlex.split`)
    if (/^(re\.(sub|escape)|json\.dumps|textwrap\.(dedent|fill|shorten|indent)|unicodedata\.normalize|html\.unescape)$/.test(callee)) return str(node, []);
    if (/^(re\.(split|findall)|shlex\.split|textwrap\.wrap)$/.test(callee)) return seq(node, str(node, []));
    // the names in a directory / matching a pattern: a list of strings
    if (/^(glob\.glob|os\.listdir)$/.test(callee)) return seq(node, str(node, []));
    if (/^os\.(environ\.get|getenv)$/.test(callee)) {
      const key = positional[0]?.type === 'string' ? stringContent(positional[0]) ?? '' : '';
      const def = positional[1] ?? kwValue(keywords.get('default'));
      const d = def ? this.value(def) : UNKNOWN;
      if (/RANK|ORDINAL/.test(key)) return num(node, { rank: true, value: d.kind === 'number' ? d.value : undefined });
      return d.kind === 'number' ? d : str(node, d.kind === 'string' ? d.values : []);
    }
    if (HOST_MODULES.test(callee)) {
      if (/^(math|random|statistics)\./.test(callee)) return num(node);
      // `np.random.normal(0, 1, (b, d))`, `np.random.default_rng().random(...)` is a method call (not here)
      return hostTensor(node, HOST_RNG.test(callee) ? { generated: 'random' } : {});
    }
    if (TORCH_FACTORIES.test(callee)) return this.factory(node, callee);
    // `Variable(t, requires_grad=False)` (pre-0.4 autograd wrapper, now a no-op returning a Tensor): the tensor it wraps
    if (callee === 'torch.autograd.Variable' || callee === 'torch.autograd.variable.Variable') {
      const v = this.value(positional[0]);
      if (v.kind === 'tensor') return { ...v, origin: node } as Value;
    }
    if (TORCH_LIKE.test(callee)) {
      const dev = kwValue(keywords.get('device'));
      if (dev) return this.placed(node, dev);
      const src = this.value(positional[0]);
      return src.kind === 'tensor' ? { ...src, origin: node, batch: undefined } as Value : deviceTensor(node);
    }
    if (/^torch\.(cat|stack|concat|concatenate|hstack|vstack)$/.test(callee)) {
      const v = this.value(positional[0]);
      const e = v.kind === 'seq' ? v.elem : v;
      return e.kind === 'tensor' ? { ...e, origin: node, batch: undefined } as Value : deviceTensor(node, 'unknown', { weak: true });
    }
    if (/^torch\.(chunk|split|unbind|meshgrid|broadcast_tensors|where)$/.test(callee) && /chunk|split|unbind|meshgrid|broadcast/.test(callee)) {
      const e = this.value(positional[0]);
      return seq(node, e.kind === 'tensor' ? e : deviceTensor(node));
    }
    if (/^torch\.nn\.functional\./.test(callee) || (/^torch\.[a-z_]\w*$/.test(callee) && !NON_TENSOR_TORCH.test(callee)) || /^torch\.(linalg|fft|special)\.\w+$/.test(callee)) {
      // an op on tensors: on the device of its tensor arguments (a CPU op on CPU tensors stays on the host)
      let out: Value | null = null;
      let unknownArg = false;
      for (const a of positional) {
        const v = this.value(a);
        if (v.kind === 'tensor') out = out ? join(out, v) : v;
        else if (v.kind === 'unknown' || v.kind === 'seq') unknownArg = true;
      }
      let t: Value = deviceTensor(node);
      if (out && out.kind === 'tensor' && out.where === 'host' && !unknownArg) t = { ...out, origin: node, batch: undefined } as Value;
      else if (out && out.kind === 'tensor' && out.where === 'device') t = { ...out, origin: node, batch: undefined } as Value;
      // `torch.max(x, 1)` / `torch.topk(x, k)` return (values, indices), as the method forms do; `torch.max(x)` and the
      // elementwise `torch.max(a, b)` one tensor
      const op = callee.slice('torch.'.length);
      if (MULTI_METHODS.has(op) && !/^(chunk|split|unbind)$/.test(op) && (!/^(max|min|median|mode)$/.test(op) || (positional.length > 1 && this.value(positional[1]).kind !== 'tensor') || keywords.has('dim'))) return seq(node, t, [t, t]);
      return t;
    }
    if (/^torch_xla\..*\.(all_reduce|all_gather|reduce_scatter|mesh_reduce)$/.test(callee)) return deviceTensor(node, 'xla');
    // the total norm of the gradients: a tensor on their device
    if (/^torch\.nn\.utils\.(clip_grad_norm_?|get_total_norm|parameters_to_vector)$/.test(callee)) return deviceTensor(node);
    if (/^torch\.distributed\.(all_reduce|broadcast|barrier|all_gather)$/.test(callee)) return none(node);
    if (/^torch\.(float16|half|bfloat16|float32|float64|double)$/.test(callee)) return UNKNOWN;
    return UNKNOWN;
  }

  /** A factory call: a CPU tensor without `device=`, else on that device. */
  private factory(node: Node, callee: string): Value {
    const { keywords, positional } = callArgs(node);
    const dev = kwValue(keywords.get('device'));
    const dtypeNode = kwValue(keywords.get('dtype'));
    const dtypeV = dtypeNode ? this.value(dtypeNode) : null;
    const dtype = dtypeV?.kind === 'dtype' ? dtypeV.name ?? undefined : undefined;
    if (dev) return this.placed(node, dev, dtype);
    const op = callee.slice('torch.'.length);
    if (WRAP_FACTORIES.test(op)) {
      const src = positional[0] ? this.value(positional[0]) : UNKNOWN;
      // torch.as_tensor(t) of a device tensor keeps its device
      if (src.kind === 'tensor' && callee === 'torch.as_tensor') return { ...src, origin: node, batch: undefined } as Value;
      // a wrap of host-generated data stays host-generated (`torch.FloatTensor(np.random.normal(...))`)
      if (src.kind === 'tensor' && src.where === 'host' && src.generated) return hostTensor(node, { dtype, generated: src.generated });
      // a legacy type constructor given sizes (`torch.FloatTensor(n, 1)`): an uninitialised constant
      if (/Tensor$/.test(op) && positional.length && positional.every((a) => this.value(a).kind === 'number')) return hostTensor(node, { dtype, generated: 'constant' });
      return hostTensor(node, { dtype });
    }
    if (/^(rand|randn|randint)$/.test(op)) return hostTensor(node, { dtype, generated: 'random' });
    // sizes and fill values only (`torch.ones(x.size())`, `torch.full((b, 1), 0.9)`, `torch.arange(n)`)
    const sizes = positional.every((a) => { const v = this.value(a); return v.kind === 'number' || (v.kind === 'seq' && (v.shape || v.elem.kind === 'number')); });
    return hostTensor(node, sizes && positional.length ? { dtype, generated: 'constant' } : { dtype });
  }

  /** A tensor placed on the device `dev` names (unknown device expressions count as the accelerator). */
  private placed(node: Node, dev: Node, dtype?: string): Value {
    const v = this.value(dev);
    const d = deviceOf(v) ?? (v.kind === 'number' ? 'cuda' : v.kind === 'tensor' ? v.device : 'unknown');
    return d === 'cpu' ? hostTensor(node, { dtype }) : deviceTensor(node, d, { dtype });
  }

  private builtinCall(node: Node, name: string): Value | null {
    if (this.visibleBindingsNamed(node, name)) return null; // a local def or a binding shadows the builtin
    const { positional } = callArgs(node);
    switch (name) {
      case 'int':
      case 'float':
      case 'round':
      case 'len':
      case 'abs':
      case 'divmod':
      case 'pow':
      case 'hash':
      case 'ord': {
        if ((name === 'abs' || name === 'round') && positional.length >= 1) {
          const v = this.value(positional[0]);
          if (v.kind === 'tensor' && name === 'abs') return { ...v, origin: node };
        }
        const inner = positional[0] ? this.value(positional[0]) : UNKNOWN;
        return num(node, { rank: inner.kind === 'number' ? inner.rank : inner.kind === 'string' ? undefined : undefined, value: inner.kind === 'number' && name === 'int' ? inner.value : undefined });
      }
      case 'str':
      case 'repr':
      case 'format':
      case 'chr':
        return str(node, []);
      case 'open':
        // a file object iterates as its lines: strings (bytes in binary mode, which the default collate also keeps as
        // a list, torch 1.13 collate.py `string_classes = (str, bytes)`)
        return seq(node, str(node, []));
      case 'bool':
      case 'isinstance':
      case 'hasattr':
      case 'callable':
      case 'issubclass':
      case 'all':
      case 'any':
        return bool(node);
      case 'max':
      case 'min':
      case 'sum': {
        if (positional.length === 1) {
          const v = this.value(positional[0]);
          if (v.kind === 'tensor') return { ...v, origin: node, batch: undefined } as Value;
          if (v.kind === 'seq') return v.elem.kind === 'tensor' ? { ...v.elem, origin: node, batch: undefined } as Value : v.elem.kind === 'unknown' ? UNKNOWN : num(node);
          return UNKNOWN;
        }
        let out: Value = UNKNOWN;
        for (const a of positional) out = join(out, this.value(a));
        return out.kind === 'tensor' || out.kind === 'number' ? { ...out, origin: node } as Value : UNKNOWN;
      }
      case 'list':
      case 'tuple':
      case 'sorted':
      case 'reversed':
      case 'set': {
        const v = positional[0] ? this.value(positional[0]) : UNKNOWN;
        return seq(node, elementOf(v, node), v.kind === 'seq' && name !== 'sorted' && name !== 'set' && name !== 'reversed' ? v.items : undefined);
      }
      case 'range':
        return seq(node, num(node));
      case 'dict': {
        const entries = new Map<string, Value>();
        for (const [k, kw] of callArgs(node).keywords) entries.set(k, this.value(kwValue(kw)));
        return { kind: 'dict', origin: node, entries };
      }
      case 'enumerate':
      case 'zip':
        return seq(node, this.iterationValue(node, null));
      case 'getattr': {
        // `getattr(torch, args.dtype)`: the dtype an argparse default or config string names
        if (positional.length >= 2 && this.sema.resolve(positional[0]) === 'torch') {
          const key = this.value(positional[1]);
          if (key.kind === 'string' && key.values.length === 1 && DTYPE_ALIASES[key.values[0]]) return { kind: 'dtype', origin: key.origin, name: DTYPE_ALIASES[key.values[0]] };
        }
        return null;
      }
      case 'print':
      case 'setattr':
        return none(node);
      default:
        return null;
    }
  }

  private visibleBindingsNamed(node: Node, name: string): boolean {
    const scopes = this.scopeIndex();
    for (let fn = this.sema.enclosingFunction(node); ; fn = fn ? this.sema.enclosingFunction(fn) : null) {
      if (scopes.get(fn?.id ?? 0)?.get(name)?.length) return true;
      if (!fn) return false;
    }
  }

  private methodCall(node: Node, meth: string, recv: Node): Value | null {
    const { positional, keywords } = callArgs(node);
    if (STR_METHODS.test(meth)) {
      const r = this.value(recv);
      // `line.split("\t")`, `" ".join(words)`, `f.readlines()` of a text file: strings, never tensors
      // a literal template (`"cuda:{}".format(gpu)`) keeps its meaning through the cases below
      const template = r.kind === 'string' && r.values.length > 0 && /^(format|format_map|replace)$/.test(meth);
      if (!template && (r.kind === 'string' || isTextFile(r))) return /^(split|rsplit|splitlines|partition|rpartition|readlines)$/.test(meth) ? seq(node, str(node, [])) : str(node, []);
    }
    switch (meth) {
      case 'item':
        return num(node);
      case 'tolist': {
        const r = this.value(recv);
        return r.kind === 'tensor' ? seq(node, num(node)) : seq(node, UNKNOWN);
      }
      case 'numpy':
        return hostTensor(node);
      case 'cpu': {
        const r = this.value(recv);
        return r.kind === 'module' ? r : hostTensor(node, { dtype: r.kind === 'tensor' ? r.dtype : undefined });
      }
      case 'cuda': {
        const r = this.value(recv);
        return r.kind === 'module' ? r : deviceTensor(node, 'cuda', { dtype: r.kind === 'tensor' ? r.dtype : undefined });
      }
      case 'size': {
        if (positional.length) return num(node);
        return seq(node, num(node), undefined, true);
      }
      case 'to': {
        const r = this.value(recv);
        if (r.kind === 'module') return r;
        // `data.to(rank, "x", "y")`: PyG's `Data.to(device, *attrs)` moves the named attributes of a graph container
        // (pytorch_geometric multi_gpu examples); `Tensor.to` takes no string after the device, so this is no tensor
        if (positional.slice(1).some((a) => a.type === 'string')) return UNKNOWN;
        const dev = kwValue(keywords.get('device')) ?? positional.find((a) => {
          const v = this.value(a);
          return v.kind !== 'dtype' && v.kind !== 'bool';
        });
        const dtypeNode = kwValue(keywords.get('dtype')) ?? positional.find((a) => this.value(a).kind === 'dtype');
        const dv = dtypeNode ? this.value(dtypeNode) : null;
        const dtype = dv?.kind === 'dtype' ? dv.name ?? undefined : r.kind === 'tensor' ? r.dtype : undefined;
        if (dev) {
          const p = this.placed(node, dev, dtype);
          if (p.kind === 'tensor' && p.where === 'device' && r.kind === 'unknown' && this.value(dev).kind === 'unknown') return { ...p, weak: true };
          return p;
        }
        if (r.kind === 'tensor') return { ...r, origin: node, dtype, batch: undefined } as Value;
        return dtypeNode ? deviceTensor(node, 'unknown', { dtype, weak: true }) : null;
      }
      case 'format':
      case 'join':
      case 'strip':
      case 'lower':
      case 'upper':
      case 'replace':
      case 'rstrip':
      case 'lstrip':
        // "cuda:{}".format(rank) names a CUDA device
        if (meth === 'format' && recv.type === 'string' && /^cuda:\{/.test(stringContent(recv) ?? '')) return str(node, ['cuda:{}']);
        if (this.value(recv).kind === 'string' || recv.type === 'string') return str(node, []);
        break;
      case 'parse_args':
      case 'parse_known_args':
        return meth === 'parse_args' ? { kind: 'args', origin: node } : seq(node, UNKNOWN, [{ kind: 'args', origin: node }, UNKNOWN]);
      case 'get': {
        const r = this.value(recv);
        if (r.kind === 'dict') {
          const k = positional[0]?.type === 'string' ? stringContent(positional[0]) : null;
          if (k !== null && r.entries.has(k)) return r.entries.get(k)!;
          return positional[1] ? this.value(positional[1]) : UNKNOWN;
        }
        break;
      }
      case 'state_dict':
        return { kind: 'dict', origin: node, entries: new Map() };
      case 'parameters':
        return seq(node, deviceTensor(node, 'unknown', { weak: true }));
      case 'element_size':
      case 'dim':
      case 'numel':
      case 'nelement':
      case 'get_device':
      case 'data_ptr':
      case 'ndimension':
      case 'stride':
        return num(node);
      case 'eval':
      case 'train':
      case 'half':
      case 'float':
      case 'double':
      case 'bfloat16':
      case 'requires_grad_':
      case 'type': {
        const r = this.value(recv);
        if (r.kind === 'module' && meth !== 'type') return r;
        if (r.kind === 'tensor') return { ...r, origin: node, dtype: DTYPE_METHOD[meth] ?? r.dtype, batch: undefined } as Value;
        if (meth === 'eval' || meth === 'train') return null;
        break;
      }
    }
    if (INT_METHODS.has(meth)) return num(node);
    if (TENSOR_METHODS.has(meth)) {
      const r = this.value(recv);
      if (r.kind === 'tensor') {
        const t = { ...r, origin: node, batch: undefined } as Value;
        // `t.max(dim)`/`t.median(1)` return (values, indices); `t.max()` one tensor
        const multi = MULTI_METHODS.has(meth) && (!/^(max|min|median|mode)$/.test(meth) || positional.length > 0 || keywords.has('dim'));
        return multi ? seq(node, t, /^(topk|sort|kthvalue|median|mode|aminmax|max|min)$/.test(meth) ? [t, t] : undefined) : t;
      }
      if (r.kind === 'number' || r.kind === 'string' || r.kind === 'bool' || r.kind === 'seq' || r.kind === 'dict' || r.kind === 'none') return r.kind === 'number' ? num(node) : UNKNOWN;
      // `x.sum()` on a value nothing explains: a tensor by its method, weakly
      if (r.kind === 'unknown' && !(meth === 'split' || meth === 'type' || meth === 'round' || meth === 'sort')) return deviceTensor(node, 'unknown', { weak: true });
    }
    return null;
  }
}

const EMPTY_SET: Set<string> = new Set();

/** The local resolver: same-file functions (`f()`, `self.f()`), classes (`Net()`). */
const localResolver: CallResolver = (call, model) => {
  const fn = call.childForFieldName('function');
  if (fn?.type === 'identifier') {
    const cls = model.classesNamed(fn.text);
    if (cls.length) return { def: cls[cls.length - 1], model, path: model.path };
  }
  const defs = model.sema.calledFunctions(call);
  if (!defs.length) return null;
  // `self.f()` prefers the method of the enclosing class
  if (fn?.type === 'attribute') {
    const cls = model.sema.enclosingClass(call);
    const own = defs.find((d) => model.sema.enclosingClass(d)?.id === cls?.id);
    if (own) return { def: own, model, path: model.path };
  }
  return { def: defs[defs.length - 1], model, path: model.path };
};

function isModuleClass(cls: Node): boolean {
  const supers = cls.childForFieldName('superclasses')?.text ?? '';
  return /Module|nn\.|LightningModule|PreTrainedModel|Model\b/.test(supers);
}

/**
 * A tensor known only by the `forward()` inputs convention for a parameter that defaults to None (`unet_number=None`):
 * the default says nothing about what callers pass, so a helper given it (`default(unet_number, 1)`) takes its value
 * from the other arguments.
 */
function conventionOnly(v: Value): boolean {
  const o = v.origin;
  return v.kind === 'tensor' && o?.parent?.type === 'parameters' && o.childForFieldName('value')?.type === 'none';
}

const HELPER_STMTS = new Set(['return_statement', 'if_statement', 'pass_statement', 'comment']);
/**
 * A small pure helper: at most 4 statements, only `if`/`return` (and a docstring), no loop, assignment, nested
 * function or side effect, and no `yield` (`exists`, `default`, `identity`, `cast_tuple`-like one-liners).
 */
function isSmallPureHelper(def: Node): boolean {
  const body = def.childForFieldName('body');
  if (!body || body.namedChildren.length > 4 || /\b(yield|global|nonlocal)\b/.test(body.text)) return false;
  const ok = (block: Node | null): boolean =>
    !!block &&
    block.namedChildren.every((s) => {
      if (!s) return true;
      if (s.type === 'expression_statement') return s.namedChildren.length === 1 && s.namedChildren[0]!.type === 'string';
      if (!HELPER_STMTS.has(s.type)) return false;
      if (s.type !== 'if_statement') return true;
      return s.namedChildren.every((c) => !c || c.id === s.childForFieldName('condition')?.id || (c.type === 'block' ? ok(c) : c.type === 'else_clause' || c.type === 'elif_clause' ? ok(c.childForFieldName('body') ?? c.childForFieldName('consequence')) : c.type === 'comment'));
    });
  return ok(body);
}

function contains(outer: Node, inner: Node): boolean {
  return inner.startIndex >= outer.startIndex && inner.endIndex <= outer.endIndex;
}

/** A statement a block holds directly: an expression statement's assignment is bound at the statement. */
function outerStatement(n: Node): Node {
  return n;
}

/** The element of an iterable value: a tensor's rows are tensors, a loader's items batches, a list's its elements. */
export function elementOf(v: Value, origin: Node): Value {
  switch (v.kind) {
    case 'tensor':
      return { ...v, origin, batch: undefined } as Value;
    case 'seq':
      return v.elem;
    case 'loader':
      return loaderBatch(v, origin);
    case 'dict':
      return str(origin, []);
    case 'string':
      return str(origin, []);
    default:
      return UNKNOWN;
  }
}

/**
 * One batch a loader yields. Without a known sample every part is a batch tensor (on XLA for MpDeviceLoader). With a
 * project Dataset's sample, the default collate (torch 1.13 torch/utils/data/_utils/collate.py) keeps its structure:
 * a Mapping collates key by key (:126), a tuple/list position by position (:134-149), a str/bytes field stays the list
 * of the batch's strings (`collate_str_fn` returns the batch, :187, registered for `string_classes` at :201), ints and
 * floats become tensors (:179-184). Only a sample with a string part changes the answer; else the whole batch tensor.
 */
function loaderBatch(v: LoaderValue, origin: Node): Value {
  const whole = deviceTensor(origin, v.device === 'xla' ? 'xla' : 'unknown', { batch: true });
  if (!v.item || !hasString(v.item, 0)) return whole;
  const collate = (x: Value, depth: number): Value => {
    if (x.kind === 'string') return seq(origin, str(origin, []));
    if (depth < 3 && x.kind === 'seq' && x.items && !x.shape) {
      const items = x.items.map((i) => collate(i, depth + 1));
      return seq(origin, items.reduce<Value>((a, b) => join(a, b), UNKNOWN), items);
    }
    if (depth < 3 && x.kind === 'dict') return { kind: 'dict', origin, entries: new Map([...x.entries].map(([k, e]) => [k, collate(e, depth + 1)])) };
    return whole;
  };
  return collate(v.item, 0);
}

function hasString(x: Value, depth: number): boolean {
  if (x.kind === 'string') return true;
  if (depth >= 3) return false;
  if (x.kind === 'seq' && x.items && !x.shape) return x.items.some((i) => hasString(i, depth + 1));
  if (x.kind === 'dict') return [...x.entries.values()].some((e) => hasString(e, depth + 1));
  return false;
}

/** Methods of `str` (and of text files) whose result is strings; `split` is also a tensor method, so the receiver decides. */
const STR_METHODS = /^(split|rsplit|splitlines|partition|rpartition|join|format|format_map|replace|zfill|ljust|rjust|center|expandtabs|translate|encode|decode|read|readline|readlines)$/;

/** The value of `open(...)`: a sequence of lines whose origin is the `open` call. */
function isTextFile(v: Value): boolean {
  return v.kind === 'seq' && v.origin?.type === 'call' && /^(open|io\.open|codecs\.open)$/.test(v.origin?.childForFieldName('function')?.text ?? '');
}

/** Item `i` of an unpacked value. */
function itemOf(v: Value, i: number, origin: Node): Value {
  if (v.kind === 'seq') return v.items?.[i] ?? v.elem;
  if (v.kind === 'tensor') return { ...v, origin } as Value; // a batch's parts keep the batch mark
  return UNKNOWN;
}

/** Arithmetic: a tensor when a tensor takes part (the device one wins), numbers with numbers. */
function arith(node: Node, l: Value, r: Value): Value {
  const lt = l.kind === 'tensor';
  const rt = r.kind === 'tensor';
  if (lt || rt) {
    const t = (lt && rt ? join(l, r) : lt ? l : r) as Value & { kind: 'tensor' };
    // a host tensor with an unknown operand stays host only when the other side is a number
    return { ...t, origin: node, batch: undefined } as Value;
  }
  if ((l.kind === 'number' || l.kind === 'bool') && (r.kind === 'number' || r.kind === 'bool')) return num(node);
  if (l.kind === 'seq' && r.kind === 'seq') return seq(node, join(l.elem, r.elem));
  if (l.kind === 'seq' && r.kind === 'number') return seq(node, l.elem);
  if (l.kind === 'number' && r.kind === 'unknown') return UNKNOWN;
  return UNKNOWN;
}

export { deviceOfString };

/** The argument each call passes at `index` (or by keyword `name`); empty when one of them passes nothing there or splats. */
function argumentsAt(calls: readonly Node[], index: number, name: string): Node[] {
  const out: Node[] = [];
  for (const call of calls) {
    const { positional, keywords } = callArgs(call);
    if (positional.some((x) => x.type === 'list_splat' || x.type === 'dictionary_splat')) return [];
    const arg = kwValue(keywords.get(name)) ?? positional[index] ?? null;
    if (!arg) return [];
    out.push(arg);
  }
  return out;
}

/** A registered buffer's value: a tensor built on the host moves with its module, so it reads as a device tensor. */
function bufferValue(v: Value, origin: Node): Value {
  if (v.kind === 'tensor') return v.where === 'host' ? { ...deviceTensor(origin, 'unknown', { dtype: v.dtype }), origin } : v;
  return v.kind === 'unknown' ? deviceTensor(origin, 'unknown', { weak: true }) : v;
}
