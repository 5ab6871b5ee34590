import { defineRule } from '../../core/rule';
import { downgrade } from '../../core/engine';
import { replace } from '../../core/edits';
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, kwValue, methodName, receiver, stringContent, type Semantics } from '../../core/semantics';
import { appendArg, collateFunctions } from './util';
import { localBindings } from '../graph/util';

const HF_COLLATORS = /^transformers(\.data\.data_collator)?\.(DataCollatorWithPadding|DataCollatorForSeq2Seq|DataCollatorForLanguageModeling|DataCollatorForTokenClassification)$/;
const HF_ARGS = /(^|\.)(TrainingArguments|Seq2SeqTrainingArguments|SFTConfig)$/;
const RESIZE = /^torchvision\.transforms(\.v2)?\.Resize$/;
const FIXED_CROP = /^torchvision\.transforms(\.v2)?\.(CenterCrop|RandomCrop|RandomResizedCrop|FiveCrop|TenCrop)$/;
/** litgpt data modules batched by `get_sft_collate_fn` (litgpt/data/__init__.py); pretraining modules (TinyLlama, OpenWebText, LitData) use fixed blocks. */
const LITGPT_SFT = /^litgpt\.data(\.\w+)*\.(Alpaca|Alpaca2k|AlpacaGPT4|Deita|Dolly|FLAN|JSON|LIMA|LongForm|SFTDataset|get_sft_collate_fn)$/;
const RANDOM = /^(random|numpy\.random|torch)\.(choice|randint|uniform|random|rand|randrange|sample)$/;

/**
 * `max(len(x) for x in batch)`, `max([x[1].size(1) for x in batch])`, `_max_by_axis([list(img.shape) for img in images])`:
 * the longest (largest) item of the batch.
 */
