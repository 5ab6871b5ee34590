import { defineRule, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, conditionOf, kwValue, mentionsXla, nearestAncestor, stringContent } from '../../core/semantics';
import { guardsCudaExtrasOnly, tpuTruth } from '../../model/guards';
import { bf16ProbeRaises } from '../shared';
import { chainOf, conditionOwner, cudaGuarded, cudaOnlyBlock, short, usesCudaOnlyKernel, xlaArmed } from './cuda-util';
import { deviceKinds } from '../../model/values';

/** A device-ish operand: `device`, `args.device`, `x.device.type`, `str(device)`, `device_type`. */
const DEVICE_NAME = /(^|[._])(device|dev|device_type|device_str|device_name|accelerator)$/i;
/** Calls that emit or log a value (uses there are diagnostics, not decisions). */
const LOGGING = /^(print|logging\.\w+|logger\.\w+|log\.\w+|warnings\.warn|\w+\.(info|debug|warning|write|add_scalar|log))$/;

/** Names TPU503 treats as the world size. */
const WORLD_SIZE_NAME = /^(world_size|world|ws|num_replicas|n_replicas|ddp_world_size)$/;

export default defineRule({
  id: 'TPU103',
  name: 'cuda-capability-check',
  title: 'CUDA capability or device-type checks silently choose a non-TPU path',
  severity: 'warning',
  step: 3,
  effort: 3,
  message: 'A CUDA-only capability or device-type check picks the non-TPU path on a TPU host',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Add an XLA arm' },
  triggers: ['cuda'],
  docs: {
    what:
      'Checks for decisions keyed on CUDA: `torch.cuda.is_available()` in a condition (device, dtype, AMP or backend choice), ' +
      '`torch.cuda.device_count()` used for process counts, world size or batch/LR scaling, device-type tests that only recognise ' +
      'CUDA (`device.type == "cuda"`, `"cuda" in str(device)`, nanoGPT\'s `device_type = "cuda" if "cuda" in device else "cpu"`, ' +
      '`_get_available_device_type() or "cuda"`), and `torch.cuda.is_bf16_supported()` as a dtype selector. A check whose TPU-host arm ' +
      'stops the script (`if not torch.cuda.is_available(): sys.exit(...)` or `raise`, `assert torch.cuda.is_available()`, an `else:` that ' +
      'exits after `elif torch.cuda.is_available():`) is an error, as is `torch.cuda.device_count()` as a divisor (`rank % torch.cuda.device_count()`: ' +
      'ZeroDivisionError), and an unguarded `torch.cuda.is_bf16_supported()` for torch_xla ' +
      'targets before 2.5, where it raises. Guards whose chain already ' +
      'has an XLA/TPU arm, guards that only gate optional CUDA work (cuDNN flags, CUDA seeding, diagnostics), and ' +
      '`"cuda" if torch.cuda.is_available() else "cpu"` device pickers (TPU102 rewrites those) are not flagged.',
    why:
      'On a TPU host `torch.cuda.is_available()` is False and `torch.cuda.device_count()` is 0. Code then silently trains on the CPU, ' +
      'spawns no processes, divides by zero, or turns autocast off (nanoGPT sets `ctx = nullcontext()` when `device_type == "cpu"`). ' +
      'torch_xla reports devices through `torch_xla.runtime`: `xr.global_runtime_device_count()` (SPMD) and `xr.world_size()` inside a ' +
      'launched function (XR:106-115); `xr.device_type()` only reads `PJRT_DEVICE`, so it is safe before a spawn (XR:74-83). ' +
      '`torch.cuda.is_bf16_supported()` reads `torch.cuda.current_device()` up to torch 2.4, which raises without a GPU (pytorch/pytorch#132303, ' +
      'reported on torch 2.2.2); from torch 2.5 it returns False without CUDA (pytorch/pytorch#132313, merged 2024-08-01), so a bfloat16 choice ' +
      'keyed on it silently falls to its float16 or float32 arm. torch_xla 2.x pairs with torch 2.x, so the target version decides.',
    example:
      'device_type = "cuda" if "cuda" in device else "cpu"\nworld = torch.cuda.device_count()\n' +
      'dtype = torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32',
    useInstead:
      'device_type = "xla" if "xla" in str(device) else ("cuda" if "cuda" in device else "cpu")\n' +
      'import torch_xla.runtime as xr\nworld = xr.global_runtime_device_count()   # or xr.world_size() inside a launched function',
    fixSafety:
      'Unsafe: the branch needs an explicit XLA arm, and what it should do there is the author\'s call. Offered for two shapes: a ' +
      'device-type ternary gets an XLA arm in front of the original (`"xla" if "xla" in str(device) else (<original>)`), which keeps the ' +
      'CUDA and CPU behaviour; `torch.cuda.device_count()` becomes `xr.global_runtime_device_count()` (torch_xla profile, tpu-only ' +
      'style; it initialises the runtime, so do not call it before `torch_xla.launch`, see TPU901). No fix for `nprocs=` (a launcher ' +
      'concern), for a count assigned to a name that a launcher\'s `nprocs` uses later (`n = torch.cuda.device_count()` … ' +
      '`mp.spawn(fn, nprocs=n)`: the replacement would open the TPU runtime in the parent, which xmp.spawn refuses, ' +
      'torch_xla/_internal/pjrt.py v2.9.0:144), or for `is_available()` guards.',
    sources: [
      'XR: torch_xla/runtime.py `device_type()`, `world_size()`, `global_runtime_device_count()` (pytorch/xla@022ecde; catalog XR:74-83, 106-115)',
      'pytorch/xla#7765 (xm.xla_real_devices initialises the runtime)',
      'karpathy/nanoGPT train.py `device_type = "cuda" if "cuda" in device else "cpu"` / `nullcontext()`',
      'pytorch/pytorch#132303 (is_bf16_supported raises on a CPU-only host, torch 2.2.2) and #132313 (returns False without CUDA, first in torch 2.5)',
    ],
    torchtpu: 'The device-type ternary gets a `"tpu"` arm; no device-count replacement is known for the preview.',
  },
  check(ctx) {
    const sema = ctx.sema;
    for (const call of sema.nodes('call')) {
      const callee = sema.callee(call);
      if (callee === 'torch.cuda.is_available' || callee === 'torch.cuda.is_bf16_supported') {
        const r = availabilityFinding(ctx, call);
        if (r) ctx.report(call, { message: r.message, severity: r.severity, related: r.related });
      } else if (callee === 'torch.cuda.device_count') {
        // unreachable on a TPU host (inside `if torch.cuda.is_available():`, reported at the guard), or an argument of a
        // `torch.cuda.*` call that TPU104 reports (`torch.cuda.set_device(rank % torch.cuda.device_count())`)
        if (sema.inXlaAwareBranch(call) || inLogging(sema, call) || cudaGuarded(call) || insideCudaCall(sema, call)) continue;
        const own = conditionOwner(call);
        if (own && (xlaArmed(sema, own.owner) || (own.owner.type === 'if_statement' && cudaOnlyBlock(sema, own.owner.childForFieldName('consequence'))))) continue;
        // `assert torch.cuda.is_available() and torch.cuda.device_count() >= n`: one finding, on `is_available()`
        if (own && sema.callsWithin(own.cond).some((c) => sema.callee(c) === 'torch.cuda.is_available')) continue;
        if (own?.owner.type === 'if_statement' && multiGpuOnly(sema, own.owner, call)) continue;
        if (!own && multiGpuCount(sema, call)) continue;
        const kw = call.parent?.type === 'keyword_argument' ? call.parent.childForFieldName('name')?.text : null;
        const assigned = call.parent?.type === 'assignment' ? call.parent.childForFieldName('left')?.text : null;
        // reported once, under the more specific rule: `nprocs=` by TPU502 (launchers), world sizes by TPU503
        if (kw === 'nprocs' || WORLD_SIZE_NAME.test(kw ?? assigned ?? '')) continue;
        // `ngpus = torch.cuda.device_count()` … `mp.spawn(fn, nprocs=ngpus)`: the count starts processes (TPU502 reports the
        // launcher, with no mechanical fix). `xr.global_runtime_device_count()` would start N plain processes that each
        // open the TPU, and it initialises the runtime in the parent, which xmp.spawn / torch_xla.launch then refuse
        // ("Runtime is already initialized. Do not use the XLA device before calling xmp.spawn": torch_xla/_internal/pjrt.py
        // v2.3.0:146, v2.9.0:144; the count queries the runtime's devices, torch_xla/runtime.py v2.9.0:178-180): no fix
        // `args.gpu = args.rank % torch.cuda.device_count()` (a SLURM arm of an init_distributed_mode helper), `batch // n_gpu`
        // with the call as the divisor: ZeroDivisionError on a TPU host
        const divides = divisorOf(call);
        if (divides) {
          ctx.report(call, {
            severity: 'error',
            message: `\`torch.cuda.device_count()\` is 0 on a TPU host: \`${short(divides.text, 40)}\` raises ZeroDivisionError`,
            fix: null,
          });
          continue;
        }
        const spawnsWith = !!assigned && /^[A-Za-z_]\w*$/.test(assigned) && countsProcesses(ctx, assigned);
        const snip = spawnsWith ? null : ctx.idiom.xlaOnly('xr.global_runtime_device_count()', { module: 'torch_xla.runtime', alias: 'xr' });
        ctx.report(call, {
          message: '`torch.cuda.device_count()` is 0 on a TPU host: process counts, world size or batch scaling built on it break',
          fix: snip
            ? { edits: [{ start: call.startIndex, end: call.endIndex, text: snip.text }], imports: snip.imports, applicability: 'unsafe', title: 'Use `xr.global_runtime_device_count()`' }
            : null,
        });
      }
    }

    for (const cmp of sema.nodes('comparison_operator')) {
      const check = cudaTypeCheck(ctx, cmp);
      if (!check) continue;
      const own = conditionOwner(cmp);
      const owner = own?.owner ?? null;
      if (sema.inXlaAwareBranch(cmp) || (owner && xlaArmed(sema, owner))) continue;
      // `if kind == "cuda": torch.cuda.empty_cache()` (also as an `elif` of a chain without `else`): optional CUDA work
      // (not a device wait, `elif device == "cuda": torch.cuda.synchronize()`: a step timer then measures tracing on XLA)
      if (owner?.type === 'if_statement' && !owner.childrenForFieldName('alternative').some(Boolean) && cudaOnlyBlock(sema, owner.childForFieldName('consequence'))) continue;
      if ((owner?.type === 'if_statement' || owner?.type === 'elif_clause') && !elseOf(chainOf(owner)) && cudaOnlyBlock(sema, owner.childForFieldName('consequence')) &&
        !/\.synchronize\s*\(/.test(chainOf(owner).text)) continue;
      // bookkeeping arms (`peak = torch.cuda.max_memory_allocated if kind == "cuda" else lambda: 0`, a GPU-name banner),
      // or a TPU arm that only says the CUDA-only feature is skipped (`if kind != "cuda": print("fp8 needs CUDA")`)
      if (owner && (guardsCudaExtrasOnly(sema, owner, ctx.model) || diagnosticRefTernary(ctx, owner) || diagnosticArms(ctx, owner) || declinedOffCuda(ctx, owner))) continue;
      if ((owner?.type === 'if_statement' || owner?.type === 'elif_clause') && cudaKernelArm(sema, owner)) continue;
      // an arm that only names the CUDA device more exactly (`if device.type == "cuda": device = torch.device("cuda:0")`), or a
      // ternary whose CUDA arm builds a loss scaler (`GradScaler() if device.type == "cuda" else None`): the non-CUDA path is
      // right for XLA too (bf16 needs no scaler), nothing to report
      if (owner && (remapArm(ctx, owner) || scalerTernary(ctx, owner))) continue;
      // `autocast(device_type=...) if device_type == "cuda" else nullcontext()`: TPU301 reports the CUDA autocast
      if (owner?.type === 'conditional_expression' && autocastTernary(ctx, owner)) continue;
      if (!owner && (cmp.parent?.type !== 'assignment' || inLogging(sema, cmp) || onlyTransferFlag(sema, cmp.parent))) continue;
      ctx.report(cmp, {
        message: `\`${short(cmp.text, 40)}\` only recognises CUDA: an XLA device takes the ${owner?.type === 'conditional_expression' ? 'CPU arm' : 'non-CUDA path'}`,
        fix: owner?.type === 'conditional_expression' ? ternaryFix(ctx, owner, cmp, check.operand) : null,
      });
    }

    // torchtitan: `_get_available_device_type() or "cuda"`
    for (const s of sema.nodes('string')) {
      const p = s.parent;
      if (p?.type !== 'boolean_operator' || p.childForFieldName('right')?.id !== s.id || !/^cuda$/.test(stringContent(s) ?? '')) continue;
      const left = p.childForFieldName('left');
      if (left?.type !== 'call' || !/device_type/.test(left.childForFieldName('function')?.text ?? '') || sema.inXlaAwareBranch(p)) continue;
      ctx.report(s, { message: `\`${short(p.text, 50)}\` falls back to CUDA when no accelerator type is detected; XLA is not among the choices` });
    }
  },
});

/**
 * `if torch.cuda.is_available(): <optional CUDA work>` with no other arm, or an `else:` that only prints or logs
 * (a notebook banner: GPU name if present, a warning otherwise): nothing is decided for the TPU run.
 */
function optionalCudaArms(sema: RuleContext['sema'], owner: Node): boolean {
  if (!cudaOnlyBlock(sema, owner.childForFieldName('consequence'))) return false;
  // `elif is_xpu_available(): torch.xpu.manual_seed_all(seed)` (accelerate examples): another backend's optional work
  return owner.childrenForFieldName('alternative').every((alt) => !alt || cudaOnlyBlock(sema, alt.childForFieldName(alt.type === 'else_clause' ? 'body' : 'consequence')));
}

/**
 * The CUDA arm is a CUDA kernel fast path (`if q.device.type == "cuda": return flash_attn_func(...)`, lit-gpt): TPU takes
 * the portable arm or the code after the guard, which is what TPU needs.
 */
function cudaKernelArm(sema: RuleContext['sema'], owner: Node): boolean {
  return usesCudaOnlyKernel(sema, owner.childForFieldName('consequence'));
}

/** Statements that only build a log line: `msg.append('max mem: {memory:.0f}')`, `log_msg = sep.join([...])`. */
function logFormatStatement(s: Node): boolean {
  if (s.type !== 'expression_statement') return false;
  const e = s.namedChildren[0];
  const stringy = (n: Node | null | undefined): boolean => {
    if (!n) return false;
    if (n.type === 'string' || n.type === 'concatenated_string') return true;
    if (n.type === 'binary_operator') return stringy(n.childForFieldName('left')) || stringy(n.childForFieldName('right'));
    if (n.type === 'list' || n.type === 'tuple') return n.namedChildren.some((c) => c?.type === 'string' && /mem|time|eta|GB|MB/i.test(c.text));
    if (n.type === 'call') {
      const f = n.childForFieldName('function');
      return f?.type === 'attribute' && /^(join|format)$/.test(f.childForFieldName('attribute')?.text ?? '') &&
        (n.childForFieldName('arguments')?.namedChildren.some((a) => stringy(a)) ?? false);
    }
    return false;
  };
  if (e?.type === 'call') {
    const f = e.childForFieldName('function');
    return f?.type === 'attribute' && f.childForFieldName('attribute')?.text === 'append' && (e.childForFieldName('arguments')?.namedChildren.every((a) => stringy(a)) ?? false);
  }
  // `log_list += ["max mem: {memory:.0f}"]` (dinov2 MetricLogger.log_every): a column added to a log format
  return (e?.type === 'assignment' || e?.type === 'augmented_assignment') && stringy(e.childForFieldName('right'));
}

/**
 * Every arm only formats a log line (DETR/MAE/ConvNeXt `MetricLogger.log_every` adds a 'max mem' column when CUDA is
 * present): no device path is chosen.
 */
function logFormatArms(sema: RuleContext['sema'], owner: Node): boolean {
  const blocks = [owner.childForFieldName('consequence'), ...owner.childrenForFieldName('alternative').map((a) => a?.type === 'else_clause' ? a.childForFieldName('body') : null)];
  if (owner.childrenForFieldName('alternative').some((a) => a?.type === 'elif_clause')) return false;
  return blocks.every((b) => {
    const stmts = b?.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment') ?? [];
    return b === null || (stmts.length > 0 && stmts.every(logFormatStatement));
  }) && !!blocks[0];
}

/**
 * `torch.cuda.memory_reserved() / 1e9 if torch.cuda.is_available() else 0`: a number for a progress bar, not a decision;
 * `torch.cuda.get_rng_state() if torch.cuda.is_available() else None`: the CUDA RNG slot of a checkpoint, empty without CUDA.
 */
function diagnosticTernary(sema: RuleContext['sema'], tern: Node): boolean {
  const [a, , b] = tern.namedChildren;
  if (!a || !b || !/^(integer|float|string|none)$/.test(b.type)) return false;
  const calls = a.type === 'call' ? [a, ...sema.callsWithin(a)] : sema.callsWithin(a);
  return calls.length > 0 && calls.every((c) => /^torch\.cuda\.(memory_\w+|max_memory_\w+|get_device_name|get_device_properties|mem_get_info|utilization|get_rng_state(_all)?|initial_seed)$/.test(sema.callee(c) ?? '') || /^(round|int|float|str)$/.test(c.childForFieldName('function')?.text ?? ''));
}

/** A ternary whose CUDA arm is an autocast context (TPU301 reports the CUDA autocast there). */
function autocastTernary(ctx: RuleContext, tern: Node): boolean {
  const sema = ctx.sema;
  const a = tern.namedChildren[0];
  if (a?.type !== 'call') return false;
  const callee = sema.callee(a) ?? '';
  if (callee === 'torch.cuda.amp.autocast') return true;
  if (!/^torch\.(amp\.)?autocast$/.test(callee)) return false;
  const { positional, keywords } = callArgs(a);
  const dt = keywords.get('device_type')?.childForFieldName('value') ?? positional[0];
  return !!dt && (ctx.model.namesCuda(dt) || /^cuda$/.test(stringContent(dt) ?? ''));
}

/** Inside the arguments of another `torch.cuda.*` call (which its own rule reports). */
function insideCudaCall(sema: RuleContext['sema'], call: Node): boolean {
  for (let p = call.parent; p && p.type !== 'expression_statement' && p.type !== 'block'; p = p.parent) {
    if (p.type === 'call' && p.id !== call.id && /^torch\.cuda\./.test(sema.callee(p) ?? '')) return true;
  }
  return false;
}

/**
 * `if torch.cuda.device_count() > 1:` whose body only sets flags (`model.is_parallelizable = True`, alpaca-lora) or
 * wraps `nn.DataParallel` (TPU504 reports that): with 0 devices the single-device path runs, which is TPU's path too.
 */
/**
 * `opt.num_gpu = torch.cuda.device_count()` read only by `if opt.num_gpu > 1:` whose arm scales settings for several
 * GPUs (`opt.batch_size = opt.batch_size * opt.num_gpu`) or logs: on a TPU host the count is 0 and the single-device
 * settings stay, nothing breaks.
 */
function multiGpuCount(sema: RuleContext['sema'], call: Node): boolean {
  const a = call.parent;
  const left = a?.type === 'assignment' && a.childForFieldName('right')?.id === call.id ? a.childForFieldName('left') : null;
  if (!left || (left.type !== 'identifier' && left.type !== 'attribute')) return false;
  const name = left.text;
  const reads = sema.nodes(left.type).filter((n) => n.text === name && n.id !== left.id && !(n.type === 'identifier' && n.parent?.type === 'attribute'));
  if (!reads.length) return false;
  const guards = new Set<number>();
  for (const r of reads) {
    const cmp = r.parent;
    const owner = cmp?.type === 'comparison_operator' ? cmp.parent : null;
    if (owner?.type === 'if_statement' && conditionOf(owner)?.id === cmp!.id && multiGpuOnly(sema, owner, r, name)) {
      guards.add(owner.id);
      continue;
    }
    let inside = false;
    for (let p = r.parent; p && !inside; p = p.parent) if (p.type === 'if_statement' && guards.has(p.id)) inside = true;
    if (!inside) return false;
  }
  return true;
}

function multiGpuOnly(sema: RuleContext['sema'], owner: Node, call: Node, count?: string): boolean {
  const cmp = call.parent;
  if (cmp?.type !== 'comparison_operator') return false;
  const [l, r] = cmp.namedChildren;
  const op = cmp.children.find((c) => c && !c.isNamed)?.text;
  if (l?.id !== call.id || !r || !((op === '>' && r.text === '1') || (op === '>=' && r.text === '2'))) return false;
  if (owner.childrenForFieldName('alternative').some(Boolean)) return false;
  const stmts = owner.childForFieldName('consequence')?.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment') ?? [];
  return stmts.length > 0 && stmts.every((s) => {
    if (s.type !== 'expression_statement') return false;
    const e = s.namedChildren[0];
    if (e?.type === 'string') return true; // a docstring-like note
    if (e?.type === 'assignment') {
      const right = e.childForFieldName('right');
      if (right && /^(true|false|none|integer|string)$/.test(right.type)) return true;
      // `opt.batch_size = opt.batch_size * opt.num_gpu`: a setting scaled by the count
      if (count && right?.type === 'binary_operator' && right.childForFieldName('operator')?.text === '*' && [right.childForFieldName('left'), right.childForFieldName('right')].some((x) => x?.text === count)) return true;
      return right?.type === 'call' && /^torch\.nn\.(parallel\.)?DataParallel$/.test(sema.callee(right) ?? '');
    }
    return e?.type === 'call' && /^(print|warnings\.warn)$|(^|\.)(logging|\w*logger|\w*LOGGER|log)\.\w+$/.test(sema.callee(e) ?? e.childForFieldName('function')?.text ?? '');
  });
}

/** `self.sync_cuda = torch.cuda.is_available()` that nothing in the file reads (guided-diffusion). */
function neverRead(sema: RuleContext['sema'], a: Node): boolean {
  const left = a.childForFieldName('left');
  if (left?.type === 'attribute' && left.childForFieldName('object')?.text === 'self') {
    const attr = left.childForFieldName('attribute')?.text ?? '';
    return !sema.nodes('attribute').some((n) => n.id !== left.id && n.childForFieldName('attribute')?.text === attr);
  }
  if (left?.type === 'identifier' && sema.enclosingFunction(a)) {
    return !sema.identifiersNamed(left.text).some((id) => id.id !== left.id);
  }
  return false;
}

/**
 * `use_fused = device == "cuda"` read only as `fused=use_fused` (llm.c train_gpt2.py), `pinned = device == "cuda"` read
 * only as `pin_memory=pinned` / `non_blocking=pinned`, or as a GradScaler's `enabled=`: XLA has no fused optimizer kernels,
 * pinned host memory and non-blocking copies are CUDA transfer tuning, and bf16 needs no loss scaler, so the non-CUDA value
 * (False) is already right for TPU.
 */
function onlyTransferFlag(sema: RuleContext['sema'], assignment: Node): boolean {
  const left = assignment.childForFieldName('left');
  if (left?.type !== 'identifier') return false;
  // (`non_blocking=non_blocking`: the keyword's own name is no read)
  const uses = sema.identifiersNamed(left.text).filter((id) => id.id !== left.id && !(id.parent?.type === 'keyword_argument' && id.parent.childForFieldName('name')?.id === id.id));
  return uses.length > 0 && uses.every((id) => {
    if (id.parent?.type !== 'keyword_argument' || id.parent.childForFieldName('value')?.id !== id.id) return false;
    const kw = id.parent.childForFieldName('name')?.text ?? '';
    if (/^(fused|pin_memory|non_blocking)$/.test(kw)) return true;
    // `GradScaler(enabled=scaler_enabled)`: off on XLA is what TPU needs (bf16 needs no scaler; TPU303 reports the scaler)
    const call = id.parent.parent?.parent;
    return kw === 'enabled' && call?.type === 'call' && /(^|\.)GradScaler$/.test(sema.callee(call) ?? call.childForFieldName('function')?.text ?? '');
  });
}

/** `gpu_avail = torch.cuda.is_available()` read only inside print/log calls: a banner, nothing is keyed on it. */
function onlyLogged(sema: RuleContext['sema'], a: Node): boolean {
  const left = a.childForFieldName('left');
  if (left?.type !== 'identifier') return false;
  const uses = sema.identifiersNamed(left.text).filter((id) => id.id !== left.id);
  return uses.length > 0 && uses.every((id) => inLogging(sema, id));
}

/** The `else` clause of an `if` chain (or null). */
/** `if device.type == "cuda": device = torch.device("cuda:0")` / `args.device = "cuda:0"` (no else): only refines the CUDA device. */
function remapArm(ctx: RuleContext, owner: Node): boolean {
  if (owner.type !== 'if_statement' || owner.childrenForFieldName('alternative').some(Boolean)) return false;
  const arms = tpuArms(ctx, owner);
  const body = arms?.[1] && arms[0] === null ? arms[1] : null;
  const stmts = (body?.namedChildren ?? []).filter((x): x is Node => !!x && x.type !== 'comment');
  return stmts.length > 0 && stmts.every((st) => {
    const a = st.type === 'expression_statement' ? st.namedChildren[0] : null;
    const right = a?.type === 'assignment' ? a.childForFieldName('right') : null;
    return !!right && (right.type === 'string' || right.type === 'call') && deviceKinds(ctx.model.value(right)).every((k) => k === 'cuda') && deviceKinds(ctx.model.value(right)).length > 0;
  });
}

/** `torch.cuda.amp.GradScaler() if device.type == "cuda" else None`: the CUDA arm is a loss scaler, the other none. */
function scalerTernary(ctx: RuleContext, owner: Node): boolean {
  const scaler = (c: Node | null | undefined) => c?.type === 'call' && /(^|\.)(GradScaler|ShardedGradScaler)$/.test(ctx.sema.callee(c) ?? '');
  const arms = tpuArms(ctx, owner);
  if (owner.type === 'conditional_expression') return !!arms && scaler(arms[1]) && arms[0]?.type === 'none';
  // `if device.type == "cuda": self.scaler = GradScaler()` (no else)
  if (owner.type !== 'if_statement' || !arms || arms[0] !== null || !arms[1]) return false;
  const stmts = arms[1].namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
  return stmts.length > 0 && stmts.every((st) => st.type === 'expression_statement' && st.namedChildren[0]?.type === 'assignment' && scaler(st.namedChildren[0].childForFieldName('right')));
}

function elseOf(chain: Node): Node | null {
  return chain.type === 'if_statement' ? chain.childrenForFieldName('alternative').find((a) => a?.type === 'else_clause') ?? null : null;
}

/** The arms of an `if`/`else` or ternary as [arm a TPU host takes, CUDA arm], from the condition's value on a TPU host. */
function tpuArms(ctx: RuleContext, owner: Node): [Node | null, Node | null] | null {
  if (owner.type === 'conditional_expression') {
    const [a, cond, b] = owner.namedChildren;
    if (!a || !cond || !b) return null;
    const t = tpuTruth(cond, ctx.model);
    return t === null ? null : t ? [a, b] : [b, a];
  }
  if (owner.type !== 'if_statement') return null;
  const alts = owner.childrenForFieldName('alternative').filter((x): x is Node => !!x);
  if (alts.some((x) => x.type === 'elif_clause')) return null;
  const cond = owner.childForFieldName('condition');
  const t = cond ? tpuTruth(cond, ctx.model) : null;
  const body = owner.childForFieldName('consequence');
  const other = alts[0]?.childForFieldName('body') ?? null;
  return t === null ? null : t ? [body, other] : [other, body];
}

/** CUDA statistics a meter reads by reference (not `synchronize`, whose no-op twin leaves a timer without a device wait). */
const CUDA_STAT_REF = /^torch\.cuda\.(\w*memory\w*|mem_get_info|get_device_name|get_device_properties|utilization)$/;

/** `peak = torch.cuda.max_memory_allocated if kind == "cuda" else lambda: 0`: a statistic for a log line, 0 elsewhere. */
function diagnosticRefTernary(ctx: RuleContext, owner: Node): boolean {
  const arms = owner.type === 'conditional_expression' ? tpuArms(ctx, owner) : null;
  if (!arms?.[0] || !arms[1]) return false;
  const [tpu, cuda] = arms;
  const constant = (n: Node): boolean => /^(integer|float|string|none|true|false)$/.test(n.type) ||
    (n.type === 'lambda' && !!n.childForFieldName('body') && constant(n.childForFieldName('body')!));
  return (cuda.type === 'attribute' && CUDA_STAT_REF.test(ctx.sema.resolve(cuda) ?? '')) && constant(tpu);
}

/**
 * `if kind == "cuda": name = torch.cuda.get_device_name(0); flops = peak_flops(name); print(...)` / `else: flops = float("inf")`:
 * the CUDA arm reads the GPU's name or properties for a log line or an MFU estimate (and what it derives from them only),
 * the other arm assigns a constant: nothing about the TPU run is decided.
 */
function diagnosticArms(ctx: RuleContext, owner: Node): boolean {
  const arms = owner.type === 'if_statement' ? tpuArms(ctx, owner) : null;
  if (!arms?.[1]) return false;
  const sema = ctx.sema;
  const [tpu, cuda] = arms;
  const body = (b: Node | null) => (b?.namedChildren ?? []).filter((x): x is Node => !!x && x.type !== 'comment');
  const derived = new Set<string>();
  let probed = false;
  const okCall = (c: Node): boolean => {
    const q = sema.callee(c) ?? c.childForFieldName('function')?.text ?? '';
    if (CUDA_STAT_REF.test(q)) return (probed = true);
    if (logCall(sema, c) || /^(round|int|float|str|len|max|min)$/.test(q)) return true;
    // a helper of what the arm already read: `get_peak_flops(gpu_device_name)`
    const args = c.childForFieldName('arguments')?.namedChildren.filter((x): x is Node => !!x) ?? [];
    return args.length > 0 && args.every((x) => (x.type === 'identifier' && derived.has(x.text)) || /^(integer|float|string)$/.test(x.type));
  };
  const cudaOk = body(cuda).length > 0 && body(cuda).every((s) => {
    if (s.type !== 'expression_statement') return false;
    const e = s.namedChildren[0];
    if (e?.type === 'call') return logCall(sema, e);
    if (e?.type !== 'assignment') return false;
    const left = e.childForFieldName('left');
    const right = e.childForFieldName('right');
    if (left?.type !== 'identifier' || right?.type !== 'call') return false;
    const calls = [right, ...sema.callsWithin(right)];
    if (!calls.every(okCall)) return false;
    derived.add(left.text);
    return true;
  });
  if (!cudaOk || !probed) return false;
  const names = new Set<string>();
  const tpuOk = body(tpu).every((s) => {
    const e = s.type === 'expression_statement' ? s.namedChildren[0] : null;
    if (e?.type === 'call') return logCall(sema, e);
    if (e?.type !== 'assignment') return false;
    const left = e.childForFieldName('left');
    const right = e.childForFieldName('right');
    if (left?.type === 'identifier') names.add(left.text);
    return !!right && (/^(integer|float|string|none)$/.test(right.type) || (right.type === 'call' && /^float$/.test(right.childForFieldName('function')?.text ?? '')));
  });
  return tpuOk && [...names].every((n) => derived.has(n));
}

/**
 * `if kind != "cuda": print("fp8 training needs CUDA, ignoring --fp8")` / `else: <CUDA-only feature>`: the arm a TPU host
 * takes only says that a CUDA-only feature is skipped, which is what TPU needs.
 */
function declinedOffCuda(ctx: RuleContext, owner: Node): boolean {
  const arms = owner.type === 'if_statement' ? tpuArms(ctx, owner) : null;
  const tpu = arms?.[0];
  if (!tpu || !arms?.[1]) return false;
  const sema = ctx.sema;
  const stmts = tpu.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
  return stmts.length > 0 && stmts.every((s) => {
    const e = s.type === 'expression_statement' ? s.namedChildren[0] : null;
    if (e?.type !== 'call') return false;
    return logCall(sema, e) && /\b(cuda|gpu)\b/i.test(e.childForFieldName('arguments')?.text ?? '');
  });
}

/**
 * `if not torch.cuda.is_available(): return None` at the top of a function that then reads the GPU's compute capability
 * (or imports a CUDA-only kernel library): a probe for an optional CUDA kernel; without CUDA the caller takes its portable
 * fallback, which is TPU's path too.
 */
function cudaFeatureProbe(ctx: RuleContext, owner: Node): boolean {
  const sema = ctx.sema;
  if (owner.childrenForFieldName('alternative').some(Boolean)) return false;
  const cond = owner.childForFieldName('condition');
  if (!cond || tpuTruth(cond, ctx.model) !== true) return false;
  const body = (owner.childForFieldName('consequence')?.namedChildren ?? []).filter((x): x is Node => !!x && x.type !== 'comment');
  const ret = body[0];
  if (body.length !== 1 || ret?.type !== 'return_statement' || (ret.namedChildren[0] && !/^(none|false)$/.test(ret.namedChildren[0].type))) return false;
  const fn = sema.enclosingFunction(owner);
  const block = owner.parent;
  if (!fn || block?.parent?.id !== fn.id) return false;
  const rest = block.namedChildren.filter((x): x is Node => !!x && x.startIndex > owner.startIndex);
  return rest.some((s) => sema.callsWithin(s).some((c) => /^torch\.cuda\.(get_device_capability|get_device_properties)$/.test(sema.callee(c) ?? '')) || usesCudaOnlyKernel(sema, s));
}

/** A print/log call, also a project's rank-zero print helper (`print0(...)`, imported: its callee is the module path). */
function logCall(sema: RuleContext['sema'], c: Node): boolean {
  const text = c.childForFieldName('function')?.text ?? '';
  return LOGGING.test(sema.callee(c) ?? text) || LOGGING.test(text) || /^print\w*$|^\w+_print$/.test(text);
}

/** Inside a print/log call: a diagnostic, not a decision. */
function inLogging(sema: RuleContext['sema'], node: Node): boolean {
  for (let p = node.parent; p && p.type !== 'expression_statement' && p.type !== 'block'; p = p.parent) {
    if (p.type === 'call' && logCall(sema, p)) return true;
  }
  return false;
}

/**
 * `if torch.cuda.is_available(): device_type = "cuda"` … `else: device_type = "cpu"`: an `if` chain that assigns a device
 * string to a name that is no device holder of TPU102 (`device_type`, `backend_device`), ending in a CPU arm. Returns the name.
 */
function deviceTypePicker(ctx: RuleContext, owner: Node): string | null {
  const arm = (b: Node | null | undefined): { name: string; value: string } | null => {
    const body = (b?.namedChildren ?? []).filter((s): s is Node => !!s && s.type !== 'comment');
    const a = body.length === 1 && body[0].type === 'expression_statement' ? body[0].namedChildren[0] : null;
    const left = a?.type === 'assignment' ? a.childForFieldName('left') : null;
    const right = a?.childForFieldName('right');
    if (!left || (left.type !== 'identifier' && left.type !== 'attribute') || right?.type !== 'string') return null;
    return { name: left.text, value: stringContent(right) ?? '' };
  };
  const first = arm(owner.childForFieldName('consequence'));
  if (!first || !/^cuda(:\d+)?$/.test(first.value) || DEVICE_HOLDER.test(first.name.split('.').pop() ?? '')) return null;
  const alts = owner.childrenForFieldName('alternative').filter((a): a is Node => !!a);
  const last = alts[alts.length - 1];
  if (last?.type !== 'else_clause') return null;
  const arms = alts.map((a) => arm(a.type === 'else_clause' ? a.childForFieldName('body') : a.childForFieldName('consequence')));
  if (arms.some((x) => !x || x.name !== first.name)) return null;
  if (arms[arms.length - 1]?.value !== 'cpu') return null;
  // a helper that returns the string to its callers (read here only by `return` and log lines): the sinks are elsewhere,
  // so TPU102's same-scope sink search does not see it
  const fn = ctx.sema.enclosingFunction(owner);
  if (!fn || !/^[A-Za-z_]\w*$/.test(first.name)) return null;
  const reads = ctx.sema.identifiersNamed(first.name).filter((id) => id.startIndex > owner.endIndex && ctx.sema.enclosingFunction(id)?.id === fn.id);
  const returned = reads.some((id) => id.parent?.type === 'return_statement');
  return returned && reads.every((id) => id.parent?.type === 'return_statement' || inLogging(ctx.sema, id)) ? first.name : null;
}

/** TPU102's device holders (`device`, `self.device`, `train_device`): it reports their CUDA-or-CPU pickers. */
const DEVICE_HOLDER = /^(\w+_)?device$/i;

/** `"cuda" if torch.cuda.is_available() else "cpu"` (or the `if`/`else` pair): TPU102 rewrites these. */
function isDevicePicker(ctx: RuleContext, owner: Node): boolean {
  const sema = ctx.sema;
  if (owner.type === 'conditional_expression') {
    const [a, , b] = owner.namedChildren;
    return [a, b].some((x) => !!x && ctx.model.namesCuda(x));
  }
  if (owner.type === 'if_statement') {
    if (deviceTypePicker(ctx, owner)) return false;
    const body = (owner.childForFieldName('consequence')?.namedChildren ?? []).filter((s): s is Node => !!s && s.type !== 'comment');
    return body.length > 0 && body.every((s) => {
      const a = s.namedChildren[0];
      return s.type === 'expression_statement' && a?.type === 'assignment' && ctx.model.namesCuda(a.childForFieldName('right'));
    });
  }
  return false;
}

/** `X == "cuda"`, `X.type != "cuda"`, `"cuda" in X`, `"cuda" in str(X)` where X is a device. */
function cudaTypeCheck(ctx: RuleContext, cmp: Node): { operand: Node; op: string } | null {
  const parts = cmp.namedChildren.filter((c): c is Node => !!c);
  if (parts.length !== 2) return null;
  const op = cmp.children.find((c) => c && !c.isNamed)?.text ?? '';
  const cudaStr = (n: Node) => n.type === 'string' && /^cuda(:\d+)?$/.test(stringContent(n) ?? '');
  const deviceish = (n: Node): boolean => {
    if (n.type === 'call' && n.childForFieldName('function')?.text === 'str') return !!callArgs(n).positional[0] && deviceish(callArgs(n).positional[0]);
    if (n.type === 'attribute' && n.childForFieldName('attribute')?.text === 'type') return true;
    if (n.type === 'identifier' || n.type === 'attribute') return DEVICE_NAME.test(n.text) || ctx.model.namesCuda(n);
    return false;
  };
  const [l, r] = parts;
  if ((op === '==' || op === '!=') && ((cudaStr(r) && deviceish(l)) || (cudaStr(l) && deviceish(r)))) return { operand: cudaStr(r) ? l : r, op };
  if ((op === 'in' || /not\s+in/.test(cmp.text)) && cudaStr(l) && deviceish(r)) return { operand: r, op: 'in' };
  return null;
}

/** `"cuda" if <check> else "cpu"` → `"xla" if <xla check> else (<original>)`. */
function ternaryFix(ctx: RuleContext, tern: Node, cmp: Node, operand: Node) {
  const [a, cond, b] = tern.namedChildren;
  if (!a || !b || cond?.id !== cmp.id || a.type !== 'string' || b.type !== 'string' || mentionsXla(chainOf(tern).text)) return null;
  if (!/^cuda$/.test(stringContent(a) ?? '') || /!=|\bnot\s+in\b/.test(cmp.text)) return null;
  const kind = ctx.idiom.profile === 'torchtpu' ? 'tpu' : 'xla';
  const q = /^[a-zA-Z]*(['"])/.exec(a.text)?.[1] ?? '"';
  const subject = operand.type === 'call' ? operand.text : cmp.text.includes(' in ') ? `str(${operand.text})` : operand.text;
  const test = cmp.text.includes(' in ') ? `${q}${kind}${q} in ${subject}` : `${subject} == ${q}${kind}${q}`;
  return {
    edits: [{ start: tern.startIndex, end: tern.endIndex, text: `${q}${kind}${q} if ${test} else (${tern.text})` }],
    applicability: 'unsafe' as const,
    title: `Add an \`${kind}\` arm`,
  };
}

/** `name` (a process count) is the `nprocs` of a launcher call in the file (`mp.spawn(fn, args, nprocs)`, `nprocs=name`, `nprocs=name * k`). */
/** The file's calls of a process launcher (`mp.spawn`, `start_processes`, `launch`), in document order: once per file (asked per assignment). */
const launchMemo = new WeakMap<object, Node[]>();
function processLaunches(ctx: RuleContext): Node[] {
  let hit = launchMemo.get(ctx.sema);
  if (!hit) {
    hit = ctx.sema.nodes('call').filter((c) => /(^|\.)(spawn|start_processes|launch)$/.test(ctx.sema.callee(c) ?? c.childForFieldName('function')?.text ?? ''));
    launchMemo.set(ctx.sema, hit);
  }
  return hit;
}

function countsProcesses(ctx: RuleContext, name: string): boolean {
  const mentions = (n: Node | null | undefined) => !!n && (n.type === 'identifier' ? n.text === name : ctx.sema.within('identifier', n).some((i) => i.text === name));
  for (const c of processLaunches(ctx)) {
    const { positional, keywords } = callArgs(c);
    if (mentions(kwValue(keywords.get('nprocs'))) || mentions(positional[2])) return true;
  }
  return false;
}

/** What TPU103 reports on a `torch.cuda.is_available()` / `is_bf16_supported()` call (null: nothing), memoised per call. */
export function availabilityFinding(ctx: RuleContext, call: Node): AvailabilityFinding | null {
  let m = findingMemo.get(ctx.sema);
  if (!m) findingMemo.set(ctx.sema, (m = new Map()));
  if (m.has(call.id)) return m.get(call.id)!;
  const r = availabilityFindingOf(ctx, call);
  m.set(call.id, r);
  return r;
}
const findingMemo = new WeakMap<object, Map<number, ReturnType<typeof availabilityFindingOf>>>();

/** TPU103's finding on an availability check; `flag` when it reports a CUDA flag whose `if <flag>:` guards are the related locations. */
export interface AvailabilityFinding { message: string; severity?: 'error'; flag?: true; related?: { start: number; end: number; message: string }[] }

function availabilityFindingOf(ctx: RuleContext, call: Node): AvailabilityFinding | null {
  const sema = ctx.sema;
  const callee = sema.callee(call);
  const picker = (owner: Node) => isDevicePicker(ctx, owner);
  // a check under a CUDA-only guard (`if kind == "cuda": assert torch.cuda.is_available()`): a TPU host never gets
  // here (a flag assigned there, `is_avail = torch.cuda.is_available()`, is still reported: callers read it)
  const decision = conditionOwner(call);
  if (decision && cudaGuarded(call)) return null;
  const owner = decision?.owner ?? null;
  if (bf16ProbeRaises(ctx, call) && !(owner && xlaArmed(sema, owner)) && !sema.inXlaAwareBranch(call)) {
    return {
      severity: 'error',
      message: '`torch.cuda.is_bf16_supported()` raises on a TPU host with torch < 2.5: it reads the current CUDA device (it returns False without CUDA only from torch 2.5)',
    };
  }
  if (!owner) {
    // `use_cuda = torch.cuda.is_available()`, `args.cuda = not args.no_cuda and torch.cuda.is_available()`: a flag that later
    // decisions read (not in migrated files)
    const a = conjunctOf(call);
    if (a?.type !== 'assignment' || sema.xlaAware) return null;
    // an `and` of other terms names a CUDA flag only when it says so (`args.cuda`, `use_gpu`); `opt.half = torch.cuda.is_available()
    // and ...` is a dtype choice whose CPU value (fp32) is fine on TPU
    if (a.childForFieldName('right')?.id !== call.id && !/cuda|gpu/i.test(a.childForFieldName('left')?.text ?? '')) return null;
    if (sema.inXlaAwareBranch(call) || neverRead(sema, a) || onlyLogged(sema, a)) return null;
    const flag = a.childForFieldName('left')?.text ?? '';
    // `cuda_condition = torch.cuda.is_available() and with_cuda` … `torch.device("cuda:0" if cuda_condition else "cpu")`: the
    // device picker it feeds is the finding (TPU102, an error with a fix); the flag would repeat it
    if (feedsDevicePicker(sema, a, flag)) return null;
    // `if args.cuda: model.cuda(); features = features.cuda()`: on a TPU host those moves are skipped and the program trains
    // on the CPU (an error, like a one-line picker); the guards that skip them are the related locations
    const guards = callee === 'torch.cuda.is_available' ? flagGuards(sema, a, flag) : [];
    if (guards.length) {
      return {
        severity: 'error',
        flag: true,
        message: `\`${flag}\` is False on a TPU host: the \`.cuda()\` moves under \`if ${flag}:\` are skipped, so the program silently runs on the CPU`,
        related: guards.map((g) => ({ start: g.startIndex, end: g.endIndex, message: `skipped on a TPU host: \`${flag}\` is False` })),
      };
    }
    return { message: `\`${flag}\` is False on a TPU host: code keyed on it takes the non-TPU path` };
  }
  if (xlaArmed(sema, owner) || picker(owner) || guardsCudaExtrasOnly(sema, owner, ctx.model)) return null;
  // `if not torch.cuda.is_available(): sys.exit("CUDA is required")`, `assert torch.cuda.is_available()`, dino's
  // `elif torch.cuda.is_available(): ... else: print("Does not support training without GPU."); sys.exit(1)`: the script
  // stops on a TPU host before it trains (an error, not a silent path choice)
  const stop = callee === 'torch.cuda.is_available' ? stopsWithoutCuda(ctx, owner) : null;
  if (stop) {
    return {
      severity: 'error',
      message: `\`torch.cuda.is_available()\` is False on a TPU host: ${stop === 'assert' ? 'the assertion fails' : stop === 'raise' ? 'the branch it takes raises' : 'the branch it takes exits'}, so the script stops before it trains`,
    };
  }
  // `if torch.cuda.is_available(): device_type = "cuda"` / `elif mps: ... = "mps"` / `else: ... = "cpu"` (a device-type
  // string that TPU102's device holders do not cover): the picker has no XLA arm, so a TPU host silently gets the CPU
  const typePick = owner.type === 'if_statement' ? deviceTypePicker(ctx, owner) : null;
  if (typePick) {
    return {
      severity: 'error',
      message: `\`torch.cuda.is_available()\` is False on a TPU host: \`${typePick}\` gets no XLA arm and falls to the CPU, so the program silently runs on the CPU`,
    };
  }
  if (owner.type === 'if_statement' && (optionalCudaArms(sema, owner) || cudaKernelArm(sema, owner) || logFormatArms(sema, owner) || cudaFeatureProbe(ctx, owner))) return null;
  if (owner.type === 'conditional_expression' && (inLogging(sema, owner) || diagnosticTernary(sema, owner) || autocastTernary(ctx, owner))) return null;
  // `if torch.cuda.is_available(): model = model.cuda()`: the arm only places work on CUDA; a TPU host skips it and trains on
  // the CPU (an error, like the one-line pickers). One finding, here: the skipped `.cuda()` calls are its related locations
  // (TPU101 leaves them: they never run on a TPU host). Only when what they move is known to be on the host (a tensor made
  // without a device, a module): `alpha = torch.ones_like(logits); if torch.cuda.is_available(): alpha = alpha.cuda()` is
  // already on the XLA device when `logits` is, so nothing stays on the CPU and each move keeps its own TPU101 (with its fix)
  const moves = callee === 'torch.cuda.is_available' ? guardedCudaMoves(sema, owner, call) : [];
  if (moves.length && moves.every((m) => movesHostValue(ctx, m))) {
    return {
      severity: 'error',
      message: `\`torch.cuda.is_available()\` is False on a TPU host: the ${moves.length === 1 ? '`.cuda()` move it guards is' : `${moves.length} \`.cuda()\` moves it guards are`} skipped, so this work silently stays on the CPU`,
      related: moves.map((m) => ({ start: m.startIndex, end: m.endIndex, message: 'skipped on a TPU host: stays on the CPU' })),
    };
  }
  const message =
    callee === 'torch.cuda.is_bf16_supported'
      ? `\`torch.cuda.is_bf16_supported()\` is False on a TPU host (torch >= 2.5 returns False without CUDA): the bfloat16 choice silently goes to ${falseArm(owner) ? `\`${short(falseArm(owner)!.text, 30)}\`` : 'its float16 or float32 path'}`
      : owner.type === 'assert_statement'
        ? '`torch.cuda.is_available()` is asserted: this fails on a TPU host'
        : '`torch.cuda.is_available()` is False on a TPU host: this takes the non-TPU path (CPU device, no AMP, wrong backend)';
  return { message };
}

/** The arm a ternary or `if` takes when its condition is False (a ternary's `else` value; null for statements). */
function falseArm(owner: Node): Node | null {
  if (owner.type !== 'conditional_expression') return null;
  const cond = owner.namedChildren[1];
  const negated = cond?.type === 'not_operator';
  return (negated ? owner.namedChildren[0] : owner.namedChildren[2]) ?? null;
}

/** The `a % n` / `a / n` / `a // n` (through parentheses) whose divisor is `call`, else null. */
function divisorOf(call: Node): Node | null {
  let n: Node = call;
  while (n.parent?.type === 'parenthesized_expression') n = n.parent;
  const p = n.parent;
  return p?.type === 'binary_operator' && /^(%|\/|\/\/)$/.test(p.childForFieldName('operator')?.text ?? '') && p.childForFieldName('right')?.id === n.id ? p : null;
}

/** Calls that end the process: `sys.exit(...)`, `exit()`, `quit()`, `os._exit(1)`. */
const EXIT_CALL = /^(sys\.exit|exit|quit|os\._exit)$/;

/**
 * What a TPU host does at this CUDA check when it stops the program: 'assert' (`assert torch.cuda.is_available()`),
 * 'raise' or 'exit' when the arm a TPU host takes (`if not torch.cuda.is_available():`, or the `else:` after
 * `[el]if torch.cuda.is_available():`) raises or exits at its top level. Null otherwise, and for a helper that probes an
 * optional CUDA kernel (its callers handle the failure: `if not torch.cuda.is_available(): raise ImportError` next to a
 * compute-capability read or a CUDA-only kernel import).
 */
function stopsWithoutCuda(ctx: RuleContext, owner: Node): 'assert' | 'raise' | 'exit' | null {
  const sema = ctx.sema;
  const fn = sema.enclosingFunction(owner);
  if (fn && (usesCudaOnlyKernel(sema, fn) || sema.callsWithin(fn).some((c) => /^torch\.cuda\.(get_device_capability|get_device_properties)$/.test(sema.callee(c) ?? '')))) return null;
  if (owner.type === 'assert_statement') return tpuTruth(owner.namedChildren[0]!, ctx.model) === false ? 'assert' : null;
  if (owner.type !== 'if_statement' && owner.type !== 'elif_clause') return null;
  const cond = owner.childForFieldName('condition');
  const t = cond ? tpuTruth(cond, ctx.model) : null;
  let arm: Node | null = null;
  if (t === true) arm = owner.childForFieldName('consequence');
  else if (t === false) {
    // the next arm of the chain, when it is the `else:` (an `elif` after it decides again)
    const chain = chainOf(owner);
    const alts = chain.childrenForFieldName('alternative').filter((a): a is Node => !!a);
    const next = owner.type === 'if_statement' ? alts[0] : alts[alts.findIndex((a) => a.id === owner.id) + 1];
    arm = next?.type === 'else_clause' ? next.childForFieldName('body') : null;
  }
  for (const s of arm?.namedChildren ?? []) {
    if (s?.type === 'raise_statement') return 'raise';
    const e = s?.type === 'expression_statement' ? s.namedChildren[0] : null;
    if (e?.type === 'call' && EXIT_CALL.test(sema.callee(e) ?? e.childForFieldName('function')?.text ?? '')) return 'exit';
  }
  return null;
}

/** The flag is the condition of a CUDA-or-CPU device choice after its assignment (`"cuda" if flag else "cpu"`, `if flag: device = torch.device("cuda", 0)`). */
function feedsDevicePicker(sema: RuleContext['sema'], a: Node, flag: string): boolean {
  if (!/^[A-Za-z_][\w.]*$/.test(flag)) return false;
  const cudaText = /["']cuda/;
  for (const t of sema.nodes('conditional_expression')) {
    if (t.startIndex < a.endIndex) continue;
    const [x, cond] = t.namedChildren;
    if (cond?.text !== flag || !x || !cudaText.test(x.text)) continue;
    // TPU102 reports the picker when it builds a device (`torch.device(<ternary>)`) or a device-named value
    const p = t.parent?.type === 'parenthesized_expression' ? t.parent.parent : t.parent;
    const call = p?.type === 'argument_list' ? p.parent : null;
    if (call && sema.callee(call) === 'torch.device') return true;
    if (p?.type === 'assignment' && DEVICE_NAME.test(p.childForFieldName('left')?.text ?? '')) return true;
  }
  for (const ifs of [...sema.nodes('if_statement'), ...sema.nodes('elif_clause')]) {
    if (ifs.startIndex < a.endIndex || ifs.childForFieldName('condition')?.text !== flag) continue;
    const arm = ifs.childForFieldName('consequence');
    if (arm && sema.callsWithin(arm).some((c) => sema.callee(c) === 'torch.device' && cudaText.test(c.childForFieldName('arguments')?.text ?? ''))) return true;
  }
  return false;
}

/** The assignment whose right side is `call` or has it as an `and` conjunct (`not args.no_cuda and torch.cuda.is_available()`). */
function conjunctOf(call: Node): Node | null {
  let n: Node = call;
  for (let p = n.parent; p; n = p, p = p.parent) {
    if (p.type === 'parenthesized_expression' || (p.type === 'boolean_operator' && p.childForFieldName('operator')?.text === 'and')) continue;
    return p.type === 'assignment' && p.childForFieldName('right')?.id === n.id ? p : null;
  }
  return null;
}

/**
 * The `if <flag>:` / `if <flag> and ...:` conditions (same flag text) whose arm moves work with `.cuda()`: after the
 * assignment, or inside a function when the flag is set at module level (Horovod's pytorch_mnist example defines
 * `def main(args): ... if args.cuda: data.cuda()` above `args.cuda = not args.no_cuda and torch.cuda.is_available()` in
 * its `__main__` block: the functions run after it).
 */
function flagGuards(sema: RuleContext['sema'], a: Node, flag: string): Node[] {
  if (!/^[A-Za-z_][\w.]*$/.test(flag)) return [];
  const out: Node[] = [];
  const moduleLevel = !sema.enclosingFunction(a);
  for (const ifs of [...sema.nodes('if_statement'), ...sema.nodes('elif_clause')]) {
    if (ifs.startIndex < a.endIndex && !(moduleLevel && sema.enclosingFunction(ifs))) continue;
    // `if(train_on_gpu):`, `if (args.cuda and not fp16):`: the parentheses are not part of the test
    const raw = ifs.childForFieldName('condition');
    const cond = conditionOf(ifs);
    const arm = ifs.childForFieldName('consequence');
    if (!cond || !arm) continue;
    const conj = cond.type === 'boolean_operator' && cond.childForFieldName('operator')?.text === 'and' ? [cond.childForFieldName('left'), cond.childForFieldName('right')] : [cond];
    if (!conj.some((c) => c?.text === flag)) continue;
    if (sema.callsWithin(arm).some((c) => cudaMoveIn(sema, c, arm))) out.push(raw!);
  }
  return out;
}

/**
 * The `.cuda()` moves of the arm that `is_available()` opens: `if [... and] torch.cuda.is_available() [and ...]:` (a conjunct,
 * not negated, not under `or`), the calls whose nearest block is that arm.
 */
function guardedCudaMoves(sema: RuleContext['sema'], owner: Node, call: Node): Node[] {
  if (owner.type !== 'if_statement' && owner.type !== 'elif_clause') return [];
  const cond = owner.childForFieldName('condition');
  if (!cond) return [];
  for (let n: Node = call; n.id !== cond.id; ) {
    const p = n.parent;
    if (!p || !(p.type === 'parenthesized_expression' || (p.type === 'boolean_operator' && p.childForFieldName('operator')?.text === 'and'))) return [];
    n = p;
  }
  const arm = owner.childForFieldName('consequence');
  if (!arm) return [];
  return sema.callsWithin(arm).filter((c) => cudaMoveIn(sema, c, arm));
}

/** The receiver of a `.cuda()` move is known to live on the host: a CPU tensor, or a module (built on the CPU unless moved). */
function movesHostValue(ctx: RuleContext, move: Node): boolean {
  const recv = move.childForFieldName('function')?.childForFieldName('object');
  if (!recv) return false;
  const v = ctx.model.value(recv);
  return (v.kind === 'tensor' && v.where === 'host') || v.kind === 'module';
}

/** A `.cuda()` method call (on anything but the `torch` module) that runs in `arm` (also in its loops and nested `if`s, not in a nested function). */
export function cudaMoveIn(sema: RuleContext['sema'], c: Node, arm: Node): boolean {
  const f = c.childForFieldName('function');
  if (f?.type !== 'attribute' || f.childForFieldName('attribute')?.text !== 'cuda') return false;
  const recv = f.childForFieldName('object');
  if (!recv || sema.resolve(recv) === 'torch') return false;
  return blocksAround(c).some((b) => b.id === arm.id);
}

/** The blocks that hold `n`, innermost first, up to its function, class or lambda (memoised hops: one per nested block). */
export function blocksAround(n: Node): Node[] {
  const out: Node[] = [];
  for (let b = nearestAncestor(n, BLOCKS)?.ancestor; b && b.type === 'block'; b = nearestAncestor(b, BLOCKS)?.ancestor) {
    out.push(b);
    const p = b.parent?.type;
    if (p === 'function_definition' || p === 'class_definition' || out.length > 8) break;
  }
  return out;
}
const BLOCKS: ReadonlySet<string> = new Set(['block', 'module', 'lambda']);
