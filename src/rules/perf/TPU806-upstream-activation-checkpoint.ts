import { defineRule, type FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, kwValue } from '../../core/semantics';
import { replace } from '../../core/edits';

const UPSTREAM = 'torch.utils.checkpoint';
const XLA_MODULE = 'torch_xla.utils.checkpoint';

/** Whether torch_xla's `checkpoint(function, *args, use_reentrant=True, **kwargs)` accepts this call unchanged. */
function xlaCompatible(call: Node): { ok: boolean; reason?: string } {
  for (const [name, kw] of callArgs(call).keywords) {
    const v = kwValue(kw)?.text;
    if (name === 'use_reentrant') {
      if (v !== 'True') return { ok: false, reason: v === 'False' ? '`use_reentrant=False`' : '`use_reentrant` set from a variable' };
    } else if (name !== 'preserve_rng_state') return { ok: false, reason: `\`${name}=\`` };
  }
  if (call.childForFieldName('arguments')?.namedChildren.some((a) => a?.type === 'dictionary_splat')) return { ok: false, reason: '`**kwargs`' };
  return { ok: true };
}

export default defineRule({
  id: 'TPU806',
  name: 'upstream-activation-checkpoint',
  title: 'Activation checkpointing with the upstream utility',
  severity: 'warning',
  step: 6,
  effort: 1,
  message: 'Upstream `torch.utils.checkpoint` has no XLA optimization barrier: the compiler can undo the rematerialization',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Use `torch_xla.utils.checkpoint`' },
  triggers: ['checkpoint'],
  profiles: ['torch_xla'],
  docs: {
    what: 'Checks for `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)` in files that use torch_xla, through any import alias.',
    why:
      'torch_xla ships a modified copy of the utility because "PyTorch/XLA needs to add `optimization_barrier` before saving the input for the backward" ' +
      '(torch_xla/utils/checkpoint.py:1-3). `xm.optimization_barrier_` stops XLA common-subexpression elimination from merging the recomputed forward with ' +
      'the original one (XM:1528-1536); without it the memory saving can silently disappear. Which implementation HF `gradient_checkpointing_enable()` ' +
      'uses on XLA is unverified, so it is not flagged.',
    example: 'from torch.utils.checkpoint import checkpoint\n\nh = checkpoint(block, h, use_reentrant=True)',
    useInstead: 'from torch_xla.utils.checkpoint import checkpoint\n\nh = checkpoint(block, h, use_reentrant=True)',
    fixSafety:
      'Safe: torch_xla\'s `checkpoint(function, *args, use_reentrant=True, **kwargs)` takes the same arguments (checkpoint.py:219) for reentrant calls. ' +
      'No fix when the call passes `use_reentrant=False` (torch_xla raises "XLA currently does not support use_reentrant==False") or other keywords ' +
      '(`context_fn`, `determinism_check`, …), which it rejects; nor for `checkpoint_sequential`, which torch_xla does not provide. ' +
      'For FSDPv1 wrap blocks with `checkpoint_module`; for HF FSDP on XLA use `xla_fsdp_grad_ckpt`.',
    sources: [
      'torch_xla/utils/checkpoint.py:1-3, 219 (pytorch/xla@16498c3; checkpoint raises ValueError on use_reentrant=False and on unexpected kwargs)',
      'XM:1528-1536 (optimization_barrier_)',
    ],
    torchtpu: 'Not run under the torchtpu profile: the optimization barrier and its checkpoint are torch_xla\'s; whether the preview\'s compiler undoes upstream rematerialization is not public.',
  },
  check(ctx) {
    const sema = ctx.sema;
    if (!sema.imports('torch_xla')) return;
    const calls = sema.nodes('call').filter((c) => {
      const q = sema.callee(c);
      return (q === `${UPSTREAM}.checkpoint` || q === `${UPSTREAM}.checkpoint_sequential`) && !sema.inXlaAwareBranch(c);
    });
    // `from torch.utils.checkpoint import checkpoint [as x]` that only imports `checkpoint`: swap the module once
    const fromImports = sema.nodes('import_from_statement').filter((imp) => imp.childForFieldName('module_name')?.text === UPSTREAM);
    const swappable = new Map<string, Node>();
    for (const imp of fromImports) {
      const names = imp.childrenForFieldName('name').filter((n): n is Node => !!n);
      const only = names.length === 1 && (names[0].type === 'aliased_import' ? names[0].childForFieldName('name')?.text : names[0].text) === 'checkpoint';
      if (!only) continue;
      const local = names[0].type === 'aliased_import' ? names[0].childForFieldName('alias')!.text : names[0].text;
      const uses = calls.filter((c) => c.childForFieldName('function')?.type === 'identifier' && c.childForFieldName('function')!.text === local);
      if (uses.every((c) => xlaCompatible(c).ok)) swappable.set(local, imp);
    }
    const available = ctx.idiom.xlaAlways('', { module: XLA_MODULE }) !== null;
    for (const call of calls) {
      const q = sema.callee(call)!;
      const fn = call.childForFieldName('function')!;
      if (q.endsWith('checkpoint_sequential')) {
        ctx.report(call, { message: '`checkpoint_sequential` has no XLA optimization barrier; torch_xla offers `checkpoint` per segment instead' });
        continue;
      }
      const compat = xlaCompatible(call);
      let fix: FixDraft | null = null;
      if (available && compat.ok) {
        const imp = fn.type === 'identifier' ? swappable.get(fn.text) : undefined;
        if (imp) {
          fix = { title: 'Import `checkpoint` from `torch_xla.utils.checkpoint`', edits: [replace(imp.childForFieldName('module_name')!, XLA_MODULE)] };
        } else {
          fix = { title: 'Call `torch_xla.utils.checkpoint.checkpoint`', edits: [replace(fn, `${XLA_MODULE}.checkpoint`)], imports: [{ module: XLA_MODULE }] };
        }
      }
      ctx.report(call, {
        message: compat.ok
          ? `\`${fn.text}\` is the upstream checkpoint: without XLA's optimization barrier the compiler can undo the rematerialization`
          : `\`${fn.text}\` is the upstream checkpoint (no XLA optimization barrier); torch_xla's version does not accept ${compat.reason}`,
        fix,
      });
    }
  },
});
