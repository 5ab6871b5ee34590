import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import { kwValue } from '../../core/semantics';
import { argShape, importInfos, isGuardedImport, isOptionalImport, literal, projectCudaImports } from './util';
import { cudaGuarded } from '../device/cuda-util';

/** CUDA-only packages whose optional import is checked for a fallback that raises (owned by TPU701/TPU702/TPU704 otherwise). */
const OPTIONAL_CUDA = /^(flash_attn|xformers|apex|mamba_ssm|causal_conv1d)(\.|$)/;
const KERNEL_LIBS = /^(triton|cupy|pycuda|numba\.cuda|cuda\.(cuda|cudart|bindings)|warp)(\.|$)/;
const EXT = 'torch.utils.cpp_extension.';
/** A project module named for Triton below its package (`palm_pytorch.triton`, `model.triton_ops`, `pkg.ops.fused_triton`): not the `triton` library itself. */
const TRITON_MODULE = /^\w[\w.]*\.(\w+_)?triton(_\w+)?(\.|$)/;
/** Compiled CUDA extension modules that ship with flash-attn, apex and Mamba (each is a CUDA-only `.so`). */
const KNOWN_CUDA_EXT = new Map<string, string>([
  ...['xentropy_cuda_lib', 'rotary_emb', 'fused_dense_lib', 'dropout_layer_norm', 'fused_softmax_lib', 'flash_attn_cuda', 'flash_attn_2_cuda'].map((m) => [m, 'flash-attn'] as const),
  ...['amp_C', 'fused_layer_norm_cuda', 'fused_adam_cuda', 'syncbn'].map((m) => [m, 'apex'] as const),
  ...['selective_scan_cuda', 'causal_conv1d_cuda'].map((m) => [m, 'Mamba'] as const),
]);
/** A module-name segment that names a CUDA build: `*_cuda`, `*_cuda_lib`, `*_cuda_ext`, `*_cuda_kernels`. */
const COMPILED_CUDA_EXT = /^(?:\w+_cuda(?:_lib|_ext|_kernels?)?|xentropy_cuda_lib|rotary_emb|fused_dense_lib|dropout_layer_norm|fused_softmax_lib|amp_C|syncbn)$/;
/** Libraries other rules report (TPU702 apex, TPU703 bitsandbytes, TPU704 flash-attn/xFormers, TPU705 DeepSpeed) and torch itself. */
const OWNED = /^(torch|apex|bitsandbytes|flash_attn|xformers|deepspeed|triton)(\.|$)/;

function compiledCudaExtension(mod: string): boolean {
  if (OWNED.test(mod)) return false;
  const segs = mod.split('.');
  // `syncbn` and `amp_C` are apex's only as top-level modules; a project's `models.syncbn` is not
  return segs.some((seg, i) => COMPILED_CUDA_EXT.test(seg) && (i === 0 || !/^(syncbn|amp_C|rotary_emb)$/.test(seg)));
}

