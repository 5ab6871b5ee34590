import type { Node } from '../../core/parse';
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
/**
 * The torch_xla version that first implements each of those (ProcessGroupXla, torch_xla/distributed/xla_backend.py):
 * `scatter` from v2.8.0 (via reduce_scatter), `reduce`, `gather` and `alltoall` from v2.9.0 (xla_backend.py v2.9.0:239,
 * 260, 294; pytorch/xla#9437 for reduce); before that each raises NotImplementedError (v2.3.0:167-183, v2.8.0:230-254).
 */
const IMPLEMENTED_FROM: Record<string, string> = { scatter: '2.8', reduce: '2.9', gather: '2.9', alltoall: '2.9' };
/** Collectives that take a reduce op. */
const REDUCING = new Set(['all_reduce', 'reduce', 'reduce_scatter', 'reduce_scatter_tensor', 'all_reduce_coalesced'].map((n) => D + n));
const P2P = new Set([D + 'send', D + 'recv', D + 'isend', D + 'irecv']);

/**
 * Text of a module that creates (or hands off) the default process group: `init_process_group`, an `init_dist*` helper, a
 * launcher or trainer library that creates it for the script (DeepSpeed, Accelerate, Lightning, Horovod, submitit,
 * Megatron/Fairscale/Colossal-AI, the HF Trainer, detectron2, mmengine/mmcv, ignite, Ray Train, Composer, fairseq,
 * torchtitan), a device mesh, or torch_xla itself (its native collectives need no group). Any mention keeps the error quiet.
 */
const CREATES_GROUP = /\binit_process_group\b|\binit_device_mesh\b|\binit_dist|\bnew_group\b|deepspeed|accelerate|lightning|horovod|submitit|megatron|fairscale|colossalai|torch_xla|transformers|detectron2|mmengine|mmcv|ignite|ray\.train|composer|fairseq|torchtitan/;
/** A condition or early return that skips the collective in a run without a group (`if not dist.is_initialized(): return`). */
const DIST_CHECK = /is_initialized|is_available|world_size|distributed|\bddp\b|rank|num_gpus|n_gpu|ngpus|multi|parallel|\bdist\b/i;

/** Whether a condition around `call`, or an early `if …: return` before it in its function, tests for a distributed run. */
function distGuarded(call: Node): boolean {
  for (let p = call.parent, child: Node = call; p; child = p, p = p.parent) {
    if ((p.type === 'if_statement' || p.type === 'elif_clause' || p.type === 'conditional_expression' || p.type === 'while_statement') && DIST_CHECK.test((p.type === 'conditional_expression' ? p.namedChildren[1] : p.childForFieldName('condition'))?.text ?? '')) return true;
    if (p.type === 'try_statement' && child.type === 'block') return true;
    if (p.type === 'function_definition') {
      if (DIST_CHECK.test(p.childForFieldName('name')?.text ?? '')) return true;
      for (const stmt of p.childForFieldName('body')?.namedChildren ?? []) {
        if (!stmt || stmt.startIndex >= call.startIndex) break;
        if (stmt.type === 'if_statement' && DIST_CHECK.test(stmt.childForFieldName('condition')?.text ?? '') && /\b(return|raise)\b/.test(stmt.childForFieldName('consequence')?.text ?? '')) return true;
      }
    }
  }
  return false;
}

/** The nearest `if` whose body or `else` holds `node` (same function). */
function enclosingIf(node: Node): Node | null {
  for (let p = node.parent, child: Node = node; p; child = p, p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'lambda') return null;
    if (p.type === 'if_statement' && p.childForFieldName('condition')?.id !== child.id) return p;
  }
  return null;
}

/** Whether `node` sits in the `else`/`elif` part of the if statement `guard` (not its consequence). */
function inElseArm(node: Node, guard: Node): boolean {
  const body = guard.childForFieldName('consequence');
  return !(body && node.startIndex >= body.startIndex && node.endIndex <= body.endIndex);
}

