import { defineRule } from '../../core/rule';
import { replace } from '../../core/edits';
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import type { Snippet } from '../../core/idioms';
import { callArgs, conditionOf, kwValue } from '../../core/semantics';
import { appendArg, isTorchDataLoaderCall as isDataLoaderCall, iteratedLoader, loaderFactory } from './util';

const HF_ARGS = /(^|\.)(TrainingArguments|Seq2SeqTrainingArguments|SFTConfig)$/;
const EVAL_NAME = /val|eval|test|pred|infer/i;
// validation, not test/eval-only loaders: `val_loader`, `data_loader_val`, `_val_dataloader`, `valid_loader` (not `eval`)
const VAL_NAME = /(^|[^e])val/i;

/** The name a DataLoader call is assigned to, or the method it is returned from. */
function ownerName(ctx: RuleContext, call: Node): string {
  const p = call.parent;
  if (p?.type === 'assignment' && p.childForFieldName('right')?.id === call.id) return p.childForFieldName('left')?.text ?? '';
  if (p?.type === 'return_statement') return ctx.sema.enclosingFunction(call)?.childForFieldName('name')?.text ?? '';
  return '';
}

const SAMPLERS = /(^|\.)(RandomSampler|WeightedRandomSampler)$/;
const INFINITE_SAMPLER = /(^|\.)\w*(Infinite|Repeat|Endless)\w*Sampler$/;

/**
 * A sampler that never ends an epoch, so no short last batch comes: an infinite/repeating sampler class, or a
 * `RandomSampler`/`WeightedRandomSampler` drawing an iteration count of samples (`num_samples=int(1e10)`,
 * `num_samples=max_iters * batch_size`; minGPT's trainer).
 */
function endlessSampler(ctx: RuleContext, node: Node | null, depth = 0): boolean {
  if (!node || depth > 2) return false;
  if (node.type === 'identifier') return ctx.sema.bindings(node.text).some((v) => endlessSampler(ctx, v, depth + 1));
  if (node.type !== 'call') return false;
  const q = ctx.sema.callee(node) ?? node.childForFieldName('function')?.text ?? '';
  if (INFINITE_SAMPLER.test(q)) return true;
  if (!SAMPLERS.test(q)) return false;
  const { positional, keywords } = callArgs(node);
  const n = kwValue(keywords.get('num_samples')) ?? (/WeightedRandomSampler$/.test(q) ? positional[1] : positional[2]);
  if (!n) return false;
  const text = n.text.replace(/\s+/g, '');
  // a huge literal (int(1e10), 10**9, 1_000_000_000) or a product of a step count and the batch size
  const big = /^(int\()?(\d+(\.\d+)?e\d+|\d+\*\*\d+|[\d_]{7,})\)?$/i.test(text) && !/^0/.test(text);
  const product = /\*/.test(text) && /batch|bs\b/i.test(text) && /iter|step|epoch/i.test(text);
  return big || product;
}

/**
 * Dual-path: an expression true only on the TPU backend (`accel.is_xla()`; the torchtpu profile's `accel.device_type() == "tpu"`),
 * so CPU and CUDA keep their last batch. Null in tpu-only style (the fix writes `True`).
 */
function onTpuOnly(ctx: RuleContext): Snippet | null {
  if (!ctx.idiom.dualPath) return null;
  if (ctx.idiom.profile !== 'torchtpu') return ctx.idiom.isXla();
  const t = ctx.idiom.deviceType();
  return { ...t, text: `${t.text} == "tpu"` };
}

const short = (t: string) => (t.length > 30 ? t.slice(0, 29) + '…' : t);

/**
 * A validation loader made by another module's factory (`val_loader = build_loader(val_set, 64)`), where that
 * factory's DataLoader keeps its last batch and is not itself a training or eval loader there (the factory module
 * reports those): the factory's DataLoader, its path, line and name. Project scope only.
 */
