import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, kwValue } from '../../core/semantics';
import { deleteStatement, replaceRange } from '../../core/edits';
import { envWrites, plainString, truthyValue } from './util';

const DEBUG_VARS = new Set([
  'XLA_IR_DEBUG', 'XLA_HLO_DEBUG', 'XLA_SAVE_TENSORS_FILE', 'XLA_SAVE_TENSORS_FMT', 'XLA_SYNC_WAIT', 'XLA_USE_EAGER_DEBUG_MODE',
  'XLA_METRICS_FILE', 'PT_XLA_DEBUG_LEVEL', 'PT_XLA_DEBUG', 'XLA_DUMP_POST_OPTIMIZATIONS', 'XLA_EMIT_STEPLOG',
]);
const DEBUG_PATH = /(^|[\\/._-])(debug|dbg|profil\w*)([\\/._-]|$)/i;
/** A debug setting: one of the variables above switched on, or XLA_FLAGS asking for HLO dumps. */
function debugSetting(name: string, value: string | null): boolean {
  if (name === 'XLA_FLAGS') return value !== null && /--xla_dump_to\b/.test(value);
  if (!DEBUG_VARS.has(name) || value === null) return false;
  const v = value.trim();
  return v !== '' && !/^(0|false|no|off)$/i.test(v);
}
/** XLA_FLAGS made only of dump flags: removing the variable loses nothing else. */
function onlyDumpFlags(value: string): boolean {
  return value.trim().split(/\s+/).every((f) => /^--xla_dump/.test(f));
}

function underDebugGuard(node: Node): boolean {
  for (let p = node.parent; p; p = p.parent) {
    if ((p.type === 'if_statement' || p.type === 'conditional_expression') && /debug|verbose|profil/i.test(p.childForFieldName('condition')?.text ?? p.text.split('\n')[0])) return true;
    if (p.type === 'function_definition' && /debug|profil/i.test(p.childForFieldName('name')?.text ?? '')) return true;
  }
  return false;
}

const GPU_PROFILER_PREFIXES = ['torch.cuda.nvtx.', 'torch.cuda.profiler.', 'torch.autograd.profiler.emit_nvtx'];

/** Where TPU profiles come from in the target profile. */
function tpuProfiler(ctx: { idiom: { profile: string } }): string {
  return ctx.idiom.profile === 'torchtpu' ? 'a TorchTPU profiler API is not public' : 'use `torch_xla.debug.profiler`';
}

