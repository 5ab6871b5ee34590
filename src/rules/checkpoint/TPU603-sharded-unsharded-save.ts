import { defineRule, type FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, kwValue, methodName, receiver, enclosingStatement } from '../../core/semantics';
import { insertLineBefore, replace } from '../../core/edits';
import { fsdpV1, holdsDeviceState, isSpmd, saveArgs, TORCH_SAVE, XM_SAVE } from './util';

const DCP = { module: 'torch.distributed.checkpoint', alias: 'dist_cp' };
const XC = { module: 'torch_xla.experimental.distributed_checkpoint', alias: 'xc' };
const DCP_LOADS = new Set(['torch.distributed.checkpoint.load', 'torch.distributed.checkpoint.load_state_dict']);

export default defineRule({
  id: 'TPU603',
  name: 'sharded-unsharded-save',
  title: 'Sharded models saved or loaded with unsharded APIs',
  severity: 'warning',
  step: 8,
  effort: 3,
  message: 'a sharded model is checkpointed with an unsharded API',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Use distributed checkpointing' },
  triggers: ['save', 'restore', 'load', 'state_dict_type', 'StateDictConfig'],
  docs: {
    what:
      'Checks, in SPMD/FSDPv2 code (`xr.use_spmd()`, `xs.mark_sharding`, `SpmdFullyShardedDataParallel`), for `torch.save`/`xm.save` of a state dict; in torch_xla FSDP (v1) code, for saves without `get_shard_metadata()`; ' +
      'for upstream FSDP checkpointing (`FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(...))`, `FSDP.set_state_dict_type`, `FSDP.full_optim_state_dict`/`optim_state_dict`; info, once per call, the state-dict configs as related locations, no fix), ' +
      'and for optimizer state restored through `torch.distributed.checkpoint` or `CheckpointManager.restore` without `prime_optimizer` first.',
    why:
      'SPMD state dicts hold sharded XLA tensors; torch_xla checkpoints them with `torch.distributed.checkpoint` and its `SPMDSavePlanner`/`SPMDLoadPlanner` (DCP:17-46), which need a CPU process group: ' +
      '`dist.init_process_group("gloo", init_method="xla://")` after `import torch_xla.distributed.xla_backend` (DCP:122-141). `CheckpointManager(path, save_interval)` adds managed, asynchronous and preemption checkpoints (DCP:55-100). ' +
      'Optimizer state is created lazily, so an in-place restore needs `prime_optimizer(optim)` right before it (destructive: it runs a zero-gradient step) (DCP:102-116). ' +
      'FSDP (v1) ranks each save their own shard together with `model.get_shard_metadata()` to a rank-specific path; `consolidate_sharded_model_checkpoints` merges them (torch_xla/distributed/fsdp).',
    example: 'xr.use_spmd()\n...\ntorch.save(model.state_dict(), "ckpt.pt")',
    useInstead:
      'import torch.distributed.checkpoint as dist_cp\nimport torch_xla.experimental.distributed_checkpoint as xc\n\n' +
      'dist_cp.save(state_dict=model.state_dict(), storage_writer=dist_cp.FileSystemWriter("ckpt"), planner=xc.SPMDSavePlanner())',
    fixSafety:
      'Unsafe: distributed checkpoints are directories of shards read back with `dist_cp.load(..., planner=xc.SPMDLoadPlanner())`, not files for `torch.load`, and they need the gloo process group. ' +
      'The FSDP (v1) fix saves `{"model": ..., "shard_metadata": model.get_shard_metadata()}` per rank (`master_only=False`) to `<path>_rank-NNNNNNNN-of-NNNNNNNN`, the naming the consolidation helper expects by default is not verified here. ' +
      '`prime_optimizer` changes parameters and optimizer state: it is inserted right before the optimizer state is read for the restore.',
    sources: [
      'DCP:17-46, 55-116, 122-141 (docs/source/perf/spmd_distributed_checkpoint.md)',
      'torch_xla/experimental/distributed_checkpoint/__init__.py (CheckpointManager, SPMDSavePlanner, SPMDLoadPlanner, prime_optimizer)',
      'torch_xla/distributed/fsdp (get_shard_metadata, consolidate_sharded_model_checkpoints; xla_fully_sharded_data_parallel.py:1600)',
      'FSDPC: docs/source/perf/fsdp_collectives.md:81-100 at v2.9.0 (docs/fsdp.md:41 at v2.3.0): each rank saves model.state_dict() with model.get_shard_metadata() through xm.save(master_only=False); consolidate_sharded_model_checkpoints (state_dict_utils.py:109 at v2.3.0 and v2.9.0); no state_dict_type or StateDictConfig in torch_xla/ at v2.9.0 (git grep)',
    ],
    torchtpu: 'No torchtpu replacement is known; sharded checkpointing for torch_tpu is not documented yet.',
  },
  check(ctx) {
    upstreamFsdpCheckpoint(ctx);
    if (!ctx.sema.imports('torch_xla')) return;
    const spmd = isSpmd(ctx);
    const fsdp = fsdpV1(ctx);
    const hasShardMeta = ctx.sema.nodes('call').some((c) => methodName(c) === 'get_shard_metadata');
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (callee !== TORCH_SAVE && callee !== XM_SAVE) continue;
      const { obj, path, extra } = saveArgs(call);
      if (!obj || !path || !holdsDeviceState(ctx, obj)) continue;
      const stmtCall = call.parent?.type === 'expression_statement';
      const fn = callee === XM_SAVE ? 'xm.save' : 'torch.save';
      if (spmd) {
        const snippet = stmtCall && !extra.length
          ? ctx.idiom.xlaAlways(`dist_cp.save(state_dict=${obj.text}, storage_writer=dist_cp.FileSystemWriter(${path.text}), planner=xc.SPMDSavePlanner())`, DCP, XC)
          : null;
        ctx.report(call, {
          message: `\`${fn}\` of an SPMD-sharded state dict: checkpoint it with torch.distributed.checkpoint and \`SPMDSavePlanner\``,
          fix: snippet ? { title: 'Save with `dist_cp.save(..., planner=xc.SPMDSavePlanner())`', edits: [replace(call, snippet.text)], imports: snippet.imports } : null,
        });
      } else if (fsdp.used && !hasShardMeta) {
        let fix: FixDraft | null = null;
        const recv = obj.type === 'call' && methodName(obj) === 'state_dict' ? receiver(obj) : null;
        if (recv?.type === 'identifier' && fsdp.names.has(recv.text) && (path.type === 'identifier' || path.type === 'string') && stmtCall && !extra.length) {
          const base = path.type === 'string' ? `"${path.text.slice(1, -1).replace(/[{}"\\]/g, '')}"` : path.text;
          if (path.type !== 'string' || /^["'][^"'{}\\]*["']$/.test(path.text)) {
            const target = `f"{${base}}_rank-{xr.global_ordinal():08d}-of-{xr.world_size():08d}"`;
            const snippet = ctx.idiom.xlaAlways(
              `xm.save({"model": ${recv.text}.state_dict(), "shard_metadata": ${recv.text}.get_shard_metadata()}, ${path.type === 'string' ? `f"${path.text.slice(1, -1)}_rank-{xr.global_ordinal():08d}-of-{xr.world_size():08d}"` : target}, master_only=False)`,
              { module: 'torch_xla.core.xla_model', alias: 'xm' },
              { module: 'torch_xla.runtime', alias: 'xr' },
            );
            if (snippet) fix = { title: 'Save each shard with its shard metadata', edits: [replace(call, snippet.text)], imports: snippet.imports };
          }
        }
        ctx.report(call, { message: `\`${fn}\` of an FSDP-sharded model without \`get_shard_metadata()\`: the shards cannot be consolidated`, fix });
      }
    }
    if (!spmd || ctx.sema.nodes('call').some((c) => /(^|\.)prime_optimizer$/.test(ctx.sema.callee(c) ?? c.childForFieldName('function')?.text ?? ''))) return;
    const managers = new Set(
      ctx.sema.nodes('assignment')
        .filter((a) => {
          // `x: int` (annotation only) and broken code have no right-hand side
          const right = a.childForFieldName('right');
          return right?.type === 'call' && /(^|\.)CheckpointManager$/.test(ctx.sema.callee(right) ?? '') && a.childForFieldName('left')?.type === 'identifier';
        })
        .map((a) => a.childForFieldName('left')!.text),
    );
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      const recv = receiver(call);
      const isRestore = methodName(call) === 'restore' && recv?.type === 'identifier' && managers.has(recv.text);
      if (!DCP_LOADS.has(callee) && !isRestore) continue;
      const { positional, keywords } = callArgs(call);
      const sd = isRestore ? positional[1] ?? kwValue(keywords.get('state_dict')) : positional[0] ?? kwValue(keywords.get('state_dict'));
      const optCall = sd ? optimizerStateCall(ctx, sd, call) : null;
      if (!optCall) continue;
      const opt = receiver(optCall)!;
      // prime_optimizer first appears in torch_xla 2.4 (experimental/distributed_checkpoint/util.py:7 at v2.4.0; absent at v2.3.0)
      const primeable = ctx.idiom.at('2.4');
      const snippet = primeable ? ctx.idiom.xlaAlways(`prime_optimizer(${opt.text})`, { module: XC.module, name: 'prime_optimizer' }) : null;
      ctx.report(call, {
        message: primeable
          ? `optimizer state is restored in place without \`prime_optimizer(${opt.text})\` first: the lazily created state is missing`
          : `optimizer state is restored in place before it exists (it is created lazily); torch_xla ${ctx.idiom.version} has no \`prime_optimizer\` (it arrives in 2.4): run one zero-gradient step first, or upgrade`,
        fix: snippet
          ? { title: `Call \`prime_optimizer(${opt.text})\` before reading its state`, edits: [insertLineBefore(ctx.text, enclosingStatement(optCall), snippet.text)], imports: snippet.imports }
          : null,
      });
    }
  },
});

