import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, enclosingStatement } from '../../core/semantics';
import { deleteStatement, replace } from '../../core/edits';
import type { Severity } from '../../core/types';
import { inCompatBranch, literal } from './runtime-util';
import { cudaGuarded } from './cuda-util';

const BACKENDS_IMPORT = { module: 'torch_xla.backends' };
const CUDNN_FLAGS = new Set(['benchmark', 'deterministic', 'enabled', 'allow_tf32']);
const MATMUL_FLAGS = new Set(['allow_tf32', 'allow_fp16_reduced_precision_reduction', 'allow_bf16_reduced_precision_reduction']);
/** SDPA backends that are CUDA kernels (FLASH_ATTENTION is TPU704's, which names the Pallas replacement). */
const CUDA_SDPA = /\b(EFFICIENT_ATTENTION|CUDNN_ATTENTION)\b/;

export default defineRule({
  id: 'TPU107',
  name: 'cuda-backend-flag',
  title: 'cuDNN, TF32 and SDPA backend flags have no TPU effect',
  severity: 'info',
  step: 5,
  effort: 1,
  message: 'This cuDNN/TF32/SDPA flag has no effect on TPU',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Remove the cuDNN flag' },
  triggers: ['backends', 'set_float32_matmul_precision', 'sdpa_kernel', 'sdp_kernel', 'tf32'],
  docs: {
    what:
      'Checks for CUDA backend knobs: `torch.backends.cudnn.benchmark|deterministic|enabled|allow_tf32`, `torch.backends.cuda.matmul.allow_tf32` and the ' +
      'reduced-precision-reduction flags, `torch.set_float32_matmul_precision(...)`, the legacy `torch.backends.cuda.sdp_kernel(...)` context and ' +
      '`torch.nn.attention.sdpa_kernel(...)` pinned to `EFFICIENT_ATTENTION`/`CUDNN_ATTENTION` (pinning `FLASH_ATTENTION` is TPU704), and HF `TrainingArguments(tf32=True)` ' +
      '(an error: its `__post_init__` raises ValueError "--tf32 requires Ampere or a newer GPU arch" without CUDA). ' +
      'Severity is info, warning where the code relies on the flag for numerics (`deterministic=True`, TF32 off, `"highest"` precision).',
    why:
      'These configure cuDNN and CUDA matmul kernels. On TPU the f32 matmul and convolution precision is set with ' +
      '`torch_xla.backends.set_mat_mul_precision("default"|"high"|"highest")` (torch_xla ≥ 2.8): `default` is one bf16 pass (fastest), `high` three passes (~14 bits), ' +
      '`highest` six passes (~22 bits). Code that turns TF32 off or asks for `"highest"` to get full-f32 results gets the fast bf16 pass on TPU unless it sets the XLA precision too. ' +
      'The module warns against setting the precision more than once.',
    example: 'torch.backends.cudnn.benchmark = True\ntorch.backends.cuda.matmul.allow_tf32 = True\ntorch.set_float32_matmul_precision("highest")',
    useInstead: 'import torch_xla.backends\n\ntorch_xla.backends.set_mat_mul_precision("highest")',
    fixSafety:
      'Removing a `cudnn.*` flag is safe in the torch_xla tpu-only style (it is inert on TPU). Mapping TF32 to an XLA precision is unsafe (suggested: `"medium"` (bf16) and TF32 on → `"default"` (one bf16 pass), `"high"` (TF32 or bf16x3) → `"high"` (three bf16 passes), ' +
      'TF32 off or `"highest"` → `"highest"` (six passes); only the first such setting in a file is mapped, later ones are removed) and needs torch_xla ≥ 2.8. ' +
      'In dual-path style the flags stay (they still matter on CUDA) and no fix is offered; SDPA backend contexts need a manual rewrite.',
    sources: [
      'pytorch/xla torch_xla/backends/__init__.py@0a55d94:41-80 (`set_mat_mul_precision`, levels, "Setting mat mul precision multiple times is not recommended"); the same file at v2.8.0 and v2.9.0, absent at v2.3.0-v2.7.0 (the fix is gated at 2.8)',
      'catalog TPU107: commit 41c9913 (added in 2.8); docs/jupyter_execute/tutorials/precision_tutorial.ipynb',
    ],
    torchtpu: 'The precision knob of the native `tpu` device is not known yet: the flags are reported, no fix is offered.',
  },
  check(ctx) {
    // the torch_xla precision knob and its bf16 default are torch_xla's: the preview's are not public
    const tpuPreview = ctx.idiom.profile === 'torchtpu';
    const sema = ctx.sema;
    const tpuOnlyXla = ctx.idiom.profile === 'torch_xla' && !ctx.idiom.dualPath;
    // a file that already sets the XLA precision keeps it: the CUDA knobs are then merely inert
    const xlaPrecisionSet = sema.nodes('call').some((c) => sema.callee(c) === 'torch_xla.backends.set_mat_mul_precision');
    const canMap = tpuOnlyXla && ctx.idiom.at('2.8') && !xlaPrecisionSet;
    let mapped: string | null = null;

    const mapping = (precision: string | null, node: Node, severity: Severity, message: string) => {
      let sev = severity;
      const stmt = enclosingStatement(node);
      const simple = stmt.type === 'expression_statement' && stmt.namedChildren.length === 1;
      let fix = null;
      if (xlaPrecisionSet) {
        sev = 'info';
        if (tpuOnlyXla && simple) fix = { title: 'Remove (the file sets the XLA precision)', applicability: 'safe' as const, edits: [deleteStatement(ctx.text, stmt)] };
      } else if (canMap && precision && simple) {
        if (mapped === null) {
          mapped = precision;
          const text = `torch_xla.backends.set_mat_mul_precision("${precision}")`;
          fix = { title: `Replace with \`${text}\``, applicability: 'unsafe' as const, edits: [replace(stmt, text)], imports: [BACKENDS_IMPORT] };
        } else if (mapped === precision) {
          fix = { title: 'Remove (the XLA precision is set once above)', applicability: 'unsafe' as const, edits: [deleteStatement(ctx.text, stmt)] };
        }
      }
      ctx.report(node, { severity: sev, message, fix });
    };

    // flag assignments: torch.backends.cudnn.X = v, torch.backends.cuda.matmul.X = v
    for (const a of sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      if (left?.type !== 'attribute') continue;
      const fq = sema.resolve(left);
      if (!fq) continue;
      const right = a.childForFieldName('right');
      const val = right?.text ?? '';
      if (inCompatBranch(a) || sema.inXlaAwareBranch(a)) continue;
      const m = /^torch\.backends\.(cudnn|cuda\.matmul)\.(\w+)$/.exec(fq);
      if (!m) continue;
      const [, group, flag] = m;
      if (cudaGuarded(a)) continue; // `if torch.cuda.is_available(): torch.backends.cuda.matmul.allow_tf32 = True`: a CUDA-only extra
      if (group === 'cudnn' && CUDNN_FLAGS.has(flag)) {
        const relied = (flag === 'deterministic' && val === 'True') || (flag === 'allow_tf32' && val === 'False' && !xlaPrecisionSet);
        const stmt = enclosingStatement(a);
        const simple = stmt.type === 'expression_statement' && stmt.namedChildren.length === 1 && stmt.namedChildren[0]?.id === a.id;
        ctx.report(left, {
          severity: relied ? 'warning' : 'info',
          message:
            flag === 'deterministic' && val === 'True'
              ? '`cudnn.deterministic = True` has no effect on TPU; XLA determinism is not controlled by this flag'
              : flag === 'allow_tf32' && val === 'False'
                ? (tpuPreview ? '`cudnn.allow_tf32 = False` is a cuDNN setting; how the TorchTPU preview sets f32 precision is not public' : '`cudnn.allow_tf32 = False` has no effect on TPU; f32 convolutions there run at `torch_xla.backends.set_mat_mul_precision` precision')
                : `\`cudnn.${flag}\` is a cuDNN setting with no effect on TPU`,
          fix: tpuOnlyXla && simple ? { title: `Remove \`cudnn.${flag}\` (inert on TPU)`, applicability: 'safe', edits: [deleteStatement(ctx.text, stmt)] } : null,
        });
      } else if (group === 'cuda.matmul' && MATMUL_FLAGS.has(flag)) {
        if (flag === 'allow_tf32') {
          const precision = val === 'True' ? 'default' : val === 'False' ? 'highest' : null;
          mapping(
            precision, left, val === 'False' ? 'warning' : 'info',
            val === 'False'
              ? (tpuPreview ? '`matmul.allow_tf32 = False` is a CUDA TF32 switch; how the TorchTPU preview sets f32 matmul precision is not public' : '`matmul.allow_tf32 = False` has no effect on TPU: f32 matmuls default to one bf16 pass there; set `torch_xla.backends.set_mat_mul_precision("highest")` for full precision')
              : (tpuPreview ? '`matmul.allow_tf32` is a CUDA TF32 switch; how the TorchTPU preview sets f32 matmul precision is not public' : '`matmul.allow_tf32` is a CUDA TF32 switch with no effect on TPU; the XLA knob is `torch_xla.backends.set_mat_mul_precision`'),
          );
        } else {
          ctx.report(left, { severity: 'info', message: `\`matmul.${flag}\` is a CUDA cuBLAS setting with no effect on TPU` });
        }
      }
    }

    for (const call of sema.nodes('call')) {
      const callee = sema.callee(call);
      if (!callee || inCompatBranch(call) || sema.inXlaAwareBranch(call)) continue;
      if (callee === 'torch.set_float32_matmul_precision') {
        if (cudaGuarded(call)) continue; // `if device_type == "cuda": torch.set_float32_matmul_precision("high")`: never runs on a TPU host
        const arg = literal(callArgs(call).positional[0]);
        // torch: 'highest' = full f32, 'high' = TF32 or bf16x3 (each f32 as two bf16), 'medium' = bf16; torch_xla
        // (backends/__init__.py:41-80 at v2.8.0 and v2.9.0, absent before 2.8): `default` one bf16 pass, `high` three
        // passes (~14 bits), `highest` six passes (~22 bits). So each name maps to its namesake, 'medium' to `default`.
        const precision = arg === 'highest' ? 'highest' : arg === 'high' ? 'high' : arg === 'medium' ? 'default' : null;
        mapping(
          precision, call, arg === 'highest' ? 'warning' : 'info',
          arg === 'highest'
            ? (tpuPreview ? '`set_float32_matmul_precision("highest")`: whether the TorchTPU preview honours it is not public' : '`set_float32_matmul_precision("highest")` has no effect on TPU: f32 matmuls default to one bf16 pass there; use `torch_xla.backends.set_mat_mul_precision("highest")`')
            : (tpuPreview
              ? '`torch.set_float32_matmul_precision`: whether the TorchTPU preview honours it is not public'
              : arg === 'high'
                ? '`set_float32_matmul_precision("high")` has no effect on TPU: f32 matmuls default to one bf16 pass there; the XLA knob is `torch_xla.backends.set_mat_mul_precision`, whose `"high"` (three bf16 passes, ~14 bits) matches torch\'s bf16x3 `"high"`'
                : '`torch.set_float32_matmul_precision` has no effect on TPU; the XLA knob is `torch_xla.backends.set_mat_mul_precision`'),
        );
      } else if (callee === 'torch.backends.cuda.sdp_kernel') {
        ctx.report(call, { severity: 'info', message: '`torch.backends.cuda.sdp_kernel(...)` selects CUDA attention kernels; it has no TPU effect (remove the context on the TPU path)' });
      } else if (callee === 'torch.nn.attention.sdpa_kernel') {
        const args = call.childForFieldName('arguments')?.text ?? '';
        if (!CUDA_SDPA.test(args) || /FLASH_ATTENTION/.test(args)) continue;
        ctx.report(call, { severity: 'info', message: '`sdpa_kernel(...)` pins a CUDA attention backend that does not exist on TPU (remove the context on the TPU path)' });
      }
    }
    // HF `TrainingArguments(tf32=True)`: __post_init__ raises ValueError("--tf32 requires Ampere or a newer GPU arch ...") without CUDA
    for (const kw of ctx.sema.nodes('keyword_argument')) {
      if (kw.childForFieldName('name')?.text !== 'tf32' || kw.childForFieldName('value')?.text !== 'True') continue;
      const call = kw.parent?.parent as Node | null;
      const callee = call?.type === 'call' ? ctx.sema.callee(call) ?? call.childForFieldName('function')?.text ?? '' : '';
      if (!/(TrainingArguments|SFTConfig|DPOConfig|GRPOConfig|ORPOConfig|KTOConfig|RewardConfig)$/.test(callee)) continue;
      ctx.report(kw, { severity: 'error', message: '`tf32=True` makes `TrainingArguments` raise ValueError without a CUDA GPU ("--tf32 requires Ampere or a newer GPU arch"); drop it on TPU' });
    }
  },
});
