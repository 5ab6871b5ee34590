import { defineRule } from '../../core/rule';
import { insertAt, replaceRange } from '../../core/edits';
import type { FixDraft, RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, kwValue, methodName, receiver } from '../../core/semantics';
import type { TensorValue } from '../../model/values';
import { isDeviceCopy } from '../shared';

/** `torch.cuda.FloatTensor(x)` (or a name bound to one of the legacy CUDA types): builds on the GPU, copying `x` there. */
const CUDA_TYPE = /^torch\.cuda\.(Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool)Tensor$/;
/** Factories that take `device=` (the legacy type constructors do not). */
const DEVICE_FACTORY = /^torch\.(rand|randn|randint|zeros|ones|empty|full|arange|eye|linspace|logspace)$/;

const short = (t: string) => (t.replace(/\s+/g, ' ').length > 44 ? t.replace(/\s+/g, ' ').slice(0, 43) + '…' : t.replace(/\s+/g, ' '));

/** A host-generated tensor value (`generated` set by the program model), else null. */
function generated(ctx: RuleContext, node: Node | null | undefined): TensorValue | null {
  if (!node) return null;
  const v = ctx.model.value(node);
  return v.kind === 'tensor' && v.where === 'host' && v.generated ? v : null;
}

/** A legacy CUDA tensor-type constructor: `torch.cuda.FloatTensor(...)`, or `Tensor(...)` where `Tensor = torch.cuda.FloatTensor if cuda else ...`. */
function cudaTypeCall(ctx: RuleContext, call: Node): boolean {
  const fn = call.childForFieldName('function');
  if (!fn) return false;
  if (CUDA_TYPE.test(ctx.sema.callee(call) ?? '')) return true;
  if (fn.type !== 'identifier') return false;
  return ctx.sema.bindings(fn.text).some((v) => ctx.sema.within('attribute', v).some((a) => CUDA_TYPE.test(ctx.sema.resolve(a) ?? a.text)) || (v.type === 'attribute' && CUDA_TYPE.test(ctx.sema.resolve(v) ?? v.text)));
}

interface Copy {
  call: Node;
  data: Node;
  value: TensorValue;
}

/** The host-to-device copy `call` makes of host-generated data, if any. */
function copyOfGenerated(ctx: RuleContext, call: Node): Copy | null {
  const meth = methodName(call);
  if ((meth === 'to' || meth === 'cuda') && isDeviceCopy(ctx, call)) {
    const r = receiver(call);
    const v = generated(ctx, r);
    return v && r ? { call, data: r, value: v } : null;
  }
  const { positional, keywords } = callArgs(call);
  const first = positional[0];
  if (!first) return null;
  // `torch.tensor(np.random.rand(b), device=d)`, `torch.as_tensor(noise, device=d)`
  if (/^torch\.(tensor|as_tensor)$/.test(ctx.sema.callee(call) ?? '') && keywords.has('device') && isDeviceCopy(ctx, call)) {
    const v = generated(ctx, first);
    return v ? { call, data: first, value: v } : null;
  }
  // `Tensor(np.random.normal(0, 1, (b, d)))` with a CUDA tensor type (sizes alone allocate there: no copy)
  if (cudaTypeCall(ctx, call)) {
    const v = generated(ctx, first);
    return v ? { call, data: first, value: v } : null;
  }
  return null;
}

/**
 * `torch.randn(b, d).to(device)` → `torch.randn(b, d, device=device)`: only a direct factory call with no `device=`
 * of its own, moved by a `.to(<device>)` given the device alone.
 */
