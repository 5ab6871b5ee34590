import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import { cudaGuarded } from '../device/cuda-util';

const SYNC_BN = new Set(['torch.nn.SyncBatchNorm', 'torch.nn.modules.SyncBatchNorm', 'torch.nn.modules.batchnorm.SyncBatchNorm']);
const CONVERT = new Set([...SYNC_BN].map((c) => `${c}.convert_sync_batchnorm`));

export default defineRule({
  id: 'TPU510',
  name: 'sync-batchnorm',
  title: '`nn.SyncBatchNorm` and `convert_sync_batchnorm` on XLA',
  severity: 'error',
  step: 7,
  effort: 3,
  message: '`nn.SyncBatchNorm` raises on XLA tensors once a process group is initialized; torch_xla has its own `torch_xla.core.functions.SyncBatchNorm`',
  fix: { availability: 'none' },
  triggers: ['SyncBatchNorm', 'convert_sync_batchnorm'],
  docs: {
    what:
      'Checks for `torch.nn.SyncBatchNorm(...)` layers, `nn.SyncBatchNorm.convert_sync_batchnorm(model)`, and `nn.SyncBatchNorm` passed as a ' +
      'norm-layer factory (`norm_layer=nn.SyncBatchNorm`), through import aliases. A call under a CUDA-only guard (`if torch.cuda.is_available():`) ' +
      'or in a branch that already has an XLA arm is not flagged. Apex `SyncBatchNorm` is TPU702.',
    why:
      'PyTorch\'s `SyncBatchNorm.forward` synchronises statistics only for CUDA, HPU, XPU or PrivateUse1 inputs: when training with an initialised ' +
      'process group it raises `ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or …")` for any other device, XLA included; ' +
      'without a process group (the native `xm.optimizer_step` path) it falls back to plain per-replica `F.batch_norm`, so the statistics are silently not synchronised. ' +
      'Older PyTorch (1.13) raises `ValueError("SyncBatchNorm expected input tensor to be on GPU")` on every non-CUDA input. ' +
      '`convert_sync_batchnorm` itself does not raise: it swaps every `BatchNorm*d` for `SyncBatchNorm`, and the first training forward does. ' +
      'torch_xla ships its own layer, `torch_xla.core.functions.SyncBatchNorm(num_features, eps=1e-5, momentum=0.1)`, which all-reduces the ' +
      'per-replica mean and mean of squares with `xm.all_reduce` (scaled by `1 / xr.world_size()`) in multi-process training; its test compares it ' +
      'with a CPU `BatchNorm` over the global batch. It has no `affine`, `track_running_stats` or `process_group` arguments, no ' +
      '`num_batches_tracked` buffer (checkpoint keys differ) and no `convert_sync_batchnorm` helper.',
    example: 'if args.sync_bn:\n    model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)\nmodel = DDP(model.to(device), device_ids=[args.gpu])',
    useInstead:
      'import torch_xla.core.functions as xf\n\n# multi-process training (torch_xla.launch): torch_xla\'s layer all-reduces the statistics\n' +
      'self.bn = xf.SyncBatchNorm(num_features)          # num_features, eps, momentum only\n# or keep nn.BatchNorm2d and accept per-replica statistics',
    fixSafety:
      'No fix: `torch_xla.core.functions.SyncBatchNorm` takes different arguments, has no converter and a different state dict, ' +
      'and it cannot run on CUDA, so swapping it in changes checkpoints and the CUDA path. Replace the layers by hand.',
    sources: [
      'PT:torch/nn/modules/batchnorm.py `SyncBatchNorm.forward`: `need_sync = bn_training and self.training and torch.distributed.is_initialized()`; ' +
        '`if input.device.type not in ["cuda", "hpu", "xpu", privateuse1]: raise ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or …")`; otherwise `F.batch_norm` (stored upstream version)',
      'PT 1.13 torch/nn/modules/batchnorm.py:684-686 `if not input.is_cuda: raise ValueError("SyncBatchNorm expected input tensor to be on GPU")` (run here on CPU torch 1.13)',
      'pytorch/xla torch_xla/core/functions.py:133-185 `class SyncBatchNorm(torch.nn.Module)` `__init__(num_features, eps=1e-5, momentum=0.1)`, forward all-reduces through `AllReduceSumLayer` (:188-196, `xm.all_reduce(xm.REDUCE_SUM, x)`) scaled by `1.0 / xr.world_size()` (:159) (pytorch/xla@41398bf; present at v2.3.0:155 and v2.9.0)',
      'pytorch/xla test/test_mp_sync_batch_norm.py:49-52 `xf.SyncBatchNorm(length).to(device)` checked against CPU BatchNorm over the global batch',
    ],
    torchtpu: 'No TorchTPU sync-BN layer is documented: the finding says what to replace and offers no fix.',
  },
  check(ctx) {
    const sema = ctx.sema;
    const torchtpu = ctx.idiom.profile === 'torchtpu';
    const skip = (n: Node) => cudaGuarded(n) || sema.inXlaAwareBranch(n);
    for (const call of sema.nodes('call')) {
      const callee = sema.callee(call) ?? '';
      if (CONVERT.has(callee)) {
        if (skip(call)) continue;
        ctx.report(call, {
          message: torchtpu
            ? '`convert_sync_batchnorm` swaps every BatchNorm for `nn.SyncBatchNorm`, which raises on non-GPU tensors in distributed training; no TorchTPU replacement is documented'
            : '`convert_sync_batchnorm` swaps every BatchNorm for `nn.SyncBatchNorm`, which raises on XLA tensors in distributed training; torch_xla has no converter: use `torch_xla.core.functions.SyncBatchNorm(num_features)` layers',
        });
      } else if (SYNC_BN.has(callee)) {
        if (skip(call)) continue;
        ctx.report(call, {
          message: torchtpu
            ? '`nn.SyncBatchNorm` raises on non-GPU tensors in distributed training; no TorchTPU replacement is documented'
            : undefined,
        });
      }
    }
    // `norm_layer=nn.SyncBatchNorm`: the class handed to a model builder as its norm factory
    for (const kw of sema.nodes('keyword_argument')) {
      const value = kw.childForFieldName('value');
      if (!value || (value.type !== 'attribute' && value.type !== 'identifier')) continue;
      if (!SYNC_BN.has(sema.resolve(value) ?? '') || skip(kw)) continue;
      ctx.report(value, {
        message: torchtpu
          ? '`nn.SyncBatchNorm` as the norm layer raises on non-GPU tensors in distributed training; no TorchTPU replacement is documented'
          : '`nn.SyncBatchNorm` as the norm layer raises on XLA tensors in distributed training; torch_xla has its own `torch_xla.core.functions.SyncBatchNorm` (num_features, eps, momentum only)',
      });
    }
  },
});
