import { defineRule } from '../../core/rule';
import { downgrade } from '../../core/engine';
import { replace } from '../../core/edits';
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import type { ImportSpec } from '../../core/types';
import { callArgs, kwValue, mentionsXla, stringContent } from '../../core/semantics';
import { autocastCall, autocastExpr, isBfloat16, isFloat16, torchName, underCudaOnlyBranch } from './util';

const GRAD_SCALERS = /^(torch\.cuda\.amp\.GradScaler|torch\.amp\.GradScaler|torch\.GradScaler|torch\.amp\.grad_scaler\.GradScaler|torch\.cuda\.amp\.grad_scaler\.GradScaler)$/;
const CUSTOM_FN = /^torch\.cuda\.amp\.(custom_fwd|custom_bwd)$/;

/** A device-type argument that means CUDA: "cuda", a CUDA-tainted name, `<cuda device>.type`. */
function isCudaDeviceType(ctx: RuleContext, node: Node | null): boolean {
  if (!node || mentionsXla(node.text)) return false;
  if (node.type === 'string') return /^cuda(:\d+)?$/.test(stringContent(node) ?? '');
  if (node.type === 'attribute' && node.childForFieldName('attribute')?.text === 'type') {
    return ctx.model.namesCuda(node.childForFieldName('object'));
  }
  return ctx.model.namesCuda(node);
}

function short(text: string): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > 60 ? `${one.slice(0, 57)}…` : one;
}