function batchMax(ctx: RuleContext, call: Node): boolean {
  const args = call.childForFieldName('arguments');
  if (!args) return false;
  const only = args.namedChildren.length === 1 ? args.namedChildren[0] : null;
  let inner = args.type === 'generator_expression' ? args : only?.type === 'list_comprehension' ? only : null;
  // `x_lens = [len(x[0]) for x in batch]` … `max(x_lens)` (WaveRNN's collate_tts): the lengths through a local name
  if (!inner && only?.type === 'identifier') {
    const local = localBindings(ctx, only.text, call);
    let last: Node | null | undefined = local[local.length - 1];
    if (last?.type === 'call' && /^(numpy\.array|numpy\.asarray|list|torch\.tensor|torch\.LongTensor)$/.test(ctx.sema.callee(last) ?? last.childForFieldName('function')?.text ?? '')) last = callArgs(last).positional[0];
    if (last?.type === 'list_comprehension' || last?.type === 'generator_expression') inner = last;
    // `length_text = np.append(length_text, text.size(0))` in a loop over the batch's items: the lengths appended one by one
    else if (local.some((b) => b.type === 'call' && /(^|\.)(append|concatenate|hstack)$/.test(ctx.sema.callee(b) ?? '') && /\blen\(|\.size\(|\.shape\b/.test(b.text))) return true;
  }
  return !!inner && /\blen\(|\.size\(|\.shape\b/.test(inner.text);
}

/** A function named for a maximum (`max`, `np.max`, `_max_by_axis`, `get_max_size`). */
function maxNamed(fnText: string): boolean {
  const last = fnText.split('.').pop() ?? '';
  return last === 'max' || last === 'amax' || /(^|_)max(_|$)/i.test(last);
}

/** An integer `max_length` the file pads or truncates to (`max_length=cutoff_len` with `cutoff_len: int = 256`), else null. */
function maxLengthHere(ctx: RuleContext): number | null {
  for (const kw of ctx.sema.nodes('keyword_argument')) {
    if (kw.childForFieldName('name')?.text !== 'max_length') continue;
    const v = kwValue(kw);
    if (v?.type === 'integer') return Number(v.text);
    if (v?.type !== 'identifier') continue;
    for (const p of [...ctx.sema.nodes('default_parameter'), ...ctx.sema.nodes('typed_default_parameter')]) {
      if (p.childForFieldName('name')?.text === v.text && p.childForFieldName('value')?.type === 'integer') return Number(p.childForFieldName('value')!.text);
    }
    const b = ctx.sema.bindings(v.text);
    if (b.length === 1 && b[0].type === 'integer') return Number(b[0].text);
  }
  return null;
}

/** The random draw a size is computed from through local names (`ns` ← `sf` ← `sz = random.randrange(...)`), else null. */
function randomOrigin(ctx: RuleContext, e: Node, at: Node, depth: number, seen: Set<number>): Node | null {
  if (depth > 4 || seen.has(e.id)) return null;
  seen.add(e.id);
  if (e.type === 'call' && RANDOM.test(ctx.sema.callee(e) ?? '')) return e;
  for (const c of e.namedChildren) {
    if (!c) continue;
    const r = randomOrigin(ctx, c, at, depth, seen);
    if (r) return r;
  }
  if (e.type !== 'identifier') return null;
  const fn = ctx.sema.enclosingFunction(at)?.id ?? -1;
  const vals = ctx.sema.bindings(e.text).filter((v) => (ctx.sema.enclosingFunction(v)?.id ?? -1) === fn && v.startIndex < at.startIndex);
  const last = vals[vals.length - 1];
  return last ? randomOrigin(ctx, last, at, depth + 1, seen) : null;
}

/**
 * `targets = [{k: v.to(device) for k, v in t.items()} for t in targets]`: per-sample dicts of tensors moved one by
 * one. The collate function kept them as a list instead of stacking them, which it does when their sizes differ
 * (detection targets: a different number of boxes per image).
 */
function perSampleDictsMoved(comp: Node): boolean {
  if (comp.type !== 'list_comprehension') return false;
  const body = comp.childForFieldName('body');
  if (body?.type !== 'dictionary_comprehension' && body?.type !== 'dictionary') return false;
  return /\.(to|cuda)\(/.test(body.text) && (body.type === 'dictionary' || /\.items\(\)/.test(body.text));
}

/**
 * The positions of a collate function's returned tuple that concatenate the batch's per-sample tensors along dim 0
 * (`return torch.stack(im, 0), torch.cat(label, 0), path, shapes`, YOLO): one row per object, a count per batch.
 */
function catPositions(sema: Semantics, fn: Node): number[] {
  const out: number[] = [];
  for (const ret of sema.within('return_statement', fn)) {
    if (sema.enclosingFunction(ret)?.id !== fn.id) continue;
    const v = ret.namedChildren[0];
    const items = v?.type === 'expression_list' || v?.type === 'tuple' ? v.namedChildren : [];
    items.forEach((it, i) => {
      if (it?.type !== 'call' || !/^torch\.(cat|concat|concatenate)$/.test(sema.callee(it) ?? '')) return;
      const { positional, keywords } = callArgs(it);
      const dim = positional[1] ?? kwValue(keywords.get('dim'));
      if (positional[0]?.type === 'identifier' && (!dim || dim.text === '0')) out.push(i);
    });
  }
  return out;
}

/** The collate functions (with their module's semantics) named by `collate_fn=` keywords inside `scope`. */
function collatesNamedIn(sema: Semantics, scope: Node): Node[] {
  const names = new Set<string>();
  for (const kw of sema.within('keyword_argument', scope)) {
    if (kw.childForFieldName('name')?.text !== 'collate_fn') continue;
    const v = kwValue(kw);
    for (const n of v ? [v, ...v.descendantsOfType('attribute'), ...v.descendantsOfType('identifier')] : []) {
      if (!n) continue;
      if (n.type === 'attribute') names.add(n.childForFieldName('attribute')?.text ?? '');
      else if (n.type === 'identifier' && n.parent?.type !== 'attribute') names.add(n.text);
    }
  }
  // the file's defs by name (Semantics.functionsNamed), in document order: not a scan of every def per loader. A def
  // whose name is missing or empty (broken code) is not in that index: with '' asked, the scan as before
  if (names.has('')) return sema.nodes('function_definition').filter((f) => names.has(f.childForFieldName('name')?.text ?? ''));
  const defs = new Set<Node>();
  for (const name of names) for (const f of sema.functionsNamed(name)) defs.add(f);
  return [...defs].sort((a, b) => a.startIndex - b.startIndex);
}

/**
 * Per file: the calls assigned to each name (`train_loader = DataLoader(...)`, or the first target of
 * `train_loader, ds = build(...)`), with where the assignment starts, in document order. concatenatedTarget asked the
 * same question of every assignment before each loop (loops × assignments).
 */
const assignedCalls = new WeakMap<Semantics, Map<string, { start: number; call: Node }[]>>();
function callsAssignedTo(sema: Semantics): Map<string, { start: number; call: Node }[]> {
  let byName = assignedCalls.get(sema);
  if (byName) return byName;
  byName = new Map();
  for (const a of sema.nodes('assignment')) {
    const l = a.childForFieldName('left');
    const r = a.childForFieldName('right');
    if (r?.type !== 'call') continue;
    const first = l?.type === 'pattern_list' || l?.type === 'tuple_pattern' ? l.namedChildren[0] : l;
    const name = first?.text;
    if (name === undefined) continue;
    let list = byName.get(name);
    if (!list) byName.set(name, (list = []));
    list.push({ start: a.startIndex, call: r });
  }
  assignedCalls.set(sema, byName);
  return byName;
}

/** The loop variable a concatenating collate function fills, with the `torch.cat` call and where it lives. */
function concatenatedTarget(ctx: RuleContext, loop: Node): { name: string; cat: Node; fnName: string; path: string | null } | null {
  let left = loop.childForFieldName('left');
  let it = loop.childForFieldName('right');
  // follow `pbar = enumerate(train_loader)`, `pbar = tqdm(pbar)` back to the loader name
  let enumerated = false;
  for (let k = 0; k < 6 && it; k++) {
    if (it.type === 'call') {
      const fn = it.childForFieldName('function')?.text ?? '';
      if (fn === 'enumerate') enumerated = true;
      else if (!/tqdm$/i.test(fn)) break;
      it = callArgs(it).positional[0] ?? null;
    } else if (it.type === 'identifier') {
      const vals = ctx.sema.bindings(it.text).filter((v) => v.startIndex < loop.startIndex && v.type === 'call' && /^(enumerate|\w*tqdm|\w*TQDM)$/.test(v.childForFieldName('function')?.text ?? ''));
      const first = vals.find((v) => v.childForFieldName('function')?.text === 'enumerate') ?? vals[0];
      if (!first) break;
      it = first;
    } else break;
  }
  if (it?.type !== 'identifier') return null;
  if (enumerated) {
    const parts = left?.type === 'pattern_list' || left?.type === 'tuple_pattern' ? left.namedChildren : [];
    left = parts.length === 2 ? parts[1] : null;
  }
  const targets = left?.type === 'tuple_pattern' || left?.type === 'pattern_list' ? left.namedChildren : [];
  if (targets.length < 2) return null;
  // `train_loader, dataset = create_dataloader(...)` or `train_loader = DataLoader(..., collate_fn=...)`
  const loaderName = it.text;
  // the last call assigned to the loader's name by an assignment starting at or before the loop (assignments are in
  // document order: their starts never decrease)
  let builder: Node | null = null;
  for (const { start, call } of callsAssignedTo(ctx.sema).get(loaderName) ?? []) {
    if (start > loop.startIndex) break;
    builder = call;
  }
  if (!builder) return null;
  const candidates: { sema: Semantics; fn: Node; path: string | null }[] = collatesNamedIn(ctx.sema, builder).map((fn) => ({ sema: ctx.sema, fn, path: null }));
  if (!candidates.length && ctx.project) {
    const hit = ctx.project.resolveCall(builder, ctx.sema, ctx.path);
    if (hit && (hit.kind === 'function' || hit.kind === 'method')) {
      for (const fn of collatesNamedIn(hit.module.sema, hit.def)) candidates.push({ sema: hit.module.sema, fn, path: hit.path });
    }
  }
  for (const c of candidates) {
    for (const pos of catPositions(c.sema, c.fn)) {
      const t = targets[pos];
      if (t?.type !== 'identifier') continue;
      const ret = c.sema.within('return_statement', c.fn).find((r) => c.sema.enclosingFunction(r)?.id === c.fn.id);
      const cat = ret?.namedChildren[0]?.namedChildren[pos];
      if (cat) return { name: t.text, cat, fnName: c.fn.childForFieldName('name')?.text ?? 'collate_fn', path: c.path };
    }
  }
  return null;
}

function short(t: string): string {
  const one = t.replace(/\s+/g, ' ');
  return one.length > 40 ? one.slice(0, 37) + '…' : one;
}

function inside(node: Node, scopes: Node[]): boolean {
  return scopes.some((s) => node.startIndex >= s.startIndex && node.endIndex <= s.endIndex);
}

export default defineRule({
  id: 'TPU404',
  name: 'variable-input-shapes',
  title: 'Variable input shapes: dynamic padding, per-batch lengths, variable image sizes',
  severity: 'warning',
  step: 4,
  effort: 3,
  message: 'Batches of varying shape recompile the graph for every new shape',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Pad to a fixed or bucketed length' },
  deviceWork: true,
  triggers: ['padding', 'pad_sequence', 'DataCollator', 'group_by_length', 'Resize', 'collate', 'Collate', 'interpolate', 'max(', 'min(', 'speechbrain', '.items()', '.to(', '.cuda(', 'litgpt'],
  docs: {
    what:
      'Checks for inputs whose shape changes from batch to batch: tokenizer calls with `padding=True`/`"longest"` (also `padding=self.padding` in a collator class whose field defaults to `True`: `padding: Union[bool, str] = True`) (and `padding="max_length"` with no `max_length`, info; one text per call outside the step, `[tok(t, padding="longest") for t in texts]`, pads nothing and is not flagged); ' +
      'a device tensor sliced at an offset that moves every step (`source[i:i+bptt]` with `i` the step loop\'s `range` counter, also through a helper the loop calls with it, or a cursor `p += n` set before the loop; not micro-batches of one loader batch, nor a cursor reset inside the step): slice bounds are constants of the graph; ' +
      'torchtext `BucketIterator` for training (unless a Field sets `fix_length`; the validation iterator is the same problem and is not reported again); ' +
      '`pad_sequence(...)`, `max(len(s) for s in batch)` / `max([x.size(1) for x in batch])` / a max-named helper over the items\' shapes (`_max_by_axis([list(img.shape) for img in images])`, DETR\'s NestedTensor padding) or the first of the lengths sorted descending (`lengths[0]` after `torch.sort(..., descending=True)`) in a `collate_fn` (also one wrapped in a lambda or `partial`, `collate_fn=lambda b: collate_tts(b, r)`) or a same-file helper it calls (two levels) or a batch builder the training loop calls (`get_batch(data)` sampling items and padding them to the longest), also through a local list of the lengths (`x_lens = [len(x[0]) for x in batch]` … `max(x_lens)`, or lengths `np.append`ed item by item); ' +
      'speechbrain PaddedBatch batches (padded to the longest item, `wav_lens` relative; once per file, where `batch.to(self.device)` runs in a `Brain` method) and `DynamicBatchSampler` (once per file); ' +
      'a small `pad_to_multiple_of` (below 64, e.g. 8, info: it still pads per batch, up to max_length/8 shapes); HF `DataCollatorWithPadding`/`DataCollatorForSeq2Seq`/`DataCollatorForLanguageModeling`/`DataCollatorForTokenClassification` ' +
      'without `pad_to_multiple_of`, or with one that is `None` on TPU such as `pad_to_multiple_of=(8 if accelerator.use_fp16 else None)` (unless the script pre-pads to a fixed length); `group_by_length=True`; torchvision `Resize(int)` with no fixed crop (or `(H, W)` resize) before or after it in the same `Compose`; ' +
      'random sizes in `Resize`/`F.interpolate`, also through local names (multi-scale training: `sz = random.randrange(...)` … `interpolate(imgs, size=ns)`, reported at the draw); ' +
      'batches of litgpt\'s instruction-tuning data modules (`from litgpt.data import Alpaca`, …: `get_sft_collate_fn` pads to the longest sample), once per file where the training loop reads `batch["input_ids"]`; ' +
      'a loop variable filled by `torch.cat(labels, 0)` in the collate function (here, or in the project module whose function builds the loader: YOLO\'s `collate_fn`), reported where the step moves it; ' +
      'per-sample dicts of tensors moved to the device one by one in the step (`[{k: v.to(device) for k, v in t.items()} for t in targets]`: the collate function left them unstacked because their sizes differ, as detection targets do; once per loop); per-batch truncation to the longest sequence (`input_ids[:, :lengths.max()]`) in a hot loop or collate function; ' +
      'and chunks cut in hot code with a bound that shrinks at the end of the data (`seq_len = min(bptt, len(source) - 1 - i)`, then `source[i:i+seq_len]`; pytorch/examples word_language_model), once per function.',
    why:
      '"it\'s pretty common that input dataset contains examples with different shapes … Without normalization, it\'ll cause recompilation for every new input shape" (RECOMP #1). ' +
      'The HF Accelerate TPU guide asks for the same: "all tensors in your batches must have the same length (for example, no dynamic padding for NLP tasks)". ' +
      '`Resize(int)` resizes the shorter side and keeps the aspect ratio, so image batches differ in shape unless a fixed crop precedes or follows it.',
    example: 'tok(texts, padding=True, truncation=True, max_length=512)\nDataCollatorWithPadding(tok)\nT.Compose([T.Resize(256), T.ToTensor()])',
    useInstead:
      'tok(texts, padding="max_length", truncation=True, max_length=512)      # one compiled shape\nDataCollatorWithPadding(tok, pad_to_multiple_of=128)                 # at most L/128 shapes\nT.Compose([T.Resize((256, 256)), T.ToTensor()])                       # or RandomResizedCrop(S)/CenterCrop(S)',
    fixSafety:
      'Unsafe: padding to `max_length` costs compute on padding tokens (attention masks keep results the same); `pad_to_multiple_of=128` buckets shapes; `Resize(int)` is reported without a fix: `Resize((S, S))` changes the aspect ratio and so the shape of every batch of non-square images (a model sized for it breaks, on every backend), and the (H, W) the model expects is the author\'s choice. ' +
      'The tokenizer fix is offered only when the call already has a `max_length`; collate functions, `group_by_length` and per-batch truncation are reported without a fix.',
    sources: [
      'RECOMP (docs/source/perf/recompilation.md, "#1 dynamic shape from input data")',
      'torch_xla v2.9.0 torch_xla/csrc/ops/select.cpp (the Select node of a slice hashes dim, start, end and stride and lowers to xla::SliceInDim with them: a new offset is a new graph); aten_xla_type.cpp slice_copy',
      'HF Accelerate TPU guide ("no dynamic padding for NLP tasks"; huggingface/accelerate docs/source/concept_guides/training_tpu.md)',
      'DS (docs/source/learn/dynamic_shape.md)',
      'litgpt litgpt/data/base.py `_sft_collate_fn` (pad_sequence to the longest sample of the batch, truncated only above max_seq_length)',
      'speechbrain speechbrain/utils/data_utils.py `batch_pad_right` (pads to the batch maximum; relative lengths x / max, as its unit test asserts) used by speechbrain/dataio/batch.py `PaddedBatch`',
    ],
    torchtpu: 'Same detection: the tpu device compiles per shape (`torch.compile(backend="tpu", dynamic=False)`).',
  },
  check(ctx) {
    const builders = batchBuilders(ctx);
    const collates = [...collateFunctions(ctx), ...builders];
    const padFindings: { at: Node; message: string; related: { start: number; end: number; message: string }[] }[] = [];
    const randomReported = new Set<number>();
    // a tokenizer call that pads to a fixed max_length: the collator then sees equal lengths
    const fixedPrepad = ctx.sema.nodes('call').some((c) => {
      if (HF_COLLATORS.test(ctx.sema.callee(c) ?? '')) return false;
      const k = callArgs(c).keywords;
      return stringContent(kwValue(k.get('padding')) ?? c) === 'max_length' && k.has('max_length');
    });
    const sevAt = (n: Node) => {
      const hot = ctx.sema.hot(n);
      return hot && hot.kind === 'eval' ? downgrade('warning') : 'warning';
    };

    for (const call of ctx.sema.nodes('call')) {
      const q = ctx.sema.callee(call) ?? '';
      const fnText = call.childForFieldName('function')?.text ?? '';
      const { positional, keywords } = callArgs(call);

      // torchtext's BucketIterator: batches of similar lengths, each padded to its longest (unless the Field fixes the length)
      if (/(^|\.)BucketIterator(\.splits)?$/.test(q || fnText) && !/\bfix_length\s*=\s*(?!None)/.test(ctx.text)) {
        // the validation iterator (`BucketIterator(val, ...)`, `train=False`) is eval work: its shapes are the same problem, once
        const evalSet = /^(val|valid|validation|dev|test)(_\w+)?$/i.test(positional[0]?.text ?? '') || kwValue(keywords.get('train'))?.text === 'False';
        if (evalSet) continue;
        ctx.report(call, {
          severity: sevAt(call),
          message: `\`${short(fnText)}\` groups examples of similar length and pads each batch to its longest: every new length compiles a new graph; give the Field a fixed length (\`Field(fix_length=N)\`) or pad to a few fixed buckets`,
          fix: null,
        });
        continue;
      }

      // tokenizer padding
      const padKw = keywords.get('padding');
      const pad = classDefault(ctx, kwValue(padKw));
      if (pad && /tok|processor|encode/i.test(fnText) && !HF_COLLATORS.test(q)) {
        // the CUDA arm of a TPU switch (`if accelerator.distributed_type == DistributedType.TPU: return tok.pad(..., padding="max_length")`)
        if (ctx.sema.inXlaAwareBranch(call)) continue;
        const padStr = pad.type === 'string' ? stringContent(pad) : null;
        if (pad.text === 'True' || padStr === 'longest') {
          // one string at a time (`[tok(text, padding="longest") for text in strings]` in offline preprocessing): padding
          // a single sequence to the longest is a no-op; the batch's shape is made later, by the collator
          if (singleText(ctx, call)) continue;
          const maxLen = pad === kwValue(padKw) ? keywords.get('max_length') : undefined;
          ctx.report(kwValue(padKw)!, {
            severity: sevAt(call),
            message: `\`padding=${kwValue(padKw)!.text}\`${pad === kwValue(padKw) ? '' : ` (\`${pad.text}\`, the class's default)`} pads each batch to its longest sequence: every new length compiles a new graph`,
            fix: maxLen ? { title: 'Pad to `max_length`', edits: [replace(pad, '"max_length"')] } : null,
          });
        } else if (padStr === 'max_length' && !keywords.has('max_length')) {
          ctx.report(kwValue(padKw)!, { severity: 'info', message: '`padding="max_length"` without `max_length` pads to the tokenizer\'s `model_max_length`: set `max_length` explicitly', fix: null });
        }
        continue;
      }

      // HF collators without pad_to_multiple_of
      if (HF_COLLATORS.test(q)) {
        if (fixedPrepad) continue;
        const multiple = kwValue(keywords.get('pad_to_multiple_of'));
        if (multiple) {
          // `pad_to_multiple_of=(8 if accelerator.use_fp16 else None)` (HF no_trainer examples): None unless fp16, and TPUs train in bf16
          const inner = multiple.type === 'parenthesized_expression' ? multiple.namedChildren[0] ?? multiple : multiple;
          const noneArm = inner.text === 'None' ? inner : inner.type === 'conditional_expression' ? [inner.namedChildren[0], inner.namedChildren[2]].find((a) => a?.text === 'None') ?? null : null;
          if (!noneArm) {
            // `pad_to_multiple_of=8` (a tensor-core multiple) still pads to each batch's longest sequence: up to L/8 shapes
            const k = multiple.type === 'integer' ? Number(multiple.text) : 0;
            const p = kwValue(keywords.get('padding'));
            if (k > 0 && k < 64 && !(p && (stringContent(p) === 'max_length' || p.text === 'False'))) {
              const L = maxLengthHere(ctx);
              ctx.report(multiple, {
                severity: 'info',
                message: `\`pad_to_multiple_of=${k}\` still pads each batch to its longest sequence, rounded up to ${k}: up to ${L ? `${Math.ceil(L / k)} shapes at max_length ${L}` : `max_length/${k} shapes`}, each compiling a graph; a coarser multiple (128) or padding to max_length gives fewer`,
                fix: null,
              });
            }
            continue;
          }
          const cond = inner.type === 'conditional_expression' ? inner.namedChildren[1]?.text ?? '' : '';
          ctx.report(multiple, {
            message: `\`pad_to_multiple_of=${multiple.text.length > 40 ? multiple.text.slice(0, 37) + '…' : multiple.text}\` ${inner.text === 'None' ? 'does not bucket' : /fp16|half|amp|mixed/i.test(cond) ? 'is None unless training in float16 (TPUs train in bfloat16)' : 'is None on some runs'}: each batch is then padded to its longest sequence and every new length compiles a new graph`,
            fix: { title: 'Bucket with `128` where it was `None`', edits: [replace(noneArm, '128')] },
          });
          continue;
        }
        if (/ForLanguageModeling$/.test(q) && /group_texts|block_size/.test(ctx.text)) continue;
        const p = kwValue(keywords.get('padding'));
        if (p && (stringContent(p) === 'max_length' || p.text === 'False')) continue;
        const edit = appendArg(call, 'pad_to_multiple_of=128', ctx.text);
        ctx.report(call, {
          message: `\`${q.split('.').pop()}\` pads each batch to its longest sequence: set \`pad_to_multiple_of\` (or pre-pad to a fixed length) to bound the number of shapes`,
          fix: edit ? { title: 'Bucket with `pad_to_multiple_of=128`', edits: [edit] } : null,
        });
        continue;
      }

      // group_by_length=True
      if (HF_ARGS.test(q)) {
        const g = kwValue(keywords.get('group_by_length'));
        if (g?.text === 'True') ctx.report(g, { message: '`group_by_length=True` batches by length: with dynamic padding each length bucket compiles its own graph', fix: null });
        continue;
      }

      // Resize(int) without a fixed crop; random sizes
      if (RESIZE.test(q) || q === 'torch.nn.functional.interpolate') {
        const size = kwValue(keywords.get('size')) ?? (RESIZE.test(q) ? positional[0] : positional[1]) ?? kwValue(keywords.get('scale_factor')) ?? null;
        if (!size) continue;
        const randomCall = (n: Node): boolean => (n.type === 'call' && RANDOM.test(ctx.sema.callee(n) ?? '')) || n.namedChildren.some((c) => !!c && randomCall(c));
        if (randomCall(size)) {
          ctx.report(size, { severity: sevAt(call), message: 'A random size per call gives every batch a new shape: pick from a few fixed sizes per run, or resize once in the dataset', fix: null });
          continue;
        }
        // multi-scale training (YOLO): `sz = random.randrange(lo, hi + gs) // gs * gs` … `ns = [...sz...]` … `interpolate(imgs, size=ns)`
        const drawn = randomOrigin(ctx, size, call, 0, new Set());
        if (drawn && !RESIZE.test(q)) {
          if (randomReported.has(drawn.id)) continue;
          randomReported.add(drawn.id);
          const line = ctx.text.slice(0, call.startIndex).split('\n').length;
          ctx.report(drawn, {
            severity: sevAt(call),
            message: `\`${short(drawn.text)}\` draws a new image size and \`interpolate\` (line ${line}) resizes the batch to it: every size drawn is a new input shape and compiles a new graph; on TPU train at one size, or draw from a few fixed sizes and accept one graph each`,
            related: [{ start: call.startIndex, end: call.endIndex, message: 'the resize to the drawn size' }],
            fix: null,
          });
          continue;
        }
        if (!RESIZE.test(q) || (size.type !== 'integer' && size.type !== 'identifier')) continue;
        // `size = (size, size)` in the same function (timm/Accelerate image_size): an (H, W) pair is a fixed shape
        if (size.type === 'identifier') {
          const fn = ctx.sema.enclosingFunction(call);
          const pair = ctx.sema.bindings(size.text).some((v) => (v.type === 'tuple' || v.type === 'list') && (ctx.sema.enclosingFunction(v)?.id ?? -1) === (fn?.id ?? -1));
          if (pair) continue;
        }
        const list = call.parent?.type === 'list' ? call.parent : null;
        if (!list) continue;
        // a fixed crop (or an (H, W) resize) after it fixes the output; one before it too: `RandomCrop(32)` then `Resize(64)`
        // resizes images that all have the crop's shape, so every output has one shape as well
        const fixes = (c: Node) => c.type === 'call' && (FIXED_CROP.test(ctx.sema.callee(c) ?? '') || (RESIZE.test(ctx.sema.callee(c) ?? '') && /^[([]/.test(callArgs(c).positional[0]?.text ?? '')));
        const cropped = list.namedChildren.some((c) => !!c && c.id !== call.id && fixes(c));
        if (cropped) continue;
        // no fix: `Resize((S, S))` changes the shape of every batch of non-square images, on XLA too, so a model sized for
        // their aspect ratio (a Linear over the flattened map) breaks, and CPU/CUDA results change; the (H, W) the model
        // expects is the author's choice (found on a 12x20 FakeData program: test/programs/amp_logfile)
        ctx.report(call, {
          message: `\`${call.text}\` resizes the shorter side and keeps the aspect ratio: images of different shapes give batches of different shapes; add a fixed crop or resize to \`(H, W)\``,
          fix: null,
        });
        continue;
      }

      // pad_sequence / max(len(...) for ...) in collate functions: one finding per function (each padded field is the same problem)
      if (inside(call, collates)) {
        // each padded field is its own edit (pad it to a fixed length): one finding per line
        const related: { start: number; end: number; message: string }[] = [];
        if (q === 'torch.nn.utils.rnn.pad_sequence') {
          padFindings.push({ at: call, message: '`pad_sequence` in a collate function pads to the longest sequence of each batch: every new length compiles a new graph; pad to a fixed length or to a few fixed buckets instead', related });
        } else if (maxNamed(fnText) && batchMax(ctx, call)) {
          // max(len(x) for x in xs): (call arguments: (generator_expression …))
          const t = call.text.replace(/\s+/g, ' ');
          const fnName = ctx.sema.enclosingFunction(call)?.childForFieldName('name')?.text ?? '';
          const fnNode = ctx.sema.enclosingFunction(call);
          const where = fnNode && builders.some((b) => b.id === fnNode.id) ? `in \`${fnName}()\`, which builds each training batch,` : /collat|__call__/i.test(fnName) || !fnName ? 'in a collate function' : `in \`${fnName}()\`, which the collate function calls,`;
          padFindings.push({ at: call, message: `\`${t.length > 40 ? t.slice(0, 37) + '…' : t}\` ${where} sizes each batch by its longest item: every new length compiles a new graph; pad to a fixed length or to a few fixed buckets instead`, related });
        }
      }
    }

    // reported once the related locations (the other padded fields of the same function) are all known
    for (const f of padFindings) ctx.report(f.at, { message: f.message, fix: null, related: f.related });

    // `max_len = lengths[0]` after `lengths, idx = torch.sort(torch.LongTensor([len(x[0]) for x in batch]), descending=True)` (tacotron2),
    // or `max_len = max([x[1].size(1) for x in batch])` handled above: the padded size is each batch's longest item
    for (const a of ctx.sema.nodes('assignment')) {
      if (!inside(a, collates)) continue;
      const right = a.childForFieldName('right');
      if (right?.type !== 'subscript' || right.childForFieldName('subscript')?.text !== '0') continue;
      const base = right.childForFieldName('value');
      if (base?.type !== 'identifier') continue;
      const fn = ctx.sema.enclosingFunction(a);
      const sorted = ctx.sema.nodes('assignment').some((b) => {
        if (ctx.sema.enclosingFunction(b)?.id !== fn?.id) return false;
        const l = b.childForFieldName('left');
        const r = b.childForFieldName('right');
        const first = l?.type === 'pattern_list' || l?.type === 'tuple_pattern' ? l.namedChildren[0] : l;
        return first?.text === base.text && r?.type === 'call' && /^torch\.sort$/.test(ctx.sema.callee(r) ?? '') && /descending\s*=\s*True/.test(r.text) && /\blen\(|\.size\(|\.shape\b/.test(r.text);
      });
      if (!sorted) continue;
      ctx.report(a, { message: `\`${a.text.length > 40 ? a.text.slice(0, 37) + '…' : a.text}\` takes the longest item of each batch as the padded size: every new length compiles a new graph; pad to a fixed (or bucketed) length`, fix: null });
    }
    // speechbrain: `wavs, wav_lens = batch.sig` (PaddedBatch pads each key to the batch's longest item; the lens are relative), DynamicBatchSampler
    if (ctx.sema.imports('speechbrain')) {
      // one finding per file: where the padded batch moves to the device in a `Brain` method (`batch = batch.to(self.device)`),
      // else the first `wavs, wav_lens = batch.sig` unpack
      const inBrain = (n: Node) => /\bBrain\b/.test(ctx.sema.enclosingClass(n)?.childForFieldName('superclasses')?.text ?? '');
      const move = ctx.sema.nodes('call').find((c) => c.childForFieldName('function')?.text === 'batch.to' && inBrain(c));
      const unpack = ctx.sema.nodes('assignment').find((a) => {
        const l = a.childForFieldName('left');
        const r = a.childForFieldName('right');
        return (l?.type === 'pattern_list' || l?.type === 'tuple_pattern') && l.namedChildren.length === 2 && r?.type === 'attribute' &&
          r.childForFieldName('object')?.text === 'batch' && /lens?$/.test(l.namedChildren[1]?.text ?? '');
      });
      const at = move ?? unpack;
      if (at) {
        ctx.report(at, {
          severity: sevAt(at),
          message: `\`${short(at.text)}\`: speechbrain's PaddedBatch pads every key to the longest item of its batch (the \`*_lens\` are relative lengths): every new length compiles a new graph; bucket lengths or pad to a fixed size`,
          fix: null,
        });
      }
      // the training sampler (the first one); a validation sampler is the same choice
      const sampler = ctx.sema.nodes('call').find((c) => /(^|\.)DynamicBatchSampler$/.test(ctx.sema.callee(c) ?? c.childForFieldName('function')?.text ?? ''));
      if (sampler) ctx.report(sampler, { message: '`DynamicBatchSampler` varies both the batch size and the padded length from batch to batch: each combination compiles a new graph; use a fixed batch size and fixed length buckets on TPU', fix: null });
    }

    // `data = source[i:i+bptt]` on a device tensor, `i` the step loop's counter (here or at the helper's call sites): the
    // slice bounds are constants of the traced graph (torch_xla v2.9.0 ops/select.cpp: the Select node hashes
    // (dim, start, end, stride) and lowers to xla::SliceInDim with them), so every new offset compiles a new graph
    const stepLoops = ctx.sema.hotLoops().filter((h) => h.kind === 'train' || h.kind === 'eval').map((h) => h.anchor);
    const within = (outer: Node, n: Node) => n.startIndex >= outer.startIndex && n.endIndex <= outer.endIndex;
    const steppedBy = (id: Node, at: Node, depth: number): boolean => {
      const name = id.text;
      const loops = stepLoops.filter((l) => l.type === 'for_statement' && within(l, at));
      // the counter of a step loop around the slice: `for i in range(0, n, bptt)` / `for batch, i in enumerate(range(...))`
      // A range loop nested in a loop over a loader splits one batch (micro-batches, `for i in range(0, x.shape[0], 2)`):
      // the same offsets every step, one graph
      const inLoaderLoop = (l: Node) => stepLoops.some((o) => o.id !== l.id && within(o, l) && ctx.sema.iteratesLoader(o));
      if (loops.some((l) => /^(enumerate\()?range\(/.test(l.childForFieldName('right')?.text ?? '') && !inLoaderLoop(l) && (l.childForFieldName('left')?.descendantsOfType('identifier') ?? []).some((x) => x?.text === name))) return true;
      // a cursor moved in the step (`p += seq_length`) and set only before the step loops: a cursor reset inside them
      // (`idx = 0` at the top of each update) walks the same offsets every step
      const steps = stepLoops.filter((l) => within(l, at));
      const fn0 = ctx.sema.enclosingFunction(at);
      const resets = ctx.sema.nodes('assignment').filter((a) => a.childForFieldName('left')?.text === name && ctx.sema.enclosingFunction(a)?.id === fn0?.id);
      if (steps.some((l) => l.descendantsOfType('augmented_assignment').some((a) => a?.childForFieldName('left')?.text === name)) && !resets.some((r) => steps.some((l) => within(l, r)))) return true;
      // a parameter of the helper the step calls with its counter: `get_batch(train_data, i)`
      const fn = ctx.sema.enclosingFunction(at);
      if (depth > 0 || !fn) return false;
      const param = (fn.childForFieldName('parameters')?.namedChildren ?? []).find((x) => x?.type === 'identifier' && x.text === name);
      if (!param) return false;
      const { args } = ctx.model.argumentsFor(fn, param);
      return args.length > 0 && args.every((a) => a.type === 'identifier' && steppedBy(a, a, 1));
    };
    // `seq_len = min(args.bptt, len(source) - 1 - i)` … `source[i:i+seq_len]` (word_language_model get_batch): the tail chunk is shorter
    const tailBound = (n: Node) => n.type === 'call' && n.childForFieldName('function')?.text === 'min' && /\blen\(|\.size\(/.test(n.text) && /-/.test(n.text);
    const tailReported = new Set<number>();
    for (const sub of ctx.sema.nodes('subscript')) {
      if (!ctx.sema.hot(sub)) continue;
      const slice = sub.namedChildren.find((c) => c?.type === 'slice');
      if (!slice) continue;
      const fn = ctx.sema.enclosingFunction(sub);
      const local = (v: Node) => (ctx.sema.enclosingFunction(v)?.id ?? -1) === (fn?.id ?? -1);
      const bound = slice.descendantsOfType('identifier').find((id) => {
        if (!id) return false;
        const values = ctx.sema.bindings(id.text).filter(local);
        return values.length > 0 && values.every(tailBound);
      });
      const inline = slice.descendantsOfType('call').find((c) => !!c && tailBound(c));
      if ((!bound && !inline) || tailReported.has(fn?.id ?? -1)) continue;
      tailReported.add(fn?.id ?? -1);
      const def = bound ? ctx.sema.bindings(bound.text).find(local) : null;
      const cut = def && bound ? `${bound.text} = ${def.text}` : inline!.text;
      // the same slice at an offset that moves every step: one finding that says both
      const obj = sub.childForFieldName('value');
      const counter = obj && ctx.model.isDeviceTensor(obj, true) ? slice.descendantsOfType('identifier').find((id): id is Node => !!id && steppedBy(id, sub, 0)) : undefined;
      const offsets = counter ? `; its offset \`${counter.text}\` also moves every step and slice bounds are constants of the graph, so slice the CPU copy and move the batch` : '';
      ctx.report(sub, {
        severity: sevAt(sub),
        message: `\`${sub.text.length > 40 ? sub.text.slice(0, 37) + '…' : sub.text}\` is cut by \`${cut.length > 50 ? cut.slice(0, 47) + '…' : cut}\`: the last chunk is shorter and its shape compiles another graph; drop the tail or pad it to the full length${offsets}`,
        fix: null,
      });
    }

    const offsetReported = new Set<number>();
    for (const sub of ctx.sema.nodes('subscript')) {
      if (!ctx.sema.hot(sub)) continue;
      const slice = sub.namedChildren.find((c) => c?.type === 'slice');
      const obj = sub.childForFieldName('value');
      if (!slice || !obj || !ctx.model.isDeviceTensor(obj, true)) continue;
      const fnId = ctx.sema.enclosingFunction(sub)?.id ?? -1;
      if (tailReported.has(fnId) || offsetReported.has(fnId)) continue;
      const counter = slice.descendantsOfType('identifier').find((id): id is Node => !!id && steppedBy(id, sub, 0));
      if (!counter) continue;
      offsetReported.add(fnId);
      ctx.report(sub, {
        severity: sevAt(sub),
        message: `\`${short(sub.text)}\` slices a device tensor at \`${counter.text}\`, which moves every step: slice bounds are constants of the traced graph, so each offset compiles a new graph; slice the CPU copy and move the batch (\`cpu_data[${counter.text}:…].to(device)\`), or index with a position tensor (\`index_select\`)`,
        fix: null,
      });
    }

    // `for i, (imgs, targets, paths, _) in pbar` over a loader whose collate function returns `torch.cat(label, 0)` at
    // the position of `targets` (here or in the project module that builds the loader): report where the step moves it
    for (const info of ctx.sema.hotLoops()) {
      const loop = info.anchor;
      if (loop.type !== 'for_statement' || info.kind !== 'train') continue;
      const found = concatenatedTarget(ctx, loop);
      if (!found) continue;
      const move = ctx.sema.within('call', loop.childForFieldName('body') ?? loop).find((c) => /^(to|cuda)$/.test(methodName(c) ?? '') && receiver(c)?.text === found.name);
      if (!move) continue;
      ctx.report(move, {
        message: `\`${found.name}\` is \`${short(found.cat.text)}\` of the batch's per-sample labels (collate function \`${found.fnName}\`): one row per object, so its length changes from batch to batch and every tensor built from it in the loss compiles a new graph; pad the labels to a fixed maximum number of objects per image with a validity mask`,
        related: [{ start: found.cat.startIndex, end: found.cat.endIndex, ...(found.path ? { path: found.path } : {}), message: 'the concatenation in the collate function' }],
        fix: null,
      });
    }

    // litgpt's instruction-tuning data modules (Alpaca, Dolly, JSON, …) batch with `get_sft_collate_fn`, which pads each
    // batch to its longest sample (litgpt/data/base.py `_sft_collate_fn`: pad_sequence, then truncation to max_seq_length only)
    const sft = [...ctx.sema.aliases.values()].find((full) => LITGPT_SFT.test(full));
    if (sft) {
      const read = ctx.sema.nodes('subscript').find((sub) => {
        const key = sub.childForFieldName('subscript');
        const hot = key?.type === 'string' && stringContent(key) === 'input_ids' ? ctx.sema.hot(sub) : null;
        return !!hot && hot.kind === 'train' && hot.anchor.type !== 'function_definition';
      });
      if (read) {
        // `batch = next(train_iterator)` in the loop: report where the padded batch is drawn
        const base = read.childForFieldName('value');
        const loop = ctx.sema.hot(read)!.anchor;
        const drawn = base?.type === 'identifier' ? localBindings(ctx, base.text, read).filter((v) => v.startIndex > loop.startIndex && v.type === 'call' && /^next$/.test(v.childForFieldName('function')?.text ?? '')).pop() : undefined;
        ctx.report(drawn ?? read, {
          message: `\`${short(drawn ? `${base!.text} = ${drawn.text}` : read.text)}\` comes from a litgpt instruction-tuning data module (\`${sft.split('.').pop()}\`), whose collate function pads each batch to its longest sample: every new length compiles a new graph; pad to a fixed \`max_seq_length\` (or a few length buckets) on TPU`,
          fix: null,
        });
      }
    }

    // ragged per-sample targets moved to the device in the step (one finding per loop)
    const raggedLoops = new Set<number>();
    for (const clause of ctx.sema.nodes('for_in_clause')) {
      const comp = clause.parent;
      if (!comp) continue;
      const hot = ctx.sema.hot(comp);
      if (!hot || hot.anchor.type === 'function_definition' || raggedLoops.has(hot.anchor.id) || !perSampleDictsMoved(comp)) continue;
      raggedLoops.add(hot.anchor.id);
      ctx.report(comp, {
        severity: sevAt(comp),
        message: `\`${short(comp.text)}\` moves per-sample dicts of tensors that the collate function left unstacked because their sizes differ (detection targets: a different number of objects per image): every tensor computed from them changes shape per batch and compiles a new graph; pad each field to a fixed maximum count with a validity mask in the collate function`,
        fix: null,
      });
    }

    // per-batch truncation to the longest sequence: x[:, :lengths.max()]
    for (const sub of ctx.sema.nodes('subscript')) {
      const hot = ctx.sema.hot(sub);
      if (!hot && !inside(sub, collates)) continue;
      const slices = sub.namedChildren.filter((c) => c?.type === 'slice');
      const bound = slices.find((s) => /\.max\(\)|\bmax\(/.test(s!.text) && /len|mask|length/i.test(s!.text));
      if (!bound) continue;
      ctx.report(sub, {
        severity: hot ? sevAt(sub) : 'warning',
        message: `\`${sub.text.length > 50 ? sub.text.slice(0, 47) + '…' : sub.text}\` truncates each batch to its longest sequence: every length compiles a new graph`,
        fix: null,
      });
    }
  },
});

/**
 * A tokenizer call on one text outside the step: its first argument is a str, or the variable of a loop or
 * comprehension around it that is no hot loop (`for text in strings`), so each call pads a single sequence.
 */
function singleText(ctx: RuleContext, call: Node): boolean {
  if (ctx.sema.hot(call)) return false;
  const arg = callArgs(call).positional[0] ?? kwValue(callArgs(call).keywords.get('text'));
  if (!arg) return false;
  if (arg.type === 'string' || ctx.model.value(arg).kind === 'string') return true;
  if (arg.type !== 'identifier') return false;
  for (let p = call.parent; p && p.type !== 'function_definition' && p.type !== 'module'; p = p.parent) {
    const clauses = p.type === 'list_comprehension' || p.type === 'generator_expression' ? p.namedChildren.filter((c) => c?.type === 'for_in_clause') : p.type === 'for_statement' ? [p] : [];
    for (const c of clauses) {
      const left = c?.childForFieldName('left');
      if (left?.type === 'identifier' && left.text === arg.text) return true;
    }
  }
  return false;
}

/**
 * `padding=self.padding` in a collator class whose field says `padding: Union[bool, str] = True` (a dataclass field, HF's
 * DataCollatorWithPadding pattern) or `self.padding = True`: the value the class gives it, else the expression itself.
 */
function classDefault(ctx: RuleContext, e: Node | null): Node | null {
  if (e?.type !== 'attribute' || e.childForFieldName('object')?.text !== 'self') return e;
  const name = e.childForFieldName('attribute')?.text ?? '';
  const cls = ctx.sema.enclosingClass(e);
  const body = cls?.childForFieldName('body');
  if (!body) return e;
  const values: Node[] = [];
  for (const st of body.namedChildren) {
    const a = st?.type === 'expression_statement' ? st.namedChildren[0] : null;
    if (a?.type === 'assignment' && a.childForFieldName('left')?.text === name) {
      const r = a.childForFieldName('right');
      if (r) values.push(r);
    }
  }
  for (const a of ctx.sema.within('assignment', cls!)) {
    if (a.childForFieldName('left')?.text === `self.${name}`) {
      const r = a.childForFieldName('right');
      if (r && r.type !== 'identifier') values.push(r);
      else return e; // set from a constructor argument: the caller decides
    }
  }
  return values.length === 1 ? values[0] : e;
}

/**
 * Same-file functions that build a training batch by hand (`get_batch(data)`: sample, then pad to the batch's longest
 * item), named for a batch and called in a training loop.
 */
function batchBuilders(ctx: RuleContext): Node[] {
  return ctx.sema.nodes('function_definition').filter((f) => {
    const n = f.childForFieldName('name')?.text ?? '';
    if (!/^(get|make|build|sample|next)_(train_)?batch$|^get_batch_\w+$/.test(n)) return false;
    return ctx.sema.callSitesOf(f).some((c) => ctx.sema.hot(c)?.kind === 'train');
  });
}