export default defineRule({
  id: 'TPU805',
  name: 'debug-env-and-gpu-profilers',
  title: 'Debug environment left on, and GPU-only profilers',
  severity: 'warning',
  step: 9,
  effort: 1,
  message: 'An XLA debug variable is switched on in a launch path: it slows every step',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Remove the debug variable' },
  triggers: ['XLA_', 'PT_XLA_DEBUG', 'nvtx', 'ProfilerActivity', 'cuda.profiler', 'nsys', 'ncu'],
  textKinds: ['shell', 'dotenv', 'dockerfile', 'yaml'],
  docs: {
    what:
      'Checks for XLA debug variables (`XLA_IR_DEBUG`, `XLA_HLO_DEBUG`, `XLA_SAVE_TENSORS_FILE`/`_FMT`, `XLA_SYNC_WAIT`, `XLA_USE_EAGER_DEBUG_MODE`, ' +
      '`XLA_METRICS_FILE`, `PT_XLA_DEBUG`, `PT_XLA_DEBUG_LEVEL`, `XLA_FLAGS=--xla_dump_to=…`) switched on in scripts, shell launchers, `.env` files, ' +
      'Dockerfiles and launch YAML (files and branches named debug/profile are skipped); and for GPU-only profilers: `ProfilerActivity.CUDA`, ' +
      '`torch.cuda.nvtx`, `torch.autograd.profiler.emit_nvtx`, `torch.cuda.profiler`, `nsys`/`ncu` wrappers (info).',
    why:
      '"Setting such variables will cause different degrees of performance degradation, so they should only be enabled for debugging" (TS:405-409): ' +
      'IR/HLO debug metadata, tensor dumps, synchronous waits and metrics files add host work or device waits to every step. NVTX ranges and CUDA profiler ' +
      'activities record nothing on a TPU; torch_xla has its own profiler (`torch_xla.debug.profiler`).',
    example: 'export XLA_IR_DEBUG=1\nexport XLA_HLO_DEBUG=1\npython train.py\n\nwith torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]): ...',
    useInstead:
      'python train.py            # debug variables only in a debug launcher\n\n' +
      'import torch_xla.debug.profiler as xp\nserver = xp.start_server(9012)\nwith xp.Trace("train_step"):\n    ...\n' +
      '# capture: xp.trace_detached("localhost:9012", logdir, duration_ms=N)\n# quick health check during development: PT_XLA_DEBUG_LEVEL=2, met.short_metrics_report()',
    fixSafety:
      'Removing a debug variable from a shell, `.env`, Dockerfile or YAML launch file is safe (it changes only diagnostics). In Python the removal is unsafe ' +
      '(the script may be a deliberate debug run). `XLA_FLAGS` is removed only when it holds nothing but dump flags. Profiler ports have no automatic fix.',
    sources: [
      'TS (docs/source/learn/troubleshoot.md:405-409, environment variables; "PyTorch/XLA Debugging Tool")',
      'EX:debug/train_resnet_profile.py; docs/source/learn/xla-profiling.md',
      'torch_xla/debug/profiler.py (start_server, Trace, StepTrace; pytorch/xla@02eed60)',
    ],
    torchtpu: 'The debug variables are torch_xla-specific; for the preview remove them all the same. Profiler porting: the preview profiler API is not known here.',
  },
  check(ctx) {
    const sema = ctx.sema;
    const debugFile = DEBUG_PATH.test(ctx.path);
    if (!debugFile) {
      for (const w of envWrites(ctx)) {
        const value = plainString(w.value);
        if (!debugSetting(w.name, value) && !(DEBUG_VARS.has(w.name) && w.value?.type === 'true')) continue;
        if (underDebugGuard(w.stmt)) continue;
        const removable = w.name !== 'XLA_FLAGS' || (value !== null && onlyDumpFlags(value));
        ctx.report(w.anchor, {
          message: `\`${w.name}\` is switched on: it slows every step and belongs in a debug run only`,
          fix: removable ? { applicability: 'unsafe', title: `Remove \`${w.name}\``, edits: [deleteStatement(ctx.text, w.stmt)] } : null,
        });
      }
    }
    for (const call of sema.nodes('call')) {
      const callee = sema.callee(call) ?? '';
      if (GPU_PROFILER_PREFIXES.some((p) => callee.startsWith(p))) {
        ctx.report(call, { severity: 'info', message: `\`${callee}\` is a CUDA profiler hook; it records nothing on a TPU (${tpuProfiler(ctx)})` });
        continue;
      }
      if (callee === 'torch.profiler.profile' || callee === 'torch.autograd.profiler.profile') {
        const acts = kwValue(callArgs(call).keywords.get('activities'));
        const cuda = acts ? sema.within('attribute', acts).find((a) => sema.resolve(a) === 'torch.profiler.ProfilerActivity.CUDA') : undefined;
        const useCuda = kwValue(callArgs(call).keywords.get('use_cuda'));
        const at = cuda ?? (useCuda?.text === 'True' ? useCuda : undefined);
        if (at) ctx.report(at, { severity: 'info', message: `The profiler records CUDA activity, which a TPU does not have (${tpuProfiler(ctx)})` });
      }
    }
  },
  checkText(ctx) {
    if (DEBUG_PATH.test(ctx.path)) return;
    const text = ctx.text;
    let offset = 0;
    for (const raw of text.split('\n')) {
      const lineStart = offset;
      offset += raw.length + 1;
      const line = raw.replace(/\r$/, '');
      if (/^\s*#/.test(line)) continue;
      const lineEndFull = Math.min(offset, text.length);
      // VAR=value (shell, .env, Dockerfile ENV, YAML "- VAR=value") and YAML "VAR: value"
      const re = /(^|[\s"'])([A-Z][A-Z0-9_]*)(=|:[ \t]+)("[^"]*"|'[^']*'|\S*)/g;
      for (let m = re.exec(line); m; m = re.exec(line)) {
        const name = m[2];
        if (m[3] !== '=' && ctx.fileKind !== 'yaml') continue;
        const value = m[4].replace(/^["']|["']$/g, '');
        if (value.startsWith('$') || !debugSetting(name, value)) continue;
        const startCol = m.index + m[1].length;
        const endCol = m.index + m[0].length;
        const prefix = line.slice(0, startCol);
        const suffix = line.slice(endCol);
        const removable = name !== 'XLA_FLAGS' || onlyDumpFlags(value);
        const inline = ctx.fileKind === 'shell' || ctx.fileKind === 'dockerfile';
        let edit = null;
        if (removable) {
          if (/^\s*(export\s+|ENV\s+|-\s+)?$/.test(prefix) && /^\s*(#.*)?$/.test(suffix)) {
            edit = replaceRange(lineStart, lineEndFull, '');
          } else if (inline && /^[ \t]+\S/.test(suffix) && !/^\s*#/.test(suffix)) {
            edit = replaceRange(lineStart + startCol, lineStart + endCol + /^[ \t]+/.exec(suffix)![0].length, '');
          } else if (inline && /^\s*(#.*)?$/.test(suffix) && /\S[ \t]+$/.test(prefix) && !/^\s*(export|ENV)\s+$/.test(prefix)) {
            edit = replaceRange(lineStart + startCol - /[ \t]+$/.exec(prefix)![0].length, lineStart + endCol, '');
          }
        }
        ctx.report({ start: lineStart + startCol, end: lineStart + endCol }, {
          message: `\`${name}\` is switched on in a launch file: it slows every step and belongs in a debug run only`,
          fix: edit ? { applicability: 'safe', title: `Remove \`${name}\``, edits: [edit] } : null,
        });
      }
      if (ctx.fileKind === 'shell' || ctx.fileKind === 'dockerfile') {
        const prof = /(^|[;&|]\s*|^\s*(RUN|CMD|ENTRYPOINT)\s+\[?"?)(nsys|ncu)\s/.exec(line);
        if (prof) {
          const s = lineStart + prof.index + prof[1].length;
          ctx.report({ start: s, end: s + prof[3].length }, {
            severity: 'info',
            message: `\`${prof[3]}\` profiles CUDA kernels; it records nothing on a TPU (${tpuProfiler(ctx)})`,
          });
        }
      }
    }
  },
});
