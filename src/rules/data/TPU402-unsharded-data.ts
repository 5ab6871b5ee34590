import { defineRule } from '../../core/rule';
import { replace } from '../../core/edits';
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, kwValue, mentionsXla, stringContent } from '../../core/semantics';
import { appendArg, isDataLoaderCall } from './util';

const SAMPLER = /^torch\.utils\.data(\.distributed)?\.DistributedSampler$/;
const LAUNCHERS = /^(torch_xla\.launch|torch_xla\.distributed\.xla_multiprocessing\.spawn)$/;
const WORLD_ENV = /^(WORLD_SIZE|LOCAL_WORLD_SIZE|SLURM_NTASKS|OMPI_COMM_WORLD_SIZE)$/;
const RANK_ENV = /^(RANK|LOCAL_RANK|SLURM_PROCID|SLURM_LOCALID|OMPI_COMM_WORLD_RANK|OMPI_COMM_WORLD_LOCAL_RANK)$/;

/** An environment read (`os.environ["X"]`, `os.environ.get("X")`, `os.getenv("X")`, wrapped in int()) of a variable matching `re`. */
function envRead(ctx: RuleContext, node: Node, re: RegExp): boolean {
  if (node.type === 'call') {
    const q = ctx.sema.callee(node) ?? '';
    const args = callArgs(node).positional;
    if (q === 'int' || node.childForFieldName('function')?.text === 'int') return !!args[0] && envRead(ctx, args[0], re);
    if (q === 'os.environ.get' || q === 'os.getenv') return !!args[0] && re.test(stringContent(args[0]) ?? '');
    return false;
  }
  if (node.type === 'subscript' && ctx.sema.resolve(node.childForFieldName('value')) === 'os.environ') {
    const key = node.childForFieldName('subscript');
    return !!key && re.test(stringContent(key) ?? '');
  }
  return false;
}

/** Where a sampler's world size or rank comes from when it is CUDA- or launcher-env-specific, else null. */
function cudaWorldSource(ctx: RuleContext, node: Node, kind: 'world' | 'rank', depth = 0): string | null {
  if (depth > 2) return null;
  if (kind === 'world' && node.type === 'call' && ctx.sema.callee(node) === 'torch.cuda.device_count') return '`torch.cuda.device_count()`';
  if (envRead(ctx, node, kind === 'world' ? WORLD_ENV : RANK_ENV)) return 'the launcher environment';
  if (kind === 'rank' && (node.text === 'local_rank' || /\.local_rank$/.test(node.text))) return 'the local rank';
  if (node.type === 'identifier') {
    const values = ctx.sema.bindings(node.text);
    if (values.length === 1) return cudaWorldSource(ctx, values[0], kind, depth + 1);
  }
  return null;
}

/** Evaluation data, by its sampler's or dataset's name: `eval_sampler`, `val_dataset`, `test_set`, `valid_ds`. */
const EVAL_SAMPLER = /(^|_|\.)(eval|val|valid|validation|test|dev)(_|$|[A-Z]|set|data)/i;