function deviceFactoryFix(ctx: RuleContext, c: Copy): FixDraft | null {
  if (methodName(c.call) !== 'to' || c.data.type !== 'call' || c.data.id !== receiver(c.call)?.id) return null;
  if (!DEVICE_FACTORY.test(ctx.sema.callee(c.data) ?? '')) return null;
  const own = callArgs(c.data);
  if (own.keywords.has('device') || own.keywords.has('out') || own.keywords.has('generator')) return null;
  const { positional, keywords } = callArgs(c.call);
  const dev = kwValue(keywords.get('device')) ?? positional[0];
  if (!dev || positional.length + keywords.size !== 1) return null;
  // `.to(other)` also takes another tensor's dtype (and `device=` takes no tensor): only a device, a device string or a
  // name of the `device` convention (`x.device`, `self.device`)
  const dv = ctx.model.value(dev);
  if (!(dv.kind === 'device' || dv.kind === 'string' || dv.kind === 'number' || ((dev.type === 'identifier' || dev.type === 'attribute') && /(^|\.|_)device$/.test(dev.text)))) return null;
  const args = c.data.childForFieldName('arguments');
  if (!args || !args.namedChildren.length) return null;
  const last = args.namedChildren[args.namedChildren.length - 1]!;
  const edits = [insertAt(last.endIndex, `, device=${dev.text}`), replaceRange(c.data.endIndex, c.call.endIndex, '')];
  // the torch RNG on CUDA draws other numbers than the CPU generator: same distribution, other values
  const random = c.value.generated === 'random';
  return { title: `Create it on the device: \`${short(`${c.data.text.slice(0, -1)}, device=${dev.text})`)}\``, edits, applicability: random ? 'unsafe' : 'safe' };
}

/** The torch factory that makes on the device what `origin` makes on the host (`np.random.normal` → `torch.randn`). */
function deviceEquivalent(ctx: RuleContext, origin: Node | null): string {
  const q = origin ? ctx.sema.callee(rngCall(ctx, origin)) ?? '' : '';
  if (/^torch\.\w+$/.test(q) && DEVICE_FACTORY.test(q)) return q;
  if (/^numpy\.random\.(normal|randn|standard_normal)$/.test(q)) return 'torch.randn';
  if (/^numpy\.random\.(random|rand|random_sample|uniform)$/.test(q)) return 'torch.rand';
  if (/^numpy\.random\.randint$/.test(q)) return 'torch.randint';
  return /random/.test(q) ? 'torch.randn' : 'torch.empty';
}

/** The call that draws or builds the data: `origin` itself, or the NumPy/torch generator inside a wrap (`torch.from_numpy(np.random.normal(...))`). */
function rngCall(ctx: RuleContext, origin: Node): Node {
  if (origin.type !== 'call' || /^(numpy\.random\.|torch\.)\w+$/.test(ctx.sema.callee(origin) ?? '') && !/^torch\.(from_numpy|as_tensor|tensor|Tensor|\w+Tensor)$/.test(ctx.sema.callee(origin) ?? '')) return origin;
  return ctx.sema.within('call', origin).find((c) => /^numpy\.random\.\w+$/.test(ctx.sema.callee(c) ?? '') || DEVICE_FACTORY.test(ctx.sema.callee(c) ?? '')) ?? origin;
}