export default defineRule({
  id: 'TPU701',
  name: 'custom-cuda-kernel',
  title: 'Custom CUDA or Triton kernels and C++/CUDA extensions',
  severity: 'error',
  step: 2,
  effort: 7,
  message: 'custom CUDA/Triton kernel: TPUs run neither',
  fix: { availability: 'none' },
  // 'import': a project module imported here may import a CUDA-only library
  triggers: ['import', 'dali', 'triton', 'cpp_extension', 'cupy', 'pycuda', 'numba', 'CUDAExtension', 'torch.library', 'cuda', 'rotary_emb', 'amp_C', 'syncbn', 'fused_dense_lib', 'dropout_layer_norm', 'fused_softmax_lib'],
  docs: {
    what:
      'Checks for custom GPU kernels: `import triton` / `triton.language`, `@triton.jit` kernels, `torch.library.triton_op`/`wrap_triton`, custom ops registered only for the CUDA dispatch key ' +
      '(`torch.library.impl(..., "CUDA")`, `register_kernel(..., "cuda")`), `torch.utils.cpp_extension` builds (`CUDAExtension`, `load(sources=[*.cu])`, `load_inline(cuda_sources=...)`, also in setup.py), and `cupy`, `pycuda`, `numba.cuda`; ' +
      'imports of compiled CUDA extensions by their module name: flash-attn\'s `xentropy_cuda_lib`, `rotary_emb`, `fused_dense_lib`, `dropout_layer_norm`, apex\'s `amp_C`, `fused_layer_norm_cuda`, Mamba\'s `selective_scan_cuda`, and any module named `*_cuda`, `*_cuda_lib`, `*_cuda_ext` (by name only: the message says "appears to be"; optional imports under `try/except ImportError` and imports under a CUDA guard are not flagged). ' +
      'An optional import of a CUDA-only package (flash-attn, xFormers, Apex, Triton, Mamba) is a warning when its `except ImportError` sets a name to None and an `if name is None` / `is not None` elsewhere raises: on a TPU host that option always raises. ' +
      'CPU-only C++ extensions (`CppExtension`, `load` of .cpp sources, `load_inline` without CUDA sources) are reported as warnings. ' +
      'With project scope, an import of a project module whose module level imports a CUDA-only library unconditionally (flash-attn, a compiled CUDA extension, Triton, apex, bitsandbytes) is reported at the import, with the inner import as a related location.',
    why:
      'A TPU runs neither CUDA nor Triton code, and torch_xla\'s (GPU-only) Triton integration was removed in 2.9 (commit d4cf42a). ' +
      'CPU-only C++ extensions run, but each call moves tensors from the TPU to the host and back (a graph break and a device↔host copy per call).',
    example: 'import triton\nimport triton.language as tl\n\n@triton.jit\ndef add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n    ...',
    useInstead:
      '# Rewrite with PyTorch ops that lower to XLA, e.g. out = x + y\n' +
      '# or write a Pallas kernel (needs torch_xla[pallas]):\n' +
      'from torch_xla.experimental.custom_kernel import make_kernel_from_pallas, jax_import_guard',
    // an import under a guard naming its library (`if is_flash_attn_available():`), here or in an imported project module, is not reported
    fixSafety: 'No automatic fix: a kernel has to be rewritten as XLA-lowerable PyTorch ops or as a Pallas kernel (PALLAS:14-60, the `torch_xla[pallas]` extra: PALLAS:112).',
    sources: [
      'commit d4cf42a (Triton integration removed from torch_xla in 2.9)',
      'Dao-AILab/flash-attention csrc/rotary/setup.py (`CUDAExtension(\'rotary_emb\', [\'rotary.cpp\', \'rotary_cuda.cu\'])`, @614f3ba), csrc/xentropy/setup.py (xentropy_cuda_lib), csrc/fused_dense_lib, csrc/layer_norm (dropout_layer_norm): CUDA (or ROCm) builds only',
      'PALLAS:14-60, 112 (docs/source/features/pallas.md: make_kernel_from_pallas, jax_import_guard, torch_xla[pallas])',
    ],
    torchtpu: 'The same: torch_tpu has no CUDA or Triton path; a TPU kernel language for torch_tpu is not documented yet.',
  },
  check(ctx) {
    const optionalSeen = new Set<number>();
    for (const info of importInfos(ctx)) {
      const opt = info.modules.find((m) => KERNEL_LIBS.test(m) || OPTIONAL_CUDA.test(m));
      if (opt && isOptionalImport(info.stmt) && !ctx.sema.inXlaAwareBranch(info.stmt)) {
        // `try: from flash_attn.ops.triton.cross_entropy import ... ; def fused_loss_fn(...)` / `except ImportError:
        // fused_loss_fn = None`, and the option that needs it raises when it is None (OLMo): on a TPU host the fallback
        // is always taken, so that option always raises
        const req = requiredOptional(ctx, info.stmt);
        if (req && !optionalSeen.has(req.tryStmt.id)) {
          optionalSeen.add(req.tryStmt.id);
          const lib = opt.split('.')[0];
          ctx.report(info.stmt, {
            severity: 'warning',
            message: `\`${lib}\` is an optional import here, but it is built only for CUDA: on a TPU host \`${req.name}\` is always None, and the option that needs it raises; keep that option off on TPU or give it a PyTorch fallback`,
            related: [{ start: req.raise.startIndex, end: req.raise.endIndex, message: `raised when \`${req.name}\` is None` }],
          });
        }
        continue;
      }
      const mod = info.modules.find((m) => KERNEL_LIBS.test(m));
      if (!mod || isOptionalImport(info.stmt) || isGuardedImport(info) || ctx.sema.inXlaAwareBranch(info.stmt)) continue;
      const lib = mod.startsWith('triton') ? 'Triton' : mod.split('.').slice(0, 2).join('.');
      ctx.report(info.stmt, { message: `\`${lib}\` is imported: ${lib === 'Triton' ? 'Triton kernels' : 'this CUDA library'} cannot run on a TPU` });
    }
    // a project's Triton implementation (`from palm_pytorch.triton import PaLM`, `from pkg.kernels.fused_triton import ...`):
    // a module named for Triton holds `@triton.jit` kernels, which have no TPU lowering (Triton support left torch_xla in 2.9)
    const projectSeen = new Set(projectCudaImports(ctx).map((p) => p.stmt.id));
    for (const info of importInfos(ctx)) {
      if (info.modules.some((m) => KERNEL_LIBS.test(m) || OWNED.test(m)) || projectSeen.has(info.stmt.id)) continue;
      const mod = info.modules.find((m) => TRITON_MODULE.test(m));
      if (!mod || isOptionalImport(info.stmt) || ctx.sema.inXlaAwareBranch(info.stmt) || cudaGuarded(info.stmt)) continue;
      ctx.report(info.stmt, {
        message: ctx.idiom.profile === 'torchtpu'
          ? `\`${mod}\` is named for Triton: it holds the project's Triton kernels, which cannot run on a TPU (torch_tpu has no Triton path); use the project's plain PyTorch implementation, or rewrite the kernels in PyTorch`
          : `\`${mod}\` is named for Triton: it holds the project's Triton kernels, which cannot run on a TPU (torch_xla has no Triton lowering); use the project's plain PyTorch implementation, or rewrite the kernels in PyTorch or as Pallas kernels`,
      });
    }
    // compiled CUDA extensions imported by their own module name (flash-attn's `xentropy_cuda_lib`, `rotary_emb`)
    for (const info of importInfos(ctx)) {
      const mod = info.modules.find((m) => compiledCudaExtension(m));
      if (!mod || info.modules.some((m) => KERNEL_LIBS.test(m)) || isOptionalImport(info.stmt) || ctx.sema.inXlaAwareBranch(info.stmt) || cudaGuarded(info.stmt)) continue;
      const name = mod.split('.').find((seg) => COMPILED_CUDA_EXT.test(seg)) ?? mod;
      const lib = KNOWN_CUDA_EXT.get(name);
      const rewrite = ctx.idiom.profile === 'torchtpu' ? 'rewrite its ops in PyTorch' : 'rewrite its ops in PyTorch or as a Pallas kernel';
      ctx.report(info.stmt, { message: `\`${name}\` appears to be a compiled CUDA extension (${lib ? `${lib} builds it from CUDA sources` : 'by its name'}): it cannot run on a TPU; ${rewrite}` });
    }
    // a project module whose module level imports a CUDA-only library: importing it here runs that import
    // (FastChat's flash-attn monkey patch, TinyLlama's fused_rotary_embedding / fused_cross_entropy)
    for (const p of projectCudaImports(ctx)) {
      const file = p.path.split('/').pop() ?? p.path;
      const text = ctx.project?.textOf(p.path) ?? '';
      const line = text.slice(0, p.inner.startIndex).split('\n').length;
      const lib = KNOWN_CUDA_EXT.has(p.lib) ? `\`${p.lib}\` (${KNOWN_CUDA_EXT.get(p.lib)}'s compiled CUDA extension)` : p.lib === 'flash_attn' ? '`flash_attn` (flash-attn, built only for CUDA)' : `\`${p.lib}\``;
      const fails = KNOWN_CUDA_EXT.has(p.lib) || p.lib === 'flash_attn' || compiledCudaExtension(p.lib);
      ctx.report(p.stmt, {
        message: `This imports \`${file}\`, which imports ${lib} at module level (${file}:${line}): ${fails ? 'without a CUDA build the import fails on a TPU host, and its kernels cannot run there' : 'its CUDA kernels cannot run on a TPU'}; make that import optional or replace its ops with PyTorch ones`,
        related: [{ start: p.inner.startIndex, end: p.inner.endIndex, path: p.path, message: `the CUDA-only import in ${file}` }],
      });
    }
    // `parser.add_argument("--data-backend", default="dali-cpu", choices=[..., "pytorch"])`: NVIDIA DALI (DeepLearningExamples)
    for (const call of ctx.sema.nodes('call')) {
      if (!/(^|\.)add_argument$/.test(call.childForFieldName('function')?.text ?? '')) continue;
      const { keywords } = argShape(call);
      const def = literal(kwValue(keywords.get('default')));
      if (!def || !/^dali(-(cpu|gpu))?$/i.test(def)) continue;
      const choices = kwValue(keywords.get('choices'));
      const pytorch = !!choices && /["']pytorch["']/.test(choices.text) ? ' (choose `pytorch`)' : '';
      ctx.report(kwValue(keywords.get('default'))!, {
        message: `The default data backend \`${def}\` runs NVIDIA DALI pipelines: DALI is built for CUDA GPUs (its wheels are CUDA builds), so on a TPU host use a PyTorch DataLoader backend${pytorch}`,
      });
    }
    for (const dec of ctx.sema.nodes('decorated_definition')) {
      for (const d of dec.namedChildren) {
        if (d?.type !== 'decorator') continue;
        const expr = d.namedChildren[0];
        const target = expr?.type === 'call' ? expr.childForFieldName('function') : expr;
        const name = ctx.sema.resolve(target) ?? '';
        if (name === 'triton.jit' || name === 'numba.cuda.jit' || name === 'torch.library.triton_op') {
          ctx.report(d, { message: `\`@${name}\` defines a GPU kernel that cannot run on a TPU` });
        } else if (name === 'torch.library.impl' || name === 'torch.library.register_kernel') {
          if (expr?.type === 'call' && cudaOnlyOp(ctx, expr)) ctx.report(d, { message: 'this custom op is registered only for CUDA: a TPU has no kernel for it' });
        }
      }
    }
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      if (callee === 'torch.library.wrap_triton' || callee === 'torch.library.triton_op') {
        if (call.parent?.type === 'decorator') continue;
        ctx.report(call, { message: `\`${callee}\` runs a Triton kernel, which cannot run on a TPU` });
      } else if ((callee === 'torch.library.impl' || callee === 'torch.library.register_kernel') && call.parent?.type !== 'decorator') {
        if (cudaOnlyOp(ctx, call)) ctx.report(call, { message: 'this custom op is registered only for CUDA: a TPU has no kernel for it' });
      } else if (callee.startsWith(EXT)) {
        const fn = callee.slice(EXT.length);
        const { positional, keywords } = argShape(call);
        if (fn === 'CUDAExtension') ctx.report(call, { message: '`CUDAExtension` builds CUDA code that cannot run on a TPU' });
        else if (fn === 'CppExtension') ctx.report(call, { severity: 'warning', message: '`CppExtension` runs on the host: every call copies tensors from the TPU and back' });
        else if (fn === 'load') {
          const sources = positional[1] ?? kwValue(keywords.get('sources'));
          const cuda = !!sources && /\.cuh?\b/.test(sources.text);
          ctx.report(call, cuda
            ? { message: '`cpp_extension.load` compiles CUDA sources that cannot run on a TPU' }
            : { severity: 'warning', message: '`cpp_extension.load` builds a host extension: every call copies tensors from the TPU and back' });
        } else if (fn === 'load_inline') {
          const cuda = kwValue(keywords.get('cuda_sources')) ?? positional[2];
          ctx.report(call, cuda && cuda.type !== 'none'
            ? { message: '`load_inline(cuda_sources=...)` compiles CUDA code that cannot run on a TPU' }
            : { severity: 'warning', message: '`load_inline` builds a host extension: every call copies tensors from the TPU and back' });
        }
      }
    }
  },
});

