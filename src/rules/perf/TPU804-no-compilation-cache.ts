import { defineRule, type FixDraft, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { insertLineAfter, insertLineBefore } from '../../core/edits';
import { isImportBlock } from '../../core/imports';
import { launchCalls, xlaContext } from './util';
import { detectEol } from '../../core/source';
import type { Snippet } from '../../core/idioms';
import type { ImportSpec } from '../../core/types';

function isImport(n: Node): boolean {
  return n.type === 'import_statement' || n.type === 'import_from_statement' || n.type === 'future_import_statement';
}

function isDocstring(n: Node): boolean {
  return n.type === 'expression_statement' && n.namedChildren.length === 1 && n.namedChildren[0]?.type === 'string';
}

function importsTorch(n: Node): boolean {
  if (n.type === 'import_statement') return n.namedChildren.some((c) => /^torch(_xla)?(\.|$)/.test((c?.type === 'aliased_import' ? c.childForFieldName('name') : c)?.text ?? ''));
  if (n.type === 'import_from_statement') return /^torch(_xla)?(\.|$)/.test(n.childForFieldName('module_name')?.text ?? '');
  return false;
}

/** The cache path of one process: the launch index, else the process rank. */
function perProcessPath(ctx: RuleContext, index: string | null): { path: string; imports: ImportSpec[] } {
  if (index) return { path: `f"/tmp/xla_cache_{${index}}"`, imports: [] };
  // tpu-only: torchrun's RANK, not xr.global_ordinal(): a runtime call before the xla:// rendezvous (where torch_xla
  // sets up each torchrun process's chips, torch_xla/_internal/rendezvous.py:20 at v2.3.0, :25 at v2.9.0) would start
  // PJRT with every chip of the host in each process. (dual-path's accel.rank() reads RANK until the group exists.)
  if (!ctx.idiom.dualPath && ctx.idiom.profile !== 'torchtpu') return { path: `f"/tmp/xla_cache_{os.environ.get('RANK', '0')}"`, imports: [{ module: 'os' }] };
  const rank = ctx.idiom.rank();
  return rank ? { path: `f"/tmp/xla_cache_{${rank.text}}"`, imports: rank.imports } : { path: '"/tmp/xla_cache"', imports: [] };
}

function cacheSnippet(ctx: RuleContext, where: { path: string; imports: ImportSpec[] }): Snippet | null {
  const call = ctx.idiom.initializeCache(where.path);
  return call && { ...call, imports: [...call.imports, ...where.imports] };
}

/** A script that torchrun / a DDP launcher starts once per rank (process group, rank env reads). SPMD is one process per host. */
function multiProcessScript(ctx: RuleContext): boolean {
  if (ctx.notebook || /\buse_spmd\s*\(/.test(ctx.text)) return false;
  // also the rank reads earlier fixes leave (`accel.local_rank()`, `xr.global_ordinal()`, `dist.get_rank()`)
  const accel = ctx.options.accelModule.split('.').pop()!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const rankCall = new RegExp(`\\b(${accel}|xr)\\.(local_rank|rank|world_size|global_ordinal|local_ordinal)\\s*\\(|\\bdist\\.get_(rank|world_size)\\s*\\(`);
  return /\binit_process_group\s*\(|\bDistributedDataParallel\b|["'](LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)["']/.test(ctx.text) || rankCall.test(ctx.text);
}

export default defineRule({
  id: 'TPU804',
  name: 'no-compilation-cache',
  title: 'No persistent compilation cache',
  severity: 'info',
  step: 10,
  effort: 1,
  message: 'No persistent XLA compilation cache: every run recompiles all graphs',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Initialize the persistent compilation cache' },
  triggers: ['torch_xla', 'import accel', 'from accel'],
  docs: {
    what: 'Checks for XLA training scripts (and notebooks) that never call `xr.initialize_cache(...)`. Reported once per file, on the import of torch.',
    why:
      'XLA compiles every distinct graph before running it; large models spend minutes there on each start. `xr.initialize_cache(path, readonly=False)` ' +
      'stores compiled programs on disk so later runs (restarts, preemptions, sweeps) load them instead (DEV:425-437). It "must be called before any ' +
      'computations have been performed" (XR initialize_cache docstring). The cache is invalidated when the torch_xla version changes (DEV).',
    example: 'import torch\nimport torch_xla\n\ndevice = torch_xla.device()\n...',
    useInstead:
      'import torch\nimport torch_xla\nimport torch_xla.runtime as xr\nxr.initialize_cache("/tmp/xla_cache", readonly=False)\n\n' +
      '# multi-process: a distinct path per process, inside the launched function (DEV:439-455)\n' +
      'def _mp_fn(index):\n    xr.initialize_cache(f"/tmp/xla_cache_{index}", readonly=False)',
    fixSafety:
      'Safe: inserted right after the import block that holds `import torch` (before any computation; in a notebook, in the cell that imports torch), or as the first statement of the function passed to `torch_xla.launch` / `xmp.spawn` ' +
      'with a per-process path (`/tmp/xla_cache_{index}`). A script that torchrun starts once per rank (a process group, `RANK`/`LOCAL_RANK` reads) gets a path per rank ' +
      '(`xr.global_ordinal()`, as DEV:458 says when the index is not at hand). `initialize_cache` asserts that no graph has been compiled yet (XR:258 at 2.9, XR:290 at 2.3), ' +
      'so re-running a notebook cell that holds it would raise: the notebook form runs only while `XLA_PERSISTENT_CACHE_PATH` (which it sets, XR:263) is unset. ' +
      'Pick a persistent path (a local SSD or a mounted bucket) instead of `/tmp` for reuse across machines; in SPMD share one cache with `readonly=True` on readers.',
    sources: [
      'DEV (docs/source/learn/pytorch-on-xla-devices.md:425-458 at v2.9.0: "use different paths for different processes", "you can use xr.global_ordinal()")',
      'XR (torch_xla/runtime.py initialize_cache: v2.9.0:250-264, v2.3.0:282-296: `assert not torch_xla._XLAC._xla_computation_cache_is_initialized()`, then sets XLA_PERSISTENT_CACHE_PATH)',
      'torch_xla/csrc/xla_graph_executor.cpp:579-588 at v2.9.0 (the computation cache is created by the first compile)',
    ],
    torchtpu:
      'No persistent cache API is documented for training with the preview: the finding is advice only. vllm-torchtpu documents `TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT` for its native ' +
      'backend (https://raw.githubusercontent.com/vllm-project/vllm-torchtpu/9c8d9b0534b19627978777b915162d3bcb32f4cb/docs/user_guide/compilation_cache.md); whether torch_tpu training honours it is unverified.',
  },
  check(ctx) {
    if (!xlaContext(ctx)) return;
    const sema = ctx.sema;
    const calls = sema.nodes('call');
    if (calls.some((c) => /(^|\.)initialize_cache$/.test(c.childForFieldName('function')?.text ?? ''))) return;
    const launches = launchCalls(ctx);
    // the launch target: a same-file function (a launcher that spawns `mod._mp_fn` from another file, like
    // transformers' xla_spawn.py, cannot initialize the per-process cache: the training script can)
    const trainLoops = sema.hotLoops().filter((h) => {
      const body = h.anchor.childForFieldName('body');
      return h.kind === 'train' && !!body && sema.containsTrainSignal(body);
    });
    const targets = launches
      .map((l) => l.childForFieldName('arguments')?.namedChildren[0])
      .map((arg) => (arg?.type === 'identifier' ? sema.nodes('function_definition').find((f) => f.childForFieldName('name')?.text === arg.text && f.parent?.type !== 'block') : undefined))
      .filter((f): f is Node => !!f);
    // a notebook that first spawns a demo function, then the training one: the cache belongs in the function
    // that trains (each spawn forks fresh processes; a cache set up in the demo's processes is gone)
    const target = targets.find((f) => trainLoops.some((h) => h.anchor.startIndex >= f.startIndex && h.anchor.endIndex <= f.endIndex)) ?? targets[0];
    const training = !!target || trainLoops.length > 0;
    if (!training) return;
    const top = sema.root.namedChildren.filter((n): n is Node => !!n && n.type !== 'comment');
    const anchor = [...sema.nodes('import_statement'), ...sema.nodes('import_from_statement')]
      .filter(importsTorch)
      .sort((a, b) => a.startIndex - b.startIndex)[0];
    if (!anchor) return;

    let fix: FixDraft | null = null;
    // the launch target: a per-process cache as its first statement
    if (target) {
      const params = target.childForFieldName('parameters')?.namedChildren.filter((p): p is Node => !!p) ?? [];
      const first = params[0];
      const index = first?.type === 'identifier' ? first.text : first?.childForFieldName('name')?.text ?? (first?.namedChildren[0]?.type === 'identifier' ? first.namedChildren[0].text : null);
      // a distinct path per process (DEV:446-458: "use different paths for different processes"; without the
      // index, `xr.global_ordinal()`)
      const snippet = cacheSnippet(ctx, perProcessPath(ctx, index));
      const body = target.childForFieldName('body');
      const stmts = body?.namedChildren.filter((n): n is Node => !!n && n.type !== 'comment') ?? [];
      const firstStmt = stmts.find((s) => !isDocstring(s));
      if (snippet && firstStmt) {
        fix = {
          title: `Initialize a per-process compilation cache in \`${target.childForFieldName('name')?.text}\``,
          edits: [insertLineBefore(ctx.text, firstStmt, snippet.text)],
          imports: snippet.imports,
          needsAccel: snippet.needsAccel,
        };
      }
    } else {
      // a torchrun / DDP script runs this module once per rank: a path per process (DEV:446-458). A notebook
      // cell is re-run: initialize_cache asserts that no graph was compiled yet (XR:258 at v2.9, :290 at v2.3),
      // so the notebook form skips when a cache is already configured (initialize_cache sets
      // XLA_PERSISTENT_CACHE_PATH, XR:263).
      const call = cacheSnippet(ctx, multiProcessScript(ctx) ? perProcessPath(ctx, null) : { path: '"/tmp/xla_cache"', imports: [] });
      const snippet = call && ctx.notebook
        ? { ...call, text: `if not os.environ.get("XLA_PERSISTENT_CACHE_PATH"):  # initialize_cache runs once, before the first compile${detectEol(ctx.text)}    ${call.text}`, imports: [{ module: 'os' }, ...call.imports] }
        : call;
      // the import block, with the short try/if import blocks the engine's import placement also passes
      // (`try: import torch_xla … except ImportError: …`), so the call follows every import it may need
      let last: Node | null = null;
      for (const n of top) {
        if (isImport(n) || (last && isImportBlock(n))) last = n;
        else if (!isDocstring(n) || last) break;
      }
      // torch imported after the leading block (a notebook's `from datasets import …` cell before the torch cell),
      // or inside a top-level try/if: after the import run that holds it, so the cache call follows `import torch`
      let anchorTop: Node = anchor;
      while (anchorTop.parent && anchorTop.parent.type !== 'module') anchorTop = anchorTop.parent;
      const at = top.findIndex((n) => n.id === anchorTop.id);
      if (last && at >= 0 && anchorTop.startIndex > last.endIndex) {
        last = anchorTop;
        for (let i = at + 1; i < top.length && (isImport(top[i]) || isImportBlock(top[i])); i++) last = top[i];
      }
      if (snippet && last) {
        fix = { edits: [insertLineAfter(ctx.text, last, snippet.text, '')], imports: snippet.imports, needsAccel: snippet.needsAccel };
      }
    }
    ctx.report(anchor, {
      message: ctx.idiom.profile === 'torchtpu'
        ? 'No persistent compilation cache: every run recompiles all graphs (the preview has no documented cache API)'
        : 'No persistent XLA compilation cache (`xr.initialize_cache`): every run recompiles all graphs',
      fix,
    });
  },
});