function validationFromFactory(ctx: RuleContext, call: Node): { node: Node; path: string; line: number; name: string } | null {
  if (!ctx.project || ctx.sema.xlaAware) return null;
  const last = ownerName(ctx, call).split('.').pop() ?? '';
  if (!VAL_NAME.test(last) || !EVAL_NAME.test(last)) return null;
  const f = loaderFactory(ctx, call);
  if (!f) return null;
  const { keywords } = callArgs(f.node);
  const opt = (k: string) => kwValue(keywords.get(k))?.text;
  if (keywords.has('batch_sampler') || keywords.has('sampler') || f.node.childForFieldName('arguments')?.namedChildren.some((a) => a?.type === 'dictionary_splat')) return null;
  if (opt('batch_size') === '1' || opt('batch_size') === 'None') return null;
  if (keywords.has('drop_last') && opt('drop_last') !== 'False') return null;
  // a shuffling loader is a training loader of the factory module, which reports it (naming this caller)
  if (keywords.has('shuffle') && opt('shuffle') !== 'False') return null;
  // a DataLoader the factory module itself names for eval (`val = DataLoader(...)`, `def build_val_loader`) is reported there
  const p = f.node.parent;
  const there = p?.type === 'assignment' ? p.childForFieldName('left')?.text ?? '' : f.name;
  if (EVAL_NAME.test(there.split('.').pop() ?? '') || /train/i.test(there)) return null;
  return { node: f.node, path: f.path, line: f.node.startPosition.row + 1, name: f.name };
}


/**
 * The same-file call sites of the function that builds `call` (`def make_loader(ds): return DataLoader(ds, ...)` called as
 * `make_loader(...)` or `self.make_loader(...)`), empty when the loader is not built in a function. `train_dataloader()`
 * style hooks have no caller here and stay editable.
 */
function factoryCallers(ctx: RuleContext, call: Node): Node[] {
  const fn = ctx.sema.enclosingFunction(call);
  const name = fn?.childForFieldName('name')?.text;
  if (!fn || !name) return [];
  // `name(...)` or `….name(...)`: the file's calls by that name (Semantics.callsNamed), not a scan of every call per loader
  return [...ctx.sema.callsNamed(name)];
}

/** Whether a training loop (not eval) iterates the loader bound to `name`. */
function iteratedByTrainLoop(ctx: RuleContext, name: string): boolean {
  return ctx.sema.hotLoops().some((h) => h.kind === 'train' && h.anchor.type === 'for_statement' && iteratedLoader(ctx, h.anchor)?.text === name);
}

/**
 * The dataset is an instance of a class of this file (`ds = PretokDataset(...)`, or built inline) that derives from
 * an `IterableDataset` and whose `__iter__` body is, at its top level, a `while True:` loop: an endless stream.
 */
function endlessIterable(ctx: RuleContext, ds: Node | null | undefined): boolean {
  let v: Node | null | undefined = ds;
  if (v?.type === 'identifier') {
    const bound = ctx.sema.bindings(v.text);
    v = bound.length === 1 ? bound[0] : null;
  }
  if (v?.type !== 'call') return false;
  const fn = v.childForFieldName('function');
  if (fn?.type !== 'identifier') return false;
  const cls = ctx.model.classesNamed(fn.text)[0];
  const bases = cls?.childForFieldName('superclasses')?.text ?? '';
  if (!cls || !/IterableDataset\b/.test(bases)) return false;
  for (const st of cls.childForFieldName('body')?.namedChildren ?? []) {
    const d = st?.type === 'decorated_definition' ? st.childForFieldName('definition') : st;
    if (d?.type !== 'function_definition' || d.childForFieldName('name')?.text !== '__iter__') continue;
    return (d.childForFieldName('body')?.namedChildren ?? []).some((c) => c?.type === 'while_statement' && /^True$/.test(conditionOf(c)?.text ?? '') && !/\b(break|return)\b/.test(c.childForFieldName('body')?.text ?? ''));
  }
  return false;
}

/**
 * A `shuffle=` decided at run time that is on unless the caller turns it off: `not opt.serial_batches`, `args.shuffle`,
 * a parameter defaulting to True; not a name of the eval side (`shuffle=is_test`), not a parameter without a True default
 * (`def make_loader(ds, shuffle)`: the callers decide, and an eval caller passes False).
 */
