import { defineRule } from '../../core/rule';
import { callArgs, kwValue } from '../../core/semantics';
import { replaceRange } from '../../core/edits';
import { contentRange, isTrue, literal, removeArg } from './util';

const CLIP = new Set(['torch.nn.utils.clip_grad_norm_', 'torch.nn.utils.clip_grad.clip_grad_norm_']);
/** PyTorch's own foreach gradient utilities, which torch_xla does not patch. */
const FOREACH_UTILS = new Set([
  'torch.nn.utils.get_total_norm', 'torch.nn.utils.clip_grads_with_norm_', 'torch.nn.utils.clip_grad_value_',
  'torch.nn.utils.clip_grad.get_total_norm', 'torch.nn.utils.clip_grad.clip_grads_with_norm_', 'torch.nn.utils.clip_grad.clip_grad_value_',
]);

export default defineRule({
  id: 'TPU706',
  name: 'fused-optimizer',
  title: 'Fused optimizers and foreach gradient clipping',
  severity: 'error',
  step: 6,
  effort: 1,
  message: '`fused=True` asks for a CUDA fused optimizer kernel that XLA parameters do not have',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Remove `fused=True`' },
  triggers: ['fused', 'foreach'],
  docs: {
    what:
      'Checks for `torch.optim.*(..., fused=True)`, Hugging Face `optim="adamw_torch_fused"`, `clip_grad_norm_(..., foreach=True)`, PyTorch\'s `get_total_norm`/`clip_grads_with_norm_`/`clip_grad_value_(..., foreach=True)`, through import aliases, and a project\'s own `clip_grad_norm_` wrapper called with `foreach=True` (such wrappers hand the flag on to those functions; warning, no fix).',
    why:
      'PyTorch runs fused optimizer kernels only on the devices `torch.utils._foreach_utils._get_fused_kernels_supported_devices()` lists ' +
      '(mps, cuda, xpu, hpu, cpu, mtia and the privateuse1 backend); `xla` is not among them, so `fused=True` with XLA parameters is rejected (the exact error text is unverified). ' +
      "torch_xla replaces `torch.nn.utils.clip_grad_norm_` with its own version when `import torch_xla` runs (torch_xla/__init__.py calls `_apply_patches()`); that version computes the norm with plain tensor ops and raises `RuntimeError('foreach=True is not supported with XLA')` for `foreach=True` (v2.3.0:26-27 to v2.9.0:32-33). " +
      "PyTorch's own foreach norm and clip functions raise `\"foreach=True was passed, but can't use the foreach API on xla tensors\"` (torch/nn/utils/clip_grad.py): `_device_has_foreach_support` accepts only the devices `_get_foreach_kernels_supported_devices()` lists (cuda, xpu, mtia, the privateuse1 backend). " +
      'Whether Hugging Face falls back from `adamw_torch_fused` on XLA by itself is unverified. ' +
      'Note also that `from torch.nn.utils import clip_grad_norm_` executed before `import torch_xla` binds the unpatched function: import torch_xla right after torch.',
    example:
      'opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)\n' +
      'args = TrainingArguments(output_dir="out", optim="adamw_torch_fused")\n' +
      'torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)',
    useInstead:
      'opt = torch.optim.AdamW(model.parameters(), lr=3e-4)\n' +
      'args = TrainingArguments(output_dir="out", optim="adamw_torch")\n' +
      'torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)',
    fixSafety:
      'Safe: the unfused and fused implementations compute the same update, and the foreach flag only selects a kernel strategy; on CUDA the step may be slower.',
    sources: [
      'PT:torch/utils/_foreach_utils.py (_get_fused_kernels_supported_devices)',
      'PATCH: torch_xla/_patched_functions.py (clip_grad_norm_ replacement raising "foreach=True is not supported with XLA": v2.3.0:21-27, v2.9.0:27-33; _apply_patches v2.9.0:66-68)',
      'PT:torch/nn/utils/clip_grad.py (get_total_norm, clip_grads_with_norm_: "foreach=True was passed, but can\'t use the foreach API on {device.type} tensors"); PT:torch/utils/_foreach_utils.py _get_foreach_kernels_supported_devices',
      'INIT: torch_xla/__init__.py (_apply_patches() at import)',
    ],
    torchtpu: 'The same kwargs are removed; whether the torchtpu device supports fused optimizers is not documented yet.',
  },
  check(ctx) {
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      const { keywords } = callArgs(call);
      if (/^torch\.optim\.[A-Z]\w*$/.test(callee)) {
        const kw = keywords.get('fused');
        if (!kw || !isTrue(kwValue(kw)) || ctx.sema.inXlaAwareBranch(call)) continue;
        const opt = callee.split('.').pop();
        ctx.report(kw, {
          message: `\`${opt}(fused=True)\` asks for a fused CUDA kernel; XLA parameters have none`,
          fix: { title: 'Remove `fused=True`', edits: [removeArg(ctx, kw)] },
        });
      } else if (CLIP.has(callee)) {
        const kw = keywords.get('foreach');
        // the patched clip_grad_norm_ is torch_xla's; the preview's is not known to differ
        if (ctx.idiom.profile === 'torchtpu' || !kw || !isTrue(kwValue(kw)) || ctx.sema.inXlaAwareBranch(call)) continue;
        ctx.report(kw, {
          message: '`clip_grad_norm_(foreach=True)` raises on XLA: torch_xla\'s patched clip_grad_norm_ rejects it ("foreach=True is not supported with XLA")',
          fix: { title: 'Remove `foreach=True`', edits: [removeArg(ctx, kw)] },
        });
      } else if (FOREACH_UTILS.has(callee) || (!callee.startsWith('torch.') && /(^|\.)clip_grad_norm_$/.test(call.childForFieldName('function')?.text ?? ''))) {
        const kw = keywords.get('foreach');
        if (ctx.idiom.profile === 'torchtpu' || !kw || !isTrue(kwValue(kw)) || ctx.sema.inXlaAwareBranch(call)) continue;
        const own = !FOREACH_UTILS.has(callee);
        const name = own ? call.childForFieldName('function')!.text : callee.split('.').pop();
        ctx.report(kw, {
          severity: own ? 'warning' : undefined,
          message: own
            ? `\`${name}(foreach=True)\`: when this clipping helper hands \`foreach=True\` on to torch's \`clip_grad_norm_\` or its norm and clip functions, they raise for XLA tensors ("foreach=True is not supported with XLA", "can't use the foreach API on xla tensors")`
            : `\`${name}(foreach=True)\` raises for XLA tensors ("foreach=True was passed, but can't use the foreach API on xla tensors"): the foreach kernels exist for CUDA, XPU and MTIA only`,
          // the helper's own signature decides what the flag does: no fix at a call of it
          fix: own ? null : { title: 'Remove `foreach=True`', edits: [removeArg(ctx, kw)] },
        });
      } else {
        const kw = keywords.get('optim');
        const v = kwValue(kw);
        if (!kw || !v || literal(v) !== 'adamw_torch_fused') continue;
        if (!/TrainingArguments$|Config$|Args$|Arguments$/.test(callee || (call.childForFieldName('function')?.text ?? ''))) continue;
        const r = contentRange(v);
        ctx.report(kw, {
          message: '`optim="adamw_torch_fused"` selects the fused CUDA AdamW; use `"adamw_torch"` on TPU',
          fix: { title: 'Use `optim="adamw_torch"`', edits: [replaceRange(r.start, r.end, 'adamw_torch')] },
        });
      }
    }
  },
});
