import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, kwValue, methodName, stringContent } from '../../core/semantics';
import { cudaGuarded } from './cuda-util';

/** `torch.cuda.FloatTensor`, `torch.cuda.LongTensor`, …: the legacy CUDA tensor types. */
const CUDA_TYPE = /^torch\.cuda\.(Float|Double|Half|BFloat16|Byte|Char|Short|Int|Long|Bool)Tensor$/;

export default defineRule({
  id: 'TPU112',
  name: 'cuda-default-tensor-type',
  title: 'CUDA default tensor type, default device, or legacy `torch.cuda.*Tensor` types',
  severity: 'error',
  step: 3,
  effort: 3,
  message: 'A legacy `torch.cuda.*Tensor` type needs CUDA; a TPU host has none',
  fix: { availability: 'none' },
  triggers: ['torch.cuda.', 'cuda.', 'set_default_device', 'set_default_tensor_type'],
  docs: {
    what:
      'Checks for `torch.set_default_tensor_type(torch.cuda.FloatTensor)` (or the `"torch.cuda.FloatTensor"` string), `torch.set_default_device("cuda")` ' +
      'and `with torch.device("cuda"):` (a CUDA device expression, including tainted names), legacy CUDA tensor constructors such as `torch.cuda.FloatTensor(n)` / ' +
      '`torch.cuda.LongTensor(data)`, `.type(torch.cuda.FloatTensor)`, and other unguarded uses of the `torch.cuda.*Tensor` types (`Tensor = torch.cuda.FloatTensor`). ' +
      'Uses under a CUDA-only guard (`if torch.cuda.is_available():`) or in a branch with an XLA arm are not flagged, nor are `isinstance` checks (they return False without CUDA). ' +
      'A type chosen by a CUDA flag with a CPU type in the other arm (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`, common in GAN training scripts) is a warning: it never raises, ' +
      'but on a TPU host it picks the CPU type, so the tensors built through it (`Tensor(np.random.normal(...))`) stay on the CPU while the model moves to the XLA device.',
    why:
      'The `torch.cuda.*Tensor` types exist only in a CUDA build with a GPU: on CPU torch `torch.set_default_tensor_type(torch.cuda.FloatTensor)` and ' +
      '`torch.cuda.FloatTensor(3)` raise `TypeError: type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled`, and ' +
      '`t.type(torch.cuda.FloatTensor)` fails to initialise CUDA (run here on CPU torch 1.13). `torch.set_default_device("cuda")` and `with torch.device("cuda"):` ' +
      'send every later factory call (`torch.zeros`, module parameters) to CUDA, which a TPU host does not have. torch_xla has no XLA tensor types; its documented placement is ' +
      'explicit: `torch_xla.device()` / `torch.device("xla")` passed to `.to()` and `device=` (MIG:41-55, DEV:81-84). Neither its docs nor its tests set a default XLA device ' +
      'with `torch.set_default_device`, so that is not offered.',
    example: 'torch.set_default_tensor_type(torch.cuda.FloatTensor)\nidx = torch.cuda.LongTensor(indices)',
    useInstead:
      'import torch_xla\n\ndevice = torch_xla.device()\ntorch.set_default_dtype(torch.float32)          # the dtype part of the old default type\nidx = torch.tensor(indices, dtype=torch.long, device=device)',
    fixSafety:
      'No fix: the default tensor type also sets the default dtype and device of every later allocation, and a legacy constructor takes either a size or data, so ' +
      'the replacement (`torch.set_default_dtype` plus explicit `device=`/`.to(device)` at each allocation) has to be written by hand.',
    sources: [
      'MIG docs/source/learn/migration-to-xla-on-tpus.md:41-55 (the XLA device is `torch.device("xla")` / `torch_xla.device()`, passed explicitly)',
      'DEV docs/source/learn/pytorch-on-xla-devices.md:81-84',
      'TX:19 torch_xla/torch_xla.py `device(index=None)`',
      'pytorch/xla@41398bf: `set_default_device` appears only as the internal `torch_xla._XLAC._xla_set_default_device` (torch_xla/torch_xla.py:36,48), not as a documented user API',
      'PyTorch CPU build (1.13, run here): `torch.set_default_tensor_type(torch.cuda.FloatTensor)` / `torch.cuda.FloatTensor(3)` → TypeError "type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled"',
    ],
    torchtpu: 'The replacement is explicit placement on `torch.device("tpu")`; whether `torch.set_default_device("tpu")` works is not documented.',
  },
  check(ctx) {
    const sema = ctx.sema;
    const skip = (n: Node) => cudaGuarded(n) || sema.inXlaAwareBranch(n);
    const reported = new Set<number>();
    const cudaType = (n: Node | null | undefined): boolean =>
      !!n && ((n.type === 'attribute' && CUDA_TYPE.test(sema.resolve(n) ?? '')) || (n.type === 'string' && /^torch\.cuda\.\w+Tensor$/.test(stringContent(n) ?? '')));
    const report = (at: Node, message: string, covered: Node | null) => {
      if (covered) reported.add(covered.id);
      if (!skip(at)) ctx.report(at, { message });
    };
    for (const call of sema.nodes('call')) {
      const callee = sema.callee(call) ?? '';
      const { positional, keywords } = callArgs(call);
      const first = positional[0] ?? null;
      if (callee === 'torch.set_default_tensor_type' && cudaType(first)) {
        report(call, `\`torch.set_default_tensor_type(${first!.text})\` needs CUDA and raises on a TPU host; set the dtype with \`torch.set_default_dtype\` and place tensors on the XLA device explicitly`, first);
      } else if (callee === 'torch.set_default_device' && ctx.model.namesCuda(first ?? kwValue(keywords.get('device')))) {
        report(call, '`torch.set_default_device` with a CUDA device sends every later allocation to CUDA, and a TPU host has no CUDA device: place tensors on the XLA device explicitly (`.to(device)`, `device=`)', null);
      } else if (CUDA_TYPE.test(callee)) {
        const t = callee.replace(/^torch\.cuda\./, '');
        report(call, `\`torch.cuda.${t}(...)\` allocates on CUDA and raises on a TPU host; use \`torch.tensor(data, dtype=..., device=device)\` or \`torch.empty(size, dtype=..., device=device)\``, call.childForFieldName('function'));
      } else if (methodName(call) === 'type' && cudaType(first)) {
        report(call, `\`.type(${first!.text})\` moves the tensor to CUDA and raises on a TPU host; use \`.to(device, dtype=...)\``, first);
      }
    }
    // `with torch.device("cuda"):` sets the default device for the block
    for (const w of sema.nodes('with_statement')) {
      // the statement's own items (grandchildren, through its with_clause), not a nested with's: a scan of every with's
      // whole body was quadratic in nested withs
      for (const item of w.children.flatMap((c) => (c ? c.children : [])).filter((n): n is Node => n?.type === 'with_item')) {
        const v = item.childForFieldName('value');
        if (v?.type === 'call' && sema.callee(v) === 'torch.device' && ctx.model.namesCuda(v)) {
          report(v, '`with torch.device("cuda"):` allocates everything in the block on CUDA, and a TPU host has no CUDA device: place tensors on the XLA device explicitly', null);
        }
      }
    }
    // other uses of the types: `Tensor = torch.cuda.FloatTensor`, `dtype=torch.cuda.FloatTensor`
    for (const a of sema.nodes('attribute')) {
      if (reported.has(a.id) || !CUDA_TYPE.test(sema.resolve(a) ?? '')) continue;
      if (a.parent?.type === 'attribute' && a.parent.childForFieldName('object')?.id === a.id) continue;
      const call = a.parent?.type === 'argument_list' ? a.parent.parent : null;
      if (call && /^(isinstance|issubclass)$/.test(call.childForFieldName('function')?.text ?? '')) continue;
      if (a.parent?.type === 'tuple' && a.parent.parent?.type === 'argument_list' && /^(isinstance|issubclass)$/.test(a.parent.parent.parent?.childForFieldName('function')?.text ?? '')) continue;
      // a type object compared or looked up (`torch.cuda.HalfTensor in buckets`, `tp == torch.cuda.FloatTensor`,
      // `buckets[torch.cuda.HalfTensor]`) creates nothing: on a TPU host the test is just False
      if (typeComparison(a)) continue;
      const cpuArm = cpuTypeAlternative(a);
      if (cpuArm && !sema.inXlaAwareBranch(a)) {
        // `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`: guarded, so it never raises, but on a TPU
        // host the guard picks the CPU type and every tensor built through it stays on the CPU
        ctx.report(a.parent!, {
          severity: 'warning',
          message:
            `On a TPU host this picks \`${cpuArm.text}\`, a CPU tensor type: tensors built through it stay on the CPU while the model moves to the ${ctx.idiom.profile === 'torchtpu' ? 'TPU' : 'XLA'} device ` +
            '(mixing them raises, or copies each one to the device); build them with `torch.tensor(data, dtype=..., device=device)` or `torch.empty(size, dtype=..., device=device)`',
        });
        continue;
      }
      report(a, `\`${a.text}\` is a CUDA tensor type: creating or casting to it raises on a TPU host; use \`dtype=\` with the XLA device`, null);
    }
  },
});

/** The CPU legacy type (`torch.FloatTensor`, `torch.Tensor`) in the other arm of a ternary whose CUDA arm is `a`. */
function cpuTypeAlternative(a: Node): Node | null {
  const t = a.parent;
  if (t?.type !== 'conditional_expression' || t.namedChildren[0]?.id !== a.id) return null;
  const other = t.namedChildren[2];
  return other && /^torch\.((Float|Double|Half|BFloat16|Byte|Char|Short|Int|Long|Bool)Tensor|Tensor)$/.test(other.text) ? other : null;
}

/** An operand of a comparison (`in`, `==`, `is`), also inside a tuple/list/set operand, or a subscript key. */
function typeComparison(a: Node): boolean {
  let n: Node = a;
  let p = a.parent;
  while (p && (p.type === 'tuple' || p.type === 'list' || p.type === 'set' || p.type === 'parenthesized_expression')) {
    n = p;
    p = p.parent;
  }
  if (!p) return false;
  if (p.type === 'comparison_operator') return true;
  return p.type === 'subscript' && p.childForFieldName('value')?.id !== n.id;
}
