import { defineRule, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import type { HotInfo } from '../../core/semantics';
import { callArgs, conditionOf, enclosingStatement, kwValue, methodName, receiver } from '../../core/semantics';
import { argumentAt, hotCallTarget, paramName } from '../../model/hotAcross';
import { replace } from '../../core/edits';
import { cudaOnly, tpuTruth } from '../../model/guards';
import { hostValue, hotAt, parameterLoop, parameterLoopBranches, severityIn, short, tensorish, throttledEvalScope, throttledEvalWork } from './util';
import { reportGenerationReads } from './generation-report';
import { reportRoundTrips } from './rollout';

const MATERIALIZE = new Set(['item', 'tolist', 'cpu', 'numpy']);
// `chr(t)`, `hex(t)`: Python calls `Tensor.__index__`, which reads a one-element tensor's value like `int(t)`
const INDEX_CONVERT = new Set(['chr', 'hex', 'oct', 'bin']);
const CONVERT = new Set(['float', 'int', 'bool', 'str', 'repr', ...INDEX_CONVERT]);
const BUILTINS = new Set([
  'print', 'float', 'int', 'bool', 'str', 'repr', 'len', 'round', 'sum', 'min', 'max', 'abs', 'format', 'list', 'dict', 'tuple',
  'range', 'enumerate', 'zip', 'sorted', 'isinstance', 'getattr', 'type', 'True', 'False', 'None', 'self',
]);

/** `x.item()`-style call whose receiver chain already contains a host read (report the first one only). */
function chainHasRead(node: Node | null): boolean {
  return someInChain(node, Infinity, (call) => {
    const m = methodName(call);
    return m && MATERIALIZE.has(m) ? true : undefined;
  });
}

/**
 * Walks a receiver chain (method calls, attributes, subscripts, parentheses) from `node` down to its base, at most `max`
 * links: `onCall(call, k)` answers true (found), false (stop) or undefined (go on to the call's receiver).
 */
function someInChain(node: Node | null, max: number, onCall: (call: Node, k: number) => boolean | undefined): boolean {
  let n = node;
  for (let k = 0; n && k < max; k++) {
    if (n.type === 'call') {
      const r = onCall(n, k);
      if (r !== undefined) return r;
      n = receiver(n);
    } else if (n.type === 'attribute') n = n.childForFieldName('object');
    else if (n.type === 'subscript') n = n.childForFieldName('value');
    else if (n.type === 'parenthesized_expression') n = n.namedChildren[0];
    else return false;
  }
  return false;
}

/** Calls that report values: print, logging, wandb, TensorBoard, tqdm postfix. */
function isReportCall(ctx: RuleContext, call: Node): boolean {
  const fn = call.childForFieldName('function');
  if (fn?.type === 'identifier') return fn.text === 'print';
  const callee = ctx.sema.callee(call) ?? '';
  if (/^(wandb\.log|logging\.(debug|info|warning|error|critical|log)|torch_xla\.core\.xla_model\.master_print|mlflow\.log_metrics?)$/.test(callee)) return true;
  const meth = methodName(call) ?? '';
  const recv = receiver(call)?.text ?? '';
  if (/^(debug|info|warning|warn|error|critical|log)$/.test(meth) && /log|wandb|run|experiment|tracker|accelerator/i.test(recv)) return true;
  if (/^(add_scalar|add_scalars|log_metrics|log_metric|set_postfix|set_description|write)$/.test(meth)) return true;
  // a metric of `evaluate`/`datasets` converts what it is given to NumPy/lists: `metric.add_batch(predictions=preds, references=refs)`
  if (/^(add_batch|add)$/.test(meth) && /metric/i.test(recv) && callArgs(call).keywords.has('predictions')) return true;
  return meth === 'print' && /accelerator|fabric|xm/.test(recv);
}

/** Names bound per iteration inside the hot loop (loop targets, assignments): a closure must receive them as args. */
function iterationNames(ctx: RuleContext, loop: Node): Set<string> {
  const out = new Set<string>();
  const addTargets = (n: Node | null) => {
    if (!n) return;
    if (n.type === 'identifier') out.add(n.text);
    else if (/pattern|list|tuple|parenthesized/.test(n.type)) n.namedChildren.forEach((c) => addTargets(c));
  };
  addTargets(loop.childForFieldName('left'));
  for (const t of ['for_statement', 'assignment', 'augmented_assignment']) {
    for (const n of ctx.sema.within(t, loop)) addTargets(n.childForFieldName('left'));
  }
  return out;
}

function closureParams(ctx: RuleContext, call: Node, loop: Node): string[] {
  const perIter = iterationNames(ctx, loop);
  const bound = new Set<string>();
  for (const c of ctx.sema.within('for_in_clause', call)) {
    for (const id of ctx.sema.within('identifier', c.childForFieldName('left') ?? c)) bound.add(id.text);
  }
  const out: string[] = [];
  for (const id of ctx.sema.within('identifier', call)) {
    const parent = id.parent;
    if (parent?.type === 'attribute' && parent.childForFieldName('attribute')?.id === id.id) continue;
    if (parent?.type === 'keyword_argument' && parent.childForFieldName('name')?.id === id.id) continue;
    if (BUILTINS.has(id.text) || bound.has(id.text) || ctx.sema.aliases.has(id.text)) continue;
    if (perIter.has(id.text) && !out.includes(id.text)) out.push(id.text);
  }
  return out;
}

export default defineRule({
  id: 'TPU201',
  name: 'host-read-in-hot-loop',
  title: 'Host materialization of tensor values inside the hot loop',
  severity: 'warning',
  step: 6,
  effort: 3,
  message: 'Reading a tensor value on the host inside the training loop forces the pending graph to execute mid-step',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Report the value from a step closure' },
  deviceWork: true,
  triggers: ['.item(', '.tolist(', '.cpu(', '.numpy(', 'for ', 'all(', 'any(', 'print(', 'float(', 'int(', 'bool(', 'str(', 'repr(', 'f"', "f'", '%', '.log(', '.info(', 'add_scalar', 'set_postfix', 'asarray', 'np.array'],
  docs: {
    what:
      'Generation loops outside training (a loop that calls a model and feeds its output back, see graph/generation.ts): `.item()`/`.tolist()`/`.cpu()`/`.numpy()` of a tensor every step (info). ' +
      'Environment rollouts outside training (graph/rollout.ts: a loop that uploads host data, `torch.Tensor(next_obs).to(device)` or a helper given a device, `obs_as_tensor(obs, self.device)`, reads what the device computed from it back to the host, `action.cpu().numpy()`, and hands that to a host call whose result is uploaded again, `env.step(...)`): the read, once per round trip (warning, the uploads related, no fix); a per-item read whose value does not come back to the device, or a policy kept on the CPU, is not one. ' +
      'Checks for tensor values read on the host inside a hot loop (a training or eval loop, `forward`, or a compiled step): ' +
      '`.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `float(t)`/`int(t)`/`bool(t)`/`str(t)`, `print(t)`, f-strings and `%` formatting of tensors, ' +
      '`logger.info(t)`, `wandb.log({...: t})`, `writer.add_scalar(tag, t)`, `pbar.set_postfix(loss=t)` and `np.asarray(t)`; ' +
      'Python reading a device tensor one element at a time: `for v in t`, `(*t,)` as `%` arguments, `all(t)`/`any(t)`/`list(t)`/`sum(t)`, and a device tensor as the index of a Python list or dict (`counts[label]`). ' +
      '`.numpy()` of a tensor on the accelerator is an error: it raises. ' +
      'Whether a value is a device tensor or host data comes from the program model (src/model): a CPU tensor built from numbers, a Python float a helper returns, `int()` of a `.cpu()` copy, a step counter and `time.time()` are host values and not flagged. ' +
      'Static metadata (`.shape`, `.size()`, `.dtype`, `.device`, `len(t)`) and values handed to `xm.add_step_closure` are not flagged; ' +
      'neither is code outside the loop (end of epoch, after training). With project scope a helper of another module that a hot loop calls is hot too: its own device reads are reported in the helper (naming the calling line), and a device tensor passed to a helper that reads that argument on the host (`logger.update(acc=acc)` where `update` calls `.item()` on each value) is reported at the call; so is a call of a method of a class of the same file through an instance (`meters = Meters()` then `meters.update(loss=loss)`). The methods `forward` calls are hot with it, also under `@torch.no_grad()` (a queue update, a momentum encoder: step work), and so is a no-grad `forward` that solves an assignment (`linear_sum_assignment`, a Hungarian matcher building a detection loss\'s targets): its `.cpu()` is a training-step read. Under a throttle guard (`if step % k == 0`), in a helper the loop calls only under one, or in an eval loop the finding is info; a throttled block (or a statement block of such a helper) gets one finding, on its first read, with the others as related locations. ' +
      'In a loop that is no training or eval loop (an RL rollout), a device tensor passed to an environment wrapper\'s method that reads that argument on the host and uploads what it gets back (`obs, reward, done, info = envs.step(action)` where `step` does `actions.cpu().numpy()` then `torch.from_numpy(obs).to(self.device)`) is a round trip per step, a warning at the argument; the wrapper is found through a same-file instance (`env = TorchEnv(...)`) or, with project scope, a class or a factory returning one class (`envs = make_envs(...)`) of another module; a method inherited from a base class outside the project (baselines\' `VecEnvWrapper.step` calling `step_async`) is not followed. ' +
      'Reads in a loop (or comprehension) over the model\'s parameters in the training step (`for p in model.parameters()`, `named_parameters()`, or any loop whose variable\'s `.grad` it reads: a gradient-norm or per-parameter clipping helper, DINO\'s `clip_gradients`) run once per parameter: one finding per loop, its other reads and its branches on device values (`if clip_coef < 1:`, not reported again as TPU202) as related locations; such a loop in a helper called only under a throttle guard (per-parameter norms logged every `log_interval`) is the logging asked for and is not flagged. ' +
      'Several reads of one statement (a `print` over four lines with four `.item()`s) are one finding, on the first read, with the others as related locations (consecutive meter updates of different tensors stay one finding each). ' +
      'Not flagged: tuple-unpacking a tensor (`b, c = t[:, :2].long().T`: `Tensor.__iter__` is `unbind(0)`, which needs only the static size), `.item()` of a NumPy method chain (`np.ceil(np.log(n)).astype(int).item()`), the message of a `raise`, batch elements the loop never moves while it moves others (`ids = batch[2]` next to `videos = batch[0]; videos.to(device)`, or `imgs.type(Tensor)`), ' +
      'reads under a flag that is set only under a throttle guard (`do_eval = False` ... `if step % k == 0: do_eval = True`), also when the flag is passed to a step helper as a parameter; ' +
      'reads on the first few iterations only (`if batch_i < 3:` / `if i == 0:` on the loop\'s counter, e.g. plotting the first batches), ' +
      'a throttled read of what a whole evaluation or generation run returned in the same guarded block (`val_loss = validate(model, val_loader)` then `val_loss.item()`), ' +
      'the visualisation copies of evaluation work that runs once per throttle interval outside a loop of its own (`.cpu()`/`.numpy()` of a prediction for TensorBoard after `model.eval()` under the throttle or in a throttled `evaluate()`), an eval loop\'s own `if idx % 100 == 0: print(...)`, any throttled image/audio/figure summary (`writer.add_image(...)`, `wandb.Image(...)`) and any throttled copy of a whole tensor (`.cpu()`/`.numpy()`/`.tolist()` of samples to plot or save every `log_interval`); ' +
      'an evaluation helper\'s read of the value it returns (`total = total.item()` ... `return total / n`) is its result, not a finding; ' +
      'the scalar metric reads of such evaluation work (`print(f"validation loss: {loss.item()}")` under `if i % validate_every == 0:` after `model.eval()`, a no-grad `evaluate()`\'s `fid.item()`) are one info finding per guard or helper, with the others as related locations, ' +
      'walking a host sequence whose elements are moved one by one (`[b.to(device) for b in batch]`), iterating a model output\'s `hidden_states`/`attentions` tuple, ' +
      'and reads that run only with CUDA present (after `if not torch.cuda.is_available(): return`). ' +
      'Accelerate\'s `gather_for_metrics` keeps its argument\'s values, and `metric.add_batch(predictions=...)` of device tensors is a host copy.',
    why:
      'torch_xla traces operations lazily and runs the graph at the step barrier. Reading a value before that forces an extra execution of the partial graph ' +
      'and a device-to-host copy: "The `item()` operation explicitly asks to evaluate the result. Don\'t use it unless it\'s necessary" (TS:309-313). ' +
      'Accessing tensor values before the barrier is one of the listed causes of extra compilation and execution (TS, "Some common causes").',
    example: 'for step, (x, y) in enumerate(loader):\n    loss = F.cross_entropy(model(x), y)\n    loss.backward(); opt.step()\n    if step % 10 == 0:\n        print(f"step {step} loss {loss.item():.4f}")',
    useInstead:
      'import torch_xla.core.xla_model as xm\n\nfor step, (x, y) in enumerate(loader):\n    ...\n    if step % 10 == 0:\n' +
      '        xm.add_step_closure(lambda step, loss: print(f"step {step} loss {loss.item():.4f}"), args=(step, loss))\n\n' +
      '# accumulate running metrics on the device (total += loss.detach()) and read them once per epoch',
    fixSafety:
      'Unsafe: the report moves into a step closure that runs after the step\'s graph executed (at the next barrier: `torch_xla.sync()`, or ' +
      '`MpDeviceLoader` fetching the next batch), so output appears later and a loop without any barrier (TPU204) would not report until one runs. ' +
      'Per-iteration names are passed as closure arguments so each report sees its own step\'s values. Offered only for statements that just report ' +
      '(print, logging, wandb, TensorBoard, tqdm) in a training loop; reads whose value the loop uses are left for review. ' +
      'Keep the throttle: the add_step_closure docstring advises reporting once every N steps.',
    sources: [
      'TS:309-313 (docs/source/learn/troubleshoot.md, `item()` evaluates the result)',
      'XM:977-1008 add_step_closure(closure, args=(), run_async=False): closures run after the barrier; "it is advised to throttle the printing/reporting events once every N steps" (torch_xla/core/xla_model.py; read at pytorch/xla@020f3f5)',
      'TX:78 torch_xla.sync runs the queued step closures (xm._run_step_closures)',
      'torch/_tensor.py:906-926 Tensor.__iter__ returns iter(self.unbind(0)) (read at torch v1.13.0): unpacking a tensor reads no value',
      'math.isnan(t)/math.sqrt(t) convert a tensor with `Tensor.__float__`, which dispatches aten::_local_scalar_dense (the op `.item()` runs; checked with a TorchDispatchMode on torch 1.13 CPU); torch_xla/csrc/aten_xla_type.cpp at v2.9.0 `XLANativeFunctions::_local_scalar_dense` materializes the tensor on the host',
      'torch/csrc/utils/tensor_numpy.cpp tensor_to_numpy: a tensor whose backend is not CPU raises TypeError ("NumPy conversion for … is not supported"; read at pytorch/pytorch@0065fd3a)',
    ],
    torchtpu: 'The detection is the same; the torchtpu preview has no known step-closure API, so no fix is offered: move the read after the step or out of the loop.',
  },
  check(ctx) {
    const seen = new Set<number>();
    const throttledBlocks = new Map<string, { site: Node; hot: HotInfo; what: string }[]>();
    const report = (site: Node, hot: HotInfo, what: string) => {
      if (seen.has(site.id)) return;
      seen.add(site.id);
      // `raise ValueError(f"bad loss {self.args.loss}")`: the error path ends the loop, it runs once at most
      if (inRaise(site)) return;
      // `def forward(self, x, print_attn_probs=False): ... if print_attn_probs: print(...)`: no call turns the flag on
      if (underOffFlag(ctx, site)) return;
      // `"{}".format(ids[i])` / `chunk_nb[i].cpu()` of a batch element the loop never moves: still the loader's CPU tensor
      const readOf = site.type === 'call' && MATERIALIZE.has(methodName(site) ?? '') ? receiver(site) : site;
      if (readOf && unmovedBatchElement(ctx, readOf)) return;
      // `if torch.min(y) < -1: print(torch.min(y))`: the condition already read that value (TPU202/TPU201 there)
      // (an explicit `.item()` there stays: it is a read of its own, as labelled on dino's `print(loss.item())`)
      if (!(site.type === 'call' && MATERIALIZE.has(methodName(site) ?? '')) && readByGuard(site, hot.anchor)) return;
      // `if batch_i < 3: plot_images(...)`: a read on the first few iterations only, not a per-step cost;
      // a throttled read of what a whole evaluation run returned (`val_loss = validate(...)` then `val_loss.item()`)
      if (firstIterationsOnly(ctx, site, hot) || evalRunResult(ctx, site, hot)) return;
      // evaluation work run once per throttle interval outside a loop of its own: its scalar metric reads
      // (`print(f"validation loss: {loss.item()}")` after `model.eval()` under `if i % validate_every == 0:`) are one
      // info finding per interval's work; its visualisation copies (`y_mel[0].cpu()` for TensorBoard) and an eval
      // loop's own throttled print (each of its batches already reads) are not reported
      // (a throttled picture, audio clip or figure for a summary writer is output the user asked for, once per interval;
      // so is a throttled copy of a whole tensor, `.cpu()`/`.numpy()`/`.tolist()`, for plotting or saving samples:
      // FastSpeech2's synth_one_sample every synth_step, vits' spectrogram images every log_interval)
      if (hot.throttled && (visualSummary(site) || wholeTensorCopy(site))) return;
      const evalScope = throttledEvalScope(ctx, site, hot);
      if (evalScope ? !scalarMetricRead(site) || returnedByHelper(ctx, site, evalScope) : throttledEvalWork(ctx, site, hot)) return;
      // after `if not torch.cuda.is_available(): return`, in an `if torch.cuda.is_available():` arm: never runs on a TPU host
      if (cudaOnly(site, ctx.model)) return;
      // one finding per throttled logging block (`if step % k == 0:` and its nine `.item()`s): the first read carries it
      // (a rank check `if RANK in {-1, 0}:` is no throttle: Semantics.isThrottleCondition, each of its reads is reported)
      const via = hot.via?.[0];
      // a helper's read of its own parameter is reported where the callers pass a device tensor (reportHelperReads)
      if (via && paramReads(hot.anchor, ctx.sema).some((r) => isAncestorOrSelf(r.read, site) || isAncestorOrSelf(site, r.read))) return;
      // reads in a loop over the model's parameters (dino's clip_gradients: `norms.append(p.grad.data.norm(2).item())`
      // for each parameter, every step): one finding per loop, N reads per step, the others related
      // (a per-parameter norm helper called only every `log_interval` steps is the logging the user asked for: quiet)
      const ploop = hot.kind === 'train' ? parameterLoop(ctx, site, hot.anchor) : null;
      if (ploop && hot.throttled) return;
      if (ploop) {
        const key = `param:${ploop.id}`;
        const list = throttledBlocks.get(key);
        if (list) list.push({ site, hot, what });
        else throttledBlocks.set(key, [{ site, hot, what }]);
        paramGroups.set(key, ploop);
        return;
      }
      // (the reads are found kind by kind, calls before `%` formatting: the block's finding is its first read in the
      // text, picked once all are known, with the others as related locations)
      const block = evalScope ?? (hot.throttled ? throttleBlock(ctx, site, hot) : null);
      if (block) {
        // (the eval work's reads are a group of their own: an eval loop's per-batch reads in the same block are another)
        const key = evalScope ? `eval:${block.id}` : String(block.id);
        const list = throttledBlocks.get(key);
        if (list) list.push({ site, hot, what });
        else throttledBlocks.set(key, [{ site, hot, what }]);
        return;
      }
      // several reads of one statement (`print('loss', a.item(), 'acc', b.item())` over four lines): one finding on the
      // first, the others related (one logging statement is one problem, one fix)
      const group = statementGroup(site);
      if (group) {
        const key = `stmt:${group.id}`;
        const list = throttledBlocks.get(key);
        if (list) list.push({ site, hot, what });
        else throttledBlocks.set(key, [{ site, hot, what }]);
        return;
      }
      emit(site, hot, what, []);
    };
    const paramGroups = new Map<string, Node>();
    const emitParamLoop = (site: Node, hot: HotInfo, what: string, others: Node[], loop: Node) => {
      const clause = loop.type === 'for_statement' ? loop : loop.namedChildren.find((c) => c?.type === 'for_in_clause') ?? loop;
      const header = `for ${clause.childForFieldName('left')?.text ?? ''} in ${clause.childForFieldName('right')?.text ?? ''}`;
      const via = hot.via?.[0];
      const where = via ? ` in \`${hot.anchor.childForFieldName('name')?.text ?? 'this helper'}()\`, called from the training loop (${baseName(via.path)}:${via.line})` : ' in the training step';
      // the loop's branches on device values (`if clip_coef < 1:`) are the same per-parameter syncs: related here, not TPU202
      const branches = parameterLoopBranches(ctx, loop);
      ctx.report(site, {
        severity: severityIn('warning', hot),
        message: `${what} runs once per parameter in \`${short(header, 48)}\`${where}: one device read per parameter, every step (hundreds in a real model), each running the pending graph${branches.length ? ', and the loop also branches on a device value per parameter' : ''}; keep the per-parameter values on the device (\`torch.stack\` of the norms, \`torch.clamp\` for a conditional scale) and read one result, or read them only on a logging interval`,
        related: [
          ...(hot.via ?? []).slice(0, 3).map((v) => ({ start: v.start, end: v.end, path: v.path, message: "the training loop's call" })),
          ...others.slice(0, 5).map((o) => ({ start: o.startIndex, end: o.endIndex, message: 'another host read in this loop over the parameters' })),
          ...branches.slice(0, 3).map((b) => ({ start: b.startIndex, end: b.endIndex, message: 'a branch on a device value in this loop over the parameters' })),
        ],
      });
    };
    const emit = (site: Node, hot: HotInfo, what: string, others: Node[]) => {
      const via = hot.via?.[0];
      const where = via
        ? `in \`${hot.anchor.childForFieldName('name')?.text ?? 'this helper'}()\`, called from the ${via.kind === 'eval' ? 'eval' : 'training'} loop (${baseName(via.path)}:${via.line}),`
        : `inside the ${hot.kind === 'eval' ? 'eval' : 'training'} ${hot.anchor.type === 'function_definition' ? 'step' : 'loop'}`;
      ctx.report(site, {
        severity: severityIn('warning', hot),
        message: `${what} ${where} forces the pending graph to run and copies the value to the host`,
        fix: via ? null : closureFix(ctx, site, hot),
        ...(hot.via?.length || others.length
          ? {
              related: [
                ...(hot.via ?? []).slice(0, 3).map((v) => ({ start: v.start, end: v.end, path: v.path, message: `the ${v.kind === 'eval' ? 'eval' : 'training'} loop's call` })),
                ...others.slice(0, 5).map((o) => ({ start: o.startIndex, end: o.endIndex, message: hot.throttled || hot.kind === 'eval' ? 'another host read in this throttled block' : 'another host read in this logging statement' })),
              ],
            }
          : {}),
      });
    };
    const flushBlocks = () => {
      for (const [key, list] of throttledBlocks) {
        list.sort((a, b) => a.site.startIndex - b.site.startIndex);
        const loop = paramGroups.get(key);
        if (loop) emitParamLoop(list[0].site, list[0].hot, list[0].what, list.slice(1).map((x) => x.site), loop);
        else emit(list[0].site, list[0].hot, list[0].what, list.slice(1).map((x) => x.site));
      }
      throttledBlocks.clear();
    };
    reportHelperReads(ctx, seen);
    reportWrapperTrips(ctx, seen);

    for (const call of ctx.sema.nodes('call')) {
      const meth = methodName(call);
      const fnNode = call.childForFieldName('function');
      // t.item(), t.tolist(), t.cpu(), t.numpy()
      if (meth && MATERIALIZE.has(meth)) {
        const recv = receiver(call);
        if (!recv || callArgs(call).positional.length || hostValue(ctx, recv) || numpyMethodChain(ctx, recv) || chainHasRead(recv) || unmovedBatchElement(ctx, recv)) continue;
        // `t.numpy()` of an accelerator tensor raises (it does on CUDA too, so only code that ran on the CPU has it)
        if (meth === 'numpy' && deviceOwn(ctx, recv) && !deferredAnywhere(call) && !cpuByFlag(ctx, call, recv)) {
          if (seen.has(call.id)) continue;
          seen.add(call.id);
          ctx.report(call, {
            severity: 'error',
            message: `\`${short(recv.text, 30)}.numpy()\` raises a TypeError on an XLA tensor: NumPy conversion needs a CPU tensor; copy it with \`.cpu()\` first (and outside the step)`,
            fix: null,
          });
          continue;
        }
        if (meth !== 'item' && !tensorish(ctx, recv, false)) continue;
        if (meth === 'item' && /^(string|integer|float|dictionary|list)$/.test(recv.type)) continue;
        const hot = hotAt(ctx, call);
        if (hot) report(call, hot, `\`${short(recv.text, 30)}.${meth}()\``);
        continue;
      }
      // float(t), int(t), bool(t), str(t), repr(t), chr(t)
      if (fnNode?.type === 'identifier' && CONVERT.has(fnNode.text) && !ctx.sema.resolve(fnNode)) {
        const { positional } = callArgs(call);
        if (positional.length !== 1 || chainHasRead(positional[0]) || !tensorish(ctx, positional[0], false)) continue;
        const hot = hotAt(ctx, call);
        if (hot) report(call, hot, `\`${fnNode.text}(${short(positional[0].text, 30)})\``);
        continue;
      }
      const callee = ctx.sema.callee(call) ?? '';
      // math.isnan(grad_norm), math.sqrt(t): the math module converts a tensor argument with `__float__`, which reads it
      // like `.item()` (aten::_local_scalar_dense; tacotron2's `is_overflow = math.isnan(grad_norm)` every step)
      if (/^math\.\w+$/.test(callee)) {
        const arg = callArgs(call).positional.find((a) => !chainHasRead(a) && tensorish(ctx, a, false));
        const hot = arg ? hotAt(ctx, call) : null;
        if (arg && hot) report(call, hot, `\`${short(call.text, 40)}\` (the math module reads \`${short(arg.text, 20)}\` as a Python float)`);
        if (arg) continue;
      }
      // np.asarray(t), np.array(t)
      if (/^numpy\.(asarray|array)$/.test(callee)) {
        const arg = callArgs(call).positional[0];
        if (!arg || chainHasRead(arg) || !tensorish(ctx, arg, false)) continue;
        const hot = hotAt(ctx, call);
        if (hot) report(call, hot, `\`${short(call.text, 40)}\``);
        continue;
      }
      // print(t), logger.info(t), wandb.log({"loss": t}), writer.add_scalar("loss", t), pbar.set_postfix(loss=t)
      if (isReportCall(ctx, call)) {
        const { positional, keywords } = callArgs(call);
        const values: Node[] = [...positional, ...[...keywords.values()].map((k) => k.childForFieldName('value')!).filter(Boolean)];
        // one finding per call (`metric.add_batch(predictions=p, references=r)` copies both at once)
        let reported = false;
        for (const v of values) {
          const items = v.type === 'dictionary' ? v.namedChildren.filter((p) => p?.type === 'pair').map((p) => p!.childForFieldName('value')!) : [v];
          for (const item of items) {
            if (reported || !item || item.type === 'string' || chainHasRead(item) || !tensorish(ctx, item, false)) continue;
            const hot = hotAt(ctx, item);
            if (hot) {
              report(item, hot, `Passing tensor \`${short(item.text, 30)}\` to \`${short(fnNode?.text ?? 'print', 30)}\``);
              reported = true;
            }
          }
        }
        continue;
      }
      // "{}".format(t)
      if (meth === 'format' && receiver(call)?.type === 'string') {
        for (const a of callArgs(call).positional) {
          if (chainHasRead(a) || !tensorish(ctx, a, false)) continue;
          const hot = hotAt(ctx, a);
          if (hot) report(a, hot, `Formatting tensor \`${short(a.text, 30)}\``);
        }
      }
    }

    // f"{t}"
    for (const s of ctx.sema.nodes('string')) {
      // `getattr(self, f"optim{index}")`: an attribute name, so `index` is an int (a tensor would format as "tensor(…)")
      if (attributeName(s)) continue;
      for (const part of s.namedChildren) {
        if (part?.type !== 'interpolation') continue;
        const expr = part.childForFieldName('expression') ?? part.namedChildren[0];
        if (!expr || chainHasRead(expr) || !tensorish(ctx, expr, false)) continue;
        const hot = hotAt(ctx, expr);
        if (hot) report(expr, hot, `Formatting tensor \`${short(expr.text, 30)}\` in an f-string`);
      }
    }

    // "%f" % t, "%f %f" % (a, b), ('%g' * 4) % (*mean_losses,)
    for (const op of ctx.sema.nodes('binary_operator')) {
      const left = op.childForFieldName('left');
      const right = op.childForFieldName('right');
      if (!left || !right || !op.children.some((c) => c?.type === '%')) continue;
      if (left.type !== 'string' && ctx.model.value(left).kind !== 'string') continue;
      const items = right.type === 'tuple' ? right.namedChildren : [right];
      for (const item of items) {
        if (!item) continue;
        if (item.type === 'list_splat') {
          const inner = item.namedChildren[0];
          if (inner && deviceOwn(ctx, inner)) {
            const hot = hotAt(ctx, item);
            if (hot) report(item, hot, `Unpacking tensor \`${short(inner.text, 30)}\` into \`%\` arguments (one host read per element)`);
          }
          continue;
        }
        if (chainHasRead(item) || !tensorish(ctx, item, false)) continue;
        const hot = hotAt(ctx, item);
        if (hot) report(item, hot, `Formatting tensor \`${short(item.text, 30)}\` with \`%\``);
      }
    }
    reportIterationReads(ctx, report);
    flushBlocks();
    reportGenerationReads(ctx); // per-token reads in decode loops outside training (info)
    reportRoundTrips(ctx); // per-env-step round trips in rollout loops outside training (warning)
  },
});

/**
 * A scalar metric read: `.item()`, `float(t)`/`int(t)`, a tensor printed, logged or formatted; not a copy of a whole
 * tensor (`.cpu()`/`.numpy()`/`.tolist()`, walking it) nor a value handed to an image/audio/figure summary.
 */
function scalarMetricRead(site: Node): boolean {
  if (site.type === 'call') {
    const m = methodName(site);
    if (m && MATERIALIZE.has(m)) return m === 'item' && !visualSummary(site);
    const fn = site.childForFieldName('function');
    if (fn?.type === 'identifier' && CONVERT.has(fn.text)) return fn.text === 'float' || fn.text === 'int' || INDEX_CONVERT.has(fn.text);
    if (fn?.type === 'identifier' && (fn.text === 'list' || fn.text === 'sum' || fn.text === 'all' || fn.text === 'any')) return false;
  }
  if (site.type === 'list_splat' || site.parent?.type === 'for_statement' || site.parent?.type === 'pattern_list') return false;
  return !visualSummary(site);
}

/**
 * An evaluation helper's read whose value it returns (`total = total.item()` ... `return total / n`, nanochat's
 * evaluate_bpb): the metric is the helper's result, read once per evaluation for its caller; not a finding. Names are
 * followed back from the helper's `return` statements through its assignments (two rounds).
 */
function returnedByHelper(ctx: RuleContext, site: Node, scope: Node): boolean {
  if (scope.type !== 'function_definition') return false;
  const stmt = enclosingStatement(site);
  if (stmt.type === 'return_statement') return true;
  const assign = stmt.namedChildren[0];
  const left = assign?.type === 'assignment' ? assign.childForFieldName('left') : null;
  if (left?.type !== 'identifier') return false;
  const own = (n: Node) => ctx.sema.enclosingFunction(n)?.id === scope.id;
  const names = new Set<string>();
  for (const r of ctx.sema.within('return_statement', scope)) if (own(r)) for (const id of ctx.sema.within('identifier', r)) names.add(id.text);
  const assigns = ctx.sema.within('assignment', scope).filter(own);
  for (let round = 0; round < 2; round++) {
    for (const a of assigns) {
      const l = a.childForFieldName('left');
      const r = a.childForFieldName('right');
      if (l?.type === 'identifier' && r && names.has(l.text)) for (const id of ctx.sema.within('identifier', r)) names.add(id.text);
    }
  }
  return names.has(left.text);
}

/** `t.cpu()`, `t.numpy()`, `t.tolist()`: a copy of a whole tensor (not a scalar metric read). */
function wholeTensorCopy(site: Node): boolean {
  const m = site.type === 'call' ? methodName(site) : null;
  return m === 'cpu' || m === 'numpy' || m === 'tolist';
}

const VISUAL = /^(add_image|add_images|add_audio|add_figure|add_video|add_histogram|add_embedding|imshow|imsave|imwrite|save_image|savefig|plot|Image|Audio|Video|Histogram)$/;

/** `site` is (in) an argument of an image/audio/figure summary call (`writer.add_image(...)`, `wandb.Image(...)`). */
function visualSummary(site: Node): boolean {
  for (let p = site.parent; p && !/statement$|^block$/.test(p.type); p = p.parent) {
    if (p.type !== 'call') continue;
    const fn = p.childForFieldName('function');
    const name = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : fn?.text;
    if (name && VISUAL.test(name)) return true;
  }
  return false;
}

/**
 * `np.ceil(np.log(n)).astype('int')`: a method chain (attributes, subscripts, method calls) whose base is a host value
 * (a NumPy/math call): every method of a NumPy array or scalar returns host data, so its `.item()` reads no tensor.
 */
function numpyMethodChain(ctx: RuleContext, node: Node): boolean {
  return someInChain(node, 8, (call, k) => (k > 0 && hostValue(ctx, call) ? true : !methodName(call) ? false : undefined));
}

/** Inside a `raise` statement (its message): runs once, when the loop ends with an error. */
function inRaise(site: Node): boolean {
  const st = enclosingStatement(site);
  if (st.type === 'raise_statement') return true;
  // `assert ok, f"bad {x}"`: the message is only formatted when the assert fails
  if (st.type !== 'assert_statement') return false;
  const msg = st.namedChildren[1];
  return !!msg && site.startIndex >= msg.startIndex && site.endIndex <= msg.endIndex;
}

const SIMPLE_STATEMENT = /^(expression_statement|return_statement|assert_statement|delete_statement|print_statement)$/;

/**
 * The group a read belongs to for one finding: its simple statement (a `print` over four lines). Null for a read in a
 * compound statement's header (`if`/`for`/`while`), which stays a finding of its own. (Consecutive meter updates,
 * `top1.update(acc1.item(), n)` then `top5.update(acc5.item(), n)`, read different tensors: one finding each.)
 */
function statementGroup(site: Node): Node | null {
  const stmt = enclosingStatement(site);
  return SIMPLE_STATEMENT.test(stmt.type) ? stmt : null;
}

/** An `if`/`elif` between `site` and `anchor` whose condition contains the same expression: its read comes first. */
function readByGuard(site: Node, anchor: Node): boolean {
  const text = site.text;
  if (text.length < 3) return false;
  for (let p = site.parent, child: Node = site; p && p.id !== anchor.id; child = p, p = p.parent) {
    if (p.type !== 'if_statement' && p.type !== 'elif_clause') continue;
    const cond = p.childForFieldName('condition');
    if (cond && cond.id !== child.id && !isAncestorOrSelf(cond, site) && cond.text.includes(text)) return true;
  }
  return false;
}

function isAncestorOrSelf(a: Node, b: Node): boolean {
  return b.startIndex >= a.startIndex && b.endIndex <= a.endIndex;
}

function baseName(p: string): string {
  return p.split('/').pop() ?? p;
}

interface ParamRead {
  /** The parameter read (null: any keyword gathered by the `**` parameter). */
  name: string | null;
  index: number;
  method: boolean;
  /** The host read in the helper. */
  read: Node;
  what: string;
}

const paramReadMemo = new WeakMap<Node, ParamRead[]>();

/**
 * The host reads a helper makes of its own parameters: `.item()`/`.tolist()`/`.cpu()`/`.numpy()`/`float()` of a
 * parameter, or of each value of its `**kwargs` (`for k, v in kwargs.items(): v.item()`). Whether that syncs depends
 * on what the caller passes, so the finding is the caller's.
 */
function paramReads(def: Node, sema: RuleContext['sema']): ParamRead[] {
  const hit = paramReadMemo.get(def);
  if (hit) return hit;
  const out: ParamRead[] = [];
  const params = def.childForFieldName('parameters')?.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment') ?? [];
  const first = params[0];
  const method = !!sema.enclosingClass(def) && (first?.text === 'self' || first?.text === 'cls');
  const names = params.map((p) => paramName(p));
  const kwSplat = params.find((p) => p.type === 'dictionary_splat_pattern');
  const kwName = kwSplat ? paramName(kwSplat) : null;
  // loop variables over the `**kwargs` values: `for k, v in kwargs.items()`, `for v in kwargs.values()`
  const kwValues = new Set<string>();
  if (kwName) {
    for (const loop of sema.within('for_statement', def)) {
      const right = loop.childForFieldName('right');
      const left = loop.childForFieldName('left');
      if (right?.type !== 'call' || !left) continue;
      const callee = right.childForFieldName('function')?.text ?? '';
      if (callee === `${kwName}.items` && left.namedChildren.length === 2 && left.namedChildren[1]?.type === 'identifier') kwValues.add(left.namedChildren[1]!.text);
      if (callee === `${kwName}.values` && left.type === 'identifier') kwValues.add(left.text);
    }
  }
  const classify = (recv: Node | null | undefined, read: Node, what: string) => {
    if (recv?.type !== 'identifier') return;
    if (kwValues.has(recv.text)) out.push({ name: null, index: -1, method, read, what });
    else {
      const i = names.indexOf(recv.text);
      if (i >= 0 && params[i].type !== 'dictionary_splat_pattern' && params[i].type !== 'list_splat_pattern' && !(method && i === 0)) out.push({ name: recv.text, index: i, method, read, what });
    }
  };
  for (const call of sema.within('call', def)) {
    if (sema.enclosingFunction(call)?.id !== def.id) continue;
    const meth = methodName(call);
    if (meth && MATERIALIZE.has(meth) && !callArgs(call).positional.length) classify(receiver(call), call, `.${meth}()`);
    const fn = call.childForFieldName('function');
    if (fn?.type === 'identifier' && (fn.text === 'float' || fn.text === 'int')) {
      const { positional } = callArgs(call);
      if (positional.length === 1) classify(positional[0], call, `${fn.text}()`);
    }
  }
  paramReadMemo.set(def, out);
  return out;
}

/**
 * Project scope: a hot call into another module's helper that reads the value of an argument on the host
 * (`logger.update(acc=acc)` where `MetricLogger.update` calls `.item()` on each value): reported at the argument
 * when it is a device tensor, with the helper's read as a related location. Host arguments (a Python float, a
 * learning rate) are no read.
 */
function reportHelperReads(ctx: RuleContext, seen: Set<number>): void {
  for (const call of ctx.sema.nodes('call')) {
    const target = (ctx.project ? hotCallTarget(ctx.project, ctx.path, call) : null) ?? localMethodTarget(ctx, call);
    if (!target) continue;
    const reads = paramReads(target.def, target.module.sema);
    if (!reads.length) continue;
    const hot = hotAt(ctx, call);
    if (!hot) continue;
    const { positional, keywords } = callArgs(call);
    const named = new Set(reads.filter((r) => r.name).map((r) => r.name!));
    const params = new Set((target.def.childForFieldName('parameters')?.namedChildren ?? []).map((p) => (p ? paramName(p) : null)));
    for (const r of reads) {
      const args: Node[] = [];
      if (r.name) {
        const a = argumentAt(call, r.name, r.index, r.method);
        if (a) args.push(a);
      } else {
        for (const [k, kw] of keywords) {
          const v = kwValue(kw);
          if (v && !params.has(k) && !named.has(k)) args.push(v);
        }
        for (const p of positional) if (p.type === 'dictionary_splat' && p.namedChildren[0]) args.push(p.namedChildren[0]!);
      }
      for (const a of args) {
        if (seen.has(a.id) || firstIterationsOnly(ctx, a, hot)) continue;
        const v = ctx.model.value(a);
        const device = (v.kind === 'tensor' && v.where === 'device' && !v.weak) || (v.kind === 'dict' && [...v.entries.values()].some((e) => e.kind === 'tensor' && e.where === 'device' && !e.weak));
        if (!device) continue;
        seen.add(a.id);
        const fname = target.def.childForFieldName('name')?.text ?? 'helper';
        const cls = target.module.sema.enclosingClass(target.def)?.childForFieldName('name')?.text;
        const line = target.module.text.slice(0, r.read.startIndex).split('\n').length;
        ctx.report(a, {
          severity: severityIn('warning', hot),
          message: `Passing tensor \`${short(a.text, 30)}\` to \`${cls ? `${cls}.` : ''}${fname}\`, which reads it with \`${r.what}\` (${baseName(target.path)}:${line}), inside the ${hot.kind === 'eval' ? 'eval' : 'training'} loop forces the pending graph to run and copies the value to the host`,
          fix: null,
          related: [{ start: r.read.startIndex, end: r.read.endIndex, path: target.path, message: `the host read in \`${fname}\`` }],
        });
      }
    }
  }
}

/**
 * An environment wrapper's round trip (pytorch-a2c-ppo-acktr-gail's `VecPyTorch.step`: `actions = actions.cpu().numpy()`,
 * `self.venv.step(actions)`, `torch.from_numpy(obs).to(self.device)`) called with a device tensor in a loop that is no
 * training or eval loop (`obs, reward, done, infos = envs.step(action)` in the rollout): the read and the upload sit in
 * the wrapper, in this file (`envs = VecPyTorch(...)`) or another module (`envs = make_vec_envs(...)`, a factory that
 * returns the wrapper class). One warning per argument, at the call, the wrapper's read and upload related.
 */
function reportWrapperTrips(ctx: RuleContext, seen: Set<number>): void {
  for (const call of ctx.sema.nodes('call')) {
    const fn = call.childForFieldName('function');
    const obj = fn?.type === 'attribute' ? fn.childForFieldName('object') : null;
    if (obj?.type !== 'identifier' || obj.text === 'self' || ctx.sema.hot(call)) continue;
    const scope = ctx.sema.enclosingFunction(call);
    let loop: Node | null = null;
    for (let p = call.parent; p && p.id !== scope?.id; p = p.parent) if (p.type === 'for_statement' || p.type === 'while_statement') { loop = p; break; }
    const body = loop?.childForFieldName('body');
    if (!loop || !body) continue;
    // (cheap tests first: a device tensor among the arguments, before resolving the wrapper)
    const { positional, keywords } = callArgs(call);
    if (![...positional, ...[...keywords.values()].map((k) => kwValue(k))].some((a) => !!a && ctx.model.isDeviceTensor(a, true))) continue;
    if (ctx.sema.containsTrainSignal(body)) continue;
    const target = localMethodTarget(ctx, call) ?? wrapperAcross(ctx, obj, fn!.childForFieldName('attribute')?.text ?? '');
    if (!target) continue;
    const reads = paramReads(target.def, target.module.sema).filter((r) => r.name);
    if (!reads.length) continue;
    const upload = target.module.sema.within('call', target.def).find((c) => {
      const m = methodName(c);
      const first = callArgs(c).positional[0];
      return target.module.sema.enclosingFunction(c)?.id === target.def.id && (m === 'cuda' || (m === 'to' && !!first && /(^|\.|_)device$/.test(first.text)));
    });
    if (!upload) continue;
    for (const r of reads) {
      const a = argumentAt(call, r.name!, r.index, r.method);
      if (!a || seen.has(a.id) || !ctx.model.isDeviceTensor(a, true)) continue;
      seen.add(a.id);
      const cls = target.module.sema.enclosingClass(target.def)?.childForFieldName('name')?.text;
      const fname = `${cls ? `${cls}.` : ''}${target.def.childForFieldName('name')?.text ?? 'step'}`;
      const lineAt = (n: Node) => target.module.text.slice(0, n.startIndex).split('\n').length;
      ctx.report(a, {
        severity: 'warning',
        message: `Passing tensor \`${short(a.text, 30)}\` to \`${fname}\`, which reads it with \`${r.what}\` (${baseName(target.path)}:${lineAt(r.read)}) and uploads what it gets back (\`${short(upload.text, 30)}\`, ${baseName(target.path)}:${lineAt(upload)}), every iteration of this loop: each step is a device round trip the host waits on; step many environments per call (a vectorized env) so each trip carries a batch, or act with a CPU copy of the policy and keep the device for the update`,
        fix: null,
        related: [
          { start: r.read.startIndex, end: r.read.endIndex, path: target.path, message: `the host read in \`${fname}\`` },
          { start: upload.startIndex, end: upload.endIndex, path: target.path, message: `the upload in \`${fname}\`` },
        ],
      });
    }
  }
}

/** `envs = make_vec_envs(...)` / `envs = VecPyTorch(...)` imported from another module: the method `name` of the class built. */
function wrapperAcross(ctx: RuleContext, obj: Node, name: string): { def: Node; module: { sema: RuleContext['sema']; text: string }; path: string } | null {
  if (!ctx.project || !name) return null;
  const ctors = ctx.sema.bindings(obj.text);
  if (!ctors.length || ctors.some((c) => c.type !== 'call')) return null;
  const hit = ctx.project.resolveCall(ctors[0], ctx.sema, ctx.path);
  if (!hit || ctors.some((c) => ctx.project!.resolveCall(c, ctx.sema, ctx.path)?.def.id !== hit.def.id)) return null;
  let cls: Node | null = hit.kind === 'class' ? hit.def : null;
  if (hit.def.type === 'function_definition') {
    // a factory: every `return Cls(...)` builds the same class of that module
    const rets = hit.module.sema.within('return_statement', hit.def).map((r) => r.namedChildren[0]).filter((e): e is Node => !!e);
    const names = new Set(rets.map((e) => (e.type === 'call' ? e.childForFieldName('function')?.text ?? '' : '')));
    const only = names.size === 1 ? [...names][0] : '';
    cls = only ? hit.module.classes.get(only) ?? null : null;
  }
  const body = cls?.childForFieldName('body');
  if (!body) return null;
  for (const st of body.namedChildren) {
    const d = st?.type === 'decorated_definition' ? st.childForFieldName('definition') : st;
    if (d?.type === 'function_definition' && d.childForFieldName('name')?.text === name) return { def: d, module: { sema: hit.module.sema, text: hit.module.text }, path: hit.path };
  }
  return null;
}

/**
 * `meter = MetricLogger()` ... `meter.update(loss=loss)` with `MetricLogger` a class of this file: the method of that
 * class (instance calls are not followed by Semantics.calledFunctions, which knows `f()` and `self.f()` only).
 */
function localMethodTarget(ctx: RuleContext, call: Node): { def: Node; module: { sema: RuleContext['sema']; text: string }; path: string } | null {
  const fn = call.childForFieldName('function');
  const obj = fn?.type === 'attribute' ? fn.childForFieldName('object') : null;
  const name = fn?.childForFieldName('attribute')?.text;
  if (obj?.type !== 'identifier' || !name || obj.text === 'self') return null;
  // every binding of the name in the file constructs the same class
  const ctors = ctx.sema.bindings(obj.text);
  const cls = ctors[0]?.type === 'call' ? ctors[0].childForFieldName('function') : null;
  if (cls?.type !== 'identifier' || ctors.some((c) => c.type !== 'call' || c.childForFieldName('function')?.text !== cls.text)) return null;
  const def = ctx.sema.functionsNamed(name).find((d) => ctx.sema.enclosingClass(d)?.childForFieldName('name')?.text === cls.text);
  return def ? { def, module: { sema: ctx.sema, text: ctx.text }, path: ctx.path } : null;
}

/** A tensor on the accelerator known by value flow (not a naming convention), and not a loader's batch (a tuple or dict of tensors). */
function deviceOwn(ctx: RuleContext, node: Node): boolean {
  const v = ctx.model.value(node);
  return v.kind === 'tensor' && v.where === 'device' && !v.weak && !v.batch;
}

/** Inside a lambda, a nested def of a step closure, or the arguments of `add_step_closure`: runs after the step. */
function deferredAnywhere(node: Node): boolean {
  for (let p = node.parent; p; p = p.parent) {
    if (p.type === 'lambda') return true;
    if (p.type === 'call' && /(^|\.)add_step_closure$/.test(p.childForFieldName('function')?.text ?? '')) return true;
  }
  return false;
}

const ITERATING_BUILTINS = new Set(['all', 'any', 'list', 'tuple', 'sorted', 'set', 'sum', 'max', 'min']);

/**
 * Reads one element at a time of a device tensor: `for v in t`, `a, b = t`, `(*t,)`, `all(done)`, and a device
 * tensor used as the index of a Python list or dict (`counts[label]`). Python iterates a tensor row by row and
 * converts an index with `__index__`: each is a host read of the value.
 */
function reportIterationReads(ctx: RuleContext, report: (site: Node, hot: HotInfo, what: string) => void): void {
  const iterated = (it: Node | null, loopWord: string) => {
    // enumerate(t), zip(t, u), tqdm(t), reversed(t)
    let args: Node[] = it ? [it] : [];
    for (let k = 0; k < 3 && args.length === 1 && args[0].type === 'call'; k++) {
      const c = ctx.sema.callee(args[0]) ?? args[0].childForFieldName('function')?.text ?? '';
      if (!/(^|\.)(enumerate|zip|tqdm|reversed|iter)$/.test(c)) break;
      args = [...callArgs(args[0]).positional];
    }
    for (const a of args) {
      if (!deviceOwn(ctx, a)) continue;
      const hot = hotAt(ctx, a);
      if (hot) report(a, hot, `${loopWord} over tensor \`${short(a.text, 30)}\` (one host read per element)`);
    }
  };
  for (const loop of ctx.sema.nodes('for_statement')) iterated(loop.childForFieldName('right'), 'Looping');
  for (const clause of ctx.sema.nodes('for_in_clause')) {
    // `[b.to(device) for b in batch[1:]]`: elements moved to the device one by one were on the host (a list of CPU
    // batch tensors), and walking a host sequence reads nothing back
    const body = clause.parent?.childForFieldName('body');
    const left = clause.childForFieldName('left');
    if (body?.type === 'call' && left?.type === 'identifier' && /^(to|cuda)$/.test(methodName(body) ?? '') && receiver(body)?.text === left.text) continue;
    iterated(clause.childForFieldName('right'), 'Iterating');
  }
  // (`b, c = t[:, :2].long().T` is no read: `Tensor.__iter__` returns `iter(self.unbind(0))`, which needs only the
  // static size of dim 0 (torch/_tensor.py:906-926 at v1.13.0); the views it makes stay lazy)
  for (const call of ctx.sema.nodes('call')) {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'identifier' || !ITERATING_BUILTINS.has(fn.text) || ctx.sema.resolve(fn) || ctx.sema.bindings(fn.text).length) continue;
    const { positional } = callArgs(call);
    if (positional.length !== 1 || !deviceOwn(ctx, positional[0])) continue;
    const hot = hotAt(ctx, call);
    if (hot) report(call, hot, `\`${fn.text}(${short(positional[0].text, 30)})\` iterates the tensor in Python (one host read per element)`);
  }
  for (const sub of ctx.sema.nodes('subscript')) {
    const value = sub.childForFieldName('value');
    const index = sub.childForFieldName('subscript');
    if (!value || !index || sub.childrenForFieldName('subscript').filter(Boolean).length !== 1) continue;
    const container = ctx.model.value(value);
    if ((container.kind !== 'seq' || container.shape) && container.kind !== 'dict') continue;
    if (!deviceOwn(ctx, index) || unmovedBatchElement(ctx, index)) continue;
    const hot = hotAt(ctx, index);
    if (hot) report(index, hot, `Indexing a Python ${container.kind === 'dict' ? 'dict' : 'list'} with tensor \`${short(index.text, 30)}\``);
  }
}

