import { defineRule, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, conditionOf, methodName, receiver } from '../../core/semantics';
import { countSize, hostReadOf, hostValue, hotAt, localBindings, severityIn, short, tensorCondition, tensorish } from './util';
import { PY_RANDOM, TORCH_RANDOM, drawnOnHost, lastBinding } from './random-draw';
import { receiver as recvOf } from '../../core/semantics';
import { reportGenerationDynamism, reportPromptShapes } from './generation-report';

const CONSTANT = /^(true|false|none|integer|float|string)$/;
const TIMM_MIXUP = /^timm\.data\.(mixup\.)?Mixup$/;

/** `range(...)` bound read from tensor values or a per-batch length: `t.item()`, `int(t.max())`, `len(x)`, `x.size(1)`, `x.shape[1]`. */
function dynamicBound(ctx: RuleContext, e: Node): string | null {
  // strict: a parameter of a hot function known only by convention (`max_new_tokens`) is a Python int here
  if (tensorish(ctx, e, true)) return 'a tensor value';
  for (const n of [e, ...ctx.sema.within('call', e), ...ctx.sema.within('subscript', e)]) {
    if (n.type === 'call') {
      const m = methodName(n);
      const recv = receiver(n);
      if ((m === 'item' || m === 'tolist') && recv && !hostValue(ctx, recv) && tensorish(ctx, recv, false)) return 'a tensor value';
      if (m === 'size' && recv && callArgs(n).positional.length === 1 && tensorish(ctx, recv, false)) return 'a per-batch size';
      const fn = n.childForFieldName('function');
      if (fn?.type === 'identifier' && /^(int|round|len|max)$/.test(fn.text)) {
        const a = callArgs(n).positional[0];
        if (a && callArgs(n).positional.length === 1 && tensorish(ctx, a, false)) return fn.text === 'len' ? 'a per-batch length' : 'a tensor value';
      }
    } else if (n.type === 'subscript') {
      const v = n.childForFieldName('value');
      if (v?.type === 'attribute' && v.childForFieldName('attribute')?.text === 'shape' && tensorish(ctx, v.childForFieldName('object'), false)) return 'a per-batch size';
    }
  }
  if (e.type === 'identifier' && boundSize(ctx, e)) return 'a per-batch size';
  // `decode_lengths = (lengths - 1).tolist()` then `range(max(decode_lengths))`: the longest caption of this batch
  return hostReadOf(ctx, e) ? 'a tensor value' : null;
}

/**
 * `batch_size, _, steps = m.size()` (or `= m.shape`, `steps = m.size(2)`) earlier in the same function: the name
 * holds a size of this batch past the leading dim (the leading one is the loader's batch size, see below).
 */
function boundSize(ctx: RuleContext, id: Node): string | null {
  const fn = ctx.sema.enclosingFunction(id);
  if (!fn) return null;
  let found: string | null = null;
  for (const a of ctx.sema.within('assignment', fn)) {
    if (a.startIndex >= id.startIndex || ctx.sema.enclosingFunction(a)?.id !== fn.id) continue;
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (!left || !right) continue;
    if (left.type === 'identifier' && left.text === id.text) {
      // the last binding before the loop decides
      found = right.type === 'call' || right.type === 'subscript' ? (dynamicBound(ctx, right) === 'a per-batch size' && !leadingDim(right) ? 'a per-batch size' : null) : null;
      continue;
    }
    if (left.type !== 'pattern_list' && left.type !== 'tuple_pattern') continue;
    const pos = left.namedChildren.findIndex((c) => c?.type === 'identifier' && c.text === id.text);
    if (pos < 0) continue;
    const whole = right.type === 'call' && methodName(right) === 'size' && !callArgs(right).positional.length ? receiver(right) : right.type === 'attribute' && right.childForFieldName('attribute')?.text === 'shape' ? right.childForFieldName('object') : null;
    // (B, C, T) features (mel frames, audio): the time dim follows the data; a (B, T) token batch (`b, t = idx.size()`)
    // is usually cut to a fixed block size by its loader, so only unpackings of three or more dims count
    found = pos > 0 && left.namedChildren.length >= 3 && whole && tensorish(ctx, whole, false) ? 'a per-batch size' : null;
    // `inputs, batch_size, max_length = self._validate_args(inputs, ...)` where the helper of this file returns
    // `max_length = inputs.size(1) - 1` in that position (a decoder's teacher-forced length)
    if (!found && right.type === 'call') found = returnedSize(ctx, right, pos, left.namedChildren.length);
  }
  return found;
}

