/** The generation-loop findings of TPU201, TPU204 and TPU205 (see generation.ts); each rule calls its function once. */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { deviceBreaks, generationLoops, perStepReads, smallTripCount, stepsExecute } from './generation';
import { deviceMembership, endOfBodyEdit, pythonReduction, short } from './util';
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
    if (g.growing.length || stepsExecute(ctx, g) || smallTripCount(g)) continue;
    const carried = [...g.carried].map((n) => `\`${n}\``).join(', ');
    const header = { start: g.loop.startIndex, end: headerEnd(g.loop) };
    ctx.report(header, {
      severity: 'info',
      message: sync
        ? `Sampling loop with no step barrier: every step that updates ${carried} is traced into one graph before anything runs (long compile, host memory); end each step with \`${sync.text}\``
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
