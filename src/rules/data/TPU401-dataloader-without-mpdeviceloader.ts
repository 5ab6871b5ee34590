import { workerMoves } from './worker-moves';
import { defineRule } from '../../core/rule';
import { downgrade } from '../../core/engine';
import { replace } from '../../core/edits';
import type { FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, conditionOf, kwValue, methodName, receiver, stringContent } from '../../core/semantics';
import type { RuleContext } from '../../core/rule';
import type { HandMoved } from './util';
import type { HotInfo } from '../../core/semantics';
import { callerBatchMoves, isWrapperCall, cudaGuardedPlacement, handMovedLoaders, helperInnerMove, loaderFramework, isDataLoaderCall, loaderFactory, loadersPassedToProjectLoops, movesHostConverted, preparedByFramework, removeArg, xlaWrap } from './util';

/** The 1-based line of a factory's DataLoader in its own module. */
function lineIn(ctx: { project: { textOf(p: string): string | null } | null }, f: { path: string; node: { startIndex: number } }): number {
  return (ctx.project?.textOf(f.path) ?? '').slice(0, f.node.startIndex).split('\n').length;
}
import { cudaGuarded } from '../device/cuda-util';
import { PIN_RAISES, PIN_RAISES_TORCHTPU } from './pinning';
import { reportRuns, type Draft } from '../shared';

/** A loop whose body ends every iteration with `return`/`break` at its top level takes one batch (a throughput probe), copying none per step. */
function runsOnce(loop: Node): boolean {
  const body = loop.childForFieldName('body');
  return !!body?.namedChildren.some((c) => c?.type === 'return_statement' || c?.type === 'break_statement') || takesFirstFew(loop);
}

/**
 * A setup loop that collects the first few batches and stops (`for i, x in enumerate(test_loader): ... if i ==
 * n_samples - 1: break`) with no training step in it: a fixed handful of copies before training, no per-step cost.
 */
