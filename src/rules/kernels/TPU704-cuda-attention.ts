import { defineRule, type FixDraft, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { kwValue } from '../../core/semantics';
import { deleteStatement, replace, replaceRange } from '../../core/edits';
import type { ImportSpec } from '../../core/types';
import { cudaGuarded } from '../device/cuda-util';
import {
  argShape, contentRange, deleteUnusedImport, importInfos, isOptionalImport, importRuns, isSimpleRef, isTrue, isZero, literal, refFor, removeArg,
} from './util';

const FLASH_FUNCS = /^flash_attn\.(flash_attn_interface\.)?(flash_attn_func|flash_attn_varlen_func|flash_attn_qkvpacked_func|flash_attn_kvpacked_func|flash_attn_varlen_qkvpacked_func|flash_attn_varlen_kvpacked_func|flash_attn_with_kvcache)$/;
const XFORMERS = /^xformers\.ops\.(fmha\.)?memory_efficient_attention$/;
const FA_IMPL = /^flash_attention_[23]$/;
const CUDA_BACKENDS = /\b(FLASH_ATTENTION|EFFICIENT_ATTENTION|CUDNN_ATTENTION)\b/;

export default defineRule({
  id: 'TPU704',
  name: 'cuda-attention-kernel',
  title: 'CUDA attention kernels: flash-attn, xFormers, HF `flash_attention_2`, SDPA backend pinning',
  severity: 'error',
  step: 6,
  effort: 3,
  message: 'CUDA-only attention kernel: it does not run on TPU',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Use an attention that lowers to XLA' },
  triggers: ['flash_attn', 'xformers', 'flash_attention_', 'use_flash_attention_2', 'sdpa_kernel', 'sdp_kernel'],
  docs: {
    what:
      'Checks for the flash-attn package (`flash_attn_func`, `flash_attn_varlen_func`, `flash_attn_qkvpacked_func`, …), `xformers.ops.memory_efficient_attention`, diffusers `.enable_xformers_memory_efficient_attention()` (a warning behind a flag; an `import xformers` under `if is_xformers_available():` counts as optional), ' +
      'Hugging Face `attn_implementation="flash_attention_2"|"flash_attention_3"` and `use_flash_attention_2=True`, and SDPA pinned to CUDA-only backends ' +
      '(`sdpa_kernel(SDPBackend.FLASH_ATTENTION)` without `SDPBackend.MATH`, `torch.backends.cuda.sdp_kernel(enable_math=False)`).',
    why:
      'flash-attn and xFormers ship CUDA kernels only. torch_xla has a Pallas flash attention for TPU: ' +
      '`torch_xla.experimental.custom_kernel.flash_attention(q, k, v, causal=False, q_segment_ids=None, kv_segment_ids=None, sm_scale=1.0, *, ab=None, partition_spec=None, mesh=None)` with q, k, v in `[batch, heads, seq, head_dim]`. ' +
      'The traps: flash-attn and xFormers take `[batch, seq, heads, head_dim]` and default the softmax scale to `1/sqrt(head_dim)`, while the Pallas kernel defaults `sm_scale=1.0` ' +
      '(the torch_xla example pre-divides q by `sqrt(head_dim)`); the Pallas kernel has no dropout; variable-length batches need padding plus `q_segment_ids`/`kv_segment_ids`. ' +
      'For Hugging Face models `attn_implementation="eager"` is the conservative fallback (how `"sdpa"` performs on XLA is unverified). ' +
      'SDPA pinned to the flash/efficient/cuDNN backends names CUDA kernels; allow `SDPBackend.MATH` so other devices have a backend (the exact failure on XLA is unverified).',
    example:
      'from flash_attn import flash_attn_func\nout = flash_attn_func(q, k, v, causal=True)   # q: [B, S, H, D]\n' +
      'model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="flash_attention_2")',
    useInstead:
      'import math\nfrom torch_xla.experimental.custom_kernel import flash_attention\n' +
      'out = flash_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=True, sm_scale=1.0 / math.sqrt(q.shape[-1])).transpose(1, 2)\n' +
      'model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="eager")',
    fixSafety:
      'Unsafe, review each rewrite. The fix transposes `[B, S, H, D]` to `[B, H, S, D]` and back and makes the softmax scale explicit (`1/sqrt(head_dim)` unless one was given); ' +
      'it is offered only for `flash_attn_func`/`memory_efficient_attention` with plain q, k, v names, no dropout (or a literal 0) and no other options. ' +
      'Check: grouped-query attention (fewer k/v heads than q heads) needs k/v repeated; flash-attn aligns the causal mask to the bottom-right corner when the query and key lengths differ, SDPA to the top-left. ' +
      'The torch_xla tpu-only style uses the Pallas kernel (needs the `torch_xla[pallas]` extra, PALLAS:112; offered for targets from 2.4: the 2.3 kernel has no `sm_scale` parameter, so 2.3 targets get `scaled_dot_product_attention`); the dual-path style and the torchtpu profile use `torch.nn.functional.scaled_dot_product_attention`, which runs on CUDA, CPU and XLA. ' +
      'No fix for a flash-attn call inside a function installed as `F.scaled_dot_product_attention` (a lambda assigned to it, or a `def` whose name is): rewritten into SDPA it would call itself; and no SDPA rewrite anywhere in a file that reassigns SDPA (the call would run the patch). ' +
      'Switching Hugging Face to `"eager"` is slower on GPUs. Adding `SDPBackend.MATH` to a pinned `sdpa_kernel` keeps the CUDA kernels allowed on GPUs.',
    sources: [
      'torch_xla/experimental/custom_kernel.py: def flash_attention(q, k, v, causal=False, q_segment_ids=None, kv_segment_ids=None, sm_scale=1.0, *, ab=None, partition_spec=None, mesh=None) (custom_kernel.py:854-866 at 41398bf)',
      'torch_xla/experimental/custom_kernel.py at v2.3.0:139 `flash_attention(q, k, v, segment_ids=None, causal=False)` (no sm_scale); v2.4.0:425 adds `sm_scale=1.0`',
      'EX:flash_attention/train_decoder_only_flash_attention.py:10-19 (q pre-divided by sqrt(head_dim))',
      'PALLAS:14-60, 112 (docs/source/features/pallas.md)',
      'flash-attn signature flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), …), layout [B, S, H, D] (from flash-attn API knowledge and public shims; not re-read in the flash-attn repository)',
    ],
    torchtpu: 'The torchtpu profile rewrites to `torch.nn.functional.scaled_dot_product_attention` (plain PyTorch); a native TPU flash kernel for torch_tpu is not known.',
  },
  check(ctx) {
    const libImports = importInfos(ctx).filter((info) =>
      info.modules.some((m) => /^(flash_attn|xformers)(\.|$)/.test(m)) && !isOptionalImport(info.stmt) && !availabilityGuarded(info.stmt) &&
      // a lazy import in the CUDA arm of `if q.device.type == "cuda":` never runs on a TPU host
      !cudaGuarded(info.stmt));
    for (const lib of ['flash-attn', 'xFormers']) {
      // one finding per run of imports of one library (FastChat imports flash-attn on three consecutive lines)
      for (const run of importRuns(libImports.filter((info) => (/^xformers/.test(info.modules[0]) ? 'xFormers' : 'flash-attn') === lib))) {
        const edits = run.map((info) => deleteUnusedImport(ctx, info));
        const all = edits.every(Boolean) ? edits.flatMap((e) => e!) : null;
        ctx.report(run[0].stmt, {
          message: `${lib} is imported${run.length > 1 ? ` (${run.length} import statements)` : ''}: its attention kernels are CUDA-only`,
          fix: all ? { title: `Remove the unused ${lib} import${run.length > 1 ? 's' : ''}`, applicability: 'safe', edits: all } : null,
        });
      }
    }
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      // the CUDA arm of a device check (lit-gpt: flash-attn when `q.device.type == "cuda"`, SDPA otherwise) is not taken on TPU
      if (ctx.sema.inXlaAwareBranch(call) || cudaGuarded(call)) continue;
      const method = call.childForFieldName('function');
      if (method?.type === 'attribute' && method.childForFieldName('attribute')?.text === 'enable_xformers_memory_efficient_attention') {
        // diffusers models and pipelines switch their attention processors to xFormers (--enable_xformers_memory_efficient_attention)
        let gated = false;
        for (let n = call.parent; n && n.type !== 'function_definition' && n.type !== 'module'; n = n.parent) if (n.type === 'if_statement') gated = true;
        const stmt = call.parent?.type === 'expression_statement' ? call.parent : null;
        ctx.report(call, {
          severity: gated ? 'warning' : undefined,
          message: `\`${method.text}()\` switches attention to xFormers CUDA kernels${gated ? ' (opt-in here: leave it off on TPU)' : ''}; the default SDPA processor runs on TPU`,
          fix: stmt ? { title: 'Keep the default attention processor', edits: [deleteStatement(ctx.text, stmt)] } : null,
        });
        continue;
      }
      if (FLASH_FUNCS.test(callee) || XFORMERS.test(callee)) {
        const name = callee.split('.').pop()!;
        const tpu = ctx.idiom.profile === 'torchtpu' || ctx.idiom.dualPath ? '`F.scaled_dot_product_attention`' : "torch_xla's Pallas `flash_attention`";
        // `F.scaled_dot_product_attention = lambda *a, **k: flash_attn_func(...)`: the patch itself replaces SDPA, so
        // rewriting its body into SDPA would make it call itself; the patch is what to drop on TPU (no fix)
        const patch = sdpaPatch(ctx, call);
        ctx.report(call, {
          message: patch
            ? `\`${name}\` is a CUDA kernel, and this patch makes every \`scaled_dot_product_attention\` call run it; on TPU keep the stock SDPA (do not apply the patch)`
            : `\`${name}\` is a CUDA kernel; on TPU use ${tpu} ([B, H, S, D] layout, explicit scale)`,
          fix: patch ? null : attentionFix(ctx, call, XFORMERS.test(callee)),
          ...(patch ? { related: [{ start: patch.startIndex, end: patch.endIndex, message: 'the assignment that replaces SDPA' }] } : {}),
        });
      } else if (callee === 'torch.nn.attention.sdpa_kernel') {
        const { positional, keywords } = argShape(call);
        const arg = positional[0] ?? kwValue(keywords.get('backends'));
        if (!arg || !CUDA_BACKENDS.test(arg.text) || /\bMATH\b/.test(arg.text)) continue;
        const m = /([\w.]+)\.(FLASH_ATTENTION|EFFICIENT_ATTENTION|CUDNN_ATTENTION)/.exec(arg.text);
        const math = m ? `${m[1]}.MATH` : null;
        let fix: FixDraft | null = null;
        if (math && arg.type === 'list') {
          const items = arg.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
          const last = items[items.length - 1];
          if (last) fix = { title: 'Also allow `SDPBackend.MATH`', edits: [replaceRange(last.endIndex, last.endIndex, `, ${math}`)] };
        } else if (math && arg.type === 'attribute') {
          fix = { title: 'Also allow `SDPBackend.MATH`', edits: [replace(arg, `[${arg.text}, ${math}]`)] };
        }
        ctx.report(call, {
          severity: 'warning',
          message: '`sdpa_kernel` pins SDPA to CUDA-only backends; allow `SDPBackend.MATH` so the attention can run on TPU',
          fix,
        });
      } else if (callee === 'torch.backends.cuda.sdp_kernel') {
        const kw = argShape(call).keywords.get('enable_math');
        const v = kwValue(kw);
        if (!kw || v?.type !== 'false') continue;
        ctx.report(call, {
          severity: 'warning',
          message: '`sdp_kernel(enable_math=False)` leaves SDPA only CUDA kernels; enable the math backend for TPU',
          fix: { title: 'Set `enable_math=True`', edits: [replace(v, 'True')] },
        });
      }
    }
    // attn_implementation="flash_attention_2" / use_flash_attention_2=True
    for (const kw of ctx.sema.nodes('keyword_argument')) {
      const name = kw.childForFieldName('name')?.text;
      const value = kwValue(kw);
      if (!value || ctx.sema.inXlaAwareBranch(kw)) continue;
      if (name === 'attn_implementation' && FA_IMPL.test(literal(value) ?? '')) {
        const r = contentRange(value);
        ctx.report(kw, {
          message: `\`attn_implementation="${literal(value)}"\` needs the CUDA flash-attn kernels; use "eager" on TPU`,
          fix: { title: 'Use `attn_implementation="eager"`', edits: [replaceRange(r.start, r.end, 'eager')] },
        });
      } else if (name === 'use_flash_attention_2' && isTrue(value)) {
        const siblings = kw.parent?.namedChildren ?? [];
        const hasImpl = siblings.some((s) => s?.type === 'keyword_argument' && s.childForFieldName('name')?.text === 'attn_implementation');
        ctx.report(kw, {
          message: '`use_flash_attention_2=True` needs the CUDA flash-attn kernels; use attn_implementation="eager" on TPU',
          fix: { title: 'Use `attn_implementation="eager"`', edits: [hasImpl ? removeArg(ctx, kw) : replace(kw, 'attn_implementation="eager"')] },
        });
      }
    }
    // config._attn_implementation = "flash_attention_2"
    for (const a of ctx.sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (left?.type !== 'attribute' || !/^_?attn_implementation$/.test(left.childForFieldName('attribute')?.text ?? '')) continue;
      if (!right || !FA_IMPL.test(literal(right) ?? '') || ctx.sema.inXlaAwareBranch(a)) continue;
      const r = contentRange(right);
      ctx.report(right, {
        message: `\`${left.text} = "${literal(right)}"\` needs the CUDA flash-attn kernels; use "eager" on TPU`,
        fix: { title: 'Use "eager" attention', edits: [replaceRange(r.start, r.end, 'eager')] },
      });
    }
  },
});