/** `r != 0` / `r == 0`, `r > 0` / `r == 0`, `r in L` / `r not in L`, `not e` / `e` (spacing ignored). */
export function complementary(a: string, b: string): boolean {
  const norm = (t: string) => t.replace(/\s+/g, ' ').trim().replace(/^\((.*)\)$/, '$1').trim();
  const parse = (t: string): { subj: string; op: string; val: string } => {
    const m = /^(.+?) (==|!=|>|not in|in) (.+)$/.exec(norm(t));
    if (m) return { subj: m[1].replace(/\s/g, ''), op: m[2], val: m[3].replace(/[\s[\]()]/g, '') };
    const n = /^not (.+)$/.exec(norm(t));
    return n ? { subj: n[1].replace(/\s/g, ''), op: 'not', val: '' } : { subj: norm(t).replace(/\s/g, ''), op: 'truthy', val: '' };
  };
  const x = parse(a);
  const y = parse(b);
  if (x.subj !== y.subj) return false;
  const pair = (p: string, q: string) => (x.op === p && y.op === q) || (x.op === q && y.op === p);
  if (pair('not', 'truthy')) return true;
  // `local_rank not in [-1, 0]` / `local_rank == 0`: -1 marks a run without a process group
  if (pair('not in', '==') && (x.op === 'not in' ? x : y).val === '-1,0' && (x.op === '==' ? x : y).val === '0') return true;
  if (x.val !== y.val) return false;
  return pair('==', '!=') || pair('in', 'not in') || (pair('>', '==') && x.val === '0');
}

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
      'Checks for collectives (`dist.*`, `xm.all_reduce`, `xm.all_gather`, `xm.rendezvous`, `xm.mesh_reduce`, `dist.barrier`, …) under a rank guard (`if rank == 0`, `if xm.is_master_ordinal()`; not the rank-first idiom, where the same collective also sits under the complementary guard or in the `else` arm, so every process enters it once), ' +
      '`xm.rendezvous`/`xm.mesh_reduce` inside the training loop, a reduce op the `xla` group does not map (`ReduceOp.AVG`, `PREMUL_SUM`, `BXOR`; error where the file creates an `xla` group, else warning), a `dist.barrier()` every training step (info; not throttled, not per epoch), `torch.distributed` collectives of an entry script (`if __name__ == "__main__"`) when no Python file of its project creates a process group (`init_process_group`, a device mesh, or a launcher library such as DeepSpeed, Accelerate, Lightning or Horovod; not under a test for a distributed run such as `if dist.is_initialized()`/`if world_size > 1` or after an early return on one), and, in files that create an `xla` process group, `torch.distributed` ops the `xla` backend does not implement: ' +
      '`all_to_all_single` with split sizes, `monitored_barrier`, `all_reduce_coalesced`, `reduce`, `gather`, `scatter`, `all_to_all`, `recv` without `src`, and point-to-point `send`/`recv`.',
    why:
      '"Because XLA does not permit collective operations to run on a subset of workers, all workers must participate in the `rendezvous`" (PJRT:265-276): a collective that only rank 0 reaches hangs every process (with NCCL too). ' +
      'The rendezvous payload becomes part of the graph, so a step barrier runs before and after it: "Calling `xm.rendezvous` in the middle of model code may force an unwanted compilation" (PJRT:265-276). ' +
      '`ProcessGroupXla` raises `NotImplementedError` for `allreduce_coalesced`, `recv_anysource` and `monitored_barrier` in every version, for `scatter` before torch_xla 2.8 and for `reduce`, `gather` and `alltoall` before 2.9 (xla_backend.py v2.9.0:239-345 implements them on all_reduce/all_gather/all_to_all; the findings follow the target version), and asserts that `all_to_all_single` split sizes are unset (XBK). ' +
      'Before 2.9 its `send`/`recv` need a backend-specific channel-id maker (the base class raises NotImplementedError); 2.9 runs each as its own `xm.collective_permute` plus a graph cut and logs that this is inefficient (v2.9.0:347-373, info): exchange tensors with one `xm.collective_permute` instead.',
    example: 'if xm.is_master_ordinal():\n    xm.rendezvous("save")\n    dist.barrier()',
    useInstead:
      'xm.rendezvous("save")          # every process\nif xm.is_master_ordinal():\n    ...\n# logging inside the loop: xm.add_step_closure(log_fn, args=(loss,))\n# metadata: a CPU group, dist.new_group(backend="gloo")',
    fixSafety: 'No automatic fix: hoisting a collective out of a guard or out of the loop changes the program\'s synchronisation and needs review.',
    sources: [
      'PJRT:265-276 docs/source/learn/_pjrt.md (rendezvous: all workers must participate; mark_step before and after)',
      'torch_xla/distributed/xla_backend.py ProcessGroupXla._get_reduce_type (v2.3.0:49-65, v2.9.0:60-76): SUM, PRODUCT, BAND, BOR, MIN, MAX; BXOR NotImplementedError; other ops ValueError',
      'torch_xla/distributed/xla_backend.py ProcessGroupXla.barrier returns `_ret_work([])` (v2.3.0:161-162, v2.9.0:230-231): a no-op',
      'torch/distributed/distributed_c10d.py _get_default_group: "Default process group has not been initialized" (RuntimeError, checked with torch 1.13)',
      'XBK: torch_xla/distributed/xla_backend.py ProcessGroupXla reduce/allreduce_coalesced/alltoall/gather/scatter/recv_anysource/monitored_barrier raise NotImplementedError; alltoall_base asserts empty split sizes; send/recv via make_send_channel_id (pytorch/xla@035c6ac)',
      'TDIST docs/source/features/torch_distributed.md',
    ],
    torchtpu: 'Rank-guard and hot-loop hazards are reported the same way; backend limits are reported only where an `xla` process group is created.',
  },
  check(ctx) {
    // a script whose program (this file and every Python file of its project) creates no process group: its
    // `torch.distributed` collectives raise ("Default process group has not been initialized", torch/distributed/distributed_c10d.py
    // `_get_default_group`); only known when the project's files are listed, and only for an entry script (a library module's
    // callers may create the group)
    const noGroup = (() => {
      if (!/__name__\s*==\s*['"]__main__['"]/.test(ctx.text) || CREATES_GROUP.test(ctx.text)) return false;
      const project = ctx.project;
      if (!project?.projectFiles) return false;
      const files = project.projectFiles();
      if (!files.length) return false;
      const scan = () => files.some((f) => CREATES_GROUP.test(project.textOf(f) ?? ''));
      return !(project.derived ? project.derived('TPU507.createsGroup', scan) : scan());
    })();
    const xla = callsTo(ctx, INIT_PG).some((c) => {
      const { positional, keywords } = callArgs(c);
      const b = positional[0] ?? kwValue(keywords.get('backend'));
      return b?.type === 'string' && stringContent(b) === 'xla';
    });
    /**
     * The rank-first idiom: `if rank != 0: dist.barrier()` … (rank 0 works) … `if rank == 0: dist.barrier()`.
     * The same collective under the complementary guard (or in the `else` arm) means every process enters it once.
     */
    const pairedUnderComplement = (call: Node, guard: Node, callee: string): boolean => {
      const cond = guard.childForFieldName('condition')?.text ?? guard.namedChildren[1]?.text ?? '';
      return ctx.sema.nodes('call').some((other) => {
        if (other.id === call.id || (ctx.sema.callee(other) ?? '') !== callee) return false;
        const g = rankGuardAbove(other) ?? enclosingIf(other);
        if (!g) return false;
        if (g.id === guard.id) return inElseArm(call, guard) !== inElseArm(other, guard);
        const c2 = g.childForFieldName('condition')?.text ?? g.namedChildren[1]?.text ?? '';
        return complementary(cond, c2);
      });
    };
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      const short = call.childForFieldName('function')!.text;
      if (COLLECTIVES.has(callee)) {
        if (noGroup && callee.startsWith(D) && !distGuarded(call)) {
          ctx.report(call, { message: `\`${short}\` but no module of this program creates a process group: it raises ("Default process group has not been initialized"); create one first (\`dist.init_process_group(${ctx.idiom.profile === 'torch_xla' ? '"xla", init_method="xla://"' : '…'})\`) or drop the collective in a single-process run` });
          continue;
        }
        // a `dist.barrier()` every training step: on the `xla` group it is a no-op (ProcessGroupXla.barrier returns a
        // finished work: xla_backend.py v2.3.0:161-162, v2.9.0:230-231), on a CPU or NCCL group a stall of every process
        const hotBarrier = callee === D + 'barrier' ? ctx.sema.hot(call) : null;
        if (hotBarrier && hotBarrier.kind === 'train' && !hotBarrier.throttled && !rankGuardAbove(call)) {
          ctx.report(call, {
            severity: 'info',
            message: ctx.idiom.profile === 'torch_xla'
              ? '`dist.barrier()` every training step: on the `xla` process group it is a no-op (it orders nothing), on a CPU `gloo` group it stalls every process once per step; drop it from the loop (XLA collectives already line the processes up)'
              : '`dist.barrier()` every training step stalls every process once per step; drop it from the loop',
          });
          continue;
        }
        const guard = rankGuardAbove(call);
        if (guard && !pairedUnderComplement(call, guard, callee)) {
          ctx.report(call, { message: `\`${short}\` under a rank guard: every process must enter a collective, so the others hang; move it out of the \`if\`` });
          continue;
        }
      }
      if ((callee === XM + 'rendezvous' || callee === XM + 'mesh_reduce') && ctx.idiom.profile === 'torch_xla') {
        const hot = ctx.sema.hot(call);
        if (hot) {
          const sev = hot.kind === 'eval' || hot.throttled ? downgrade('warning') : 'warning';
          ctx.report(call, { severity: sev, message: `\`${short}\` in the training loop forces a step barrier before and after it and may recompile; move it out of the loop or use \`xm.add_step_closure\`` });
          continue;
        }
      }
      // `dist.all_reduce(t, op=dist.ReduceOp.AVG)` (pyg's multi-GPU examples): ProcessGroupXla maps SUM, PRODUCT, BAND,
      // BOR, MIN and MAX only; BXOR raises NotImplementedError and any other op ValueError("Invalid reduce op")
      // (_get_reduce_type, xla_backend.py v2.3.0:49-65, v2.9.0:60-76). An error where this file creates the `xla` group,
      // a warning in code still on another backend (it raises once the group is `xla`)
      if (REDUCING.has(callee) && ctx.idiom.profile === 'torch_xla') {
        const { positional, keywords } = callArgs(call);
        const op = kwValue(keywords.get('op')) ?? (callee === D + 'reduce' ? positional[2] : callee.startsWith(D + 'reduce_scatter') ? positional[2] : positional[1]);
        const name = /(?:^|\.)ReduceOp\.(AVG|PREMUL_SUM|BXOR)$/.exec(op?.text ?? '')?.[1];
        if (op && name) {
          ctx.report(op, {
            severity: xla ? 'error' : 'warning',
            message: `\`ReduceOp.${name}\` is not a reduce op of the \`xla\` process group (only SUM, PRODUCT, MIN, MAX, BAND and BOR; ${name === 'BXOR' ? 'BXOR raises NotImplementedError' : 'it raises ValueError "Invalid reduce op"'})${name === 'AVG' ? ': reduce with SUM and divide by the world size' : ''}${xla ? '' : ' (this file\'s group is not `xla` yet)'}`,
          });
          continue;
        }
      }
      if (!xla || ctx.idiom.profile !== 'torch_xla') continue; // the `xla` process group is torch_xla's
      const { positional, keywords } = callArgs(call);
      if (callee === D + 'all_to_all_single') {
        const splits = [kwValue(keywords.get('output_split_sizes')) ?? positional[2], kwValue(keywords.get('input_split_sizes')) ?? positional[3]];
        if (splits.some((s) => s && s.text !== 'None' && s.text !== '[]')) {
          ctx.report(call, { message: '`all_to_all_single` with split sizes: the `xla` backend asserts they are unset (equal splits only)' });
        }
        continue;
      }
      if (callee in NOT_IMPLEMENTED) {
        const from = IMPLEMENTED_FROM[NOT_IMPLEMENTED[callee]];
        if (from && ctx.idiom.profile === 'torch_xla' && ctx.idiom.at(from)) continue;
        ctx.report(call, { message: `\`${short}\` is not implemented by the \`xla\` process group (\`${NOT_IMPLEMENTED[callee]}\` raises NotImplementedError)` });
        continue;
      }
      if (P2P.has(callee)) {
        // v2.9.0 implements send/recv with `xm.collective_permute` (xla_backend.py v2.9.0:347-373; it logs that they are
        // inefficient); before, they need a channel-id maker the base class does not provide (v2.3.0:193-196)
        const recvAnyCall = (callee === D + 'recv' || callee === D + 'irecv') && !positional[1] && !keywords.has('src');
        if (!recvAnyCall && ctx.idiom.profile === 'torch_xla' && ctx.idiom.at('2.9')) {
          ctx.report(call, { severity: 'info', message: `\`${short}\`: the \`xla\` process group runs each point-to-point op as its own \`xm.collective_permute\` plus a graph cut (torch_xla 2.9, which warns that they are inefficient); exchange tensors with one \`xm.collective_permute\` over all source-target pairs` });
          continue;
        }
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
