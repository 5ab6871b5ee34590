import { defineRule, isSelected, type FixDraft, type ReportOptions, type RuleContext } from '../../core/rule';
import { availabilityFinding, blocksAround } from './TPU103-cuda-capability-check';
import type { Node } from '../../core/parse';
import { callArgs, methodName, nearestAncestor, receiver } from '../../core/semantics';
import { replaceRange } from '../../core/edits';
import { deviceExprFor } from '../shared';
import { notCpuTest } from '../../model/guards';

export default defineRule({
  id: 'TPU101',
  name: 'cuda-call',
  title: '`.cuda()` call',
  severity: 'error',
  step: 3,
  effort: 1,
  message: '`.cuda()` places work on a CUDA device; a TPU host has none',
  fix: { availability: 'always', applicability: 'safe', title: 'Replace `.cuda()` with `.to(device)`' },
  triggers: ['.cuda('],
  docs: {
    what: 'Checks for `.cuda()` calls on tensors, modules and storages, through any alias, including `map(lambda t: t.cuda(), ...)`. ' +
      'Moves that a TPU host never runs, under `if torch.cuda.is_available():` or under `if <flag>:` of a CUDA flag (`args.cuda = not args.no_cuda and torch.cuda.is_available()`, also when the flag is set below the functions that read it), are reported once, by TPU103, with the guards as related locations.',
    why:
      'A TPU VM has no CUDA device: `.cuda()` raises there (CPU-only torch: "Torch not compiled with CUDA enabled"; the exact message varies by build). ' +
      'Under `torch_xla.launch` each process sees only its own device (DEV: "if you print the `torch_xla.device()` on each process you will see `xla:0` on all devices"), so `.cuda(rank)` does not map to `xla:rank`.',
    example: 'x = x.cuda(non_blocking=True)\nmodel = model.cuda(local_rank)',
    useInstead: 'import torch_xla\n\nx = x.to(torch_xla.device())\nmodel = model.to(torch_xla.device())',
    fixSafety:
      'Safe for `.cuda()` with no argument, `non_blocking`, or a rank-like argument in a launched process: every process owns exactly one XLA device. ' +
      'Unsafe when an int literal other than 0 selects one of several local GPUs in a single process. An existing `device` variable is reused when it is bound on every path to the call. ' +
      'In dual-path style `x.cuda(rank)` becomes `(x.to(accel.device()) if accel.is_xla() else x.cuda(rank))`, so CUDA keeps the index it was given.',
    sources: ['DEV (docs/source/learn/pytorch-on-xla-devices.md:81-84, 147-160)', 'TX:19 (torch_xla.device)', 'MIG:41-55'],
    torchtpu: 'The fix moves to `torch.device("tpu")` after `import torch_tpu`.',
  },
  check(ctx) {
    const drafts: { call: Node; opts: ReportOptions & { fix: FixDraft } }[] = [];
    const report = (call: Node, opts: ReportOptions & { fix: FixDraft }) => drafts.push({ call, opts });
    for (const call of ctx.sema.nodes('call')) {
      if (methodName(call) !== 'cuda') continue;
      const recv = receiver(call);
      if (!recv || ctx.sema.resolve(recv) === 'torch') continue;
      if (ctx.sema.inXlaAwareBranch(call) || inMapLocation(call) || reportedAtGuard(ctx, call)) continue;
      // `if device not in ["cpu"]: state = state.cuda()` with `device` CUDA or else the CPU: a TPU host does not take the arm
      // today (TPU102 reports the device choice, the error); once the device is XLA the arm runs and `.cuda()` raises
      const notCpu = notCpuGuard(call);
      const { positional, keywords } = callArgs(call);
      const deviceArg = positional[0] ?? keywords.get('device')?.childForFieldName('value');
      const selectsGpu = !!deviceArg && deviceArg.type === 'integer' && deviceArg.text !== '0';
      const dev = deviceExprFor(ctx, call);
      const nb = keywords.get('non_blocking');
      const fn = call.childForFieldName('function')!;
      const attr = fn.childForFieldName('attribute')!;
      const args = call.childForFieldName('arguments')!;
      // dual-path `.cuda(rank)` on a plain name: `accel.device()` on CUDA is `cuda:$LOCAL_RANK`, which mp.spawn never sets
      // (every rank would land on cuda:0), so the CUDA path keeps its own index and only XLA moves to the XLA device
      if (ctx.idiom.dualPath && deviceArg && deviceArg.text !== '0' && (recv.type === 'identifier' || recv.type === 'attribute')) {
        const x = ctx.idiom.isXla();
        const text = `(${recv.text}.to(${dev.text}${nb ? `, ${nb.text}` : ''}) if ${x.text} else ${call.text})`;
        report(call, {
          message: recv.text.length <= 30 ? `\`${recv.text}.cuda()\` places work on a CUDA device; a TPU host has none` : undefined,
          fix: {
            applicability: selectsGpu ? 'unsafe' : 'safe',
            title: `Move to \`${dev.text}\` on XLA, keep \`${call.text.length <= 40 ? call.text : '.cuda(…)'}\` on CUDA`,
            edits: [replaceRange(call.startIndex, call.endIndex, text)],
            imports: [...dev.imports, ...x.imports],
            needsAccel: true,
          },
        });
        continue;
      }
      report(call, {
        ...(notCpu
          ? {
              severity: 'warning' as const,
              message: `\`${recv.text.length <= 30 && !recv.text.includes('\n') ? recv.text : '…'}.cuda()\` runs when \`${notCpu.length <= 30 ? notCpu : 'the device'}\` is not the CPU: never on a TPU host today, but it raises once that device is the XLA device`,
            }
          : { message: recv.text.length <= 30 && !recv.text.includes("\n") ? `\`${recv.text}.cuda()\` places work on a CUDA device; a TPU host has none` : undefined }),
        fix: {
          applicability: selectsGpu ? 'unsafe' : 'safe',
          title: `Replace \`.cuda()\` with \`.to(${dev.text})\``,
          edits: [replaceRange(attr.startIndex, args.endIndex, `to(${dev.text}${nb ? `, ${nb.text}` : ''})`)],
          imports: dev.imports,
          needsAccel: dev.needsAccel,
        },
      });
    }
    // `x, y = x.cuda(), y.cuda()`: one statement, one problem, one edit: a finding on the first sibling call whose fix moves them
    // all, the others as related locations (not when the edits overlap or the calls are one chain, `x.cuda().half().cuda()`)
    const byStatement = new Map<string, typeof drafts>();
    for (const d of drafts) {
      // sibling moves of one statement (`a.cuda(), b.cuda()`, `model(x.cuda(), y.cuda())`): the same container node
      const stmt = statementAround(d.call);
      let box = d.call.parent;
      while (box && (box.type === 'keyword_argument' || box.type === 'parenthesized_expression')) box = box.parent;
      const key = stmt && box && SIBLINGS.has(box.type) ? `${stmt.id}:${box.id}` : `call:${d.call.id}`;
      byStatement.set(key, [...(byStatement.get(key) ?? []), d]);
    }
    for (const group of byStatement.values()) {
      const edits = group.flatMap((d) => d.opts.fix.edits).sort((a, b) => a.start - b.start);
      const overlap = edits.some((e, i) => i > 0 && e.start < edits[i - 1].end);
      // a chain (`x.cuda().float().cuda()`): each call moves the result of the other, findings of their own
      const sorted = [...group].sort((a, b) => a.call.startIndex - b.call.startIndex);
      const nested = sorted.some((d, i) => i > 0 && d.call.startIndex < sorted[i - 1].call.endIndex);
      if (group.length === 1 || overlap || nested) {
        for (const d of group) ctx.report(d.call, d.opts);
        continue;
      }
      const [first, ...rest] = [...group].sort((a, b) => a.call.startIndex - b.call.startIndex || a.call.endIndex - b.call.endIndex);
      const unsafe = group.some((d) => d.opts.fix.applicability === 'unsafe');
      const imports = group.flatMap((d) => d.opts.fix.imports ?? []);
      ctx.report(first.call, {
        message: first.opts.message,
        fix: {
          applicability: unsafe ? 'unsafe' : 'safe',
          title: `${first.opts.fix.title} (${group.length} calls of this statement)`,
          edits,
          imports: imports.filter((x, i) => imports.findIndex((y) => JSON.stringify(y) === JSON.stringify(x)) === i),
          needsAccel: group.some((d) => d.opts.fix.needsAccel),
        },
        related: rest.map((d) => ({ start: d.call.startIndex, end: d.call.endIndex, message: 'also moved to CUDA in this statement' })),
      });
    }
  },
});