export default defineRule({
  id: 'TPU301',
  name: 'cuda-autocast',
  title: 'CUDA autocast is silently disabled on TPU',
  severity: 'warning',
  step: 5,
  effort: 1,
  message: 'CUDA autocast is disabled when no CUDA device exists: this region runs in float32 on TPU',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Use bf16 autocast on the XLA device' },
  triggers: ['autocast', 'custom_fwd', 'custom_bwd'],
  docs: {
    what:
      'Checks for autocast regions keyed on CUDA: `torch.cuda.amp.autocast(...)` (as a context manager, call or decorator), ' +
      '`torch.autocast("cuda", ...)`, `torch.amp.autocast(device_type="cuda")`, `autocast(...)` imported from `torch.cuda.amp`, ' +
      'and `torch.autocast(device_type=var)` where `var` holds a CUDA device type (`"cuda" if torch.cuda.is_available() else "cpu"`, `device.type`). ' +
      'A CUDA autocast written with `enabled=False` (a float32 island such as `with torch.cuda.amp.autocast(enabled=False):` around an ' +
      'attention softmax) computes nothing in reduced precision, so it is info only: it switches CUDA autocast off, not an XLA autocast ' +
      'region around it. ' +
      'Also `torch.cuda.amp.custom_fwd`/`custom_bwd`, which follow the CUDA autocast state only, and the uncalled factory assigned to a name and entered later ' +
      '(`amp_autocast = torch.cuda.amp.autocast` … `with amp_autocast():`, timm `train.py`; also as the first arm of a conditional, `autocast = torch.cuda.amp.autocast if cfg.use_fp16 else nullcontext`).',
    why:
      'PyTorch\'s autocast warns "User provided device_type of \'cuda\', but CUDA is not available. Disabling" and sets `enabled=False` ' +
      '(PT:torch/amp/autocast_mode.py `__init__`). On a TPU host the region therefore runs in float32: slower and larger than intended. ' +
      'The XLA form is `torch.autocast("xla", dtype=torch.bfloat16)`; `torch_xla.amp.autocast(device)` is the same thing on TPU (AMP:39-42).',
    example: 'with torch.cuda.amp.autocast():\n    loss = crit(model(x), y)\n\nwith torch.autocast("cuda", dtype=torch.bfloat16):\n    loss = crit(model(x), y)',
    useInstead: 'import torch_xla\n\nwith torch.autocast("xla", dtype=torch.bfloat16):\n    loss = crit(model(x), y)',
    fixSafety:
      'Safe when the region asked for bf16 or for no dtype in a script without a GradScaler: only the device changes (CUDA autocast already did nothing on TPU). ' +
      'Unsafe when the dtype was float16 (it becomes bf16, see TPU302), when it is a variable, or when a GradScaler shows the code was tuned for fp16. ' +
      '`enabled=` and `cache_enabled=` are kept. In dual-path style the region calls `accel.autocast(dtype=…)`, which off XLA is exactly ' +
      '`torch.autocast(device_type, dtype=…, enabled=…, cache_enabled=…)` of the replaced call: float16 on CUDA stays float16 (`torch.cuda.amp.autocast()` becomes ' +
      '`accel.autocast(dtype=torch.float16)`), a device-type variable is passed as `device_type=` (CPU autocast stays CPU autocast), and on a host without CUDA ' +
      'the region is disabled as before; on XLA float16 or no dtype becomes bf16. Any GradScaler stays for CUDA (TPU303). ' +
      '`custom_fwd`/`custom_bwd` get no fix: a `device_type="xla"` form of them is unverified. An assigned factory becomes `lambda: <bf16 autocast>` (dual-path: `lambda: accel.autocast(dtype=torch.float16)`, float16 on CUDA as before and bf16 on XLA; unsafe: the script may scale fp16 losses) ' +
      'only when every call of that name passes no arguments.',
    sources: [
      'AMP (docs/source/perf/amp.md:39-42): `autocast(torch.device(\'xla\'))` aliases `torch.autocast(\'xla\')`',
      'XAMP (torch_xla/amp/autocast_mode.py): calls `torch.amp.autocast_mode.autocast.__init__("xla", …)`, bf16 default on TPU (read at pytorch/xla@01834d7)',
      'PT:torch/amp/autocast_mode.py `autocast.__init__`: disables CUDA autocast when CUDA is unavailable',
    ],
    torchtpu: 'The fix writes `torch.autocast("tpu", dtype=torch.bfloat16)` and imports `torch_tpu` (preview API).',
  },
  check(ctx) {
    const usesScaler = ctx.sema.nodes('call').some((c) => GRAD_SCALERS.test(ctx.sema.callee(c) ?? ''));
    const where = ctx.idiom.profile === 'torchtpu' ? 'the tpu device' : 'the XLA device';
    for (const call of ctx.sema.nodes('call')) {
      const ac = autocastCall(ctx, call);
      if (!ac || (ac.kind !== 'cuda' && ac.kind !== 'torch')) continue;
      if (ac.kind === 'torch' && !isCudaDeviceType(ctx, ac.device)) continue;
      // `device_type = "cuda" if "cuda" in device else "cpu"` … `torch.amp.autocast(device_type=device_type, ...)` (nanoGPT,
      // llama2.c): TPU103 reports the device-type picker, and its XLA arm fixes this autocast too (one finding per problem)
      if (ac.kind === 'torch' && ac.device?.type === 'identifier' && deviceTypeTernaryOnly(ctx, ac.device.text)) continue;
      if (ctx.sema.inXlaAwareBranch(call) || underCudaOnlyBranch(ctx, call)) continue;
      // `with torch.cuda.amp.autocast(enabled=False):` (a float32 island inside a model): nothing runs in reduced precision
      // here, so no float32 slowdown to report; on TPU it only switches CUDA autocast off, so an XLA autocast region
      // around it still casts (advice)
      if (ac.enabled?.type === 'false') {
        ctx.report(call, {
          severity: 'info',
          message: `\`${short(call.text)}\` turns off CUDA autocast only: inside ${ctx.idiom.profile === 'torchtpu' ? 'a tpu' : 'an XLA'} autocast region this block is still autocast to bfloat16 on TPU`,
          fix: null,
        });
        continue;
      }
      const hot = ctx.sema.hot(call);
      const severity = hot && (hot.kind === 'eval' || hot.throttled) ? downgrade('warning') : 'warning';
      const message = `\`${short(call.text)}\` is CUDA autocast, disabled without a CUDA device: the region runs in float32 on TPU (use bf16 autocast on ${where})`;

      // the fix: bf16 autocast of the profile, keeping enabled= / cache_enabled=. In dual-path style
      // `accel.autocast(dtype, enabled, device_type, cache_enabled)` is exactly `torch.autocast(device_type, ...)` off XLA,
      // so the call keeps what CUDA (and CPU, where CUDA autocast disables itself) did: the dtype (float16 by default for
      // `torch.cuda.amp.autocast`), and a device type other than "cuda" (`device_type` variable, `device.type`)
      const extra: string[] = [];
      if (ac.enabled) extra.push(`enabled=${ac.enabled.text}`);
      let fixable = true;
      const dual = ctx.idiom.dualPath;
      if (dual && ac.kind === 'torch' && ac.device && !(ac.device.type === 'string' && stringContent(ac.device) === 'cuda')) extra.push(`device_type=${ac.device.text}`);
      if (ac.cacheEnabled) extra.push(`cache_enabled=${ac.cacheEnabled.text}`);
      // torch.autocast is a decorator too (autocast.__call__): fine in both styles now that accel.autocast returns one
      const { keywords, positional } = callArgs(call);
      // only plain argument lists: positional enabled/dtype are re-emitted as keywords; no *args/**kwargs
      if ([...positional].some((p) => p.type === 'list_splat' || p.type === 'dictionary_splat')) fixable = false;
      for (const k of keywords.keys()) if (!['device_type', 'dtype', 'enabled', 'cache_enabled'].includes(k)) fixable = false;

      let dtype: string | undefined;
      let safe: boolean;
      const imports: ImportSpec[] = [];
      if (dual && !ac.dtype && ac.kind === 'cuda') {
        // torch.cuda.amp.autocast's default dtype, written out: float16 on CUDA, bf16 on XLA
        const t = torchName(ctx);
        dtype = `${t.name}.float16`;
        imports.push(...t.imports);
      }
      if (!ac.dtype) safe = !usesScaler;
      else if (isBfloat16(ctx, ac.dtype)) safe = true;
      else if (isFloat16(ctx, ac.dtype)) safe = false;
      else {
        safe = false;
        const t = ac.dtype.type === 'string' ? null : ac.dtype.text;
        if (t === null) fixable = false;
        else dtype = t;
      }
      // dual-path: CUDA keeps the dtype it asked for (accel.autocast maps float16 to bf16 on XLA only)
      if (dual && ac.dtype) {
        if (ac.dtype.type === 'string') fixable = false;
        else dtype = ac.dtype.text;
      }
      const snippet = fixable ? autocastExpr(ctx, { dtype, extra }) : null;
      if (snippet) imports.push(...snippet.imports);
      ctx.report(call, {
        message,
        severity,
        fix: snippet
          ? {
              title: `Replace with \`${snippet.text}\``,
              applicability: safe ? 'safe' : 'unsafe',
              edits: [replace(call, snippet.text)],
              imports,
              needsAccel: snippet.needsAccel,
            }
          : null,
      });
    }

    // `amp_autocast = torch.cuda.amp.autocast` … `with amp_autocast():` (timm train.py): the CUDA autocast passed around uncalled
    for (const ref of ctx.sema.nodes('attribute')) {
      if (!/^torch\.cuda\.amp\.(autocast_mode\.)?autocast$/.test(ctx.sema.resolve(ref) ?? '')) continue;
      // also one arm of a conditional (`autocast = torch.cuda.amp.autocast if cfg.use_fp16 else nullcontext`, llama-recipes)
      const arm = ref.parent?.type === 'conditional_expression' && ref.parent.namedChildren[0]?.id === ref.id ? ref.parent : null;
      const value = arm ?? ref;
      const assign = value.parent;
      if (assign?.type !== 'assignment' || assign.childForFieldName('right')?.id !== value.id) continue;
      const name = assign.childForFieldName('left');
      if (name?.type !== 'identifier' || ctx.sema.inXlaAwareBranch(ref) || underCudaOnlyBranch(ctx, ref)) continue;
      // the name's calls anywhere in the file (it is usually passed on under the same parameter name)
      const uses = ctx.sema.nodes('call').filter((c) => c.childForFieldName('function')?.text === name.text);
      const bare = uses.length > 0 && uses.every((c) => (c.childForFieldName('arguments')?.namedChildren.filter((a) => !!a && a.type !== 'comment').length ?? 0) === 0);
      // dual-path keeps CUDA's float16 (torch.cuda.amp.autocast's default); accel.autocast picks bf16 on XLA
      const t = torchName(ctx);
      const snippet = bare ? autocastExpr(ctx, ctx.idiom.dualPath ? { dtype: `${t.name}.float16` } : {}) : null;
      if (snippet && ctx.idiom.dualPath) snippet.imports.push(...t.imports);
      ctx.report(ref, {
        message: `\`${name.text} = ${ref.text}\` is CUDA autocast (entered as \`${name.text}()\`), disabled without a CUDA device: those regions run in float32 on TPU (use bf16 autocast on ${where})`,
        fix: snippet
          ? { title: `Use \`lambda: ${snippet.text}\``, applicability: 'unsafe', edits: [replace(ref, arm ? `(lambda: ${snippet.text})` : `lambda: ${snippet.text}`)], imports: snippet.imports, needsAccel: snippet.needsAccel }
          : null,
      });
    }

    // custom_fwd / custom_bwd keyed on CUDA (decorators, with or without a call)
    for (const def of ctx.sema.nodes('decorated_definition')) {
      for (const dec of def.namedChildren) {
        if (!dec || dec.type !== 'decorator') continue;
        const expr = dec.namedChildren[0];
        if (!expr) continue;
        const target = expr.type === 'call' ? expr.childForFieldName('function') : expr;
        const q = ctx.sema.resolve(target);
        let cuda = !!q && CUSTOM_FN.test(q);
        if (!cuda && expr.type === 'call' && /^torch\.amp\.(custom_fwd|custom_bwd)$/.test(q ?? '')) {
          cuda = isCudaDeviceType(ctx, kwValue(callArgs(expr).keywords.get('device_type')));
        }
        if (!cuda) continue;
        const name = q!.split('.').pop();
        ctx.report(expr, {
          severity: 'info',
          message: `\`${name}\` follows the CUDA autocast state only: its input casting and autocast replay do not apply on TPU`,
          fix: null,
        });
      }
    }
  },
});

/** `name` is bound only to `"cuda" if <test naming "cuda"> else "cpu"` string ternaries (TPU103's device-type pickers). */
function deviceTypeTernaryOnly(ctx: RuleContext, name: string): boolean {
  const defs = ctx.sema.bindings(name);
  return defs.length > 0 && defs.every((d) => {
    if (d.type !== 'conditional_expression') return false;
    const [a, cond, b] = d.namedChildren;
    return a?.type === 'string' && b?.type === 'string' && stringContent(a) === 'cuda' && stringContent(b) === 'cpu' &&
      cond?.type === 'comparison_operator' && /["']cuda["']/.test(cond.text);
  });
}