/**
 * The `pos`-th element of the tuples a same-file function returns, when a binding of it in that function is a
 * non-leading size of a tensor (`n = x.size(1) - 1`): 'a per-batch size', else null.
 */
function returnedSize(ctx: RuleContext, call: Node, pos: number, arity: number): string | null {
  const defs = ctx.sema.calledFunctions(call);
  if (defs.length !== 1) return null;
  for (const ret of ctx.sema.within('return_statement', defs[0])) {
    if (ctx.sema.enclosingFunction(ret)?.id !== defs[0].id) continue;
    const tuple = ret.namedChildren[0];
    const items = tuple?.type === 'expression_list' || tuple?.type === 'tuple' ? tuple.namedChildren : [];
    const el = items.length === arity ? items[pos] : null;
    if (el?.type !== 'identifier') continue;
    for (const b of localBindings(ctx, el.text, ret)) {
      const sizes = [b, ...ctx.sema.within('call', b), ...ctx.sema.within('subscript', b)].filter((n) => (n.type === 'call' && methodName(n) === 'size') || n.type === 'subscript');
      if (sizes.some((n) => !leadingDim(n) && dynamicBound(ctx, n) === 'a per-batch size')) return 'a per-batch size';
    }
  }
  return null;
}


export default defineRule({
  id: 'TPU205',
  name: 'structural-dynamism',
  title: 'Python-level structural dynamism: loop trip counts, random branches, packed RNNs',
  severity: 'warning',
  step: 6,
  effort: 5,
  message: 'The traced graph\'s structure changes from step to step: each variant compiles a new graph',
  fix: { availability: 'none' },
  deviceWork: true,
  triggers: ['range(', 'break', 'random', 'cat(', 'pack_padded_sequence', 'pad_packed_sequence', 'while ', 'generate('],
  docs: {
    what:
      'Autoregressive decode loops outside training (see graph/generation.ts; also `model.forward(...)` loops that write a preallocated buffer, `tokens[:, cur] = nxt`, and decode loops in helpers the training loop calls only under a throttle): a generated sequence grown with `torch.cat` every step and a `break` on a device value (`if (nxt == eos).all(): break`; `if all(eos_reached): break` is reported at the test, and so is a stop-token membership test, `if output[-1] in [tokenizer.eos_token_id]: break`: `in` on a list or tuple takes `bool()` of `==` per item, `Tensor.__contains__` reads `(t == x).any()`; a set or dict hashes the tensor by identity and reads nothing, so `in {eos}` is not flagged), info and a prompt tokenized per request with no padding that `generate` runs on (`enc = tokenizer(question, return_tensors="pt")` then `model.generate(input_ids=enc["input_ids"].to(device))`, in a function that takes the prompt or in the loop that generates; also `apply_chat_template(..., return_tensors="pt")` and `torch.tensor(tok.encode(text))`), info at the tokenizer call with the `generate` call related: each prompt length is a new input shape (quiet with `padding="max_length"` or `pad_to_multiple_of`; `padding=True` is TPU404; a single prompt per run compiles once and is not flagged); ' +
      'branches on a fresh torch draw (`if torch.rand(1) < p:`) are random branches reported here, not as TPU202 value checks. ' +
      'Checks, in `forward` or a hot loop, for Python structure that changes between steps: `for t in range(...)` whose trip count comes from a tensor value ' +
      '(`n.item()`, `int(lengths.max())`) (also through a host list read from one: `steps = (lengths - 1).tolist()` then `range(max(steps))`) or a per-batch size (`x.size(1)`, `x.shape[1]`; not the leading batch dim, `range(0, x.shape[0], micro)`/`len(x)`: the loader\'s batch size, fixed when it drops its last batch, which TPU403 checks); `for` loops over the distinct values of a device tensor read to the host (`for i in np.unique(inst.cpu().numpy()):`, `for c in labels.unique().tolist():`, directly or through a local name: one pass per value present in the batch); `while` loops bounded by a per-batch size (a teacher-forced decoder: `while len(outs) < inputs.size(0) - 1`); `break` under a tensor-valued condition; branches chosen by ' +
      'Python or NumPy randomness (`if self.training and random.random() < p: return x`, LayerDrop, stochastic depth; also through a local name, `r = np.random.rand(1)` then `if r < cutmix_prob:`, CutMix/mixup on or off per step; a ternary between two device values chosen by such a name, `use_target = random.random() < ratio` then `prev = tgt[:, t] if use_target else out.argmax(-1)`, teacher forcing decided per decoder step); ' +
      'a call of a timm `Mixup` instance on a device batch (`mix = Mixup(...)`, then `x, y = mix(x, y)` in the loop: it draws on the host whether to mix and whether to cut, and cuts a box of random size; `FastCollateMixup` in a collate function is host work and is not flagged); and ' +
      '`pack_padded_sequence`/`pad_packed_sequence`. Also a bound bound earlier to a non-leading dim of a three-or-more-dim size (`batch_size, _, steps = mel.size()` then `range(0, steps, r)`, or the element a same-file helper returns in that position, `targets, batch, steps = self._check(targets, state)` with `steps = targets.size(1) - 1` there; a `(B, T)` token batch is usually cut to a fixed block and is not flagged). ' +
      'Loops over constants or configuration (`range(self.n_layers)`), or over a Python int parameter (`range(max_new_tokens)`), are not flagged; nor an epsilon-greedy branch whose exploring arm does no device work (`self.env.action_space.sample()`). ' +
      'Variable-length decode loops and beam search are only caught through these shapes.',
    why:
      '"Loops with a different number of iterations between steps can result in different execution graphs, thus require recompilations" (TS:291-293). ' +
      'The loop is unrolled into the graph, so its trip count is part of the graph. Each random branch pattern is a distinct graph too: up to 2^L graphs ' +
      'for L LayerDrop layers (derived from the same rule). Packed sequences carry data-dependent batch sizes per time step.',
    example:
      'class Block(nn.Module):\n    def forward(self, x):\n        if self.training and random.random() < self.p:\n            return x\n        return x + self.f(x)\n\n' +
      'for t in range(int(lengths.max())):\n    h = cell(x[:, t], h)',
    useInstead:
      'class Block(nn.Module):\n    def forward(self, x):\n        if not self.training:\n            return x + self.f(x)\n' +
      '        keep = torch.bernoulli(torch.full((x.shape[0], 1, 1), 1 - self.p, device=x.device))\n        return x + keep * self.f(x) / (1 - self.p)\n\n' +
      'for t in range(MAX_LEN):           # fixed trip count, pad to MAX_LEN and mask\n    h = torch.where(t < lengths[:, None], cell(x[:, t], h), h)',
    fixSafety:
      'No automatic fix: each rewrite changes the model\'s structure. Use fixed trip counts with masking, a tensor mask for stochastic depth, ' +
      '`torch_xla.experimental.scan`/`scan_layers` for repeated identical layers (docs/source/features/scan.md), `torch_xla.experimental.fori_loop` ' +
      '(experimental, docs/source/perf/fori_loop.md), and sequences padded to a fixed length (TPU404).',
    sources: [
      'TS:291-293 (docs/source/learn/troubleshoot.md: loops with a different number of iterations require recompilation)',
      'docs/source/features/scan.md (scan, scan_layers)',
      'docs/source/perf/fori_loop.md (fori_loop, experimental)',
      'transformers docs/source/en/tf_xla.md, "Tracing": "To ensure a function is only traced once, the inputs must have the same shape as when the graph was built" … "pad your text so it always has the same shape" (`pad_to_multiple_of`, `padding=True`, `padding_side="left"` for decoder-only generation; read at huggingface/transformers@38dd67d)',
      'timm/data/mixup.py (Mixup._params_per_batch: `np.random.rand() < self.mix_prob`, `< self.switch_prob`; Mixup._mix_batch: `x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]` with a box from rand_bbox; FastCollateMixup mixes in the collate function)',
    ],
    torchtpu: 'The same patterns recompile under torch.compile(backend="tpu", dynamic=False); no fix is offered in either profile. An unpadded prompt fed to `generate` is reported only in a file that calls `torch.compile`: the preview runs eagerly first, and whether eager execution caches per shape is not known here.',
  },
  check(ctx) {
    const report = (at: Node, message: string) => {
      const hot = hotAt(ctx, at);
      if (hot) ctx.report(at, { severity: severityIn('warning', hot), message });
    };

    for (const loop of ctx.sema.nodes('for_statement')) {
      const it = loop.childForFieldName('right');
      if (it?.type !== 'call' || it.childForFieldName('function')?.text !== 'range' || ctx.sema.resolve(it.childForFieldName('function'))) continue;
      const { positional } = callArgs(it);
      for (const bound of positional) {
        const why = dynamicBound(ctx, bound);
        // `range(0, batch.shape[0], micro)`: the leading (batch) dim is the loader's batch size, fixed when the loader
        // drops its last batch (the smaller last batch is TPU403's finding); a data-dependent count (NMS output,
        // a mask selection) is no batch size
        if (why && why !== 'a tensor value' && leadingDim(bound) && !countSize(ctx, bound)) continue;
        if (why) {
          report(it, `\`${short(it.text, 40)}\` takes its trip count from ${why}: the loop is unrolled into the graph, so each new count compiles a new graph`);
          break;
        }
      }
    }

    // `for i in np.unique(inst.cpu().numpy()):` / `ids = labels.unique().tolist()` then `for c in ids:`: a loop over
    // values read from a device tensor runs once per distinct value, a count the data decides
    for (const loop of ctx.sema.nodes('for_statement')) {
      const it = loop.childForFieldName('right');
      if (!it || (it.type === 'call' && it.childForFieldName('function')?.text === 'range')) continue;
      const read = readValues(ctx, it) ?? (it.type === 'identifier' ? readValues(ctx, lastBinding(ctx, it)) : null);
      if (read) report(it, `\`for ... in ${short(it.text, 30)}\` loops over values read from the device tensor \`${short(read.text, 24)}\`: the trip count is the data's (one pass per value), and the loop is unrolled into the graph, so each new count compiles a new graph; loop over a fixed maximum with a mask (or a scatter/segment reduction over all values at once)`);
    }

    // `while len(outs) < inputs.size(0) - 1:` (teacher-forced decoder): the trip count is the padded length of the batch
    for (const loop of ctx.sema.nodes('while_statement')) {
      const cond = loop.childForFieldName('condition');
      if (!cond || tensorCondition(ctx, cond)) continue; // a tensor test is TPU202
      const sizes = [...ctx.sema.within('call', cond), ...ctx.sema.within('subscript', cond)].filter((n) => {
        const why = dynamicBound(ctx, n);
        return why === 'a per-batch size';
      });
      if (sizes.length) {
        report(cond, `\`while ${short(cond.text, 36)}\` runs as many times as \`${short(sizes[0].text, 24)}\`, a size of this batch: the loop is unrolled into the graph, so each new length compiles a new graph; pad to a fixed length (or loop a fixed number of steps and mask)`);
      }
    }

    for (const brk of ctx.sema.nodes('break_statement')) {
      let cond: Node | null = null;
      for (let p = brk.parent; p && p.type !== 'for_statement' && p.type !== 'while_statement' && p.type !== 'function_definition'; p = p.parent) {
        if (p.type === 'if_statement' || p.type === 'elif_clause') {
          cond = p.childForFieldName('condition');
          break;
        }
      }
      if (cond && tensorCondition(ctx, cond)) report(brk, `\`break\` on tensor condition \`${short(cond.text, 30)}\` ends the loop at a data-dependent step: each trip count is a new graph`);
    }

    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (PY_RANDOM.test(callee) && inBranchTest(call) && !picksHostValue(ctx, call)) {
        report(call, `Branch chosen by \`${short(call.text, 30)}\`: every random branch pattern is a different graph (LayerDrop/stochastic depth); use a tensor mask`);
      } else if (TORCH_RANDOM.test(callee) && inBranchTest(call) && !picksHostValue(ctx, call)) {
        // `if torch.rand(1) < p:` is a random branch (TPU202 leaves it to this rule); a device draw is also read back to the host
        const onHost = drawnOnHost(call);
        report(call, `Branch chosen by the random value \`${short(call.text, 30)}\`: every random branch pattern is a different graph${onHost ? '' : ', and testing a device draw reads it back to the host'}; use a tensor mask`);
      } else if (/^torch\.nn\.utils\.rnn\.(pack_padded_sequence|pad_packed_sequence)$/.test(callee)) {
        report(call, `\`${callee.split('.').pop()}\` packs sequences by their lengths: shapes change with every batch; pad to a fixed length and mask instead`);
      }
    }
    // `r = np.random.rand(1)` then `if args.beta > 0 and r < args.cutmix_prob:` (CutMix, mixup): the draw through a local name
    for (const test of [...ctx.sema.nodes('if_statement'), ...ctx.sema.nodes('elif_clause')]) {
      const cond = conditionOf(test);
      if (!cond) continue;
      const body = test.childForFieldName('consequence');
      if (!body?.namedChildren.some((s) => !!s && s.type !== 'pass_statement' && s.type !== 'comment')) continue;
      const names = cond.type === 'identifier' ? [cond] : ctx.sema.within('identifier', cond).filter((i) => i.parent?.type !== 'attribute' && !(i.parent?.type === 'call' && i.parent.childForFieldName('function')?.id === i.id) && !identityOperand(i));
      for (const id of names) {
        const b = lastBinding(ctx, id);
        const draw = hostDraw(ctx, b);
        if (!draw || picksHostValue(ctx, cond)) continue;
        report(cond, `Branch chosen by \`${id.text}\`, drawn at random (\`${short(draw.text, 30)}\`): every random branch pattern is a different graph (CutMix/mixup on or off, LayerDrop, teacher forcing); run both arms on every step and choose with a tensor (a per-sample mask, \`torch.where\` on a device draw), or draw the choice per epoch`);
        break;
      }
    }
    // `teacher_force = random.random() < ratio` then `inp = tgt[:, t] if teacher_force else top1` in a decoder step: a
    // Python choice between two device values, one graph per pattern of choices over the steps
    for (const ternary of ctx.sema.nodes('conditional_expression')) {
      const [a, cond, b] = ternary.namedChildren;
      if (!a || !cond || !b || a.text === b.text || (!tensorish(ctx, a, false) && !tensorish(ctx, b, false))) continue;
      const id = cond.type === 'identifier' ? cond : cond.type === 'not_operator' && cond.namedChildren[0]?.type === 'identifier' ? cond.namedChildren[0] : null;
      const bound = id ? lastBinding(ctx, id) : null;
      const draw = hostDraw(ctx, bound);
      if (id && draw) report(ternary, `\`${short(ternary.text, 40)}\` picks a tensor by \`${id.text}\`, drawn at random (\`${short(draw.text, 30)}\`): each pattern of choices is a different graph (teacher forcing per step); choose on the device, \`torch.where(torch.rand(n, 1, device=...) < p, ${short(a.text, 16)}, ${short(b.text, 16)})\`, so every step traces both`);
    }
    // `mixup_fn = Mixup(...)` (timm) then `x, y = mixup_fn(x, y)` on a device batch: timm/data/mixup.py draws on the host
    // whether to mix and whether to cut (`_params_per_batch`: `np.random.rand() < self.mix_prob`, `< self.switch_prob`)
    // and cuts a box of random size (`_mix_batch`: `x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]`)
    for (const call of ctx.sema.nodes('call')) {
      const fn = call.childForFieldName('function');
      if (fn?.type !== 'identifier' || !tensorish(ctx, callArgs(call).positional[0], false)) continue;
      const ctor = ctx.sema.bindings(fn.text).find((b) => b.type === 'call' && TIMM_MIXUP.test(ctx.sema.callee(b) ?? ''));
      if (ctor) report(call, `\`${short(call.text, 30)}\` (timm \`Mixup\`) decides at random on the host, per batch, whether to mix and whether to cut, and cuts a box of random size out of the device batch: each outcome and each box size is a different graph; mix on the host in the loader (timm's \`FastCollateMixup\` as the collate function), or with fixed shapes on the device (a per-sample box mask)`);
    }
    reportGenerationDynamism(ctx); // decode/sampling loops outside training (info)
    reportPromptShapes(ctx); // generate() on a prompt tokenized per request with no padding (info)
  },
});

