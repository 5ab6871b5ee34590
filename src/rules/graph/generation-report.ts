/** The generation-loop findings of TPU201, TPU204 and TPU205 (see generation.ts); each rule calls its function once. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { deviceBreaks, generationLoops, perStepReads, smallTripCount, stepCut } from './generation';
import { deviceMembership, endOfBodyEdit, pythonReduction, short } from './util';
import { callArgs, kwValue, methodName, receiver, stringContent } from '../../core/semantics';
import { roundTrips } from './rollout';

/** TPU205: the growing sequence and the early exit on a device value. */
export function reportGenerationDynamism(ctx: RuleContext): void {
  for (const g of generationLoops(ctx)) {
    for (const cat of g.growing) {
      ctx.report(cat, {
        severity: 'info',
        message: `\`${short(cat.text, 40)}\` grows the generated sequence every step: each new length is a new graph to compile; decode into a preallocated fixed-length buffer (static cache) and mask`,
      });
    }
    for (const { brk, cond } of deviceBreaks(ctx, g)) {
      const r = pythonReduction(ctx, cond);
      if (r) {
        // `if all(eos_reached): break`: the Python loop over the device tensor is the cost; reported at the test
        ctx.report(cond, {
          severity: 'info',
          message: `\`${short(cond.text, 30)}\` runs Python's \`${r.fn}()\` over the device value \`${short(r.over.text, 24)}\` every step, reading it to the host, and the loop stops at a data-dependent length; test \`torch.${r.fn}(...)\` once every few steps, or run a fixed number of steps and mask finished sequences`,
        });
        continue;
      }
      const m = deviceMembership(ctx, unwrap(cond));
      if (m) {
        // `if output[-1] in [tokenizer.eos_token_id]: break`: the membership test is the read, reported at the test
        ctx.report(cond, {
          severity: 'info',
          message: `\`${short(cond.text, 36)}\` compares the device value \`${short(m.item.text, 20)}\` with each item of \`${short(m.container.text, 24)}\` and reads every result back (\`bool()\`), every step, and the loop stops at a data-dependent length; compare on the device (\`==\` with each id, combined with \`|\`${ctx.idiom.profile === 'torchtpu' ? '' : '; torch_xla 2.9 lowers `eq` but not `isin`'}) and test the result once every few steps, or run a fixed number of steps and mask finished sequences`,
        });
        continue;
      }
      ctx.report(brk, {
        severity: 'info',
        message: `\`break\` on the device value \`${short(cond.text, 30)}\` reads it back every step and stops at a data-dependent length; run a fixed number of steps and mask finished sequences`,
      });
    }
  }
}

/** TPU201: per-step host reads in a generation loop (`next_tok.item()`). */
export function reportGenerationReads(ctx: RuleContext): void {
  // a rollout's round trip (`env.step(action.cpu().numpy())`) is reported as such (rollout.ts), not as a decode read
  const trips = new Set(roundTrips(ctx).map((t) => t.read.id));
  for (const g of generationLoops(ctx)) {
    for (const read of perStepReads(ctx, g)) {
      if (trips.has(read.id)) continue;
      ctx.report(read, {
        severity: 'info',
        message: `\`${short(read.text, 36)}\` in the generation loop waits for the device every step; keep the values on the device and read them once after the loop`,
      });
    }
  }
}

function unwrap(n: Node): Node {
  while ((n.type === 'parenthesized_expression' || n.type === 'not_operator') && n.namedChildren[0]) n = n.childForFieldName('argument') ?? n.namedChildren[0]!;
  return n;
}

function headerEnd(loop: Node): number {
  const colon = loop.children.find((c) => c?.type === ':');
  return colon ? colon.endIndex : loop.childForFieldName('body')?.startIndex ?? loop.endIndex;
}

