import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import { indentAt } from '../../core/edits';
import { detectEol } from '../../core/source';
import { importInfos, isOptionalImport } from './util';

const JAX_MODULE = /^(jax|jaxlib|flax|optax|orbax|chex)(\.|$)/;
const GUARD = /(^|\.)(jax_import_guard|_init_computation_client|maybe_get_jax)$/;
const LAUNCH = new Set(['torch_xla.launch', 'torch_xla.distributed.xla_multiprocessing.spawn']);
const GUARD_MODULE = 'torch_xla.experimental.custom_kernel';

export default defineRule({
  id: 'TPU707',
  name: 'jax-before-torch-xla',
  title: 'JAX imported before torch_xla touches the TPU',
  severity: 'error',
  step: 1,
  effort: 1,
  message: 'JAX is imported without `jax_import_guard()` first: JAX can lock the TPU and torch_xla then hangs',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Call `jax_import_guard()` before importing JAX' },
  triggers: ['jax', 'flax', 'optax', 'orbax', 'chex'],
  profiles: ['torch_xla'],
  docs: {
    what:
      'Checks for `import jax`, `from jax …` and libraries built on JAX (`flax`, `optax`, `orbax`, `chex`, `jaxlib`) in a file or notebook that uses torch_xla, ' +
      'with no `jax_import_guard()` call before the import (at module level, or earlier in the same function).',
    why:
      'The Pallas guide says to run `jax_import_guard()` before importing any jax modules, "otherwise, the program will hang on TPU as jax will lock the TPU and torch-xla cannot access it" (PALLAS:34-36). ' +
      '`jax_import_guard()` initializes the torch_xla computation client (`torch_xla._XLAC._init_computation_client()`) so torch_xla owns the TPU first.',
    example: 'import torch\nimport torch_xla\nimport jax\nimport jax.numpy as jnp',
    useInstead:
      'import torch\nimport torch_xla\nfrom torch_xla.experimental.custom_kernel import jax_import_guard\njax_import_guard()\nimport jax\nimport jax.numpy as jnp',
    fixSafety:
      'Safe: the guard only initializes the torch_xla runtime earlier than the first XLA operation would. ' +
      'Unsafe when the file launches processes (`torch_xla.launch`/`xmp.spawn`) and JAX is imported at module level: the guard then initializes the runtime in the parent before the spawn (see TPU901). ' +
      'Move the JAX import into the launched function after `jax_import_guard()`, as torch_xla itself does ("Import JAX within the function such that we don\'t need to call the jax_import_guard() in the global scope which could cause problems for xmp.spawn", custom_kernel.py).',
    sources: [
      'PALLAS:14-60 (docs/source/features/pallas.md; jax_import_guard before importing jax)',
      'torch_xla/experimental/custom_kernel.py: def jax_import_guard() calls torch_xla._XLAC._init_computation_client(); newer releases re-export it from torch_xla/_internal/jax_workarounds.py ("Re-expose this API used that is referenced by docs")',
    ],
    torchtpu: 'Not run under the torchtpu profile: the hang is torch_xla\'s (`jax_import_guard`); whether JAX and torch_tpu share the TPU in one process is not public.',
  },
  check(ctx) {
    if (!ctx.sema.imports('torch_xla')) return;
    const guards = ctx.sema.nodes('call').filter((c) => GUARD.test(ctx.sema.callee(c) ?? c.childForFieldName('function')?.text ?? ''));
    const launches = ctx.sema.nodes('call').some((c) => LAUNCH.has(ctx.sema.callee(c) ?? ''));
    const guardBinding = importInfos(ctx).find((i) => i.modules.some((m) => /(^|\.)jax_import_guard$/.test(m)) && i.bound.includes('jax_import_guard'));
    const scopesDone = new Set<number>();
    const moduleLevelJax = importInfos(ctx).some((i) => i.modules.some((m) => JAX_MODULE.test(m)) && ctx.sema.enclosingFunction(i.stmt) === null && !isTypeCheckingOnly(i.stmt));
    for (const info of importInfos(ctx)) {
      if (!info.modules.some((m) => JAX_MODULE.test(m))) continue;
      const scope = ctx.sema.enclosingFunction(info.stmt);
      const scopeId = scope?.id ?? -1;
      if (scopesDone.has(scopeId)) continue;
      // a module-level guard runs before any function is called; inside a function it must come first
      const guarded = guards.some((g) => {
        const gs = ctx.sema.enclosingFunction(g);
        if (gs === null) return scope !== null || g.startIndex < info.stmt.startIndex;
        return gs.id === scope?.id && g.startIndex < info.stmt.startIndex;
      });
      // a module-level JAX import already ran when the function is called: that one is reported
      if (scope !== null && moduleLevelJax) continue;
      if (guarded || isTypeCheckingOnly(info.stmt)) continue;
      scopesDone.add(scopeId);
      const head = info.modules[0].split('.')[0];
      const snippet = ctx.idiom.xlaAlways('jax_import_guard()');
      const eol = detectEol(ctx.text);
      const indent = indentAt(ctx.text, info.stmt.startIndex);
      const needImport = !(guardBinding && guardBinding.stmt.startIndex < info.stmt.startIndex);
      const text = (needImport ? `from ${GUARD_MODULE} import jax_import_guard${eol}${indent}` : '') + `${snippet?.text}${eol}${indent}`;
      const moduleLevelInLaunchedFile = launches && scope === null;
      ctx.report(info.stmt, {
        message: `\`${head}\` is imported without \`jax_import_guard()\` first: JAX can lock the TPU and torch_xla then hangs`,
        fix: snippet
          ? {
              title: 'Call `jax_import_guard()` before importing JAX',
              applicability: moduleLevelInLaunchedFile || isOptionalImport(info.stmt) ? 'unsafe' : 'safe',
              edits: [{ start: info.stmt.startIndex, end: info.stmt.startIndex, text }],
            }
          : null,
      });
    }
  },
});

function isTypeCheckingOnly(stmt: Node): boolean {
  for (let p = stmt.parent; p; p = p.parent) {
    if (p.type === 'if_statement' && /TYPE_CHECKING/.test(p.childForFieldName('condition')?.text ?? '')) return true;
  }
  return false;
}