/**
 * `if random.random() < eps: a = np...(...) else: ...; a = t.cpu().numpy()` (epsilon-greedy): every arm ends by
 * assigning the same name a host value, so any device work in an arm is read back there and the step graph
 * does not depend on the arm taken.
 */
function picksHostValue(ctx: RuleContext, call: Node): boolean {
  let stmt: Node | null = call.parent;
  while (stmt && stmt.type !== 'if_statement') stmt = /statement|block/.test(stmt.type) ? null : stmt.parent;
  if (!stmt) return false;
  const alts = stmt.childrenForFieldName('alternative').filter((a): a is Node => !!a);
  if (alts.length !== 1 || alts[0].type !== 'else_clause') return false;
  const target = (block: Node | null | undefined): string | null => {
    const last = block?.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment').pop();
    const a = last?.type === 'expression_statement' ? last.namedChildren[0] : null;
    const left = a?.type === 'assignment' ? a.childForFieldName('left') : null;
    const value = a?.childForFieldName('right');
    if (left?.type !== 'identifier' || !value) return null;
    const host = hostValue(ctx, value) || (value.type === 'call' && /^(numpy|item|tolist)$/.test(methodName(value) ?? ''));
    // `selected_action = self.env.action_space.sample()`: an arm that does no device work at all picks a host value too
    const deviceWork = !!block && [value, ...ctx.sema.within('call', block)].some((c) => tensorish(ctx, c, false));
    return host || !deviceWork ? left.text : null;
  };
  const t = target(stmt.childForFieldName('consequence'));
  return !!t && t === target(alts[0].childForFieldName('body'));
}