/**
 * For an optional import inside `try:`: a name the `try` body binds (a `def` or an import) that the `except ImportError`
 * handler sets to None, and a `raise` in an `if` on `name is None` / `name is not None` elsewhere in the file.
 */
function requiredOptional(ctx: Parameters<NonNullable<ReturnType<typeof defineRule>['check']>>[0], stmt: Node): { tryStmt: Node; name: string; raise: Node } | null {
  let tryStmt: Node | null = null;
  for (let p = stmt.parent; p; p = p.parent) {
    if (p.type === 'try_statement') {
      tryStmt = p;
      break;
    }
    if (p.type === 'function_definition' || p.type === 'class_definition') return null;
  }
  if (!tryStmt) return null;
  const handler = tryStmt.namedChildren.find((c): c is Node => !!c && c.type === 'except_clause' && /ImportError|ModuleNotFoundError/.test(c.text.split('\n')[0]));
  const body = handler?.namedChildren.find((c) => c?.type === 'block');
  if (!handler || !body) return null;
  const noned = new Set<string>();
  for (const s of body.namedChildren) {
    const a = s?.type === 'expression_statement' ? s.namedChildren[0] : null;
    if (a?.type === 'assignment' && a.childForFieldName('left')?.type === 'identifier' && a.childForFieldName('right')?.type === 'none') noned.add(a.childForFieldName('left')!.text);
  }
  for (const name of noned) {
    for (const id of ctx.sema.identifiersNamed(name)) {
      if (id.startIndex >= tryStmt.startIndex && id.endIndex <= tryStmt.endIndex) continue;
      const cmp = id.parent;
      if (cmp?.type !== 'comparison_operator' || !/^\S+\s+is\s+(not\s+)?None$/.test(cmp.text.trim())) continue;
      const owner = cmp.parent;
      if (owner?.type !== 'if_statement' || owner.childForFieldName('condition')?.id !== cmp.id) continue;
      const raise = firstRaise(owner);
      if (raise) return { tryStmt, name, raise };
    }
  }
  return null;
}

