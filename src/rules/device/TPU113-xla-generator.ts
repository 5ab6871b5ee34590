import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { callArgs, kwValue, stringContent } from '../../core/semantics';

const XLA_DEVICE_CALLS = new Set(['torch_xla.device', 'torch_xla.torch_xla.device', 'torch_xla.core.xla_model.xla_device']);

/** An expression that is the XLA device: `torch_xla.device()`, `xm.xla_device()`, `"xla"`, `torch.device("xla")`, the generated `accel.device()`, or a name/attribute bound only to those. */
export function isXlaDevice(ctx: RuleContext, node: Node | null | undefined, depth = 0): boolean {
  if (!node || depth > 4) return false;
  const sema = ctx.sema;
  switch (node.type) {
    case 'string':
      return /^xla(:\d+)?$/.test(stringContent(node) ?? '');
    case 'parenthesized_expression':
      return isXlaDevice(ctx, node.namedChildren[0], depth + 1);
    case 'call': {
      const callee = sema.callee(node) ?? '';
      if (XLA_DEVICE_CALLS.has(callee) || callee === `${ctx.options.accelModule}.device`) return true;
      if (callee === 'torch.device') {
        const { positional, keywords } = callArgs(node);
        return isXlaDevice(ctx, positional[0] ?? kwValue(keywords.get('type')), depth + 1);
      }
      return false;
    }
    case 'identifier': {
      const values = sema.bindings(node.text);
      return values.length > 0 && values.every((v) => isXlaDevice(ctx, v, depth + 1));
    }
    case 'attribute': {
      const attr = node.childForFieldName('attribute')?.text ?? '';
      if (attr !== 'device' && !/device/i.test(attr)) return false;
      const values = sema.attributeAssignments(attr).map((a) => a.childForFieldName('right')).filter((v): v is Node => !!v);
      return values.length > 0 && values.every((v) => isXlaDevice(ctx, v, depth + 1));
    }
    default:
      return false;
  }
}

export default defineRule({
  id: 'TPU113',
  name: 'xla-generator',
  title: '`torch.Generator` on the XLA device',
  severity: 'error',
  step: 3,
  effort: 3,
  message: '`torch.Generator` on the XLA device raises: torch_xla 2.3–2.9 exposes no XLA generator to Python',
  fix: { availability: 'none' },
  triggers: ['Generator'],
  docs: {
    what:
      'Checks for `torch.Generator(device=X)` / `torch.Generator(X)` where `X` is the XLA device: `torch_xla.device()`, `xm.xla_device()`, `"xla"`, ' +
      '`torch.device("xla")`, the generated `accel.device()`, or a name or attribute bound only to those. CPU generators (`torch.Generator()`, ' +
      '`device="cpu"`) are not flagged; CUDA generators are TPU102.',
    why:
      'PyTorch builds a `torch.Generator` only for devices whose backend registers one. torch_xla 2.3–2.9 registers none: older PyTorch raises ' +
      '"Device type XLA is not supported for torch.Generator() api", newer PyTorch "XLA device type not an accelerator." (reported by vLLM on TPU, ' +
      'vllm-project/vllm#16172, which dropped per-request generators). The feature request pytorch/xla#9159 is open; torch_xla 2.9 added a C++ ' +
      '`XLAGeneratorImpl` (pytorch/xla@a1c6ee9, torch_xla/csrc/xla_generator.cpp) but nothing in torch_xla@41398bf registers it for `torch.Generator(device="xla")`. ' +
      'The XLA device RNG is seeded globally instead: `torch_xla.manual_seed(seed)` (torch_xla 2.5+, TX:221-229) or `xm.set_rng_state(seed)` (XM:1453).',
    example: 'g = torch.Generator(device=device).manual_seed(seed)\nnoise = torch.randn(shape, generator=g, device=device)',
    useInstead:
      'import torch_xla\n\n# seed the device RNG once\ntorch_xla.manual_seed(seed)\nnoise = torch.randn(shape, device=device)\n# or: draw on a CPU generator and move the result\ng = torch.Generator().manual_seed(seed)\nnoise = torch.randn(shape, generator=g).to(device)',
    fixSafety:
      'No fix: both replacements change the random stream (a global device seed instead of a per-call generator, or CPU sampling plus a host-to-device copy), ' +
      'so which one keeps the program\'s reproducibility contract is a choice for its author.',
    sources: [
      'pytorch/xla#9159 "Support torch.Generator on PyTorch/XLA" (open); pytorch/xla#9667 (XLAHooksInterface needed for it)',
      'vllm-project/vllm#16172: `torch.Generator(device=self.device)` on TPU → "RuntimeError: XLA device type not an accelerator."',
      'pytorch/xla@a1c6ee9 "Add xla random generator" (first in v2.9.0): torch_xla/csrc/xla_generator.cpp, C++ only; no Python registration at pytorch/xla@41398bf',
      'TX:221-229 torch_xla/torch_xla.py `manual_seed(seed, device=None)` → `xm.set_rng_state(seed, device)` (v2.5.0:200); XM:1453 `set_rng_state`',
      'PyTorch CPU build (1.13, run here): `torch.Generator(device="cuda")` → "Device type CUDA is not supported for torch.Generator() api." (the same check rejects XLA)',
    ],
    torchtpu: 'Whether TorchTPU supports `torch.Generator(device="tpu")` is not documented; this rule checks the torch_xla device only.',
  },
  check(ctx) {
    const seedHint = ctx.idiom.at('2.5') ? '`torch_xla.manual_seed(seed)`' : '`xm.set_rng_state(seed)`';
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (callee !== 'torch.Generator' && callee !== 'torch._C.Generator') continue;
      const { positional, keywords } = callArgs(call);
      const dev = positional[0] ?? kwValue(keywords.get('device'));
      if (!isXlaDevice(ctx, dev)) {
        // HF Accelerate / Lightning Fabric pick the device at run time: on a TPU host `accelerator.device` is the XLA device
        if (!(frameworkDevice(ctx, dev) || tensorDevice(ctx, dev)) || ctx.sema.inXlaAwareBranch(call)) continue;
        ctx.report(call, {
          message: ctx.idiom.profile === 'torchtpu'
            ? `\`torch.Generator(${dev!.text})\` builds a generator on the run-time device; whether TorchTPU supports generators on \`tpu\` is not documented`
            : `\`torch.Generator(${dev!.text})\` raises when the run-time device is XLA (on a TPU host; torch_xla exposes no XLA generator); sample on a CPU generator (\`torch.Generator().manual_seed(seed)\`) and move the result`,
        });
        continue;
      }
      ctx.report(call, {
        message: ctx.idiom.profile === 'torchtpu'
          ? `\`torch.Generator(${dev!.text})\` on an XLA device raises (no Python-registered XLA generator); whether TorchTPU supports generators on \`tpu\` is not documented`
          : `\`torch.Generator(${dev!.text})\` raises on the XLA device (torch_xla exposes no XLA generator); seed the device RNG with ${seedHint}, or sample on a CPU generator and move the result`,
      });
    }
  },
});

