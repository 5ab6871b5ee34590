import { defineRule, type FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, enclosingStatement, kwValue } from '../../core/semantics';
import { deleteStatement, insertLineBefore } from '../../core/edits';
import { downgrade } from '../../core/engine';
import { isDeviceWait, isModelCall, isTimerCall, runsDeviceWork, xlaContext } from './util';
import { reachesInHelpers } from '../../model/hotAcross';

const BENCH = /bench|profil|timing|perf_test/i;
const TRACE_NAME = /trac(e|ing)/i;

export default defineRule({
  id: 'TPU803',
  name: 'lazy-execution-timing',
  title: 'Timing lazy execution incorrectly',
  severity: 'warning',
  step: 9,
  effort: 1,
  message: 'The end time is read before the device finished: this measures tracing, not execution',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Wait for the device before reading the clock' },
  deviceWork: true,
  triggers: ['time', 'timer', 'wait_device_ops', 'wait=True'],
  docs: {
    what:
      'Checks for wall-clock pairs (`time.time()`, `time.perf_counter()`, `timeit.default_timer()`, …) around a training step, a model call or a ' +
      'data-loader loop with no `xm.wait_device_ops()` (or `sync(wait=True)`, or a host read such as `.item()`) before the end read; and for ' +
      '`xm.wait_device_ops()` / `sync(wait=True)` on every step of a training loop outside benchmark code. ' +
      'With project scope the step may run in another module\'s methods (`model.set_input(data); model.optimize_parameters()` whose bodies call `backward()`/`step()`). ' +
      'A loop-carried clock counts as a pair: `end = time.time()` at the end of a loop body read by `time.time() - end` earlier in the body times the wrapped-around step. ' +
      'An interval clock counts too: `start = time.time()` before the loop, read as `n / (time.time() - start)` and restarted under `if step % log_interval == 0:` in its body (throughput per log interval), with the body before that test as the timed region. ' +
      'A pair whose names say it times tracing on purpose (`trace_start_time`, `trace_end_time`) is not flagged.',
    why:
      'XLA tensors are lazy: ops are traced on the host and run asynchronously after the step barrier. Without waiting, "you are primarily measuring ' +
      'this tracing time plus Python overhead" (TVE). The benchmark example syncs and then calls `xm.wait_device_ops()`, and warns: "Do not call this ' +
      'function every step unless you are benchmarking … torch_xla won\'t be able to overlap the tracing of the next step with the device execution" ' +
      '(EX:debug/train_resnet_benchmark.py). Skip the first steps when computing throughput: they include compilation.',
    example: 't0 = time.perf_counter()\ntrain_step(x, y)\ndt = time.perf_counter() - t0',
    useInstead: 't0 = time.perf_counter()\ntrain_step(x, y)\ntorch_xla.sync(); xm.wait_device_ops()\ndt = time.perf_counter() - t0',
    fixSafety:
      'Safe outside the training loop (timing a benchmark, an epoch or a whole run): the inserted wait only delays the clock read. ' +
      'Unsafe inside a per-step loop, where a wait every step stops tracing from overlapping execution. Removing a per-step wait is unsafe: review benchmark code first.',
    sources: [
      'TVE (docs/source/learn/trace-vs-execution-time.md)',
      'EX:debug/train_resnet_benchmark.py (torch_xla.sync(); xm.wait_device_ops())',
      'XM:1084 (wait_device_ops)',
      'TX:78 (torch_xla.sync(wait=False, reset_scope=True); pytorch/xla@022ecde torch_xla/torch_xla.py:78)',
    ],
    torchtpu: 'The preview has no documented wait-for-device call here; the finding stays, with no fix.',
  },
  check(ctx) {
    // a CUDA script is checked too, but only for per-step timing in its training loop (what a migration keeps)
    const xla = xlaContext(ctx);
    if (!xla && !ctx.sema.usesTorch()) return;
    const sema = ctx.sema;
    const wait = ctx.idiom.waitDeviceOps();

    /** A statement that reads a result to the host on every run (not under an `if`). */
    const waitsAlways = (st: Node | null): boolean =>
      !!st && /^(expression_statement|return_statement)$/.test(st.type) && sema.callsWithin(st).some((c) => isDeviceWait(ctx, c));
    /**
     * `acc = evaluate(loader)` whose body reads a result to the host on every call (`return correct.item()`), or on every
     * iteration of its loop (`losses[k] = loss.item()`, lit-gpt's validate): the clock after it is already synced.
     */
    const callsUnconditionalWait = (call: Node): boolean =>
      sema.calledFunctions(call).some((fn) => {
        const body = fn.childForFieldName('body');
        return !!body && body.namedChildren.some((st) => {
          if (waitsAlways(st)) return true;
          if (st?.type !== 'for_statement' && st?.type !== 'while_statement') return false;
          return st.childForFieldName('body')?.namedChildren.some(waitsAlways) ?? false;
        });
      });
    /** The timed region runs a whole training run (`train(fabric, state, ...)` holds the training loop): a total, off by a step at most. */
    const trainLoops = sema.hotLoops().filter((h) => h.kind === 'train' && h.anchor.type !== 'function_definition');
    const runsWholeTraining = (region: Node[]): boolean =>
      region.some((st) => sema.callsWithin(st).some((c) => sema.calledFunctions(c).some((fn) => trainLoops.some((h) => h.anchor.startIndex >= fn.startIndex && h.anchor.endIndex <= fn.endIndex))));
    /** Where the last device work of a statement starts (a train signal or a model call), else -1. */
    const lastWorkAt = (st: Node): number => {
      let at = -1;
      for (const c of sema.callsWithin(st)) if (sema.isTrainSignal(c) || isModelCall(c)) at = Math.max(at, c.startIndex);
      return at;
    };

    /**
     * In a loop body, the `if` statement (a direct child of the body) that both reads the clock against `t0` and restarts
     * `t0 = <clock>()`: an interval timer started before the loop; else null.
     */
    const intervalRead = (loop: Node, t0: string): Node | null => {
      const body = loop.childForFieldName('body');
      for (const st of body?.namedChildren ?? []) {
        if (st?.type !== 'if_statement') continue;
        const block = st.childForFieldName('consequence');
        if (!block) continue;
        const restart = block.namedChildren.some((x) => x?.type === 'expression_statement' && x.namedChildren[0]?.type === 'assignment'
          && x.namedChildren[0].childForFieldName('left')?.text === t0 && isTimerCall(ctx, x.namedChildren[0].childForFieldName('right')!));
        const read = sema.callsWithin(block).some((c) => isTimerCall(ctx, c) && c.parent?.type === 'binary_operator' && c.parent.text.replace(/\s/g, '').endsWith(`-${t0}`));
        if (restart && read) return st;
      }
      return null;
    };

    // 1. start/end clock pairs around device work
    for (const a of sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (left?.type !== 'identifier' || !right || !isTimerCall(ctx, right)) continue;
      const start = a.parent;
      if (start?.type !== 'expression_statement' || !start.parent) continue;
      const siblings = start.parent.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
      const i = siblings.findIndex((s) => s.id === start.id);
      let endIdx = -1;
      for (let k = i + 1; k < siblings.length; k++) {
        if (sema.callsWithin(siblings[k]).some((c) => isTimerCall(ctx, c))) {
          endIdx = k;
          break;
        }
      }
      const t0 = left.text;
      const usesT0 = (n: Node) => sema.within('identifier', n).some((id) => id.text === t0);
      let region: Node[];
      let endNode: Node | null = null;
      if (endIdx < 0) {
        // a loop-carried clock (open_clip: `batch_time.update(time.time() - end); end = time.time()` at the end of the loop
        // body): the start is read by a clock read earlier in the body, on the next iteration; the timed region wraps
        // around to it. Taken only when the read is the first one after the start that spans device work.
        const loop = start.parent.parent;
        if (!loop || !/^(for_statement|while_statement)$/.test(loop.type) || loop.childForFieldName('body')?.id !== start.parent.id) continue;
        const restarts = (st: Node) => st.type === 'expression_statement' && st.namedChildren[0]?.type === 'assignment' && st.namedChildren[0].childForFieldName('left')?.text === t0;
        const k = siblings.findIndex((st, j) => j < i && usesT0(st) && !siblings.slice(0, j).some(restarts) && sema.callsWithin(st).some((c) => isTimerCall(ctx, c))
          && [...siblings.slice(i + 1), ...siblings.slice(0, j)].some((x) => runsDeviceWork(ctx, x)));
        if (k < 0) continue;
        endIdx = k;
        region = [...siblings.slice(i + 1), ...siblings.slice(0, k)];
      } else if (/^(for_statement|while_statement)$/.test(siblings[endIdx].type) && intervalRead(siblings[endIdx], t0)) {
        // throughput per log interval (word_language_model: `start = time.time()` before the loop, `elapsed = time.time() -
        // start` and the restart `start = time.time()` under `if batch % log_interval == 0:` in its body): the timed region
        // is the body before that test, run on every step
        const body = siblings[endIdx].childForFieldName('body')!.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
        const at = body.findIndex((st) => st.id === intervalRead(siblings[endIdx], t0)!.id);
        region = body.slice(0, at);
        endNode = body[at];
      } else {
        // the pair must be a pair: the start name is read at or after the end statement
        if (!siblings.slice(endIdx).some(usesT0)) continue;
        region = siblings.slice(i + 1, endIdx);
      }
      const end = endNode ?? siblings[endIdx];
      // `trace_start = timer(); step(); trace_end = timer()`: the names say the pair times tracing, on purpose
      const endName = end.namedChildren[0]?.type === 'assignment' ? end.namedChildren[0].childForFieldName('left')?.text ?? '' : '';
      if (TRACE_NAME.test(t0) || TRACE_NAME.test(endName)) continue;
      // the step may run in another module's methods (`model.set_input(data); model.optimize_parameters()`, CycleGAN):
      // the region's calls reach a backward or an optimizer step there (project scope)
      const regionCalls = () => region.flatMap((st) => sema.callsWithin(st));
      const stepElsewhere = (): boolean => !!ctx.project && !!reachesInHelpers(ctx.project, ctx.path, regionCalls(), (s, c) => s.isTrainSignal(c));
      if (!region.some((s) => runsDeviceWork(ctx, s)) && !stepElsewhere()) continue;
      const hotEnd = sema.hot(end);
      // in a CUDA script only the timed training step itself (backward / optimizer step in the region)
      if (!xla && (hotEnd?.kind !== 'train' || !(region.some((st) => sema.containsTrainSignal(st)) || stepElsewhere()))) continue;
      if (!hotEnd && runsWholeTraining(region)) continue;
      // a host read counts only after the last device work: `loss.item()` before `backward()`/`optimizer.step()` (tacotron2) does not
      // wait for them
      let last = -1;
      region.forEach((st, k) => {
        if (runsDeviceWork(ctx, st)) last = k;
      });
      const waitsAfterWork = region.some((st, k) => {
        if (k < last) return false;
        const at = k === last ? lastWorkAt(st) : -1;
        return sema.callsWithin(st).some((c) => (isDeviceWait(ctx, c) || callsUnconditionalWait(c)) && (c.startIndex > at || c.endIndex >= st.endIndex || c.parent?.type === 'return_statement'));
      });
      if (waitsAfterWork) continue;
      if (sema.callsWithin(end).some((c) => isDeviceWait(ctx, c) && c.startIndex < sema.callsWithin(end).find((t) => isTimerCall(ctx, t))!.startIndex)) continue;
      const endCall = sema.callsWithin(end).find((c) => isTimerCall(ctx, c))!;
      const hot = hotEnd;
      let fix: FixDraft | null = null;
      if (wait) {
        fix = {
          applicability: hot && !sema.hot(enclosingStatement(endCall))?.throttled ? 'unsafe' : 'safe',
          title: `Insert \`${wait.text}\` before the clock read`,
          // a clock read nested in `if step % k == 0:` gets the wait right before it, on the logged steps only
          edits: [insertLineBefore(ctx.text, enclosingStatement(endCall), wait.text)],
          imports: wait.imports,
          needsAccel: wait.needsAccel,
        };
      }
      ctx.report(endCall, {
        message: xla
          ? `\`${endCall.text}\` is read before the device finished the timed work: it measures tracing, not execution`
          : `\`${endCall.text}\` is read with no device wait after the step: on TPU (lazy tensors) this per-step time measures tracing, not execution`,
        fix,
      });
    }

    // 2. waiting for the device on every training step
    if (!xla) return;
    const benchFile = BENCH.test(ctx.path);
    for (const call of sema.callsResolvedTo(['torch_xla.core.xla_model.wait_device_ops', 'torch_xla.sync', 'torch_xla.core.xla_model.mark_step'])) {
      const callee = sema.callee(call) ?? '';
      const waits = callee === 'torch_xla.core.xla_model.wait_device_ops' ||
        ((callee === 'torch_xla.sync' || callee === 'torch_xla.core.xla_model.mark_step') && kwValue(callArgs(call).keywords.get('wait'))?.text === 'True');
      if (!waits || benchFile) continue;
      const hot = sema.hot(call);
      if (!hot || hot.throttled || hot.anchor.type === 'function_definition') continue;
      const fn = sema.enclosingFunction(call);
      if (fn && BENCH.test(fn.childForFieldName('name')?.text ?? '')) continue;
      const body = hot.anchor.childForFieldName('body');
      if (body && sema.callsWithin(body).some((c) => isTimerCall(ctx, c))) continue;
      const stmt = call.parent?.type === 'expression_statement' ? call.parent : null;
      ctx.report(call, {
        severity: hot.kind === 'eval' ? downgrade('warning') : 'warning',
        message: `\`${call.text}\` on every step stops tracing from overlapping device execution; keep it for benchmarks`,
        fix: stmt ? { applicability: 'unsafe', title: 'Remove the per-step device wait', edits: [deleteStatement(ctx.text, stmt)] } : null,
      });
    }
  },
});
