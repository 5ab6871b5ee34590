import { defineRule, type RuleContext } from '../../core/rule';
import { callArgs } from '../../core/semantics';
import type { Node } from '../../core/parse';
import { DDP, editArgs } from './util';
import { cudaOnly } from '../../model/guards';

const DATA_PARALLEL = new Set(['torch.nn.DataParallel', 'torch.nn.parallel.DataParallel', 'torch.nn.parallel.data_parallel.DataParallel']);

export default defineRule({
  id: 'TPU504',
  name: 'ddp-device-ids',
  title: '`DistributedDataParallel(device_ids=…)` and `nn.DataParallel`',
  severity: 'error',
  step: 7,
  effort: 1,
  message: '`DistributedDataParallel(device_ids=…)` names CUDA devices; on XLA wrap the model without them',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Drop `device_ids`/`output_device`, add `gradient_as_bucket_view=True`' },
  triggers: ['DistributedDataParallel', 'DDP', 'DataParallel', 'device_ids'],
  docs: {
    what: 'Checks for `DistributedDataParallel(model, device_ids=[…], output_device=…)`, `torch.nn.DataParallel(model, …)` (also through a same-file subclass, `class MyDataParallel(nn.DataParallel)`, warning, no fix) and `dist.barrier(device_ids=[…])` (warning, no fix), through import aliases, and `device_ids=` passed to a DDP-wrapping helper of the project (`task.prepare_distributed(device_ids=[device])`, no fix: the helper builds the wrapper). `nn.DataParallel` in a CUDA-only arm (`if device == "cuda":`) is not flagged: a TPU host keeps the bare module there, which is what DataParallel would run; DDP in such an arm is, since skipping it leaves the processes unsynchronised.',
    why:
      'The XLA form of DDP is `DDP(model, gradient_as_bucket_view=True)`: the torch_xla README diff removes `device_ids=[rank]` (README.md:208-211; DDP:45-46); how `device_ids=[rank]` fails on XLA is unverified. ' +
      '`nn.DataParallel` silently runs the bare module when no CUDA-like device is available, which is the case on a TPU host ' +
      '(PT:torch/nn/parallel/data_parallel.py: `if device_type is None: self.module = module; self.device_ids = []; return`): the model trains on one device. ' +
      '`dist.barrier(device_ids=…)` is documented as valid only for NCCL: PyTorch 1.13 raises "Function argument device_ids not supported for the selected backend" (torch/distributed/distributed_c10d.py `barrier`), and torch_xla\'s `ProcessGroupXla.barrier` returns at once (XBK:230-231 at v2.9.0), so ordering between processes needs `xm.rendezvous(tag)` (torch_xla/core/xla_model.py:1362 at v2.9.0). ' +
      'A DDP with CUDA ids in the body of `if local_rank != -1:` (the torch.distributed.launch branch of Hugging Face Trainer copies) in a file that also imports torch_xla is info: that file has its own XLA path, which a TPU run takes. ' +
      'The native `xm.optimizer_step` path is faster than DDP on XLA (5.4% on ResNet50 up to 41% on MNIST p90, DDP benchmarks).',
    example: 'model = DDP(model.to(local_rank), device_ids=[local_rank], output_device=local_rank)\nmodel = nn.DataParallel(model)',
    useInstead: 'model = DDP(model.to(torch_xla.device()), gradient_as_bucket_view=True)   # after dist.init_process_group("xla", init_method="xla://")',
    fixSafety:
      'Safe for DDP: with one device per process, `device_ids=None` uses the module\'s own device on CUDA as on XLA, and `gradient_as_bucket_view=True` only saves a gradient copy. ' +
      'For `nn.DataParallel` the unsafe fix unwraps the module (what already happens on a TPU host); it is offered only in tpu-only style and when the file never reads `.module`. ' +
      'For real data parallelism use `torch_xla.launch` with `xm.optimizer_step`, or SPMD (TPU509).',
    sources: [
      'README.md:196-225 (DDP on XLA: DDP(model, gradient_as_bucket_view=True)); DDP:45-46',
      'EX:data_parallel/train_resnet_ddp.py (broadcast_buffers=False, gradient_as_bucket_view=True)',
      'PT:torch/nn/parallel/data_parallel.py (DataParallel.__init__ returns early when device_type is None)',
      'PT:torch/distributed/distributed_c10d.py `barrier` (1.13: device_ids only with Backend.NCCL)',
      'XBK: torch_xla/distributed/xla_backend.py:230-231 (ProcessGroupXla.barrier returns an empty work), torch_xla/core/xla_model.py:1362 (rendezvous), at v2.9.0',
    ],
    torchtpu: 'How DDP binds devices under TorchTPU is not public: DDP findings offer no fix; the DataParallel unwrap is offered.',
  },
  check(ctx) {
    const readsModule = ctx.sema.nodes('attribute').some((a) => a.childForFieldName('attribute')?.text === 'module');
    // `class MyDataParallel(torch.nn.DataParallel)` (StyleTTS2, attribute pass-through): its calls wrap like DataParallel
    const subclasses = new Map<string, Node>();
    for (const cls of ctx.sema.nodes('class_definition')) {
      const name = cls.childForFieldName('name')?.text;
      const bases = cls.childForFieldName('superclasses')?.namedChildren ?? [];
      if (name && bases.some((b) => !!b && DATA_PARALLEL.has(ctx.sema.resolve(b) ?? ''))) subclasses.set(name, cls);
    }
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      const { positional, keywords } = callArgs(call);
      if (DDP.has(callee)) {
        const ids = keywords.get('device_ids');
        const out = keywords.get('output_device');
        const anchor = ids ?? out ?? positional[1];
        if (!anchor) continue;
        if (ids && ids.childForFieldName('value')?.text === 'None' && !out) continue;
        const fixable = ctx.idiom.profile === 'torch_xla' && !positional[1];
        // HF Trainer copies: `elif self.args.local_rank != -1: DDP(model, device_ids=[local_rank])` in a file with its own
        // XLA path (`if is_torch_tpu_available(): import torch_xla...`): that branch is the torch.distributed.launch one,
        // and a TPU run (local_rank stays -1) takes the XLA path instead: advice, not an error
        if (launchBranch(call) && importsTorchXla(ctx)) {
          ctx.report(anchor, {
            severity: 'info',
            message: '`DistributedDataParallel(device_ids=…)` names CUDA devices on the `local_rank != -1` (torch.distributed launch) branch; this file has its own XLA path, which a TPU run takes',
          });
          continue;
        }
        const add = keywords.has('gradient_as_bucket_view') ? [] : ['gradient_as_bucket_view=True'];
        ctx.report(anchor, {
          message:
            ctx.idiom.profile === 'torchtpu'
              ? '`DistributedDataParallel(device_ids=…)` names CUDA devices; look for how the model is wrapped (TorchTPU DDP is not public yet)'
              : '`DistributedDataParallel(device_ids=…)` names CUDA devices; on XLA wrap the model as `DDP(model, gradient_as_bucket_view=True)`',
          fix: fixable
            ? {
                title: add.length ? 'Drop `device_ids`/`output_device`, add `gradient_as_bucket_view=True`' : 'Drop `device_ids`/`output_device`',
                applicability: 'safe',
                edits: editArgs(call, [ids, out].filter((k): k is NonNullable<typeof k> => !!k), add),
              }
            : null,
        });
        continue;
      }
      // `task.prepare_distributed(device_ids=[device], **ddp_args)` (open_clip main.py): a project helper that wraps the model
      // in DDP receives the CUDA ids; the change belongs in the helper (no fix here)
      const helperName = call.childForFieldName('function');
      const helperLast = helperName?.type === 'attribute' ? helperName.childForFieldName('attribute')?.text ?? '' : helperName?.text ?? '';
      if (keywords.has('device_ids') && !callee.startsWith('torch.') && /(distributed|ddp|data_?parallel)/i.test(helperLast) && !DATA_PARALLEL.has(callee)) {
        const ids = keywords.get('device_ids')!;
        const v = ids.childForFieldName('value');
        if (v?.type === 'none') continue;
        ctx.report(ids, {
          message:
            ctx.idiom.profile === 'torchtpu'
              ? `\`${helperLast}(device_ids=…)\` hands CUDA device ids to the DDP wrapper it builds; look for how the model is wrapped (TorchTPU DDP is not public yet)`
              : `\`${helperLast}(device_ids=…)\` hands CUDA device ids to the DDP wrapper it builds; on XLA the helper should wrap the model as \`DDP(model, gradient_as_bucket_view=True)\`, without \`device_ids\``,
        });
        continue;
      }
      // `dist.barrier(device_ids=[local_rank])` (yolov5's torch_distributed_zero_first): an NCCL argument
      if (callee === 'torch.distributed.barrier' && keywords.has('device_ids')) {
        ctx.report(keywords.get('device_ids')!, {
          severity: 'warning',
          message:
            ctx.idiom.profile === 'torchtpu'
              ? '`dist.barrier(device_ids=…)` names CUDA devices, an NCCL-only argument (PyTorch 1.13 raises "Function argument device_ids not supported for the selected backend" for any other backend)'
              : '`dist.barrier(device_ids=…)` names CUDA devices, an NCCL-only argument (PyTorch 1.13 raises "Function argument device_ids not supported for the selected backend" for any other backend); the `xla` process group\'s `barrier` is a no-op, so to order processes on TPU use `xm.rendezvous(tag)`',
        });
        continue;
      }
      const fnNode = call.childForFieldName('function');
      const sub = !callee && fnNode?.type === 'identifier' ? subclasses.get(fnNode.text) : undefined;
      if (sub && ctx.sema.enclosingClass(call)?.id !== sub.id) {
        ctx.report(call, {
          severity: 'warning',
          message: `\`${fnNode!.text}\` is an \`nn.DataParallel\` subclass: it finds no CUDA device on a TPU host and silently runs the bare module on one device`,
          related: [{ start: sub.startIndex, end: sub.endIndex, message: 'the subclass' }],
        });
        continue;
      }
      if (DATA_PARALLEL.has(callee)) {
        // `if device == 'cuda': net = torch.nn.DataParallel(net)` after `device = 'cuda' if torch.cuda.is_available() else 'cpu'`
        // (kuangliu pytorch-cifar main.py): a TPU host skips the CUDA-only arm and keeps the bare module, which is what
        // DataParallel would run there anyway; the device choice is the finding (TPU102/TPU103). Facts only, no name
        // guesses (`if n_gpu > 1:` counts what the user asked for). DDP stays reported in such arms: skipping it on TPU
        // leaves the processes' gradients unsynchronised (improved-diffusion's `if th.cuda.is_available(): DDP(...)`)
        if (cudaOnly(call, undefined, { guess: false })) continue;
        const module = positional[0];
        ctx.report(call, {
          severity: 'warning',
          message: '`nn.DataParallel` finds no CUDA device on a TPU host and silently runs the bare module on one device',
          fix:
            module && !ctx.idiom.dualPath && !readsModule
              ? { title: 'Unwrap `nn.DataParallel`', applicability: 'unsafe', edits: [{ start: call.startIndex, end: call.endIndex, text: module.text }] }
              : null,
        });
      }
    }
  },
});

/** Inside the body of an `if`/`elif local_rank != -1` (the torch.distributed.launch branch). */
function launchBranch(node: Node): boolean {
  for (let p = node.parent; p; p = p.parent) {
    if (p.type !== 'if_statement' && p.type !== 'elif_clause') continue;
    const body = p.childForFieldName('consequence');
    const cond = p.childForFieldName('condition')?.text ?? '';
    if (body && node.startIndex >= body.startIndex && node.endIndex <= body.endIndex && /\blocal_rank\s*!=\s*-1\b/.test(cond)) return true;
  }
  return false;
}

/** The file imports torch_xla somewhere (its own XLA path). */
function importsTorchXla(ctx: RuleContext): boolean {
  return [...ctx.sema.nodes('import_statement'), ...ctx.sema.nodes('import_from_statement')].some((s) => /\btorch_xla\b/.test(s.text));
}