/** `accelerator.device` (HF Accelerate) or `fabric.device` (Lightning Fabric), in a file that imports the framework. */
function frameworkDevice(ctx: RuleContext, node: Node | null | undefined): boolean {
  if (node?.type !== 'attribute' || node.childForFieldName('attribute')?.text !== 'device') return false;
  const obj = node.childForFieldName('object')?.text ?? '';
  if (/(^|\.)accelerator$/.test(obj)) return ctx.sema.imports('accelerate');
  if (/(^|\.)fabric$/.test(obj)) return ctx.sema.imports('lightning') || ctx.sema.imports('lightning.fabric') || ctx.sema.imports('lightning_fabric');
  return false;
}

/**
 * The device of the model or of a tensor, read at run time: `x.device`, `self.device` in a module,
 * `next(model.parameters()).device`, `self.get_device()`, or a local bound only to one of those
 * (`device = self.get_device()` ... `torch.Generator(device=device)`). Once the model is on the XLA device, so is this.
 * Not `args.device` / `cfg.device` (a configured device: TPU102 reports a CUDA one).
 */
function tensorDevice(ctx: RuleContext, node: Node | null | undefined, depth = 0): boolean {
  if (!node || depth > 2) return false;
  if (node.type === 'attribute' && node.childForFieldName('attribute')?.text === 'device') {
    const obj = node.childForFieldName('object');
    if (!obj) return false;
    if (obj.type === 'identifier' && /^(args|opt|opts|config|cfg|conf|hparams|params|flags|FLAGS|settings)$/.test(obj.text)) return false;
    if (obj.type === 'identifier' && obj.text === 'self') return !!ctx.sema.moduleMethod(node);
    return obj.type === 'call' || obj.type === 'identifier' || obj.type === 'subscript' || (obj.type === 'attribute' && /^self\.\w+$/.test(obj.text));
  }
  if (node.type === 'call') {
    const f = node.childForFieldName('function');
    return f?.type === 'attribute' && f.childForFieldName('attribute')?.text === 'get_device' && (callArgs(node).positional.length === 0);
  }
  if (node.type === 'identifier') {
    const exprs = ctx.model.bindingExpressions(node);
    return exprs.length > 0 && exprs.every((e) => !!e && tensorDevice(ctx, e, depth + 1));
  }
  return false;
}
