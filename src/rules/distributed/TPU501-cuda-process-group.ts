import { defineRule, type RuleContext } from '../../core/rule';
import { callArgs, kwValue, stringContent } from '../../core/semantics';
import { deleteStatement } from '../../core/edits';
import type { Node } from '../../core/parse';
import type { Edit, ImportSpec } from '../../core/types';
import { DDP, INIT_PG, callsTo, editArgs, envWrites, ncclChoice, soleConditionalBinding, projectConfigString, projectProcessGroups, replaceStringContent, short, spmdEnabled, stringSource } from './util';
import { cudaOnly, mpsOnly } from '../../model/guards';
import { referencesCuda } from '../checkpoint/util';

const XLA_BACKEND: ImportSpec = { module: 'torch_xla.distributed.xla_backend' };
const NCCL = /(^|[,:]\s*)nccl\s*$|^nccl\b|[,:]\s*nccl\b/;

interface InitSite {
  call: Node;
  backend: Node | null;
}

/** Edits that give an init call `init_method="xla://"` and drop `rank=`/`world_size=` (xla:// infers both). */
function initMethodEdits(call: Node): { edits: Edit[]; userValue: boolean } {
  const { keywords } = callArgs(call);
  const im = kwValue(keywords.get('init_method'));
  const drop = ['rank', 'world_size'].map((k) => keywords.get(k)).filter((k): k is Node => !!k);
  if (im?.type === 'string' && !im.namedChildren.some((c) => c?.type === 'interpolation')) {
    const edits = editArgs(call, drop);
    edits.push(replaceStringContent(im, 'xla://'));
    return { edits, userValue: false };
  }
  if (im) {
    const edits = editArgs(call, drop);
    edits.push({ start: im.startIndex, end: im.endIndex, text: '"xla://"' });
    return { edits, userValue: true };
  }
  return { edits: editArgs(call, drop, ['init_method="xla://"']), userValue: false };
}

const HVD = 'horovod.torch.';

/** Inside the Windows arm of `if os.name == "nt":` / `if sys.platform == "win32":` (stylegan2-ada's gloo group): a TPU host (Linux) never runs it. */
function windowsArm(call: Node): boolean {
  for (let p = call.parent, child: Node = call; p && p.type !== 'function_definition'; child = p, p = p.parent) {
    if (p.type !== 'if_statement') continue;
    const cond = p.childForFieldName('condition')?.text ?? '';
    const inBody = p.childForFieldName('consequence')?.id === child.id;
    if (inBody && /\b(os\.name\s*==\s*['"]nt['"]|sys\.platform\s*==\s*['"]win32['"]|platform\.system\(\)\s*==\s*['"]Windows['"])/.test(cond)) return true;
  }
  return false;
}

/**
 * Horovod (`import horovod.torch as hvd`; `hvd.init()`, `hvd.DistributedOptimizer(...)`): its ops take CPU or CUDA tensors
 * (HVD) and torch_xla has no Horovod integration, so there is no TPU backend to switch to. One finding per file, at the
 * first `hvd.init()` (else the first `DistributedOptimizer`), the other Horovod setup calls related. A warning, no fix:
 * the replacement (the `xla` process group with DDP, or `xm.optimizer_step`) rewrites the setup, the optimizer and the
 * rank/size reads.
 */
function horovod(ctx: RuleContext): void {
  const setup = ctx.sema.callsResolvedWhere((q) => /^horovod\.torch\.(init|DistributedOptimizer|broadcast_parameters|broadcast_optimizer_state)$/.test(q));
  if (!setup.length) return;
  const first = setup.find((c) => ctx.sema.callee(c) === HVD + 'init') ?? setup.find((c) => ctx.sema.callee(c) === HVD + 'DistributedOptimizer') ?? setup[0];
  ctx.report(first, {
    severity: 'warning',
    message: ctx.idiom.profile === 'torchtpu'
      ? 'Horovod has no TPU backend (its collectives take CPU or CUDA tensors); the TorchTPU process-group backend is not public yet, so there is no replacement to offer'
      : 'Horovod has no TPU backend: its collectives take CPU or CUDA tensors, and torch_xla has no Horovod integration; replace it with the `xla` process group (`dist.init_process_group("xla", init_method="xla://")` with DDP, or `xm.optimizer_step`), ranks from `torch_xla.runtime`',
    related: setup.filter((c) => c.id !== first.id).map((c) => ({ start: c.startIndex, end: c.endIndex, message: 'more Horovod setup' })),
    fix: null,
  });
}