/** A Python/NumPy draw, or a torch draw made on the host, in a binding's right-hand side (`r = np.random.rand(1)`). */
function hostDraw(ctx: RuleContext, b: Node | null): Node | null {
  if (!b) return null;
  return [b, ...ctx.sema.within('call', b)].find((c) => c.type === 'call' && (PY_RANDOM.test(ctx.sema.callee(c) ?? '') || (TORCH_RANDOM.test(ctx.sema.callee(c) ?? '') && drawnOnHost(c)))) ?? null;
}

/** `top_i is EOS_token`: an operand of `is` / `is not` only, which compares identities and reads no value. */
function identityOperand(id: Node): boolean {
  const p = id.parent;
  return p?.type === 'comparison_operator' && p.children.every((c) => !c || c.isNamed || c.type === 'is' || c.type === 'is not');
}

/** The call is part of an if/elif/while/ternary test. */
function inBranchTest(node: Node): boolean {
  for (let p = node.parent, c: Node = node; p; c = p, p = p.parent) {
    if ((p.type === 'if_statement' || p.type === 'elif_clause' || p.type === 'while_statement') && p.childForFieldName('condition')?.id === c.id) {
      // a branch that does nothing (`pass`) changes no graph
      const body = p.childForFieldName('consequence') ?? p.childForFieldName('body');
      return !!body && body.namedChildren.some((s) => !!s && s.type !== 'pass_statement' && s.type !== 'comment');
    }
    // `flag = True if random.random() < p else False`: a choice between constants picks no graph; the `if flag:` that
    // reads it is the branch (reported through the name)
    if (p.type === 'conditional_expression' && p.namedChildren[1]?.id === c.id) return !(CONSTANT.test(p.namedChildren[0]?.type ?? '') && CONSTANT.test(p.namedChildren[2]?.type ?? ''));
    if (/statement|block|function_definition|lambda/.test(p.type)) return false;
  }
  return false;
}