/** TPU204: a sampling loop (fixed-shape carried state) with no step barrier and nothing that executes the graph each step. */
export function reportGenerationBarrier(ctx: RuleContext): void {
  const sync = ctx.idiom.sync();
  for (const g of generationLoops(ctx)) {
    if (g.growing.length || smallTripCount(g)) continue;
    const { cut, reads } = stepCut(ctx, g);
    if (cut) continue;
    const carried = [...g.carried].map((n) => `\`${n}\``).join(', ');
    const header = { start: g.loop.startIndex, end: headerEnd(g.loop) };
    // a per-step read of another value (`torch.multinomial(prob, 1).item()`) executes only that value's graph
    // (torch_xla v2.9.0 aten_xla_type.cpp `_local_scalar_dense` syncs live tensors only under the `early_sync` experiment)
    const read = reads[0];
    const readNote = read ? `; \`${short(read.text, 36)}\` runs only the graph of the value it reads, so ${carried} stays pending and its graph grows with every step` : '';
    ctx.report(header, {
      severity: 'info',
      message: sync
        ? `Sampling loop with no step barrier: every step that updates ${carried} is traced into one graph before anything runs (long compile, host memory)${readNote}; end each step with \`${sync.text}\``
        : `Sampling loop with no step barrier: every step that updates ${carried} is traced into one graph; check how the torchtpu step is compiled (no known barrier API)`,
      fix: sync && !g.loop.hasError ? barrierAtEnd(ctx, g.loop, g.body, sync.text, sync.imports, sync.needsAccel) : null,
    });
  }
}

function barrierAtEnd(ctx: RuleContext, loop: Node, body: Node, text: string, imports: { module: string; alias?: string }[], needsAccel: boolean) {
  const stmts = body.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
  const last = stmts[stmts.length - 1];
  if (!last) return null;
  const edit = endOfBodyEdit(ctx, loop, last, body, text);
  if (!edit) return null;
  return { title: `Add \`${text}\` at the end of each sampling step`, applicability: 'safe' as const, edits: [edit], imports, needsAccel };
}

const TOKENIZER_CALL = /(^|\.|_)(tok\w*|\w*tokeni[sz]\w*|encode\w*|apply_chat_template|processor)$/i;
const PASS_THROUGH = new Set(['to', 'cuda', 'unsqueeze', 'long', 'int', 'view', 'reshape', 'contiguous']);

/** `tokenizer(prompt, return_tensors="pt")` (or `torch.tensor(tok.encode(text))`) that `e` comes from, through moves and keys. */
function tokenizerSource(ctx: RuleContext, e: Node | null | undefined, depth = 0, ids = false): Node | null {
  // `ids`: below `torch.as_tensor(...)`, where a tokenizer call returning Python lists (`tokenizer([prompt]).input_ids`) counts too
  if (!e || depth > 6) return null;
  if (e.type === 'parenthesized_expression') return tokenizerSource(ctx, e.namedChildren[0], depth + 1, ids);
  if (e.type === 'subscript') return tokenizerSource(ctx, e.childForFieldName('value'), depth + 1, ids); // `inputs["input_ids"]`, `ids[None]`
  if (e.type === 'attribute') return /^(input_ids|data)$/.test(e.childForFieldName('attribute')?.text ?? '') ? tokenizerSource(ctx, e.childForFieldName('object'), depth + 1, ids) : null;
  if (e.type === 'list' && ids && e.namedChildren.length === 1) return tokenizerSource(ctx, e.namedChildren[0], depth + 1, ids); // `torch.as_tensor([input_ids])`
  if (e.type === 'identifier') {
    for (const b of ctx.model.bindingExpressions(e)) {
      const t = b ? tokenizerSource(ctx, b, depth + 1, ids) : null;
      if (t) return t;
    }
    return null;
  }
  if (e.type !== 'call') return null;
  const fn = e.childForFieldName('function');
  const callee = ctx.sema.callee(e) ?? '';
  if (/^torch\.(tensor|LongTensor|as_tensor)$/.test(callee)) return tokenizerSource(ctx, callArgs(e).positional[0], depth + 1, true);
  if (PASS_THROUGH.has(methodName(e) ?? '')) return tokenizerSource(ctx, receiver(e), depth + 1, ids);
  if ((fn?.type === 'identifier' || fn?.type === 'attribute') && TOKENIZER_CALL.test(fn.text) && (ids || callArgs(e).keywords.has('return_tensors'))) return e;
  return null;
}

/** The tokenizer call pads to one fixed length or a bucket (`padding="max_length"`, `pad_to_multiple_of=64`), or pads to the batch's longest (TPU404). */
function padded(call: Node): boolean {
  const k = callArgs(call).keywords;
  if (k.has('pad_to_multiple_of') && kwValue(k.get('pad_to_multiple_of'))?.text !== 'None') return true;
  const pad = kwValue(k.get('padding'));
  if (!pad) return false;
  return !(pad.text === 'False' || stringContent(pad) === 'do_not_pad');
}

