import { defineRule } from '../../core/rule';
import { deleteStatement } from '../../core/edits';
import { cudaGuarded, short, statementOf } from './cuda-util';

type Kind = 'zero' | 'raises' | 'noop';

/** `torch.cuda.*` and `torch.cuda.memory.*` memory APIs. */
const API: Record<string, Kind> = {
  memory_allocated: 'zero',
  max_memory_allocated: 'zero',
  memory_reserved: 'zero',
  max_memory_reserved: 'zero',
  memory_cached: 'zero',
  max_memory_cached: 'zero',
  memory_stats: 'zero',
  memory_stats_as_nested_dict: 'zero',
  // formats `memory_stats()`, which is `{}` without CUDA: `stats["allocated_bytes.all.current"]` raises KeyError, and an
  // XLA device argument is rejected first (`_get_device_index`: ValueError "Expected a cuda device"); checked on torch 1.13
  memory_summary: 'raises',
  mem_get_info: 'raises',
  reset_peak_memory_stats: 'raises',
  reset_max_memory_allocated: 'raises',
  reset_accumulated_memory_stats: 'raises',
  set_per_process_memory_fraction: 'raises',
  _record_memory_history: 'raises',
  memory_snapshot: 'raises',
  // the private call behind `memory_snapshot()`: both read `torch._C._cuda_memorySnapshot()` (PT:torch/cuda/memory.py at 1.13, :409-419 and :602-604)
  _snapshot: 'raises',
  _dump_snapshot: 'raises',
  empty_cache: 'noop',
};

const CURRENT = new Set(['memory_allocated', 'memory_reserved', 'memory_cached']);
const PEAK = new Set(['max_memory_allocated', 'max_memory_reserved', 'max_memory_cached']);

