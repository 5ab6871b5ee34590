import { defineRule, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, enclosingStatement, methodName } from '../../core/semantics';
import { deleteStatement, insertLineAfter, insertLineBefore, replace } from '../../core/edits';
import {
  accelerateBackward, compiledStepNames, endOfBodyEdit, generatorBatchSource, short, frameworkBackward, insideNestedLoop, isBackward, isBarrierCall, isOptimizerStep, isStepContext,
  iteratesBarrierLoader, reachableCalls, tensorish,
} from './util';
import { cudaGuardedPlacement, handMovedLoaders, xlaWrap } from '../data/util';
import { reportGenerationBarrier } from './generation-report';
import { hotFacts, pickedByName, reachesInHelpers, resolveCallee, type HelperHit } from '../../model/hotAcross';
import type { Resolved } from '../../model/project';


function helperName(h: HelperHit): string {
  const fn = h.callee.def.childForFieldName('name')?.text ?? 'helper';
  const cls = h.callee.kind === 'method' ? h.callee.module.sema.enclosingClass(h.callee.def)?.childForFieldName('name')?.text : undefined;
  return cls ? `${cls}.${fn}` : fn;
}

/** A factory picks the model class at run time (a registry): the method named is one of the project's classes'. */
function pickNote(r: Resolved): string {
  return pickedByName(r) ? ' or another project class the factory picks at run time' : '';
}

/** The optimizer steps of `body` whose only loops below it walk the optimizers (`for opt in optimizers: opt.step()`). */
function optimizerLoopSteps(ctx: RuleContext, body: Node): Node[] {
  const out: Node[] = [];
  for (const c of ctx.sema.callsWithin(body)) {
    if (!insideNestedLoop(c, body) || !isOptimizerStep(ctx, c)) continue;
    let ok = true;
    for (let p = c.parent; p && p.id !== body.id; p = p.parent) {
      if (p.type === 'function_definition' || p.type === 'lambda') break;
      if (p.type === 'while_statement' || (p.type === 'for_statement' && !ctx.sema.overOptimizers(p))) {
        ok = false;
        break;
      }
    }
    if (ok) out.push(c);
  }
  return out;
}

function headerEnd(loop: Node): number {
  const colon = loop.children.find((c) => c?.type === ':');
  return colon ? colon.endIndex : loop.childForFieldName('body')?.startIndex ?? loop.endIndex;
}

/** A call that reaches a `torch_xla.compile`-wrapped step function, or `next()` on an MpDeviceLoader iterator. */
function isCompiledOrLoaderStep(ctx: RuleContext, call: Node, compiled: Set<string>): boolean {
  const fn = call.childForFieldName('function');
  if (fn?.type === 'identifier' && compiled.has(fn.text)) return true;
  if (fn?.type === 'attribute' && compiled.has(fn.childForFieldName('attribute')?.text ?? '')) return true;
  if (fn?.type === 'identifier' && fn.text === 'next') {
    const it = callArgs(call).positional[0];
    if (it) {
      const fake = { type: 'for_statement', childForFieldName: (f: string) => (f === 'right' ? it : null) } as unknown as Node;
      return iteratesBarrierLoader(ctx, fake);
    }
  }
  return false;
}

/** Statements directly in `body` (through `with` blocks only): their order is the iteration's order. */
/**
 * `R.step()` on the receiver of the iteration's `R.backward(loss)`: an engine that owns the optimizer and runs its
 * step (DeepSpeed's `model_engine.backward(loss)` then `model_engine.step()`, cifar10_deepspeed, DeepSpeed-Chat);
 * the loop is a training loop like one calling `optimizer.step()` directly.
 */
function engineStep(direct: Node[], all: Node[]): Node | undefined {
  const backs = new Set<string>();
  for (const c of all) {
    if (methodName(c) !== 'backward' || !callArgs(c).positional.length) continue;
    const r = c.childForFieldName('function')?.childForFieldName('object');
    if (r && (r.type === 'identifier' || r.type === 'attribute')) backs.add(r.text);
  }
  if (!backs.size) return undefined;
  return direct.find((c) => methodName(c) === 'step' && backs.has(c.childForFieldName('function')?.childForFieldName('object')?.text ?? '\0'));
}