export default defineRule({
  id: 'TPU402',
  name: 'unsharded-data',
  title: 'Data not sharded across XLA replicas, or sharded with CUDA/env world info',
  severity: 'warning',
  step: 4,
  effort: 3,
  message: 'Each replica must read its own shard of the data',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Shard with the XLA world size and rank' },
  triggers: ['DistributedSampler', 'launch', 'spawn'],
  docs: {
    what:
      'Checks for `DistributedSampler(num_replicas=..., rank=...)` fed from CUDA or launcher state (`torch.cuda.device_count()`, `os.environ["WORLD_SIZE"]`, `RANK`, `LOCAL_RANK`, `args.local_rank`); ' +
      'for a training `DataLoader` without a sampler inside a `torch_xla.launch`/`xmp.spawn` target (non-SPMD, no manual sharding by ordinal); and for a shuffling `DistributedSampler` whose `set_epoch` is never called (info).',
    why:
      '`MpDeviceLoader` only moves one loader\'s batches to one device (PL:253-287); it does not shard. Without a sampler every replica trains on the full dataset: epochs take world_size× longer and the ' +
      'replicas average identical gradients. The repo\'s multi-process test shards with `DistributedSampler(train_dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)` ' +
      '(T:test_train_mp_mnist.py:110-121). MIG:261 says no DistributedSampler is needed with MpDeviceLoader; that contradicts the source and the tests, which this rule follows. ' +
      'Under PJRT the CUDA device count is 0 and torchrun variables are not what `torch_xla.launch` sets, so CUDA/env world info shards wrongly.',
    example: 'sampler = DistributedSampler(ds, num_replicas=torch.cuda.device_count(), rank=int(os.environ["RANK"]))',
    useInstead: 'import torch_xla.runtime as xr\nsampler = DistributedSampler(ds, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)\nloader = DataLoader(ds, batch_size=B, sampler=sampler, drop_last=True)',
    fixSafety:
      'Replacing `num_replicas`/`rank` sources with `xr.world_size()`/`xr.global_ordinal()` is safe (dual-path: `accel.world_size() if accel.is_xla() else <the original>`, so CUDA keeps its own value). ' +
      'Adding a sampler to an unsharded loader is unsafe: it changes what each replica sees and the effective batch; the sampler takes over `shuffle=` ' +
      '(dual-path: `sampler=DistributedSampler(...) if accel.is_xla() else None, shuffle=not accel.is_xla()`, so CPU and CUDA keep their order and losses). ' +
      'SPMD scripts (`xr.use_spmd()`) are not flagged: there one process per host loads the host batch and shards it with `input_sharding` (TPU509). Multi-host SPMD per-host sharding is unverified.',
    sources: [
      'PL:253-287 (torch_xla/distributed/parallel_loader.py MpDeviceLoader: no sharding)',
      'T:test/test_train_mp_mnist.py:110-121 (DistributedSampler with xr.world_size() / xr.global_ordinal())',
      'XR:106-149 (torch_xla/runtime.py world_size, global_ordinal)',
      'MIG:261 (conflicting doc statement, not followed)',
    ],
    torchtpu: 'No known world-size/rank API for the tpu device yet: findings carry no fix.',
  },
  check(ctx) {
    const spmd = ctx.sema.imports('torch_xla.distributed.spmd') || ctx.sema.nodes('call').some((c) => ctx.sema.callee(c) === 'torch_xla.runtime.use_spmd');

    // (a) DistributedSampler fed from CUDA / launcher env
    let fileFacts: { epochLoop: boolean; setsEpoch: boolean } | undefined;
    for (const call of ctx.sema.nodes('call')) {
      if (!SAMPLER.test(ctx.sema.callee(call) ?? '')) continue;
      const { positional, keywords } = callArgs(call);
      const pairs: [Node | null, 'world' | 'rank'][] = [
        [kwValue(keywords.get('num_replicas')) ?? positional[1] ?? null, 'world'],
        [kwValue(keywords.get('rank')) ?? positional[2] ?? null, 'rank'],
      ];
      for (const [value, kind] of pairs) {
        // `accel.world_size() if accel.is_xla() else <the CUDA value>` (what the dual-path fix writes) is XLA-aware
        if (!value || ctx.sema.inXlaAwareBranch(value) || (value.type === 'conditional_expression' && mentionsXla(value.namedChildren[1]?.text ?? ''))) continue;
        const source = cudaWorldSource(ctx, value, kind);
        if (!source) continue;
        let s = kind === 'world' ? ctx.idiom.worldSize() : ctx.idiom.rank();
        // dual-path keeps CUDA's own value (`accel.world_size()` is the process group's or WORLD_SIZE, not the device count)
        if (s && ctx.idiom.dualPath) s = { ...s, text: `${s.text} if ${ctx.idiom.isXla().text} else ${value.text}` };
        ctx.report(value, {
          message: `\`${kind === 'world' ? 'num_replicas' : 'rank'}\` comes from ${source}, which does not describe the XLA replicas: use the ${kind === 'world' ? 'XLA world size' : 'global XLA ordinal'}`,
          fix: s ? { title: `Use \`${s.text}\``, edits: [replace(value, s.text)], imports: s.imports, needsAccel: s.needsAccel } : null,
        });
      }

      // (c) set_epoch never called on a shuffling sampler
      const shuffle = kwValue(keywords.get('shuffle'))?.text ?? positional[3]?.text;
      const bound = call.parent?.type === 'assignment' && call.parent.childForFieldName('right')?.id === call.id;
      // file-wide facts, computed for the first sampler only (they were scanned again for every sampler call)
      const epochLoop = (fileFacts ??= { epochLoop: ctx.sema.nodes('for_statement').some((f) => /epoch/i.test(f.childForFieldName('left')?.text ?? '')), setsEpoch: ctx.sema.nodes('call').some((c) => c.childForFieldName('function')?.type === 'attribute' && c.childForFieldName('function')?.childForFieldName('attribute')?.text === 'set_epoch') }).epochLoop;
      const setsEpoch = fileFacts.setsEpoch;
      // an evaluation sampler (`eval_sampler = DistributedSampler(eval_dataset)`): the order of eval batches does not matter
      const boundName = bound ? call.parent?.childForFieldName('left')?.text ?? '' : '';
      const evalSampler = EVAL_SAMPLER.test(boundName) || EVAL_SAMPLER.test(positional[0]?.text ?? kwValue(keywords.get('dataset'))?.text ?? '');
      if (bound && shuffle !== 'False' && epochLoop && !setsEpoch && !evalSampler) {
        ctx.report(call, { severity: 'info', message: '`set_epoch(epoch)` is never called on this DistributedSampler: every epoch sees the same shuffled order', fix: null });
      }
    }

    // (b) training DataLoader without a sampler inside a torch_xla.launch / xmp.spawn target
    if (spmd) return;
    const accelLaunch = `${ctx.options.accelModule}.launch`;
    const targets = new Set<string>();
    for (const call of ctx.sema.nodes('call')) {
      const q = ctx.sema.callee(call) ?? '';
      if (!LAUNCHERS.test(q) && q !== accelLaunch) continue;
      const fn = callArgs(call).positional[0];
      if (fn?.type === 'identifier') targets.add(fn.text);
    }
    if (!targets.size) return;
    for (const fnDef of ctx.sema.nodes('function_definition')) {
      if (!targets.has(fnDef.childForFieldName('name')?.text ?? '')) continue;
      if (/ordinal|world_size|num_replicas|shard|DistributedSampler|\brank\b/.test(fnDef.text)) continue;
      for (const call of ctx.sema.within('call', fnDef)) {
        if (!isDataLoaderCall(ctx, call)) continue;
        const { positional, keywords } = callArgs(call);
        if (keywords.has('sampler') || keywords.has('batch_sampler') || positional.length > 2) continue;
        const assigned = call.parent?.type === 'assignment' ? call.parent.childForFieldName('left')?.text ?? '' : '';
        if (/val|eval|test/i.test(assigned)) continue;
        const shuffleKw = keywords.get('shuffle');
        const shuffle = kwValue(shuffleKw);
        if (!(shuffle?.text === 'True' || /train/i.test(assigned))) continue;
        const ds = positional[0] ?? kwValue(keywords.get('dataset'));
        const ws = ctx.idiom.worldSize();
        const rk = ctx.idiom.rank();
        let fix = null;
        if (ds && ws && rk) {
          let sampler = `DistributedSampler(${ds.text}, num_replicas=${ws.text}, rank=${rk.text}, shuffle=${shuffle?.text ?? 'False'})`;
          let extra = '';
          if (ctx.idiom.dualPath) {
            // CPU and CUDA keep their own sampler (a DistributedSampler shuffles with its own seed: another order, other
            // losses); the XLA processes shard
            const x = ctx.idiom.isXla().text;
            sampler = `${sampler} if ${x} else None`;
            if (shuffle?.text === 'True') extra = `, shuffle=not ${x}`;
          }
          const edit = shuffleKw ? replace(shuffleKw, `sampler=${sampler}${extra}`) : appendArg(call, `sampler=${sampler}`);
          if (edit) {
            fix = {
              title: 'Shard with a DistributedSampler',
              applicability: 'unsafe' as const,
              edits: [edit],
              imports: [{ module: 'torch.utils.data', name: 'DistributedSampler' }, ...ws.imports, ...rk.imports],
              needsAccel: ws.needsAccel || rk.needsAccel,
            };
          }
        }
        ctx.report(call, {
          message: 'This DataLoader runs in every launched process without a sampler: each replica trains on the full dataset',
          fix,
        });
      }
    }
  },
});
