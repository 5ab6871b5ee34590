import { defineRule } from '../../core/rule';
import { callArgs, methodName, receiver } from '../../core/semantics';
import type { Node } from '../../core/parse';
import { downgrade } from '../../core/engine';
import { isXlaLauncher, launchedFunctions, singleProcess, spmdEnabled, withCallees } from './util';

/** Anything that all-reduces gradients across replicas (or makes the compiler do it). */
const REDUCTION = /optimizer_step|reduce_gradients|all_reduce|DistributedDataParallel|\bDDP\b|FullyShardedDataParallel|\bFSDP\w*\b|fully_shard|ZeroRedundancyOptimizer|use_spmd|mark_sharding/;
/** Loaders that already run the step barrier on each `next()`. */
const SYNCING_LOADER = /MpDeviceLoader|ParallelLoader|per_device_loader|wrap_loader|xla_loader/;

export default defineRule({
  id: 'TPU505',
  name: 'missing-gradient-reduction',
  title: 'Multi-process XLA training without cross-replica gradient reduction',
  severity: 'warning',
  step: 7,
  effort: 1,
  message: '`optimizer.step()` in a launched XLA process updates only this replica; reduce the gradients with `xm.optimizer_step`',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Use `xm.optimizer_step(optimizer)`' },
  triggers: ['launch', 'spawn'],
  docs: {
    what:
      'Checks the functions started by `torch_xla.launch`/`xmp.spawn` (and the same-file functions they call) for a plain `optimizer.step()` when nothing reduces gradients across replicas: ' +
      'no DDP wrapper, no XLA FSDP (`XlaFullyShardedDataParallel`, FSDPv2), no SPMD, no `xm.reduce_gradients`/`xm.all_reduce`, no `xm.optimizer_step`.',
    why:
      'Each launched process trains its own replica. `xm.optimizer_step(optimizer)` is `xm.reduce_gradients(optimizer)` (an all-reduce SUM scaled by `1/xr.world_size()`) followed by `optimizer.step()` (XM:1129-1207; DEV:171-178); ' +
      'a plain `optimizer.step()` skips the all-reduce, so the replicas silently diverge and the job trains world-size independent models.',
    example: 'def _mp_fn(index):\n    ...\n    loss.backward()\n    optimizer.step()\n\ntorch_xla.launch(_mp_fn)',
    useInstead: 'import torch_xla.core.xla_model as xm\n\n    loss.backward()\n    xm.optimizer_step(optimizer)   # barrier=True when the loop does not iterate an MpDeviceLoader',
    fixSafety:
      'Safe: the step is unchanged apart from the gradient all-reduce the launch implies. `barrier=True` is added when the loop neither iterates an `MpDeviceLoader` nor calls a step barrier itself (TPU204). ' +
      'Steps with arguments (`optimizer.step(closure)`) are reported without a fix. `ALLREDUCE_GRADIENTS_BUCKET_SIZE_MB` can bucket the all-reduce (XM:1146-1158).',
    sources: ['XM:1129-1207 torch_xla/core/xla_model.py reduce_gradients / optimizer_step', 'DEV:171-178', 'T:test_train_mp_mnist.py (xm.optimizer_step in the launched loop)'],
    torchtpu: 'The TorchTPU gradient-reduction API is not public: findings say what is missing and offer no fix.',
  },
  check(ctx) {
    if (ctx.sema.framework || spmdEnabled(ctx)) return;
    const moduleLevel = ctx.root.namedChildren
      .filter((n): n is Node => !!n && n.type !== 'function_definition' && n.type !== 'class_definition' && n.type !== 'decorated_definition')
      .map((n) => n.text)
      .join('\n');
    if (REDUCTION.test(moduleLevel)) return;
    const seen = new Set<number>();
    for (const launch of ctx.sema.nodes('call')) {
      if (!isXlaLauncher(ctx, launch) || singleProcess(launch)) continue;
      for (const target of launchedFunctions(ctx, launch)) {
        const scope = withCallees(ctx, target);
        if (scope.some((f) => REDUCTION.test(f.text))) continue;
        for (const fn of scope) {
          for (const call of ctx.sema.callsWithin(fn)) {
            if (seen.has(call.id) || methodName(call) !== 'step' || !ctx.sema.isTrainSignal(call)) continue;
            const recv = receiver(call)!;
            if (/sched|scaler|lr_/i.test(recv.text)) continue;
            seen.add(call.id);
            const hot = ctx.sema.hot(call);
            const { positional, keywords } = callArgs(call);
            const snippet = positional.length || keywords.size ? null : ctx.idiom.optimizerStep(recv.text, needsBarrier(ctx, hot?.anchor ?? null));
            ctx.report(call, {
              severity: hot && (hot.kind === 'eval' || hot.throttled) ? downgrade('warning') : 'warning',
              message:
                ctx.idiom.profile === 'torchtpu'
                  ? `\`${recv.text}.step()\` in a launched process updates only this replica; look for the missing gradient all-reduce`
                  : `\`${recv.text}.step()\` in a launched XLA process updates only this replica; reduce the gradients with \`xm.optimizer_step(${recv.text})\``,
              fix: snippet
                ? {
                    title: `Use \`${snippet.text}\``,
                    applicability: 'safe',
                    edits: [{ start: call.startIndex, end: call.endIndex, text: snippet.text }],
                    imports: snippet.imports,
                    needsAccel: snippet.needsAccel,
                  }
                : null,
            });
          }
        }
      }
    }
  },
});

function needsBarrier(ctx: { sema: { bindings(name: string): Node[] } }, loop: Node | null): boolean {
  if (!loop || (loop.type !== 'for_statement' && loop.type !== 'while_statement')) return true;
  const body = loop.childForFieldName('body')?.text ?? '';
  if (/\bsync\(|mark_step\(/.test(body)) return false;
  const it = loop.type === 'for_statement' ? loop.childForFieldName('right') : null;
  if (!it) return true;
  if (SYNCING_LOADER.test(it.text)) return false;
  const names = it.text.match(/[A-Za-z_]\w*/g) ?? [];
  return !names.some((n) => ctx.sema.bindings(n).some((v) => SYNCING_LOADER.test(v.text)));
}
