import { defineRule, type RuleContext } from '../../core/rule';
import { analyze, pythonDocument } from '../../core/engine';
import { lastName } from '../../model/facts';
import type { ProgramModel } from '../../model';
import type { Node } from '../../core/parse';
import { callArgs, isAncestor, isFString, kwValue, methodName, mentionsXla, receiver, stringContent, type Semantics } from '../../core/semantics';
import type { Snippet } from '../../core/idioms';
import type { Edit } from '../../core/types';
import { cudaGuarded, gpuSelfTest, removeArgument, scopeOf, short, withQuotes } from './cuda-util';
import { hotFacts } from '../../model/hotAcross';
import { reportLoaderDefaults } from './loader-defaults';

/** Names that carry an int device ordinal (`model.to(rank)`, `torch.device(local_rank)`). */
const RANK_NAME = /^(local_?rank|rank|gpu|gpu_?(id|idx|index)|device_?(id|idx|index)|local_?device|dev_?id|cuda_?id|local_?gpu)$/i;
/** Lists of int device ordinals (`device_ids[0]`, `args.gpu_ids[0]`, `gpus[0]`). */
const ORDINAL_LIST = /^(device_?ids|gpu_?ids|gpus|cuda_?ids|local_?gpus)$/i;
/** A ternary or `if` keyed on CUDA availability: `"cuda" if torch.cuda.is_available() else "cpu"`. */
const AVAILABILITY = /\bis_available\s*\(|\bdevice_count\s*\(/;
/** Device-type checks belong to TPU103: `'cuda' if 'cuda' in device else 'cpu'`, `device.type == 'cuda'`. */
const TYPE_CHECK = /['"]cuda(:\d+)?['"]\s*(not\s+)?(in|==|!=)|(==|!=)\s*['"]cuda(:\d+)?['"]|\.type\b/;
/** Lightning entry points whose `accelerator=` picks the device. */
const LIGHTNING = /^(lightning|lightning\.pytorch|pytorch_lightning|lightning\.fabric|lightning_fabric)\.(Trainer|Fabric)$/;

/** Where a CUDA value is written: an expression to rewrite, with how its replacement must be typed. */
interface Site {
  node: Node;
  /** Evaluated at definition time (parameter defaults, class fields, argparse defaults): no runtime calls. */
  defTime: boolean;
  /** An argparse default: the CLI may legitimately pass another device. */
  argparse?: Node;
  /** `node` is a call of a helper in another module of the project that returns a CUDA device made at `made`. */
  external?: { path: string; made: Node; sema: Semantics; name: string };
}

type SinkKind = 'to' | 'device-kw' | 'reach';

const rule = defineRule({
  id: 'TPU102',
  name: 'cuda-device-expression',
  title: 'CUDA device expression flows into a device sink',
  severity: 'error',
  step: 3,
  effort: 1,
  message: 'A CUDA device ("cuda", "cuda:N", an int ordinal) reaches a device argument; a TPU host has no CUDA device',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Use the XLA device' },
  triggers: ['cuda', '.to(', 'device', 'accelerator', 'clip.load'],
  docs: {
    what:
      'Also a model loader whose device defaults to CUDA-if-available-else-CPU called without a device (`clip.load("ViT-B/32")`: openai/CLIP `load(name, device="cuda" if torch.cuda.is_available() else "cpu")`) when the loaded model is not moved afterwards (`model.to(device)`, `clip.load(...)[0].to(device)`): error, the model silently runs on the CPU of a TPU host; the fix adds `device=` only with `jit=False`. ' +
      'Checks for CUDA device expressions (`"cuda"`, `"cuda:0"`, `f"cuda:{rank}"`, `"cuda:%d" % r`, `torch.device("cuda", i)`, ' +
      '`torch.cuda.current_device()`, and int ordinals such as `model.to(rank)` or an element of a device-id list, `.to(device_ids[0])`) that reach a device argument: `.to(...)`, the `device=` ' +
      'argument of tensor factories, module constructors and `torch.Generator`, and, through variables, `torch.load(map_location=)`, ' +
      '`DDP(device_ids=)`, `torch.cuda.set_device` and `torch.autocast(device_type=)`. A variable, attribute (`self.device`, `args.device`), ' +
      'parameter default, argparse default, dataclass field or helper return value that holds a CUDA device is reported once, where it is set. ' +
      'A device picker of another project module (`utils.select_device(...)`, `get_device()`) that returns a CUDA device is reported at the call that reaches the sink, with the helper\'s CUDA expression as a related location (no fix here: change the helper), unless the helper\'s own file already reports a CUDA device inside the helper, or the helper sets it in an `if torch.cuda.is_available():` branch that does more than choose it (TPU103 reports that check) and has no other arm; with a fallback arm (yolov5 `select_device`: `if not cpu and torch.cuda.is_available(): ...; arg = "cuda:0" else: arg = "cpu"`, `return torch.device(arg)`) the call is reported as CUDA or else the CPU, the CUDA arm as related location. A CUDA device set in an `if torch.cuda.is_available():` branch that does more than choose the device is left to TPU103, which reports the check. ' +
      'A CUDA device stored in a device holder that no sink of the file reads (a module-level `DEVICE` constant other modules import, `self.device`/`args.device`, a local `device` stored on an attribute or passed to another call) is reported where it is set. ' +
      'Hard-coded CUDA devices inside an `nn.Module`\'s `forward` or `__init__` are reported with their own message. ' +
      'Also checks Lightning `Trainer(accelerator="gpu"|"cuda")` and `Fabric(accelerator=...)`, which pin the run to CUDA; ' +
      'a `--device` option whose CUDA default comes with `choices=` naming no XLA device (reported even when the value is used in another module; unsafe fix: the XLA default and choice); `init_device_mesh("cuda", ...)` (no fix: torch_xla meshes are SPMD ones); and Hugging Face `from_pretrained(device_map=...)` with `"auto"`/`"balanced"`/`"sequential"` (every layer loads on the CPU of a TPU host) or an int, rank or `"cuda:N"` entry (`{"": local_rank}`: a CUDA ordinal), reported where the map is set, with no fix.',
    why:
      '`"cuda"` and int ordinals name CUDA devices, which a TPU host does not have: moving a tensor there fails. The XLA device is ' +
      '`torch.device("xla")` (MIG:41-55) or `torch_xla.device()` (DEV:81-84; TX:19), and each process started by `torch_xla.launch` ' +
      'sees its own device as `xla:0`, so rank-indexed devices do not carry over. Mixing CPU tensors with XLA tensors in one op raises ' +
      '(DEV, "Input tensor is not an XLA tensor"). Inside a module, a hard-coded device breaks a model that is otherwise device-agnostic. ' +
      'Lightning checks the requested accelerator when the `Trainer` or `Fabric` is built and raises "`CUDAAccelerator` can not run on your ' +
      'system since the accelerator is not available" on a host without CUDA; `accelerator="auto"` picks the TPU first, then CUDA.',
    example:
      'device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")\nmodel = Net().to(device)\n\n' +
      'class Net(nn.Module):\n    def forward(self, x):\n        pos = torch.arange(x.size(1), device="cuda")',
    useInstead:
      'import torch_xla\n\ndevice = torch_xla.device()   # each launched process gets its own device\nmodel = Net().to(device)\n\n' +
      'class Net(nn.Module):\n    def forward(self, x):\n        pos = torch.arange(x.size(1), device=x.device)',
    fixSafety:
      'Safe when the source is a literal, a config or parameter default, or a `"cuda" if torch.cuda.is_available() else "cpu"` choice ' +
      '(also as an `if`/`else` pair): the source is rewritten once. String-valued sources stay strings (`"xla"`; dual-path ' +
      '`accel.device_type()`, or `str(accel.device())` for rank-indexed ones) so comparisons and f-strings keep working; definition-time ' +
      'values never initialise the runtime. Unsafe when the choice comes from the user (a ternary on a flag keeps the choice and only ' +
      'replaces the CUDA arm; an argparse default with `choices=` needs an `xla` choice added), when an int literal other than 0 or an element of a device-id list picks ' +
      'one of several GPUs, and when a `device=` argument is dropped in `__init__` (the tensor must be a parameter or buffer to follow ' +
      '`model.to(device)`). Inside `forward`, `device=x.device` (the first input) is device-agnostic and safe. An int rank used as the ' +
      'device (`model.to(rank)`) becomes `accel.device() if accel.is_xla() else rank` in dual-path: on CUDA the process keeps the ' +
      'ordinal it was handed (mp.spawn sets no LOCAL_RANK, so `accel.device()` alone could put every rank on cuda:0).',
    sources: [
      'openai/CLIP clip/clip.py (@0848ed7) `load`: device defaults to "cuda" if torch.cuda.is_available() else "cpu"; jit=False builds the module and `.to(device)`s it',
      'MIG:41-55 (torch.device("xla"))',
      'DEV:81-84, 147-160 (torch_xla.device(); xla:0 in every launched process)',
      'TX:19 torch_xla/torch_xla.py `def device(index: int = None)` (pytorch/xla@022ecde)',
      'catalog §0.5 CUDA device expression, CUDA-device taint, device sinks',
      'Lightning-AI/pytorch-lightning src/lightning/pytorch/trainer/connectors/accelerator_connector.py `_set_parallel_devices_and_init_accelerator` ' +
        '(raises "can not run on your system since the accelerator is not available") and `_choose_auto_accelerator` (XLA before CUDA); same in lightning/fabric/connector.py',
      'torch_xla/distributed/spmd/api.py:54-82 (v2.3.0; :55-83 at v2.9.0) `convert_to_xla_mesh(DeviceMesh("xla", ...))`, `xla_distribute_tensor`/`xla_distribute_module`: the DTensor mesh torch_xla accepts is an SPMD one; torch_xla/distributed/spmd/xla_sharding.py `Mesh`',
      'huggingface/accelerate src/accelerate/utils/modeling.py `get_max_memory` (@16cb6eb8: NPU/MLU/SDAA/MUSA/XPU/HPU, else CUDA ordinals `torch.tensor([0], device=i)`, then "cpu"; no XLA branch), which `device_map="auto"` uses',
    ],
    torchtpu: 'The replacement is `torch.device("tpu")` (or `"tpu"` where the value is a string) after `import torch_tpu`.',
  },
  check(ctx) {
    const sema = ctx.sema;
    reportLoaderDefaults(ctx);
    /**
     * Project scope: the default of parameter `p` of a top-level function is dead when the function is called only
     * from other modules of the project (and, in its own file, only through a pure `*args, **kwargs` forwarder whose
     * callers pass it too), each call passing the parameter (nanochat's data loader: `device="cuda"` that every
     * training script overrides). Unknown callers (no project listing, no call found, a use that is not a call) keep
     * the default alive.
     */
    const deadMemo = new Map<string, boolean>();
    const deadAcross = (fn: Node, p: Node, depth: number): boolean => {
      const key = `${fn.id}\0${p.id}`;
      const hit = deadMemo.get(key);
      if (hit !== undefined) return hit;
      deadMemo.set(key, false);
      const result = ((): boolean => {
        const facts = hotFacts(ctx.project);
        const top = fn.parent?.type === 'module' || (fn.parent?.type === 'decorated_definition' && fn.parent.parent?.type === 'module');
        const fname = fn.childForFieldName('name')?.text ?? '';
        if (!facts || !top || !fname || depth > 2) return false;
        const params = paramsOf(fn);
        const index = params.findIndex((x) => x.id === p.id);
        const name = paramName(p) ?? "";
        const passes = (call: Node): boolean => {
          const { positional, keywords } = callArgs(call);
          if (kwValue(keywords.get(name))) return true;
          const pos = positional[index];
          return index >= 0 && !!pos && pos.type !== 'list_splat' && pos.type !== 'dictionary_splat' && !positional.slice(0, index).some((x) => x.type === 'list_splat');
        };
        // same file: every use of the name is its def or a call; each call passes `p` or is a forwarder's body
        const local = sema.callSitesOf(fn);
        if (sema.identifiersNamed(fname).length !== local.length + 1) return false;
        let known = 0;
        for (const call of local) {
          if (passes(call)) { known++; continue; }
          const g = sema.enclosingFunction(call);
          const gp = g ? paramsOf(g) : [];
          const args = (call.childForFieldName('arguments')?.namedChildren ?? []).filter((x): x is Node => !!x);
          const fwd = !!g && gp.length === 2 && gp[0].type === 'list_splat_pattern' && gp[1].type === 'dictionary_splat_pattern'
            && args.length === 2 && args[0].type === 'list_splat' && args[1].type === 'dictionary_splat'
            && args[0].namedChildren[0]?.text === gp[0].namedChildren[0]?.text && args[1].namedChildren[0]?.text === gp[1].namedChildren[0]?.text;
          if (!g || !fwd) return false;
          // the forwarder's callers must pass `p` by keyword (a position is not known through `*args`)
          if (!forwarderDead(g, name, depth + 1)) return false;
          known++;
        }
        const abs = (ctx.project as { abs?: (x: string) => string }).abs?.(ctx.path) ?? ctx.path;
        const refs = facts.callers(abs, fn);
        for (const ref of refs) if (!passes(ref.call)) return false;
        for (const m of new Set(refs.map((r) => r.module))) {
          const calls = refs.filter((r) => r.module === m).length;
          // other uses of the name there than its import and its calls (a callback, a table) are unknown callers
          const uses = m.sema.identifiersNamed(fname).filter((id) => id.parent?.type !== 'dotted_name' && id.parent?.type !== 'aliased_import').length;
          if (uses > calls) return false;
        }
        return known + refs.length > 0;
      })();
      deadMemo.set(key, result);
      return result;
    };
    /** A top-level `def g(*args, **kwargs)` forwarder: every caller (same file or other modules) passes `name=` by keyword. */
    const forwarderDead = (g: Node, name: string, depth: number): boolean => {
      const facts = hotFacts(ctx.project);
      const top = g.parent?.type === 'module' || (g.parent?.type === 'decorated_definition' && g.parent.parent?.type === 'module');
      const gname = g.childForFieldName('name')?.text ?? '';
      if (!facts || !top || !gname || depth > 2) return false;
      const byKw = (call: Node) => !!kwValue(callArgs(call).keywords.get(name));
      const local = sema.callSitesOf(g);
      if (sema.identifiersNamed(gname).length !== local.length + 1 || !local.every(byKw)) return false;
      const abs = (ctx.project as { abs?: (x: string) => string }).abs?.(ctx.path) ?? ctx.path;
      const refs = facts.callers(abs, g);
      if (!refs.every((r) => byKw(r.call))) return false;
      for (const m of new Set(refs.map((r) => r.module))) {
        const calls = refs.filter((r) => r.module === m).length;
        const uses = m.sema.identifiersNamed(gname).filter((id) => id.parent?.type !== 'dotted_name' && id.parent?.type !== 'aliased_import').length;
        if (uses > calls) return false;
      }
      return local.length + refs.length > 0;
    };
    const memo = new Map<number, Site[]>();
    const nameMemo = new Map<string, Site[]>();

    /** A right-hand side that is a device or device string, never an int ordinal. */
    const holdsDeviceValue = (v: Node): boolean => {
      if (v.type === 'string' || v.type === 'concatenated_string') return true;
      if (v.type !== 'call') return false;
      const fn = v.childForFieldName('function')?.text ?? '';
      return /(^|\.)(device_name|device|current_device_name)$/.test(fn) || fn === 'str';
    };
    const isRankName = (n: Node): boolean => {
      if (n.type === 'identifier') {
        if (!RANK_NAME.test(n.text)) return false;
        // `local_device = get_accelerator().device_name(rank)` (DeepSpeed), `= torch.device(...)`, `= f"xla:{i}"`:
        // the name holds a device, not an int ordinal, so it does not mean `cuda:<n>`.
        const values = sema.bindings(n.text);
        return !(values.length > 0 && values.every(holdsDeviceValue));
      }
      if (n.type === 'attribute') return RANK_NAME.test(n.childForFieldName('attribute')?.text ?? '');
      if (n.type === 'call' && n.childForFieldName('function')?.text === 'int') return /LOCAL_RANK|local_rank/.test(n.text);
      return false;
    };
    /** `device_ids[0]`: an element of a list of int ordinals (`device_ids = list(range(...))`, `[0, 1]`, `gpu_ids`). */
    const isOrdinalListItem = (n: Node): boolean => {
      if (n.type !== 'subscript') return false;
      const list = n.childForFieldName('value');
      if (!list || (list.type !== 'identifier' && list.type !== 'attribute')) return false;
      const last = list.type === 'attribute' ? list.childForFieldName('attribute')?.text ?? '' : list.text;
      if (ORDINAL_LIST.test(last)) return true;
      const values = list.type === 'identifier' ? sema.bindings(list.text) : [];
      return values.length > 0 && values.every((v) => (v.type === 'list' && v.namedChildren.length > 0 && v.namedChildren.every((e) => !!e && (e.type === 'integer' || isRankName(e)))) || /^(list\(range|range)\(/.test(v.text));
    };
    const isIntDevice = (n: Node | null | undefined): boolean => !!n && (n.type === 'integer' || isRankName(n) || isOrdinalListItem(n));
    const typeCheckTernary = (n: Node) => n.type === 'conditional_expression' && TYPE_CHECK.test(n.namedChildren[1]?.text ?? '');

    /** A CUDA device written out here (not read through a name). */
    const isDirect = (n: Node | null | undefined, depth = 0): boolean => {
      if (!n || depth > 4) return false;
      switch (n.type) {
        case 'string':
          return sema.isCudaString(n);
        case 'parenthesized_expression':
          return isDirect(n.namedChildren[0], depth + 1);
        case 'conditional_expression': {
          if (mentionsXla(n.text) || typeCheckTernary(n)) return false;
          return isDirect(n.namedChildren[0], depth + 1) || isDirect(n.namedChildren[2], depth + 1);
        }
        case 'binary_operator':
          return ctx.model.namesCuda(n);
        case 'call': {
          const callee = sema.callee(n);
          if (callee === 'torch.cuda.current_device') return true;
          if (callee === 'torch.device') {
            const { positional, keywords } = callArgs(n);
            const first = positional[0] ?? kwValue(keywords.get('type'));
            return isDirect(first, depth + 1) || (positional.length === 1 && isIntDevice(first));
          }
          return methodName(n) === 'format' && ctx.model.namesCuda(n);
        }
        default:
          return false;
      }
    };

    const paramsOf = (fn: Node): Node[] => (fn.childForFieldName('parameters')?.namedChildren ?? []).filter((p): p is Node => !!p);
    const paramName = (p: Node): string | undefined => (p.type === 'identifier' ? p.text : p.childForFieldName('name')?.text);

    /** `a, b = f()` assignments by target name, with the name's (first) position: built once per file. */
    let tuples: Map<string, { a: Node; right: Node; idx: number }[]> | null = null;
    const tupleTargets = () => {
      if (tuples) return tuples;
      tuples = new Map();
      for (const a of sema.nodes('assignment')) {
        const left = a.childForFieldName('left');
        const right = a.childForFieldName('right');
        if (right?.type !== 'call' || (left?.type !== 'pattern_list' && left?.type !== 'tuple_pattern')) continue;
        const seen = new Set<string>();
        left.namedChildren.forEach((c, idx) => {
          const name = c?.text;
          if (name === undefined || seen.has(name)) return;
          seen.add(name);
          let list = tuples!.get(name);
          if (!list) tuples!.set(name, (list = []));
          list.push({ a, right, idx });
        });
      }
      return tuples;
    };

    const overwrittenMemo = new Map<number, boolean>();
    const overwritten = (v: Node, name: string) => {
      let r = overwrittenMemo.get(v.id);
      if (r === undefined) overwrittenMemo.set(v.id, (r = overwrittenBeforeRead(sema, v, name)));
      return r;
    };

    /** The places a CUDA device read at `n` was written (flow-insensitive, scoped by function). */
    const origins = (n: Node | null | undefined, depth = 0): Site[] => {
      if (!n || depth > 8) return [];
      const cached = memo.get(n.id);
      if (cached) return cached;
      // a name's origins depend only on the name and its function (flow-insensitive): every read of `device` in one
      // function shares one answer
      const nameKey = n.type === 'identifier' ? `${sema.enclosingFunction(n)?.id ?? -1}\0${n.text}` : null;
      if (nameKey !== null) {
        const shared = nameMemo.get(nameKey);
        if (shared) {
          memo.set(n.id, shared);
          return shared;
        }
        nameMemo.set(nameKey, []);
      }
      memo.set(n.id, []);
      let out: Site[] = [];
      if (isDirect(n)) out = [{ node: n, defTime: false }];
      else if (n.type === 'parenthesized_expression') out = origins(n.namedChildren[0], depth + 1);
      else if (n.type === 'conditional_expression') {
        if (!mentionsXla(n.text) && !typeCheckTernary(n)) out = [...origins(n.namedChildren[0], depth + 1), ...origins(n.namedChildren[2], depth + 1)];
      } else if (n.type === 'identifier') {
        const fn = sema.enclosingFunction(n);
        const owned = (v: Node) => (sema.enclosingFunction(v)?.id ?? -1) === (fn?.id ?? -1);
        const rhs = sema.bindings(n.text).filter((v) => owned(v) && !overwritten(v, n.text));
        const param = fn ? paramsOf(fn).find((p) => paramName(p) === n.text) : undefined;
        // a parameter: what the call sites pass (`train(torch.device("cuda", rank))`), and its default unless every call
        // site passes the argument (a dead default is not where the device comes from)
        const flow = param && fn && !rhs.length ? ctx.model.argumentsFor(fn, param) : null;
        if (flow) for (const a of flow.args) out.push(...origins(a, depth + 1));
        if (param && (param.type === 'default_parameter' || param.type === 'typed_default_parameter') && !flow?.allPass && !(fn && deadAcross(fn, param, 0))) {
          out.push(...origins(param.childForFieldName('value'), depth + 1).map((s) => ({ ...s, defTime: s.defTime || s.node.id === param.childForFieldName('value')?.id })));
        }
        for (const v of rhs) out.push(...origins(v, depth + 1));
        // `a, b, device = setup()`: the matching element of the tuples setup() returns
        for (const { a, right, idx } of tupleTargets().get(n.text) ?? []) {
          if (!owned(a)) continue;
          for (const def of sema.calledFunctions(right)) {
            for (const r of sema.within('return_statement', def)) {
              const value = r.namedChildren[0];
              if (sema.enclosingFunction(r)?.id !== def.id || (value?.type !== 'expression_list' && value?.type !== 'tuple')) continue;
              out.push(...origins(value.namedChildren[idx], depth + 1));
            }
          }
        }
        if (fn && !rhs.length && !param && !out.length) {
          for (const v of sema.bindings(n.text).filter((v) => sema.enclosingFunction(v) === null)) out.push(...origins(v, depth + 1));
        }
      } else if (n.type === 'attribute') {
        const attr = n.childForFieldName('attribute')?.text ?? '';
        // `torch.float16`, `torch.bfloat16`: a torch attribute is never a CUDA device (no model needed)
        if (n.childForFieldName('object')?.type !== 'call' && !sema.resolve(n)?.startsWith('torch.') && ctx.model.namesCuda(n)) out = attributeOrigins(attr, depth, selfClass(n));
      } else if (n.type === 'call') {
        const callee = sema.callee(n);
        if (callee === 'torch.device') out = origins(callArgs(n).positional[0], depth + 1);
        else {
          const fn = n.childForFieldName('function');
          const local = fn?.type === 'identifier' ? sema.calledFunctions(n) : [];
          for (const def of local) {
            for (const r of sema.within('return_statement', def)) {
              if (sema.enclosingFunction(r)?.id === def.id) out.push(...origins(r.namedChildren[0], depth + 1));
            }
          }
          // a device picker in another module of the project (`utils.select_device(...)`): reported at this call
          if (!local.length && ctx.project && (fn?.type === 'identifier' || fn?.type === 'attribute') && /dev|gpu|cuda|accel/i.test(lastName(fn))) {
            const made = externalCudaReturn(ctx, n);
            if (made) out = [{ node: n, defTime: false, external: made }];
          }
        }
      }
      memo.set(n.id, out);
      if (nameKey !== null) nameMemo.set(nameKey, out);
      return out;
    };

    /** `add_argument(..., default=<CUDA device>)` by dest: one pass over the calls, on first need. */
    let argparseIndex: Map<string, { def: Node; call: Node }[]> | null = null;
    const cudaArgparseDefaults = () => {
      if (argparseIndex) return argparseIndex;
      argparseIndex = new Map();
      for (const call of sema.nodes('call')) {
        if (methodName(call) !== 'add_argument') continue;
        const { positional, keywords } = callArgs(call);
        const def = kwValue(keywords.get('default'));
        if (!def || !isDirect(def)) continue;
        const dest = kwValue(keywords.get('dest'));
        const flag = positional.find((x) => x.type === 'string' && (stringContent(x) ?? '').startsWith('--'));
        const name = dest ? stringContent(dest) : flag ? stringContent(flag)!.replace(/^-+/, '').replace(/-/g, '_') : null;
        if (name === null) continue;
        let list = argparseIndex.get(name);
        if (!list) argparseIndex.set(name, (list = []));
        list.push({ def, call });
      }
      return argparseIndex;
    };
    /** `self.x` / `cls.x` read in a class: the class whose assignments it can see (as the model's attribute bindings). */
    const selfClass = (n: Node): Node | null => {
      const obj = n.childForFieldName('object');
      return obj?.type === 'identifier' && (obj.text === 'self' || obj.text === 'cls') ? sema.enclosingClass(n) : null;
    };
    const attrMemo = new Map<string, Site[]>();
    const attributeOrigins = (attr: string, depth: number, cls: Node | null): Site[] => {
      // `self.device` in `class A` reads A's `self.device = ...`, not another class's (d2l SSD: a loss class's dead
      // `device="cuda:0"` default reported through a sibling class's `self.device`)
      const key = `${cls?.id ?? -1}\0${attr}`;
      const cached = attrMemo.get(key);
      if (cached) return cached;
      attrMemo.set(key, []);
      const out: Site[] = [];
      const inScope = (a: Node) => !cls || sema.enclosingClass(a)?.id === cls.id;
      for (const a of sema.attributeAssignments(attr)) {
        const right = a.childForFieldName('right');
        if (!right || !inScope(a)) continue;
        if (cls && !/^(self|cls)$/.test(a.childForFieldName('left')?.childForFieldName('object')?.text ?? '')) continue;
        out.push(...origins(right, depth + 1));
      }
      // class-body fields (`device = "cuda"` in a config class or dataclass)
      for (const right of sema.bindings(attr)) {
        const a = right.parent;
        if (a?.type !== 'assignment' || a.childForFieldName('left')?.type !== 'identifier' || !sema.enclosingClass(a) || sema.enclosingFunction(a) || !inScope(a)) continue;
        out.push(...origins(right, depth + 1).map((s) => ({ ...s, defTime: true })));
      }
      if (!cls) for (const { def, call } of cudaArgparseDefaults().get(attr) ?? []) out.push({ node: def, defTime: true, argparse: call });
      attrMemo.set(key, out);
      return out;
    };

    // ---- sinks
    const inline: { arg: Node; call: Node; int: boolean }[] = [];
    const sources = new Map<number, { site: Site; sink: Node; kind: SinkKind }>();
    const visitSink = (arg: Node | null | undefined, call: Node, kind: SinkKind) => {
      if (!arg || sema.inXlaAwareBranch(call) || cudaGuarded(call)) return;
      // a CUDA device written inside `map_location=`, `device_ids=`, `set_device(...)` or `autocast(device_type=...)` is
      // reported there by the rule that owns that call (TPU602, TPU504, TPU104, TPU301): once per construct
      if (kind === 'reach' && isDirect(arg)) return;
      if (kind !== 'reach' && isDirect(arg)) {
        inline.push({ arg, call, int: false });
        return;
      }
      if (kind !== 'reach' && isIntDevice(arg) && (kind === 'to' || (sema.callee(call) ?? '').startsWith('torch.'))) {
        inline.push({ arg, call, int: true });
        return;
      }
      for (const site of origins(arg)) {
        // name the first plain sink (`.to(device)`, `device=`) rather than one that another rule reports
        const prev = sources.get(site.node.id);
        if (!prev || (prev.kind === 'reach' && kind !== 'reach')) sources.set(site.node.id, { site, sink: call, kind });
      }
    };
    // one pass over the calls: device sinks, and the Lightning entry points reported below
    const lightning: Node[] = [];
    for (const call of sema.nodes('call')) {
      const { positional, keywords } = callArgs(call);
      const callee = sema.callee(call);
      const to = !callee && methodName(call) === 'to';
      if (to && receiver(call)) visitSink(positional[0], call, 'to');
      if (keywords.size) {
        if (keywords.has('device')) visitSink(kwValue(keywords.get('device')), call, to ? 'to' : 'device-kw');
        visitSink(kwValue(keywords.get('map_location')), call, 'reach');
        visitSink(kwValue(keywords.get('output_device')), call, 'reach');
        const ids = kwValue(keywords.get('device_ids'));
        if (ids?.type === 'list') for (const el of ids.namedChildren) visitSink(el, call, 'reach');
        if (keywords.has('accelerator') && ((callee && LIGHTNING.test(callee)) || lightningSubclass(ctx, call))) lightning.push(call);
      }
      if (!callee || !callee.startsWith('torch.')) continue;
      if (callee === 'torch.cuda.set_device') visitSink(positional[0], call, 'reach');
      else if (/^torch\.(amp\.|cuda\.amp\.)?autocast$/.test(callee)) visitSink(kwValue(keywords.get('device_type')) ?? positional[0], call, 'reach');
    }

    // ---- report inline expressions
    const intGroups = new Map<string, { arg: Node; fix: ReturnType<typeof fixFrom> }[]>();
    for (const { arg, call, int } of inline) {
      const method = sema.moduleMethod(arg);
      const cls = method ? sema.enclosingClass(arg)?.childForFieldName('name')?.text ?? 'Module' : '';
      if (method === 'forward' || method === '__init__') {
        reportInModule(ctx, arg, call, method, cls);
        continue;
      }
      // torch.Generator(device=<XLA device>) raises on torch_xla 2.3-2.9 (TPU113): no device rewrite is right here
      if (isGenerator(sema, call)) {
        ctx.report(arg, { message: `\`${short(arg.text)}\` makes a CUDA generator; a TPU host has no CUDA device, and an XLA generator raises (TPU113): draw from a CPU generator and move the result`, fix: null });
        continue;
      }
      const dev = ctx.idiom.device();
      // an int other than 0, or one element of a list of GPUs, picks among several: review by hand
      const ordinal = arg.type === 'call' && sema.callee(arg) === 'torch.device' ? callArgs(arg).positional[0] : arg;
      const selectsGpu = (int && arg.type === 'integer' && arg.text !== '0') || ordinal?.type === 'subscript' || (arg.type === 'string' && /^cuda:[1-9]/.test(stringContent(arg) ?? ''));
      // `rank` used as the device at several sinks of one function (`.to(rank)`, `device=rank`): one problem, one finding
      // (on the first; its fix replaces every use), the other sinks related
      if (int && arg.type === 'identifier') {
        const key = `${scopeOf(sema, arg).id}\0${arg.text}`;
        // dual-path: `accel.device()` on CUDA is `cuda:<local_rank()>`, which is 0 before init_process_group when
        // mp.spawn hands the index in (no LOCAL_RANK): every rank would land on cuda:0. The CUDA path keeps its
        // own ordinal; only XLA moves to the XLA device (as TPU101 does for `.cuda(rank)`).
        let fix: ReturnType<typeof fixFrom>;
        if (ctx.idiom.dualPath) {
          const x = ctx.idiom.isXla();
          const bare = arg.parent?.type === 'argument_list' || arg.parent?.type === 'keyword_argument';
          const text = `${dev.text} if ${x.text} else ${arg.text}`;
          fix = {
            edits: [{ start: arg.startIndex, end: arg.endIndex, text: bare ? text : `(${text})` }],
            imports: [...dev.imports, ...x.imports],
            needsAccel: true,
            applicability: 'safe' as const,
            title: `Use \`${dev.text}\` on XLA, keep \`${arg.text}\` on CUDA`,
          };
        } else {
          fix = fixFrom(ctx, [{ start: arg.startIndex, end: arg.endIndex, text: dev.text }], dev, 'safe', `Use \`${dev.text}\``);
        }
        intGroups.set(key, [...(intGroups.get(key) ?? []), { arg, fix }]);
        continue;
      }
      ctx.report(arg, {
        message: int
          ? `\`${short(arg.text, 30)}\` as a device means \`cuda:${arg.type === 'integer' ? arg.text : `<${short(arg.text, 30)}>`}\`; a TPU host has no CUDA device`
          : cpuFallback(sema, arg)
            ? `\`${short(arg.text)}\` falls back to the CPU: on a TPU host \`torch.cuda.is_available()\` is False, so the program silently runs on the CPU`
            : `\`${short(arg.text)}\` is a CUDA device; a TPU host has none`,
        fix: fixFrom(ctx, [{ start: arg.startIndex, end: arg.endIndex, text: dev.text }], dev, selectsGpu ? 'unsafe' : 'safe', `Use \`${dev.text}\``),
      });
    }

    for (const group of intGroups.values()) {
      const [first, ...rest] = group;
      const fixes = group.map((g) => g.fix);
      const fix = fixes.every((f) => !!f) && fixes.length > 1
        ? { ...fixes[0]!, edits: fixes.flatMap((f) => f!.edits), title: `${fixes[0]!.title} (${group.length} uses in this function)` }
        : first.fix;
      ctx.report(first.arg, {
        message: `\`${short(first.arg.text, 30)}\` as a device means \`cuda:<${short(first.arg.text, 30)}>\`; a TPU host has no CUDA device`,
        fix: fixes.every((f) => !!f) ? fix : null,
        related: rest.length ? rest.map((g) => ({ start: g.arg.startIndex, end: g.arg.endIndex, message: `\`${g.arg.text}\` as a device here too` })) : undefined,
      });
    }

    // ---- report named sources once, where they are written
    const reported = inline.map((i) => i.arg);
    const externalSeen = new Map<string, { start: number; end: number; message: string }[]>();
    const pendingExternal: { at: Node; more: { start: number; end: number; message: string }[]; opts: { message: string; fix: null; related: { start: number; end: number; path?: string; message: string }[] } }[] = [];
    for (const { site, sink } of sources.values()) {
      const n = site.node;
      if (reported.some((r) => r.id === n.id || isAncestor(r, n) || isAncestor(n, r))) continue;
      if (sema.inXlaAwareBranch(n)) continue;
      if (gpuSelfTest(sema, n)) continue;
      if (guardedAmongOthers(ctx.model, n) || cudaRemap(sema, n)) continue;
      reported.push(n);
      const sinkText = short(sink.text, 40);
      if (site.external) {
        const x = site.external;
        // one finding per helper device in this file: its other uses here are related locations of the first
        const key = `${x.path}\0${x.made.startIndex}`;
        const first = externalSeen.get(key);
        if (first) {
          first.push({ start: n.startIndex, end: n.endIndex, message: `\`${x.name}()\` also reaches \`${sinkText}\`` });
          continue;
        }
        const more: { start: number; end: number; message: string }[] = [];
        externalSeen.set(key, more);
        const file = x.path.split('/').pop() ?? x.path;
        const where = `${file}:${x.sema.text.slice(0, x.made.startIndex).split('\n').length}`;
        pendingExternal.push({ at: n, more, opts: {
          message: cpuFallback(x.sema, x.made) || cudaGuarded(x.made)
            ? `\`${x.name}()\` returns CUDA or else the CPU (\`${short(x.made.text, 40)}\`, ${where}) and reaches \`${sinkText}\`: on a TPU host \`torch.cuda.is_available()\` is False, so the program silently runs on the CPU`
            : `\`${x.name}()\` returns a CUDA device (\`${short(x.made.text, 40)}\`, ${where}) and reaches \`${sinkText}\`; a TPU host has none`,
          // the device is chosen in the other module: change it there (a rewrite here would shadow the helper's choice)
          fix: null,
          related: [{ start: x.made.startIndex, end: x.made.endIndex, path: x.path, message: `the CUDA device \`${x.name}()\` returns` }],
        } });
        continue;
      }
      const holder = holderName(n, site);
      const method = sema.moduleMethod(n);
      if (method === 'forward') {
        const dev = forwardDevice(sema, n);
        ctx.report(n, {
          message: `hard-coded CUDA device in \`forward\` (\`${short(n.text)}\`, used by \`${sinkText}\`): the module is no longer device-agnostic`,
          fix: fixFrom(ctx, [{ start: n.startIndex, end: n.endIndex, text: dev }], { text: dev, imports: [], needsAccel: false }, 'safe', `Use \`${dev}\``),
        });
        continue;
      }
      ctx.report(n, {
        message: cpuFallback(sema, n) || cudaGuarded(n)
          ? `${holder ? `\`${holder}\` ${holder.endsWith(')') ? 'returns' : 'is'}` : 'this is'} CUDA or else the CPU (\`${short(n.text, 40)}\`) and reaches \`${sinkText}\`: on a TPU host \`torch.cuda.is_available()\` is False, so the program silently runs on the CPU`
          : `${holder ? `\`${holder}\` ${holder.endsWith(')') ? 'returns' : 'is set to'}` : 'this is'} a CUDA device (\`${short(n.text, 40)}\`) and reaches \`${sinkText}\`; a TPU host has none`,
        // a device that reaches a torch.Generator would make an XLA generator, which raises (TPU113)
        fix: isGenerator(sema, sink) ? null : sourceFix(ctx, site),
      });
    }
    for (const { at, more, opts } of pendingExternal) ctx.report(at, { ...opts, related: [...opts.related, ...more] });

    // ---- a CUDA device stored in a device holder that no sink of this file reads: a config constant
    // (`DEVICE = "cuda" if torch.cuda.is_available() else "cpu"` read as `config.DEVICE` by the training script), an
    // attribute (`self.device = torch.device("cuda:{}".format(gpu_ids[0])) if gpu_ids else ...` in a base class whose
    // subclasses move the data, `args.device = device` handed to the trainer), or a local the function hands on to a call
    for (const a of sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (!left || !right || (left.type !== 'identifier' && left.type !== 'attribute') || !HOLDER.test(lastName(left))) continue;
      if (!isDirect(right) || reported.some((r) => r.id === right.id || isAncestor(r, right) || isAncestor(right, r))) continue;
      if (sema.inXlaAwareBranch(right) || gpuSelfTest(sema, right) || guardedAmongOthers(ctx.model, right) || sema.moduleMethod(right) === 'forward') continue;
      // CUDA-only code (`if not torch.cuda.is_available(): return`) never runs on a TPU host, except the CUDA arm of a
      // device choice (`if torch.cuda.is_available(): DEVICE = "cuda"`), whose else arm a TPU host takes
      if (cudaGuarded(right) && !availabilityArm(a)) continue;
      // a local that is neither handed on (stored on an attribute, passed to a call) nor module-level: its reads were the sinks above
      if (left.type === 'identifier' && ((sema.enclosingFunction(a) && !handedOn(sema, a, left.text)) || overwritten(right, left.text))) continue;
      // a device picker (it returns the holder) that tests CUDA availability (`if device == "auto": device = "cuda"` ... `if ... not
      // th.cuda.is_available(): return th.device("cpu")`, stable-baselines3 get_device): TPU103 reports its fallback
      const owner = left.type === 'identifier' ? sema.enclosingFunction(a) : null;
      if (owner && AVAILABILITY.test(owner.text) && sema.within('return_statement', owner).some((r) => r.namedChildren[0]?.text === left.text)) continue;
      reported.push(right);
      const site: Site = { node: right, defTime: !sema.enclosingFunction(a) };
      ctx.report(right, {
        message: cpuFallback(sema, right) || cudaGuarded(right)
          ? `\`${short(left.text, 30)}\` is CUDA or else the CPU (\`${short(right.text, 40)}\`): on a TPU host \`torch.cuda.is_available()\` is False, so the program silently runs on the CPU`
          : `\`${short(left.text, 30)}\` is set to a CUDA device (\`${short(right.text, 40)}\`); a TPU host has none`,
        fix: sourceFix(ctx, site),
      });
    }

    // ---- `parser.add_argument("--device", default="cuda", choices=["cpu", "npu", "cuda"])` (wenet): even when the value is
    // consumed in another module, no command line can select the XLA device
    for (const list of cudaArgparseDefaults().values()) {
      for (const { def, call } of list) {
        const flag = callArgs(call).positional.find((x) => x.type === 'string');
        const choices = kwValue(callArgs(call).keywords.get('choices'));
        if (!flag || !/(^|[-_])(device|accelerator)s?$/.test(stringContent(flag) ?? '') || !choices || (choices.type !== 'list' && choices.type !== 'tuple')) continue;
        if (mentionsXla(choices.text) || /['"]tpu['"]/.test(choices.text) || reported.some((r) => r.id === def.id) || sema.inXlaAwareBranch(call)) continue;
        reported.push(def);
        const site: Site = { node: def, defTime: true, argparse: call };
        ctx.report(def, {
          message: `\`${stringContent(flag)}\` defaults to ${def.text} and its choices ${short(choices.text, 40)} name no ${ctx.idiom.profile === 'torchtpu' ? 'TPU' : 'XLA'} device: no command line runs this script on a TPU host`,
          fix: sourceFix(ctx, site),
        });
      }
    }

    // ---- `init_device_mesh("cuda", ...)`: a DTensor mesh of CUDA devices (hybrid-sharded FSDP, tensor parallel)
    for (const call of sema.nodes('call')) {
      if (!/^torch\.distributed\.(device_mesh\.|tensor\.|_tensor\.)?init_device_mesh$/.test(sema.callee(call) ?? '')) continue;
      if (sema.inXlaAwareBranch(call) || cudaGuarded(call)) continue;
      const { positional, keywords } = callArgs(call);
      const arg = positional[0] ?? kwValue(keywords.get('device_type'));
      if (!arg) continue;
      const at = isDirect(arg) || (arg.type === 'string' && /^(cuda|gpu)$/.test(stringContent(arg) ?? '')) ? arg : origins(arg).find((o) => !o.external)?.node;
      if (!at || reported.some((r) => r.id === at.id)) continue;
      reported.push(at);
      ctx.report(at, {
        message: ctx.idiom.profile === 'torchtpu'
          ? `\`init_device_mesh(${short(arg.text, 20)}, ...)\` builds a mesh of CUDA devices (and NCCL groups); a TPU host has none, and no replacement is known: no fix`
          : `\`init_device_mesh(${short(arg.text, 20)}, ...)\` builds a mesh of CUDA devices (and NCCL groups); a TPU host has none. torch_xla's meshes are SPMD ones (\`torch_xla.distributed.spmd.Mesh\`, or a DTensor \`DeviceMesh("xla", ...)\` for \`xla_distribute_module\`); no replacement is known for a torch FSDP/HSDP mesh: no fix`,
        fix: null,
      });
    }

    // ---- Hugging Face `from_pretrained(device_map=...)`: accelerate's placement knows GPUs (and NPU/XPU/MLU), not XLA
    reportDeviceMaps(ctx, isRankName);

    // ---- Lightning `Trainer(accelerator="gpu")` / `Fabric(accelerator="cuda")`: raises when the Trainer is built on a TPU host
    for (const call of lightning) {
      const { keywords } = callArgs(call);
      const acc = kwValue(keywords.get('accelerator'));
      const name = acc ? stringContent(acc)?.toLowerCase() : null;
      if (!acc || (name !== 'gpu' && name !== 'cuda') || sema.inXlaAwareBranch(call)) continue;
      // GPU index lists and GPU strategies need their own change on TPU: the flag alone is not the whole fix
      const devices = kwValue(keywords.get('devices'));
      const strategy = kwValue(keywords.get('strategy'));
      const partial = (devices && devices.type !== 'integer' && !(devices.type === 'string' && stringContent(devices) === 'auto')) || !!strategy;
      const q = acc.text[acc.text.length - 1];
      ctx.report(acc, {
        message: `Lightning \`accelerator=${acc.text}\` raises on a TPU host ("\`CUDAAccelerator\` can not run on your system"); use \`"auto"\` (TPU first, then CUDA) or \`"tpu"\``,
        fix: { title: `Use \`${q}auto${q}\``, applicability: partial ? 'unsafe' : 'safe', edits: [{ start: acc.startIndex, end: acc.endIndex, text: `${q}auto${q}` }] },
      });
    }
  },
});

/**
 * A project class built on Lightning's launchers (`class Trainer(LightningLite)` in src/trainer.py, called as
 * `Trainer(devices=N, accelerator="gpu")`): its `accelerator=` is Lightning's, which raises for "gpu" on a TPU host.
 */
function lightningSubclass(ctx: RuleContext, call: Node): boolean {
  const fn = call.childForFieldName('function');
  if (fn?.type !== 'identifier' && fn?.type !== 'attribute') return false;
  const local = fn.type === 'identifier' ? ctx.sema.nodes('class_definition').find((c) => c.childForFieldName('name')?.text === fn.text) : undefined;
  const r = local ? null : ctx.project?.resolveCall(call, ctx.sema, ctx.path);
  const cls = local ?? (r?.kind === 'class' ? r.def : null);
  const supers = cls?.childForFieldName('superclasses');
  if (!supers) return false;
  const sema = local ? ctx.sema : r!.module.sema;
  return supers.namedChildren.some((b) => !!b && LIGHTNING_BASE.test(sema.resolve(b) ?? ''));
}
const LIGHTNING_BASE = /^(lightning|lightning\.pytorch|pytorch_lightning|lightning\.fabric|lightning_fabric)(\.lite)?\.(Trainer|Fabric|LightningLite)$/;

/** `device_map` strings that ask accelerate to spread the model over the GPUs it finds. */
const AUTO_MAP = /^(auto|balanced|balanced_low_0|sequential)$/;

/**
 * `AutoModel.from_pretrained(..., device_map="auto")` or `device_map={"": local_rank}` (qlora): accelerate's
 * `get_max_memory` counts CUDA (and NPU/XPU/MLU) devices only, so on a TPU host "auto" puts every layer on the CPU, and an
 * int or `"cuda:N"` entry names a CUDA device. Reported where the map is set (the literal, or each binding of the name
 * passed), once per call. No fix: load on the CPU and move the model with `.to(device)` (accelerate has no XLA map).
 */
function reportDeviceMaps(ctx: RuleContext, isRankName: (n: Node) => boolean): void {
  const sema = ctx.sema;
  const seen = new Set<number>();
  const bad = (v: Node): string | null => {
    if (v.type === 'string') {
      const t = stringContent(v) ?? '';
      if (AUTO_MAP.test(t)) return `\`device_map=${v.text}\` spreads the model over the GPUs accelerate finds: a TPU host has none, so every layer loads on the CPU`;
      if (/^cuda(:\d+)?$/.test(t)) return `\`device_map=${v.text}\` places the model on a CUDA device; a TPU host has none`;
      return null;
    }
    if (v.type === 'integer' || (v.type === 'identifier' && isRankName(v))) return `\`device_map=${short(v.text)}\` names CUDA device \`${v.text}\`; a TPU host has none`;
    if (v.type === 'dictionary') {
      for (const pair of v.namedChildren) {
        const val = pair?.type === 'pair' ? pair.childForFieldName('value') : null;
        if (!val) continue;
        if (val.type === 'integer' || isRankName(val) || (val.type === 'string' && /^cuda(:\d+)?$/.test(stringContent(val) ?? ''))) {
          return `\`${short(v.text, 30)}\` maps modules to CUDA device \`${val.text}\` (accelerate reads an int as a CUDA ordinal); a TPU host has none`;
        }
      }
    }
    return null;
  };
  for (const kw of sema.nodes('keyword_argument')) {
    if (kw.childForFieldName('name')?.text !== 'device_map') continue;
    const call = kw.parent?.parent;
    if (call?.type !== 'call' || !/(^|\.)from_pretrained$/.test(call.childForFieldName('function')?.text ?? '')) continue;
    if (sema.inXlaAwareBranch(call) || cudaGuarded(call)) continue;
    const value = kw.childForFieldName('value');
    if (!value) continue;
    let sources: Node[] = [value];
    if (value.type === 'identifier') {
      const fn = sema.enclosingFunction(call);
      sources = sema.bindings(value.text).filter((b) => (sema.enclosingFunction(b)?.id ?? -1) === (fn?.id ?? -1));
    }
    const hits = sources.map((n) => ({ n, why: bad(n) })).filter((h): h is { n: Node; why: string } => !!h.why && !sema.inXlaAwareBranch(h.n) && !cudaGuarded(h.n));
    if (!hits.length || seen.has(hits[0].n.id)) continue;
    hits.forEach((h) => seen.add(h.n.id));
    const [first, ...more] = hits;
    ctx.report(first.n, {
      message: `${first.why}; load it without \`device_map\` and move it with \`.to(device)\` (accelerate's device maps know no XLA device)`,
      fix: null,
      related: [
        ...more.map((h) => ({ start: h.n.startIndex, end: h.n.endIndex, message: 'another device map this call receives' })),
        ...(value.id !== first.n.id ? [{ start: call.startIndex, end: call.endIndex, message: 'the model load' }] : []),
      ],
    });
  }
}

/**
 * `device = torch.device("cuda" if ... else "cpu")` followed, in the same block and before any read of `device`, by an
 * unconditional `device = xm.xla_device()`: the CUDA value is never used (pytorch/xla kaggle RNN notebook).
 */
function overwrittenBeforeRead(sema: Semantics, value: Node, name: string): boolean {
  const a = value.parent;
  if (a?.type !== 'assignment' || a.childForFieldName('left')?.text !== name || a.childForFieldName('right')?.id !== value.id) return false;
  const stmt = a.parent;
  if (stmt?.type !== 'expression_statement') return false;
  // the identifiers spelled `name`, in document order: a node mentions it when one lies within its range
  const uses = sema.identifiersNamed(name);
  const mentions = (n: Node | null | undefined) => {
    if (!n) return false;
    let lo = 0;
    let hi = uses.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (uses[mid].startIndex < n.startIndex) lo = mid + 1;
      else hi = mid;
    }
    return lo < uses.length && uses[lo].endIndex <= n.endIndex;
  };
  for (let s = stmt.nextNamedSibling; s; s = s.nextNamedSibling) {
    if (s.type === 'comment') continue;
    const next = s.type === 'expression_statement' ? s.namedChildren[0] : null;
    if (next?.type === 'assignment' && next.childForFieldName('left')?.text === name) return !mentions(next.childForFieldName('right'));
    if (mentions(s)) return false;
  }
  return false;
}

function fixFrom(ctx: RuleContext, edits: Edit[], snip: Snippet, applicability: 'safe' | 'unsafe', title: string) {
  return { edits, imports: snip.imports, needsAccel: snip.needsAccel, applicability, title };
}

/** The variable, attribute or option that holds a source (for the message). */
/** What TPU102 reports in a helper module analysed alone (memoized per parsed module). */
const helperFindings = new WeakMap<object, { start: number; end: number }[]>();

/**
 * The CUDA device expression a helper of another project module returns (`def select_device(): return torch.device("cuda")`),
 * unless the helper's own file already reports it (then that finding is the one to fix, and this one would repeat it).
 */
function externalCudaReturn(ctx: RuleContext, call: Node): Site['external'] | null {
  const r = ctx.project?.resolveCall(call, ctx.sema, ctx.path);
  if (!r || r.kind !== 'function') return null;
  const xs = r.module.sema;
  // the helper's module answers through its own program model (the project resolver's, shared across files)
  const t = ctx.model.resolveCall(call);
  if (!t || t.model === ctx.model || t.def.id !== r.def.id) return null;
  const xm = t.model;
  let made: Node | null = null;
  for (const ret of xs.within('return_statement', r.def)) {
    if (xs.enclosingFunction(ret)?.id !== r.def.id) continue;
    const v = ret.namedChildren[0];
    if (!v || !xm.namesCuda(v) || xs.inXlaAwareBranch(ret)) continue;
    // `device = torch.device("cuda"); return device`: point at where it is made, in the helper
    made = v.type === 'identifier' ? xs.bindings(v.text).find((b) => xs.enclosingFunction(b)?.id === r.def.id && xm.namesCuda(b)) ?? v : v;
    break;
  }
  // a picker that sets its CUDA device in an `is_available()` branch doing more than choosing it and falls back to another
  // device (yolov5 select_device: `if not cpu and torch.cuda.is_available(): ...; arg = "cuda:0" else: arg = "cpu"`,
  // `return torch.device(arg)`): TPU103 reports the check in the helper, but the caller's sink is where the program silently
  // runs on the CPU of a TPU host, so report the call, pointing at the CUDA arm
  const fallback = pickerCudaArm(xm, xs, r.def);
  if (fallback) made = fallback;
  if (!made) return null;
  let own = helperFindings.get(r.module);
  if (!own) {
    const a = analyze(pythonDocument(r.path, r.module.text), [rule], { ...ctx.options, project: null, select: [], ignore: [], deadline: undefined });
    a.tree?.delete();
    helperFindings.set(r.module, (own = a.findings.map((f) => ({ start: f.start, end: f.end }))));
  }
  // the helper's own file reports its CUDA device (TPU102), or the helper sets it in an `is_available()` branch that does
  // more than choose it, which TPU103 reports there: fixing that fixes this call
  const def = r.def;
  if (own.some((f) => f.start >= def.startIndex && f.end <= def.endIndex)) return null;
  if (!fallback && xs.within('assignment', def).some((a) => !!a.childForFieldName('right') && guardedAmongOthers(xm, a.childForFieldName('right')!))) return null;
  return { path: r.path, made, sema: xs, name: r.def.childForFieldName('name')?.text ?? 'helper' };
}

function holderName(n: Node, site: Site): string | null {
  if (site.argparse) {
    const flag = callArgs(site.argparse).positional.find((x) => x.type === 'string');
    return flag ? stringContent(flag) : null;
  }
  for (let p: Node | null = n.parent; p; p = p.parent) {
    if (p.type === 'assignment') return p.childForFieldName('left')?.text ?? null;
    if (p.type === 'default_parameter' || p.type === 'typed_default_parameter') return p.childForFieldName('name')?.text ?? null;
    if (p.type === 'return_statement') {
      for (let f: Node | null = p.parent; f; f = f.parent) if (f.type === 'function_definition') return `${f.childForFieldName('name')?.text}()`;
    }
    if (p.type === 'expression_statement' || p.type === 'block' || p.type === 'call') break;
  }
  return null;
}

/** `x.device` for the first input of `forward`, else the module's own parameters' device. */
function forwardDevice(sema: RuleContext['sema'], n: Node): string {
  const fn = sema.enclosingFunction(n);
  const params = (fn?.childForFieldName('parameters')?.namedChildren ?? []).filter((p): p is Node => !!p);
  const first = params.find((p, i) => i > 0 && (p.type === 'identifier' || p.type === 'typed_parameter' || p.type === 'default_parameter' || p.type === 'typed_default_parameter'));
  const name = first ? (first.type === 'identifier' ? first.text : first.childForFieldName('name')?.text ?? first.namedChildren[0]?.text) : null;
  return name ? `${name}.device` : 'next(self.parameters()).device';
}

/** Hard-coded device inside a module: `forward` uses the input's device; `__init__` leaves placement to `model.to(device)`. */
function reportInModule(ctx: RuleContext, arg: Node, call: Node, method: string, cls: string): void {
  const where = `\`${cls}.${method}\``;
  if (method === 'forward') {
    const dev = forwardDevice(ctx.sema, arg);
    ctx.report(arg, {
      message: `hard-coded CUDA device \`${short(arg.text, 30)}\` in ${where}: the module is no longer device-agnostic`,
      fix: fixFrom(ctx, [{ start: arg.startIndex, end: arg.endIndex, text: dev }], { text: dev, imports: [], needsAccel: false }, 'safe', `Use \`${dev}\``),
    });
    return;
  }
  let edit: Edit | null = null;
  const kw = arg.parent?.type === 'keyword_argument' ? arg.parent : null;
  if (kw) edit = removeArgument(kw);
  else if (methodName(call) === 'to' && callArgs(call).positional.length === 1 && !callArgs(call).keywords.size) {
    const recv = receiver(call)!;
    edit = { start: call.startIndex, end: call.endIndex, text: recv.text };
  }
  ctx.report(arg, {
    message: `hard-coded CUDA device \`${short(arg.text, 30)}\` in ${where}: the module is no longer device-agnostic`,
    fix: edit ? { edits: [edit], applicability: 'unsafe', title: 'Leave placement to `model.to(device)`' } : null,
  });
}

/** The replacement for a named source, typed like the original (string or torch.device). */
function sourceFix(ctx: RuleContext, site: Site) {
  const sema = ctx.sema;
  const n = site.node;
  const idiom = ctx.idiom;
  const isDeviceObject = (x: Node): boolean => {
    if (x.type === 'parenthesized_expression') return !!x.namedChildren[0] && isDeviceObject(x.namedChildren[0]);
    if (x.type === 'conditional_expression') return [x.namedChildren[0], x.namedChildren[2]].some((a) => !!a && a.type !== 'string' && isDeviceObject(a));
    return x.type === 'call' && /^torch\.(device|cuda\.current_device)$/.test(sema.callee(x) ?? '');
  };
  const indexed = (x: Node): boolean => (x.type === 'string' && isFString(x)) || x.type === 'binary_operator' || methodName(x) === 'format';
  let snip: Snippet;
  if (isDeviceObject(n)) {
    if (site.defTime) {
      const t = idiom.deviceType();
      snip = { ...t, text: `torch.device(${t.text})` };
    } else snip = idiom.device();
  } else if (idiom.dualPath && !site.defTime && indexed(n)) {
    const d = idiom.device();
    snip = { ...d, text: `str(${d.text})` };
  } else snip = withQuotes(idiom.deviceType(), n.type === 'string' ? n : n.descendantsOfType('string')[0] ?? n);

  // `"cuda" if torch.cuda.is_available() else "cpu"` is replaced whole; a ternary on a user flag keeps the choice.
  let target: Node = n;
  let applicability: 'safe' | 'unsafe' = 'safe';
  const stripParens = (x: Node): Node => (x.type === 'parenthesized_expression' && x.namedChildren[0] ? stripParens(x.namedChildren[0]) : x);
  const tern = [n, ...(n.type === 'call' ? callArgs(n).positional.slice(0, 1) : [])].map(stripParens).find((x) => x.type === 'conditional_expression');
  if (tern && !AVAILABILITY.test(tern.namedChildren[1]?.text ?? '')) {
    const arm = [tern.namedChildren[0], tern.namedChildren[2]].find((a) => !!a && ctx.model.namesCuda(a));
    if (!arm) return null;
    target = arm;
    applicability = 'unsafe';
    if (tern.id !== n.id) return null; // torch.device("cuda" if flag else "cpu"): keep as is, review by hand
  }
  const extra: Edit[] = [];
  if (site.argparse && callArgs(site.argparse).keywords.has('choices')) {
    // argparse checks command-line values (not defaults) against `choices`: offer the XLA device there too
    applicability = 'unsafe';
    const choices = kwValue(callArgs(site.argparse).keywords.get('choices'));
    const items = choices && (choices.type === 'list' || choices.type === 'tuple') ? choices.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment') : [];
    const literal = idiom.profile === 'torchtpu' ? '"tpu"' : '"xla"';
    const choice = items[0]?.type === 'string' ? withQuotes({ text: literal, imports: [], needsAccel: false }, items[0]).text : literal;
    if (items.length && items.every((c) => c.type === 'string') && !items.some((c) => c.text.slice(1, -1) === choice.slice(1, -1))) {
      extra.push({ start: items[items.length - 1].endIndex, end: items[items.length - 1].endIndex, text: `, ${choice}` });
    }
  }
  if (target.type === 'string' && /^cuda:[1-9]/.test(stringContent(target) ?? '')) applicability = 'unsafe';

  // `if torch.cuda.is_available(): device = "cuda" [else: device = "cpu"]` becomes one assignment.
  if (cudaGuarded(n)) {
    const edit = ifPairRewrite(ctx, n, snip.text);
    if (!edit) return null;
    return fixFrom(ctx, [edit], snip, 'safe', `Use \`${snip.text}\``);
  }
  return fixFrom(ctx, [{ start: target.startIndex, end: target.endIndex, text: snip.text }, ...extra], snip, applicability, `Use \`${snip.text}\``);
}

/** Rewrites `if <cuda available>: X = <cuda>` (with an optional `else: X = <other>`) into `X = <replacement>`. */
function ifPairRewrite(ctx: RuleContext, n: Node, replacement: string): Edit | null {
  const assign = n.parent;
  if (assign?.type !== 'assignment' || assign.childForFieldName('right')?.id !== n.id) return null;
  const stmt = assign.parent;
  const block = stmt?.parent;
  const ifs = block?.parent;
  if (!stmt || stmt.type !== 'expression_statement' || block?.type !== 'block' || ifs?.type !== 'if_statement') return null;
  if (ifs.childForFieldName('consequence')?.id !== block.id || !AVAILABILITY.test(ifs.childForFieldName('condition')?.text ?? '')) return null;
  const body = (b: Node | null | undefined) => (b?.namedChildren ?? []).filter((s): s is Node => !!s && s.type !== 'comment');
  if (body(block).length !== 1) return null;
  const left = assign.childForFieldName('left')!.text;
  const alts = ifs.childrenForFieldName('alternative').filter((a): a is Node => !!a);
  if (alts.length > 1 || alts.some((a) => a.type !== 'else_clause')) return null;
  if (alts.length === 1) {
    const other = body(alts[0].childForFieldName('body'));
    const a = other[0]?.namedChildren[0];
    if (other.length !== 1 || a?.type !== 'assignment' || a.childForFieldName('left')?.text !== left) return null;
  }
  return { start: ifs.startIndex, end: ifs.endIndex, text: `${left} = ${replacement}` };
}

/**
 * A CUDA device set inside `if torch.cuda.is_available():` next to other work (`arg = "cuda:0"` after GPU property
 * logging, as in yolov5's select_device): on a TPU host the branch is not taken, and TPU103 reports the check there
 * (it leaves only a branch of nothing but CUDA assignments, a device picker, to this rule), so a finding here repeats it.
 */
function guardedAmongOthers(model: ProgramModel, n: Node): boolean {
  const assign = n.parent;
  if (assign?.type !== 'assignment' || assign.childForFieldName('right')?.id !== n.id) return false;
  const block = assign.parent?.type === 'expression_statement' ? assign.parent.parent : null;
  const owner = block?.parent;
  if (block?.type !== 'block' || (owner?.type !== 'if_statement' && owner?.type !== 'elif_clause') || owner.childForFieldName('consequence')?.id !== block.id) return false;
  if (!cudaGuarded(n)) return false;
  const body = block.namedChildren.filter((s): s is Node => !!s && s.type !== 'comment');
  return !body.every((s) => {
    const a = s.namedChildren[0];
    return s.type === 'expression_statement' && a?.type === 'assignment' && model.namesCuda(a.childForFieldName('right'));
  });
}

/**
 * The CUDA value a device picker `def` sets in the arm of `if [... and] torch.cuda.is_available():` that does more than
 * choose it (see `guardedAmongOthers`), when the `if` has an `else`/`elif` arm (the fallback a TPU host takes) and a
 * return of `def` reads the assigned name (`return torch.device(arg)`, `return arg`); else null.
 */
function pickerCudaArm(model: ProgramModel, sema: Semantics, def: Node): Node | null {
  for (const a of sema.within('assignment', def)) {
    const right = a.childForFieldName('right');
    const left = a.childForFieldName('left');
    if (!right || left?.type !== 'identifier' || sema.enclosingFunction(a)?.id !== def.id || !guardedAmongOthers(model, right)) continue;
    const owner = a.parent?.parent?.parent;
    if (owner?.type !== 'if_statement') continue;
    const cond = owner.childForFieldName('condition')?.text ?? '';
    if (!/\bcuda\.is_available\(\)/.test(cond) || /\bnot\s+(\w+\.)*cuda\.is_available/.test(cond) || /\bor\b/.test(cond)) continue;
    if (!owner.namedChildren.some((c) => c?.type === 'else_clause' || c?.type === 'elif_clause')) continue;
    const name = new RegExp(`\\b${left.text}\\b`);
    const reads = sema.within('return_statement', def).some((r) => sema.enclosingFunction(r)?.id === def.id && !!r.namedChildren[0] && name.test(r.namedChildren[0].text));
    if (reads) return right;
  }
  return null;
}

/** `X = ...` is the only statement of the consequence of an `if torch.cuda.is_available():` (a device choice). */
function availabilityArm(a: Node): boolean {
  const stmt = a.parent;
  const block = stmt?.type === 'expression_statement' ? stmt.parent : null;
  const ifs = block?.parent;
  return block?.type === 'block' && ifs?.type === 'if_statement' && ifs.childForFieldName('consequence')?.id === block.id &&
    AVAILABILITY.test(ifs.childForFieldName('condition')?.text ?? '') && !/\bnot\b/.test(ifs.childForFieldName('condition')?.text ?? '');
}

/** Names and attributes that hold a device: `device`, `DEVICE`, `self.device`, `args.device`, `sync_device`. */
const HOLDER = /^(\w+_)?device$/i;

/**
 * A local device holder `name` (bound by `a`) that leaves its function: stored on an attribute (`args.device = device`),
 * or passed to a call other than a print or log. A returned device is not: the callers' sinks report it (at the call, with
 * the helper's expression as a related location; see `externalCudaReturn`).
 */
function handedOn(sema: Semantics, a: Node, name: string): boolean {
  const fn = sema.enclosingFunction(a);
  for (const id of sema.identifiersNamed(name)) {
    if (id.startIndex < a.endIndex || sema.enclosingFunction(id)?.id !== fn?.id) continue;
    const p = id.parent;
    if (p?.type === 'assignment' && p.childForFieldName('right')?.id === id.id && p.childForFieldName('left')?.type === 'attribute') return true;
    // passed to a call that is no print or log (`init_multiprocessing(rank=..., sync_device=sync_device)`): a device sink
    // of this file was reported above, so this call takes it elsewhere
    const arg = p?.type === 'keyword_argument' && p.childForFieldName('value')?.id === id.id ? p.parent : p;
    const call = arg?.type === 'argument_list' ? arg.parent : null;
    const fnText = call?.type === 'call' ? call.childForFieldName('function')?.text ?? '' : '';
    if (call && fnText && !/^(print|str|repr|format|len|isinstance|getattr|setattr|hasattr|type)$|(^|\.)(info|debug|warning|warn|error|log|print|format|append)$/.test(fnText)) return true;
  }
  return false;
}

/** `torch.Generator(...)`: no XLA generator exists in torch_xla 2.3-2.9 (see TPU113). */
function isGenerator(sema: RuleContext['sema'], call: Node): boolean {
  return sema.callee(call) === 'torch.Generator';
}

/**
 * `"cuda" if torch.cuda.is_available() else "cpu"` (bare or inside `torch.device(...)`): on a TPU host nothing
 * raises, the program picks the CPU and runs there (issue 9: say that, not "a TPU host has none").
 */
function cpuFallback(sema: Semantics, n: Node): boolean {
  const stripParens = (x: Node): Node => (x.type === 'parenthesized_expression' && x.namedChildren[0] ? stripParens(x.namedChildren[0]) : x);
  const x = stripParens(n);
  const tern = [x, ...(x.type === 'call' ? callArgs(x).positional.slice(0, 1) : [])].map(stripParens).find((t: Node) => t.type === 'conditional_expression');
  if (!tern) return false;
  const cond = tern.namedChildren[1]?.text ?? '';
  if (!/\bcuda\.is_available\(\)/.test(cond) || /\bnot\b/.test(cond)) return false;
  const alt = tern.namedChildren[2] ? stripParens(tern.namedChildren[2]) : null;
  if (!alt) return false;
  const cpu = (a: Node) => a.type === 'string' && /^cpu$/.test(stringContent(a) ?? '');
  if (cpu(alt)) return true;
  return alt.type === 'call' && sema.callee(alt) === 'torch.device' && !!callArgs(alt).positional[0] && cpu(stripParens(callArgs(alt).positional[0]));
}

export default rule;

/**
 * `if self.device.type == "cuda": self.device = torch.device("cuda:0")` / `if args.device == "cuda": args.device = "cuda:0"`:
 * the arm only refines a device that is already CUDA (it never runs on a TPU host); the device's own source is the problem.
 */
function cudaRemap(sema: Semantics, n: Node): boolean {
  let a: Node | null = n.parent;
  while (a && a.type === 'call') a = a.parent;
  if (a?.type === 'argument_list') a = a.parent?.parent ?? null;
  if (a?.type !== 'assignment') return false;
  const left = a.childForFieldName('left')?.text;
  const block = a.parent?.type === 'expression_statement' ? a.parent.parent : null;
  const owner = block?.parent;
  if (!left || block?.type !== 'block' || (owner?.type !== 'if_statement' && owner?.type !== 'elif_clause') || owner.childForFieldName('consequence')?.id !== block.id) return false;
  let cond = owner.childForFieldName('condition');
  if (cond?.type === 'boolean_operator' && /^\s*and\b/.test(sema.text.slice(cond.childForFieldName('left')!.endIndex, cond.childForFieldName('right')!.startIndex))) cond = cond.childForFieldName('left');
  while (cond?.type === 'parenthesized_expression') cond = cond.namedChildren[0] ?? null;
  if (cond?.type !== 'comparison_operator') return false;
  const [l, r] = cond.namedChildren;
  if (!l || r?.type !== 'string' || !/^cuda$/.test(stringContent(r) ?? '') || !/==/.test(cond.text.slice(l.endIndex - cond.startIndex, r.startIndex - cond.startIndex))) return false;
  const operand = l.type === 'attribute' && l.childForFieldName('attribute')?.text === 'type' ? l.childForFieldName('object')?.text : l.text;
  return operand === left;
}
