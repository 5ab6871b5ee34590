import { defineRule } from '../../core/rule';
import { callArgs, kwValue, stringContent } from '../../core/semantics';
import { editArgs } from './util';
import { importsDeepSpeed } from '../kernels/util';
import { FSDP2_IMPORT_MESSAGE, FSDP2_IMPORT_MESSAGE_TORCHTPU, fsdp2Imports } from './fsdp2-imports';

const UPSTREAM: Record<string, string> = {
  'torch.distributed.fsdp.FullyShardedDataParallel': 'PyTorch FSDP',
  'torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel': 'PyTorch FSDP',
  'torch.distributed.fsdp.fully_shard': 'PyTorch FSDP2 `fully_shard`',
  'torch.distributed._composable.fsdp.fully_shard': 'PyTorch FSDP2 `fully_shard`',
  'torch.distributed._composable.fsdp.fully_shard.fully_shard': 'PyTorch FSDP2 `fully_shard`',
  'torch.distributed.optim.ZeroRedundancyOptimizer': 'PyTorch `ZeroRedundancyOptimizer`',
  'torch.distributed.optim.zero_redundancy_optimizer.ZeroRedundancyOptimizer': 'PyTorch `ZeroRedundancyOptimizer`',
};
const TRAINING_ARGS = /^transformers\.(TrainingArguments|Seq2SeqTrainingArguments)$|^trl\.\w*Config$/;