function shufflesAtRunTime(ctx: RuleContext, call: Node, v: Node | null | undefined): Node | null {
  if (!v || /^(True|False|None|0|1)$/.test(v.text) || EVAL_NAME.test(v.text)) return null;
  if (v.type !== 'identifier' && v.type !== 'attribute' && v.type !== 'not_operator') return null;
  const inner = v.type === 'not_operator' ? v.childForFieldName('argument') : v;
  if (inner?.type !== 'identifier' && inner?.type !== 'attribute') return null;
  if (v.type === 'identifier') {
    const fn = ctx.sema.enclosingFunction(call);
    const param = fn?.childForFieldName('parameters')?.namedChildren.find((p) => p?.childForFieldName('name')?.text === v.text || p?.text === v.text);
    if (param) return param.type === 'default_parameter' && param.childForFieldName('value')?.text === 'True' ? v : null;
  }
  // what the option holds when the run does not set it (an argparse default, a module constant): off means no shuffle
  const off = v.type === 'not_operator' ? 'True' : 'False';
  const known = inner.type === 'attribute' ? ctx.model.attributeSources(inner).map((s) => s.value) : ctx.sema.bindings(inner.text);
  if (known.length && known.every((k) => k.text === off)) return null;
  return v;
}

/**
 * `**kwargs` whose every binding is a dict literal of loader options that sets neither `drop_last` nor `batch_sampler`
 * (`kwargs = {'num_workers': 1, 'pin_memory': True}`): the call's own keywords decide its last batch.
 */
