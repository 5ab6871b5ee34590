import { defineRule } from '../../core/rule';
import { atModuleLevel, launchCalls } from './util';

const DEVICE = new Set(['torch_xla.device', 'torch_xla.core.xla_model.xla_device']);

export default defineRule({
  id: 'TPU907',
  name: 'single-device-notebook',
  title: 'Single-process notebook uses one of several local TPU devices',
  severity: 'info',
  step: 7,
  effort: 5,
  message: 'This notebook trains on one XLA device from one process; the other local TPU devices stay idle',
  fix: { availability: 'none' },
  triggers: ['torch_xla'],
  notebookOnly: true,
  docs: {
    what:
      'Checks XLA notebooks that train with `torch_xla.device()` (or `xm.xla_device()`) in the kernel process, with no `torch_xla.launch` / `xmp.spawn` and no SPMD ' +
      '(`xr.use_spmd()`, `torch_xla.distributed.spmd`). Notebooks driven by the HF Trainer, Accelerate or Lightning are skipped.',
    why:
      'A single process drives one device (`xla:0`), while a TPU VM exposes several: for example 4 devices on a v4-8 (one per chip on v4 and later; two per chip on ' +
      'v2/v3). SPMD runs all local devices from one Python process, which suits notebooks because nothing is spawned (SPMD; README: "Another mode is SPMD, where one ' +
      'Python interpreter controls all N TPUs"). A single-chip TPU (e.g. v5e-1) has nothing to gain: ignore the finding there.',
    example: 'device = torch_xla.device()\nmodel = Net().to(device)\nfor x, y in loader:\n    ...',
    useInstead:
      'import numpy as np\nimport torch_xla.runtime as xr\nimport torch_xla.distributed.spmd as xs\nxr.use_spmd()\nn = xr.global_runtime_device_count()\n' +
      'mesh = xs.Mesh(np.arange(n), (n, 1), ("data", "model"))\nloader = DataLoader(ds, batch_size=per_device_batch * n, drop_last=True)\n' +
      'train_loader = pl.MpDeviceLoader(loader, torch_xla.device(), input_sharding=xs.ShardingSpec(mesh, ("data", None)))',
    fixSafety: 'No automatic fix: moving to SPMD changes the batch size, the data sharding and possibly parameter sharding (TPU509, TPU508).',
    sources: ['SPMD (docs/source/perf/spmd_basic.md)', 'EX:data_parallel/train_resnet_spmd_data_parallel.py', 'README.md (SPMD mode)', 'PJRT ("TPUs v2/v3 vs v4": devices per chip)'],
    torchtpu: 'How the preview spreads one process over several chips is not known here; the finding is advice only.',
  },
  check(ctx) {
    const sema = ctx.sema;
    if (!sema.imports('torch_xla') || sema.framework) return;
    if (launchCalls(ctx).length || sema.imports('torch_xla.distributed.spmd') || sema.imports('torch_xla.experimental.xla_sharding') || ctx.text.includes('XLA_USE_SPMD')) return;
    if (sema.nodes('call').some((c) => sema.callee(c) === 'torch_xla.runtime.use_spmd')) return;
    const trains = sema.hotLoops().some((h) => {
      const body = h.anchor.childForFieldName('body');
      return h.kind === 'train' && !!body && sema.containsTrainSignal(body);
    });
    if (!trains) return;
    const call = sema.nodes('call').find((c) => DEVICE.has(sema.callee(c) ?? '') && atModuleLevel(c));
    if (!call) return;
    ctx.report(call, {
      message: `\`${call.text}\` trains on one XLA device from one process: a TPU VM usually has several, which SPMD can drive from this notebook`,
    });
  },
});