function takesFirstFew(loop: Node): boolean {
  const body = loop.childForFieldName('body');
  const index = loop.childForFieldName('left')?.namedChildren[0];
  if (!body || loop.type !== 'for_statement' || index?.type !== 'identifier' || /\.(backward|step)\(/.test(body.text)) return false;
  return body.namedChildren.some((c) => {
    if (c?.type !== 'if_statement' || c.namedChildren.some((k) => k?.type === 'elif_clause' || k?.type === 'else_clause')) return false;
    const cond = conditionOf(c);
    const cons = c.childForFieldName('consequence');
    return cond?.type === 'comparison_operator' && cond.namedChildren[0]?.text === index.text && /^(==|>=|>)$/.test(cond.child(1)?.text ?? '') && cons?.namedChildren.length === 1 && cons.namedChildren[0]?.type === 'break_statement';
  });
}

/** The `True` values of a 'pin_memory' entry in every dict bound to `name` (`{'pin_memory': True}`, `dict(pin_memory=True)`). */
function pinEntries(ctx: RuleContext, name: string): Node[] {
  const out: Node[] = [];
  for (const v of ctx.sema.bindings(name)) {
    if (v.type === 'dictionary') {
      for (const pair of v.namedChildren) {
        if (pair?.type !== 'pair') continue;
        const key = pair.childForFieldName('key');
        const value = pair.childForFieldName('value');
        if (key?.type === 'string' && stringContent(key) === 'pin_memory' && value?.text === 'True') out.push(value);
      }
    } else if (v.type === 'call' && v.childForFieldName('function')?.text === 'dict') {
      const value = kwValue(callArgs(v).keywords.get('pin_memory'));
      if (value?.text === 'True') out.push(value);
    }
  }
  return out;
}

/** The argparse default `True` of `args.x` when every default the model knows for it is `True` (`default=True`, `set_defaults(x=True)`). */
function argparseTrue(ctx: RuleContext, value: Node | null): Node | null {
  if (value?.type !== 'attribute') return null;
  const sources = ctx.model.attributeSources(value);
  if (!sources.length || !sources.every((s) => s.argparse && s.value.text === 'True')) return null;
  return sources[0].value;
}

const short = (t: string) => (t.length > 40 ? t.slice(0, 37) + '…' : t);

export default defineRule({
  id: 'TPU401',
  name: 'dataloader-without-mpdeviceloader',
  title: '`DataLoader` batches moved to the device by hand, without `pl.MpDeviceLoader`; CUDA pinning flags',
  severity: 'warning',
  step: 4,
  effort: 1,
  message: 'Batches are copied to the device by hand inside the step: wrap the loader in `pl.MpDeviceLoader`',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Wrap the loader in `pl.MpDeviceLoader`' },
  // 'loader': a loader built by a factory of another module (`build_loader(...)`) names no DataLoader here
  // '.to(' / '.cuda(': a helper of a model or meta-architecture module that copies the batch another module's loop hands it
  // ('batch': a model method that hands its batch to another module's mover has no copy of its own, tacotron2's parse_batch)
  deviceWork: true,
  triggers: ['DataLoader', 'pin_memory', 'non_blocking', 'loader', '.to(', '.cuda(', 'batch'],
  docs: {
    what:
      'Checks for training and eval loops that iterate a plain `torch.utils.data.DataLoader` (or an instance of a class of the file or project deriving from it, `class SpeakerLoader(DataLoader)`; a batch converted on the host before its move, `torch.from_numpy(batch.data).to(device)`, is reported without a fix: `MpDeviceLoader` moves only CPU tensors, so the loader must yield tensors first; directly, or through `enumerate`/`tqdm`, or by hand with `batch = next(data_iter)` where `data_iter = iter(loader)`) and move the batch items with `.to(device)`/`.cuda()` (also after an unpacking, `images, labels = data`, through a batch-moving helper given a device, `move_to_device(batch, device)`/`to_device(batch, device)`/`task.prepare_batch(batch, device=device)`, through a same-file function whose body moves its parameter, or in a same-file method the loop hands the batch to, `self.train_step(batch)`), ' +
      'with no `MpDeviceLoader`/`ParallelLoader` wrapper (with project scope, a loader returned by a factory of another module, `build_loader(...)`, alone or in a returned tuple, counts as a DataLoader; a plain loader passed into another module\'s loop that moves batches by hand, `engine.train_one_epoch(model, data_loader_train, ...)`, is reported at the call, info for an eval loop, with an unsafe wrap of the argument; a loader this file does not build, in a file that never imports torch_xla, a loader attribute `self.train_loader`/`data["train"].dataloader` or the loader `deepspeed.initialize(..., training_data=ds)` returns, is reported without a fix); and for the CUDA pinning flags `DataLoader(pin_memory=True)`, `pin_memory_device=`, `tensor.pin_memory()` and `.to(..., non_blocking=True)` (info; an unguarded `tensor.pin_memory()` is an error: it raises without CUDA). ' +
      'A batch copied by a same-file helper the loop calls (`loss = calc_loss_batch(x, y, model, device)`) is reported on the copy in the helper, with the call as a related location; with project scope a method of another module that a training loop hands its batch to (`model.set_input(data)` whose body does `data["A"].to(self.device)`, or that unpacks the batch and hands its items to another module\'s mover, `text = to_gpu(text)` in tacotron2\'s `parse_batch`) is reported on its copy, with the caller\'s loop related, without a fix. ' +
      'A device copy inside the data pipeline, in a map-style dataset\'s `__getitem__` (a class deriving from `Dataset`, also through a same-file base) or in a function handed to a loader as `collate_fn` (also wrapped in a lambda or `partial`), is reported once per function on its first copy, the others related, without a fix: `MpDeviceLoader` prefetches only CPU tensors, so these arrive as one small synchronous copy per sample or batch; a dtype cast or a copy to the CPU (`.to(torch.float32)`, `.to(\'cpu\')`) is none. ' +
      'HF Trainer, Accelerate and Lightning scripts are not flagged: the framework owns data loading (a file that imports only helpers of `accelerate.utils` builds no `Accelerator`).',
    why:
      '"`MpDeviceLoader` handles prefetching data to the device, overlapping data transfers with computation" (MIG:121); it also issues the per-step `torch_xla.sync()` ' +
      '(PL:39-56), which covers the step barrier (TPU204). Its prefetch knobs are forwarded to `ParallelLoader` (`loader_prefetch_size=16`, `device_prefetch_size=8`, ' +
      '`host_to_device_transfer_threads=1`, PL:85-93). Copying by hand in the loop serializes the host-to-device transfer with the step. ' +
      '`pin_memory=True` on a host without an accelerator only warns that pinned memory will not be used (pytorch/pytorch#146821); `non_blocking=True` has no CUDA stream to overlap with. ' +
      'An explicit `tensor.pin_memory()` raises: PyTorch pins through the CUDA pinned allocator (up to 2.4 `_pin_memory` is redispatched to `device.value_or(at::kCUDA)`; CPU torch 1.13 run here raises NotImplementedError "Could not run \'aten::_pin_memory\' with arguments from the \'CUDA\' backend"), later through the accelerator hooks\' `getPinnedMemoryAllocator()` (aten/src/ATen/native/Memory.cpp), which torch_xla (up to pytorch/xla@41398bf) does not register.',
    example:
      'loader = DataLoader(ds, batch_size=B, shuffle=True, num_workers=8, pin_memory=True)\nfor x, y in loader:\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)',
    useInstead:
      'import torch_xla\nimport torch_xla.distributed.parallel_loader as pl\n\nloader = DataLoader(ds, batch_size=B, shuffle=True, num_workers=8, drop_last=True)\nfor x, y in pl.MpDeviceLoader(loader, torch_xla.device()):   # batches arrive on the XLA device\n    ...',
    fixSafety:
      'Safe: the loop iterates `pl.MpDeviceLoader(loader, torch_xla.device())` (or `iter(...)` of it, at every place the iterator is created) (dual-path: `accel.xla_loader(loader)`, the loader itself off XLA); the existing `.to(device)` calls stay and are no-ops on tensors already there. ' +
      'The wrapper always gets the XLA device: `MpDeviceLoader` rejects any other device on the first batch, so never the device the loop moves to (an int rank means `cuda:N`; an if/elif picker may have chosen the CPU). ' +
      'No fix is offered while a CUDA-availability guard decides where the model goes (`if train_on_gpu: model.cuda()`): on TPU the guard is false and the wrapped batches would meet a CPU model. Removing `pin_memory=True`/`non_blocking=True` is safe; in dual-path style `pin_memory` becomes `not accel.is_xla()` so CUDA keeps pinning, and `non_blocking`/`.pin_memory()` are left alone. ' +
      'Keep `num_workers>0` and `persistent_workers=True` when CPU-side transforms are heavy (general PyTorch practice, unverified as TPU tuning).',
    sources: [
      'MIG:121 (docs/source/learn/migration-to-xla-on-tpus.md, MpDeviceLoader prefetching)',
      'torch_xla/core/xla_model.py at v2.9.0 `send_cpu_data_to_device`: `select_fn` converts only `type(v) == torch.Tensor and v.device.type == \'cpu\'` (device tensors from a dataset or collate function pass through unprefetched)',
      'PL:39-56, 85-93, 253-287 (torch_xla/distributed/parallel_loader.py: per-batch sync, prefetch arguments, MpDeviceLoader)',
      'pytorch/pytorch#146821 (pin_memory without an accelerator warning)',
      'PT:aten/src/ATen/native/Memory.cpp `_pin_memory` (accelerator pinned allocator); older aten/src/ATen/templates/RegisterBackendSelect.cpp `_pin_memory` redispatch to `device.value_or(at::kCUDA)`',
    ],
    torchtpu: 'No known loader wrapper for the tpu device yet: the loop is reported without a fix; the pinning flags are still removed.',
  },
  check(ctx) {
    // a framework (HF Trainer, Accelerate, Lightning) owns the loaders it prepares; a loop over a plain `DataLoader(...)`
    // that copies its batches by hand is still the script's own (a notebook's hand-written loop before its Accelerate cell)
    const framework = !!loaderFramework(ctx);
    // (a) loops over a plain DataLoader (or pulling batches with next(iter(loader))) that move the batch by hand
    const seen = new Set<number>();
    const found: { info: HotInfo; h: HandMoved }[] = [];
    for (const info of ctx.sema.hotLoops()) for (const h of handMovedLoaders(ctx, info.anchor, framework ? { plainOnly: true, cached: true } : { anyParam: true, cached: true })) found.push({ info, h });
    // a helper's copy shared by several loops (`calc_loss_batch` of the train loop and of the eval helper) is the anchor of
    // one finding: the loop over a loader whose construction is known goes first, a loop over a loader parameter after it (stable sort)
    const known = (h: HandMoved) => {
      if (loaderFactory(ctx, h.loader) || isDataLoaderCall(ctx, h.loader)) return true;
      const fn = ctx.sema.enclosingFunction(h.loader)?.id;
      return ctx.sema.bindings(h.loader.text).some((v) => isDataLoaderCall(ctx, v) && ctx.sema.enclosingFunction(v)?.id === fn);
    };
    const rank = (h: HandMoved) => (h.param ? 2 : known(h) ? 0 : 1);
    found.sort((a, b) => rank(a.h) - rank(b.h));
    const claimed = new Set<number>();
    for (const { info, h } of found) {
      {
        // an iterator pulled in nested hot loops is reported once
        if (seen.has(h.loader.id) || runsOnce(info.anchor) || (framework && preparedByFramework(ctx, h.loader))) continue;
        seen.add(h.loader.id);
        const guard = cudaGuardedPlacement(ctx);
        // a loader parameter of a file that builds none: the wrap belongs where its callers make it
        // `torch.from_numpy(batch.data).to(device)`: the loader yields numpy data, which MpDeviceLoader does not move (it
        // moves only CPU `torch.Tensor`s: torch_xla/core/xla_model.py:1298-1299 `send_cpu_data_to_device` select_fn, pytorch/xla@41398bf)
        const numpy = movesHostConverted(ctx, h.move);
        const wrap = guard || h.param || h.cached || numpy ? null : xlaWrap(ctx, h.loader.text);
        const what = ctx.idiom.profile === 'torchtpu'
          ? 'prefetch batches to the device instead'
          : numpy
            ? 'have the loader yield tensors (convert in the dataset or `collate_fn`) and wrap it in `pl.MpDeviceLoader`, which moves tensors only (no fix here)'
          : h.opaque
            ? 'wrap the loader in `pl.MpDeviceLoader` where it is made (no fix here)'
          : h.param
            ? 'wrap the loader in `pl.MpDeviceLoader` where it is made (no fix here: the callers pass it)'
            : h.cached
            ? 'wrap the loader in `pl.MpDeviceLoader` and re-iterate it instead of `itertools.cycle` (no fix here: `cycle` replays its first pass, which would keep those batches in device memory)'
          : h.iterName ? 'wrap the loader in `pl.MpDeviceLoader`' : 'wrap it in `pl.MpDeviceLoader`';
        const factory = loaderFactory(ctx, h.loader);
        const made = factory ? ` (a \`DataLoader\` built by \`${factory.name}()\`, ${factory.path.split('/').pop()}:${lineIn(ctx, factory)})` : '';
        const source = h.opaque
          ? `\`${short(h.loader.text)}\` (a loader made elsewhere) yields CPU batches that`
          : h.param
          ? `The loader parameter \`${short(h.loader.text)}\` yields CPU batches (unless a caller passes ${ctx.idiom.profile === 'torchtpu' ? 'a loader that prefetches to the device' : 'an \`MpDeviceLoader\`'}) that`
          : h.iterName ? `\`next(${short(h.iterName)})\` yields CPU batches of \`${short(h.loader.text)}\`${made} that` : `\`${short(h.loader.text)}\`${made} yields CPU batches that`;
        // in a training loop TPU204 reports the loop header (it proposes the same wrap as the step barrier): this finding
        // goes on the copy itself, with the loader as a related location (issue 9, one finding per problem)
        const onMove = info.kind === 'train';
        // the batch handed to a same-file helper that copies it (`loss = calc_loss_batch(x, y, model, device)`): the
        // finding goes on the copy in the helper, the call in the loop is a related location
        const innerMove = onMove ? helperInnerMove(h.move) : null;
        const inner = innerMove && !claimed.has(innerMove.id) ? innerMove : null;
        if (inner) claimed.add(inner.id);
        const helperName = inner ? short(h.move.childForFieldName('function')?.text ?? 'the helper') : '';
        const related = [
          ...(inner ? [{ start: h.move.startIndex, end: h.move.endIndex, message: `the loop hands the batch to \`${helperName}\`` }] : []),
          ...(onMove ? [{ start: h.loader.startIndex, end: h.loader.endIndex, message: `the loader the loop iterates` }] : []),
          ...(factory ? [{ start: factory.node.startIndex, end: factory.node.endIndex, path: factory.path, message: `the \`DataLoader\` that \`${factory.name}()\` returns` }] : []),
        ];
        ctx.report(inner ?? (onMove ? h.move : h.loader), {
          severity: info.kind === 'eval' ? downgrade('warning') : 'warning',
          ...(related.length ? { related } : {}),
          message: `${source} ${inner ? `\`${helperName}\`, called in the loop,` : 'the loop'} copies to the device by hand (\`${short((inner ?? h.move).text)}\`): ${what}${guard ? ` (no fix while a CUDA check decides the placement, \`${short(guard.text)}\`: move the model unconditionally first)` : ''}`,
          fix: wrap
            ? {
                title: `Iterate \`${wrap.text}\``,
                edits: h.sites.map((l) => replace(l, wrap.text)),
                imports: wrap.imports,
                needsAccel: wrap.needsAccel,
              }
            : null,
        });
      }
    }

    if (framework) return;
    // (a') a plain DataLoader passed into another module's training loop (`engine.train_one_epoch(model, loader, ...)`):
    // judged at the call, where the loader can be wrapped without touching the shared loop
    for (const p of loadersPassedToProjectLoops(ctx)) {
      if (seen.has(p.arg.id) || ctx.sema.inXlaAwareBranch(p.call)) continue;
      seen.add(p.arg.id);
      const guard = cudaGuardedPlacement(ctx);
      const wrap = guard ? null : xlaWrap(ctx, p.arg.text);
      const file = p.path.split('/').pop() ?? p.path;
      const line = (ctx.project?.textOf(p.path) ?? '').slice(0, p.loop.startIndex).split('\n').length;
      const what = ctx.idiom.profile === 'torchtpu' ? 'prefetch batches to the device instead' : 'wrap the loader in `pl.MpDeviceLoader` here';
      // an eval loop over it (the callee's own hot-loop analysis) is advice, as for same-file eval loops
      const other = ctx.project?.module(p.path)?.sema;
      const training = !!other && other.hotLoops().some((l) => l.anchor.id === p.loop.id && l.kind === 'train');
      ctx.report(p.arg, {
        severity: training ? 'warning' : downgrade('warning'),
        message: `\`${short(p.arg.text)}\` yields CPU batches that \`${p.name}\` (${file}:${line}) copies to the device by hand: ${what}${guard ? ` (no fix while a CUDA check decides the placement, \`${short(guard.text)}\`)` : ''}`,
        // the loop lives in the other module: the wrap at this call is a change to review there too
        fix: wrap ? { title: `Pass \`${wrap.text}\``, applicability: 'unsafe', edits: [replace(p.arg, wrap.text)], imports: wrap.imports, needsAccel: wrap.needsAccel } : null,
        related: [
          { start: p.loop.startIndex, end: p.loop.childForFieldName('right')?.endIndex ?? p.loop.endIndex, path: p.path, message: `the loop of \`${p.name}\` over the loader` },
          { start: p.move.startIndex, end: p.move.endIndex, path: p.path, message: 'the batch copied to the device by hand' },
        ],
      });
    }

    // (a'') a helper of this module that another module's training loop hands its batch to, and that copies it to the
    // device by hand (`model.set_input(data)` → `input['A'].to(self.device)`): the copy, with the caller's loop related
    for (const c of callerBatchMoves(ctx)) {
      if (claimed.has(c.move.id) || ctx.sema.inXlaAwareBranch(c.move)) continue;
      claimed.add(c.move.id);
      const other = ctx.project?.module(c.path);
      const file = c.path.split('/').pop() ?? c.path;
      const line = (other?.text ?? '').slice(0, c.call.startIndex).split('\n').length;
      const name = c.def.childForFieldName('name')?.text ?? 'helper';
      const it = c.loop.childForFieldName('right');
      ctx.report(c.move, {
        message: `\`${name}\` copies the batch of a training loop (${file}:${line}) to the device by hand (\`${short(c.move.text)}\`): ${ctx.idiom.profile === 'torchtpu' ? 'prefetch batches to the device instead' : `wrap that loop's loader in \`pl.MpDeviceLoader\` (no fix here: the loop is in ${file})`}`,
        fix: null,
        related: [
          ...(c.inner ? [{ start: c.inner.node.startIndex, end: c.inner.node.endIndex, path: c.inner.path, message: 'the copy in the helper' }] : []),
          { start: c.call.startIndex, end: c.call.endIndex, path: c.path, message: `the loop hands its batch to \`${name}\`` },
          ...(it ? [{ start: it.startIndex, end: it.endIndex, path: c.path, message: 'what the loop iterates' }] : []),
        ],
      });
    }

    // (b) CUDA pinning flags
    const pinned = new Set<number>();
    const nonBlocking: Draft[] = [];
    for (const call of ctx.sema.nodes('call')) {
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      const { keywords, positional } = callArgs(call);
      if (isDataLoaderCall(ctx, call)) {
        const pin = keywords.get('pin_memory');
        // `**kwargs` whose dict literal (or `dict(...)`) sets 'pin_memory': True, shared by the train and test loaders:
        // reported once, on the entry
        for (const splat of positional) {
          if (splat.type !== 'dictionary_splat' || splat.namedChildren[0]?.type !== 'identifier') continue;
          for (const entry of pinEntries(ctx, splat.namedChildren[0].text)) {
            if (pinned.has(entry.id)) continue;
            pinned.add(entry.id);
            const x = ctx.idiom.dualPath ? ctx.idiom.isXla() : null;
            ctx.report(entry, {
              severity: 'info',
              message: `\`pin_memory\` is True in \`**${splat.namedChildren[0].text}\`, passed to \`DataLoader\`: it pins host memory for CUDA copies; a TPU host has no CUDA device to use it`,
              fix: x
                ? { title: `Pin only off XLA (\`not ${x.text}\`)`, edits: [replace(entry, `not ${x.text}`)], imports: x.imports, needsAccel: x.needsAccel }
                : { title: 'Do not pin (`False`)', edits: [replace(entry, 'False')] },
              related: [{ start: call.startIndex, end: call.endIndex, message: 'the DataLoader the dict is unpacked into' }],
            });
          }
        }
        const pinArg = pin ? argparseTrue(ctx, kwValue(pin)) : null;
        if (pin && pinArg) {
          // `pin_memory=args.pin_mem` whose argparse default is True (ConvNeXt, MAE `set_defaults(pin_mem=True)`)
          const x = ctx.idiom.dualPath ? ctx.idiom.isXla() : null;
          const value = kwValue(pin)!;
          ctx.report(pin, {
            severity: 'info',
            message: `\`pin_memory=${short(value.text)}\` is True by default (its argparse default): it pins host memory for CUDA copies; a TPU host has no CUDA device to use it`,
            fix: x
              ? { title: `Pin only off XLA (\`${short(value.text)} and not ${x.text}\`)`, edits: [replace(value, `${value.text} and not ${x.text}`)], imports: x.imports, needsAccel: x.needsAccel }
              : (() => {
                  const e = removeArg(call, pin);
                  return e ? { title: `Remove \`pin_memory=${short(value.text)}\``, edits: [e] } : null;
                })(),
            related: [{ start: pinArg.startIndex, end: pinArg.endIndex, message: 'the argparse default' }],
          });
        }
        // `pin_memory=(device != 'cpu')` (StyleTTS2): True on every accelerator, a TPU's included
        const pinCmp = pin ? kwValue(pin) : null;
        const cmp = pinCmp?.type === 'parenthesized_expression' ? pinCmp.namedChildren[0] : pinCmp;
        if (pin && pinCmp && cmp?.type === 'comparison_operator' && cmp.child(1)?.text === '!=' && cmp.namedChildren.some((c) => c?.type === 'string' && stringContent(c) === 'cpu')) {
          const x = ctx.idiom.dualPath ? ctx.idiom.isXla() : null;
          const e = x ? null : removeArg(call, pin);
          ctx.report(pin, {
            severity: 'info',
            message: `\`pin_memory=${short(pinCmp.text)}\` is True on any device but the CPU, a TPU's included: it pins host memory for CUDA copies, which a TPU host cannot use`,
            fix: x
              ? { title: `Pin only off XLA`, edits: [replace(pinCmp, `${pinCmp.type === 'parenthesized_expression' ? pinCmp.text : `(${pinCmp.text})`} and not ${x.text}`)], imports: x.imports, needsAccel: x.needsAccel }
              : e ? { title: `Remove \`pin_memory=${short(pinCmp.text)}\``, edits: [e] } : null,
          });
        }
        if (pin && kwValue(pin)?.text === 'True') {
          let fix: FixDraft | null = null;
          if (ctx.idiom.dualPath) {
            const x = ctx.idiom.isXla();
            fix = { title: `Pin only off XLA (\`pin_memory=not ${x.text}\`)`, edits: [replace(kwValue(pin)!, `not ${x.text}`)], imports: x.imports, needsAccel: x.needsAccel };
          } else {
            const e = removeArg(call, pin);
            if (e) fix = { title: 'Remove `pin_memory=True`', edits: [e] };
          }
          ctx.report(pin, { severity: 'info', message: '`pin_memory=True` pins host memory for CUDA copies; a TPU host has no CUDA device to use it', fix });
        }
        const pinDev = keywords.get('pin_memory_device');
        if (pinDev) {
          const e = ctx.idiom.dualPath ? null : removeArg(call, pinDev);
          ctx.report(pinDev, { severity: 'info', message: '`pin_memory_device=` names a CUDA pinning device; it has no effect on TPU', fix: e ? { title: 'Remove `pin_memory_device=`', edits: [e] } : null });
        }
        continue;
      }
      // loader options collected for a DataLoader made elsewhere (`data_loader_kwargs = EasyDict(pin_memory=True, ...)`,
      // `dict(pin_memory=True)` passed on): not a torch call (`torch.empty(..., pin_memory=True)` allocates, and is no option)
      const pinKw = keywords.get('pin_memory');
      const callee = ctx.sema.callee(call) ?? call.childForFieldName('function')?.text ?? '';
      if (pinKw && kwValue(pinKw)?.text === 'True' && !pinned.has(kwValue(pinKw)!.id) && !/^torch\./.test(callee) && !isWrapperCall(ctx, call)) {
        pinned.add(kwValue(pinKw)!.id);
        const x = ctx.idiom.dualPath ? ctx.idiom.isXla() : null;
        const v = kwValue(pinKw)!;
        ctx.report(pinKw, {
          severity: 'info',
          message: `\`pin_memory=True\` in \`${short(callee || 'a call')}(...)\`, loader options: it pins host memory for CUDA copies; a TPU host has no CUDA device to use it`,
          fix: x ? { title: `Pin only off XLA (\`not ${x.text}\`)`, edits: [replace(v, `not ${x.text}`)], imports: x.imports, needsAccel: x.needsAccel } : { title: 'Do not pin (`False`)', edits: [replace(v, 'False')] },
        });
      }
      const meth = methodName(call);
      const recv = receiver(call);
      if (!recv || ctx.sema.resolve(recv)) continue;
      if (meth === 'pin_memory' && !positional.length && !keywords.size) {
        // unguarded, it raises on a TPU host: PyTorch pins through the CUDA (newer: accelerator) pinned allocator (pinning.ts)
        const raises = !cudaGuarded(call) && !ctx.sema.inXlaAwareBranch(call);
        ctx.report(call, {
          severity: raises ? 'error' : 'info',
          message: raises ? (ctx.idiom.profile === 'torchtpu' ? PIN_RAISES_TORCHTPU : PIN_RAISES) : '`.pin_memory()` pins host memory for CUDA copies; a TPU host has no CUDA device to use it',
          fix: ctx.idiom.dualPath ? null : { title: 'Remove `.pin_memory()`', edits: [replace(call, recv.text)] },
        });
      } else if (meth === 'to' && !ctx.sema.xlaAware) {
        // harmless on XLA tensors: migrated scripts stay quiet
        const nb = keywords.get('non_blocking');
        if (nb && kwValue(nb)?.text === 'True') {
          const e = ctx.idiom.dualPath ? null : removeArg(call, nb);
          nonBlocking.push({ at: nb, opts: { severity: 'info', message: '`non_blocking=True` overlaps copies on a CUDA stream; on TPU let the loader prefetch instead', fix: e ? { title: 'Remove `non_blocking=True`', edits: [e] } : null } });
        }
      }
    }
    // `x = x.to(d, non_blocking=True)` on consecutive lines of one step: one finding
    reportRuns(ctx, nonBlocking, () => '`non_blocking=True` here too');
    // (c) device copies inside the data pipeline: a dataset's `__getitem__`, a loader's `collate_fn` (worker-moves.ts)
    for (const w of workerMoves(ctx)) {
      const first = w.moves[0];
      const instead = ctx.idiom.profile === 'torchtpu'
        ? 'return CPU tensors and move the whole batch once in the loop'
        : 'return CPU tensors and let `pl.MpDeviceLoader` move the whole batch (it moves only CPU tensors, so it cannot prefetch these)';
      const unit = w.kind === 'dataset' ? 'sample' : 'batch';
      ctx.report(first, {
        severity: 'warning',
        message:
          `\`${short(first.text)}\` in \`${w.where}\` moves each ${unit} to the device inside the data pipeline (in the DataLoader's worker processes when \`num_workers > 0\`): ` +
          `one small host-to-device copy per ${unit}, not overlapped with the step; ${instead} (no fix here)`,
        ...(w.moves.length > 1 ? { related: w.moves.slice(1, 4).map((m) => ({ start: m.startIndex, end: m.endIndex, message: 'another device copy in this function' })) } : {}),
      });
    }
  },
});

