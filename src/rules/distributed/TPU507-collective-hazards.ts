import { defineRule } from '../../core/rule';
import { callArgs, kwValue, stringContent } from '../../core/semantics';
import { downgrade } from '../../core/engine';
import { INIT_PG, callsTo, rankGuardAbove } from './util';

const D = 'torch.distributed.';
const XM = 'torch_xla.core.xla_model.';
/** Collectives every rank must enter. */
const COLLECTIVES = new Set([
  ...['all_reduce', 'all_gather', 'all_gather_into_tensor', 'all_gather_object', 'broadcast', 'broadcast_object_list', 'reduce', 'reduce_scatter',
    'reduce_scatter_tensor', 'all_to_all', 'all_to_all_single', 'barrier', 'gather', 'gather_object', 'scatter', 'scatter_object_list', 'monitored_barrier'].map((n) => D + n),
  ...['all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all', 'collective_permute', 'collective_broadcast', 'rendezvous', 'mesh_reduce',
    'broadcast_master_param', 'reduce_gradients', 'optimizer_step'].map((n) => XM + n),
]);
/** torch.distributed calls the xla backend does not implement (ProcessGroupXla raises NotImplementedError). */
const NOT_IMPLEMENTED: Record<string, string> = {
  [D + 'monitored_barrier']: 'monitored_barrier',
  [D + 'all_reduce_coalesced']: 'allreduce_coalesced',
  [D + 'reduce']: 'reduce',
  [D + 'gather']: 'gather',
  [D + 'scatter']: 'scatter',
  [D + 'all_to_all']: 'alltoall',
};
const P2P = new Set([D + 'send', D + 'recv', D + 'isend', D + 'irecv']);

export default defineRule({
  id: 'TPU507',
  name: 'collective-op-hazard',
  title: 'Collective-op limits and synchronization hazards',
  severity: 'error',
  step: 7,
  effort: 3,
  message: 'Collective-op hazard on XLA',
  fix: { availability: 'none' },
  triggers: ['torch.distributed', 'dist', 'rendezvous', 'mesh_reduce', 'all_reduce', 'all_gather', 'barrier'],
  docs: {
    what:
      'Checks for collectives (`dist.*`, `xm.all_reduce`, `xm.all_gather`, `xm.rendezvous`, `xm.mesh_reduce`, `dist.barrier`, …) under a rank guard (`if rank == 0`, `if xm.is_master_ordinal()`), ' +
      '`xm.rendezvous`/`xm.mesh_reduce` inside the training loop, and, in files that create an `xla` process group, `torch.distributed` ops the `xla` backend does not implement: ' +
      '`all_to_all_single` with split sizes, `monitored_barrier`, `all_reduce_coalesced`, `reduce`, `gather`, `scatter`, `all_to_all`, `recv` without `src`, and point-to-point `send`/`recv`.',
    why:
      '"Because XLA does not permit collective operations to run on a subset of workers, all workers must participate in the `rendezvous`" (PJRT:265-276): a collective that only rank 0 reaches hangs every process (with NCCL too). ' +
      'The rendezvous payload becomes part of the graph, so a step barrier runs before and after it: "Calling `xm.rendezvous` in the middle of model code may force an unwanted compilation" (PJRT:265-276). ' +
      '`ProcessGroupXla` raises `NotImplementedError` for `reduce`, `allreduce_coalesced`, `alltoall`, `gather`, `scatter`, `recv_anysource` and `monitored_barrier`, and asserts that `all_to_all_single` split sizes are unset (XBK). ' +
      'Its `send`/`recv` need a backend-specific channel-id maker (the base class raises NotImplementedError): exchange tensors with `xm.collective_permute` instead.',
    example: 'if xm.is_master_ordinal():\n    xm.rendezvous("save")\n    dist.barrier()',
    useInstead:
      'xm.rendezvous("save")          # every process\nif xm.is_master_ordinal():\n    ...\n# logging inside the loop: xm.add_step_closure(log_fn, args=(loss,))\n# metadata: a CPU group, dist.new_group(backend="gloo")',
    fixSafety: 'No automatic fix: hoisting a collective out of a guard or out of the loop changes the program\'s synchronisation and needs review.',
    sources: [
      'PJRT:265-276 docs/source/learn/_pjrt.md (rendezvous: all workers must participate; mark_step before and after)',
      'XBK: torch_xla/distributed/xla_backend.py ProcessGroupXla reduce/allreduce_coalesced/alltoall/gather/scatter/recv_anysource/monitored_barrier raise NotImplementedError; alltoall_base asserts empty split sizes; send/recv via make_send_channel_id (pytorch/xla@035c6ac)',
      'TDIST docs/source/features/torch_distributed.md',
    ],
    torchtpu: 'Rank-guard and hot-loop hazards are reported the same way; backend limits are reported only where an `xla` process group is created.',
  },
  check(ctx) {
    // backend limits only matter where this file creates an `xla` process group
    const xla = callsTo(ctx, INIT_PG).some((c) => {
      const { positional, keywords } = callArgs(c);
      const b = positional[0] ?? kwValue(keywords.get('backend'));
      return b?.type === 'string' && stringContent(b) === 'xla';
    });
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      const short = call.childForFieldName('function')!.text;
      if (COLLECTIVES.has(callee)) {
        const guard = rankGuardAbove(call);
        if (guard) {
          ctx.report(call, { message: `\`${short}\` under a rank guard: every process must enter a collective, so the others hang; move it out of the \`if\`` });
          continue;
        }
      }
      if (callee === XM + 'rendezvous' || callee === XM + 'mesh_reduce') {
        const hot = ctx.sema.hot(call);
        if (hot) {
          const sev = hot.kind === 'eval' || hot.throttled ? downgrade('warning') : 'warning';
          ctx.report(call, { severity: sev, message: `\`${short}\` in the training loop forces a step barrier before and after it and may recompile; move it out of the loop or use \`xm.add_step_closure\`` });
          continue;
        }
      }
      if (!xla) continue;
      const { positional, keywords } = callArgs(call);
      if (callee === D + 'all_to_all_single') {
        const splits = [kwValue(keywords.get('output_split_sizes')) ?? positional[2], kwValue(keywords.get('input_split_sizes')) ?? positional[3]];
        if (splits.some((s) => s && s.text !== 'None' && s.text !== '[]')) {
          ctx.report(call, { message: '`all_to_all_single` with split sizes: the `xla` backend asserts they are unset (equal splits only)' });
        }
        continue;
      }
      if (callee in NOT_IMPLEMENTED) {
        ctx.report(call, { message: `\`${short}\` is not implemented by the \`xla\` process group (\`${NOT_IMPLEMENTED[callee]}\` raises NotImplementedError)` });
        continue;
      }
      if (P2P.has(callee)) {
        const recvAny = (callee === D + 'recv' || callee === D + 'irecv') && !positional[1] && !keywords.has('src');
        ctx.report(call, {
          severity: recvAny ? 'error' : 'warning',
          message: recvAny
            ? '`dist.recv` without `src` needs `recv_anysource`, which the `xla` process group does not implement'
            : `\`${short}\`: point-to-point ops are not usable with the \`xla\` process group as is; exchange tensors with \`xm.collective_permute\``,
        });
      }
    }
  },
});