const FSDP_CLASSES = ['torch.distributed.fsdp.FullyShardedDataParallel', 'torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel'];
const FSDP_CKPT = new Set(FSDP_CLASSES.flatMap((c) => ['state_dict_type', 'set_state_dict_type', 'full_optim_state_dict', 'optim_state_dict'].map((m) => `${c}.${m}`)));
const STATE_DICT_CONFIG = /^torch\.distributed\.fsdp\.(\w+\.)*(Full|Sharded|Local)(Optim)?StateDictConfig$/;

/**
 * Upstream FSDP checkpointing (`with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg): sd = model.state_dict()`):
 * torch_xla's FSDP has no state-dict types; its checkpoint is per-rank shards plus shard metadata, consolidated
 * offline (FSDPC). Info (the FSDP wrap itself is TPU508's), no fix: the save, its paths and the load all change.
 */
function upstreamFsdpCheckpoint(ctx: Parameters<NonNullable<ReturnType<typeof defineRule>['check']>>[0]): void {
  const calls = ctx.sema.nodes('call').filter((c) => FSDP_CKPT.has(ctx.sema.callee(c) ?? ''));
  if (!calls.length) return;
  const configs = ctx.sema.nodes('call').filter((c) => STATE_DICT_CONFIG.test(ctx.sema.callee(c) ?? ''));
  const spmd = isSpmd(ctx);
  // one finding per function that checkpoints (its first such call), the others and the configs as related locations
  const fnOf = (n: Node) => ctx.sema.enclosingFunction(n)?.id ?? null;
  const done = new Set<number | null>();
  for (const call of calls) {
    const fn = fnOf(call);
    if (done.has(fn)) continue;
    done.add(fn);
    const related = [
      ...calls.filter((c) => c.id !== call.id && fnOf(c) === fn).map((c) => ({ start: c.startIndex, end: c.endIndex, message: 'more upstream FSDP checkpointing' })),
      ...configs.filter((c) => fnOf(c) === fn).map((c) => ({ start: c.startIndex, end: c.endIndex, message: 'the upstream FSDP state-dict config' })),
    ];
    const what = `\`${short(call.childForFieldName('function')!.text)}\``;
    ctx.report(call, {
      severity: 'info',
      message: ctx.idiom.profile === 'torchtpu'
        ? `${what} is upstream FSDP checkpointing; no TorchTPU sharded-checkpoint path is documented yet`
        : spmd
          ? `${what} is upstream FSDP checkpointing, which torch_xla's FSDP does not have; under SPMD save the sharded state dict with \`dist_cp.save(..., planner=xc.SPMDSavePlanner())\``
          : `${what} is upstream FSDP checkpointing, which torch_xla's FSDP (\`XlaFullyShardedDataParallel\`) does not have: each rank saves \`{"model": model.state_dict(), "shard_metadata": model.get_shard_metadata()}\` with \`xm.save(..., master_only=False)\` to its own path, and \`consolidate_sharded_model_checkpoints\` stitches the full state dict`,
      related,
      fix: null,
    });
  }
}

function short(t: string): string {
  const one = t.replace(/\s+/g, ' ');
  return one.length > 40 ? `${one.slice(0, 39)}…` : one;
}

/** The `<opt>.state_dict()` call inside the restored state dict (directly or through its binding). */
function optimizerStateCall(ctx: Parameters<NonNullable<ReturnType<typeof defineRule>['check']>>[0], sd: Node, at: Node): Node | null {
  const exprs: Node[] = [sd];
  if (sd.type === 'identifier') exprs.push(...ctx.sema.bindings(sd.text).filter((b) => b.startIndex < at.startIndex).slice(-1));
  for (const e of exprs) {
    for (const c of ctx.sema.callsWithin(e)) {
      const r = receiver(c);
      if (methodName(c) === 'state_dict' && r && /optim|opt\b|optimizer/i.test(r.text)) return c;
    }
  }
  return null;
}
