import { defineRule, type RuleContext } from '../../core/rule';
import { callArgs, isAncestor, kwValue } from '../../core/semantics';
import type { Node } from '../../core/parse';
import { editArgs, launchedFunctions, projectProcessGroups } from './util';

/** `mp.spawn` and `mp.start_processes` (the same `fn, args, nprocs, join, daemon, start_method` parameters). */
const MP_SPAWN = new Set(['torch.multiprocessing.spawn', 'torch.multiprocessing.spawn.spawn', 'torch.multiprocessing.start_processes', 'torch.multiprocessing.spawn.start_processes']);
const XMP_SPAWN = 'torch_xla.distributed.xla_multiprocessing.spawn';
const PROCESS = new Set(['multiprocessing.Process', 'torch.multiprocessing.Process']);
const GPU_WORK = /init_process_group|DistributedDataParallel|\bDDP\(|\.cuda\(|set_device|["']cuda|nccl/;
const LEGACY_LAUNCH = /(?:^|\s)(?:python[\d.]*\s+(?:-\w+\s+)*)?-m\s+torch\.distributed\.launch\b/g;

/**
 * `torch.cuda.device_count()` directly, or a name or attribute bound only to it in the same file, through aliases
 * (`n_gpus = torch.cuda.device_count(); world_size = n_gpus`, `args.ngpus = torch.cuda.device_count()`).
 */
function isCudaCount(ctx: RuleContext, node: Node | null | undefined, depth = 0): boolean {
  if (!node || depth > 4) return false;
  if (node.type === 'call') return ctx.sema.callee(node) === 'torch.cuda.device_count';
  if (node.type === 'identifier') {
    const values = ctx.sema.bindings(node.text);
    return values.length > 0 && values.every((v) => isCudaCount(ctx, v, depth + 1));
  }
  if (node.type === 'attribute' && node.childForFieldName('object')?.type === 'identifier') {
    const values = ctx.sema.attributeAssignments(node.childForFieldName('attribute')?.text ?? '').map((a) => a.childForFieldName('right'));
    return values.length > 0 && values.every((v) => isCudaCount(ctx, v, depth + 1));
  }
  return false;
}

function mentionsCudaCount(ctx: RuleContext, node: Node | null | undefined): boolean {
  if (!node) return false;
  if (isCudaCount(ctx, node)) return true;
  return node.namedChildren.some((c) => !!c && mentionsCudaCount(ctx, c));
}

const LAUNCH_MESSAGE = {
  torch_xla: 'start one process per TPU device with `torch_xla.launch(fn, args=...)`',
  torchtpu: 'look for how the job starts its workers (the TorchTPU launcher is not public yet)',
};

const SCRIPT_MESSAGE = 'run the script once on every TPU host and start its workers with `torch_xla.launch`';

export default defineRule({
  id: 'TPU502',
  name: 'cuda-process-launcher',
  title: 'CUDA-style process launchers',
  severity: 'error',
  step: 7,
  effort: 1,
  message: 'CUDA-style launcher: start one process per TPU device with `torch_xla.launch`',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Launch with `torch_xla.launch`' },
  triggers: ['spawn', 'Process', 'start_processes', 'torch.distributed.launch'],
  textKinds: ['shell', 'dockerfile', 'yaml'],
  docs: {
    what:
      'Checks for `torch.multiprocessing.spawn` (`mp.spawn`) and `mp.start_processes` starting GPU workers (its `nprocs` counts CUDA devices, or the target sets up CUDA/NCCL/DDP), ' +
      'a `multiprocessing.Process` per CUDA device, `xmp.spawn(fn, nprocs=N)` with N other than 1, and `python -m torch.distributed.launch` in scripts, Dockerfiles, launch YAML and notebook `!` lines.',
    why:
      'On a TPU host `torch.cuda.device_count()` is 0, so `mp.spawn(fn, nprocs=torch.cuda.device_count())` starts no worker, and processes started by hand fight over the chips. ' +
      '`torch_xla.launch(fn, args)` starts one process per local device and calls `fn(index, *args)`, the same signature as `mp.spawn`; under torchrun it calls `fn(LOCAL_RANK, *args)` instead (TX:241-274). ' +
      'Under PJRT `xmp.spawn`\'s `nprocs` "can be either 1 or None … Other numbers would result in ValueError" (XPJRT:186-211); that holds from torch_xla 2.6 (torch_xla/_internal/pjrt.py v2.6.0:208-209 raises), while 2.5 and earlier log "Unsupported nprocs (%d), ignoring..." and start one process per local device (v2.5.0:206-207), so for those targets the finding is info. ' +
      'On TPU v2/v3 each process drives two devices with threads that share the torch RNG: call `xm.broadcast_master_param(model)` after moving the model for identical initial weights (PJRT:229-252).',
    example: 'mp.spawn(_mp_fn, args=(cfg,), nprocs=torch.cuda.device_count())\nxmp.spawn(_mp_fn, args=(cfg,), nprocs=8)',
    useInstead: 'import torch_xla\n\ntorch_xla.launch(_mp_fn, args=(cfg,))   # xmp.spawn(_mp_fn, args=(cfg,)) before torch_xla 2.5',
    fixSafety:
      'Safe when `nprocs` is the CUDA device count (one worker per device is what both launchers do) and `join`/`daemon` keep their defaults; unsafe otherwise (another `nprocs` value, `join=False`). ' +
      'No fix when the process count is also passed to the launched function (`args=(world_size,), nprocs=world_size`): one process per device would disagree with it, and the function must read the world size itself. ' +
      'Dropping a numeric `nprocs` from `xmp.spawn` is safe: every value other than 1 or None raises (from 2.6) or is ignored (up to 2.5). In dual-path style the call becomes `accel.launch(...) if accel.is_xla() else mp.spawn(...)`, so CUDA and CPU keep the `mp.spawn` as written (its `nprocs`, `join`, `daemon`). ' +
      'Launcher scripts and `multiprocessing.Process` loops are reported without a fix.',
    sources: [
      'TX:241-274 torch_xla/torch_xla.py `launch` (SPMD NotImplementedError, torchelastic LOCAL_RANK path), read at pytorch/xla@022ecde',
      'XPJRT:186-211 torch_xla/_internal/pjrt.py `spawn` (nprocs must be 1 or None)',
      'README.md:184-186 (torch_xla.launch is the entry point); DEV "Running on TPU Pods"',
      'PJRT:229-252 (v2/v3 threads share the RNG; xm.broadcast_master_param)',
    ],
    torchtpu: 'No TorchTPU launcher is public yet: findings name the launcher and offer no fix.',
  },
  check(ctx) {
    const profileMsg =
      ctx.idiom.profile === 'torchtpu' ? LAUNCH_MESSAGE.torchtpu : ctx.idiom.at('2.5') ? LAUNCH_MESSAGE.torch_xla : 'start one process per TPU device with `xmp.spawn(fn, args=...)`';
    const scriptMsg = ctx.idiom.profile === 'torchtpu' ? LAUNCH_MESSAGE.torchtpu : SCRIPT_MESSAGE;
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      // an XLA branch excuses the CUDA launchers, not xmp.spawn itself (its nprocs raises there too)
      if (callee !== XMP_SPAWN && ctx.sema.inXlaAwareBranch(call)) continue;
      const { positional, keywords } = callArgs(call);
      if (MP_SPAWN.has(callee)) {
        const fnArg = positional[0] ?? kwValue(keywords.get('fn'));
        const argsArg = kwValue(keywords.get('args')) ?? positional[1] ?? null;
        const nprocs = kwValue(keywords.get('nprocs')) ?? positional[2] ?? null;
        const join = kwValue(keywords.get('join')) ?? positional[3] ?? null;
        const daemon = kwValue(keywords.get('daemon')) ?? positional[4] ?? null;
        const startMethod = kwValue(keywords.get('start_method')) ?? positional[5] ?? null;
        const cudaCount = mentionsCudaCount(ctx, nprocs);
        // the launched function's GPU work may be in a helper of another project module (`utils.init_distributed_mode`)
        const launchedFns = launchedFunctions(ctx, call);
        const gpuTarget = launchedFns.some((f) => GPU_WORK.test(f.text)) || projectProcessGroups(ctx).some((p) => launchedFns.some((f) => isAncestor(f, p.call)));
        if (!cudaCount && !gpuTarget) continue;
        // notebooks need the fork start method (the cell's functions are not importable by spawned children)
        const method = startMethod ? `, start_method=${startMethod.text}` : ctx.notebook ? ', start_method="fork"' : '';
        // the process count also travels into the launched function (`args=(world_size,)`, `nprocs=world_size`): the
        // XLA launcher starts one process per device whatever it is, so the function's own world size would disagree
        // with the processes started (a gloo/xla group waits for ranks that never come). Reading the world size
        // inside the function is the rewrite, and it is not mechanical: no fix.
        const countInArgs = !!nprocs && !!argsArg && nprocs.type !== 'integer' && new RegExp(`(^|[^\\w.])${nprocs.text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^\\w])`).test(argsArg.text);
        let snippet = fnArg && !countInArgs ? ctx.idiom.launch(fnArg.text, argsArg?.text ?? null, method) : null;
        // dual-path keeps the CUDA/CPU launch as written (issue 10: `accel.launch` starts one process per CUDA device, or one
        // on CPU, so `mp.spawn(run, args=(2,), nprocs=2)` over gloo waited forever for its second rank): launch through
        // accel only on XLA
        if (snippet && ctx.idiom.dualPath) {
          const x = ctx.idiom.isXla();
          snippet = { text: `${snippet.text} if ${x.text} else ${call.text}`, imports: [...snippet.imports, ...x.imports], needsAccel: true };
        }
        const exact = isCudaCount(ctx, nprocs) && (!join || join.text === 'True') && (!daemon || daemon.text === 'False');
        const spawnName = callee.endsWith('start_processes') ? 'mp.start_processes' : 'mp.spawn';
        ctx.report(call, {
          message: (cudaCount
            ? `\`${spawnName}\` with \`nprocs\` from \`torch.cuda.device_count()\` starts no worker on a TPU host (0 CUDA devices); ${profileMsg}`
            : `\`${spawnName}\` starts CUDA workers; ${profileMsg}`) +
            (countInArgs
              ? `; the launched function also gets the process count \`${nprocs!.text}\` through \`args\`, which would disagree with one process per device: read the world size inside it (${ctx.idiom.profile === 'torchtpu' ? 'the TorchTPU runtime API is not public yet' : '`xr.world_size()`'}); no mechanical fix`
              : ''),
          fix: snippet
            ? {
                title: `Launch with \`${snippet.text.split('(')[0]}\``,
                applicability: exact ? 'safe' : 'unsafe',
                edits: [{ start: call.startIndex, end: call.endIndex, text: snippet.text }],
                imports: snippet.imports,
                needsAccel: snippet.needsAccel,
              }
            : null,
        });
        continue;
      }
      if (callee === XMP_SPAWN) {
        const nprocsKw = keywords.get('nprocs');
        const nprocs = kwValue(nprocsKw) ?? positional[2] ?? null;
        if (!nprocs || nprocs.text === 'None' || nprocs.text === '1') continue;
        const literal = nprocs.type === 'integer';
        const allowed = ctx.idiom.xlaAlways('');
        // PJRT's spawn raises ValueError("Unsupported nprocs (%d). Please use nprocs=1 or None ...") from v2.6.0
        // (torch_xla/_internal/pjrt.py v2.6.0:208-209); up to v2.5.0 it logs "Unsupported nprocs (%d), ignoring..." and
        // starts one process per local device anyway (v2.5.0:206-207)
        if (!ctx.idiom.at('2.6')) {
          ctx.report(nprocs, {
            severity: 'info',
            message: '`xmp.spawn` ignores `nprocs` other than 1 or None under PJRT before torch_xla 2.6 (it logs "Unsupported nprocs (N), ignoring..." and starts one process per local device); from 2.6 it raises ValueError',
            fix: allowed && nprocsKw ? { title: 'Drop `nprocs` (use every local device)', applicability: 'safe', edits: editArgs(call, [nprocsKw]) } : null,
          });
          continue;
        }
        ctx.report(nprocs, {
          severity: literal ? 'error' : 'warning',
          message: literal
            ? `\`xmp.spawn(nprocs=${nprocs.text})\` raises ValueError under PJRT: \`nprocs\` must be 1 or None (all local devices)`
            : '`xmp.spawn` accepts only `nprocs=1` or `None` under PJRT; other values raise ValueError',
          fix:
            allowed && nprocsKw
              ? { title: 'Drop `nprocs` (use every local device)', applicability: literal ? 'safe' : 'unsafe', edits: editArgs(call, [nprocsKw]) }
              : null,
        });
        continue;
      }
      if (PROCESS.has(callee)) {
        for (let p = call.parent; p && p.type !== 'function_definition'; p = p.parent) {
          if (p.type !== 'for_statement') continue;
          if (!mentionsCudaCount(ctx, p.childForFieldName('right'))) continue;
          ctx.report(call, { message: `One \`Process\` per CUDA device starts none on a TPU host; ${profileMsg}` });
          break;
        }
      }
    }
    // `!python -m torch.distributed.launch …` in notebook cells
    for (const m of ctx.notebook?.magics ?? []) {
      for (const hit of m.text.matchAll(LEGACY_LAUNCH)) {
        const at = m.start + hit.index! + hit[0].indexOf('-m');
        ctx.report({ start: at, end: at + '-m torch.distributed.launch'.length }, { message: `\`torch.distributed.launch\` is the CUDA launcher; ${scriptMsg}` });
      }
    }
  },
  checkText(ctx) {
    const profileMsg = ctx.idiom.profile === 'torchtpu' ? LAUNCH_MESSAGE.torchtpu : SCRIPT_MESSAGE;
    for (const hit of ctx.text.matchAll(LEGACY_LAUNCH)) {
      const start = hit.index! + hit[0].indexOf('-m');
      const lineStart = ctx.text.lastIndexOf('\n', start - 1) + 1;
      if (/^\s*#/.test(ctx.text.slice(lineStart, start))) continue;
      ctx.report({ start, end: start + '-m torch.distributed.launch'.length }, { message: `\`torch.distributed.launch\` is the CUDA launcher; ${profileMsg}` });
    }
  },
});