/** The leading name of a method call's receiver (`opt` of `opt.step()`, `self` of `self.opt.step()`). */
function rootName(call: Node): string {
  let n = call.childForFieldName('function')?.childForFieldName('object') ?? null;
  while (n && (n.type === 'attribute' || n.type === 'subscript')) n = n.childForFieldName(n.type === 'attribute' ? 'object' : 'value');
  return n?.type === 'identifier' ? n.text : '';
}

function straightLine(stmt: Node, body: Node): boolean {
  for (let p = stmt.parent; p && p.id !== body.id; p = p.parent) {
    if (p.type !== 'block' && p.type !== 'with_statement') return false;
  }
  return true;
}

export default defineRule({
  id: 'TPU204',
  name: 'missing-step-barrier',
  // TorchTPU runs eagerly first (no lazily traced graph to cut), and its compiled step is torch.compile's: no barrier API
  profiles: ['torch_xla'],
  title: 'Step barrier missing, or placed wrong',
  severity: 'warning',
  step: 6,
  effort: 1,
  message: 'Training loop has no step barrier: the lazily traced graph grows across iterations',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'End the training iteration with a step barrier' },
  // 'loader': a loop over a loader whose step lives in another module's helper (project scope)
  deviceWork: true,
  triggers: ['.backward(', 'optimizer_step', 'range(', 'timesteps', 'loader'],
  docs: {
    what:
      'Sampling loops outside training (a loop that calls a model and carries a fixed-shape tensor to the next step: DDPM/DDIM/diffusers denoising) with no barrier, no per-step host read or device break of the carried tensor itself and more than 16 steps (info; the same end-of-step sync fix). A read of another value (`torch.multinomial(prob, 1).item()` in an RNN sampler) runs only that value\'s graph: torch_xla\'s `_local_scalar_dense` syncs live tensors only under the `early_sync` experiment (torch_xla/csrc/aten_xla_type.cpp:4164-4175 at v2.9.0), so the recurrent state stays pending. The model step may be a sampler method (`self.ddim_sample(model, x, t)`, `self.model_predictions(x, t)`) or an `rnn`/`lstm`/`gru`. ' +
      'Checks training loops (a `for`/`while` whose iteration runs `backward` and an optimizer step, directly or through two levels of same-file calls, including the `__call__` of a same-file class the loop calls an instance of (`loss_scaler(loss, optimizer)` after `loss_scaler = NativeScaler()`); with project scope also a loop over a loader whose backward and step run in another module\'s helper, e.g. a loss scaler\'s `__call__`; a training engine that owns the optimizer, `engine.backward(loss)` then `engine.step()` as with DeepSpeed; ' +
      'and a loop with no loader or backward of its own that calls, each iteration, another module\'s method running a whole step, e.g. an RL loop\'s `policy.train(replay_buffer)`; ' +
      'an outer step loop whose backward sits in a micro-batch loop and whose optimizer steps sit in a loop over the optimizers (`for opt, sched in zip(optimizers, schedulers): opt.step()`); a shared train/val loop under `with (torch.enable_grad() if is_train else torch.no_grad()):`; ' +
      'not a loop that only steps an optimizer or scheduler to record the learning rate (no backward, no other work: no graph); ' +
      'the method may be that of an object a project factory returns: `model = define_model(opt)` then `model.optimize_parameters(step)`, the class resolved through the factory\'s returns and function-local imports, or, when the factory picks it at run time from a registry, the project\'s first class whose method of that name runs backward and a step) ' +
      'that contain no step barrier: `torch_xla.sync()`, `xm.mark_step()`, `xm.optimizer_step(opt, barrier=True)`, iteration over `pl.MpDeviceLoader` ' +
      'or `ParallelLoader(...).per_device_loader(...)`, a call to a `torch_xla.compile`-wrapped step, or `with torch_xla.step():` / `with torch_xla.compile():`. ' +
      'An iteration that runs an optimizer step itself (not a loop over the optimizers) is a training step even when its backward is out of sight (deeper calls, another package\'s engine, the model\'s own `forward_backward`). ' +
      'Loops driven by Accelerate or Lightning Fabric (`accelerator.backward(loss)`, `fabric.backward(loss)`) count as having a barrier, except an Accelerate loop whose batches all come from a generator over a loader `accelerator.prepare()` never saw (`cycle(DataLoader(...))` passed to prepare, `itertools.cycle(ds)`): prepare wraps only DataLoaders in its syncing XLA loader and returns a generator unchanged. ' +
      'With gradient accumulation the loop that runs the optimizer step is the iteration; the micro-batch loop is not. The finding sits on the loop header. ' +
      'It also reports, as info, barriers placed wrong: inside `forward()`, inside the micro-batch loop of gradient accumulation, or between the forward ' +
      'pass and `backward`/the optimizer step of the same iteration (which splits one step into several graphs).',
    why:
      'torch_xla records operations into a graph and only compiles and runs it at a barrier: "Calling `torch_xla.sync()` at the end of each training ' +
      'iteration causes XLA to execute its current graph" (DEV:92-110). Without one the graph keeps growing across iterations, so compiles get longer ' +
      'and the host can run out of memory. `xm.optimizer_step` does not sync by default: its signature is `optimizer_step(optimizer, barrier=False, ...)` ' +
      'and it calls the barrier only `if barrier` (XM:1169-1207). The sync in the documented multi-process recipe comes from `MpDeviceLoader`, whose ' +
      'per-device iterator calls the barrier on every `next()` (PL:39-56).',
    example: 'for x, y in loader:\n    loss = F.cross_entropy(model(x), y)\n    loss.backward()\n    optimizer.step()',
    useInstead:
      'import torch_xla\n\nfor x, y in loader:\n    loss = F.cross_entropy(model(x), y)\n    loss.backward()\n    optimizer.step()\n' +
      '    torch_xla.sync()        # xm.mark_step() on torch_xla < 2.4\n\n' +
      '# or iterate pl.MpDeviceLoader(loader, device) (TPU401), or call xm.optimizer_step(optimizer, barrier=True)',
    fixSafety:
      'Safe: the barrier is added as the last statement of the iteration (before a trailing `continue`/`break`), so each iteration runs as one graph; ' +
      'when a `continue` elsewhere in the body would skip it, it goes at the top of the iteration instead, which every iteration reaches (where `MpDeviceLoader` syncs too, before each batch), and once after the loop for the last iteration; ' +
      'when the iteration already calls `torch.cuda.synchronize()` after the optimizer step, the fix turns that call into the barrier (the same rewrite as TPU104) instead of adding a second one; ' +
      'when the loop iterates a plain `DataLoader` (or pulls `next(iter(loader))`) and moves the batch by hand, the fix wraps the loader in `pl.MpDeviceLoader` instead (TPU401), whose per-batch sync is the barrier; ' +
      'on CUDA/CPU the dual-path `accel.sync()` does nothing. With gradient accumulation it goes after the optimizer step in the outer loop. ' +
      'Removing a misplaced barrier is unsafe (it changes how the step is split into graphs and may grow it) and is offered one at a time.',
    sources: [
      'DEV:92-110 (docs/source/learn/pytorch-on-xla-devices.md: sync at the end of each training iteration)',
      'XM:1169-1207 optimizer_step(optimizer, barrier=False, ...): `if barrier: mark_step()` (torch_xla/core/xla_model.py; read at pytorch/xla@020f3f5)',
      'PL:39-56 PerDeviceLoader.next() calls the barrier before each batch (torch_xla/distributed/parallel_loader.py; read at pytorch/xla@017acb1)',
      'TX:78 torch_xla.sync(wait=False, reset_scope=True) since 2.4; TX:99-106 torch_xla.step(); TX:114 torch_xla.compile (torch_xla/torch_xla.py; read at pytorch/xla@022ecde)',
      'lightning/fabric/plugins/precision/xla.py passes barrier=True to xm.optimizer_step',
      'accelerate src/accelerate/accelerator.py:1400 (_prepare_one wraps torch.utils.data.DataLoader only), data_loader.py:1328 (MpDeviceLoaderWrapper on XLA), optimizer.py:145-181 (AcceleratedOptimizer.step: no mark_step; read at huggingface/accelerate@16cb6eb)',
    ],
    torchtpu: 'The torchtpu preview has no known step-barrier API, so no fix is offered: the message names the loop so you can check how its step is compiled.',
  },
  check(ctx) {
    const compiled = compiledStepNames(ctx);
    const sync = ctx.idiom.sync();
    const flaggedBarriers = new Set<number>();
    const misplaced = (call: Node, message: string) => {
      if (flaggedBarriers.has(call.id)) return;
      flaggedBarriers.add(call.id);
      const stmt = enclosingStatement(call);
      const removable = stmt.type === 'expression_statement' && stmt.namedChildren[0]?.id === call.id;
      ctx.report(call, {
        severity: 'info',
        message,
        fix: removable ? { title: 'Remove this barrier', applicability: 'unsafe', edits: [deleteStatement(ctx.text, stmt)] } : null,
      });
    };

    // (b) a barrier inside forward()
    for (const call of ctx.sema.nodes('call')) {
      if (!isBarrierCall(ctx, call)) continue;
      if (ctx.sema.moduleMethod(call) === 'forward') misplaced(call, `\`${call.text}\` inside \`forward()\` cuts the step's graph in the middle of the model; keep the barrier in the training loop`);
    }

    for (const info of ctx.sema.hotLoops()) {
      const loop = info.anchor;
      if (info.kind !== 'train') continue;
      const body = loop.childForFieldName('body');
      if (!body) continue;
      // (an optimizer step in a loop over the optimizers, `for opt, sched in zip(optimizers, schedulers): opt.step()`, is
      // this iteration's step: Semantics.overOptimizers)
      const direct = [...reachableCalls(ctx, body, 2, true), ...optimizerLoopSteps(ctx, body)];
      const all = reachableCalls(ctx, body, 2, false);
      // project scope: the backward and the optimizer step may live in a helper of another module (a loss scaler's
      // `__call__`, a trainer's `run_step`): the loop is a training loop when it reaches them there
      let helper: HelperHit | null = null;
      // a training engine that owns the optimizer (DeepSpeed's `engine.backward(loss); engine.step()`)
      const engine = direct.some((c) => isOptimizerStep(ctx, c)) ? undefined : engineStep(direct, all);
      if (!engine && !direct.some((c) => isOptimizerStep(ctx, c))) {
        if (!ctx.project || !(helper = reachesInHelpers(ctx.project, ctx.path, direct, (s, c) => methodName(c) === 'step' && s.isTrainSignal(c)))) continue;
      }
      // an optimizer step of this iteration (not of a nested loop) makes it a training step even when its backward is
      // out of sight: deeper than two calls (torchtitan's train_step -> forward_backward_step -> self.fwd_bwd_fn), in a
      // pipeline engine of another package (nanotron's train_batch_iter), in the model's own method (dinov2's
      // model.forward_backward)
      // (not a loop over the optimizers themselves: `for name, opt in self.optimizers(): opt.step()`)
      const targets = new Set(loop.type === 'for_statement' ? ctx.sema.within('identifier', loop.childForFieldName('left') ?? loop).map((i) => i.text) : []);
      const ownStep = !helper && !engine && direct.some((c) => isOptimizerStep(ctx, c) && !targets.has(rootName(c)));
      if (!ownStep && !all.some((c) => isBackward(c))) {
        const back = ctx.project ? reachesInHelpers(ctx.project, ctx.path, all, (_s, c) => isBackward(c)) : null;
        if (!back) continue;
        helper ??= back;
      }
      // `for step in range(20000): lrs.append(opt.param_groups[0]["lr"]); opt.step(); sched.step()` (plotting a learning
      // rate schedule): no backward and no other work, so no graph is traced and there is nothing to cut
      if (ownStep && !all.some((c) => isBackward(c)) && all.every((c) => /^(step|zero_grad|append|get_last_lr)$/.test(methodName(c) ?? '') || c.childForFieldName('function')?.text === 'print')) continue;
      // Lightning Fabric's XLA optimizer step passes barrier=True; Accelerate's barrier is the MpDeviceLoaderWrapper that
      // prepare() puts around a DataLoader, so a loop fed by a generator (`cycle(loader)`) has none
      const generator = all.some((c) => accelerateBackward(ctx, c)) ? generatorBatchSource(ctx, loop, all) : null;
      if (!generator && all.some((c) => frameworkBackward(ctx, c) || methodName(c) === 'manual_backward')) continue;
      // a helper that ends the step itself (`xm.optimizer_step(opt, barrier=True)`, `torch_xla.sync()`)
      if (helper && reachesInHelpers(ctx.project, ctx.path, all, (s, c) => /(^|\.)(mark_step|sync|optimizer_step)$/.test(s.callee(c) ?? '') && /torch_xla/.test(s.callee(c) ?? ''))) continue;

      // (b) barriers in the micro-batch loop, or between forward and backward/step of one iteration
      const bodyCalls = ctx.sema.callsWithin(body);
      for (const call of bodyCalls) {
        if (!isBarrierCall(ctx, call) || /optimizer_step$/.test(ctx.sema.callee(call) ?? '')) continue;
        if (insideNestedLoop(call, body)) {
          let inner: Node | null = call.parent;
          while (inner && inner.type !== 'for_statement' && inner.type !== 'while_statement') inner = inner.parent;
          const innerBody = inner?.childForFieldName('body');
          if (inner && innerBody && inner.parent && insideOrEqual(inner, body)) {
            const innerCalls = reachableCalls(ctx, innerBody, 1, false);
            if (innerCalls.some((c) => isBackward(c)) && !innerCalls.some((c) => isOptimizerStep(ctx, c))) {
              misplaced(call, `\`${call.text}\` inside the gradient-accumulation loop executes every micro-batch; put the barrier after the optimizer step`);
            }
          }
          continue;
        }
        const stmt = enclosingStatement(call);
        if (!straightLine(stmt, body)) continue;
        const before = bodyCalls.filter((c) => c.endIndex <= stmt.startIndex && !insideNestedLoop(c, body) && (tensorish(ctx, c, true) || isBackward(c)));
        const after = bodyCalls.filter((c) => c.startIndex >= stmt.endIndex && !insideNestedLoop(c, body) && (isBackward(c) || isOptimizerStep(ctx, c)));
        if (before.length && after.length) {
          misplaced(call, `\`${call.text}\` in the middle of the iteration splits one training step into several graphs; keep one barrier at the end`);
        }
      }

      // (a) missing barrier
      if (iteratesBarrierLoader(ctx, loop)) continue;
      if (all.some((c) => isBarrierCall(ctx, c) || isCompiledOrLoaderStep(ctx, c, compiled))) continue;
      if (ctx.sema.within('with_statement', body).some((w) => isStepContext(ctx, w))) continue;

      const usesOptStep = all.find((c) => /(^|\.)optimizer_step$/.test(ctx.sema.callee(c) ?? ''));
      const header = { start: loop.startIndex, end: headerEnd(loop) };
      const related = helper ? { related: [{ start: helper.node.startIndex, end: helper.node.endIndex, path: helper.path, message: `the step in \`${helperName(helper)}\`` }] } : {};
      const what = usesOptStep
        ? '`optimizer_step` without `barrier=True` does not sync, and this loop has no other step barrier'
        : generator
          ? `Training loop has no step barrier (its batches come from the generator \`${short(generator.text, 40)}\`, which \`accelerator.prepare()\` leaves unwrapped: only a DataLoader gets its syncing XLA loader)`
        : engine
          ? `Training loop has no step barrier (\`${engine.text}\` runs the engine's optimizer step)`
        : helper
          ? `Training loop has no step barrier (its backward/optimizer step run in \`${helperName(helper)}\`${pickNote(helper.callee)}, ${helper.path.split('/').pop()}:${helper.sema.text.slice(0, helper.node.startIndex).split('\n').length})`
          : 'Training loop has no step barrier';
      const message = sync
        ? `${what}: the lazily traced graph grows across iterations; end each iteration with \`${sync.text}\``
        : `${what} (no sync, MpDeviceLoader or compiled step): check how the torchtpu step is compiled; no known barrier API`;
      // a loop the parser could not read completely: report, but rewrite nothing (its barrier may sit in the unparsed part)
      if (loop.hasError) {
        ctx.report(header, { message, ...related });
        continue;
      }
      // a plain DataLoader whose batches the loop moves by hand (TPU401): wrapping it is the barrier (MpDeviceLoader syncs on
      // every batch), rather than a sync that would stay redundant once TPU401's fix wraps the loader
      // (onto the XLA device, never the loop's old one; not while a CUDA check decides where the model goes)
      const hand = sync && !cudaGuardedPlacement(ctx) ? handMovedLoaders(ctx, loop).find((h) => h.pulls.every((p) => !insideNestedLoop(p, body))) : undefined;
      const wrap = hand ? xlaWrap(ctx, hand.loader.text) : null;
      if (hand && wrap) {
        ctx.report(header, {
          message: `${what}: the lazily traced graph grows across iterations; iterate \`${wrap.text}\`, which syncs on every batch`,
          ...related,
          fix: {
            title: `Iterate \`${wrap.text}\` (it syncs on every batch)`,
            edits: hand.sites.map((l) => replace(l, wrap.text)),
            imports: wrap.imports,
            needsAccel: wrap.needsAccel,
          },
        });
        continue;
      }
      // `torch.cuda.synchronize()` after the optimizer step (timm's train_one_epoch): TPU104 rewrites it into a barrier and a
      // wait; the barrier fix is that same rewrite, so the iteration does not end up with two syncs
      const wait = ctx.idiom.waitDeviceOps();
      const cudaSync = sync && wait
        ? bodyCalls.find((c) => {
            if (ctx.sema.callee(c) !== 'torch.cuda.synchronize' || insideNestedLoop(c, body)) return false;
            const stmt = enclosingStatement(c);
            return stmt.type === 'expression_statement' && stmt.namedChildren[0]?.id === c.id && straightLine(stmt, body) && bodyCalls.some((o) => isOptimizerStep(ctx, o) && o.endIndex <= stmt.startIndex);
          })
        : undefined;
      if (cudaSync && wait) {
        ctx.report(header, {
          message: `${what}: the lazily traced graph grows across iterations; \`${cudaSync.text}\` sits where the barrier belongs: make it \`${wait.text}\``,
          ...related,
          fix: { title: `Replace \`${cudaSync.text}\` with \`${wait.text}\``, edits: [replace(cudaSync, wait.text)], imports: wait.imports, needsAccel: wait.needsAccel },
        });
        continue;
      }
      ctx.report(header, {
        message,
        ...related,
        fix: sync ? barrierFix(ctx, loop, body, sync.text, sync.imports, sync.needsAccel) : null,
      });
    }
    reportStepInCalledHelper(ctx, sync);
    reportGenerationBarrier(ctx); // sampling loops outside training (info)
  },
});

