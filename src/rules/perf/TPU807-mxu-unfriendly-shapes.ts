import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, kwValue, stringContent } from '../../core/semantics';
import { replace } from '../../core/edits';

const FEATURE = /^(vocab_size|n_vocab|padded_vocab_size|hidden_size|n_embd|n_embed|d_model|embed_dim|emb_dim|embedding_dim|intermediate_size|ffn_dim|ffn_hidden_size|d_ff|dim_feedforward|hidden_dim)$/;
/** Model widths that attention splits into heads: padded, they must still divide by every head count. */
const WIDTH = /^(hidden_size|n_embd|n_embed|d_model|embed_dim|emb_dim|embedding_dim|hidden_dim)$/;
const HEADS = /^(n_head|n_heads|num_heads|nhead|num_attention_heads|num_key_value_heads|n_kv_head|n_kv_heads|n_query_groups)$/;
const BATCH = /^(batch_size|train_batch_size|per_device_train_batch_size|micro_batch_size|train_micro_batch_size_per_gpu)$/;
/** Training sequence lengths: batch x sequence is the row count of every token matmul. */
const SEQUENCE = /^(block_size|seq_len|seq_length|max_seq_len|max_seq_length|sequence_length|context_length|ctx_len|max_len)$/;
/**
 * Weights loaded into a model (`model.load_state_dict(torch.load(ckpt))`, `GPT.from_pretrained(...)`, safetensors `load_file`,
 * `load_checkpoint(...)`): a padded size no longer matches the saved tensors, so the size is not rewritten.
 */
