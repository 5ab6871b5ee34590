import { defineRule, type FixDraft, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import type { HotInfo } from '../../core/semantics';
import type { Severity } from '../../core/types';
import { callArgs, methodName, receiver } from '../../core/semantics';
import { replace } from '../../core/edits';
import { generationLoops } from './generation';
import { hostRandomValue } from './random-draw';
import { hostReadOf, hostValue, hotAt, isNmsCall, throttledEvalWork, localBindings, maskIndex, severityIn, short, tensorish, torchName } from './util';

const DYNAMIC_FNS = new Set(['nonzero', 'argwhere', 'masked_select', 'unique', 'unique_consecutive', 'bincount', 'repeat_interleave']);
const FACTORIES = /^torch\.(zeros|ones|empty|full|rand|randn|randint|arange|randperm)$/;
const SHAPE_METHODS = new Set(['view', 'reshape', 'expand', 'narrow', 'new_zeros', 'new_ones', 'new_empty', 'new_full', 'repeat', 'split']);
/**
 * A Python number read from a tensor's value: `n.item()`, `int(n.max())`, or the tensor itself used as a size/bound;
 * through a local name (`max_len = torch.max(lengths).item()` then `arange(max_len)`). Returns the read, else null.
 */
function valueRead(ctx: RuleContext, e: Node | null | undefined, depth = 0): Node | null {
  if (!e || depth > 3) return null;
  if (e.type === 'integer' || e.type === 'identifier' && /^[A-Z_0-9]+$/.test(e.text)) return null;
  // a bare name or arithmetic on names counts only when the model is sure it holds a tensor: a weak guess (a parameter
  // whose callers pass `args.chunk`, `ref_size = reference` on the non-tensor arm) is a Python int more often than not
  if (tensorish(ctx, e, e.type === 'identifier' || e.type === 'binary_operator' || e.type === 'unary_operator' || e.type === 'parenthesized_expression')) return e;
  for (const call of [e, ...ctx.sema.within('call', e)]) {
    if (call.type !== 'call') continue;
    const m = methodName(call);
    const recv = receiver(call);
    if ((m === 'item' || m === 'tolist') && recv && !hostValue(ctx, recv) && tensorish(ctx, recv, false)) return call;
    const fn = call.childForFieldName('function');
    if (fn?.type === 'identifier' && /^(int|float|round)$/.test(fn.text)) {
      const a = callArgs(call).positional[0];
      if (a && tensorish(ctx, a, a.type === 'identifier' || a.type === 'call' && /\.get$/.test(a.childForFieldName('function')?.text ?? ''))) return call;
    }
  }
  // `max_len = lengths.max().item()` … `torch.arange(max_len)`: the last local binding before the use
  // the names the arithmetic reads as values: not `x` of `x.shape[1]` (a static size) nor callee names
  const ids = e.type === 'identifier' ? [e] : e.type === 'binary_operator' ? e.descendantsOfType('identifier').filter((i): i is Node => !!i && i.parent?.type !== 'attribute' && !(i.parent?.type === 'call' && i.parent.childForFieldName('function')?.id === i.id)) : [];
  for (const id of ids) {
    // a cheap text test first: slices and sizes bound to plain Python ints are the common case
    const vals = ctx.sema.bindings(id.text);
    // `end_pos = pos + T_new` with `pos = cache_seqlens[0].item()`: followed through arithmetic on local names
    const chained = (v: Node) => v.type === 'binary_operator' || v.type === 'identifier';
    if (!vals.some((v) => READ_TEXT.test(v.text) || chained(v))) continue;
    const local = localBindings(ctx, id.text, id);
    const last = local[local.length - 1];
    const r = last && (READ_TEXT.test(last.text) || chained(last)) ? valueRead(ctx, last, depth + 1) : null;
    if (r && r.type === 'call') return r;
  }
  // `batch_size_t = sum([l > t for l in decode_lengths])` with `decode_lengths = lengths.tolist()`: a count the batch decides
  return depth ? null : hostReadOf(ctx, e);
}

const READ_TEXT = /\.(item|tolist)\(|\b(int|float|round)\(/;

/** Fields of per-image detection targets (torchvision's `List[Dict[str, Tensor]]` convention): one row per object. */
const DETECTION_FIELDS = /^(boxes|bboxes|bbox|labels|masks|keypoints|classes|gt_boxes|gt_labels|gt_classes|area|iscrowd)$/;

/** `torch.cat([v["boxes"] for v in targets])`: one field of every image's targets, concatenated along the object dim. */
function catOfTargetField(ctx: RuleContext, call: Node): string | null {
  if (!/^torch\.(cat|concat|concatenate)$/.test(ctx.sema.callee(call) ?? '')) return null;
  const { positional, keywords } = callArgs(call);
  const dim = positional[1] ?? keywords.get('dim')?.childForFieldName('value');
  if (dim && dim.text !== '0') return null;
  const comp = positional[0];
  if (comp?.type !== 'list_comprehension' && comp?.type !== 'generator_expression') return null;
  const body = comp.childForFieldName('body');
  const clause = comp.namedChildren.find((c) => c?.type === 'for_in_clause');
  const loopVar = clause?.childForFieldName('left');
  if (body?.type !== 'subscript' || loopVar?.type !== 'identifier' || body.childForFieldName('value')?.text !== loopVar.text) return null;
  const key = body.childForFieldName('subscript');
  const field = key?.type === 'string' ? key.text.slice(1, -1) : null;
  return field && DETECTION_FIELDS.test(field) ? field : null;
}

export default defineRule({
  id: 'TPU203',
  name: 'dynamic-shape-op',
  title: 'Dynamic-shape ops and shapes derived from tensor values',
  severity: 'warning',
  step: 6,
  effort: 3,
  message: 'This op produces a shape that depends on tensor values: each new shape compiles a new graph',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Compute with a static-shape mask' },
  deviceWork: true,
  triggers: ['nonzero', 'argwhere', 'masked_select', 'unique', 'bincount', 'repeat_interleave', 'where', '[', '.item(', 'int('],
  docs: {
    what:
      'Checks, in a hot loop or `forward` (and, for the ops below, in a helper whose `torch.Tensor` parameter is the operand and that builds tensors on that parameter\'s `.device`: device code whoever calls it), for ops whose output shape depends on tensor values: `torch.nonzero`/`Tensor.nonzero` (also `as_tuple=True`), ' +
      '`torch.argwhere`, one-argument `torch.where(cond)`, `masked_select`, `unique`/`unique_consecutive`, `repeat_interleave` with a tensor of repeats, ' +
      '`bincount`; slice writes bounded by a Python int read from a tensor (`ptr = int(self.queue_ptr)` then `self.queue[:, ptr:ptr + n] = keys.T`, a MoCo-style queue in registered buffers: one graph per offset, even at a fixed length); slices bounded by a count folded from a host list read from a tensor (`ends = lengths.tolist()`, `live = sum([n > t for n in ends])`, then `h[:live]`; the slices of one function bounded by the same name are one finding, the others related locations); boolean-mask reads (`y = x[mask]`, `x[x > 0].mean()`); and shapes built from values (`torch.zeros(int(n.max()))`, ' +
      '`x.view(k.item(), -1)`, `x[:lengths.max()]`; through a local name, `max_len = torch.max(lengths).item()` then `torch.arange(max_len)`, reported at the read with the sized tensor as a related location); ' +
      'data-dependent counts: non-maximum suppression (`torchvision.ops.nms`/`batched_nms`, a `non_max_suppression` helper), boolean-mask reads with slices beside the mask (`t[t[:, 0] == i, 1:]`), ' +
      'and one field of per-image detection targets joined along the object dim (`torch.cat([t["boxes"] for t in targets])`, torchvision\'s `List[Dict[str, Tensor]]` convention; once per function). ' +
      '`unique`/`nonzero` over a CPU tensor of Python ints (`torch.tensor([x.shape[-1] for x in crops])`) never reaches the device and is not flagged. ' +
      'Boolean-mask writes and updates on a device tensor (`logits[logits < v] = -inf`, `l[(u > 0) * (l == u)] -= 1`; a product of two bool tensors is a mask), with the static form (`x.masked_fill_(m, v)`, `x = torch.where(m, x - 1, x)`) in the message; ' +
      'a name the code calls a mask (`out[data.train_mask]`, PyG node masks) indexing a device tensor, unless a binding makes it an index (`mask = idx.long()`); one finding per statement. ' +
      'A mask stays a mask through names and reshapes (`pos = conf_t > 0; pos_idx = pos.unsqueeze(2).expand_as(loc); loc[pos_idx]`, `(pos_idx + neg_idx).gt(0)`: SSD-style detection losses). ' +
      'Slices of a device tensor whose bounds are drawn by Python/NumPy randomness, directly, through local names or a same-file helper that draws (`x1, y1, x2, y2 = rand_bbox(x.size(), lam)` then `x[:, :, x1:x2, y1:y2]`: CutMix boxes, random crops of a device batch); a random offset with a fixed length (`x[:, :, t:t + S]`) keeps the shape and is not flagged. ' +
      'Decode code: a read of a KV cache (a tensor named `*cache*`) sliced up to a position (`self.cache_k[:bsz, :start_pos + seqlen]`, `k_cache[:, :end]` with `end = pos + T`, `pos = seqlens[0].item()`; once per function, the other reads as related locations; a bound taken from the input\'s own shape is static and not flagged), ' +
      'and the model\'s input sliced at a decode loop\'s position (`model.forward(tokens[:, prev:cur], prev)`, info); mask ops inside a decode loop outside training are info. ' +
      'Three-argument `torch.where`, `masked_fill` and `topk` with a constant `k` are static and not flagged. ' +
      'Loop trip counts from tensor values are TPU205.',
    why:
      '"Direct or indirect uses of `nonzero` introduce dynamic shapes; for example, masked indexing `base[index]` where `index` is a mask tensor" (TS:288-290). ' +
      'XLA compiles for static shapes, so every new output size is a new graph; `nonzero` and `_local_scalar_dense` also appear as `aten::` counters in the ' +
      'metrics report, meaning CPU fallbacks and context switches (TS, "Understand The Metrics Report"). RECOMP §2 describes operator-output dynamism ' +
      'and `torch.unique`; RECOMP §2.2 (recompilation.md:59-65): reading the real size of such a tensor cuts the graph, and a Python int taken from it and fed to other ops is a dynamic source too. ' +
      'The number of boxes NMS keeps and the number of objects in a batch of detection targets are such counts. Bounded dynamic shape (`XLA_EXPERIMENTAL="nonzero:masked_select:masked_scatter"`) is experimental and covers MLP-style models only (DS).',
    example: 'm = x[x > 0].mean()\nloss = F.cross_entropy(logits[mask], labels[mask])',
    useInstead:
      'm = torch.where(x > 0, x, 0).sum() / (x > 0).sum().clamp(min=1)\n' +
      'loss = F.cross_entropy(logits.view(-1, V), labels.masked_fill(~mask, -100).view(-1), ignore_index=-100)\n' +
      '# fixed-size outputs: torch.topk with a constant k, or pad to the static maximum',
    fixSafety:
      'Unsafe. Offered for `v[mask].sum()` and `v[mask].mean()` when the mask is a comparison on `v` itself (same shape): the masked-out elements become 0 ' +
      'and the mean divides by the clamped count, so an empty selection gives 0 instead of NaN; tpu-only style only (dual-path keeps CPU and CUDA results). Other patterns need the rewrites above by hand. ' +
      '`torch.nonzero_static` is not in torch_xla\'s native lowering list (unverified whether it falls back to CPU), so it is not suggested.',
    sources: [
      'TS:288-290 (docs/source/learn/troubleshoot.md: nonzero and masked indexing introduce dynamic shapes)',
      'TS "Understand The Metrics Report" (aten:: counters mean CPU fallback)',
      'RECOMP §2 (docs/source/perf/recompilation.md, operator-output dynamism), §2.2 (recompilation.md:59-65, querying the real size of a dynamic tensor; :65, a Python int fed to other ops is a dynamic source: a slice bound is a constant of the traced graph)',
      'torchvision detection targets: torchvision/models/detection/generalized_rcnn.py (targets: List[Dict[str, Tensor]], one row per object in `boxes`)',
      'DS (docs/source/learn/dynamic_shape.md, bounded dynamic shape is experimental)',
      'torch_xla/csrc/ops/index_ops.cpp:50-77 (ExpandByteTensors: a bool/byte mask index is replaced by `index->nonzero()`), :259-266 (GetCanonicalIndexInfo calls it for every index and index_put_)',
      'torch_xla/csrc/ops/select.cpp, unselect.cpp (Select and Unselect, a slice read and a slice write, hash `MHash(dim, start, end, stride)`: each slice offset is a different graph)',
      'torch_xla/csrc/aten_xla_type.cpp:2070-2087 (XLANativeFunctions::index_put_ → GetCanonicalIndexInfo), :2839-2847 (nonzero falls back to the CPU unless the experimental "nonzero" lowering is on)',
    ],
    torchtpu: 'The masked-sum rewrite is plain PyTorch and is offered on the torchtpu preview too; static shapes matter there as well (torch.compile(..., dynamic=False)).',
  },
  check(ctx) {
    const catReported = new Set<number>();
    const readReported = new Set<number>();
    const report = (at: Node, what: string, fix: FixDraft | null = null, operand?: Node | null, advice?: string) => {
      const hot = hotAt(ctx, at) ?? (operand ? deviceHelper(ctx, at, operand) : null) ?? decodeStep(ctx, at);
      if (!hot || throttledEvalWork(ctx, at, hot)) return;
      ctx.report(at, {
        severity: severityIn('warning', hot),
        message: `${what}: the shape depends on tensor values, so each new size compiles a new graph${hot.anchor.type === 'function_definition' ? '' : ' in this loop'}${advice ? `; ${advice}` : ''}`,
        fix,
      });
    };

    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      const meth = methodName(call);
      const { positional, keywords } = callArgs(call);
      // torch.nonzero(x), x.nonzero(), torch.unique(x), ...
      const fnName = callee.startsWith('torch.') ? callee.slice(6) : null;
      if (fnName && DYNAMIC_FNS.has(fnName)) {
        if (fnName === 'repeat_interleave' && !(positional[1] && tensorish(ctx, positional[1], false))) continue;
        // `torch.unique_consecutive(torch.tensor([x.shape[-1] for x in crops]))`: a CPU tensor of Python ints, never on the device
        if (positional[0] && hostValue(ctx, positional[0])) continue;
        report(call, `\`${short(call.text, 40)}\``, null, positional[0]);
        continue;
      }
      if (callee === 'torch.where' && positional.length === 1 && keywords.size === 0) {
        report(call, `One-argument \`${short(call.text, 40)}\` (same as nonzero)`);
        continue;
      }
      if (!callee && meth && DYNAMIC_FNS.has(meth)) {
        const recv = receiver(call);
        if (!recv || hostValue(ctx, recv) || !tensorish(ctx, recv, false)) continue;
        if (meth === 'repeat_interleave' && !(positional[0] && positional[0].type !== 'integer' && tensorish(ctx, positional[0], false))) continue;
        report(call, `\`${short(call.text, 40)}\``, null, recv);
        continue;
      }
      if (isNmsCall(ctx, call)) {
        const hot = hotAt(ctx, call);
        if (hot) {
          ctx.report(call, {
            severity: severityIn('warning', hot),
            message: `Non-maximum suppression \`${short(call.text, 36)}\` keeps a data-dependent number of boxes: every tensor built from its output gets a new shape per batch and compiles a new graph; keep a fixed number of top-scoring boxes (\`topk\` with a constant k) with a validity mask, or run NMS on the host after the step`,
          });
        }
        continue;
      }
      const field = catOfTargetField(ctx, call);
      if (field) {
        const fn = ctx.sema.enclosingFunction(call)?.id ?? -1;
        if (catReported.has(fn)) continue;
        const hot = hotAt(ctx, call);
        if (!hot) continue;
        catReported.add(fn);
        ctx.report(call, {
          severity: severityIn('warning', hot),
          message: `\`${short(call.text, 40)}\` joins every image's \`${field}\`: its length is the batch's total number of objects, which changes from batch to batch, so each tensor built from it (cost matrix, losses) compiles a new graph; pad the targets to a fixed maximum number of objects per image with a validity mask`,
        });
        continue;
      }
      // torch.zeros(int(n.max())), x.view(k.item(), -1)
      const sizeArgs = sizeArguments(FACTORIES.test(callee) ? callee.slice(6) : !callee && meth && SHAPE_METHODS.has(meth) && tensorish(ctx, receiver(call), false) ? meth : null, positional);
      let read: Node | null = null;
      const derived = sizeArgs.find((a) => (read = valueRead(ctx, a)));
      if (!derived || !read) continue;
      const r = read as Node;
      const line = ctx.text.slice(0, call.startIndex).split('\n').length;
      if (r.startIndex >= call.startIndex && r.endIndex <= call.endIndex) report(call, `\`${short(call.text, 40)}\` takes its size from \`${short(derived.text, 24)}\``);
      else {
        // the read happens earlier (`max_len = torch.max(lengths).item()`): report it there, where the fixed size belongs
        const hot = hotAt(ctx, r);
        if (!hot || readReported.has(r.id)) continue;
        readReported.add(r.id);
        ctx.report(r, {
          severity: severityIn('warning', hot),
          message: `\`${short(r.text, 36)}\` reads a tensor value to the host (the graph runs early) and \`${short(call.text, 36)}\` (line ${line}) takes its size from it: every new value is a new shape and compiles a new graph; size it with a fixed maximum (pad to it) and mask`,
          related: [{ start: call.startIndex, end: call.endIndex, message: 'the tensor sized by the value read' }],
        });
      }
    }

    // one finding per statement: `F.cross_entropy(out[mask], y[mask])` is one problem (the mask's count)
    const maskStatements = new Set<number>();
    const firstInStatement = (sub: Node) => {
      let st: Node | null = sub;
      while (st && !/statement$/.test(st.type)) st = st.parent;
      const key = st?.id ?? sub.id;
      if (maskStatements.has(key)) return false;
      maskStatements.add(key);
      return true;
    };
    // decode loops (graph/generation.ts): the model's input sliced at the loop's position (`tokens[:, prev_pos:cur_pos]`)
    const decodeSlices = new Set<number>();
    const cacheReported = new Map<number, { start: number; end: number; message: string }[]>();
    const cacheFindings: { at: Node; related: { start: number; end: number; message: string }[]; severity: Severity; message: string }[] = [];
    // slices of one function bounded by the same read value (`h[:batch_size_t]`, `embeddings[:batch_size_t, t]`, a write
    // `preds[:batch_size_t, t] = ...`): one problem, reported once with the other slices as related locations
    const boundReported = new Map<string, { start: number; end: number; message: string }[]>();
    const reportBound = (sub: Node, bound: Node, hot: HotInfo, message: string) => {
      const key = `${ctx.sema.enclosingFunction(sub)?.id ?? -1}:${bound.text}`;
      const first = boundReported.get(key);
      if (first) {
        first.push({ start: sub.startIndex, end: sub.endIndex, message: `another slice bounded by \`${short(bound.text, 20)}\`` });
        return;
      }
      const related: { start: number; end: number; message: string }[] = [];
      boundReported.set(key, related);
      cacheFindings.push({ at: sub, related, severity: severityIn('warning', hot), message });
    };
    for (const g of generationLoops(ctx)) {
      const target = g.loop.type === 'for_statement' ? g.loop.childForFieldName('left') : null;
      if (target?.type !== 'identifier') continue;
      const args = g.model.childForFieldName('arguments');
      const sub = args ? ctx.sema.within('subscript', args).find((s) => {
        const bounds = s.childrenForFieldName('subscript').filter((i) => i?.type === 'slice').flatMap((i) => ctx.sema.within('identifier', i!));
        return bounds.some((b) => b.text === target.text) && tensorish(ctx, s.childForFieldName('value'), false);
      }) : undefined;
      if (!sub) continue;
      decodeSlices.add(sub.id);
      ctx.report(sub, {
        severity: 'info',
        message: `\`${short(sub.text, 40)}\` slices the model's input at the decode position \`${target.text}\`: its length (or the attention cache length behind it) changes every step, and each new shape compiles a new graph; decode into a fixed-size buffer (static KV cache) with a position index and a mask`,
      });
    }
    const randomReported = new Set<number>();
    for (const sub of ctx.sema.nodes('subscript')) {
      if (decodeSlices.has(sub.id)) continue;
      const value = sub.childForFieldName('value');
      const indexes = sub.childrenForFieldName('subscript').filter((n): n is Node => !!n);
      if (!value || !indexes.length) continue;
      // `x[:, :, y1:y2, x1:x2]` with bounds drawn by `np.random` (CutMix boxes, random crops of a device batch): a new size every step
      const drawn = randomSliceBound(ctx, indexes);
      if (drawn && tensorish(ctx, value, false)) {
        const hot = hotAt(ctx, sub);
        if (hot && !throttledEvalWork(ctx, sub, hot) && !randomReported.has(drawn.stmt.id)) {
          randomReported.add(drawn.stmt.id);
          ctx.report(sub, {
            severity: severityIn('warning', hot),
            message: `Slice \`${short(sub.text, 40)}\` has bounds drawn at random on the host (\`${short(drawn.draw.text, 30)}\`): the bounds are constants of the traced graph and the slice's size changes every step, so each step compiles a new graph; keep the size fixed (a fixed-size box at a random offset, or a 0/1 mask built on the device)`,
          });
        }
        continue;
      }
      if (isWriteTarget(sub)) {
        // `x[mask] = v`, `l[mask] -= 1`: index_put_ with a bool mask; torch_xla expands the mask with `nonzero()`
        // (torch_xla/csrc/ops/index_ops.cpp:50-77 ExpandByteTensors, called by GetCanonicalIndexInfo at :259-266 from
        // XLANativeFunctions::index_put_, aten_xla_type.cpp:2070-2087), a data-dependent shape
        const mask = indexes.length === 1 ? maskIndex(ctx, sub) : null;
        if (!mask) {
          // `ptr = int(self.queue_ptr)` then `self.queue[:, ptr:ptr + bs] = keys.T` (MoCo's queue): the bound is a Python
          // int read from the device, baked into the graph as a constant slice offset (torch_xla's Select and Unselect IR
          // nodes, the slice read and write, hash dim/start/end/stride), so each new offset is a new graph even when the length is fixed
          const bound = indexes.flatMap((i) => (i.type === 'slice' ? i.namedChildren.filter((c): c is Node => !!c) : [])).map((b) => ({ b, read: valueRead(ctx, b) })).find((r) => r.read);
          const hot = bound && tensorish(ctx, value, false) ? hotAt(ctx, sub) : null;
          if (bound && hot && !throttledEvalWork(ctx, sub, hot) && firstInStatement(sub)) {
            reportBound(sub, bound.b, hot,
              `Slice write \`${short(sub.text, 40)}\` is bounded by \`${short(bound.b.text, 20)}\`, ${bound.read!.id === bound.b.id ? 'a tensor' : `a value read from a tensor (\`${short(bound.read!.text, 30)}\`)`}: the bound is a constant of the traced graph, so each new value compiles a new graph (and the read syncs the host every step); keep the index on the device and write with \`index_copy_\` over \`(ptr + torch.arange(n, device=...)) % size\``);
          }
          continue;
        }
        if (!tensorish(ctx, value, false) || !(hotAt(ctx, sub) ?? decodeStep(ctx, sub)) || !firstInStatement(sub)) continue;
        report(sub, `Boolean-mask ${sub.parent?.type === 'augmented_assignment' ? 'update' : 'write'} \`${short(sub.parent!.text, 40)}\` (index_put with a bool mask: ${ctx.idiom.profile === 'torchtpu' ? 'PyTorch' : 'torch_xla'} turns the mask into \`nonzero()\` indices)`, null, null, maskWriteAdvice(sub.parent!, value, mask));
        continue;
      }
      const pos = cacheReadBound(ctx, sub, value, indexes);
      if (pos) {
        // keys and values of one cache are one problem: once per function, the other reads as related locations
        const fnKey = ctx.sema.enclosingFunction(sub)?.id ?? -1;
        const first = cacheReported.get(fnKey);
        if (first) {
          first.push({ start: sub.startIndex, end: sub.endIndex, message: 'another read of the cache up to the same position' });
          continue;
        }
        const related: { start: number; end: number; message: string }[] = [];
        cacheReported.set(fnKey, related);
        const hot = hotAt(ctx, sub);
        cacheFindings.push({
          at: sub,
          related,
          severity: hot ? severityIn('warning', hot) : 'info',
          message: `\`${short(sub.text, 40)}\` reads the cache up to the decode position \`${short(pos.text, 24)}\`: its length grows every step, and each new length (a constant in the traced graph) compiles a new graph; attend over the whole fixed-size cache with a mask of the filled positions (static KV cache)`,
        });
        continue;
      }
      // x[:lengths.max()], x[:, :n.item()]
      const slice = indexes.flatMap((i) => (i.type === 'slice' ? i.namedChildren.filter((c): c is Node => !!c) : [])).find((b) => valueRead(ctx, b));
      if (slice && tensorish(ctx, value, false)) {
        const hot = hotAt(ctx, sub) ?? decodeStep(ctx, sub);
        if (hot && !throttledEvalWork(ctx, sub, hot)) reportBound(sub, slice, hot, `Slice \`${short(sub.text, 40)}\` ends at a tensor value: the shape depends on tensor values, so each new size compiles a new graph${hot.anchor.type === 'function_definition' ? '' : ' in this loop'}`);
        continue;
      }
      const mask = maskIndex(ctx, sub);
      if (!mask) continue;
      // a name the code calls a mask (`out[data.train_mask]`) counts only on an accelerator tensor
      if ((mask.type === 'identifier' || mask.type === 'attribute') && !tensorish(ctx, value, false)) continue;
      if (!firstInStatement(sub)) continue;
      report(sub, `Boolean-mask read \`${short(sub.text, 40)}\``, indexes.length === 1 ? maskedReduceFix(ctx, sub, value, mask) : null);
    }
    // once the other reads of the same cache (keys and values) are known as related locations
    for (const f of cacheFindings) ctx.report(f.at, { severity: f.severity, message: f.message, related: f.related });
  },
});

/**
 * `self.cache_k[:bsz, : start_pos + seqlen]`, `k_cache[:, :end_pos]`: a read of a KV cache (a tensor the code names a
 * cache) whose slice ends at a position: a parameter of the function (`start_pos: int`) or a local computed from one
 * or from a value read (`pos = cache_seqlens[0].item()`), not a size of the inputs (`seqlen` from `x.shape` is static
 * in training). Returns the bound, else null.
 */
function cacheReadBound(ctx: RuleContext, sub: Node, value: Node, indexes: readonly Node[]): Node | null {
  const name = value.type === 'attribute' ? value.childForFieldName('attribute')?.text ?? '' : value.type === 'identifier' ? value.text : '';
  if (!/cache/i.test(name)) return null;
  const fn = ctx.sema.enclosingFunction(sub);
  if (!fn) return null;
  const params = new Set((fn.childForFieldName('parameters')?.namedChildren ?? []).map((p) => (p?.type === 'identifier' ? p.text : p?.childForFieldName('name')?.text ?? p?.namedChildren[0]?.text ?? '')).filter((n) => n && n !== 'self'));
  const positional = (id: Node, depth: number): boolean => {
    if (depth > 3) return false;
    const local = localBindings(ctx, id.text, id);
    const last = local[local.length - 1];
    if (!last) return params.has(id.text);
    if (/\.(shape|size\()|\blen\(/.test(last.text)) return false;
    if (READ_TEXT.test(last.text)) return true;
    const ids = last.type === 'identifier' ? [last] : last.type === 'binary_operator' ? ctx.sema.within('identifier', last) : [];
    return ids.some((i) => positional(i, depth + 1));
  };
  for (const i of indexes) {
    if (i.type !== 'slice') continue;
    const stop = i.namedChildren.filter((c): c is Node => !!c).pop();
    if (!stop || i.text.trimEnd().endsWith(':')) continue;
    const ids = stop.type === 'identifier' ? [stop] : stop.type === 'binary_operator' ? ctx.sema.within('identifier', stop) : [];
    const hit = ids.find((id) => positional(id, 0));
    if (hit) return hit;
  }
  return null;
}

/**
 * A slice bound of `indexes` drawn by Python/NumPy randomness (graph/random-draw.ts hostRandomValue), when the
 * slice's length can change: both ends drawn, or one end drawn and the other fixed (`x[:, :cut]`). The draw and the
 * statement (one finding per statement: `x[:, :, a:b] = x[idx, :, a:b]`).
 */
function randomSliceBound(ctx: RuleContext, indexes: readonly Node[]): { draw: Node; stmt: Node } | null {
  for (const i of indexes) {
    if (i.type !== 'slice') continue;
    const ends = i.namedChildren.filter((c): c is Node => !!c);
    if (!ends.length || ends.length > 2 || ends.every((b) => b.type === 'integer')) continue;
    const draws = ends.map((b) => (b.type === 'integer' ? null : hostRandomValue(ctx, b)));
    // `x[off:off + SIZE]`: a random offset with a fixed length keeps the shape
    if (ends.length === 2 && draws[0] && draws[1] && fixedLength(ends[0], ends[1])) continue;
    const draw = draws.find((d) => !!d);
    if (!draw) continue;
    let stmt: Node = i;
    while (stmt.parent && !/statement$/.test(stmt.type)) stmt = stmt.parent;
    return { draw, stmt };
  }
  return null;
}

/** `off:off + SIZE` (or `off - n:off`): the slice's length does not depend on the drawn offset. */
function fixedLength(start: Node, stop: Node): boolean {
  if (stop.type !== 'binary_operator') return false;
  const l = stop.childForFieldName('left');
  const r = stop.childForFieldName('right');
  return (l?.text === start.text && !!r && !/random/.test(r.text)) || (r?.text === start.text && !!l && !/random/.test(l.text));
}

/** A step of a decode loop outside training (graph/generation.ts): eval-like work, reported as info. */
function decodeStep(ctx: RuleContext, at: Node): HotInfo | null {
  const g = generationLoops(ctx).find((l) => at.startIndex >= l.body.startIndex && at.endIndex <= l.body.endIndex);
  return g ? { anchor: g.loop, kind: 'eval', throttled: false } : null;
}

/** The static-shape form of a mask write: `x.masked_fill_(m, v)` for a scalar, `x = torch.where(m, x - v, x)` for an update. */
function maskWriteAdvice(stmt: Node, value: Node, mask: Node): string {
  const rhs = stmt.childForFieldName('right');
  const m = short(mask.text, 30);
  const x = short(value.text, 20);
  const r = short(rhs?.text ?? 'v', 20);
  if (stmt.type === 'augmented_assignment') {
    const op = stmt.children.find((c) => c && !c.isNamed && /=$/.test(c.type))?.type.slice(0, -1) ?? '+';
    return `keep the shape static with \`${x} = torch.where(${m}, ${x} ${op} ${r}, ${x})\``;
  }
  const scalar = !!rhs && /^-?(\d|float\(|math\.inf|torch\.finfo|True|False)/.test(rhs.text);
  return scalar ? `keep the shape static with \`${x}.masked_fill_(${m}, ${r})\`` : `keep the shape static with \`torch.where(${m}, <new values>, ${x})\``;
}

/** The positional arguments that set the output size: `full(size, fill)` and `randint([low,] high, size)` take values too. */
function sizeArguments(fn: string | null, positional: readonly Node[]): readonly Node[] {
  if (!fn) return [];
  if (fn === 'full' || fn === 'new_full') return positional.slice(0, 1);
  if (fn === 'randint') return positional.length > 1 ? positional.slice(-1) : [];
  return positional;
}

function isWriteTarget(sub: Node): boolean {
  const p = sub.parent;
  if (!p) return false;
  if ((p.type === 'assignment' || p.type === 'augmented_assignment') && p.childForFieldName('left')?.id === sub.id) return true;
  if (p.type === 'delete_statement') return true;
  return (p.type === 'pattern_list' || p.type === 'tuple_pattern') && p.parent?.type === 'assignment' && p.parent.childForFieldName('left')?.id === p.id;
}

/** `v[v > 0].sum()` → `torch.where(v > 0, v, 0).sum()`; `.mean()` divides by the clamped count. */
function maskedReduceFix(ctx: RuleContext, sub: Node, value: Node, mask: Node): FixDraft | null {
  // dual-path keeps CPU and CUDA results: an empty selection's mean becomes 0 (not NaN) and the sum runs over
  // the zero-filled tensor (another summation order), so the rewrite is tpu-only
  if (ctx.idiom.dualPath) return null;
  const call = sub.parent?.type === 'attribute' ? sub.parent.parent : null;
  if (call?.type !== 'call' || call.childForFieldName('function')?.id !== sub.parent!.id) return null;
  const meth = methodName(call);
  if ((meth !== 'sum' && meth !== 'mean') || callArgs(call).positional.length || callArgs(call).keywords.size) return null;
  const inner = mask.type === 'parenthesized_expression' ? mask.namedChildren[0]! : mask;
  // the mask must have the shape of the value: a comparison on the value itself
  if (inner.type !== 'comparison_operator' || !inner.namedChildren.some((c) => c?.text === value.text)) return null;
  if (/\n/.test(call.text)) return null;
  const torch = torchName(ctx);
  const where = `${torch.name}.where(${inner.text}, ${value.text}, 0)`;
  const text = meth === 'sum' ? `${where}.sum()` : `(${where}.sum() / (${inner.text}).sum().clamp(min=1))`;
  return { title: `Rewrite as a static-shape masked ${meth}`, edits: [replace(call, text)], imports: torch.imports };
}

/**
 * A helper outside any known hot loop that is device code by construction: `x` is a parameter annotated
 * `torch.Tensor` and the helper builds tensors on `x.device` (OLMo's cumulative document lengths over
 * `doc_lens.masked_select(doc_lens != 0)`). Its callers sit in other modules; the op's output size is the data's.
 */
function deviceHelper(ctx: RuleContext, at: Node, operand: Node): HotInfo | null {
  if (operand.type !== 'identifier') return null;
  const fn = ctx.sema.enclosingFunction(at);
  if (!fn || ctx.sema.enclosingFunction(fn)) return null;
  const cls = ctx.sema.enclosingClass(fn);
  if (cls && /Dataset|Sampler|Collat/.test(cls.text.slice(0, cls.text.indexOf(':')))) return null;
  const params = fn.childForFieldName('parameters')?.namedChildren ?? [];
  const param = params.find((p) => p?.type === 'typed_parameter' && p.namedChildren[0]?.text === operand.text);
  if (!param || !/^(torch\.)?Tensor$/.test(param.childForFieldName('type')?.text ?? '')) return null;
  if (!fn.text.includes(`${operand.text}.device`)) return null;
  return { anchor: fn, kind: 'train', throttled: false };
}