export default defineRule({
  id: 'TPU405',
  name: 'host-generated-step-data',
  title: 'Random or constant tensors made on the host and copied to the device every training step',
  severity: 'warning',
  step: 4,
  effort: 1,
  message: 'A tensor generated on the host is copied to the device every training step: create it on the device instead',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Create the tensor on the device (`device=`)' },
  deviceWork: true,
  triggers: ['random', 'rand', 'ones', 'zeros', 'full', 'Tensor'],
  docs: {
    what:
      'Checks for host-generated tensors copied to the device inside a training loop (or a helper it calls, not under a throttle): data drawn from a host RNG (`np.random.normal(...)`, `np.random.randint(...)`, `torch.rand/randn/randint(...)` without `device=`) ' +
      'or built by a constant factory from sizes alone (`torch.ones(x.size())`, `torch.full((b, 1), 0.9)`, `torch.FloatTensor(b, 1)`), also through a wrap (`torch.from_numpy`, `torch.FloatTensor(...)`, `Variable(...)`), ' +
      'when it reaches the device through `.to(device)`/`.cuda()`, `torch.tensor(x, device=d)`, or a legacy CUDA tensor type (`Tensor(np.random.normal(0, 1, (b, d)))` with `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`). ' +
      'The program model marks such a tensor `generated` (src/model/values.ts); data from a loader, tensors copied once before the loop, eval loops and throttled code are not flagged. ' +
      'Host data that only exists on the host (an environment\'s `done` flags turned into `torch.FloatTensor(masks)`) is not reported: building it with `device=` still copies it.',
    why:
      'On XLA the random ops run on the device: `normal_` and `uniform_` lower to `tensor_methods::normal_`/`uniform_` seeded from the device\'s RNG state (`XLAGraphExecutor::Get()->GetRngSeed(device)`, torch_xla/csrc/aten_xla_type.cpp and tensor_methods.cpp at v2.9.0), and a constant factory with `device=` becomes part of the graph. ' +
      'Made on the host, the same tensor costs host RNG work (NumPy draws float64) and a host-to-device transfer on every step, outside `MpDeviceLoader`\'s prefetching (it moves only loader batches). ' +
      'An explicit `generator=` makes XLA fall back to the CPU (the `generator.has_value()` branch of `normal_`/`uniform_`), so such calls are not rewritten.',
    example: 'for x, _ in loader:\n    z = torch.from_numpy(np.random.normal(0, 1, (x.size(0), 100))).float().to(device)\n    fake = G(z)',
    useInstead: 'for x, _ in loader:\n    z = torch.randn(x.size(0), 100, device=device)\n    fake = G(z)',
    fixSafety:
      'Offered for a direct torch factory moved by `.to(<device>)` alone (`torch.randn(b, d).to(device)` → `torch.randn(b, d, device=device)`). Safe for the constant factories (zeros, ones, full, empty, arange, eye, linspace: the same values on every backend). ' +
      'Unsafe for `torch.rand/randn/randint`: on CPU the result is identical, on CUDA or XLA the device generator draws other numbers of the same distribution, so a seeded run does not reproduce. ' +
      'NumPy data gets no fix: its stream and its float64 draws have no exact device equivalent.',
    sources: [
      'torch_xla/csrc/aten_xla_type.cpp at v2.9.0 `XLANativeFunctions::normal_`, `uniform_` (lowered on the device; CPU fallback with an explicit generator)',
      'torch_xla/csrc/tensor_methods.cpp at v2.9.0 (`GetRngSeed(input->GetDevice())` seeds the random ops)',
      'torch_xla/core/xla_model.py at v2.9.0 `send_cpu_data_to_device` (a loader\'s CPU tensors are what `MpDeviceLoader` moves)',
    ],
    torchtpu: 'The same advice: create the tensor with `device=` on the `tpu` device.',
  },
  check(ctx) {
    const seen = new Set<number>();
    for (const call of ctx.sema.nodes('call')) {
      const c = copyOfGenerated(ctx, call);
      if (!c) continue;
      const hot = ctx.sema.hot(call);
      if (!hot || hot.kind !== 'train' || hot.throttled) continue;
      // `x_, z_ = x_.cuda(), z_.cuda()` then `Variable(Tensor(...))`: one finding per generation site
      const origin = c.value.origin;
      const key = origin && origin.startIndex < call.startIndex ? origin.id : call.id;
      if (seen.has(key)) continue;
      seen.add(key);
      const what = c.value.generated === 'random' ? 'drawn from a host RNG' : 'built on the host from sizes alone';
      const numpy = c.value.generated === 'random' && !!origin && /^numpy\./.test(ctx.sema.callee(rngCall(ctx, origin)) ?? '');
      const instead = `\`${deviceEquivalent(ctx, origin)}(..., device=...)\``;
      const fix = deviceFactoryFix(ctx, c);
      const inside = !!origin && call.startIndex <= origin.startIndex && origin.endIndex <= call.endIndex;
      const related = origin && !inside ? [{ start: origin.startIndex, end: origin.endIndex, message: 'generated on the host here' }] : undefined;
      ctx.report(call, {
        message:
          `\`${short(c.data.text)}\` is ${what} and copied to the device every training step: a host-to-device transfer per step that ${instead} avoids` +
          (numpy ? ' (no fix: NumPy\'s stream has no device equivalent)' : fix ? '' : ' (no fix here)'),
        fix,
        related,
      });
    }
  },
});
