import { defineRule, type FixDraft, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, kwValue } from '../../core/semantics';
import { replace, replaceRange } from '../../core/edits';
import { argShape, contentRange, deleteUnusedImport, importInfos, isOptionalImport, isTrue, literal, refFor, removeArg, removeArgs } from './util';

const TORCH_OPTIM_KW = new Set(['lr', 'betas', 'eps', 'weight_decay', 'amsgrad']);
/** bitsandbytes-only kwargs that only choose the state precision or paging: dropped with the 8-bit state. */
const BNB_STATE_KW = new Set(['optim_bits', 'min_8bit_size', 'block_wise', 'is_paged']);
const ADAM = /^(Paged)?Adam(8bit|32bit)?$/;
const ADAMW = /^(Paged)?AdamW(8bit|32bit)?$/;
/** Hugging Face `optim=` values backed by bitsandbytes, and the plain torch value with the same update rule. */
const HF_OPTIM: Record<string, string | null> = {
  adamw_bnb_8bit: 'adamw_torch', adamw_8bit: 'adamw_torch', paged_adamw_8bit: 'adamw_torch', paged_adamw_32bit: 'adamw_torch',
  paged_adamw: 'adamw_torch', lion_8bit: null, lion_32bit: null, paged_lion_8bit: null, paged_lion_32bit: null,
  rmsprop_bnb: null, rmsprop_bnb_8bit: null, rmsprop_bnb_32bit: null, ademamix_8bit: null, paged_ademamix_8bit: null,
};