export default defineRule({
  id: 'TPU508',
  name: 'upstream-sharding-on-xla',
  title: 'PyTorch FSDP, FSDP2, ZeRO or DeepSpeed sharding',
  severity: 'error',
  step: 7,
  effort: 5,
  message: 'Upstream sharding is not a documented torch_xla path; use XLA FSDP (FSDPv2 under SPMD)',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Add `fsdp_config={"xla": True}`' },
  triggers: ['FullyShardedDataParallel', 'fully_shard', '_composable', 'FSDPModule', 'MixedPrecisionPolicy', 'ZeroRedundancyOptimizer', 'zero_optimization', 'fsdp', 'FSDP'],
  docs: {
    what:
      'Checks for `torch.distributed.fsdp.FullyShardedDataParallel`, FSDP2 `fully_shard`, `torch.distributed.optim.ZeroRedundancyOptimizer`, a DeepSpeed `"zero_optimization"` config key, ' +
      'imports of the composable FSDP API (`torch.distributed.fsdp.fully_shard`/`FSDPModule`/`MixedPrecisionPolicy`, `torch.distributed._composable.fsdp`, `torch.distributed._composable.fully_shard`) in a file that does not call `fully_shard` itself (one finding, on the first such import), ' +
      'HF `TrainingArguments(fsdp=…)` without an `fsdp_config` that sets `"xla": True`, and Lightning `FSDPStrategy(...)` / `strategy="fsdp"` (the XLA one is `XLAFSDPStrategy`, `"xla_fsdp"`).',
    why:
      'Upstream FSDP/ZeRO target NCCL process groups; running them on XLA tensors is not documented as supported (how it fails is unverified). torch_xla ships its own sharding: ' +
      'FSDPv2 on SPMD (`torch_xla.experimental.spmd_fully_sharded_data_parallel.SpmdFullyShardedDataParallel`, mesh with an `"fsdp"` axis; FSDP2 doc, EX:fsdp/train_decoder_only_fsdp_v2.py, recommended by the examples), ' +
      'FSDPv1 with one process per device (`torch_xla.distributed.fsdp.XlaFullyShardedDataParallel`, FSDP1), and its own `torch_xla.distributed.zero_redundancy_optimizer.ZeroRedundancyOptimizer` (usage unverified). ' +
      'HF Trainer switches to the XLA implementation through `fsdp_config={"xla": True, …}` (`xla_fsdp_v2`, `xla_fsdp_grad_ckpt` also exist).',
    example: 'from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model, auto_wrap_policy=policy)',
    useInstead:
      'from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2\n' +
      'from torch_xla.distributed.fsdp.wrap import transformer_auto_wrap_policy\n# mesh with an "fsdp" axis, then FSDPv2(model, mesh=mesh, auto_wrap_policy=...)',
    fixSafety:
      'Only the HF case has a fix, and it is unsafe: `fsdp_config={"xla": True}` makes the Trainer wrap with torch_xla FSDP (v1) instead of PyTorch FSDP; review the wrap policy and checkpoint format. ' +
      'It is offered in tpu-only style only, since a CUDA run cannot import torch_xla. Model code wrapped with PyTorch FSDP has to be ported by hand.',
    sources: [
      'FSDP1 docs/source/perf/fsdp_collectives.md (XlaFullyShardedDataParallel)',
      'FSDP2 docs/source/perf/fsdp_spmd.md; EX:fsdp/train_decoder_only_fsdp_v2.py (SpmdFullyShardedDataParallel, "fsdp" mesh axis)',
      'torch_xla/experimental/spmd_fully_sharded_data_parallel.py:37 `class SpmdFullyShardedDataParallel(nn.Module)` (v2.9.0; :30 in v2.3.0); torch_xla@41398bf has no `fully_shard`-style composable API',
      'torch_xla/distributed/zero_redundancy_optimizer.py (file exists; usage unverified)',
      'HF TrainingArguments fsdp_config keys xla, xla_fsdp_v2, xla_fsdp_grad_ckpt (from TrainingArguments dumps)',
    ],
    torchtpu: 'TorchTPU sharding APIs are not public yet: findings say what to replace and offer no fix.',
  },
  check(ctx) {
    let fsdp2Called = false;
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (/FSDP2/.test(UPSTREAM[callee] ?? '')) fsdp2Called = true;
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      if (callee in UPSTREAM) {
        const what = UPSTREAM[callee];
        ctx.report(call, {
          message:
            ctx.idiom.profile === 'torchtpu'
              ? `${what} is not a documented TPU path; look for the TorchTPU sharding API (not public yet)`
              : `${what} is not a documented torch_xla path; use ${/Zero/.test(what) ? "torch_xla's `ZeroRedundancyOptimizer`" : 'FSDPv2 (`SpmdFullyShardedDataParallel`) or `XlaFullyShardedDataParallel`'}`,
        });
        continue;
      }
      if (TRAINING_ARGS.test(callee)) {
        const { keywords } = callArgs(call);
        const fsdp = kwValue(keywords.get('fsdp'));
        if (!fsdp || fsdp.text === 'None' || fsdp.text === 'False' || (fsdp.type === 'string' && !(stringContent(fsdp) ?? '').trim())) continue;
        const cfgKw = keywords.get('fsdp_config');
        const cfg = kwValue(cfgKw);
        if (cfg && cfg.type !== 'dictionary') continue; // a path or variable: cannot tell
        if (cfg && /["']xla["']\s*:\s*True/.test(cfg.text)) continue;
        const snippet = !cfg ? ctx.idiom.xlaOnly('fsdp_config={"xla": True}') : null;
        ctx.report(fsdp, {
          message:
            ctx.idiom.profile === 'torchtpu'
              ? '`fsdp=` selects PyTorch FSDP; look for the TorchTPU sharding option (not public yet)'
              : '`fsdp=` without `fsdp_config={"xla": True}` selects PyTorch FSDP; set `"xla": True` to shard with torch_xla FSDP',
          fix: snippet ? { title: 'Add `fsdp_config={"xla": True}`', applicability: 'unsafe', edits: editArgs(call, [], [snippet.text]) } : null,
        });
      }
    }
    // composable FSDP imported but not called here (a parallelize helper passing `fully_shard` on): one finding on the import
    if (!fsdp2Called) {
      const imp = fsdp2Imports(ctx).sort((a, b) => a.startIndex - b.startIndex)[0];
      if (imp) ctx.report(imp, { message: ctx.idiom.profile === 'torchtpu' ? FSDP2_IMPORT_MESSAGE_TORCHTPU : FSDP2_IMPORT_MESSAGE });
    }
    // DeepSpeed config dict: {"zero_optimization": {...}}
    // in a file that imports deepspeed, TPU705 carries the engine and this dict is its related location (one finding per problem)
    const dsEngine = importsDeepSpeed(ctx);
    for (const s of ctx.sema.nodes('string')) {
      if (dsEngine) break;
      if (stringContent(s) !== 'zero_optimization' || s.parent?.type !== 'pair' || s.parent.childForFieldName('key')?.id !== s.id) continue;
      ctx.report(s, {
        message:
          ctx.idiom.profile === 'torchtpu'
            ? 'DeepSpeed ZeRO sharding needs CUDA; look for the TorchTPU sharding API (not public yet)'
            : 'DeepSpeed ZeRO sharding needs CUDA/NCCL; shard with FSDPv2 (`SpmdFullyShardedDataParallel`) or `XlaFullyShardedDataParallel`',
      });
    }
    // Lightning: `FSDPStrategy(...)` and `strategy="fsdp"` wrap with PyTorch FSDP; the XLA one is `XLAFSDPStrategy` / "xla_fsdp"
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      // `if tpu: strategy = XLAStrategy(...) else: strategy = FSDPStrategy(...)` (TinyLlama): the GPU arm of an XLA-aware choice
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      if (/^(lightning(\.pytorch|\.fabric)?|pytorch_lightning)\.strategies(\.fsdp)?\.FSDPStrategy$/.test(callee)) {
        ctx.report(call, { message: 'Lightning `FSDPStrategy` wraps the model with PyTorch FSDP (CUDA/NCCL); on TPU use `XLAFSDPStrategy` (`strategy="xla_fsdp"`)' });
        continue;
      }
      if (!/^(lightning(\.pytorch|\.fabric)?|pytorch_lightning)\.(Trainer|Fabric)$/.test(callee)) continue;
      const kw = callArgs(call).keywords.get('strategy');
      const v = kw ? kwValue(kw) : null;
      if (v?.type === 'string' && /^fsdp/.test(stringContent(v) ?? '')) {
        ctx.report(v, { message: `Lightning \`strategy=${v.text}\` wraps the model with PyTorch FSDP (CUDA/NCCL); on TPU use \`strategy="xla_fsdp"\`` });
      }
    }
  },
});