/** A bound that is dim 0 of a tensor: `len(x)`, `x.size(0)`, `x.shape[0]` (possibly `+ 1` / `- 1`). */
function leadingDim(e: Node): boolean {
  if (e.type === 'binary_operator') {
    const [l, r] = [e.childForFieldName('left'), e.childForFieldName('right')];
    return (!!l && leadingDim(l) && r?.type === 'integer') || (!!r && leadingDim(r) && l?.type === 'integer');
  }
  if (e.type === 'call') {
    const fn = e.childForFieldName('function');
    if (fn?.type === 'identifier' && fn.text === 'len') return true;
    return methodName(e) === 'size' && callArgs(e).positional[0]?.text === '0';
  }
  if (e.type === 'subscript') {
    const v = e.childForFieldName('value');
    return v?.type === 'attribute' && v.childForFieldName('attribute')?.text === 'shape' && e.childForFieldName('subscript')?.text === '0';
  }
  return false;
}

/**
 * `np.unique(inst.cpu().numpy())`, `labels.unique().tolist()`, `t.nonzero().tolist()`: host values read from a device
 * tensor (the device tensor read), else null. Reading a tensor just to iterate its rows (`for row in t.tolist()` of
 * a fixed-size tensor) has a fixed trip count, so only value-keyed reads count: a unique/nonzero on the way.
 */
