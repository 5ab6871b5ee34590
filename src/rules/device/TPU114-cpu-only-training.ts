import { defineRule } from '../../core/rule';
import { trainingLoop, trainsOnCpuOnly } from '../../model/placement';

export default defineRule({
  id: 'TPU114',
  name: 'cpu-only-training',
  title: 'The program places nothing on an accelerator: it trains on the CPU',
  severity: 'error',
  step: 3,
  effort: 3,
  message:
    'this program places nothing on an accelerator: on a TPU host it trains on the CPU. Move the model and each batch to the XLA device ' +
    '(`device = torch_xla.device()`, `model.to(device)`, `x, y = x.to(device), y.to(device)`), then re-run tpu-ready',
  fix: { availability: 'none' },
  triggers: ['optim'],
  docs: {
    what:
      'Checks for a training program (a training loop that steps an optimizer the file builds with `torch.optim.*`) in which nothing names a device or ' +
      'an accelerator: no `cuda`/`xla`/`tpu`/`device`/`autocast`/`distributed`/Lightning/Accelerate/DeepSpeed word outside comments, no `.to(x)` other than a ' +
      'dtype or `"cpu"`, and every import a known host library (torch, torchvision, numpy, matplotlib, …). With project scope a same-project module imported ' +
      'by name (`from data_util import load_mnist`) or as a module (`import data_util`, `import pkg.data as data`, used as `data.load(...)`) counts as a host ' +
      'library when it passes the same test itself (one hop). An unknown import, or any such word, ' +
      'means the program may place work elsewhere, and the rule stays quiet (it errs towards silence). Reported once, at the header of the first training ' +
      'loop, the outermost loop of its function (the epoch loop of `for epoch in range(n): for x, y in loader:`).',
    why:
      'PyTorch creates tensors and modules on the CPU unless told otherwise, and torch_xla moves nothing by itself: only tensors sent to the XLA device ' +
      '(`torch_xla.device()`, TX:19; DEV:81-84) run on the TPU. Such a program runs unchanged on a TPU VM, silently on the host CPU. The device-work rules ' +
      '(host syncs, step barriers, batch shapes, XLA checkpoints) do not run on it, since none of that work reaches a device until the model and batches move.',
    example: 'model = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x, y in loader:\n    loss = F.cross_entropy(model(x), y)\n    opt.zero_grad(); loss.backward(); opt.step()',
    useInstead:
      'import torch_xla\ndevice = torch_xla.device()\nmodel = Net().to(device)              # before building the optimizer (TPU108)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n' +
      'for x, y in loader:\n    x, y = x.to(device), y.to(device)\n    loss = F.cross_entropy(model(x), y)\n    opt.zero_grad(); loss.backward(); opt.step()\n    torch_xla.sync()',
    fixSafety:
      'No quick-fix: which tensors must move (model, every batch, tensors created in the loop) and where host reads follow is a whole-program change; ' +
      'after the move the other rules report what remains.',
    sources: ['TX:19 (torch_xla.device)', 'DEV (docs/source/learn/pytorch-on-xla-devices.md:81-84)', 'MIG:41-55'],
    torchtpu: 'Move to `torch.device("tpu")` after `import torch_tpu` instead of `torch_xla.device()`.',
  },
  check(ctx) {
    if (!trainsOnCpuOnly(ctx.sema, ctx.project, ctx.path)) return;
    const loop = trainingLoop(ctx.sema);
    if (!loop) return;
    const head = loop.childForFieldName('right') ?? loop.childForFieldName('condition') ?? loop;
    const message =
      ctx.options.target.profile === 'torchtpu'
        ? 'this program places nothing on an accelerator: on a TPU host it trains on the CPU. Move the model and each batch to the TPU ' +
          '(`import torch_tpu`, `device = torch.device("tpu")`, `model.to(device)`, `x, y = x.to(device), y.to(device)`), then re-run tpu-ready'
        : undefined;
    ctx.report({ start: loop.startIndex, end: head.endIndex }, message ? { message } : {});
  },
});