/**
 * `if torch.cuda.is_available(): model = model.cuda()`: the move never runs on a TPU host; TPU103 reports the guard (error:
 * the work stays on the CPU) with this call as a related location, one finding for the problem.
 */
function reportedAtGuard(ctx: RuleContext, call: Node): boolean {
  for (const block of blocksAround(call)) {
    const owner = block.parent;
    if (!owner || (owner.type !== 'if_statement' && owner.type !== 'elif_clause') || owner.childForFieldName('consequence')?.id !== block.id) continue;
    if (!isSelected('TPU103', ctx.options.select, ctx.options.ignore)) return false;
    const cond = owner.childForFieldName('condition');
    if (cond && ctx.sema.callsWithin(cond).some((c) => ctx.sema.callee(c) === 'torch.cuda.is_available' &&
      !!availabilityFinding(ctx, c)?.related?.some((r) => r.start === call.startIndex && r.end === call.endIndex))) return true;
    // `if args.cuda: data = data.cuda()` with `args.cuda = not args.no_cuda and torch.cuda.is_available()` (Horovod's
    // pytorch_mnist example): TPU103 reports the flag (an error: the moves are skipped, the program runs on the CPU) with
    // this guard as a related location; "a TPU host has none" would be wrong here, the call never runs
    if (cond && flagGuardStarts(ctx).has(cond.startIndex)) return true;
  }
  return false;
}