function readValues(ctx: RuleContext, e: Node | null | undefined): Node | null {
  if (!e || e.type !== 'call') return null;
  const chain: Node[] = [];
  for (let c: Node | null = e; c?.type === 'call'; ) {
    chain.push(c);
    const callee: string = ctx.sema.callee(c) ?? '';
    const inner: Node | null = /^numpy\.(unique|nonzero|flatnonzero|argwhere)$/.test(callee) || /^(set|sorted|list)$/.test(c.childForFieldName('function')?.text ?? '') ? callArgs(c).positional[0] ?? null : recvOf(c);
    c = inner;
    if (c && c.type !== 'call') {
      if (!tensorish(ctx, c, false) || hostValue(ctx, c)) return null;
      chain.push(c);
      break;
    }
  }
  const names = chain.map((c) => (c.type === 'call' ? ctx.sema.callee(c) ?? methodName(c) ?? c.childForFieldName('function')?.text ?? '' : ''));
  const reads = names.some((n) => /(^|\.)(cpu|numpy|tolist|item)$/.test(n));
  const keyed = names.some((n) => /(^|\.)(unique|nonzero|flatnonzero|argwhere|unique_consecutive)$/.test(n) || n === 'set');
  const dev = chain[chain.length - 1];
  return reads && keyed && dev.type !== 'call' ? dev : null;
}