function knownOptions(ctx: RuleContext, splat: Node): boolean {
  const name = splat.namedChildren[0];
  if (name?.type !== 'identifier') return false;
  const values = ctx.sema.bindings(name.text);
  return values.length > 0 && values.every((v) => v.type === 'dictionary' && v.namedChildren.every((p) => {
    if (p?.type !== 'pair') return p?.type === 'comment';
    const key = p.childForFieldName('key');
    return key?.type === 'string' && !/^['"](drop_last|batch_sampler|batch_size)['"]$/.test(key.text);
  }));
}

export default defineRule({
  id: 'TPU403',
  name: 'ragged-last-batch',
  title: 'Ragged final batch (`drop_last=False`)',
  severity: 'warning',
  step: 4,
  effort: 1,
  message: 'The smaller last batch compiles a second graph: set `drop_last=True`',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Set `drop_last=True` (dual-path: `drop_last=accel.is_xla()`)' },
  // 'loader': a validation loader made by another module's factory (`val_loader = build_loader(...)`) names no DataLoader here
  deviceWork: true,
  triggers: ['DataLoader', 'dataloader_drop_last', 'loader'],
  docs: {
    what:
      'Checks for training `DataLoader`s without `drop_last=True` (assigned to a `train…` name, shuffling, given a sampler, returned from `train_dataloader()`, or iterated by a training loop; a loader that shuffles unless the run turns it off, `shuffle=not opt.serial_batches`, `shuffle=args.shuffle` or a factory parameter defaulting to True, is a training loader too, with an unsafe fix since which run turns it off is unknown; ' +
      'loaders named `eval`/`test`, `batch_sampler` loaders and loaders whose sampler never ends an epoch, such as `RandomSampler(ds, replacement=True, num_samples=int(1e10))` or an `InfiniteSampler`, and loaders over an `IterableDataset` of the file whose `__iter__` is an endless `while True:` stream, are left alone), and for HF `dataloader_drop_last=False`. ' +
      'Options unpacked from a dict literal that sets neither `drop_last` nor `batch_sampler` (`**kwargs` of `kwargs = {\'num_workers\': 1, \'pin_memory\': True}`) do not hide the loader (the fix adds `drop_last=` before the `**`); other `**` options do. A `drop_last=` set from a variable (`drop_last=flags.drop_last`) is not flagged. A validation loader (`val_loader`, `data_loader_val`, `_val_dataloader()`) that keeps its last batch is reported as info, without a fix; with project scope also one made by another module\'s factory (`val_loader = build_loader(val_set, 64)` whose DataLoader sets neither `drop_last`, `shuffle` nor a sampler), reported at the call with the factory\'s DataLoader related.',
    why:
      'Unless the dataset size divides the batch size, the last batch of every epoch has a different shape, so the forward and backward graphs are compiled a second time ' +
      '("XLA recompiles when input shape changes", RECOMP). The torch_xla examples use fixed-size batches and the tests expose `--drop_last` (T:test_train_mp_mnist.py). ' +
      'Under SPMD the batch dimension must also stay divisible by the mesh axis (error mode unverified).',
    example: 'train_loader = DataLoader(ds, batch_size=64, shuffle=True)',
    useInstead: 'train_loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True)',
    fixSafety:
      'Safe for training loaders: at most `batch_size - 1` samples per epoch are skipped (a different subset each epoch when shuffling). ' +
      'In dual-path style the fix writes `drop_last=accel.is_xla()`, so CPU and CUDA runs keep every batch. ' +
      'Unsafe inside a factory function called from several places; no fix when the factory also builds an eval/test loader. ' +
      'Eval loaders get no fix: dropping samples there changes metrics; pad the last batch and mask it instead.',
    sources: ['RECOMP (docs/source/perf/recompilation.md, "XLA recompiles when input shape changes")', 'T:test/test_train_mp_mnist.py (--drop_last flag, DataLoader(drop_last=flags.drop_last))'],
    torchtpu: 'Same: the tpu device compiles per shape (`torch.compile(backend="tpu", dynamic=False)`).',
  },
  check(ctx) {
    for (const call of ctx.sema.nodes('call')) {
      const q = ctx.sema.callee(call) ?? '';
      const { keywords } = callArgs(call);
      if (HF_ARGS.test(q)) {
        const v = kwValue(keywords.get('dataloader_drop_last'));
        if (v?.text === 'False') {
          // dual-path keeps CPU and CUDA batches as they were
          const x = onTpuOnly(ctx);
          const value = x ? x.text : 'True';
          ctx.report(v, {
            message: '`dataloader_drop_last=False` keeps a smaller last batch, which compiles a second graph',
            fix: { title: `Set \`dataloader_drop_last=${value}\``, edits: [replace(v, value)], imports: x?.imports, needsAccel: x?.needsAccel },
          });
        }
        continue;
      }
      if (!isDataLoaderCall(ctx, call)) {
        const v = validationFromFactory(ctx, call);
        if (v) {
          const file = v.path.split('/').pop() ?? v.path;
          ctx.report(call, {
            severity: 'info',
            message: `\`${short(ownerName(ctx, call))}\` is a validation DataLoader made by \`${v.name}\` (${file}:${v.line}) that keeps a smaller last batch: its shape compiles one more eval graph; to avoid it pad the last batch to the batch size and mask the padding (dropping samples would change the metric)`,
            related: [{ start: v.node.startIndex, end: v.node.endIndex, path: v.path, message: 'the DataLoader, without `drop_last`' }],
          });
        }
        continue;
      }
      // `**kwargs` may already carry drop_last
      if (endlessSampler(ctx, kwValue(keywords.get('sampler')))) continue;
      // an IterableDataset of this file whose `__iter__` never ends (`while True:` around its `yield`s, llama2.c's
      // PretokDataset): the loader never reaches a last batch
      if (endlessIterable(ctx, callArgs(call).positional[0] ?? kwValue(keywords.get('dataset')))) continue;
      if (keywords.has('batch_sampler') || call.childForFieldName('arguments')?.namedChildren.some((a) => a?.type === 'dictionary_splat' && !knownOptions(ctx, a))) continue;
      const bs = kwValue(keywords.get('batch_size'));
      if (bs && (bs.text === '1' || bs.text === 'None')) continue;
      // `DataLoader(datasets.MNIST(root, train=True), batch_size=100)`: 60000 = 600 batches of 100, no smaller last one
      if (bs && evenBatches(ctx, callArgs(call).positional[0] ?? kwValue(keywords.get('dataset')), bs)) continue;
      const dl = kwValue(keywords.get('drop_last'));
      if (dl && dl.text !== 'False') continue;
      const owner = ownerName(ctx, call);
      const last = owner.split('.').pop() ?? '';
      if (EVAL_NAME.test(last)) {
        // a validation loader (run every epoch, `data_loader_val`, `_val_dataloader()`): its ragged last batch compiles
        // one more eval graph; advice only, no fix (dropping samples changes the metric: pad and mask instead)
        if (VAL_NAME.test(last) && !ctx.sema.xlaAware) {
          ctx.report(dl ?? call, {
            severity: 'info',
            message: `${dl ? '`drop_last=False` on this validation DataLoader' : 'This validation DataLoader'} keeps a smaller last batch: its shape compiles one more eval graph; to avoid it pad the last batch to the batch size and mask the padding (dropping samples would change the metric)`,
          });
        }
        continue;
      }
      const shuffled = /train/i.test(last) || kwValue(keywords.get('shuffle'))?.text === 'True' || keywords.has('sampler') || (!!owner && iteratedByTrainLoop(ctx, owner));
      // `shuffle=not opt.serial_batches` (a loader class's `initialize(opt)`, pix2pixHD's CustomDatasetDataLoader): it
      // shuffles unless an option says otherwise, as training loaders do; which run turns it off is unknown, so the fix is unsafe
      const runtimeShuffle = shuffled ? null : shufflesAtRunTime(ctx, call, kwValue(keywords.get('shuffle')));
      if (!shuffled && !runtimeShuffle) continue;
      // a factory that builds the loaders of several call sites (train and test): dropping there is not safe, and never
      // for an eval/test loader it also builds (issue 10: 10% of a test set dropped)
      const factory = factoryCallers(ctx, call);
      const evalCaller = factory.find((c) => EVAL_NAME.test(ownerName(ctx, c).split('.').pop() ?? ''));
      // dual-path keeps CPU and CUDA batches as they were: drop only on XLA
      const x = onTpuOnly(ctx);
      const value = x ? x.text : 'True';
      const edit = evalCaller ? null : dl ? replace(dl, value) : appendArg(call, `drop_last=${value}`, ctx.text);
      const shared = evalCaller
        ? ` (this factory also builds \`${short(ownerName(ctx, evalCaller))}\`, an eval loader that must keep every sample: no fix)`
        : factory.length > 1 ? ` (this factory is called from ${factory.length} places)` : '';
      const when = runtimeShuffle ? ` (it shuffles by default, \`shuffle=${short(runtimeShuffle.text)}\`: a training loader)` : '';
      ctx.report(dl ?? call, {
        message: `${dl ? '`drop_last=False`' : 'This training DataLoader'}${when} keeps a smaller last batch: its new shape compiles a second graph every epoch${shared}`,
        fix: edit
          ? { title: `Set \`drop_last=${value}\``, edits: [edit], applicability: factory.length > 1 || runtimeShuffle ? 'unsafe' : undefined, imports: x?.imports, needsAccel: x?.needsAccel }
          : null,
      });
    }
  },
});

/**
 * Sizes of the torchvision datasets whose split sizes are fixed, as [train, test]: CIFAR-10/100 50000/10000
 * (pytorch/vision@00ce2d0 torchvision/datasets/cifar.py `__len__`: `50000` if `self.train` else `10000`, CIFAR100
 * inherits it); MNIST, Fashion-MNIST and KMNIST read `train-images-idx3-ubyte` / `t10k-images-idx3-ubyte`
 * (torchvision/datasets/mnist.py `_load_data`), 60000 and 10000 images each (the datasets' own pages).
 */
const SPLIT_SIZES: Record<string, [number, number]> = {
  CIFAR10: [50000, 10000],
  CIFAR100: [50000, 10000],
  MNIST: [60000, 10000],
  FashionMNIST: [60000, 10000],
  KMNIST: [60000, 10000],
};

/** The loader's dataset is a torchvision dataset of known size (`train=` a literal or absent) that the batch size divides. */
function evenBatches(ctx: RuleContext, ds: Node | null | undefined, bs: Node): boolean {
  if (!ds) return false;
  const size = ctx.model.value(bs);
  const b = size.kind === 'number' ? size.value : undefined;
  if (!b || !Number.isInteger(b) || b <= 0) return false;
  let made: Node | null = ds;
  if (ds.type === 'identifier') {
    const exprs = ctx.model.bindingExpressions(ds);
    made = exprs.length === 1 ? exprs[0] : null;
  }
  if (made?.type !== 'call') return false;
  const m = /^torchvision\.datasets\.(?:\w+\.)?(\w+)$/.exec(ctx.sema.callee(made) ?? '');
  const sizes = m ? SPLIT_SIZES[m[1]] : undefined;
  if (!sizes) return false;
  const { positional, keywords } = callArgs(made);
  const train = kwValue(keywords.get('train')) ?? positional[1] ?? null;
  if (train && train.type !== 'true' && train.type !== 'false') return false;
  const n = !train || train.type === 'true' ? sizes[0] : sizes[1];
  return n % b === 0;
}
