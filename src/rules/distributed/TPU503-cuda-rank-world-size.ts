import { defineRule, type RuleContext } from '../../core/rule';
import { callArgs, kwValue, mentionsXla, stringContent } from '../../core/semantics';
import type { Snippet } from '../../core/idioms';
import { Idioms } from '../../core/idioms';
import type { Node } from '../../core/parse';
import { INIT_PG, callsTo, envRead, isXlaLauncher, launchedFunctions, projectProcessGroups, short, withCallees } from './util';
import { mpsOnly } from '../../model/guards';

type Kind = 'rank' | 'local' | 'world';
const ENV_KIND: Record<string, Kind> = { RANK: 'rank', LOCAL_RANK: 'local', WORLD_SIZE: 'world' };
/**
 * Other launchers' per-process variables (SLURM's srun, Open MPI's mpirun, MPICH/Intel MPI's PMI): one task per GPU.
 * torch_xla reads none of them (no SLURM_/OMPI_/PMI_ name in torch_xla/*.py at v2.9.0) and `torch_xla.launch` sets none;
 * the runtime's own values are XR:106-149. No fix: the script's launcher detection needs more than a rename.
 */
const OTHER_LAUNCHER: Record<string, { kind: Kind; by: string; what?: string }> = {
  SLURM_PROCID: { kind: 'rank', by: 'SLURM (`srun`)' },
  SLURM_NTASKS: { kind: 'world', by: 'SLURM (`srun`)' },
  SLURM_LOCALID: { kind: 'local', by: 'SLURM (`srun`)' },
  // the node's index and the node count, multiplied by the GPUs per node into a rank and a world size (barlowtwins main.py)
  SLURM_NODEID: { kind: 'rank', by: 'SLURM (`srun`)', what: "node's index, the base of a rank built from it" },
  SLURM_NNODES: { kind: 'world', by: 'SLURM (`srun`)', what: 'node count, the base of a world size built from it' },
  OMPI_COMM_WORLD_RANK: { kind: 'rank', by: 'Open MPI (`mpirun`)' },
  OMPI_COMM_WORLD_SIZE: { kind: 'world', by: 'Open MPI (`mpirun`)' },
  OMPI_COMM_WORLD_LOCAL_RANK: { kind: 'local', by: 'Open MPI (`mpirun`)' },
  PMI_RANK: { kind: 'rank', by: 'MPICH/Intel MPI (PMI)' },
  PMI_SIZE: { kind: 'world', by: 'MPICH/Intel MPI (PMI)' },
};
const WORLD_NAME = /^(world_size|world|ws|num_replicas|n_replicas|ddp_world_size)$/;

function idiomFor(ctx: RuleContext, kind: Kind): Snippet | null {
  return kind === 'rank' ? ctx.idiom.rank() : kind === 'local' ? ctx.idiom.localRank() : ctx.idiom.worldSize();
}

const XR_NAME: Record<Kind, string> = { rank: 'xr.global_ordinal()', local: 'xr.local_ordinal()', world: 'xr.world_size()' };

/**
 * Dual-path: `accel.launcher_env("LOCAL_RANK", -1)`, which is `int(os.environ.get(...))` with the script's own default off
 * XLA, so a `-1`/None "not launched" sentinel keeps its value in a single-process run (issue 10). tpu-only has no
 * runtime call with a default: null.
 */
function launcherEnv(ctx: RuleContext, name: string, dflt: string): Snippet | null {
  const base = ctx.idiom.dualPath ? ctx.idiom.localRank() : null;
  return base ? { ...base, text: base.text.replace(/local_rank\(\)$/, `launcher_env("${name}", ${dflt})`) } : null;
}

/** The value the runtime returns in a single process (`xr.world_size()` 1, the ordinals 0): not a sentinel. */
const naturalDefault = (name: string, dflt: Node) => (name === 'WORLD_SIZE' ? /^(1|'1'|"1")$/ : /^(0|'0'|"0")$/).test(dflt.text);