function innermostLoop(n: Node, stop: Node | null): Node | null {
  for (let p = n.parent; p && p.id !== stop?.id; p = p.parent) {
    if (p.type === 'function_definition') return null;
    if (p.type === 'for_statement' || p.type === 'while_statement') return p;
  }
  return null;
}

function paramNames(fn: Node | null): Set<string> {
  const out = new Set<string>();
  for (const p of fn?.childForFieldName('parameters')?.namedChildren ?? []) {
    const id = p?.type === 'identifier' ? p : p?.childForFieldName('name') ?? p?.namedChildren[0];
    if (id?.type === 'identifier') out.add(id.text);
  }
  return out;
}

/**
 * TPU205 (info): `model.generate(...)` fed a prompt tokenized per request with no padding (`inputs = tokenizer(prompt,
 * return_tensors="pt")` in a serving function that takes the prompt, or in a loop over prompts): every distinct prompt
 * length is a new input shape, so XLA traces and compiles the prefill and decode graphs again. One finding per
 * tokenizer call, at the call (where the padding goes), the `generate` call related.
 */
export function reportPromptShapes(ctx: RuleContext): void {
  // the torchtpu preview runs eagerly: a new prompt length compiles a graph only under `torch.compile`
  if (ctx.idiom.profile === 'torchtpu' && !ctx.sema.nodes('call').some((c) => ctx.sema.callee(c) === 'torch.compile')) return;
  const done = new Set<number>();
  for (const call of ctx.sema.nodes('call')) {
    if (methodName(call) !== 'generate') continue;
    const recv = receiver(call);
    if (!recv || ctx.sema.resolve(recv) || ctx.sema.hot(call)?.kind === 'train') continue;
    const args = call.childForFieldName('arguments')?.namedChildren ?? [];
    const { positional, keywords } = callArgs(call);
    const splat = args.find((a) => a?.type === 'dictionary_splat')?.namedChildren[0]; // `generate(**inputs)`
    const first = positional[0]?.type === 'dictionary_splat' || positional[0]?.type === 'list_splat' ? null : positional[0];
    const input = kwValue(keywords.get('input_ids')) ?? kwValue(keywords.get('inputs')) ?? first ?? splat;
    const tok = tokenizerSource(ctx, input);
    if (!tok || done.has(tok.id) || padded(tok)) continue;
    // per request: tokenized in the loop that generates, or from a prompt the enclosing function takes as a parameter
    const fn = ctx.sema.enclosingFunction(call);
    const loop = innermostLoop(call, fn);
    const inLoop = !!loop && tok.startIndex >= loop.startIndex && tok.endIndex <= loop.endIndex;
    const text = callArgs(tok).positional[0] ?? kwValue(callArgs(tok).keywords.get('text'));
    // (`tokenizer(prompt.format(user_question=user_question), ...)`, `tokenizer([prompt])`: the text reads a parameter)
    const params = paramNames(fn);
    const fromParam = !!fn && !!text && ctx.sema.enclosingFunction(tok)?.id === fn.id && (text.type === 'identifier' ? [text] : ctx.sema.within('identifier', text)).some((id) => params.has(id.text));
    if (!inLoop && !fromParam) continue;
    done.add(tok.id);
    ctx.report(tok, {
      severity: 'info',
      message: `\`${short(tok.text, 44)}\` makes the prompt tensor exactly as long as ${inLoop ? 'each prompt of the loop' : 'each request\'s prompt'}, and \`${short(call.childForFieldName('function')?.text ?? 'generate', 30)}(...)\` runs on it: every distinct prompt length is a new input shape, so ${ctx.idiom.profile === 'torchtpu' ? 'the `dynamic=False` compiled model' : 'XLA'} traces and compiles the prefill and decode graphs again; pad to a fixed length or a few buckets (\`padding="max_length", max_length=L\` or \`padding=True, pad_to_multiple_of=64\`, left padding for a decoder-only model, and pass the \`attention_mask\` to \`generate\`)`,
      related: [{ start: call.startIndex, end: call.endIndex, message: 'the generate call that runs on it' }],
    });
  }
}