export default defineRule({
  id: 'TPU703',
  name: 'bitsandbytes',
  title: 'bitsandbytes (8-bit/4-bit optimizers and quantized layers)',
  severity: 'error',
  step: 2,
  effort: 3,
  message: 'bitsandbytes kernels have no XLA backend',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Replace the bitsandbytes API with plain PyTorch' },
  triggers: ['bitsandbytes', 'bnb', 'load_in_8bit', 'load_in_4bit', 'BitsAndBytesConfig', '8bit', '32bit', 'paged_', 'GPTQConfig', 'AwqConfig'],
  docs: {
    what:
      'Checks for `import bitsandbytes`, `bnb.optim.*` (8-bit and paged optimizers, called or picked as a class: `optimizer_cls = bnb.optim.AdamW8bit`, a warning when behind a flag such as diffusers\' `--use_8bit_adam`), `bnb.nn.Linear8bitLt/Linear4bit/Params4bit`, `BitsAndBytesConfig`, ' +
      '`load_in_8bit=True`/`load_in_4bit=True`, the GPTQ and AWQ quantization configs (`GPTQConfig`, `AwqConfig`: CUDA kernels of auto-gptq/exllama and AutoAWQ), and Hugging Face `optim="adamw_bnb_8bit"|"paged_adamw_8bit"|"paged_adamw_32bit"|"adamw_8bit"`.',
    why:
      'bitsandbytes implements its quantized optimizers and layers as CUDA (and other GPU) kernels; it has no XLA backend (checked against the catalog, not against the latest bitsandbytes multi-backend list: unverified). ' +
      'On a TPU, cut optimizer memory by sharding parameters and optimizer state with FSDPv2 (TPU508) instead of quantizing the state. ' +
      'For int8 inference torch_xla has quantized ops (docs/source/perf/quantized_ops.md; API not re-read: unverified).',
    example:
      'import bitsandbytes as bnb\nopt = bnb.optim.AdamW8bit(model.parameters(), lr=2e-4)\n' +
      'model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)\nargs = TrainingArguments(output_dir="out", optim="paged_adamw_8bit")',
    useInstead:
      'import torch\nopt = torch.optim.AdamW(model.parameters(), lr=2e-4)\n' +
      'model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)\nargs = TrainingArguments(output_dir="out", optim="adamw_torch")',
    fixSafety:
      'Unsafe: a 32-bit optimizer state takes about four times the memory of an 8-bit one, and dropping `load_in_8bit`/`load_in_4bit` loads full-precision weights. ' +
      'The optimizer rewrite keeps `lr`, `betas`, `eps`, `weight_decay` and `amsgrad` (the bitsandbytes defaults match torch: AdamW 1e-2, Adam 0) and drops only the state-precision options; ' +
      'it is not offered with `percentile_clipping` or other options that change the update. A bitsandbytes import is deleted (safely) once nothing uses it.',
    sources: ['Catalog TPU703 (bitsandbytes has no XLA backend; unverified against bitsandbytes\' latest backends)', 'torch_xla/experimental/xla_quantized_matmul.py v2.9.0:186 (`XlaQuantizedLinear`, torch_xla\'s weight-only int8/int4 layer; it loads no GPTQ/AWQ checkpoint)', 'FSDP2 (docs/source/perf/fsdp_spmd.md)'],
    torchtpu: 'The same plain PyTorch replacements apply.',
  },
  check(ctx) {
    // a lazy import in a block that picks a bitsandbytes optimizer class (`if quantized: import bitsandbytes as bnb;
    // optimizer_cls = bnb.optim.PagedAdamW`, lit-gpt): one finding, on the import, with the class replacement as its fix
    const lazyImports: Node[] = [];
    for (const info of importInfos(ctx)) {
      if (!info.modules.some((m) => /^bitsandbytes(\.|$)/.test(m)) || isOptionalImport(info.stmt)) continue;
      const edits = deleteUnusedImport(ctx, info);
      const block = info.stmt.parent?.type === 'block' ? info.stmt.parent : null;
      const use = block ? optimizerClassRefs(ctx).find((a) => a.startIndex > info.stmt.endIndex && a.endIndex <= block.endIndex && a.parent?.parent?.parent?.id === block.id) : undefined;
      if (use) lazyImports.push(use);
      const useFix = use ? classFix(ctx, use) : null;
      ctx.report(info.stmt, {
        message: use ? `\`bitsandbytes\` is imported for \`${use.text}\`, whose optimizer state lives in bitsandbytes CUDA kernels (no XLA backend); use torch.optim on TPU` : '`bitsandbytes` is imported: its kernels have no XLA backend',
        fix: edits ? { title: 'Remove the unused bitsandbytes import', applicability: 'safe', edits } : useFix,
      });
    }
    const configCalls: Node[] = [];
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      const text = call.childForFieldName('function')?.text ?? '';
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      if (/^bitsandbytes\.optim\./.test(callee)) {
        const name = callee.split('.').pop()!;
        ctx.report(call, { message: `\`bnb.optim.${name}\` keeps its state in bitsandbytes CUDA kernels; use torch.optim on TPU`, fix: optimizerFix(ctx, call, name) });
      } else if (/^bitsandbytes\.nn\./.test(callee)) {
        ctx.report(call, { message: `\`bnb.nn.${callee.split('.').pop()}\` is a bitsandbytes quantized layer with no XLA kernel` });
      } else if (/(^|\.)(GPTQConfig|AwqConfig)$/.test(callee || text) && !/^torch_xla\./.test(callee)) {
        // GPTQ runs on the auto-gptq / gptqmodel / exllama CUDA kernels, AWQ on AutoAWQ's: neither has an XLA backend.
        // torch_xla's own weight-only int8/int4 layer is `XlaQuantizedLinear` (torch_xla/experimental/xla_quantized_matmul.py
        // v2.9.0:186), which loads no GPTQ/AWQ checkpoint: no drop-in replacement is known
        const kind = /GPTQ/.test(callee || text) ? 'GPTQ' : 'AWQ';
        ctx.report(call, {
          message: `\`${kind === 'GPTQ' ? 'GPTQConfig' : 'AwqConfig'}\` quantizes the model with ${kind} CUDA kernels (${kind === 'GPTQ' ? 'auto-gptq / gptqmodel / exllama' : 'AutoAWQ'}), ${ctx.idiom.profile === 'torchtpu' ? 'which have no TPU backend; no drop-in replacement is known' : `which have no XLA backend; torch_xla's weight-only quantized layer (\`torch_xla.experimental.xla_quantized_matmul.XlaQuantizedLinear\`) loads no ${kind} checkpoint, so no drop-in replacement is known`}: train the unquantized model on TPU`,
        });
      } else if (/(^|\.)BitsAndBytesConfig$/.test(callee || text)) {
        configCalls.push(call);
        ctx.report(call, { message: '`BitsAndBytesConfig` quantizes the model with bitsandbytes kernels, which have no XLA backend' });
      }
    }
    // `optimizer_cls = bnb.optim.AdamW8bit` ... `optimizer_cls(params, lr=...)` (diffusers --use_8bit_adam): the class picked, called later
    for (const attr of optimizerClassRefs(ctx)) {
      if (lazyImports.some((u) => u.id === attr.id)) continue;
      const name = (ctx.sema.resolve(attr) ?? '').split('.').pop()!;
      const target = ADAMW.test(name) ? 'torch.optim.AdamW' : ADAM.test(name) ? 'torch.optim.Adam' : null;
      const ref = target ? refFor(ctx, target) : null;
      // behind a flag (`if args.use_8bit_adam:`): an opt-in path to leave off on TPU, not a blocker
      let gated = false;
      for (let n = attr.parent; n && n.type !== 'function_definition' && n.type !== 'module'; n = n.parent) if (n.type === 'if_statement') gated = true;
      ctx.report(attr, {
        severity: gated ? 'warning' : undefined,
        message: `\`bnb.optim.${name}\`${gated ? ' (opt-in here)' : ''} keeps its state in bitsandbytes CUDA kernels; use torch.optim on TPU`,
        fix: ref ? { title: `Use \`${ref.text}\` (32-bit state)`, edits: [replace(attr, ref.text)], imports: ref.imports } : null,
      });
    }
    for (const kw of ctx.sema.nodes('keyword_argument')) {
      const name = kw.childForFieldName('name')?.text;
      const value = kwValue(kw);
      if (!value) continue;
      if ((name === 'load_in_8bit' || name === 'load_in_4bit') && isTrue(value)) {
        if (configCalls.some((c) => c.startIndex <= kw.startIndex && kw.endIndex <= c.endIndex)) continue;
        if (ctx.sema.inXlaAwareBranch(kw)) continue;
        ctx.report(kw, {
          message: `\`${name}=True\` loads the model through bitsandbytes, which has no XLA backend`,
          fix: { title: `Remove \`${name}=True\` (full-precision weights)`, edits: [removeArg(ctx, kw)] },
        });
      } else if (name === 'optim') {
        const v = literal(value);
        if (v === null || !(v in HF_OPTIM)) continue;
        const to = HF_OPTIM[v];
        const r = contentRange(value);
        ctx.report(kw, {
          message: `\`optim="${v}"\` selects a bitsandbytes optimizer, which has no XLA backend`,
          fix: to ? { title: `Use \`optim="${to}"\``, edits: [replaceRange(r.start, r.end, to)] } : null,
        });
      } else if (name === 'default') {
        // the default of an `optim` option: a dataclass field (`optim: str = field(default="paged_adamw_32bit")`, the
        // HfArgumentParser pattern) or `parser.add_argument("--optim", default=...)`; the value reaches TrainingArguments(optim=)
        const v = literal(value);
        if (v === null || !(v in HF_OPTIM) || !optimOption(kw)) continue;
        const to = HF_OPTIM[v];
        ctx.report(kw, {
          message: `the \`optim\` default "${v}" selects a bitsandbytes optimizer, which has no XLA backend${to ? `; default to "${to}"` : ''}`,
        });
      }
    }
  },
});