export default defineRule({
  id: 'TPU503',
  name: 'cuda-rank-world-size',
  title: 'Rank, world size and master identity read from CUDA or env',
  severity: 'warning',
  step: 7,
  effort: 1,
  message: 'Rank or world size comes from the CUDA launcher; read it from the XLA runtime',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Read it from `torch_xla.runtime`' },
  triggers: ['RANK', 'WORLD_SIZE', 'SLURM_', 'Get_rank', 'Get_size', 'OMPI_COMM_WORLD', 'PMI_', 'local_rank', 'device_count', 'get_rank', 'get_world_size', 'get_ordinal', 'xrt_world_size'],
  docs: {
    what:
      'Checks for rank and world size taken from the CUDA launcher: `int(os.environ["RANK"|"LOCAL_RANK"|"WORLD_SIZE"])` (also `.get`/`os.getenv`), the torchrun `LOCAL_WORLD_SIZE` (no fix: `xr.local_process_count()`), `args.local_rank` from a `--local_rank` flag (once, at its first read; the fix rewrites every read), ' +
      'the per-process variables of other GPU launchers (SLURM `SLURM_PROCID`/`SLURM_NTASKS`/`SLURM_LOCALID`, Open MPI `OMPI_COMM_WORLD_RANK`/`_SIZE`/`_LOCAL_RANK`, PMI `PMI_RANK`/`PMI_SIZE`, SLURM\'s node index and count `SLURM_NODEID`/`SLURM_NNODES` that a script multiplies into a rank and world size; one finding per read, no fix), mpi4py `MPI.COMM_WORLD.Get_rank()`/`Get_size()` (no fix), ' +
      'launcher variables read through a loop over their names (`for v in ("LOCAL_RANK", "SLURM_LOCALID"): ... os.environ[v]`, reported at the name, no fix), ' +
      '`torch.cuda.device_count()` used as the world size, `dist.get_rank()`/`dist.get_world_size()` in files that create no process group, and the removed `xm.get_ordinal()`/`xm.xrt_world_size()`. ' +
      'Launcher environment reads and `--local_rank` flags stay quiet in files that use the HF Trainer, Accelerate or Lightning, which own ranks (and set them up on XLA; importing only Accelerate helpers such as `accelerate.utils.is_xpu_available` or `set_seed` does not count), except the first `LOCAL_RANK`/`RANK` read of a function that builds a `from_pretrained(device_map={"": local_rank})` map (no fix); ' +
      '`engine.local_rank` of a DeepSpeed engine (`engine, … = deepspeed.initialize(…)`) is DeepSpeed\'s own and is left to TPU705.',
    why:
      '`torch_xla.launch` does not set `RANK`/`WORLD_SIZE` (it sets them only when torchrun started the job), `torch.cuda.device_count()` is 0 on a TPU host, and `dist.get_rank()` raises without a process group, ' +
      'which the native XLA path (`xm.optimizer_step`) never creates. The XLA runtime knows all of them: `xr.world_size()`, `xr.global_ordinal()`, `xr.local_ordinal()`, `xr.process_index()`/`xr.process_count()` (XR:106-149). ' +
      '`xm.xrt_world_size()` and `xm.get_ordinal()` were deprecated in 2.5 and removed in 2.7 (commits 7f8ef79, da7fdca). For `rank == 0` use `xm.is_master_ordinal(local=False)`, for `if rank == 0: print(...)` `xm.master_print(...)` (XM:97-118).',
    example: 'rank = int(os.environ["RANK"])\nworld_size = int(os.environ["WORLD_SIZE"])\nlocal_rank = int(os.environ["LOCAL_RANK"])',
    useInstead: 'import torch_xla.runtime as xr\n\nrank = xr.global_ordinal()\nworld_size = xr.world_size()\nlocal_rank = xr.local_ordinal()',
    fixSafety:
      'Safe inside a `torch_xla.launch`/`xmp.spawn` target (the runtime is initialised there). Unsafe elsewhere: at module level the call initialises the XLA runtime before any launcher forks. ' +
      'Comparisons such as `int(os.environ.get("RANK", -1)) != -1` (a "was torchrun used" test) are reported without a fix. The `xm.*` renames are always safe.',
    sources: [
      'XR:106-149 torch_xla/runtime.py world_size, global_ordinal, local_ordinal, process_index, process_count (read at pytorch/xla@022ecde)',
      'TX:271-272 (torch_xla.launch reads LOCAL_RANK only under torchelastic)',
      'torch_xla/*.py at v2.9.0 reads no SLURM_*, OMPI_COMM_WORLD_* or PMI_* variable and imports no mpi4py (git grep), and torch_xla/_internal/pjrt.py run_multiprocess sets none',
      'torch_xla/_internal/gpu.py (LOCAL_WORLD_SIZE is written only for the GPU client); torch_xla/runtime.py local_process_count',
      'XM:97-118 is_master_ordinal, master_print; commits 7f8ef79, da7fdca (xrt_world_size/get_ordinal removed in 2.7)',
    ],
    torchtpu: 'TorchTPU rank/world-size APIs are not public yet: findings say what to replace and offer no fix (dual-path style uses `accel.rank()`/`accel.world_size()`).',
  },
  check(ctx) {
    if (!ctx.sema.usesTorch()) return;
    // inside the functions a launcher starts, the runtime is initialised
    const launched = new Set<number>();
    for (const call of ctx.sema.nodes('call')) {
      if (!isXlaLauncher(ctx, call)) continue;
      for (const fn of launchedFunctions(ctx, call)) for (const f of withCallees(ctx, fn)) launched.add(f.id);
    }
    const inLaunchTarget = (n: Node) => {
      for (let f = ctx.sema.enclosingFunction(n); f; f = ctx.sema.enclosingFunction(f)) if (launched.has(f.id)) return true;
      return false;
    };
    // helpers shaped like `if torch_xla is not None: return xr.global_ordinal()` followed by the env fallback
    const xlaFunction = (n: Node) => {
      const f = ctx.sema.enclosingFunction(n);
      const body = f?.childForFieldName('body');
      if (!body) return false;
      for (const stmt of body.namedChildren) {
        if (!stmt || stmt.startIndex >= n.startIndex) break;
        const cond = stmt.type === 'if_statement' ? stmt.childForFieldName('condition') : null;
        if (cond && mentionsXla(cond.text) && /\breturn\b/.test(stmt.childForFieldName('consequence')?.text ?? '')) return true;
      }
      return false;
    };
    const loopReported = new Set<number>();
    const launcherInFile = ctx.sema.nodes('call').some((c) => isXlaLauncher(ctx, c) || /^torch\.multiprocessing\.spawn/.test(ctx.sema.callee(c) ?? ''));
    // under torchrun torch_xla sets up each process's chips in the xla:// rendezvous (torch_xla/_internal/rendezvous.py:20
    // at v2.3.0, :25 at v2.9.0): a runtime call before init_process_group would start PJRT with every chip of the host
    // in each process, so a read that precedes the process group (in the same function) keeps torchrun's variable in tpu-only style (no fix);
    // dual-path's accel.rank()/local_rank()/world_size() read torchrun's variables until the group exists
    const groupInits = ctx.sema.nodes('call').filter((c) => /(^|\.)init_process_group$/.test(ctx.sema.callee(c) ?? c.childForFieldName('function')?.text ?? ''));
    const report = (node: Node, kind: Kind, what: string, replace: Node | null, forceUnsafe = false, custom?: Snippet | null) => {
      // at module level of a launching script the runtime call would run in the parent before the fork
      const beforeFork = launcherInFile && !ctx.sema.enclosingFunction(node);
      const beforeGroup = !ctx.idiom.dualPath && groupInits.some((c) => c.startIndex > node.endIndex && ctx.sema.enclosingFunction(c)?.id === ctx.sema.enclosingFunction(node)?.id);
      const snippet = replace && !beforeFork && !beforeGroup ? (custom !== undefined ? custom : idiomFor(ctx, kind)) : null;
      // name what the fix writes (the dual-path module calls the XLA runtime on TPU)
      const target = ctx.idiom.profile === 'torchtpu' ? 'the TorchTPU runtime (not public yet)' : `\`${idiomFor(ctx, kind)?.text ?? XR_NAME[kind]}\``;
      ctx.report(node, {
        // before the xla:// group exists, under torchrun, the runtime call is the wrong advice (see beforeGroup above)
        message: beforeGroup && replace && ctx.idiom.profile !== 'torchtpu'
          ? `${what}; after \`init_process_group(\"xla\", init_method=\"xla://\")\` read it from ${target} (before the group exists, torchrun's variable is the right one: a runtime call there would start each process with all the host's chips)`
          : `${what}; read it from ${target}`,
        fix:
          snippet && replace
            ? {
                title: `Use \`${snippet.text}\``,
                applicability: !forceUnsafe && inLaunchTarget(node) ? 'safe' : 'unsafe',
                edits: [{ start: replace.startIndex, end: replace.endIndex, text: snippet.text }],
                imports: snippet.imports,
                needsAccel: snippet.needsAccel,
              }
            : null,
      });
    };

    // the HF Trainer, Accelerate and Lightning own ranks and world size (and set them up on XLA):
    // launcher env reads and --local_rank flags in code they manage are theirs
    const managed = ownsRanks(ctx);

    // int(os.environ["RANK"]), os.environ.get("LOCAL_RANK"), os.getenv("WORLD_SIZE")
    for (const node of managed ? [] : [...ctx.sema.nodes('subscript'), ...ctx.sema.nodes('call')]) {
      const read = envRead(ctx, node);
      if (!read || !(read.name in ENV_KIND)) continue;
      if (ctx.sema.inXlaAwareBranch(node) || xlaFunction(node) || mpsOnly(node)) continue;
      const kind = ENV_KIND[read.name];
      const wrapper = node.parent?.type === 'argument_list' && node.parent.parent?.type === 'call' && node.parent.parent.childForFieldName('function')?.text === 'int' && node.parent.namedChildren.length === 1
        ? node.parent.parent
        : null;
      const outer = wrapper ?? node;
      const compared = outer.parent?.type === 'comparison_operator';
      // `int(os.getenv("LOCAL_RANK", -1))`: the default is what a single-process run sees (often a sentinel compared later);
      // the runtime call would return 0 there and send the script down its DDP branch
      const dflt = node.type === 'call' ? callArgs(node).positional[1] ?? kwValue(callArgs(node).keywords.get('default')) : undefined;
      // dual-path keeps the script's default exactly (`accel.local_rank()` already reads LOCAL_RANK with default 0; `accel.rank()`
      // and `accel.world_size()` prefer an initialised process group over the environment); tpu-only keeps only a natural default
      const natural = !!dflt && naturalDefault(read.name, dflt);
      const custom = !dflt || (ctx.idiom.profile === 'torchtpu') ? undefined
        : ctx.idiom.dualPath ? (natural && read.name === 'LOCAL_RANK' ? undefined : launcherEnv(ctx, read.name, dflt.text))
        : natural ? undefined : null;
      const sentinel = dflt && custom === null && wrapper && !compared ? ` (its default \`${dflt.text}\` is what a run without a launcher sees, and the runtime call has none: no fix)` : '';
      report(outer, kind, ctx.idiom.profile === 'torchtpu' ? `\`${read.name}\` is set by torchrun only` : `\`${read.name}\` is set by torchrun, not by \`torch_xla.launch\`${sentinel}`, wrapper && !compared ? wrapper : null, false, custom);
    }

    // the HF Trainer owns ranks, but not the placement of a model loaded with `from_pretrained(device_map={"": local_rank})`
    // (qlora): the first launcher read of a function that builds such a map, once
    if (managed) {
      const mapFns = new Set<number>();
      for (const kw of ctx.sema.nodes('keyword_argument')) {
        if (kw.childForFieldName('name')?.text !== 'device_map') continue;
        const fn = ctx.sema.enclosingFunction(kw);
        const value = kw.childForFieldName('value');
        if (!fn || !value) continue;
        const maps = value.type === 'identifier' ? ctx.sema.bindings(value.text).filter((b) => ctx.sema.enclosingFunction(b)?.id === fn.id) : [value];
        if (maps.some((m) => m.type === 'dictionary' && m.namedChildren.some((p) => p?.type === 'pair' && p.childForFieldName('value')?.type === 'identifier'))) mapFns.add(fn.id);
      }
      const done = new Set<number>();
      for (const node of mapFns.size ? [...ctx.sema.nodes('subscript'), ...ctx.sema.nodes('call')].sort((a, b) => a.startIndex - b.startIndex) : []) {
        const read = envRead(ctx, node);
        const fn = read && (read.name === 'LOCAL_RANK' || read.name === 'RANK') ? ctx.sema.enclosingFunction(node) : null;
        if (!read || !fn || !mapFns.has(fn.id) || done.has(fn.id) || ctx.sema.inXlaAwareBranch(node) || mpsOnly(node)) continue;
        done.add(fn.id);
        // no replacement: an XLA ordinal in a device map would still be read as a CUDA ordinal by accelerate (TPU102)
        ctx.report(node, {
          message: ctx.idiom.profile === 'torchtpu'
            ? `\`${read.name}\` is set by torchrun only, and the model's \`device_map\` is built from it: an int there is a CUDA ordinal`
            : `\`${read.name}\` is set by torchrun, not by \`torch_xla.launch\`, and the model's \`device_map\` is built from it: an int there is a CUDA ordinal (accelerate has no XLA device map; load without one and move the model)`,
          fix: null,
        });
      }
    }

    // `for v in ("LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"): if v in os.environ: local_rank = int(os.environ[v])`
    // (open_clip world_info_from_env): the launcher variable is named in the loop's tuple, reported there; no fix (the
    // other names are other launchers' variables, the loop is the script's own launcher detection)
    for (const node of managed ? [] : [...ctx.sema.nodes('subscript'), ...ctx.sema.nodes('call')]) {
      const key = loopEnvKey(ctx, node);
      if (!key || ctx.sema.inXlaAwareBranch(node) || xlaFunction(node) || mpsOnly(node)) continue;
      for (const item of key.items) {
        const name = stringContent(item) ?? '';
        if (!(name in ENV_KIND) || loopReported.has(item.id)) continue;
        loopReported.add(item.id);
        const kind = ENV_KIND[name];
        report(item, kind, ctx.idiom.profile === 'torchtpu'
          ? `\`${name}\` (read as \`${short(node.text)}\` in this loop) is set by torchrun only`
          : `\`${name}\` (read as \`${short(node.text)}\` in this loop) is set by torchrun, not by \`torch_xla.launch\``, null);
      }
    }

    // `int(os.environ["SLURM_PROCID"])`, `OMPI_COMM_WORLD_LOCAL_RANK`: one finding per read, no fix
    for (const node of managed ? [] : [...ctx.sema.nodes('subscript'), ...ctx.sema.nodes('call')]) {
      const read = envRead(ctx, node);
      const other = read ? OTHER_LAUNCHER[read.name] : undefined;
      if (!read || !other || ctx.sema.inXlaAwareBranch(node) || xlaFunction(node) || mpsOnly(node)) continue;
      const what = other.what ?? (other.kind === 'rank' ? 'global rank' : other.kind === 'local' ? 'local rank' : 'world size');
      ctx.report(node, {
        message: ctx.idiom.profile === 'torchtpu'
          ? `\`${read.name}\` (the ${what}) is set by ${other.by}, which starts one process per GPU; the TorchTPU runtime's own value is not public yet`
          : `\`${read.name}\` (the ${what}) is set by ${other.by}, which starts one process per GPU; \`torch_xla.launch\` sets none of these and torch_xla never reads them: take it from \`${XR_NAME[other.kind]}\``,
        fix: null,
      });
    }

    // mpi4py: `MPI.COMM_WORLD.Get_rank()` / `.Get_size()` (also through `comm = MPI.COMM_WORLD`): the rank and size of the
    // processes `mpirun` started, one per GPU; torch_xla imports no mpi4py (git grep at v2.9.0) and `torch_xla.launch` starts
    // no MPI job. No fix: an MPI world is the script's launcher, and the runtime's values are XR:106-149
    if (!managed && /\bmpi4py\b/.test(ctx.text)) {
      for (const call of ctx.sema.nodes('call')) {
        const f = call.childForFieldName('function');
        const m = f?.type === 'attribute' ? /^Get_(rank|size)$/.exec(f.childForFieldName('attribute')?.text ?? '') : null;
        if (!m || !f || callArgs(call).positional.length || ctx.sema.inXlaAwareBranch(call) || xlaFunction(call)) continue;
        const obj = f.childForFieldName('object')!;
        const comm = obj.text.endsWith('COMM_WORLD') || (obj.type === 'identifier' && ctx.sema.bindings(obj.text).some((b) => /(^|\.)COMM_WORLD$/.test(b.text)));
        if (!comm) continue;
        const kind: Kind = m[1] === 'rank' ? 'rank' : 'world';
        const what = kind === 'rank' ? 'global rank' : 'world size';
        ctx.report(call, {
          message: ctx.idiom.profile === 'torchtpu'
            ? `\`${short(call.text)}\` (the ${what}) is MPI's, from \`mpirun\`, which starts one process per GPU; the TorchTPU runtime's own value is not public yet`
            : `\`${short(call.text)}\` (the ${what}) is MPI's, from \`mpirun\`, which starts one process per GPU; \`torch_xla.launch\` starts no MPI job: take it from \`${XR_NAME[kind]}\``,
          fix: null,
        });
      }
    }

    // LOCAL_WORLD_SIZE: torchrun sets it; torch_xla sets it only for its GPU client (torch_xla/_internal/gpu.py
    // initialize_env / num_local_processes), never on TPU. The runtime's count is `xr.local_process_count()`
    // (torch_xla/runtime.py). No fix: a script's own default (often 1) is what a run without a launcher sees.
    for (const node of managed ? [] : [...ctx.sema.nodes('subscript'), ...ctx.sema.nodes('call')]) {
      const read = envRead(ctx, node);
      if (read?.name !== 'LOCAL_WORLD_SIZE' || ctx.sema.inXlaAwareBranch(node) || xlaFunction(node)) continue;
      ctx.report(node, {
        message: ctx.idiom.profile === 'torchtpu'
          ? '`LOCAL_WORLD_SIZE` is set by torchrun only'
          : '`LOCAL_WORLD_SIZE` is set by torchrun, not by `torch_xla.launch` on TPU (torch_xla sets it only for its GPU client): use `xr.local_process_count()`',
        fix: null,
      });
    }

    // args.local_rank from a --local_rank / --local-rank flag (torch.distributed.launch)
    const localRankFlag = !managed && ctx.sema.nodes('string').some((s) => /^--local[_-]rank$/.test(stringContent(s) ?? '') && s.parent?.parent?.type === 'call');
    if (localRankFlag) {
      // one finding per spelling (`args.local_rank`), at its first read; the fix rewrites every read (timm train.py reads it a dozen times)
      const reads = new Map<string, Node[]>();
      const engines = deepSpeedEngines(ctx);
      for (const attr of ctx.sema.nodes('attribute')) {
        const obj = attr.childForFieldName('object');
        if (attr.childForFieldName('attribute')?.text !== 'local_rank' || obj?.type !== 'identifier' || ctx.sema.resolve(obj)) continue;
        // `engine.local_rank` of `engine, … = deepspeed.initialize(…)` is DeepSpeed's (TPU705), not the flag
        if (engines.has(obj.text)) continue;
        const p = attr.parent;
        if (p?.type === 'assignment' && p.childForFieldName('left')?.id === attr.id) continue;
        if (ctx.sema.inXlaAwareBranch(attr) || xlaFunction(attr)) continue;
        // the default of our own `accel.launcher_env("LOCAL_RANK", args.local_rank)`
        const call = p?.type === 'argument_list' ? p.parent : null;
        if (call?.type === 'call' && /(^|\.)launcher_env$/.test(call.childForFieldName('function')?.text ?? '')) continue;
        reads.set(attr.text, [...(reads.get(attr.text) ?? []), attr]);
      }
      // the flag's default is what a run without a launcher sees: `default=-1` is a "not launched" sentinel, and no
      // default is None; only `default=0` equals what `local_rank()` returns there
      const flagDefault = localRankFlagDefault(ctx);
      for (const [text, nodes] of reads) {
        const first = nodes[0];
        const more = nodes.length > 1 ? ` (read ${nodes.length} times)` : '';
        const keepsDefault = flagDefault === '0' || flagDefault === "'0'" || flagDefault === '"0"';
        const snippet = keepsDefault ? idiomFor(ctx, 'local') : launcherEnv(ctx, 'LOCAL_RANK', text);
        const target = ctx.idiom.profile === 'torchtpu' ? 'the TorchTPU runtime (not public yet)' : `\`${snippet?.text ?? XR_NAME.local}\``;
        // at module level of a launching script the runtime call would run in the parent before the fork
        const replaceable = nodes.filter((n) => !(launcherInFile && !ctx.sema.enclosingFunction(n)));
        const sentinel = !keepsDefault && !snippet && ctx.idiom.profile !== 'torchtpu' ? ` (its default \`${flagDefault ?? 'None'}\` is what a run without a launcher sees, and the runtime call has none: no fix)` : '';
        ctx.report(first, {
          message: `\`${text}\` comes from the \`--local_rank\` flag of the CUDA launcher${more}; read it from ${target}${sentinel}`,
          fix:
            snippet && replaceable.length
              ? {
                  title: `Use \`${snippet.text}\`${replaceable.length > 1 ? ` (${replaceable.length} reads)` : ''}`,
                  applicability: 'unsafe',
                  edits: replaceable.map((n) => ({ start: n.startIndex, end: n.endIndex, text: snippet.text })),
                  imports: snippet.imports,
                  needsAccel: snippet.needsAccel,
                }
              : null,
        });
      }
    }

    // world_size = torch.cuda.device_count(); DistributedSampler(num_replicas=torch.cuda.device_count())
    for (const call of callsTo(ctx, ['torch.cuda.device_count'])) {
      const p = call.parent;
      let named: string | null = null;
      if (p?.type === 'assignment' && p.childForFieldName('right')?.id === call.id) named = p.childForFieldName('left')?.text ?? null;
      if (p?.type === 'keyword_argument' && p.childForFieldName('value')?.id === call.id) named = p.childForFieldName('name')?.text ?? null;
      if (!named || !WORLD_NAME.test(named) || ctx.sema.inXlaAwareBranch(call)) continue;
      // at module level the replacement would initialise the runtime before a launcher forks
      const inFn = !!ctx.sema.enclosingFunction(call);
      report(call, 'world', '`torch.cuda.device_count()` is 0 on a TPU host and is not the world size', inFn ? call : null);
    }

    // dist.get_rank() / dist.get_world_size() with no process group in this file
    // a process group created through a helper of another project module counts (`utils.init_distributed_mode(args)`)
    if (!callsTo(ctx, INIT_PG).length && (ctx.sema.xlaAware || launched.size) && !projectProcessGroups(ctx).length) {
      for (const call of callsTo(ctx, ['torch.distributed.get_rank', 'torch.distributed.get_world_size'])) {
        if (callArgs(call).positional.length || callArgs(call).keywords.size) continue;
        let guarded = false;
        for (let p = call.parent; p && !guarded; p = p.parent) {
          if ((p.type === 'if_statement' || p.type === 'conditional_expression') && /is_initialized\(\)/.test(p.text)) guarded = true;
        }
        if (guarded) continue;
        const kind: Kind = (ctx.sema.callee(call) ?? '').endsWith('get_rank') ? 'rank' : 'world';
        report(call, kind, `\`${call.text}\` raises without a process group, and this file creates none`, call);
      }
    }

    // xm.get_ordinal() / xm.xrt_world_size(): deprecated in 2.5, removed in 2.7
    if (ctx.idiom.profile === 'torch_xla' && ctx.idiom.at('2.5')) {
      const removed = ctx.idiom.at('2.7');
      for (const call of callsTo(ctx, ['torch_xla.core.xla_model.get_ordinal', 'torch_xla.core.xla_model.xrt_world_size'])) {
        const world = (ctx.sema.callee(call) ?? '').endsWith('xrt_world_size');
        const to = world ? 'xr.world_size()' : 'xr.global_ordinal()';
        const snippet = ctx.idiom.xlaAlways(to, Idioms.imports.XR);
        const noArgs = !callArgs(call).positional.length && !callArgs(call).keywords.size;
        ctx.report(call, {
          severity: removed ? 'error' : 'warning',
          message: `\`${call.childForFieldName('function')!.text}()\` was ${removed ? 'removed in torch_xla 2.7' : 'deprecated in torch_xla 2.5'}; use \`${to}\``,
          fix: snippet
            ? {
                title: `Use \`${to}\``,
                applicability: noArgs ? 'safe' : 'unsafe',
                edits: [{ start: call.startIndex, end: call.endIndex, text: to }],
                imports: snippet.imports,
              }
            : null,
        });
      }
    }
  },
});