const LOADS_WEIGHTS = /\.load_state_dict\s*\(|\btorch\.load\s*\(|\bload_checkpoint\s*\(|\.from_pretrained\s*\(|\bload_file\s*\(|\bload_model\s*\(/;

/** Whether this file or another Python file of the project loads weights into a model. */
function loadsWeights(text: string, project: { projectFiles?(): string[]; textOf(p: string): string | null; derived?<T>(key: string, build: () => T): T } | null): boolean {
  if (LOADS_WEIGHTS.test(text)) return true;
  if (!project?.projectFiles) return false;
  const scan = () => project.projectFiles!().some((f) => LOADS_WEIGHTS.test(project.textOf(f) ?? ''));
  return project.derived ? project.derived('TPU807.loadsWeights', scan) : scan();
}

function intValue(node: Node | null | undefined): number | null {
  if (node?.type !== 'integer' || !/^\d+$/.test(node.text)) return null;
  return parseInt(node.text, 10);
}

export default defineRule({
  id: 'TPU807',
  name: 'mxu-unfriendly-shapes',
  title: 'Shapes that waste the TPU matrix units',
  severity: 'info',
  step: 6,
  effort: 1,
  message: 'A model dimension that is not a multiple of 128 can leave part of the TPU matrix units idle',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Round up to the next multiple' },
  deviceWork: true,
  triggers: ['vocab', 'hidden', 'embd', 'embed', 'd_model', 'intermediate', 'ffn', 'd_ff', 'dim_feedforward', 'batch_size', 'resize_token_embeddings'],
  docs: {
    what:
      'Checks for integer literals given to vocabulary, hidden, embedding and feed-forward sizes (`vocab_size`, `hidden_size`, `n_embd`, `d_model`, ' +
      '`intermediate_size`, …) that are 128 or more but not multiples of 128, and per-device training batch sizes above 8 that are not multiples of 8: ' +
      'in assignments, dataclass fields, keyword arguments and argparse defaults. Sizes inside a `from_pretrained` function describe published ' +
      'checkpoints and are not reported. `model.resize_token_embeddings(len(tokenizer))` after `tokenizer.add_special_tokens(...)`/`add_tokens(...)` without ' +
      '`pad_to_multiple_of` is reported too (the vocabulary becomes the tokenizer\'s length, e.g. 32001).',
    why:
      'The TPU matrix unit works on fixed-size tiles; XLA pads other sizes up to the tile, so the padding is computed and thrown away. nanoGPT pads ' +
      'GPT-2\'s 50257-token vocabulary to 50304 for the same reason on GPUs. This is general Cloud TPU performance-guide advice, unverified against a ' +
      'torch_xla document, and the exact best multiples per TPU generation are unverified.',
    example: 'vocab_size = 50257\nparser.add_argument("--batch_size", type=int, default=12)',
    useInstead: 'vocab_size = 50304  # padded to a multiple of 128\nparser.add_argument("--batch_size", type=int, default=16)',
    fixSafety:
      'Batch sizes are advice only, never rewritten: a different batch size changes the optimisation (12 -> 16 is a third more tokens per step) and code that ' +
      'indexes `range(batch_size)`; the advice is not given when batch x sequence length (`block_size`, `seq_len`, ... in the same file), the row count of the ' +
      'token matmuls, is already a multiple of 128. Model sizes: unsafe, tpu-only style only (in dual-path every fix keeps CPU and CUDA results, and a padded ' +
      'size is a different model there too): a padded vocabulary changes the embedding and output shapes (pretrained checkpoints no longer load as-is, and ' +
      'padded logits must be masked or ignored); a different hidden size is a different model. Review each one. No fix at all when this file or another ' +
      'file of the project loads weights into a model (`load_state_dict`, `torch.load`, `from_pretrained`, `load_checkpoint`, safetensors `load_file`): ' +
      'the saved tensors keep the old shape. A width attention splits into heads (`n_embd`, `hidden_size`, `d_model`, ...) is padded only when the head ' +
      'counts set beside it (the same call, dataclass, dict or parameters) still divide the padded width (GPT-2 XL: `n_embd` 1600 with 25 heads cannot become 1664).',
    sources: ['Cloud TPU performance guide (general advice; unverified against torch_xla docs)', 'nanoGPT model.py GPTConfig (vocab_size 50304 padding comment)',
      'HF transformers modeling_utils.py PreTrainedModel.resize_token_embeddings(new_num_tokens, pad_to_multiple_of): warns when resizing without pad_to_multiple_of (Tensor Cores)'],
    torchtpu: 'The same advice applies to the native TPU device.',
  },
  check(ctx) {
    const sema = ctx.sema;
    if (!sema.usesTorch() && !ctx.notebook) return;
    const found: { name: string; value: Node; n: number }[] = [];
    const check = (name: string, value: Node | null | undefined) => {
      const n = intValue(value);
      if (n === null) return;
      // sizes inside `from_pretrained` describe published checkpoints: padded, the weights no longer load
      if (sema.enclosingFunction(value!)?.childForFieldName('name')?.text === 'from_pretrained') return;
      found.push({ name, value: value!, n });
    };
    for (const a of sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      if (left?.type === 'identifier') check(left.text, a.childForFieldName('right'));
    }
    for (const kw of sema.nodes('keyword_argument')) {
      const name = kw.childForFieldName('name')?.text ?? '';
      const call = kw.parent?.parent;
      // argparse defaults are handled with their flag
      if (call?.type === 'call' && call.childForFieldName('function')?.childForFieldName('attribute')?.text === 'add_argument') continue;
      check(name, kwValue(kw));
    }
    for (const p of [...sema.nodes('default_parameter'), ...sema.nodes('typed_default_parameter')]) {
      // `def train(net, data, batch_size=10)` that every call passes `batch_size=128`: the default never runs (the
      // keyword arguments that do are checked above)
      const fn = p.parent?.parent;
      if (fn?.type === 'function_definition' && ctx.model.argumentsFor(fn, p).allPass) continue;
      check(p.childForFieldName('name')?.text ?? '', p.childForFieldName('value'));
    }
    for (const call of sema.nodes('call')) {
      if (call.childForFieldName('function')?.childForFieldName('attribute')?.text !== 'add_argument') continue;
      const { positional, keywords } = callArgs(call);
      const flag = positional.map((p) => (p.type === 'string' ? stringContent(p) ?? '' : '')).find((s) => s.startsWith('--'));
      const dest = keywords.has('dest') ? stringContent(kwValue(keywords.get('dest'))!) : flag ? flag.slice(2).replace(/-/g, '_') : null;
      if (dest) check(dest, kwValue(keywords.get('default')));
    }
    // `tokenizer.add_special_tokens({'pad_token': '[PAD]'})` then `model.resize_token_embeddings(len(tokenizer))` (Alpaca,
    // QLoRA): the vocabulary becomes the tokenizer's length, one past a round size (32000 -> 32001). HF's own warning says
    // the same for Tensor Cores. Advice only: extra rows are extra classes in the softmax, so results change everywhere.
    for (const call of sema.nodes('call')) {
      const fn = call.childForFieldName('function');
      if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'resize_token_embeddings') continue;
      const { positional, keywords } = callArgs(call);
      const n = positional[0] ?? kwValue(keywords.get('new_num_tokens'));
      if (keywords.has('pad_to_multiple_of') || positional.length > 1 || n?.type !== 'call' || n.childForFieldName('function')?.text !== 'len') continue;
      const tok = callArgs(n).positional[0]?.text;
      const scope = sema.enclosingFunction(call)?.id ?? -1;
      const added = tok && sema.nodes('call').some((c) => c.startIndex < call.startIndex && (sema.enclosingFunction(c)?.id ?? -1) === scope && /^(add_special_tokens|add_tokens)$/.test(c.childForFieldName('function')?.childForFieldName('attribute')?.text ?? '')
        && c.childForFieldName('function')?.childForFieldName('object')?.text === tok);
      if (!added) continue;
      ctx.report(call, {
        message: `\`${call.text.length > 60 ? 'resize_token_embeddings(len(…))' : call.text}\` after adding tokens sets the vocabulary to the tokenizer's length, rarely a multiple of 128 (the tile TPU matrix units work on): \`pad_to_multiple_of=128\` pads the embedding and output rows; the extra rows are extra logits, so it is not rewritten`,
      });
    }
    let loads: boolean | null = null;
    // head counts set beside a width: the same call's arguments, class body (dataclass fields), dict, parameters or module
    const holder = (v: Node) => {
      let p = v.parent;
      while (p && p.type !== 'argument_list' && p.type !== 'block' && p.type !== 'dictionary' && p.type !== 'parameters' && p.type !== 'module') p = p.parent;
      return p?.id ?? -1;
    };
    const headsBy = new Map<number, number[]>();
    for (const f of found) if (HEADS.test(f.name) && f.n > 0) headsBy.set(holder(f.value), [...(headsBy.get(holder(f.value)) ?? []), f.n]);
    const sequences = found.filter((f) => SEQUENCE.test(f.name) && f.n > 0).map((f) => f.n);
    // one finding per name and value: `vocab_size=50257` in each of four model-size configs is one problem
    const seen = new Set<string>();
    for (const { name, value, n } of found) {
      const key = `${name}=${n}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (FEATURE.test(name) && n >= 128 && n % 128 !== 0) {
        const up = Math.ceil(n / 128) * 128;
        const vocab = /vocab/.test(name);
        const changes = vocab
          ? `padding changes the embedding and output-layer shapes of every model built with it (checkpoints saved with ${n} no longer load as-is, and the ${up - n} extra logits must be masked or ignored)`
          : `padding changes the parameter shapes of every model built with it (a different model on every device; checkpoints saved with ${n} no longer load)`;
        loads ??= loadsWeights(ctx.text, ctx.project);
        // a padded model size changes CPU and CUDA results too: no dual-path fix; weights loaded into a model in the
        // project (a resumed checkpoint, pretrained weights) no longer fit a padded shape: advice only
        // a width attention splits into heads (GPT-2 XL: n_embd 1600, n_head 25): padded, it must still divide by each
        // head count, known only when the heads are set beside it
        const heads = WIDTH.test(name) ? headsBy.get(holder(value)) ?? [] : [];
        const split = [...new Set(heads.filter((h) => up % h !== 0))];
        const unsplit = WIDTH.test(name) && (!heads.length || split.length > 0);
        const rewrite = !ctx.idiom.dualPath && !loads && !unsplit;
        const why = loads
          ? ': the project loads saved weights into a model, so it is not rewritten'
          : unsplit
            ? split.length
              ? `; ${up} does not split into ${split.join(' or ')} attention heads, so it is not rewritten`
              : '; the padded width must still divide by the attention heads (not set beside it), so it is not rewritten'
            : '';
        ctx.report(value, {
          message: `\`${name}\` = ${n} is not a multiple of 128, the tile size TPU matrix units work best with (pad to ${up}); ${changes}${why}`,
          fix: rewrite ? { title: `Pad \`${name}\` to ${up} (changes the model's parameter shapes)`, applicability: 'unsafe', edits: [replace(value, String(up))] } : null,
        });
      } else if (BATCH.test(name) && n > 8 && n % 8 !== 0) {
        // the token matmuls have batch x sequence rows: already a multiple of 128, the batch size is not what pads
        if (sequences.some((seq) => (n * seq) % 128 === 0)) continue;
        const up = Math.ceil(n / 8) * 8;
        // advice only: a tuned batch size is part of the optimisation (and of loops over range(batch_size))
        ctx.report(value, {
          message: `\`${name}\` = ${n} is not a multiple of 8, which suits the TPU matrix units better (e.g. ${up}); a different batch size changes the optimisation, so it is not rewritten`,
        });
      }
    }
  },
});