export default defineRule({
  id: 'TPU105',
  name: 'cuda-memory-api',
  title: '`torch.cuda` memory APIs return 0 or raise',
  severity: 'warning',
  step: 9,
  effort: 1,
  message: 'A `torch.cuda` memory API reports nothing about TPU memory',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Read TPU memory with `xm.get_memory_info`' },
  triggers: ['cuda'],
  docs: {
    what:
      'Checks for `torch.cuda` memory APIs (also under `torch.cuda.memory`): `memory_allocated`, `max_memory_allocated`, ' +
      '`memory_reserved`, `max_memory_reserved`, `memory_stats`, `memory_summary`, `mem_get_info`, `reset_peak_memory_stats`, ' +
      '`empty_cache`, `set_per_process_memory_fraction`, `torch.cuda.memory._record_memory_history` and `torch.cuda.memory._snapshot`. Calls that only run under a ' +
      'CUDA-only guard, or in a branch that already has an XLA arm, are not flagged. A call that raises on a TPU host is an error; ' +
      'one that silently reports 0 or does nothing is a warning.',
    why:
      'On a TPU host CUDA is never initialised. The statistics functions read `memory_stats_as_nested_dict`, which returns `{}` when ' +
      'CUDA is not initialised (`if not is_initialized(): return {}`), so `memory_allocated`-style metrics silently report 0. Functions ' +
      'that resolve the current device or call `_lazy_init()` (`reset_peak_memory_stats`, `set_per_process_memory_fraction`, ' +
      '`mem_get_info`) raise; so does `memory_summary`, which indexes the empty stats (KeyError) and rejects an XLA device argument (ValueError). ' +
      'The statistics check `is_initialized()` before they look at their device argument, so `torch.cuda.memory_reserved(xla_device)` returns 0 rather than raising. `empty_cache` does nothing. TPU memory is read with `xm.get_memory_info(device)`, which returns ' +
      '`bytes_used` and `bytes_limit` (and `peak_bytes_used` in its documented example).',
    example: 'print(torch.cuda.memory_allocated() / 2**30)\ntorch.cuda.empty_cache()',
    useInstead:
      'import torch_xla\nimport torch_xla.core.xla_model as xm\n\nprint(int(xm.get_memory_info(torch_xla.device())["bytes_used"]) / 2**30)',
    fixSafety:
      'Safe: a statement `torch.cuda.empty_cache()` is deleted (it does nothing on TPU; dual-path keeps it, it still matters on CUDA). ' +
      'Unsafe (different schema): `memory_allocated`/`memory_reserved` become `int(xm.get_memory_info(torch_xla.device())["bytes_used"])` ' +
      'and the `max_*` variants read `peak_bytes_used` (0 when the backend does not report it); dual-path `memory_allocated()` becomes ' +
      '`accel.memory_info().get("bytes_used", 0)`, which is `torch.cuda.memory_allocated()` on CUDA. These rewrites are offered for ' +
      'torch_xla 2.5+ targets, the `max_*` ones for 2.6+: torch_xla 2.3 reports `kb_free`/`kb_total`, `bytes_used`/`bytes_limit` come with 2.4, ' +
      '`get_memory_info()` takes an optional device from 2.5 and `peak_bytes_used` is reported from 2.6. The other calls need a hand rewrite.',
    sources: [
      'XM: torch_xla/core/xla_model.py `get_memory_info(device=None) -> MemoryInfo` with `bytes_used`, `bytes_limit`, example `peak_bytes_used` (pytorch/xla@fa72136; catalog XM:1508-1525)',
      'PT:torch/cuda/memory.py `memory_stats_as_nested_dict`: `if not is_initialized(): return {}`',
      'PT:torch/cuda/memory.py `memory_summary`: `device = _get_device_index(device, optional=True)` then `stats[prefix + "current"]` (checked with CPU torch 1.13: KeyError \'allocated_bytes.all.current\' without an argument, ValueError "Expected a cuda device, but got: xla:0" with one; `memory_reserved("xla:0")` returns 0)',
      'torch_xla/csrc/init_python_bindings.cpp GetMemoryInfo: kb_free/kb_total at v2.3.0:721, bytes_used/bytes_limit at v2.4.0:755, peak_bytes_used from v2.6.0:831; xla_model.py get_memory_info(device=None) at v2.5.0:1516',
    ],
    torchtpu: 'No preview memory API is known: the finding names the call; remove it or read the TPU runtime\'s own metrics.',
  },
  check(ctx) {
    const sema = ctx.sema;
    const idiom = ctx.idiom;
    for (const call of sema.nodes('call')) {
      const callee = sema.callee(call) ?? '';
      const m = /^torch\.cuda\.(?:memory\.)?(\w+)$/.exec(callee);
      const kind = m ? API[m[1]] : undefined;
      if (!m || !kind) continue;
      if (sema.inXlaAwareBranch(call) || cudaGuarded(call)) continue;
      const fnName = m[1];
      // private helpers live only under `torch.cuda.memory` (`torch.cuda.memory._snapshot()`)
      const label = fnName.startsWith('_') ? `torch.cuda.memory.${fnName}()` : `torch.cuda.${fnName}()`;
      const message =
        kind === 'zero'
          ? /^memory_stats/.test(fnName)
            ? `\`${label}\` reads CUDA allocator stats: on a TPU host CUDA is never initialised, so it returns an empty dict, not TPU memory`
            : `\`${label}\` reads CUDA allocator stats: on a TPU host CUDA is never initialised, so it returns 0${call.childForFieldName('arguments')?.namedChildren.some(Boolean) ? ' whatever device it is given' : ''}, not TPU memory`
          : fnName === 'memory_summary'
            ? `\`${label}\` raises on a TPU host: the CUDA stats it formats are empty (KeyError), and an XLA device argument is rejected (ValueError)`
          : kind === 'raises'
            ? `\`${label}\` needs an initialised CUDA device and raises on a TPU host`
            : `\`${label}\` has no effect on a TPU host`;
      let fix = null;
      const stmt = statementOf(call);
      // inside an f-string, keys use the other quote (same-quote nesting needs Python 3.12)
      let outer = call.parent;
      while (outer && outer.type !== 'string' && outer.type !== 'module') outer = outer.parent;
      const q = outer?.type === 'string' && /^[a-zA-Z]*"/.test(outer.text) ? "'" : '"';
      if (kind === 'noop' && stmt && !idiom.dualPath) {
        fix = { edits: [deleteStatement(ctx.text, stmt)], applicability: 'safe' as const, title: 'Remove `torch.cuda.empty_cache()`' };
      // get_memory_info(device=None) from xla_model.py v2.5.0:1516 (bytes_used/bytes_limit from v2.4.0, kb_free/kb_total
      // at v2.3.0); peak_bytes_used from init_python_bindings.cpp v2.6.0:831 (a 2.5 read of it would always be 0)
      } else if ((CURRENT.has(fnName) && idiom.at('2.5')) || (PEAK.has(fnName) && idiom.at('2.6'))) {
        if (idiom.dualPath) {
          if (fnName === 'memory_allocated') {
            fix = {
              edits: [{ start: call.startIndex, end: call.endIndex, text: `accel.memory_info().get(${q}bytes_used${q}, 0)` }],
              imports: [{ module: ctx.options.accelModule }],
              needsAccel: true,
              applicability: 'unsafe' as const,
              title: 'Use `accel.memory_info()`',
            };
            if (ctx.options.accelModule.includes('.')) fix = null;
          }
        } else {
          const dev = idiom.xlaOnly('torch_xla.device()', { module: 'torch_xla' });
          if (dev) {
            const read = PEAK.has(fnName) ? `.get(${q}peak_bytes_used${q}, 0)` : `[${q}bytes_used${q}]`;
            const text = `int(xm.get_memory_info(${dev.text})${read})`;
            fix = {
              edits: [{ start: call.startIndex, end: call.endIndex, text }],
              imports: [...dev.imports, { module: 'torch_xla.core.xla_model', alias: 'xm' }],
              applicability: 'unsafe' as const,
              title: `Use \`${short(text, 60)}\``,
            };
          }
        }
      }
      // a call that raises stops the program on a TPU host: an error (catalog 0.3), not the silent-zero warning
      ctx.report(call, { message, fix, severity: kind === 'raises' ? 'error' : undefined });
    }
  },
});