/**
 * `os.environ[v]` / `os.environ.get(v)` / `os.getenv(v)` where `v` is the target of an enclosing `for v in (<strings>)`:
 * the string literals the loop iterates.
 */
function loopEnvKey(ctx: RuleContext, node: Node): { items: Node[] } | null {
  let key: Node | null | undefined = null;
  if (node.type === 'subscript') {
    if (ctx.sema.resolve(node.childForFieldName('value')) !== 'os.environ') return null;
    const p = node.parent;
    if (p?.type === 'assignment' && p.childForFieldName('left')?.id === node.id) return null;
    key = node.childForFieldName('subscript');
  } else if (node.type === 'call') {
    const callee = ctx.sema.callee(node);
    if (callee !== 'os.environ.get' && callee !== 'os.getenv') return null;
    key = callArgs(node).positional[0];
  }
  if (key?.type !== 'identifier') return null;
  for (let p = node.parent; p && p.type !== 'function_definition'; p = p.parent) {
    if (p.type !== 'for_statement' || p.childForFieldName('left')?.text !== key.text) continue;
    const right = p.childForFieldName('right');
    const items = right && (right.type === 'tuple' || right.type === 'list') ? right.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment') : [];
    return items.length && items.every((c) => c.type === 'string') ? { items } : null;
  }
  return null;
}

