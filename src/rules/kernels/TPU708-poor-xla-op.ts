import { defineRule, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { kwValue, methodName, receiver, enclosingStatement } from '../../core/semantics';
import { deleteStatement, replace } from '../../core/edits';
import { argShape, isTrue, removeArg } from './util';

const TENSOR_ONLY = new Set(['data_ptr', 'untyped_storage', 'as_strided', 'as_strided_']);
const NEEDS_TENSOR = new Set(['storage', 'stride', 'storage_offset']);

export default defineRule({
  id: 'TPU708',
  name: 'poor-xla-op',
  title: 'Ops and tensor features with poor XLA support',
  severity: 'warning',
  step: 6,
  effort: 3,
  message: 'this op or tensor feature has poor XLA support',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Use an XLA-friendly form' },
  triggers: ['ctc', 'CTC', 'data_ptr', 'storage', 'stride', 'is_contiguous', 'channels_last', 'copy', 'sparse', 'spmm'],
  profiles: ['torch_xla'],
  docs: {
    what:
      'Checks for (a) CTC loss (`nn.CTCLoss`, `F.ctc_loss`), which torch_xla\'s troubleshooting guide shows falling back to the CPU; (b) storage and stride introspection: `.data_ptr()`, `.storage()`, `.untyped_storage()`, `.stride()`, ' +
      '`torch.as_strided`, and logic that branches on `.is_contiguous()`; (c) `memory_format=torch.channels_last`; (d) `copy.copy(tensor)`; (e) sparse tensors that reach the device (created with a device, moved, registered as a buffer, or used in a hot loop or `forward`; host-only sparse preprocessing is left alone) and `nn.Embedding(sparse=True)`.',
    why:
      'Ops without an XLA lowering run on the CPU: "any counter that starts with `aten::` indicates a context switch between the XLA device and CPU" (TS "Understand The Metrics Report"); the guide\'s example lists `aten::_ctc_loss` and `_ctc_loss_backward` (that list may be stale: confirm with the metrics report). ' +
      '"XLA tensors always appear to be contiguous and without storage. Networks should not try to check the strides" (TS:359-362), and "the internal data representation of XLA tensors is opaque" (DEV "Memory Layout"), so memory-format hints do nothing useful. ' +
      '`copy.copy` of an XLA tensor performs a deep copy (TS quirks). torch_xla implements no sparse (SparseXLA) kernels: a sparse tensor made on or moved to the XLA device raises NotImplementedError ("Could not run \'aten::_sparse_coo_tensor_with_dims_and_tensors\' with arguments from the \'SparseXLA\' backend", pytorch/xla#8719; pytorch/xla#6853), reported as an error; sparse tensors used in a hot loop or `forward` without a visible move (`torch.spmm(adj, x)`, `torch.sparse.FloatTensor(...)`) are info. `EmbeddingBag(sparse=True)` falls back to the dense backward with a warning since pytorch/xla#7584: prefer dense embeddings.',
    example:
      'criterion = nn.CTCLoss()\nif x.is_contiguous():\n    ptr = x.data_ptr()\nmodel = model.to(memory_format=torch.channels_last)\nemb = nn.Embedding(50000, 512, sparse=True)\ny = copy.copy(x)',
    useInstead:
      'import torch_xla.debug.metrics as met\nprint(met.short_metrics_report())   # confirm which aten:: ops fall back\n' +
      'emb = nn.Embedding(50000, 512)\ny = x.clone()',
    fixSafety:
      'Unsafe: dropping `memory_format=torch.channels_last` changes the CUDA layout (and speed, not results), so the dual-path style leaves it in place (a no-op on XLA) and only the tpu-only style removes it; dense embeddings use more gradient memory and do not work with `SparseAdam`; ' +
      '`x.clone()` makes the copy explicit, which is what XLA does for `copy.copy`, but code that relied on a shallow copy sharing storage changes. Stride/storage logic and CTC have no automatic fix.',
    sources: ['TS (docs/source/learn/troubleshoot.md: metrics report, aten:: counters, :359-362 strides, quirks)', 'DEV (docs/source/learn/pytorch-on-xla-devices.md "Memory Layout")', 'pytorch/xla#6853 (SparseXLA codegen without kernels), pytorch/xla#8719 (the NotImplementedError), pytorch/xla#7584 (torch_xla/csrc/aten_xla_type.cpp: EmbeddingBag sparse backward falls back to dense)'],
    torchtpu: 'Not run under the torchtpu profile: the fallbacks listed are torch_xla\'s lowerings; the preview\'s op coverage is not public.',
  },
  check(ctx) {
    if (!ctx.sema.usesTorch()) return;
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      const meth = methodName(call);
      if (callee === 'torch.nn.CTCLoss' || callee === 'torch.nn.functional.ctc_loss' || callee === 'torch.ctc_loss') {
        ctx.report(call, { severity: 'info', message: 'CTC loss may run on the CPU under XLA (a listed fallback); confirm with `met.short_metrics_report()`' });
        continue;
      }
      if (callee === 'torch.as_strided' || (!callee && meth && TENSOR_ONLY.has(meth)) || (meth && NEEDS_TENSOR.has(meth) && !callee && ctx.model.isDeviceTensor(receiver(call)))) {
        if (callee === '' && meth === 'data_ptr' && !receiver(call)) continue;
        if (meth === 'data_ptr' && (cpuParameterIdentity(ctx.text, call) || storageObject(ctx, call))) continue;
        const what = callee === 'torch.as_strided' ? 'torch.as_strided' : `.${meth}()`;
        ctx.report(call, { message: `\`${what}\` inspects storage or strides: XLA tensors have no storage and report contiguous strides` });
        continue;
      }
      if (meth === 'is_contiguous' && !callee && drivesLogic(call)) {
        ctx.report(call, { message: '`.is_contiguous()` drives logic, but XLA tensors always appear contiguous' });
        continue;
      }
      if (callee === 'copy.copy') {
        const arg = argShape(call).positional[0];
        if (!arg || !ctx.model.isDeviceTensor(arg)) continue;
        ctx.report(call, {
          message: '`copy.copy` of an XLA tensor makes a deep copy; write `.clone()` to say so',
          fix: { title: `Use \`${arg.text}.clone()\``, edits: [replace(call, `${arg.text}.clone()`)] },
        });
        continue;
      }
      const { keywords } = argShape(call);
      const mf = keywords.get('memory_format');
      if (mf && /(^|\.)channels_last(_3d)?$/.test(kwValue(mf)?.text ?? '') && /^torch\.channels_last/.test(ctx.sema.resolve(kwValue(mf)) ?? 'torch.channels_last')) {
        ctx.report(mf, { severity: 'info', message: '`memory_format=torch.channels_last` has no effect on XLA tensors, whose layout the compiler chooses', fix: channelsLastFix(ctx, call, mf) });
        continue;
      }
      const sparse = keywords.get('sparse');
      if (sparse && isTrue(kwValue(sparse)) && /^torch\.nn\.(Embedding|EmbeddingBag)(\.from_pretrained)?$/.test(callee)) {
        const sparseAdam = ctx.sema.nodes('call').some((c) => ctx.sema.callee(c) === 'torch.optim.SparseAdam');
        ctx.report(sparse, {
          severity: 'info',
          message: '`sparse=True` makes sparse embedding gradients; keep embeddings dense for XLA',
          fix: sparseAdam ? null : { title: 'Use dense gradients (remove `sparse=True`)', edits: [removeArg(ctx, sparse)] },
        });
        continue;
      }
      if (SPARSE_MAKERS.test(callee) || (meth === 'to_sparse' && !callee)) {
        // a sparse tensor built and used on the host (graph preprocessing, a CPU adjacency) never meets XLA (issue 9)
        const reach = sparseReachesDevice(ctx, call, callee);
        if (!reach) continue;
        const what = callee || '.to_sparse()';
        // torch_xla registers no SparseXLA kernels: making a sparse tensor on the XLA device raises NotImplementedError
        // ("Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors' with arguments from the 'SparseXLA' backend",
        // pytorch/xla#8719; "we didn't implement the corresponding sparse kernels", pytorch/xla#6853)
        ctx.report(call, reach === 'moved'
          ? { severity: 'error', message: `\`${what}\` makes a sparse tensor that is placed on the device: torch_xla has no sparse (SparseXLA) kernels, so this raises NotImplementedError on XLA; use a dense tensor` }
          : { severity: 'info', message: `\`${what}\` ${/mm$/.test(what) ? 'multiplies with' : 'creates'} sparse tensors, which torch_xla has no kernels for (they must stay on the CPU); prefer dense tensors` });
      }
    }
  },
});