/** Whether `default=` belongs to an `optim` option: `optim: str = field(default=...)` or `add_argument("--optim", default=...)`. */
function optimOption(kw: Node): boolean {
  const call = kw.parent?.parent;
  if (call?.type !== 'call') return false;
  const fn = call.childForFieldName('function')?.text ?? '';
  if (/(^|\.)field$/.test(fn)) {
    const asg = call.parent;
    return asg?.type === 'assignment' && asg.childForFieldName('right')?.id === call.id && asg.childForFieldName('left')?.text === 'optim';
  }
  if (/(^|\.)add_argument$/.test(fn)) {
    const first = call.childForFieldName('arguments')?.namedChildren[0];
    return first?.type === 'string' && /^['"]--optim['"]$/.test(first.text);
  }
  return false;
}

/** `bnb.optim.AdamW8bit` used as a value (a class picked, called later), not called in place. */
function optimizerClassRefs(ctx: RuleContext): Node[] {
  return ctx.sema.nodes('attribute').filter((attr) => {
    const p = attr.parent;
    if (p?.type === 'attribute' || (p?.type === 'call' && p.childForFieldName('function')?.id === attr.id)) return false;
    return /^bitsandbytes\.optim\.\w+$/.test(ctx.sema.resolve(attr) ?? '') && !ctx.sema.inXlaAwareBranch(attr);
  });
}

/** `bnb.optim.PagedAdamW` → `torch.optim.AdamW` (32-bit state), when the class has a torch counterpart. */
function classFix(ctx: RuleContext, attr: Node): FixDraft | null {
  const name = (ctx.sema.resolve(attr) ?? '').split('.').pop()!;
  const target = ADAMW.test(name) ? 'torch.optim.AdamW' : ADAM.test(name) ? 'torch.optim.Adam' : null;
  if (!target) return null;
  const ref = refFor(ctx, target);
  return { title: `Use \`${ref.text}\` (32-bit state)`, edits: [replace(attr, ref.text)], imports: ref.imports };
}

function optimizerFix(ctx: RuleContext, call: Node, name: string): FixDraft | null {
  const target = ADAMW.test(name) ? 'torch.optim.AdamW' : ADAM.test(name) ? 'torch.optim.Adam' : null;
  if (!target) return null;
  const { positional, keywords, hasSplat } = argShape(call);
  if (hasSplat || positional.length > 6) return null;
  if ([...keywords.keys()].some((k) => !TORCH_OPTIM_KW.has(k) && !BNB_STATE_KW.has(k) && k !== 'params')) return null;
  const ref = refFor(ctx, target);
  const edits = [replace(call.childForFieldName('function')!, ref.text)];
  edits.push(...removeArgs(ctx, [...callArgs(call).keywords].filter(([k]) => BNB_STATE_KW.has(k)).map(([, kw]) => kw)));
  return { title: `Replace \`${name}\` with \`${ref.text}\` (32-bit state)`, edits, imports: ref.imports };
}