/**
 * The HF Trainer, Accelerate and Lightning own ranks and world size. Accelerate's helpers that own no process
 * (`from accelerate.utils import is_xpu_available`, `set_seed`, big-model loading) do not make a file Accelerate-managed
 * (llama-recipes finetuning.py imports `is_xpu_available` and reads torchrun's variables itself).
 */
const ACCELERATE_HELPER = /^accelerate(\.utils|\.big_modeling)?(\.(is_\w+_available|set_seed|init_empty_weights|init_on_device|infer_auto_device_map|get_balanced_memory|load_checkpoint_and_dispatch|dispatch_model|cpu_offload))?$/;
function ownsRanks(ctx: RuleContext): boolean {
  const fw = ctx.sema.framework;
  if (fw !== 'accelerate') return fw !== null;
  for (const m of ctx.sema.importedModules) if ((m === 'accelerate' || m.startsWith('accelerate.')) && (m === 'accelerate' || !ACCELERATE_HELPER.test(m))) return true;
  return false;
}

/** The `default=` text of `add_argument("--local_rank", ...)` (null when it has none, i.e. None). */
function localRankFlagDefault(ctx: RuleContext): string | null {
  for (const str of ctx.sema.nodes('string')) {
    if (!/^--local[_-]rank$/.test(stringContent(str) ?? '')) continue;
    const call = str.parent?.parent;
    if (call?.type !== 'call') continue;
    const d = kwValue(callArgs(call).keywords.get('default'));
    return d ? d.text : null;
  }
  return null;
}

/** Names bound to what `deepspeed.initialize(...)` returns (`engine, opt, _, _ = deepspeed.initialize(...)`). */
function deepSpeedEngines(ctx: RuleContext): Set<string> {
  const out = new Set<string>();
  for (const a of ctx.sema.nodes('assignment')) {
    const right = a.childForFieldName('right');
    if (right?.type !== 'call' || ctx.sema.callee(right) !== 'deepspeed.initialize') continue;
    const left = a.childForFieldName('left');
    if (left?.type === 'identifier') out.add(left.text);
    else if (left?.type === 'pattern_list' || left?.type === 'tuple_pattern') {
      const first = left.namedChildren[0];
      if (first?.type === 'identifier') out.add(first.text);
    }
  }
  return out;
}
