import { defineRule } from '../../core/rule';
import { callArgs, kwValue, stringContent } from '../../core/semantics';
import type { Node } from '../../core/parse';
import { DDP, INIT_PG, callsTo, spmdEnabled } from './util';

const XM_OPT_STEP = 'torch_xla.core.xla_model.optimizer_step';
const XMP_SPAWN = 'torch_xla.distributed.xla_multiprocessing.spawn';
const XLA_FSDP1 = new Set([
  'torch_xla.distributed.fsdp.XlaFullyShardedDataParallel',
  'torch_xla.distributed.fsdp.xla_fully_sharded_data_parallel.XlaFullyShardedDataParallel',
]);

export default defineRule({
  id: 'TPU506',
  name: 'mixed-parallelism-paradigms',
  title: 'Mixing incompatible parallelism paradigms',
  severity: 'error',
  step: 7,
  effort: 3,
  message: 'Two parallelism paradigms are mixed; choose multi-process or SPMD',
  fix: { availability: 'none' },
  triggers: ['optimizer_step', 'use_spmd', 'XLA_USE_SPMD'],
  profiles: ['torch_xla'],
  docs: {
    what:
      'Checks for (a) `xm.optimizer_step` on a DDP-wrapped model, (b) SPMD (`xr.use_spmd()` or `XLA_USE_SPMD=1`) together with `torch_xla.launch`, ' +
      '(c) SPMD with `dist.init_process_group("xla")`, and (d) SPMD with `xmp.spawn`, DDP or XLA FSDP v1 in the same file.',
    why:
      '(a) DDP already all-reduces gradients in backward; `xm.optimizer_step` all-reduces them again: the average is unchanged but the communication is wasted (the repo test uses plain `optimizer.step()` with DDP, T:test_train_mp_mnist.py:151-155). ' +
      '(b) `torch_xla.launch` raises `NotImplementedError("launch function does not support SPMD at this time")` (TX:264-267). ' +
      '(c) the `xla` backend asserts "XLA backend is not supported with SPMD. Please use a CPU process group instead." (XBK:12-16). ' +
      '(d) "you can not mix SPMD with other distributed libraries" (SPMD:53-56); multi-processing is not compatible with SPMD (README).',
    example: 'xr.use_spmd()\n...\ntorch_xla.launch(_mp_fn)',
    useInstead:
      '# multi-process: torch_xla.launch + (xm.optimizer_step | DDP with plain opt.step() | XLA FSDP)\n' +
      '# SPMD: one process per host, xr.use_spmd(), a mesh and mark_sharding/FSDPv2, no launcher; a CPU gloo group only for distributed checkpointing',
    fixSafety: 'No automatic fix: choosing a paradigm reshapes the training script.',
    sources: [
      'TX:264-267 torch_xla/torch_xla.py launch (NotImplementedError under SPMD), read at pytorch/xla@022ecde',
      'XBK:12-16 torch_xla/distributed/xla_backend.py _create_xla_process_group assert, read at pytorch/xla@035c6ac',
      'SPMD:53-56; T:test_train_mp_mnist.py:151-155',
    ],
    torchtpu: 'Not run under the torchtpu profile: the conflicts are between torch_xla\'s launchers, process group and SPMD mode; TorchTPU equivalents are not public.',
  },
  check(ctx) {
    const spmd = spmdEnabled(ctx);
    // (a) xm.optimizer_step on a DDP-wrapped model: DDP and the step in one function (or DDP at module level)
    const ddpCalls = callsTo(ctx, DDP);
    if (ddpCalls.length) {
      const ddpScopes = new Set(ddpCalls.map((c) => ctx.sema.enclosingFunction(c)?.id ?? -1));
      const steps = ctx.sema.nodes('call').filter((c) => {
        const callee = ctx.sema.callee(c);
        return callee === XM_OPT_STEP || callee === `${ctx.options.accelModule}.optimizer_step`;
      });
      for (const step of steps) {
        const fn = ctx.sema.enclosingFunction(step);
        if (!ddpScopes.has(-1) && !(fn && ddpScopes.has(fn.id)) && !enclosingScopes(ctx, step).some((id) => ddpScopes.has(id))) continue;
        // `if ddp: opt.step() else: xm.optimizer_step(opt)`: the author picks one per run (pytorch/xla's test_train_mp_*)
        if (plainStepInOtherBranch(ctx, step)) continue;
        ctx.report(step, {
          severity: 'warning',
          message: 'DDP already all-reduces gradients in backward; `xm.optimizer_step` reduces them a second time (use plain `optimizer.step()` with DDP)',
        });
      }
    }
    if (!spmd) return;
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (callee === 'torch_xla.launch') {
        ctx.report(call, { message: '`torch_xla.launch` raises NotImplementedError under SPMD; run one process per host instead' });
      } else if (callee === XMP_SPAWN) {
        ctx.report(call, { severity: 'warning', message: 'Multi-processing with `xmp.spawn` cannot be mixed with SPMD; run one process per host instead' });
      } else if (INIT_PG.has(callee)) {
        const { positional, keywords } = callArgs(call);
        const b = positional[0] ?? kwValue(keywords.get('backend'));
        if (b?.type === 'string' && stringContent(b) === 'xla') {
          ctx.report(b, { message: 'The `xla` process-group backend asserts under SPMD; use a CPU `gloo` group with `init_method="xla://"`' });
        }
      } else if (DDP.has(callee) || XLA_FSDP1.has(callee)) {
        ctx.report(call, {
          severity: 'warning',
          message: `${DDP.has(callee) ? 'DDP' : 'XLA FSDP (v1)'} cannot be mixed with SPMD; shard with a mesh and \`mark_sharding\` or FSDPv2`,
        });
      }
    }
  },
});

/** A plain `<opt>.step()` in another branch of an `if` around `xm.optimizer_step(<opt>)`. */
function plainStepInOtherBranch(ctx: { sema: { callsWithin(n: Node): Node[] } }, step: Node): boolean {
  const opt = callArgs(step).positional[0]?.text;
  if (!opt) return false;
  for (let child: Node = step, p = step.parent; p && p.type !== 'function_definition'; child = p, p = p.parent) {
    if (p.type !== 'if_statement') continue;
    const branch = child;
    const other = ctx.sema.callsWithin(p).some((c) => {
      const fn = c.childForFieldName('function');
      if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'step' || fn.childForFieldName('object')?.text !== opt) return false;
      return c.startIndex < branch.startIndex || c.endIndex > branch.endIndex;
    });
    if (other) return true;
  }
  return false;
}

function enclosingScopes(ctx: { sema: { enclosingFunction(n: Node): Node | null } }, node: Node): number[] {
  const out: number[] = [];
  for (let f = ctx.sema.enclosingFunction(node); f; f = ctx.sema.enclosingFunction(f)) out.push(f.id);
  return out;
}