/** `continue` statements that continue the loop whose body is `body` (not one of a nested loop or function). */
function continuesOf(body: Node): Node[] {
  const out: Node[] = [];
  const walk = (n: Node) => {
    for (const c of n.namedChildren) {
      if (!c) continue;
      if (c.type === 'continue_statement') out.push(c);
      else if (!/^(for_statement|while_statement|function_definition|class_definition|lambda)$/.test(c.type)) walk(c);
      else if (c.type === 'for_statement' || c.type === 'while_statement') {
        // the else clause of a nested loop belongs to the outer iteration
        const alt = c.childForFieldName('alternative');
        if (alt) walk(alt);
      }
    }
  };
  walk(body);
  return out;
}

function insideOrEqual(node: Node, scope: Node): boolean {
  return node.startIndex >= scope.startIndex && node.endIndex <= scope.endIndex;
}

function barrierFix(ctx: RuleContext, loop: Node, body: Node, text: string, imports: { module: string; alias?: string }[], needsAccel: boolean) {
  const stmts = body.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
  const last = stmts[stmts.length - 1];
  if (!last) return null;
  const oneLine = !ctx.text.slice(loop.startIndex, body.startIndex).includes('\n');
  // a `continue` of this loop, other than a trailing one, skips a barrier at the end of the body (issue 10): put it at the
  // top of the iteration instead, which every iteration reaches, where MpDeviceLoader syncs too (before each batch, PL:39-56)
  const skips = continuesOf(body).some((c) => c.id !== last.id);
  if (skips) {
    if (oneLine) return null;
    // and once after the loop, so the last iteration's graph (and its step closures) runs before whatever follows
    return {
      title: `Add \`${text}\` at the start of each training iteration and after the loop (a \`continue\` skips the end)`,
      edits: [insertLineBefore(ctx.text, stmts[0], text), insertLineAfter(ctx.text, loop, text)],
      imports,
      needsAccel,
    };
  }
  const edit = endOfBodyEdit(ctx, loop, last, body, text);
  if (!edit) return null;
  return { title: `Add \`${text}\` at the end of the training iteration`, edits: [edit], imports, needsAccel };
}