/** flash_attn_func(q, k, v, dropout_p, softmax_scale, causal) / memory_efficient_attention(q, k, v, attn_bias, p, scale). */
const SDPA = 'torch.nn.functional.scaled_dot_product_attention';

/**
 * The assignment that installs the function around `call` as `torch.nn.functional.scaled_dot_product_attention`
 * (a lambda on its right side, or a `def` whose name is assigned there), else null.
 */
function sdpaPatch(ctx: RuleContext, call: Node): Node | null {
  const isSdpa = (left: Node | null) => !!left && ctx.sema.resolve(left) === SDPA;
  for (let p = call.parent; p; p = p.parent) {
    if (p.type === 'lambda') {
      let top: Node = p;
      while (top.parent?.type === 'parenthesized_expression') top = top.parent;
      const a = top.parent;
      return a?.type === 'assignment' && a.childForFieldName('right')?.id === top.id && isSdpa(a.childForFieldName('left')) ? a : null;
    }
    if (p.type === 'function_definition') {
      const name = p.childForFieldName('name')?.text;
      if (!name) return null;
      return ctx.sema.nodes('assignment').find((a) => {
        const r = a.childForFieldName('right');
        return r?.type === 'identifier' && r.text === name && isSdpa(a.childForFieldName('left'));
      }) ?? null;
    }
  }
  return null;
}