/** The first `raise` statement under `node` (raise statements are not indexed). */
function firstRaise(node: Node): Node | null {
  for (const c of node.namedChildren) {
    if (!c || c.type === 'function_definition' || c.type === 'class_definition') continue;
    if (c.type === 'raise_statement') return c;
    const r = firstRaise(c);
    if (r) return r;
  }
  return null;
}

/** `torch.library.impl("lib::op", "CUDA")` with no registration of the same op for another dispatch key in the file. */
function cudaOnlyOp(ctx: Parameters<NonNullable<ReturnType<typeof defineRule>['check']>>[0], call: Node): boolean {
  const { positional, keywords } = argShape(call);
  const op = positional[0]?.text;
  const key = literal(positional[1] ?? kwValue(keywords.get('types')) ?? kwValue(keywords.get('device_types')) ?? kwValue(keywords.get('dispatch_key')));
  if (!op || !key || !/^cuda$/i.test(key)) return false;
  return !ctx.sema.nodes('call').some((c) => {
    const callee = ctx.sema.callee(c) ?? '';
    if (c.id === call.id || (callee !== 'torch.library.impl' && callee !== 'torch.library.register_kernel' && !/\.(impl|register_fake|register_kernel)$/.test(callee))) return false;
    const a = argShape(c).positional;
    const k = literal(a[1]);
    return a[0]?.text === op && (/register_fake$/.test(callee) ? false : !!k && !/^cuda$/i.test(k));
  });
}