/** The device text of an enclosing `if device != "cpu":` arm (see `notCpuTest`), else null. */
function notCpuGuard(call: Node): string | null {
  for (const block of blocksAround(call)) {
    const owner = block.parent;
    if (!owner || (owner.type !== 'if_statement' && owner.type !== 'elif_clause') || owner.childForFieldName('consequence')?.id !== block.id) continue;
    const cond = owner.childForFieldName('condition');
    if (cond && notCpuTest(cond)) {
      let c = cond;
      while (c.type === 'parenthesized_expression' && c.namedChildren[0]) c = c.namedChildren[0];
      return c.namedChildren[0]?.text ?? null;
    }
  }
  return null;
}

/** Start offsets of the `if <flag>:` conditions that TPU103's CUDA-flag findings list as related locations (once per file). */
function flagGuardStarts(ctx: RuleContext): Set<number> {
  let hit = guardMemo.get(ctx.sema);
  if (!hit) {
    hit = new Set();
    for (const c of ctx.sema.callsResolvedTo(['torch.cuda.is_available'])) {
      const f = availabilityFinding(ctx, c);
      if (f?.severity === 'error' && f.flag) for (const r of f.related ?? []) hit.add(r.start);
    }
    guardMemo.set(ctx.sema, hit);
  }
  return hit;
}
const guardMemo = new WeakMap<object, Set<number>>();

/** Containers whose elements are sibling moves of one edit: `a.cuda(), b.cuda()`, `f(a.cuda(), b.cuda())`, `[a.cuda(), b.cuda()]`. */
const SIBLINGS: ReadonlySet<string> = new Set(['argument_list', 'expression_list', 'tuple', 'list']);

const STATEMENT_STOPS: ReadonlySet<string> = new Set([
  'block', 'module', 'lambda', 'function_definition', 'class_definition', 'expression_statement', 'return_statement',
  'if_statement', 'for_statement', 'while_statement', 'with_statement', 'assert_statement', 'delete_statement',
]);

/** The simple statement (or compound statement header) that holds a call (memoised walk: nearestAncestor). */
function statementAround(call: Node): Node | null {
  const p = nearestAncestor(call, STATEMENT_STOPS)?.ancestor;
  return p && /_statement$/.test(p.type) ? p : null;
}

/** `torch.load(f, map_location=lambda storage, loc: storage.cuda(gpu))`: TPU602 reports the CUDA map_location (one finding). */
function inMapLocation(call: Node): boolean {
  // the nearest of these ancestors decides (memoized: one walk per call was quadratic in a deep expression)
  const p = nearestAncestor(call, MAP_LOCATION_STOPS)?.ancestor;
  if (p?.type === 'lambda') return p.parent?.type === 'keyword_argument' && p.parent.childForFieldName('name')?.text === 'map_location';
  return false;
}

const MAP_LOCATION_STOPS: ReadonlySet<string> = new Set(['lambda', 'function_definition', 'block', 'module']);
