import { defineRule } from '../../core/rule';
import { downgrade } from '../../core/engine';
import { insertAt, replace, replaceRange } from '../../core/edits';
import type { Node } from '../../core/parse';
import type { ReportOptions, RuleContext } from '../../core/rule';
import { callArgs, kwValue, methodName, receiver, stringContent } from '../../core/semantics';
import { isFloat64, torchAttr } from './util';

/** The `if` statement whose arm (`if`/`elif`/`else` block) holds the statement of `call` directly, else null. */
function armChain(call: Node): Node | null {
  let stmt: Node | null = call;
  while (stmt && stmt.parent && stmt.parent.type !== 'block') stmt = stmt.parent;
  const arm = stmt?.parent?.parent;
  if (!arm) return null;
  if (arm.type === 'if_statement') return arm;
  if ((arm.type === 'elif_clause' || arm.type === 'else_clause') && arm.parent?.type === 'if_statement') return arm.parent;
  return null;
}

/** numpy constructors that return float64 unless given a dtype. */
const NP_FLOAT64 = /^numpy\.(random\.(rand|randn|random|random_sample|uniform|normal|standard_normal)|linspace|zeros|ones|empty|full|loadtxt|genfromtxt|eye|identity)$/;
/** Methods that set the dtype right after the conversion. */
const CASTS = /^(float|half|bfloat16|double|long|int|short|bool|byte|to|type)$/;

function isNpFloat64Dtype(ctx: RuleContext, node: Node | null): boolean {
  if (!node) return false;
  if (node.type === 'string') return /^(float64|double|f8|<f8)$/.test(stringContent(node) ?? '');
  const q = ctx.sema.resolve(node);
  return q === 'numpy.float64' || q === 'numpy.double';
}

