import { defineRule, type RuleContext } from '../../core/rule';
import { callArgs, kwValue, stringContent } from '../../core/semantics';
import { Idioms } from '../../core/idioms';
import { deleteStatement, insertLineBefore } from '../../core/edits';
import type { Node } from '../../core/parse';
import { USE_SPMD, callsTo, envWrites, spmdEnabled } from './util';

const XLA_DEVICE_CALLS = new Set(['torch_xla.device', 'torch_xla.core.xla_model.xla_device', 'torch_xla.torch_xla.device']);
const LOADERS = new Set(['torch_xla.distributed.parallel_loader.MpDeviceLoader', 'torch_xla.distributed.parallel_loader.ParallelLoader']);

/** An expression naming the XLA device: `torch_xla.device()`, `torch.device("xla")`, `"xla"`, or a name bound to one. */
function isXlaDevice(ctx: RuleContext, node: Node | null | undefined, depth = 0): boolean {
  if (!node || depth > 3) return false;
  if (node.type === 'string') return /^xla(:\d+)?$/.test(stringContent(node) ?? '');
  if (node.type === 'call') {
    const callee = ctx.sema.callee(node) ?? '';
    if (XLA_DEVICE_CALLS.has(callee)) return true;
    if (callee === 'torch.device') return isXlaDevice(ctx, callArgs(node).positional[0], depth + 1);
    return false;
  }
  if (node.type === 'identifier') {
    const values = ctx.sema.bindings(node.text);
    return values.length > 0 && values.every((v) => isXlaDevice(ctx, v, depth + 1));
  }
  return false;
}

/** The statement puts a tensor or module on the XLA device (`.to(xla)`, `device=xla` factories). */
function createsXlaTensor(ctx: RuleContext, stmt: Node): boolean {
  if (stmt.type === 'function_definition' || stmt.type === 'class_definition' || stmt.type === 'decorated_definition') return false;
  return ctx.sema.callsWithin(stmt).some((call) => {
    const fn = call.childForFieldName('function');
    const { positional, keywords } = callArgs(call);
    if (fn?.type === 'attribute' && fn.childForFieldName('attribute')?.text === 'to' && isXlaDevice(ctx, positional[0] ?? kwValue(keywords.get('device')))) return true;
    return keywords.has('device') && fn?.type !== 'identifier' && /^torch\./.test(ctx.sema.callee(call) ?? '') && isXlaDevice(ctx, kwValue(keywords.get('device')));
  });
}