/** `import xformers` under `if is_xformers_available():` (diffusers): an optional import, like try/except ImportError. */
function availabilityGuarded(stmt: Node): boolean {
  for (let p = stmt.parent; p && p.type !== 'function_definition' && p.type !== 'module'; p = p.parent) {
    if (p.type === 'if_statement' && /\bis_\w*(xformers|flash_attn)\w*_available\(|find_spec\(/.test(p.childForFieldName('condition')?.text ?? '')) return true;
  }
  return false;
}

function attentionFix(ctx: RuleContext, call: Node, xformers: boolean): FixDraft | null {
  const callee = ctx.sema.callee(call) ?? '';
  if (!/\.(flash_attn_func|memory_efficient_attention)$/.test(callee)) return null;
  const { positional, keywords, hasSplat } = argShape(call);
  const names = xformers ? ['query', 'key', 'value', 'attn_bias', 'p', 'scale'] : ['q', 'k', 'v', 'dropout_p', 'softmax_scale', 'causal'];
  if (hasSplat || positional.length > 6) return null;
  const arg = new Map<string, Node>();
  positional.forEach((p, i) => arg.set(names[i], p));
  for (const [k, kw] of keywords) {
    if (!names.includes(k) || arg.has(k)) return null;
    arg.set(k, kwValue(kw)!);
  }
  const [q, k, v] = names.slice(0, 3).map((n) => arg.get(n));
  if (!isSimpleRef(q) || !isSimpleRef(k) || !isSimpleRef(v)) return null;
  const dropout = arg.get(xformers ? 'p' : 'dropout_p');
  if (dropout && !isZero(dropout)) return null;
  let causal = xformers ? null : arg.get('causal')?.text ?? null;
  if (xformers) {
    const bias = arg.get('attn_bias');
    if (bias && bias.type !== 'none') {
      if (!/(^|\.)LowerTriangularMask\(\)$/.test(bias.text)) return null;
      causal = 'True';
    }
  }
  const scale = arg.get(xformers ? 'scale' : 'softmax_scale');
  const scaleText = scale && scale.type !== 'none' ? scale.text : null;
  const t = (n: Node) => `${n.text}.transpose(1, 2)`;
  // sm_scale (and causal as the 4th parameter) from v2.4.0:425; v2.3.0:139 is flash_attention(q, k, v, segment_ids=None, causal=False)
  const pallas = ctx.idiom.at('2.4') ? ctx.idiom.xlaOnly('flash_attention') : null;
  const imports: ImportSpec[] = [];
  let text: string;
  if (pallas) {
    const taken = ctx.sema.nodes('function_definition').some((f) => f.childForFieldName('name')?.text === 'flash_attention') ||
      (ctx.sema.aliases.has('flash_attention') && ctx.sema.aliases.get('flash_attention') !== 'torch_xla.experimental.custom_kernel.flash_attention');
    const fname = taken ? 'xla_flash_attention' : 'flash_attention';
    imports.push({ module: 'torch_xla.experimental.custom_kernel', name: 'flash_attention', ...(taken ? { alias: fname } : {}) });
    let sm = scaleText;
    if (!sm) {
      const math = refFor(ctx, 'math.sqrt');
      imports.push(...math.imports);
      sm = `1.0 / ${math.text}(${q!.text}.shape[-1])`;
    }
    text = `${fname}(${t(q!)}, ${t(k!)}, ${t(v!)}${causal ? `, causal=${causal}` : ''}, sm_scale=${sm}).transpose(1, 2)`;
  } else {
    // a file that reassigns SDPA (`F.scaled_dot_product_attention = flash_sdpa`): an SDPA call would run the patch
    if (ctx.sema.nodes('assignment').some((a) => { const l = a.childForFieldName('left'); return !!l && ctx.sema.resolve(l) === SDPA; })) return null;
    const sdpa = refFor(ctx, 'torch.nn.functional.scaled_dot_product_attention');
    imports.push(...sdpa.imports);
    text = `${sdpa.text}(${t(q!)}, ${t(k!)}, ${t(v!)}${causal ? `, is_causal=${causal}` : ''}${scaleText ? `, scale=${scaleText}` : ''}).transpose(1, 2)`;
  }
  return {
    title: pallas ? 'Use torch_xla Pallas `flash_attention` ([B, H, S, D], explicit sm_scale)' : 'Use `scaled_dot_product_attention` ([B, H, S, D])',
    edits: [replace(call, text)],
    imports,
  };
}