const CPU_DEVICE = /^(['"]cpu['"]|torch\.device\(['"]cpu['"]\))$/;

/**
 * Whether a sparse tensor made (or consumed) by `call` meets the device: created with a non-CPU `device=`,
 * moved by a chained `.to(...)`/`.cuda()`, computed in a hot loop or `forward`, or bound to a name that is moved,
 * registered as a buffer, or read in a hot loop or `forward`. `torch.sparse.mm/sum` also count through the names
 * of their operands.
 */
/** Sparse constructors (also the legacy `torch.sparse.FloatTensor(indices, values, size)`) and sparse ops (`torch.spmm` is `torch.sparse.mm`). */
const SPARSE_MAKERS = /^torch\.(sparse_coo_tensor|sparse_csr_tensor|sparse\.mm|sparse\.sum|spmm|sparse\.(Float|Double|Half|Long|Int|Short|Byte|Bool)Tensor)$/;
const SPARSE_OPS = /^torch\.(sparse\.mm|sparse\.sum|spmm)$/;

function sparseReachesDevice(ctx: RuleContext, call: Node, callee: string): 'moved' | 'used' | null {
  const sema = ctx.sema;
  const dev = argShape(call).keywords.get('device');
  if (dev && !CPU_DEVICE.test(kwValue(dev)?.text ?? '')) return 'moved';
  if (sema.hot(call)) return 'used';
  if (dev) return null;
  const moves = (n: Node): boolean => {
    // n.to(x) / n.cuda() / n.coalesce().to(x)
    for (let cur: Node = n, depth = 0; depth < 3; depth++) {
      const attr = cur.parent;
      if (attr?.type !== 'attribute' || attr.childForFieldName('object')?.id !== cur.id) return false;
      const c = attr.parent;
      if (c?.type !== 'call') return false;
      const m = attr.childForFieldName('attribute')?.text;
      if (m === 'cuda') return true;
      if (m === 'to') {
        const a = c.childForFieldName('arguments')?.namedChildren[0];
        return !!a && !CPU_DEVICE.test(a.text) && !/^torch\.(float|double|half|bfloat16|int|long|bool)\w*$/.test(a.text);
      }
      cur = c;
    }
    return false;
  };
  if (moves(call)) return 'moved';
  const names: string[] = [];
  const stmt = call.parent?.type === 'assignment' && call.parent.childForFieldName('right')?.id === call.id ? call.parent : null;
  const left = stmt?.childForFieldName('left');
  if (left && (left.type === 'identifier' || left.type === 'attribute')) names.push(left.text);
  if (SPARSE_OPS.test(callee)) for (const a of argShape(call).positional) if (a.type === 'identifier' || a.type === 'attribute') names.push(a.text);
  if (!names.length) return null;
  const uses = [...sema.nodes('identifier'), ...sema.nodes('attribute')].filter((n) => names.includes(n.text) && n.id !== left?.id);
  if (uses.some((u) => moves(u))) return 'moved';
  return uses.some((u) => {
    if (sema.hot(u)) return true;
    const c = u.parent?.type === 'argument_list' ? u.parent.parent : null;
    return c?.type === 'call' && methodName(c) === 'register_buffer';
  }) ? 'used' : null;
}

/**
 * `{p.data_ptr(): p.numel() for p in model.parameters()}`: the tied-weight dedup of a parameter count, over a model
 * this file never moves to a device (a framework such as the HF Trainer moves it later), so the parameters are CPU tensors.
 */
function cpuParameterIdentity(text: string, call: Node): boolean {
  const recv = receiver(call);
  if (recv?.type !== 'identifier') return false;
  for (let p = call.parent; p && p.type !== 'function_definition' && p.type !== 'module'; p = p.parent) {
    if (!/comprehension$|^for_statement$/.test(p.type)) continue;
    const m = new RegExp(`\\bfor\\s+${recv.text}\\s+in\\s+([A-Za-z_][\\w.]*)\\.(named_)?parameters\\(`).exec(p.text);
    if (!m) continue;
    const model = m[1].replace(/[.]/g, '\\.');
    const moves = `\\.\\s*(to|cuda|to_empty|xla)\\s*\\(`;
    return !new RegExp(`\\b${model}\\s*${moves}`).test(text) && !new RegExp(`\\b${model}\\s*=[^\\n]*${moves}`).test(text);
  }
  return false;
}

/**
 * `.data_ptr()` of a storage object, not of a tensor: `storage.data_ptr()` in a checkpoint pickler (lit-gpt's
 * incremental save), `x.untyped_storage().data_ptr()` (the inner call is the finding), or any call in a
 * `pickle.Pickler` subclass's `persistent_id` (serialization on the host).
 */
function storageObject(ctx: Parameters<NonNullable<ReturnType<typeof defineRule>['check']>>[0], call: Node): boolean {
  const recv = receiver(call);
  if (!recv) return false;
  if (recv.type === 'identifier' && /(^|_)storages?$|^storage/i.test(recv.text)) return true;
  if (recv.type === 'call' && /^(untyped_storage|storage|_typed_storage|_untyped_storage)$/.test(methodName(recv) ?? '')) return true;
  if (recv.type === 'attribute' && /^_?(untyped_)?storage$/.test(recv.childForFieldName('attribute')?.text ?? '')) return true;
  const fn = ctx.sema.enclosingFunction(call);
  const cls = ctx.sema.enclosingClass(call);
  return fn?.childForFieldName('name')?.text === 'persistent_id' && /Pickler\b/.test(cls?.childForFieldName('superclasses')?.text ?? '');
}

/** Under an `if`/`while`/ternary/assert condition or a boolean operator: the result drives control flow. */
function drivesLogic(call: Node): boolean {
  for (let p: Node | null = call.parent, child: Node = call; p; child = p, p = p.parent) {
    if ((p.type === 'if_statement' || p.type === 'elif_clause' || p.type === 'while_statement') && p.childForFieldName('condition')?.id === child.id) return true;
    if (p.type === 'conditional_expression' && p.namedChildren[1]?.id === child.id) return true;
    if (p.type === 'assert_statement') return true;
    if (!/^(not_operator|boolean_operator|parenthesized_expression|comparison_operator)$/.test(p.type)) return false;
  }
  return false;
}

/** `x = x.to(memory_format=torch.channels_last)` (or `m.to(...)` alone) is deleted; otherwise the keyword is removed. */
function channelsLastFix(ctx: Parameters<NonNullable<ReturnType<typeof defineRule>['check']>>[0], call: Node, mf: Node) {
  // dual-path keeps the CUDA layout (channels_last speeds up CUDA convolutions and is a no-op on XLA): nothing to change
  if (ctx.idiom.dualPath) return null;
  const { positional, keywords } = argShape(call);
  const recv = receiver(call);
  const onlyArg = positional.length === 0 && keywords.size === 1;
  if (onlyArg && methodName(call) === 'to' && recv) {
    const stmt = enclosingStatement(call);
    const expr = stmt.type === 'expression_statement' ? stmt.namedChildren[0] : null;
    const selfAssign = expr?.type === 'assignment' && expr.childForFieldName('left')?.text === recv.text && expr.childForFieldName('right')?.id === call.id;
    if (selfAssign || expr?.id === call.id) return { title: 'Remove the channels_last conversion', edits: [deleteStatement(ctx.text, stmt)] };
  }
  if (onlyArg && methodName(call) === 'contiguous') return { title: 'Remove `memory_format=torch.channels_last`', edits: [removeArg(ctx, mf)] };
  if (!onlyArg) return { title: 'Remove `memory_format=torch.channels_last`', edits: [removeArg(ctx, mf)] };
  return null;
}