export default defineRule({
  id: 'TPU509',
  name: 'spmd-setup-error',
  title: 'SPMD setup errors',
  severity: 'warning',
  step: 7,
  effort: 1,
  message: 'SPMD setup error',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Call `xr.use_spmd()` before any XLA tensor exists' },
  triggers: ['use_spmd', 'XLA_USE_SPMD'],
  profiles: ['torch_xla'],
  textKinds: ['shell', 'dotenv', 'dockerfile', 'yaml'],
  docs: {
    what:
      'Checks for `xr.use_spmd()` called after tensors or modules were already put on the XLA device, the deprecated `XLA_USE_SPMD=1` switch (Python, shell, `.env`, Dockerfiles, YAML), ' +
      'and, under SPMD, an `MpDeviceLoader` without `input_sharding` in a file that never calls `xs.mark_sharding`.',
    why:
      '`use_spmd()` after XLA tensors exist warns "Replicating tensors already initialized on non-virtual XLA device for SPMD …" and replicates them, a one-time overhead (XR:206-214). ' +
      '`XLA_USE_SPMD` makes `use_spmd()` warn "XLA_USE_SPMD is being deprecated. Use torch_xla.runtime.use_spmd() without setting XLA_USE_SPMD env-var." (XR:200-203, since 2.1). ' +
      'Without `input_sharding` (or `xs.mark_sharding` on the inputs) every device gets the whole host batch: the data is replicated, not split. ' +
      'With one SPMD process per host the host batch should be the per-device batch times the device count (the examples do `batch_size *= num_devices`, EX:data_parallel/train_resnet_spmd_data_parallel.py; not checked by this rule).',
    example: 'device = torch_xla.device()\nmodel = Net().to(device)\nxr.use_spmd()',
    useInstead:
      'import numpy as np, torch_xla.runtime as xr, torch_xla.distributed.spmd as xs\n\nxr.use_spmd()                      # first, before any XLA tensor\n' +
      'n = xr.global_runtime_device_count()\nmesh = xs.Mesh(np.arange(n), (n,), ("data",))\n' +
      'loader = pl.MpDeviceLoader(cpu_loader, device, input_sharding=xs.ShardingSpec(mesh, ("data", None, None, None)))',
    fixSafety:
      'Moving `xr.use_spmd()` in front of the first statement of the same block that puts a tensor on the XLA device is safe: SPMD is then on before any tensor exists, as recommended. ' +
      'Replacing an `XLA_USE_SPMD=1` write with `xr.use_spmd()` is unsafe (the call runs where the write was; check nothing before it touched the device). Missing `input_sharding` needs a mesh and the input rank: no fix.',
    sources: [
      'XR:200-214 torch_xla/runtime.py use_spmd (XLA_USE_SPMD deprecation warning; replication warning), read at pytorch/xla@022ecde',
      'SPMD docs/source/perf/spmd_basic.md; EX:data_parallel/train_resnet_spmd_data_parallel.py',
      'PL:85-93 (MpDeviceLoader forwards input_sharding to ParallelLoader)',
    ],
    torchtpu: 'Not run under the torchtpu profile: it checks torch_xla\'s SPMD API, and TorchTPU\'s SPMD API is not public.',
  },
  check(ctx) {
    const moveOk = ctx.idiom.xlaAlways('xr.use_spmd()');
    // 1. use_spmd after XLA tensors exist (same block, earlier statements)
    for (const call of callsTo(ctx, [USE_SPMD])) {
      const stmt = call.parent?.type === 'expression_statement' ? call.parent : null;
      const block = stmt?.parent;
      if (!stmt || !block) continue;
      const first = block.namedChildren.find((s): s is Node => !!s && s.startIndex < stmt.startIndex && createsXlaTensor(ctx, s));
      if (!first) continue;
      ctx.report(call, {
        message: '`xr.use_spmd()` runs after tensors were put on the XLA device; they get replicated. Call it first, before any XLA tensor exists',
        fix: moveOk
          ? {
              title: 'Move `xr.use_spmd()` before the first XLA tensor',
              applicability: 'safe',
              edits: [insertLineBefore(ctx.text, first, stmt.text), deleteStatement(ctx.text, stmt)],
            }
          : null,
      });
    }
    // 2. XLA_USE_SPMD=1 written from Python
    for (const w of envWrites(ctx, 'XLA_USE_SPMD')) {
      if (!w.value || !/^['"]?(1|true)['"]?$/i.test(w.value.text.trim())) continue;
      const snippet = ctx.idiom.xlaAlways('xr.use_spmd()', Idioms.imports.XR);
      const replaceable = w.stmt.type === 'expression_statement' && w.stmt.parent?.type === 'module' && callsTo(ctx, [USE_SPMD]).length === 0;
      ctx.report(w.node, {
        message: '`XLA_USE_SPMD` is deprecated; enable SPMD with `torch_xla.runtime.use_spmd()`',
        fix:
          snippet && replaceable
            ? { title: 'Call `xr.use_spmd()` instead', applicability: 'unsafe', edits: [{ start: w.stmt.startIndex, end: w.stmt.endIndex, text: snippet.text }], imports: snippet.imports }
            : null,
      });
    }
    // 3. SPMD loader that replicates the batch
    if (!spmdEnabled(ctx) || callsTo(ctx, ['torch_xla.distributed.spmd.mark_sharding', 'torch_xla.experimental.xla_sharding.mark_sharding']).length) return;
    for (const call of callsTo(ctx, LOADERS)) {
      if (callArgs(call).keywords.has('input_sharding')) continue;
      ctx.report(call, {
        message: 'Under SPMD this loader copies the whole host batch to every device; pass `input_sharding=xs.ShardingSpec(mesh, ("data", …))` to split it',
      });
    }
  },
  checkText(ctx) {
    for (const m of ctx.text.matchAll(/\bXLA_USE_SPMD\s*[=:]\s*["']?(1|true)\b/gi)) {
      const ls = ctx.text.lastIndexOf('\n', m.index! - 1) + 1;
      if (/^\s*#/.test(ctx.text.slice(ls, m.index!))) continue;
      ctx.report({ start: m.index!, end: m.index! + 'XLA_USE_SPMD'.length }, { message: '`XLA_USE_SPMD` is deprecated; enable SPMD with `torch_xla.runtime.use_spmd()` at the start of the program' });
    }
  },
});