/** A numpy expression that is float64: constructors without dtype, float literals in np.array, astype(float64). */
function isNpFloat64(ctx: RuleContext, node: Node, depth = 0): boolean {
  if (depth > 3) return false;
  if (node.type === 'identifier') {
    const values = ctx.sema.bindings(node.text);
    return values.length > 0 && values.every((v) => isNpFloat64(ctx, v, depth + 1));
  }
  if (node.type !== 'call') return false;
  const q = ctx.sema.callee(node) ?? '';
  const { positional, keywords } = callArgs(node);
  if (methodName(node) === 'astype') return isNpFloat64Dtype(ctx, kwValue(keywords.get('dtype')) ?? positional[0] ?? null);
  if (keywords.has('dtype')) return isNpFloat64Dtype(ctx, kwValue(keywords.get('dtype')));
  if (q === 'numpy.array' || q === 'numpy.asarray') {
    const first = positional[0];
    return !!first && (first.type === 'list' || first.type === 'tuple') && /\d\.\d*|\d[eE]-?\d/.test(first.text) && !/[a-zA-Z_]\w*\s*\(/.test(first.text);
  }
  if (q === 'numpy.full') return positional[1]?.type === 'float';
  return NP_FLOAT64.test(q) && positional.length <= 3;
}

/** The receiver chain already left the device (`x.cpu().double()`, `.numpy()`): host-side math. */
function hostSide(node: Node | null): boolean {
  for (let n = node; n; n = n.type === 'call' ? receiver(n) : n.type === 'attribute' ? n.childForFieldName('object') : null) {
    if (n.type === 'call' && /^(cpu|numpy|item|tolist|detach_cpu)$/.test(methodName(n) ?? '')) return true;
  }
  return false;
}


const NOT_F64_CASTS = /^(float|half|bfloat16|long|int|short|bool|byte)$/;
const NEUTRAL_ATTRS = /^(shape|dtype|ndim|size|numel|dim|is_sparse|device)$/;

type Use = 'cast' | 'host' | 'neutral' | null;

/** The name an assignment target writes (`x`, `self.x`, `x[i]` → `x`, `self.x`). */
function targetRoot(n: Node | null | undefined): Node | null {
  if (!n) return null;
  if (n.type === 'identifier' || n.type === 'attribute') return n;
  if (n.type === 'subscript') return targetRoot(n.childForFieldName('value'));
  return null;
}

/**
 * How a read of a float64 host value continues: cast to another dtype before it can reach the device (`.float()`,
 * `.to(torch.float32)`, `.to(device, dtype=torch.float32)`), stays on the host (`.numpy()`, `.item()`, `.tolist()`),
 * reads metadata (`.shape`, `len(x)`, a write `x[i] = …`), or flows into another name whose reads do (one of the
 * above; `pe[:, 0::2] = torch.sin(pos * c)`); null when it may reach the device as float64.
 */
function useOf(ctx: RuleContext, n: Node, depth: number): Use {
  let cur = n;
  for (;;) {
    const p = cur.parent;
    if (p?.type === 'subscript' && p.childForFieldName('value')?.id === cur.id) {
      if (p.parent?.type === 'assignment' && p.parent.childForFieldName('left')?.id === p.id) return 'neutral';
      cur = p;
      continue;
    }
    if (p?.type !== 'attribute' || p.childForFieldName('object')?.id !== cur.id) break;
    const m = p.childForFieldName('attribute')?.text ?? '';
    if (NEUTRAL_ATTRS.test(m)) return 'neutral';
    const c = p.parent?.type === 'call' ? p.parent : null;
    if (!c) {
      cur = p; // `.data`, `.T`
      continue;
    }
    if (NOT_F64_CASTS.test(m) && !callArgs(c).positional.length) return 'cast';
    if (/^(numpy|item|tolist)$/.test(m)) return 'host';
    if (m === 'to' || m === 'type' || m === 'cuda') {
      const { positional, keywords } = callArgs(c);
      const dt = kwValue(keywords.get('dtype')) ?? positional.find((x) => /(^|\.)(float|float16|float32|half|bfloat16|int\w*|long|bool|FloatTensor|HalfTensor)$/.test(x.text)) ?? null;
      return dt && !isFloat64(ctx, dt) && !/double|float64|DoubleTensor/.test(dt.text) ? 'cast' : null;
    }
    cur = c;
  }
  const call = cur.parent?.type === 'argument_list' ? cur.parent.parent : null;
  if (call && ctx.sema.callee(call) === 'len') return 'neutral';
  // flows into an assignment's target: judge that name's later reads
  if (depth >= 2) return null;
  for (let x: Node | null = cur, child: Node = cur; x; child = x, x = x.parent) {
    if (x.type === 'assignment' || x.type === 'augmented_assignment') {
      if (x.childForFieldName('right')?.id !== child.id) return null;
      const root = targetRoot(x.childForFieldName('left'));
      return root && nameCastBeforeMove(ctx, root.text, root.type, x, depth + 1) ? 'cast' : null;
    }
    // `return torch.linspace(..., dtype=torch.float64)` in a schedule helper: judged at the helper's call sites, when the
    // helper is only called (not passed around) and every call casts the result (`betas = linear_beta_schedule(T).float()`)
    if (x.type === 'return_statement' && x.namedChildren[0]?.id === child.id) {
      const fn = ctx.sema.enclosingFunction(x);
      const name = fn?.childForFieldName('name')?.text;
      if (!fn || !name || ctx.sema.enclosingClass(fn)) return null;
      const calls = ctx.sema.callSitesOf(fn);
      if (!calls.length || ctx.sema.identifiersNamed(name).length !== calls.length + 1) return null;
      const k = calls.map((c) => useOf(ctx, c, depth + 1));
      return k.every((u) => u !== null) && k.includes('cast') ? 'cast' : null;
    }
    if (/statement$|^block$|^module$|definition$/.test(x.type)) return null;
    // through arithmetic and torch/numpy/math functions only: a call of the user's model or helper may move it
    if (x.type === 'call' && x.id !== cur.id && !/^(torch|numpy|math)\./.test(ctx.sema.callee(x) ?? '')) return null;
  }
  return null;
}

/** Every later read of `name` (after `stmt`) is cast before the device, kept on the host or metadata, with one cast. */
function nameCastBeforeMove(ctx: RuleContext, name: string, type: string, stmt: Node, depth: number): boolean {
  // identifiersNamed: the name's occurrences from the text index, not every node of the type filtered by text
  // (that was quadratic: one full scan per assignment, 8 s on a 600 KB file)
  const last = name.slice(name.lastIndexOf('.') + 1);
  const pool = type === 'identifier' ? ctx.sema.identifiersNamed(name)
    : ctx.sema.identifiersNamed(last).map((n) => n.parent).filter((p): p is Node => p?.type === type);
  const uses = pool.filter((n) => n.text === name && n.startIndex >= stmt.endIndex
    && !(n.parent?.type === 'attribute' && n.parent.childForFieldName('attribute')?.id === n.id)
    && !(n.parent?.type === 'assignment' && n.parent.childForFieldName('left')?.id === n.id));
  if (!uses.length) return false;
  const k = uses.map((u) => useOf(ctx, u, depth));
  return k.every((x) => x !== null) && k.includes('cast');
}

/**
 * A float64 value built on the host and cast before it can reach the device (issue 9): the call (through
 * dtype-keeping method chains such as `.unsqueeze(1)`) is cast right away, or bound to a name whose every later
 * read is cast, kept on the host or metadata (see useOf), with at least one cast.
 */
function castBeforeMove(ctx: RuleContext, call: Node): boolean {
  const u = useOf(ctx, call, 0);
  return u === 'cast';
}

export default defineRule({
  id: 'TPU304',
  name: 'float64-tensor',
  title: 'float64 tensors on TPU',
  severity: 'warning',
  step: 5,
  effort: 1,
  message: 'float64 on TPU is emulated and slow, and some ops fail',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Use float32' },
  triggers: ['double', 'float64', 'from_numpy', 'as_tensor', 'torch.tensor'],
  docs: {
    what:
      'Checks for `.double()`, `torch.float64`/`torch.double` dtype arguments (`dtype=`, `.to(...)`, `torch.set_default_dtype(...)`), ' +
      '`torch.set_default_tensor_type(torch.DoubleTensor)`, `torch.from_numpy(a)`/`torch.as_tensor(a)`/`torch.tensor(a)` of NumPy arrays that are float64 ' +
      '(`np.random.rand`, `np.linspace`, `np.zeros`, `np.array([1.0, …])`, `.astype(np.float64)`; not cast right after) in a script that moves data to a device, ' +
      'and `dtype=np.float64` inside `Dataset` classes. Host-side math after `.cpu()`/`.numpy()`, float64 values built on the host and cast before they can reach the device (every later read casts them, e.g. `pe = pe.float().to(device)`, or stays on the host; a schedule a same-file helper returns counts as cast when every call of the helper casts it, `betas = linear_beta_schedule(T).float()`), `torch.tensor(python_floats)` (float32) and int64 index tensors are not flagged.',
    why:
      'torch_xla hands F64 to XLA unchanged unless the deprecated `XLA_USE_BF16`/`XLA_DOWNCAST_BF16` are set (DTYPE:141-160). TPUs have no native 64-bit arithmetic: ' +
      'XLA rewrites 64-bit types, which is slow, and some ops fail with "UNIMPLEMENTED: While rewriting computation to not contain X64 element types" (jax-ml/jax#21108, #30629). ' +
      'NumPy defaults to float64, so `torch.from_numpy` silently brings it in. The torch_xla tests pin `torch.set_default_dtype(torch.float32)` (T:test_train_mp_mnist.py:204). ' +
      'The size of the slowdown is unverified.',
    example: 'x = torch.from_numpy(np.random.rand(64, 10))\nw = w.double()\nt = torch.zeros(3, dtype=torch.float64)',
    useInstead: 'x = torch.from_numpy(np.random.rand(64, 10)).float()\nw = w.float()\nt = torch.zeros(3, dtype=torch.float32)',
    fixSafety:
      'The `.float()` appended to a NumPy conversion is safe when the file casts nothing to float64 (the input pipeline feeds a float32 model; the catalog marks it safe-suggested); it is not offered otherwise (the model may be float64). ' +
      'The other fixes (`.double()` → `.float()`, `torch.float64` → `torch.float32`, `np.float64` → `np.float32`) are unsafe: code that really needs 64-bit precision ' +
      '(accumulators, numerically sensitive solvers) changes results; keep such math on the host instead. A cast of one side only breaks the program ' +
      '(a float32 model fed float64 data fails with "mat1 and mat2 must have the same dtype"), so `.double()` and `torch.float64` get a fix only when the file has no data source whose dtype the rule cannot see ' +
      '(a `DataLoader`, `torch.from_numpy`/`torch.as_tensor`, `np.load`, pandas). In dual-path style none of these fixes is offered: CPU and CUDA must keep their float64 numerics, and an XLA-only cast would still cast one side.',
    sources: [
      'DTYPE (torch_xla/csrc/dtype.cpp:141-160): F64 passed to XLA unless XLA_USE_BF16/XLA_DOWNCAST_BF16',
      'jax-ml/jax#21108, jax-ml/jax#30629 (X64 rewrite UNIMPLEMENTED errors on TPU)',
      'T:test/test_train_mp_mnist.py:204 (torch.set_default_dtype(torch.float32))',
    ],
    torchtpu: 'Same detection and fixes (plain PyTorch dtypes); the tpu device has the same hardware limits.',
  },
  check(ctx) {
    const sev = (node: Node) => {
      const hot = ctx.sema.hot(node);
      return hot && (hot.kind === 'eval' || hot.throttled) ? downgrade('warning') : 'warning';
    };
    const f32 = (node: Node) => (node.type === 'attribute' ? { text: `${node.childForFieldName('object')!.text}.float32`, imports: [] } : torchAttr(ctx, 'float32'));
    // A cast of one side only breaks the program: `model.double()` → `model.float()` while the data stays float64 fails with
    // "mat1 and mat2 must have the same dtype". So the model/tensor casts are offered only in tpu-only style (dual-path must
    // keep CPU/CUDA float64, and an XLA-only cast would still leave the other side float64 on XLA) and only when the file
    // has no data source whose dtype this rule cannot see (a DataLoader, a NumPy/pandas conversion, np.load).
    const dual = ctx.idiom.dualPath;
    // float64 dtypes without a fix, by the `if` chain whose arm holds their statement
    const armDtypes = new Map<number, { d: Node; opts: ReportOptions }[]>();
    const untypedData = /\bDataLoader\b|\bfrom_numpy\(|\bas_tensor\(|\bnp\.load|\bnumpy\.load|\bpd\.|\bpandas\b|\.values\b|\.to_numpy\(/.test(ctx.text);
    const castsFloat64 = ctx.sema.nodes('call').some((c) => methodName(c) === 'double') || ctx.sema.nodes('attribute').some((a) => isFloat64(ctx, a));
    const offerCast = !dual && !untypedData;
    const movesToDevice = ctx.sema.xlaAware || ctx.sema.nodes('call').some((c) => /^(to|cuda)$/.test(methodName(c) ?? '')) || ctx.sema.nodes('keyword_argument').some((k) => k.childForFieldName('name')?.text === 'device');

    for (const call of ctx.sema.nodes('call')) {
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      const q = ctx.sema.callee(call) ?? '';
      const meth = methodName(call);
      const recv = receiver(call);
      const { positional, keywords } = callArgs(call);

      if (meth === 'double' && recv && !ctx.sema.resolve(recv) && !positional.length && !keywords.size && !hostSide(recv)) {
        if (castBeforeMove(ctx, call)) continue;
        const attr = call.childForFieldName('function')!.childForFieldName('attribute')!;
        ctx.report(call, {
          severity: sev(call),
          message: '`.double()` makes a float64 tensor: TPUs have no native float64 (slow, some ops fail)',
          fix: offerCast ? { title: 'Replace `.double()` with `.float()`', edits: [replaceRange(attr.startIndex, call.endIndex, 'float()')] } : null,
        });
        continue;
      }

      if (q === 'torch.set_default_tensor_type') {
        const a = positional[0];
        if (a && (ctx.sema.resolve(a) === 'torch.DoubleTensor' || stringContent(a) === 'torch.DoubleTensor')) {
          ctx.report(a, { message: '`torch.DoubleTensor` as the default makes every new float tensor float64 on TPU', fix: null });
        }
        continue;
      }

      // dtype=torch.float64 anywhere; positional in .to(...)/.type(...)/set_default_dtype(...)
      const dtypeNodes: Node[] = [];
      const kw = kwValue(keywords.get('dtype'));
      if (kw && isFloat64(ctx, kw)) dtypeNodes.push(kw);
      if ((meth === 'to' || meth === 'type' || q === 'torch.set_default_dtype') && !(recv && hostSide(recv))) {
        for (const p of positional) if (isFloat64(ctx, p)) dtypeNodes.push(p);
      }
      const dev = kwValue(keywords.get('device'));
      const onCpu = !!dev && dev.type === 'string' && stringContent(dev) === 'cpu';
      if (dtypeNodes.length && !onCpu && !(recv && hostSide(recv)) && !(q !== 'torch.set_default_dtype' && castBeforeMove(ctx, call))) {
        for (const d of dtypeNodes) {
          const t = f32(d);
          const opts = {
            severity: sev(call),
            message: q === 'torch.set_default_dtype' ? 'A float64 default dtype makes every new float tensor float64 on TPU' : `\`${d.text}\` makes a float64 tensor: TPUs have no native float64 (slow, some ops fail)`,
            fix: offerCast ? { title: `Replace with \`${t.text}\``, edits: [replace(d, t.text)], imports: t.imports } : null,
          };
          const chain = opts.fix ? null : armChain(call);
          if (chain) armDtypes.set(chain.id, [...(armDtypes.get(chain.id) ?? []), { d, opts }]);
          else ctx.report(d, opts);
        }
        continue;
      }

      // NumPy float64 arrays converted to tensors without a cast
      if ((q === 'torch.from_numpy' || q === 'torch.as_tensor' || q === 'torch.tensor') && movesToDevice) {
        const arr = positional[0];
        if (!arr || keywords.has('dtype') || positional.length > 1) continue;
        const parentAttr = call.parent?.type === 'attribute' && call.parent.childForFieldName('object')?.id === call.id ? call.parent : null;
        const next = parentAttr?.childForFieldName('attribute')?.text ?? '';
        const nextCall = parentAttr?.parent?.type === 'call' ? parentAttr.parent : null;
        // `.to(device)` keeps the dtype; `.to(torch.float32)` / `.to(dtype=…)` casts
        if (parentAttr && CASTS.test(next) && !(next === 'to' && nextCall && !/dtype|float|half|bfloat|long|int|bool|double/.test(nextCall.childForFieldName('arguments')?.text ?? ''))) continue;
        if (!isNpFloat64(ctx, arr) || castBeforeMove(ctx, call)) continue;
        ctx.report(call, {
          severity: sev(call),
          message: `\`${q.replace(/^torch\./, 'torch.')}(${arr.text.length > 30 ? '…' : arr.text})\` keeps NumPy's float64: cast it to float32 before it reaches the TPU`,
          // dual-path: CPU/CUDA keep their float64 data; a file that also casts to float64 may feed a float64 model (one side)
          fix: dual || castsFloat64 ? null : { title: 'Append `.float()`', applicability: 'safe', edits: [insertAt(call.endIndex, '.float()')] },
        });
        continue;
      }
    }

    // `if not torch.is_tensor(t): x = torch.tensor(t, dtype=torch.double)` / `elif ...: x = t.to(dtype=torch.double)` /
    // `else: ...` (fairseq all_reduce_dict): one float64 choice made in every arm of one chain, without a fix: one finding
    for (const group of armDtypes.values()) {
      const [first, ...rest] = group;
      ctx.report(first.d, { ...first.opts, related: rest.length ? rest.map((r) => ({ start: r.d.startIndex, end: r.d.endIndex, message: 'the same float64 choice in this `if` chain' })) : undefined });
    }
    // dtype=np.float64 inside Dataset classes
    for (const kwNode of ctx.sema.nodes('keyword_argument')) {
      if (kwNode.childForFieldName('name')?.text !== 'dtype') continue;
      const v = kwValue(kwNode);
      if (!v || !isNpFloat64Dtype(ctx, v) || v.type === 'string' && !ctx.sema.imports('numpy')) continue;
      const cls = ctx.sema.enclosingClass(kwNode);
      if (!cls || !/Dataset/.test(cls.childForFieldName('superclasses')?.text ?? '')) continue;
      const text = v.type === 'string' ? `${v.text[0]}float32${v.text[v.text.length - 1]}` : `${v.childForFieldName('object')?.text ?? 'np'}.float32`;
      ctx.report(v, {
        message: `\`dtype=${v.text}\` in a Dataset produces float64 samples; TPUs have no native float64`,
        fix: dual ? null : { title: `Replace with \`${text}\``, edits: [replace(v, text)] },
      });
    }
  },
});