/**
 * The step of another module's method, run once per call (its backward and optimizer step not in a loop of its own),
 * found in `def`: `TD3.train(replay_buffer)` computes the losses, calls `backward()` and `critic_optimizer.step()`.
 */
function helperStep(def: Resolved): Node | null {
  const sema = def.module.sema;
  const own = sema.within('call', def.def).filter((c) => sema.enclosingFunction(c)?.id === def.def.id && !insideNestedLoop(c, def.def));
  if (!own.some((c) => isBackward(c))) return null;
  if (own.some((c) => /(^|\.)(mark_step|sync|optimizer_step)$/.test(sema.callee(c) ?? '') && /torch_xla/.test(sema.callee(c) ?? ''))) return null;
  return own.find((c) => methodName(c) === 'step' && sema.isTrainSignal(c)) ?? null;
}

/**
 * Project scope: a loop that is no hot loop of this file (no loader, no backward of its own) but calls, once per
 * iteration, another module's method that runs a whole training step (an RL loop's `policy.train(replay_buffer)`
 * between environment steps, TD3 main.py): the iteration is a training step with no barrier.
 */
function reportStepInCalledHelper(ctx: RuleContext, sync: ReturnType<RuleContext['idiom']['sync']>): void {
  const project = ctx.project;
  const facts = hotFacts(project);
  const m = project?.module(ctx.path);
  if (!project || !facts || !m) return;
  const hotIds = new Set(ctx.sema.hotLoops().map((h) => h.anchor.id));
  const compiled = compiledStepNames(ctx);
  for (const loop of [...ctx.sema.nodes('for_statement'), ...ctx.sema.nodes('while_statement')]) {
    if (hotIds.has(loop.id) || ctx.sema.hot(loop)) continue;
    const body = loop.childForFieldName('body');
    if (!body) continue;
    const direct = reachableCalls(ctx, body, 1, true);
    let hit: { call: Node; def: Resolved; step: Node } | null = null;
    for (const c of direct) {
      const fn = c.childForFieldName('function');
      if (fn?.type !== 'attribute' && fn?.type !== 'identifier') continue;
      const def = resolveCallee(project, facts, m, c, 2);
      if (!def || def.path === m.path) continue;
      const step = helperStep(def);
      if (step) {
        hit = { call: c, def, step };
        break;
      }
    }
    if (!hit) continue;
    const all = reachableCalls(ctx, body, 2, false);
    if (iteratesBarrierLoader(ctx, loop) || all.some((c) => isBarrierCall(ctx, c) || isCompiledOrLoaderStep(ctx, c, compiled))) continue;
    if (ctx.sema.within('with_statement', body).some((w) => isStepContext(ctx, w))) continue;
    const sema = hit.def.module.sema;
    const cls = hit.def.kind === 'method' ? sema.enclosingClass(hit.def.def)?.childForFieldName('name')?.text : undefined;
    const fnName = hit.def.def.childForFieldName('name')?.text ?? 'helper';
    const name = `${cls ? `${cls}.` : ''}${fnName}`;
    const line = sema.text.slice(0, hit.step.startIndex).split('\n').length;
    const what = `Loop runs a training step every iteration through \`${short(hit.call.text, 40)}\` (backward and \`${short(hit.step.text, 30)}\` in \`${name}\`${pickNote(hit.def)}, ${hit.def.path.split('/').pop()}:${line}) with no step barrier`;
    const header = { start: loop.startIndex, end: headerEnd(loop) };
    const related = { related: [{ start: hit.step.startIndex, end: hit.step.endIndex, path: hit.def.path, message: `the optimizer step in \`${name}\`` }] };
    const message = sync
      ? `${what}: the lazily traced graph grows across iterations; end each iteration with \`${sync.text}\``
      : `${what}: check how the torchtpu step is compiled; no known barrier API`;
    ctx.report(header, { message, ...related, fix: sync && !loop.hasError ? barrierFix(ctx, loop, body, sync.text, sync.imports, sync.needsAccel) : null });
  }
}