export default defineRule({
  id: 'TPU501',
  name: 'cuda-process-group',
  title: 'Process-group backend and init for CUDA',
  severity: 'error',
  step: 7,
  effort: 1,
  message: 'The NCCL process-group backend needs CUDA GPUs; a TPU host has none',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Use the XLA backend with `init_method="xla://"`' },
  // 'init_process_group': the backend may be set in another module (a config factory)
  triggers: ['nccl', 'MASTER_ADDR', 'MASTER_PORT', 'env://', 'tcp://', 'init_process_group', 'horovod'],
  docs: {
    what:
      'Checks for `torch.distributed.init_process_group` with the `nccl` backend (a literal, or a variable, parameter or argparse default that holds `"nccl"`), ' +
      'a name bound to `"gloo" if not torch.cuda.is_available() else "nccl"` (warning: a TPU host takes the CPU `gloo` arm), a `cfg.dist_backend` whose value is a `dist_backend="nccl"` keyword in a config factory of an imported project module (no fix: the value lives there), ' +
      'an `env://`/`tcp://` rendezvous next to the `xla` backend, and `os.environ["MASTER_ADDR"] = "localhost"` (or another loopback address) in files that set up an NCCL group. ' +
      'A device-type → backend map (`{"cuda": "nccl", "npu": "hccl"}` looked up with `.get(device_type, "gloo")`) with no `xla` entry is reported at its CUDA entry (no fix: the key is a device type the program chooses elsewhere). ' +
      'Also `init_process_group()` without a backend in a file that uses CUDA (warning: PyTorch picks NCCL for CUDA and gloo for CPU tensors, so a TPU host gets only a CPU group; unsafe fix for an empty call). ' +
      'Also a `gloo` backend (literal, variable or flag default) in a file that wraps a model in DDP (warning: a CPU group; DDP on the XLA device needs `xla`; unsafe fix for a literal in the call). ' +
      'Also `dist_backend: nccl` (or `backend`, `ddp_backend`, `distributed_backend`) in a YAML config (no fix). ' +
      'Also Horovod setup (`hvd.init()`, `hvd.DistributedOptimizer`, `hvd.broadcast_parameters`; warning, once per file, no fix: Horovod has no TPU backend). ' +
      'Also a `"nccl"` default of a backend parameter or `--*backend` flag whose group is created elsewhere (another function, a worker started by `mp.start_processes`, another module; no fix), a backend chosen by a test that is no CUDA check (`"gloo" if os.name == "nt" else "nccl"`: a Linux TPU host takes NCCL), and `assert backend in ["gloo", "nccl"]` checks that reject the `xla` backend (no fix). ' +
      'An NCCL group created only under `if torch.cuda.is_available():` is not reported there (a TPU host never runs it): the `gloo` group of the same `if` chain\'s fallback arm, which a TPU host does run, is reported instead (unsafe fix in tpu-only style: a CPU-only host takes that arm too).',
    why:
      'NCCL is a CUDA library: on a TPU VM the group cannot be created. torch_xla registers its own backend and rendezvous when ' +
      '`torch_xla.distributed.xla_backend` is imported (`dist.Backend.register_backend("xla", …)` and `dist.register_rendezvous_handler("xla", …)`, XBK:18-24); ' +
      'with `init_method="xla://"` rank and world size come from the XLA runtime, so `rank=`/`world_size=` are not needed. ' +
      'The `xla://` handler still reads `MASTER_ADDR` when it is set (only otherwise it discovers the master worker\'s IP on a TPU, or uses `localhost`) and `MASTER_PORT` (default 12355), RDZ:34-39 at every version 2.3-2.9: a `MASTER_ADDR` pinned to `localhost` makes every host of a multi-host slice look for the store on itself; a user-set address (a flag, a launcher variable) and a port are still used and are not reported. ' +
      'Under SPMD the `xla` backend asserts ("XLA backend is not supported with SPMD. Please use a CPU process group instead.", XBK:12-16): use a CPU `gloo` group with `xla://` there. ' +
      'The native data-parallel path (`xm.optimizer_step` in a `torch_xla.launch` target) needs no process group at all.',
    example:
      'os.environ["MASTER_ADDR"] = "localhost"\nos.environ["MASTER_PORT"] = "12355"\ndist.init_process_group("nccl", rank=rank, world_size=world_size)',
    useInstead: 'import torch_xla.distributed.xla_backend  # registers the "xla" backend and xla://\n\ndist.init_process_group("xla", init_method="xla://")',
    fixSafety:
      'Safe for one-process-per-device code: the backend becomes `xla`, the rendezvous `xla://` (which supplies rank and world size), and a loopback `MASTER_ADDR` write is deleted (on one host the discovered master is this host, so nothing changes; on several hosts every one then finds the same master). `MASTER_PORT` writes and non-loopback addresses are kept: `xla://` reads them. ' +
      'The `xla://` handler accepts and ignores `rank=`/`world_size=` (it takes `url` and `**kwargs` and yields the runtime\'s `global_ordinal()`/`world_size()`, RDZ:22-24, 62-66), so dropping them changes nothing on XLA; the fix drops them so that no CUDA- or torchrun-derived value (`int(os.environ["WORLD_SIZE"])`, unset under `torch_xla.launch`) is still evaluated. ' +
      'Unsafe when the backend comes from a CLI flag or parameter (users may still pass `gloo` for CPU runs), when the `init_method` is a variable, when a `"nccl" if … else "gloo"` choice collapses to `xla`, and under SPMD (the fix then picks `gloo` with `xla://`). ' +
      'Dual-path style offers no fix: the `xla` backend exists only once torch_xla is imported, which a CUDA run cannot do.',
    sources: [
      'XBK: torch_xla/distributed/xla_backend.py:11-24 (_create_xla_process_group SPMD assert, register_backend("xla"), register_rendezvous_handler("xla")), read at pytorch/xla@035c6ac',
      'README.md:196-225 (DDP on XLA: init_process_group("xla", init_method="xla://"))',
      'PJRT:302-336 (xla:// finds replica ids, world size and master IP)',
      'RDZ: torch_xla/_internal/rendezvous.py:22-24, 34-39, 62-66 at v2.9.0 (pjrt_rendezvous_handler(url, timeout, **kwargs): MASTER_ADDR if set, else discover_master_worker_ip() on TPU or localhost; MASTER_PORT default 12355; rank and world size from the runtime; the same reads at v2.3.0:25-30, v2.4.0:28-33, v2.5.0-v2.8.0:34-39); registered as "xla" at XBK:24',
      'XBK: torch_xla/distributed/xla_backend.py:19 register_backend("xla", ...), :47-48 ProcessGroupXla.getBackendName() returns "xla" (v2.9.0): what `dist.get_backend()` answers for an XLA group',
      'DCP:127-141 (SPMD: dist.init_process_group("gloo", init_method="xla://"))',
      'PT: torch/distributed/distributed_c10d.py Backend.default_device_backend_map {"cpu": "gloo", "cuda": "nccl"}, which BackendConfig uses for an undefined backend (torch 2.x; torch 1.13 requires a backend)',
      'DDPX: docs/source/perf/ddp.md:20-30 at v2.9.0 (DDP: init the xla process group); docs/source/learn/_pjrt.md:277-296 (gloo for CPU-side barrier/all_gather_object)',
      'HVD: horovod/torch/mpi_ops_v2.cc GetDeviceID (a tensor is CUDA or CPU; no other device); torch_xla/ at v2.9.0 names no horovod (git grep -i)',
    ],
    torchtpu: 'The TorchTPU process-group backend is not public yet: the finding names the NCCL call and offers no fix.',
  },
  textKinds: ['yaml'],
  // `dist_backend: nccl` in a YAML training config (the script passes `cfg["dist_backend"]` to init_process_group): the
  // value lives in the config, reported there; no fix (the matching `init_method` is in the Python code)
  checkText(ctx) {
    for (let i = 0; i < ctx.lines.lineCount; i++) {
      const line = ctx.lines.lineText(i);
      const m = /^(\s*-?\s*(?:dist_backend|distributed_backend|ddp_backend|backend)\s*:\s*)(['"]?)nccl\2\s*(#.*)?$/i.exec(line);
      if (!m) continue;
      const at = ctx.lines.starts[i] + m[1].length;
      ctx.report({ start: at, end: at + m[2].length * 2 + 4 }, {
        message: ctx.idiom.profile === 'torchtpu'
          ? 'this config makes the process-group backend NCCL, which needs CUDA GPUs (the TorchTPU backend is not public yet)'
          : 'this config makes the process-group backend NCCL, which needs CUDA GPUs; on XLA set it to `xla` and create the group with `init_method="xla://"` (after `import torch_xla.distributed.xla_backend`)',
        fix: null,
      });
    }
  },
  check(ctx) {
    horovod(ctx);
    const spmd = spmdEnabled(ctx);
    const xlaIdiom = ctx.idiom.xlaOnly('xla');
    const sites: InitSite[] = callsTo(ctx, INIT_PG)
      .filter((c) => !ctx.sema.inXlaAwareBranch(c))
      .map((call) => {
        const { positional, keywords } = callArgs(call);
        return { call, backend: positional[0] ?? kwValue(keywords.get('backend')) };
      });
    const backendName = spmd ? 'gloo' : 'xla';
    let cudaInFile: boolean | undefined;
    let cudaGroups = 0;
    // `if torch.cuda.is_available(): init_process_group("nccl") ... else: init_process_group("gloo")` (OLMo scripts/train.py):
    // a TPU host never runs the CUDA arm; the group it creates is the CPU `gloo` one of the fallback arm, reported there
    const guardedNccl: Node[] = [];
    const glooFallbacks: { site: InitSite; literal: Node }[] = [];
    for (const site of sites) {
      const b = site.backend;
      const src = b && (b.type === 'string' ? { literal: b } : b.type === 'identifier' || b.type === 'attribute' ? stringSource(ctx, b) : null);
      const value = src ? stringContent(src.literal) ?? '' : '';
      if (!src) continue;
      if (NCCL.test(value) && cudaOnly(site.call)) guardedNccl.push(site.call);
      else if (value === 'gloo' && !spmd && !cudaOnly(site.call) && !mpsOnly(site.call)) glooFallbacks.push({ site, literal: src.literal });
    }
    const skipped = new Set(guardedNccl.map((c) => c.id));
    /** The `if` chain that holds both calls (the CUDA arm and the fallback arm of one choice), else null. */
    const commonIf = (a: Node, b: Node): Node | null => {
      for (let p = a.parent; p && p.type !== 'function_definition'; p = p.parent) {
        if (p.type === 'if_statement') return p.startIndex <= b.startIndex && b.endIndex <= p.endIndex ? p : null;
      }
      return null;
    };
    if (guardedNccl.length) {
      for (const { site, literal } of glooFallbacks) {
        const arms = guardedNccl.filter((c) => commonIf(c, site.call));
        if (!arms.length) continue;
        cudaGroups++;
        const im = initMethodEdits(site.call);
        const torchtpu = ctx.idiom.profile === 'torchtpu';
        ctx.report(site.backend!, {
          message: torchtpu
            ? 'on a TPU host `torch.cuda.is_available()` is False, so the program creates this CPU `gloo` group instead of the NCCL one (the TorchTPU process-group backend is not public yet)'
            : 'on a TPU host `torch.cuda.is_available()` is False, so the program creates this CPU `gloo` group instead of the NCCL one; use the `xla` backend with `init_method="xla://"`',
          // the fallback arm is also what a CPU-only host runs: switching it to `xla` changes that run
          fix: xlaIdiom && literal.id === site.backend?.id
            ? { title: 'Use the `xla` backend with `init_method="xla://"`', applicability: 'unsafe', edits: [replaceStringContent(literal, 'xla'), ...im.edits], imports: [XLA_BACKEND] }
            : null,
          related: arms.map((c) => ({ start: c.startIndex, end: c.endIndex, message: 'the NCCL group, created only when CUDA is available' })),
        });
      }
    }
    // a `gloo` group (literal, variable or `--dist-backend` default) in a file that wraps its model in DDP: a CPU group,
    // and DDP on the XLA device needs the `xla` one (docs/source/perf/ddp.md:20-30 at v2.9.0; gloo is for CPU-side
    // metadata, learn/_pjrt.md:277-296). A warning, unsafe fix (a CPU-only run keeps working only with gloo)
    const reportedGloo = new Set(glooFallbacks.filter(({ site }) => guardedNccl.some((c) => commonIf(c, site.call))).map(({ site }) => site.call.id));
    if (!spmd && callsTo(ctx, DDP).length) {
      for (const { site, literal } of glooFallbacks) {
        if (reportedGloo.has(site.call.id) || ctx.sema.inXlaAwareBranch(literal) || windowsArm(site.call)) continue;
        reportedGloo.add(site.call.id);
        const im = initMethodEdits(site.call);
        ctx.report(literal, {
          severity: 'warning',
          message: ctx.idiom.profile === 'torchtpu'
            ? 'this `gloo` group is a CPU process group, and this file runs DDP on the accelerator (the TorchTPU process-group backend is not public yet)'
            : 'this `gloo` group is a CPU process group, and this file runs DDP, which on the XLA device needs the `xla` backend: use it with `init_method="xla://"` (keep gloo only for CPU-side metadata, in a `dist.new_group(backend="gloo")`)',
          // a literal elsewhere (a flag default, a variable) may feed other calls: no fix there
          fix: xlaIdiom && literal.id === site.backend?.id
            ? { title: 'Use the `xla` backend with `init_method="xla://"`', applicability: 'unsafe', edits: [replaceStringContent(literal, 'xla'), ...im.edits], imports: [XLA_BACKEND] }
            : null,
          related: literal.id === site.backend?.id ? [] : [{ start: site.call.startIndex, end: site.call.endIndex, message: 'the process group it creates' }],
        });
      }
    }
    const bySource = new Map<number, { literal: Node; fromUser: boolean; calls: Node[] }>();
    /** "nccl" literals reported as the backend of a group (the defaults pass below skips them). */
    const reportedLiterals = new Set<number>();
    for (const site of sites) {
      const b = site.backend;
      // `dist.init_process_group()` without a backend in CUDA code: PyTorch then creates NCCL for CUDA tensors and gloo for
      // CPU ones (torch/distributed/distributed_c10d.py Backend.default_device_backend_map); a TPU host gets only the CPU
      // gloo group, and collectives on XLA tensors find no backend for the `xla` device type. A warning (CPU-tensor
      // collectives still work); the fix only for an empty call, unsafe (it changes what CPU-tensor collectives run on)
      if (!b && !spmd && !skipped.has(site.call.id) && !cudaOnly(site.call) && !mpsOnly(site.call) && (cudaInFile ??= referencesCuda(ctx))) {
        const list = site.call.childForFieldName('arguments');
        const empty = !!list && list.namedChildren.filter((c) => c && c.type !== 'comment').length === 0;
        cudaGroups++;
        ctx.report(site.call, {
          severity: 'warning',
          message: ctx.idiom.profile === 'torchtpu'
            ? '`init_process_group()` without a backend creates NCCL for CUDA tensors and gloo for CPU ones: on a TPU host only the CPU group exists (the TorchTPU backend is not public yet)'
            : '`init_process_group()` without a backend creates NCCL for CUDA tensors and gloo for CPU ones: on a TPU host only the CPU gloo group exists, and collectives on XLA tensors find no backend; pass the `xla` backend with `init_method="xla://"`',
          fix: xlaIdiom && empty && list
            ? { title: 'Use the `xla` backend with `init_method="xla://"`', applicability: 'unsafe', edits: [{ start: list.startIndex, end: list.endIndex, text: '("xla", init_method="xla://")' }], imports: [XLA_BACKEND] }
            : null,
        });
        continue;
      }
      if (!b || skipped.has(site.call.id)) continue;
      /** Reports the CUDA backend at `at`; the fix replaces it (`backendEdit`) and sets init_method="xla://". */
      const reportBackend = (at: Node, backendEdit: Edit, applicability: 'safe' | 'unsafe') => {
        cudaGroups++;
        const im = initMethodEdits(site.call);
        ctx.report(at, {
          message: messageFor(ctx, spmd),
          fix: xlaIdiom
            ? {
                title: `Use the \`${backendName}\` backend with \`init_method="xla://"\``,
                applicability: im.userValue ? 'unsafe' : applicability,
                edits: [backendEdit, ...im.edits],
                imports: [XLA_BACKEND],
              }
            : null,
        });
      };
      // "nccl" literal in the call
      if (b.type === 'string' && NCCL.test(stringContent(b) ?? '')) {
        reportedLiterals.add(b.id);
        reportBackend(b, replaceStringContent(b, backendName), spmd ? 'unsafe' : 'safe');
        continue;
      }
      // "nccl" if torch.cuda.is_available() else "gloo"
      if (b.type === 'conditional_expression') {
        const arms = [b.namedChildren[0], b.namedChildren[2]];
        if (!arms.some((a) => a?.type === 'string' && NCCL.test(stringContent(a) ?? ''))) continue;
        reportBackend(b, { start: b.startIndex, end: b.endIndex, text: `"${backendName}"` }, 'unsafe');
        continue;
      }
      // backend = 'nccl' (nanoGPT), def setup(backend="nccl"), parser.add_argument("--backend", default="nccl")
      if (b.type === 'identifier' || b.type === 'attribute') {
        const src = stringSource(ctx, b);
        if (!src) {
          // `backend = "gloo" if not th.cuda.is_available() else "nccl"` (guided-diffusion): a TPU host takes the CPU arm
          const choice = b.type === 'identifier' ? ncclChoice(ctx, b) : null;
          // `backend = 'gloo' if os.name == 'nt' else 'nccl'` (edm): a test that is no CUDA check sends a TPU host (Linux) to NCCL
          const platform = !choice && b.type === 'identifier' ? platformNcclChoice(ctx, b) : null;
          if (platform) {
            reportedLiterals.add(platform.nccl.id);
            reportBackend(platform.nccl, replaceStringContent(platform.nccl, backendName), 'unsafe');
            continue;
          }
          if (choice) {
            ctx.report(b, {
              severity: 'warning',
              message: `\`${b.text}\` is \`${short(choice.text)}\`: on a TPU host, without CUDA, this creates a CPU \`gloo\` group instead of ${ctx.idiom.profile === 'torchtpu' ? "the accelerator's; the TorchTPU process-group backend is not public yet" : 'the XLA one; use the \`xla\` backend with \`init_method="xla://"\`'}`,
              related: [{ start: choice.startIndex, end: choice.endIndex, message: 'the backend choice' }],
            });
            continue;
          }
          // `backend=hparams.dist_backend` whose value a project config module sets (`HParams(dist_backend="nccl")`, tacotron2)
          const cfg = b.type === 'attribute' ? projectConfigString(ctx, b) : null;
          if (cfg && NCCL.test(stringContent(cfg.literal) ?? '')) {
            cudaGroups++;
            const file = cfg.path.split('/').pop() ?? cfg.path;
            const line = (ctx.project?.textOf(cfg.path) ?? '').slice(0, cfg.literal.startIndex).split('\n').length;
            ctx.report(b, {
              message: `${messageFor(ctx, spmd)} (\`${short(b.text)}\` is ${cfg.literal.text}, set in ${file}:${line})`,
              related: [{ start: cfg.literal.startIndex, end: cfg.literal.endIndex, path: cfg.path, message: `the \`${cfg.name}\` value` }],
            });
          }
          continue;
        }
        // a flag default the function overwrites before the read (`args.dist_backend = 'nccl'`): not the value, not reported
        if (b.type === 'attribute' && !src.fromUser) for (const o of ctx.model.attributeSources(b)) if (o.argparse && o.value.id !== src.literal.id) reportedLiterals.add(o.value.id);
        if (!NCCL.test(stringContent(src.literal) ?? '')) continue;
        const entry = bySource.get(src.literal.id) ?? { ...src, calls: [] };
        entry.calls.push(site.call);
        bySource.set(src.literal.id, entry);
        continue;
      }
      // init_process_group("xla", init_method="env://"): the env rendezvous needs MASTER_ADDR/PORT
      if (b.type === 'string' && stringContent(b) === 'xla' && ctx.idiom.profile === 'torch_xla') {
        const im = kwValue(callArgs(site.call).keywords.get('init_method'));
        const url = im?.type === 'string' ? stringContent(im) ?? '' : '';
        if (!/^(env|tcp):\/\//.test(url)) continue;
        const fix = ctx.idiom.xlaAlways('xla://', XLA_BACKEND);
        ctx.report(im!, {
          message: `\`${url.split('//')[0]}//\` rendezvous needs MASTER_ADDR/MASTER_PORT; with the \`xla\` backend use \`init_method="xla://"\``,
          fix: fix ? { title: 'Use `init_method="xla://"`', applicability: 'safe', edits: [replaceStringContent(im!, 'xla://')], imports: fix.imports } : null,
        });
      }
    }
    for (const { literal, fromUser, calls } of bySource.values()) {
      cudaGroups++;
      reportedLiterals.add(literal.id);
      const edits: Edit[] = [replaceStringContent(literal, backendName)];
      let userValue = fromUser;
      for (const call of calls) {
        const im = initMethodEdits(call);
        edits.push(...im.edits);
        userValue ||= im.userValue;
      }
      ctx.report(literal, {
        message: `${messageFor(ctx, spmd)} (this value is the backend of \`init_process_group\`)`,
        fix: xlaIdiom
          ? {
              title: `Use the \`${backendName}\` backend with \`init_method="xla://"\``,
              applicability: spmd || userValue ? 'unsafe' : 'safe',
              edits,
              imports: [XLA_BACKEND],
            }
          : null,
      });
    }
    // `dist_backends = {"cuda": "nccl", "npu": "hccl"}; backend = dist_backends.get(device_type, "gloo")` (open_clip
    // distributed.py): a device-type → backend map with no `xla` entry
    if (sites.length || projectProcessGroups(ctx).length) {
      // from the "nccl" strings (dictionaries are not indexed): each one a pair's value
      const dicts = ctx.sema.nodes('string')
        .filter((v) => stringContent(v) === 'nccl' && v.parent?.type === 'pair' && v.parent.childForFieldName('value')?.id === v.id && v.parent.parent?.type === 'dictionary')
        .map((v) => v.parent!.parent!);
      for (const d of dicts) {
        const pairs = d.namedChildren.filter((c): c is Node => !!c && c.type === 'pair');
        const key = (p: Node) => {
          const k = p.childForFieldName('key');
          return k?.type === 'string' ? (stringContent(k) ?? '').toLowerCase() : null;
        };
        const value = (p: Node) => {
          const v = p.childForFieldName('value');
          return v?.type === 'string' ? stringContent(v) ?? '' : null;
        };
        const cuda = pairs.find((p) => (key(p) === 'cuda' || key(p) === 'gpu') && value(p) === 'nccl');
        if (!cuda || pairs.some((p) => key(p) === 'xla' || key(p) === 'tpu') || ctx.sema.inXlaAwareBranch(d)) continue;
        // every key a device type: not a config dict that happens to hold "cuda"
        if (!pairs.every((p) => /^(cuda|gpu|cpu|mps|npu|hpu|xpu|mlu|musa|meta)$/.test(key(p) ?? ''))) continue;
        const lookup = dictLookup(ctx, d);
        if (!lookup) continue;
        cudaGroups++;
        const fallback = lookup.fallback
          ? `falls back to ${lookup.fallback.text}${stringContent(lookup.fallback) === 'gloo' ? ' (a CPU group)' : ''}`
          : `raises KeyError for the ${ctx.idiom.profile === 'torchtpu' ? 'TPU' : '`xla`'} device type`;
        ctx.report(cuda, {
          message: ctx.idiom.profile === 'torchtpu'
            ? `this backend map sends CUDA to \`nccl\` and has no entry for the TPU: on a TPU host the lookup ${fallback} (the TorchTPU process-group backend is not public yet)`
            : `this backend map sends CUDA to \`nccl\` and has no \`xla\` entry: on a TPU host the lookup ${fallback}; create the group with the \`xla\` backend and \`init_method="xla://"\` (after \`import torch_xla.distributed.xla_backend\`)`,
          related: [{ start: lookup.at.startIndex, end: lookup.at.endIndex, message: 'the backend lookup' }],
        });
      }
    }
    // `def launch(..., backend="nccl")` / `add_argument("--dist-backend", default="nccl")` whose group is created in another
    // function or module (YOLOX launch.py hands it to `mp.start_processes` workers; tools/train.py passes the flag to
    // `launch(backend=args.dist_backend)`): the default is the backend every run without a flag gets. No fix here.
    for (const lit of ctx.sema.nodes('string')) {
      if (stringContent(lit) !== 'nccl' || reportedLiterals.has(lit.id) || ctx.sema.inXlaAwareBranch(lit)) continue;
      const owner = backendDefaultOf(ctx, lit);
      if (!owner) continue;
      reportedLiterals.add(lit.id);
      cudaGroups++;
      ctx.report(lit, {
        message: ctx.idiom.profile === 'torchtpu'
          ? `\`${owner}\` defaults to the NCCL process-group backend, which needs CUDA GPUs (the TorchTPU backend is not public yet)`
          : `\`${owner}\` defaults to the NCCL process-group backend, which needs CUDA GPUs; on XLA create the group with the \`xla\` backend and \`init_method="xla://"\` (after \`import torch_xla.distributed.xla_backend\`)`,
        fix: null,
      });
    }
    // `assert backend in ["gloo", "nccl"]` (YOLOX utils/dist.py, on `dist.get_backend(group)`): fails for the `xla` group
    for (const a of ctx.sema.nodes('assert_statement')) {
      const cond = a.namedChildren[0];
      if (cond?.type !== 'comparison_operator' || ctx.sema.inXlaAwareBranch(a)) continue;
      const [subject, list] = cond.namedChildren;
      const op = cond.children.find((c) => c && !c.isNamed)?.text;
      if (op !== 'in' || !subject || !list || (list.type !== 'list' && list.type !== 'tuple' && list.type !== 'set')) continue;
      const names = list.namedChildren.map((c) => (c?.type === 'string' ? stringContent(c) ?? '' : null));
      if (!names.includes('nccl') || names.some((n) => n === null || n === 'xla')) continue;
      if (!/backend/i.test(subject.text) && !/get_backend\(/.test(subject.text)) continue;
      ctx.report(list, {
        message: ctx.idiom.profile === 'torchtpu'
          ? `\`assert ${short(subject.text, 30)} in ${short(list.text, 30)}\` accepts only CPU and CUDA process-group backends`
          : `\`assert ${short(subject.text, 30)} in ${short(list.text, 30)}\` raises AssertionError for the \`xla\` process-group backend (\`dist.get_backend()\` returns "xla" for a group of torch_xla's backend, XBK:19, 47-48): accept "xla" and treat it like "nccl" (its tensors live on the device)`,
        fix: null,
      });
    }
    if (!cudaGroups) return;
    // torch_xla's `xla://` handler reads both variables too (RDZ:34-39, the same at v2.3.0-v2.9.0): `MASTER_ADDR` when
    // set, else the discovered master worker IP (TPU) or `localhost`; `MASTER_PORT` with default 12355. So a write is
    // only wrong on XLA when it pins the address to this host (a multi-host slice would look for the store on every
    // host); a user-set address or a port is still used by `xla://` and is kept (deleting `args.master_addr` would make
    // a non-TPU XLA job fall back to `localhost`, deleting a port moves the store to 12355).
    const names = ctx.idiom.profile === 'torchtpu' ? ['MASTER_ADDR', 'MASTER_PORT'] : ['MASTER_ADDR'];
    for (const name of names) {
      for (const w of envWrites(ctx, name)) {
        // an MPS-only or CUDA-only branch: never runs on a TPU host
        if (ctx.sema.inXlaAwareBranch(w.node) || mpsOnly(w.node) || (guardedNccl.length > 0 && cudaOnly(w.node))) continue;
        const local = w.value?.type === 'string' && LOOPBACK.test(stringContent(w.value) ?? '');
        if (ctx.idiom.profile !== 'torchtpu' && !local) continue;
        const stmtOk = w.stmt.type === 'expression_statement';
        ctx.report(w.node, {
          severity: 'warning',
          message:
            ctx.idiom.profile === 'torchtpu'
              ? `\`${name}\` only feeds the \`env://\` rendezvous of the NCCL group`
              : `\`MASTER_ADDR\` = ${w.value!.text} pins the rendezvous store to this host, and \`xla://\` reads it too (it uses \`MASTER_ADDR\` when set and only otherwise discovers the master worker's IP on a TPU): on a multi-host slice every host would look for the store on itself`,
          fix:
            xlaIdiom && stmtOk
              ? { title: `Delete the \`${name}\` write`, applicability: 'safe', edits: [deleteStatement(ctx.text, w.stmt)] }
              : null,
        });
      }
    }
  },
});

/**
 * Where a dict literal bound to a name is looked up: `name.get(key, fallback)` or `name[key]` in the same function
 * (or the literal itself looked up in place), with the fallback of `.get`.
 */
function dictLookup(ctx: RuleContext, d: Node): { at: Node; fallback: Node | null } | null {
  const fromCall = (call: Node | null | undefined) => {
    if (call?.type !== 'call') return null;
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'get') return null;
    return { at: call, fallback: callArgs(call).positional[1] ?? null };
  };
  // `{...}.get(device_type, "gloo")`
  if (d.parent?.type === 'attribute') return fromCall(d.parent.parent);
  const a = d.parent;
  if (a?.type !== 'assignment' || a.childForFieldName('right')?.id !== d.id) return null;
  const name = a.childForFieldName('left');
  if (name?.type !== 'identifier') return null;
  const fn = ctx.sema.enclosingFunction(d);
  for (const id of ctx.sema.identifiersNamed(name.text)) {
    if (id.id === name.id || ctx.sema.enclosingFunction(id)?.id !== fn?.id) continue;
    const p = id.parent;
    if (p?.type === 'attribute' && p.childForFieldName('object')?.id === id.id) {
      const hit = fromCall(p.parent);
      if (hit) return hit;
    }
    if (p?.type === 'subscript' && p.childForFieldName('value')?.id === id.id) return { at: p, fallback: null };
  }
  return null;
}

/** The parameter or `--flag` whose default is this "nccl" literal, when its name says it is a process-group backend. */
function backendDefaultOf(ctx: RuleContext, lit: Node): string | null {
  const p = lit.parent;
  if ((p?.type === 'default_parameter' || p?.type === 'typed_default_parameter') && p.childForFieldName('value')?.id === lit.id) {
    const name = p.childForFieldName('name')?.text ?? '';
    return /(^|_)backend$/i.test(name) ? name : null;
  }
  if (p?.type === 'keyword_argument' && p.childForFieldName('name')?.text === 'default' && p.childForFieldName('value')?.id === lit.id) {
    const call = p.parent?.parent;
    const fn = call?.type === 'call' ? call.childForFieldName('function') : null;
    if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'add_argument') return null;
    const flag = callArgs(call!).positional.map((x) => (x.type === 'string' ? stringContent(x) ?? '' : '')).find((f) => f.startsWith('--'));
    return flag && /[-_]?backend$/i.test(flag) ? flag : null;
  }
  return null;
}

/**
 * A name bound once (in the function or at module level) to a conditional with a "nccl" arm whose test is no CUDA
 * check (`'gloo' if os.name == 'nt' else 'nccl'`): a Linux TPU host takes the NCCL arm.
 */
function platformNcclChoice(ctx: RuleContext, name: Node): { nccl: Node } | null {
  const c = soleConditionalBinding(ctx, name);
  if (!c) return null;
  const test = c.namedChildren[1]?.text ?? '';
  if (/cuda|xla|tpu|device|gpu/i.test(test)) return null;
  const arms = [c.namedChildren[0], c.namedChildren[2]];
  const nccl = arms.find((a) => a?.type === 'string' && stringContent(a) === 'nccl');
  return nccl && arms.every((a) => a?.type === 'string') ? { nccl } : null;
}

/** A connect address that means this host. */
const LOOPBACK = /^(localhost|127\.0\.0\.1|0\.0\.0\.0|::1)$/;

function messageFor(ctx: RuleContext, spmd: boolean): string {
  if (ctx.idiom.profile === 'torchtpu') return 'The NCCL process-group backend needs CUDA GPUs; look for where this group is created (the TorchTPU backend is not public yet)';
  return spmd
    ? 'The NCCL process-group backend needs CUDA GPUs; under SPMD use a CPU `gloo` group with `init_method="xla://"`'
    : 'The NCCL process-group backend needs CUDA GPUs; use the `xla` backend with `init_method="xla://"`';
}