/**
 * For a statement that only reports (print/logging/wandb/TensorBoard/tqdm) in a training loop: wrap the
 * call in the profile's step closure, passing per-iteration names as arguments.
 */
function closureFix(ctx: RuleContext, site: Node, hot: HotInfo) {
  if (hot.kind !== 'train' || hot.anchor.type === 'function_definition') return null;
  const stmt = enclosingStatement(site);
  if (stmt.type !== 'expression_statement' || stmt.namedChildCount !== 1) return null;
  const call = stmt.namedChildren[0];
  if (call?.type !== 'call' || !isReportCall(ctx, call)) return null;
  // `with open(log) as f: f.write(f"{loss.item()}")` in the loop: the closure runs at the step barrier, after the
  // `with` has exited (a closed file, a finished context); a name a `with` inside the loop binds stays unwrapped
  const withBound = withAliasesBetween(stmt, hot.anchor);
  if (withBound.size && ctx.sema.within('identifier', call).some((id) => withBound.has(id.text))) return null;
  const params = closureParams(ctx, call, hot.anchor);
  const values = [...params];
  // `self.iter_num += 1` later in the iteration: the closure runs at the step barrier, after the increment, so
  // attributes assigned in the loop are passed by value too (`lambda iter_num: print(f"step {iter_num}")`)
  const mutated = new Set<string>();
  for (const t of ['assignment', 'augmented_assignment']) {
    for (const a of ctx.sema.within(t, hot.anchor)) {
      const left = a.childForFieldName('left');
      if (left?.type === 'attribute') mutated.add(left.text);
    }
  }
  const used = new Set(
    ctx.sema
      .within('identifier', call)
      .filter((n) => !(n.parent?.type === 'attribute' && n.parent.childForFieldName('attribute')?.id === n.id))
      .map((n) => n.text),
  );
  const renames: { start: number; end: number; name: string }[] = [];
  const attrParam = new Map<string, string>();
  for (const a of ctx.sema.within('attribute', call)) {
    if (!mutated.has(a.text) || renames.some((r) => a.startIndex >= r.start && a.endIndex <= r.end)) continue;
    let name = attrParam.get(a.text);
    if (!name) {
      name = a.childForFieldName('attribute')?.text ?? 'value';
      while (used.has(name) || params.includes(name) || [...attrParam.values()].includes(name)) name += '_';
      attrParam.set(a.text, name);
      params.push(name);
      values.push(a.text);
    }
    renames.push({ start: a.startIndex, end: a.endIndex, name });
  }
  // `optimizer.param_groups[0]["lr"]`: a scheduler's step() later in the iteration rewrites it in place, and the closure
  // runs at the barrier after it, so the value is passed as it is at the report (a host float: no sync)
  for (const sub of ctx.sema.within('subscript', call)) {
    if (sub.parent?.type === 'subscript' && sub.parent.childForFieldName('value')?.id === sub.id) continue; // the outermost one
    if (!/^[A-Za-z_][\w.]*\.param_groups\s*\[/.test(sub.text) || /\b(lambda|for)\b/.test(sub.text)) continue;
    if (renames.some((r) => sub.startIndex < r.end && sub.endIndex > r.start)) continue;
    const key = /\[\s*["'](\w+)["']\s*\]\s*$/.exec(sub.text)?.[1] ?? 'value';
    let name = /^[A-Za-z_]\w*$/.test(key) ? key : 'value';
    while (used.has(name) || params.includes(name) || BUILTINS.has(name)) name += '_';
    params.push(name);
    values.push(sub.text);
    renames.push({ start: sub.startIndex, end: sub.endIndex, name });
  }
  let body = call.text;
  for (const r of [...renames].sort((x, y) => y.start - x.start)) {
    body = body.slice(0, r.start - call.startIndex) + r.name + body.slice(r.end - call.startIndex);
  }
  const args = values.length === 0 ? '()' : values.length === 1 ? `(${values[0]},)` : `(${values.join(', ')})`;
  const fn = `lambda${params.length ? ' ' + params.join(', ') : ''}: ${body}`;
  const snippet = ctx.idiom.stepClosure(fn, args);
  if (!snippet) return null;
  return {
    title: 'Report the value from a step closure (runs after the step executes)',
    edits: [replace(call, snippet.text)],
    imports: snippet.imports,
    needsAccel: snippet.needsAccel,
  };
}

/** Names bound by `with ... as NAME` of the with-statements enclosing `stmt` inside `anchor` (the hot loop). */
function withAliasesBetween(stmt: Node, anchor: Node): Set<string> {
  const out = new Set<string>();
  const collect = (n: Node) => {
    if (n.type === 'identifier') out.add(n.text);
    for (const c of n.namedChildren) if (c) collect(c);
  };
  for (let p = stmt.parent; p && p.id !== anchor.id; p = p.parent) {
    if (p.type !== 'with_statement') continue;
    const clause = p.namedChildren.find((c) => c?.type === 'with_clause');
    for (const item of clause?.namedChildren ?? []) {
      const value = item?.childForFieldName('value');
      if (value?.type !== 'as_pattern') continue;
      const alias = value.childForFieldName('alias');
      if (alias) collect(alias);
    }
  }
  return out;
}

type Binder = { kind: 'for' | 'assign'; node: Node; names: string[] };

/** Names a for target or an assignment's left side binds (`a`, `a, b`, `(a, b)`), in order; null for other shapes. */
function targetNames(left: Node | null): string[] | null {
  if (!left) return null;
  if (left.type === 'identifier') return [left.text];
  if (left.type === 'pattern_list' || left.type === 'tuple_pattern' || left.type === 'tuple') {
    const out: string[] = [];
    for (const c of left.namedChildren) {
      if (c?.type !== 'identifier') return null;
      out.push(c.text);
    }
    return out;
  }
  return null;
}

/** bindersOf's answers per file index, scope and name: every read of a name in one scope asks the same (a module scope scanned the whole file each time). */
const bindersMemo = new WeakMap<object, Map<string, Binder[] | null>>();

/**
 * The binding statements of a scope (nested defs excluded), read once per file index and scope: its `for` targets and
 * assignments by bound name (each list in the order bindersOf returns them: loops, then assignments, then augmented
 * assignments, each in document order), and the target texts of other shapes, which make a name they mention unknown.
 * Asking for each name of a module scanned every loop and assignment of the file once per name.
 */
interface ScopeBinders {
  fors: Map<string, Binder[]>;
  assigns: Map<string, Binder[]>;
  augs: Map<string, Binder[]>;
  /** Left sides of `for` loops and assignments that are no plain name list (a subscript or attribute of an assignment excluded). */
  opaque: string[];
}
const scopeBindersMemo = new WeakMap<object, Map<number, ScopeBinders>>();

function scopeBinders(ctx: RuleContext, scope: Node): ScopeBinders {
  let memo = scopeBindersMemo.get(ctx.sema);
  if (!memo) scopeBindersMemo.set(ctx.sema, (memo = new Map()));
  let r = memo.get(scope.id);
  if (r) return r;
  r = { fors: new Map(), assigns: new Map(), augs: new Map(), opaque: [] };
  const own = (n: Node) => (ctx.sema.enclosingFunction(n)?.id ?? null) === (scope.type === 'function_definition' ? scope.id : null);
  const add = (into: Map<string, Binder[]>, b: Binder) => {
    for (const name of new Set(b.names)) {
      const list = into.get(name);
      if (list) list.push(b);
      else into.set(name, [b]);
    }
  };
  for (const f of ctx.sema.within('for_statement', scope)) {
    if (!own(f)) continue;
    const names = targetNames(f.childForFieldName('left'));
    if (names) add(r.fors, { kind: 'for', node: f, names });
    else r.opaque.push(f.childForFieldName('left')?.text ?? '');
  }
  for (const [list, into] of [[ctx.sema.within('assignment', scope), r.assigns], [ctx.sema.within('augmented_assignment', scope), r.augs]] as const) {
    for (const a of list) {
      if (!own(a)) continue;
      const left = a.childForFieldName('left');
      const names = targetNames(left);
      if (names) add(into, { kind: 'assign', node: a, names });
      else if (left?.type !== 'subscript' && left?.type !== 'attribute') r.opaque.push(left?.text ?? '');
    }
  }
  memo.set(scope.id, r);
  return r;
}

/** Every statement of `scope` (nested defs excluded) that binds `name`. */
function bindersOf(ctx: RuleContext, scope: Node, name: string): Binder[] | null {
  let memo = bindersMemo.get(ctx.sema);
  if (!memo) bindersMemo.set(ctx.sema, (memo = new Map()));
  const key = `${scope.id}\0${name}`;
  let r = memo.get(key);
  if (r === undefined) memo.set(key, (r = bindersUncached(ctx, scope, name)));
  return r;
}

function bindersUncached(ctx: RuleContext, scope: Node, name: string): Binder[] | null {
  const s = scopeBinders(ctx, scope);
  // a loop target or assignment of another shape that mentions the name, or a parameter: not a plain binding
  const word = new RegExp(`\\b${name}\\b`);
  if (s.opaque.some((text) => word.test(text))) return null;
  if (scope.type === 'function_definition' && word.test(scope.childForFieldName('parameters')?.text ?? '')) return null;
  return [...(s.fors.get(name) ?? []), ...(s.assigns.get(name) ?? []), ...(s.augs.get(name) ?? [])];
}

/**
 * A loader batch element the loop never moves (evalD class B: BLIP's `img_id.item()` of the loader's ids, a list
 * indexed by DeepSpeed cifar's `labels[i]`): the loop moves other elements of the same batch by hand
 * (`image = image.to(device)`), so this one is still the CPU tensor the loader made and reading it runs no graph.
 * The chain from the read back to the loop target has one binding per name (no later `x = x.to(device)`).
 */
function unmovedBatchElement(ctx: RuleContext, node: Node): boolean {
  let n: Node | null = node;
  while (n && (n.type === 'subscript' || n.type === 'parenthesized_expression')) n = n.type === 'subscript' ? n.childForFieldName('value') : n.namedChildren[0];
  if (n?.type !== 'identifier') return false;
  const scope = ctx.sema.enclosingFunction(node) ?? ctx.root;
  let name = n.text;
  const chain = new Set<string>();
  // `ids = batch[2]`: the element of a chain name the read took (a move of `batch[0]` is another element)
  const took = new Map<string, string>();
  for (let hop = 0; hop < 4; hop++) {
    chain.add(name);
    const bs = bindersOf(ctx, scope, name);
    if (!bs || bs.length !== 1) return false;
    const b = bs[0];
    const right = b.node.childForFieldName('right');
    if (!right || b.node.type === 'augmented_assignment') return false;
    if (b.kind === 'for') {
      if (ctx.sema.iteratesLoader(b.node)) {
        const v = ctx.model.iterationValue(right, b.node);
        if (v.kind !== 'tensor' || v.device === 'xla') return false;
        return movesOtherElement(ctx, b.node, b.names, chain, took);
      }
      // `for caption, img_id in zip(captions, image_id)`: follow the zipped argument
      if (right.type === 'call' && right.childForFieldName('function')?.text === 'zip' && b.names.length > 1) {
        const arg = callArgs(right).positional[b.names.indexOf(name)];
        if (arg?.type !== 'identifier') return false;
        name = arg.text;
        continue;
      }
      return false;
    }
    // `label = labels[i]`, `images, labels = data`
    let r: Node | null = right;
    let index: string | null = null;
    while (r && r.type === 'subscript') {
      index = r.childForFieldName('subscript')?.text ?? null;
      r = r.childForFieldName('value');
    }
    if (r?.type !== 'identifier') return false;
    name = r.text;
    if (index !== null && right.type === 'subscript' && right.childForFieldName('value')?.type === 'identifier') took.set(name, index);
  }
  return false;
}

/** The loader loop moves by hand (`x.to(...)`, `x.cuda()`) an element of its batch that is not on `chain`. */
function movesOtherElement(ctx: RuleContext, loop: Node, loopNames: string[], chain: Set<string>, took: Map<string, string> = new Map()): boolean {
  const body = loop.childForFieldName('body');
  if (!body) return false;
  const batch = new Set(loopNames);
  // `videos = batch[0]` when the read took `batch[2]`: names of other elements of the batch
  const others = new Set<string>();
  for (const a of ctx.sema.within('assignment', body)) {
    const right = a.childForFieldName('right');
    if (right?.type === 'identifier' && batch.has(right.text)) for (const x of targetNames(a.childForFieldName('left')) ?? []) batch.add(x);
    const base = right?.type === 'subscript' ? right.childForFieldName('value') : null;
    const left = a.childForFieldName('left');
    if (base?.type === 'identifier' && took.has(base.text) && right!.childForFieldName('subscript')?.text !== took.get(base.text) && left?.type === 'identifier' && !chain.has(left.text)) others.add(left.text);
  }
  for (const c of ctx.sema.within('call', body)) {
    const m = methodName(c);
    // `imgs.type(Tensor)` with `Tensor = torch.cuda.FloatTensor`: a move by type
    if (m === 'type' && callArgs(c).positional.length === 1 && receiver(c)?.type === 'identifier' && batch.has(receiver(c)!.text) && !chain.has(receiver(c)!.text)) return true;
    if (m !== 'to' && m !== 'cuda') continue;
    if (receiver(c)?.type === 'identifier' && others.has(receiver(c)!.text)) return true;
    let r = receiver(c);
    // `x = batch[0].cuda()` when the read took `batch[2]`: another element of the same batch moved
    const direct = r?.type === 'subscript' && r.childForFieldName('value')?.type === 'identifier' ? r : null;
    while (r && r.type === 'subscript') r = r.childForFieldName('value');
    if (r?.type === 'identifier' && batch.has(r.text) && !chain.has(r.text)) return true;
    if (direct && r?.type === 'identifier' && took.has(r.text) && direct.childForFieldName('subscript')?.text !== took.get(r.text)) return true;
  }
  return false;
}

/** The loop that `hot` anchors, or the loop (in the same function) that encloses `node` below it. */
function anchorLoop(node: Node, hot: HotInfo): Node | null {
  if (hot.anchor.type === 'for_statement' || hot.anchor.type === 'while_statement') return hot.anchor;
  for (let p = node.parent; p && p.id !== hot.anchor.id; p = p.parent) {
    if (p.type === 'for_statement' || p.type === 'while_statement') return p;
    if (p.type === 'function_definition' || p.type === 'lambda') return null;
  }
  return null;
}

const FEW_ITERATIONS = 8;

/**
 * `if plots and batch_i < 3:` / `if i == 0:` in the loop, `batch_i` a counter of that loop (its `for` target, the
 * index of `enumerate`): the body runs on the first few iterations only, so its host reads (plotting the first
 * batches, printing the first step) are a one-off cost, not a per-step sync (yolov5 val.py's plot_images).
 */
function firstIterationsOnly(ctx: RuleContext, site: Node, hot: HotInfo): boolean {
  const loop = anchorLoop(site, hot);
  if (!loop || loop.type !== 'for_statement') return false;
  const counters = new Set<string>();
  const collect = (n: Node | null) => {
    if (!n) return;
    if (n.type === 'identifier') counters.add(n.text);
    else if (/pattern_list|tuple_pattern/.test(n.type) && n.namedChildren[0]) collect(n.namedChildren[0]); // `for i, batch in enumerate(...)`
  };
  const right = loop.childForFieldName('right');
  const iterFn = right?.type === 'call' ? right.childForFieldName('function')?.text : null;
  if (iterFn === 'enumerate' || iterFn === 'range') collect(loop.childForFieldName('left'));
  if (!counters.size) return false;
  const early = (c: Node | null): boolean => {
    if (!c) return false;
    if (c.type === 'parenthesized_expression') return early(c.namedChildren[0]);
    // `a and i < 3`: the conjunction holds on the first iterations at most
    if (c.type === 'boolean_operator') return c.children.some((x) => x?.type === 'and') && c.namedChildren.some((x) => early(x));
    if (c.type === 'not_operator') {
      const arg = c.childForFieldName('argument');
      return arg?.type === 'identifier' && counters.has(arg.text);
    }
    if (c.type !== 'comparison_operator' || c.namedChildren.length !== 2) return false;
    const [l, r] = c.namedChildren as [Node, Node];
    const op = c.children.find((x) => x && !x.isNamed)?.type;
    const small = (n: Node) => n.type === 'integer' && Number(n.text) <= FEW_ITERATIONS;
    if (l.type === 'identifier' && counters.has(l.text) && small(r)) return op === '<' || op === '<=' || op === '==';
    if (r.type === 'identifier' && counters.has(r.text) && small(l)) return op === '>' || op === '>=' || op === '==';
    return false;
  };
  for (let p = site.parent, child: Node = site; p && p.id !== loop.id; child = p, p = p.parent) {
    if (p.type !== 'if_statement') continue;
    const cond = p.childForFieldName('condition');
    // the consequence only (an `else`/`elif` runs on the other iterations)
    if (cond && child.id === p.childForFieldName('consequence')?.id && early(cond)) return true;
  }
  return false;
}

/** The identifier an expression reads (`val_loss` of `val_loss.item()`, `f(val_loss)`'s argument is not it). */
function baseIdentifier(n: Node | null): Node | null {
  for (let k = 0; n && k < 6; k++) {
    if (n.type === 'identifier') return n;
    if (n.type === 'call' && methodName(n)) n = receiver(n);
    else if (n.type === 'call' && n.childForFieldName('function')?.type === 'identifier' && callArgs(n).positional.length === 1) n = callArgs(n).positional[0];
    else if (n.type === 'attribute') n = n.childForFieldName('object');
    else if (n.type === 'subscript') n = n.childForFieldName('value');
    else if (n.type === 'parenthesized_expression') n = n.namedChildren[0];
    else return null;
  }
  return null;
}

/** A function (same file, or another project module's) whose body runs a loop of its own: an evaluation run. */
function runsLoop(ctx: RuleContext, call: Node): boolean {
  const defs = [...ctx.sema.calledFunctions(call)];
  // `raw_model.generate(x, n)` on a model of this file: the method of that name of a class here
  const meth = methodName(call);
  const recv = receiver(call);
  if (meth && recv && ctx.model.value(recv).kind === 'module') {
    defs.push(...ctx.sema.functionsNamed(meth).filter((d) => ctx.sema.enclosingClass(d)));
  }
  if (defs.some((d) => ctx.sema.within('for_statement', d).length > 0 || ctx.sema.within('while_statement', d).length > 0)) return true;
  const t = ctx.project?.resolveCall(call, ctx.sema, ctx.path);
  if (t && (t.kind === 'function' || t.kind === 'method')) {
    const sema = t.module.sema;
    return sema.within('for_statement', t.def).length > 0 || sema.within('while_statement', t.def).length > 0;
  }
  return false;
}

/**
 * Under a throttle guard, the value read was returned by a call, in that same guarded block, to a function that runs a
 * loop of its own (`val_loss = validate(model, val_loader)` every `eval_interval` steps, then `val_loss.item()` to
 * log it): the evaluation already ran its graphs; reading its result once per evaluation is the report itself
 * (TinyLlama, lit-gpt pretrain). Rebindings from the value itself (`val_loss = val_loss.item()`) keep it.
 */
function evalRunResult(ctx: RuleContext, site: Node, hot: HotInfo): boolean {
  if (!hot.throttled) return false;
  const id = baseIdentifier(site.type === 'call' && MATERIALIZE.has(methodName(site) ?? '') ? receiver(site) : site);
  if (!id) return false;
  const block = throttleBlock(ctx, site, hot);
  if (!block) return false;
  const scope = ctx.sema.enclosingFunction(site);
  const rhs = ctx.sema.bindings(id.text).filter((r) => (ctx.sema.enclosingFunction(r)?.id ?? null) === (scope?.id ?? null) && r.startIndex < site.startIndex);
  const inBlock = rhs.filter((r) => r.startIndex >= block!.startIndex && r.endIndex <= block!.endIndex);
  if (!inBlock.length) return false;
  let run = false;
  for (const r of inBlock) {
    if (r.type === 'call' && runsLoop(ctx, r)) run = true;
    else if (baseIdentifier(r)?.text !== id.text) return false;
  }
  return run;
}

/** The innermost throttle `if` (`if step % k == 0:`) between `site` and its hot anchor. */
function throttleBlock(ctx: RuleContext, site: Node, hot: HotInfo): Node | null {
  let inner: Node | null = null;
  for (let p = site.parent; p && p.id !== hot.anchor.id; p = p.parent) {
    if (p.type === 'if_statement' && ctx.sema.isThrottleCondition(p)) return p;
    if (!inner && p.type === 'block') inner = p;
  }
  // a helper the loop calls under its throttle guard (`if step % k == 0: self.log_metrics()`): each statement block of
  // it (the `.item()`s of one metrics list, of one per-head loop) is one logging block
  return hot.anchor.type === 'function_definition' ? inner : null;
}

/**
 * `.numpy()` on the path a CUDA flag gives a TPU host: the author moves the data to CUDA only under the flag, so where
 * the flag is False the tensor is on the CPU (TPU103 reports the flag, the error). Either the call is in the arm a TPU
 * host takes (`np.squeeze(t.numpy()) if not train_on_gpu else np.squeeze(t.cpu().numpy())`), or the name was copied
 * with `.cpu()` in the flag's CUDA arm just before (`if train_on_gpu: p = p.cpu()` then `p.numpy()`): CPU on both paths.
 */
function cpuByFlag(ctx: RuleContext, call: Node, recv: Node): boolean {
  const known = (cond: Node | null | undefined) => (cond ? tpuTruth(cond, ctx.model, { guess: true }) : null);
  for (let n: Node = call, p = call.parent; p && p.type !== 'function_definition' && p.type !== 'module'; n = p, p = p.parent) {
    if (p.type === 'conditional_expression') {
      const [a, c, b] = p.namedChildren;
      const t = known(c);
      if (t !== null && n.id === (t ? a : b)?.id) return true;
    }
    if (p.type === 'if_statement' && n.type === 'block') {
      const t = known(p.childForFieldName('condition'));
      if (t === true && p.childForFieldName('consequence')?.id === n.id) return true;
    }
    if (p.type === 'else_clause' && p.parent?.type === 'if_statement' && p.parent.childrenForFieldName('alternative').length === 1) {
      if (known(p.parent.childForFieldName('condition')) === false) return true;
    }
  }
  if (recv.type !== 'identifier') return false;
  const stmt = enclosingStatement(call);
  for (let prev = stmt?.previousNamedSibling, k = 0; prev && k < 6; prev = prev.previousNamedSibling, k++) {
    if (prev.type !== 'if_statement' || prev.childrenForFieldName('alternative').length) {
      if (new RegExp(`\\b${recv.text}\\s*=[^=]`).test(prev.text)) return false;
      continue;
    }
    if (known(prev.childForFieldName('condition')) !== false) continue;
    const body = prev.childForFieldName('consequence');
    return !!body?.namedChildren.some((st) => {
      const a = st?.type === 'expression_statement' ? st.namedChildren[0] : null;
      const right = a?.type === 'assignment' && a.childForFieldName('left')?.text === recv.text ? a.childForFieldName('right') : null;
      return !!right && right.type === 'call' && methodName(right) === 'cpu' && receiver(right)?.text === recv.text;
    });
  }
  return false;
}

/**
 * `site` is in the body of `if <flag>:` where `flag` is a parameter of the enclosing function that defaults to False or
 * None and that no call of this file passes (by keyword anywhere, or by position at the function's call sites): a debug
 * switch left off, so the read never runs (`def forward(self, x, print_attn_probs=False)`).
 */
function underOffFlag(ctx: RuleContext, site: Node): boolean {
  const fn = ctx.sema.enclosingFunction(site);
  if (!fn) return false;
  for (let n: Node = site, p = site.parent; p && p.id !== fn.id; n = p, p = p.parent) {
    if ((p.type !== 'if_statement' && p.type !== 'elif_clause') || p.childForFieldName('consequence')?.id !== n.id) continue;
    const cond = conditionOf(p);
    if (cond?.type !== 'identifier') continue;
    const param = (fn.childForFieldName('parameters')?.namedChildren ?? []).find((x) => (x?.type === 'default_parameter' || x?.type === 'typed_default_parameter') && x.childForFieldName('name')?.text === cond.text);
    const dflt = param?.childForFieldName('value');
    if (!param || (dflt?.type !== 'false' && dflt?.type !== 'none')) continue;
    // the name is not rebound in the function (only the parameter binds it)
    if (ctx.model.bindingExpressions(cond).some((e) => e !== null)) continue;
    const passedByName = ctx.sema.identifiersNamed(cond.text).some((id) => id.parent?.type === 'keyword_argument' && id.parent.childForFieldName('name')?.id === id.id);
    const params = (fn.childForFieldName('parameters')?.namedChildren ?? []).filter((x): x is Node => !!x && x.type !== 'comment');
    const cls = ctx.sema.enclosingClass(fn);
    // a module's forward is called as the module: `self.attn(x, True)` passes it by position
    const moduleArgs = cls && fn.childForFieldName('name')?.text === 'forward' ? ctx.model.moduleCallArguments(cls, params.indexOf(param) - 1, cond.text) : [];
    if (!passedByName && !moduleArgs.length && ctx.model.argumentsFor(fn, param).args.length === 0) return true;
  }
  return false;
}

/** The string is the name argument of `getattr`/`setattr`/`hasattr`/`delattr`. */
function attributeName(s: Node): boolean {
  const list = s.parent;
  const call = list?.type === 'argument_list' ? list.parent : null;
  const fn = call?.type === 'call' ? call.childForFieldName('function') : null;
  return fn?.type === 'identifier' && /^(getattr|setattr|hasattr|delattr)$/.test(fn.text) && list!.namedChildren[1]?.id === s.id;
}
