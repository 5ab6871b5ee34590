import { defineRule } from '../../core/rule';
import { deleteStatement, replace } from '../../core/edits';
import type { Node } from '../../core/parse';
import type { FixDraft, RuleContext } from '../../core/rule';
import { callArgs, enclosingStatement, methodName, nearestAncestor, receiver, stringContent } from '../../core/semantics';
import { asPrimary, isFloat16 } from './util';
import { cudaOnly } from '../../model/guards';

const CUDA_SCALERS = new Set(['torch.cuda.amp.GradScaler', 'torch.cuda.amp.grad_scaler.GradScaler']);
// FSDP's ShardedGradScaler is the CUDA scaler with a cross-rank inf check: torch 1.13 subclasses torch.cuda.amp's
// GradScaler (torch/distributed/fsdp/sharded_grad_scaler.py:7,32), torch 2.x torch.amp's with `device="cuda"` by default
const AMP_SCALERS = new Set(['torch.amp.GradScaler', 'torch.GradScaler', 'torch.amp.grad_scaler.GradScaler', 'torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler']);
const XLA_SCALERS = new Set(['torch_xla.amp.GradScaler', 'torch_xla.amp.grad_scaler.GradScaler']);
const REWRITABLE = new Set(['scale', 'unscale_', 'step', 'update']);

/** Whether the file keeps float16 somewhere (a dtype, `.half()`, a "float16" string): then the scaler may still matter on CUDA. */
function keepsFloat16(ctx: RuleContext): boolean {
  if (ctx.sema.nodes('attribute').some((a) => isFloat16(ctx, a))) return true;
  if (ctx.sema.nodes('call').some((c) => methodName(c) === 'half')) return true;
  return ctx.sema.nodes('string').some((s) => /^(float16|fp16|16-mixed|16)$/.test(stringContent(s) ?? ''));
}

/** An expression statement that is exactly this call. */
function wholeStatement(call: Node): Node | null {
  const stmt = enclosingStatement(call);
  return stmt.type === 'expression_statement' && stmt.namedChildren.length === 1 && stmt.namedChildren[0]?.id === call.id ? stmt : null;
}

export default defineRule({
  id: 'TPU303',
  name: 'grad-scaler',
  title: 'GradScaler and loss scaling',
  severity: 'warning',
  step: 5,
  effort: 1,
  message: 'Loss scaling is not needed with bf16 on TPU',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Remove the GradScaler' },
  triggers: ['GradScaler', '["scale"]', "['scale']", 'backward'],
  docs: {
    what:
      'Checks for `torch.cuda.amp.GradScaler`, `torch.amp.GradScaler`, `torch.GradScaler`, FSDP\'s `ShardedGradScaler` (a CUDA scaler by default) and `torch_xla.amp.GradScaler` (through aliases), and for the uses of the scaler ' +
      'they create: `scaler.scale(loss).backward()`, `scaler.unscale_(opt)`, `scaler.step(opt)`, `scaler.update()`. ' +
      'Hand-built float16 loss scaling is reported too (warning, no fix): a backward of the loss times a power of two (`(loss * 2 ** self.lg_loss_scale).backward()`, ' +
      'or through a local bound to one, as in openai improved-diffusion\'s train_util.py), or times a scale-like name (`loss_scale`) in a class or module that checks ' +
      'the gradients with `torch.isfinite`/`isinf`/`isnan`; those checks are its related locations (TPU202 reports their per-parameter host reads). ' +
      'Also checks `scaler.state_dict()["scale"]` on a CUDA scaler, or on a class of the project that wraps one and returns its `state_dict()` ' +
      '(an error: the disabled scaler\'s state is `{}`, so the read raises KeyError; fixed, safely, to `.get("scale", 1.0)`).',
    why:
      'TPUs train in bfloat16, which needs no loss scaling (AMP:51-52). The CUDA scaler warns "torch.cuda.amp.GradScaler is enabled, but CUDA is not available. Disabling." ' +
      'and its `step()` then just calls `optimizer.step()` (PT:torch/amp/grad_scaler.py), so on a TPU host it is dead code. An enabled scaler reads `found_inf` ' +
      'with `.item()` every step (`_maybe_opt_step`), a host sync (TPU201). `torch_xla.amp.GradScaler` was removed in torch_xla 2.9 (commit 647804c).',
    example:
      'scaler = torch.cuda.amp.GradScaler()\nscaler.scale(loss).backward()\nscaler.unscale_(opt)\nclip_grad_norm_(model.parameters(), 1.0)\nscaler.step(opt)\nscaler.update()',
    useInstead: 'loss.backward()\nclip_grad_norm_(model.parameters(), 1.0)\nopt.step()  # xm.optimizer_step(opt) in multi-process XLA training (TPU505)',
    fixSafety:
      'Safe for the CUDA scaler (`torch.cuda.amp.GradScaler`, `GradScaler("cuda")`, `torch.amp.GradScaler()` whose default device is CUDA) in a file that no longer uses ' +
      'float16: on a TPU host it is a disabled pass-through, so `scaler.scale(loss)` → `loss`, `scaler.step(opt)` → `opt.step()` and deleting `unscale_`/`update` keep behaviour. ' +
      'Unsafe when float16 is still used (on CUDA the scaler then prevents gradient underflow) and for `torch_xla.amp.GradScaler` (it scaled for real). ' +
      'In the dual-path style the scaler always stays (CUDA keeps its float16 autocast and its loss scaling, CPU its disabled scaler) and is only disabled on XLA ' +
      '(`enabled=not accel.is_xla()`, or `enabled=(X) and not accel.is_xla()` with an existing `enabled=X`; safe); its uses are left as they are. ' +
      'The constructor is only deleted when the scaler has no other use (`state_dict()`, `get_scale()`, passed as an argument, …); those are left for you to remove.',
    sources: [
      'AMP (docs/source/perf/amp.md:51-52): "Since TPU\'s use bfloat16 mixed precision, gradient scaling is not necessary"',
      'PT:torch/amp/grad_scaler.py (`__init__` disables without CUDA; `step` falls through to `optimizer.step()`; `_maybe_opt_step` calls `.item()`; `state_dict` returns `{}` when disabled, `get_scale` 1.0)',
      'torch 1.13 torch/cuda/amp/grad_scaler.py:472 `state_dict`: `{...} if self._enabled else {}` (checked: `GradScaler().state_dict() == {}` without CUDA)',
      'pytorch/xla commit 647804c (removed torch_xla.amp.GradScaler in 2.9)',
      'torch 1.13 torch/distributed/fsdp/sharded_grad_scaler.py:7,32 (`ShardedGradScaler(GradScaler)` of torch.cuda.amp; torch 2.x: of torch.amp with `device="cuda"` by default)',
      'AMP:53-55 (torch_xla.amp.syncfree optimizers take found_inf; unneeded with plain bf16)',
    ],
    torchtpu: 'Same fix: bf16 on the tpu device needs no scaler either.',
  },
  check(ctx) {
    reportManualLossScaling(ctx);
    const fp16 = keepsFloat16(ctx);
    // the calls that can be a scaler's constructor (the test below, by callee alone)
    for (const ctor of ctx.sema.callsResolvedWhere((q) => XLA_SCALERS.has(q) || CUDA_SCALERS.has(q) || AMP_SCALERS.has(q) || /\.ShardedGradScaler$/.test(q))) {
      const q = ctx.sema.callee(ctor) ?? '';
      const xla = XLA_SCALERS.has(q);
      // a ShardedGradScaler re-exported by a project module (`from dinov2.fsdp import ShardedGradScaler`) or fairscale's
      // (`fairscale.optim.grad_scaler.ShardedGradScaler`, a subclass of torch.cuda.amp's GradScaler): the CUDA scaler too
      const sharded = /\.ShardedGradScaler$/.test(q) && !AMP_SCALERS.has(q) && !callArgs(ctor).keywords.has('device');
      if (!xla && !CUDA_SCALERS.has(q) && !AMP_SCALERS.has(q) && !sharded) continue;
      if (ctx.sema.inXlaAwareBranch(ctor) && !xla) continue;
      // `GradScaler() if self.device.type == 'cuda' else None`: built only on the CUDA path, so already off on XLA
      if (!xla && cudaOnly(ctor, ctx.model, { guess: false })) continue;
      const { positional, keywords } = callArgs(ctor);
      let cuda = CUDA_SCALERS.has(q) || sharded;
      if (AMP_SCALERS.has(q)) {
        const dev = keywords.get('device')?.childForFieldName('value') ?? (positional[0]?.type === 'string' ? positional[0] : null);
        cuda = !dev || /^cuda(:\d+)?$/.test(stringContent(dev) ?? '');
      }
      const applicability = cuda && !fp16 ? 'safe' : 'unsafe';

      // the name the scaler is bound to: `scaler = GradScaler()` / `self.scaler = GradScaler()`
      const assign = ctor.parent?.type === 'assignment' && ctor.parent.childForFieldName('right')?.id === ctor.id ? ctor.parent : null;
      const left = assign?.childForFieldName('left');
      const target = left && (left.type === 'identifier' || left.type === 'attribute') ? left.text : null;

      let otherUses = target === null;
      const uses: { call: Node; meth: string }[] = [];
      if (target) {
        const refs = [...ctx.sema.nodes(left!.type === 'identifier' ? 'identifier' : 'attribute')].filter((n) => n.text === target && n.id !== left!.id);
        for (const ref of refs) {
          const attr = ref.parent?.type === 'attribute' && ref.parent.childForFieldName('object')?.id === ref.id ? ref.parent : null;
          const call = attr && attr.parent?.type === 'call' && attr.parent.childForFieldName('function')?.id === attr.id ? attr.parent : null;
          const meth = attr?.childForFieldName('attribute')?.text ?? '';
          // `self.scaler` refs inside a longer attribute chain count once (as the object)
          if (ref.type === 'identifier' && ref.parent?.type === 'attribute' && ref.parent.childForFieldName('attribute')?.id === ref.id) continue;
          if (call && REWRITABLE.has(meth)) uses.push({ call, meth });
          else if (!(ref.parent?.type === 'keyword_argument' && ref.parent.childForFieldName('name')?.id === ref.id)) otherUses = true;
        }
      }

      // dual-path code keeps its CUDA (and CPU) precision, float16 autocast included (`accel.autocast(dtype=torch.float16)`
      // is float16 on CUDA), so it still needs the scaler there: disable it on XLA only (on a TPU host the CUDA scaler already
      // turns itself off, so this only silences its warning) and leave its uses, which are then pass-throughs
      const keepForCuda = ctx.idiom.dualPath && !xla;
      if (keepForCuda && /\bis_xla\(|torch_xla|\bxla\b/.test(callArgs(ctor).list?.text ?? '')) continue; // already off on XLA
      const what = xla ? (ctx.idiom.profile === 'torchtpu' ? 'a PyTorch/XLA scaler has no TorchTPU counterpart, and bf16 on TPU needs no loss scaling' : '`torch_xla.amp.GradScaler` was removed in torch_xla 2.9, and bf16 on TPU needs no loss scaling') : `\`${q.replace(/^torch\.cuda\.amp\.grad_scaler\./, 'torch.cuda.amp.').replace(/^.*\.ShardedGradScaler$/, 'ShardedGradScaler')}\` is disabled without CUDA and bf16 on TPU needs no loss scaling`;
      const stmt = assign ? wholeStatement(assign) : null;
      ctx.report(ctor, {
        // torch_xla.amp.GradScaler no longer exists from 2.9: the script fails at that line
        severity: xla && ctx.options.target.profile === 'torch_xla' && ctx.idiom.at('2.9') ? 'error' : 'warning',
        message: keepForCuda
          ? `${what}: keep it for CUDA and disable it on XLA`
          : `${what}: remove the scaler${target && otherUses ? ` and its other uses of \`${target}\`` : ''}`,
        fix: keepForCuda
          ? disableOnXla(ctx, ctor)
          : stmt && !otherUses
            ? { title: 'Remove the GradScaler', applicability, edits: [deleteStatement(ctx.text, stmt)] }
            : null,
      });

      // dual-path: the uses are needed on CUDA and pass-throughs on XLA once the scaler is off there: nothing to report
      for (const { call, meth } of keepForCuda ? [] : uses) {

        const args = callArgs(call);
        let fix: FixDraft | null = null;
        let message = '';
        if (meth === 'scale') {
          const arg = args.positional[0] ?? args.keywords.get('outputs')?.childForFieldName('value');
          message = `\`${call.text}\`: no loss scaling with bf16 on TPU`;
          if (arg && args.positional.length + args.keywords.size === 1) fix = { title: `Replace with \`${asPrimary(arg)}\``, applicability, edits: [replace(call, asPrimary(arg))] };
        } else if (meth === 'step') {
          const opt = args.positional[0] ?? args.keywords.get('optimizer')?.childForFieldName('value');
          message = `\`${call.text}\`: step the optimizer directly (no loss scaling with bf16 on TPU)`;
          if (opt) {
            const rest = args.list!.namedChildren.filter((c) => !!c && c.type !== 'comment' && c.id !== opt.id && c.id !== args.keywords.get('optimizer')?.id).map((c) => c!.text);
            const text = `${asPrimary(opt)}.step(${rest.join(', ')})`;
            fix = { title: `Replace with \`${text}\``, applicability, edits: [replace(call, text)] };
          }
        } else {
          message = `\`${call.text}\`: no loss scaling with bf16 on TPU`;
          const s = wholeStatement(call);
          if (s) fix = { title: `Remove \`${call.text}\``, applicability, edits: [deleteStatement(ctx.text, s)] };
        }
        // the construction carries the problem (warning, or error where it raises); each call site is then a
        // pass-through of a disabled scaler, or goes with the removed one: advice (issue 9). Except the step of a
        // torch_xla scaler that still exists (before 2.9): its `_maybe_opt_step` runs `xm.mark_step()` and `.item()`s
        // found_inf each step unless the optimizer is a syncfree one (torch_xla/amp/grad_scaler.py, v2.8.0): slow
        const syncs = xla && meth === 'step' && ctx.options.target.profile === 'torch_xla' && !ctx.idiom.at('2.9');
        if (syncs) message = `\`${call.text}\`: the torch_xla GradScaler syncs the device (\`xm.mark_step()\` and \`.item()\` on found_inf) every step; step the optimizer directly (no loss scaling with bf16 on TPU)`;
        ctx.report(call, { severity: syncs ? 'warning' : 'info', message, fix });
      }
    }
    scaleKeyReads(ctx);
  },
});

/** A CUDA GradScaler construction (`torch.cuda.amp.GradScaler(...)`, `torch.amp.GradScaler("cuda")`, `torch.amp.GradScaler()`). */
function cudaScalerCtor(sema: RuleContext['sema'], v: Node | null | undefined): boolean {
  if (v?.type !== 'call') return false;
  const q = sema.callee(v) ?? '';
  if (CUDA_SCALERS.has(q)) return true;
  if (!AMP_SCALERS.has(q)) return false;
  const { positional, keywords } = callArgs(v);
  const dev = keywords.get('device')?.childForFieldName('value') ?? (positional[0]?.type === 'string' ? positional[0] : null);
  return !dev || /^cuda(:\d+)?$/.test(stringContent(dev) ?? '');
}

/**
 * A class (of this file or another project module) that wraps a CUDA GradScaler and hands out its state:
 * `self._scaler = torch.cuda.amp.GradScaler()` and `def state_dict(self): return self._scaler.state_dict()` (timm's and
 * Swin's NativeScaler).
 */
function wrapsCudaScaler(sema: RuleContext['sema'], cls: Node): boolean {
  const body = cls.childForFieldName('body');
  if (!body) return false;
  const held = new Set<string>();
  for (const a of sema.within('assignment', body)) {
    const left = a.childForFieldName('left');
    if (left?.type === 'attribute' && left.childForFieldName('object')?.text === 'self' && cudaScalerCtor(sema, a.childForFieldName('right'))) held.add(left.text);
  }
  if (!held.size) return false;
  return sema.within('function_definition', body).some((fn) => fn.childForFieldName('name')?.text === 'state_dict' && sema.within('return_statement', fn).some((r) => {
    const v = r.namedChildren[0];
    return v?.type === 'call' && methodName(v) === 'state_dict' && held.has(receiver(v)?.text ?? '');
  }));
}

/**
 * `scaler.state_dict()["scale"]`: without CUDA the scaler disables itself, and a disabled scaler's `state_dict()` is `{}`
 * (PT:torch/amp/grad_scaler.py `state_dict`: `if self._enabled: return {"scale": ...}` … `return {}`; torch 1.13
 * torch/cuda/amp/grad_scaler.py:472 the same), so the read raises KeyError on a TPU host. `get_scale()` is 1.0 when disabled.
 */
function scaleKeyReads(ctx: RuleContext): void {
  const sema = ctx.sema;
  const scalerValue = (recv: Node): boolean => {
    const values = recv.type === 'identifier'
      ? sema.bindings(recv.text)
      : recv.type === 'attribute'
        ? sema.nodes('assignment').filter((a) => a.childForFieldName('left')?.text === recv.text).map((a) => a.childForFieldName('right')!).filter(Boolean)
        : [];
    return values.some((v) => {
      if (cudaScalerCtor(sema, v)) return true;
      if (v.type !== 'call') return false;
      const fn = v.childForFieldName('function');
      const local = fn?.type === 'identifier' ? ctx.model.classesNamed(fn.text) : [];
      if (local.some((c) => wrapsCudaScaler(sema, c))) return true;
      const r = ctx.project?.resolveCall(v, sema, ctx.path);
      return !!r && r.kind === 'class' && wrapsCudaScaler(r.module.sema, r.def);
    });
  };
  for (const sub of sema.nodes('subscript')) {
    const key = sub.childForFieldName('subscript');
    if (key?.type !== 'string' || stringContent(key) !== 'scale') continue;
    const call = sub.childForFieldName('value');
    if (call?.type !== 'call' || methodName(call) !== 'state_dict' || callArgs(call).list?.namedChildCount) continue;
    const recv = receiver(call);
    if (!recv || sema.inXlaAwareBranch(sub) || !scalerValue(recv)) continue;
    // a write into the dict (`sd["scale"] = ...`) reads nothing
    if (sub.parent?.type === 'assignment' && sub.parent.childForFieldName('left')?.id === sub.id) continue;
    const q = key.text[key.text.length - 1];
    const text = `${call.text}.get(${q}scale${q}, 1.0)`;
    ctx.report(sub, {
      severity: 'error',
      message: `\`${sub.text}\` raises KeyError on a TPU host: the CUDA GradScaler disables itself without CUDA, and a disabled scaler's \`state_dict()\` is \`{}\` (its scale is 1.0)`,
      // on CUDA the key is there and `.get` returns it; without CUDA the disabled scale, 1.0, instead of the KeyError
      fix: { title: `Use \`${text}\``, applicability: 'safe', edits: [replace(sub, text)] },
    });
  }
}

/** `GradScaler(enabled=X)` → `GradScaler(enabled=(X) and not accel.is_xla())`; `GradScaler()` → `GradScaler(enabled=not accel.is_xla())`. */
function disableOnXla(ctx: RuleContext, ctor: Node): FixDraft | null {
  const x = ctx.idiom.isXla();
  const args = callArgs(ctor);
  const enabled = args.keywords.get('enabled')?.childForFieldName('value');
  const list = args.list;
  if (!list) return null;
  const base = { title: 'Keep the scaler for CUDA, disable it on XLA', applicability: 'safe' as const, imports: x.imports, needsAccel: x.needsAccel };
  const operand = /^(parenthesized_expression|identifier|attribute|call|true|false)$/.test(enabled?.type ?? '') ? enabled!.text : `(${enabled?.text})`;
  if (enabled) return { ...base, edits: [replace(enabled, `${operand} and not ${x.text}`)] };
  if (args.positional.length > 3) return null; // enabled passed positionally
  const inner = list.namedChildren.filter((c) => !!c && c.type !== 'comment');
  const text = `${inner.length && !/,\s*\)$/.test(list.text) ? ', ' : ''}enabled=not ${x.text}`;
  const at = list.endIndex - 1; // before `)`
  return { ...base, edits: [{ start: at, end: at, text }] };
}

const OWNERS: ReadonlySet<string> = new Set(['class_definition', 'module']);

/** A power of two (`2 ** self.lg_loss_scale`, `2.0 ** k`): the loss scale of a hand-built fp16 scaler. */
function powerOfTwo(n: Node | null | undefined): boolean {
  return n?.type === 'binary_operator' && n.childForFieldName('operator')?.text === '**' && /^2(\.0*)?$/.test(n.childForFieldName('left')?.text ?? '');
}

/** Scale-like names (`loss_scale`, `self.lg_loss_scale`, `scale_factor`) that only count with a gradient inf/nan check. */
const SCALE_NAME = /(^|[._])(lg_|log_)?(loss_)?scale(_factor)?$/i;

/**
 * Hand-built fp16 loss scaling (openai improved-diffusion train_util.py): `loss_scale = 2 ** self.lg_loss_scale` …
 * `(loss * loss_scale).backward()`, with the gradients checked for inf/nan (`th.isfinite(p.grad)`) to shrink the scale.
 * One finding on the scaled backward; the inf/nan checks of the file are its related locations (TPU202 reports their
 * per-parameter host reads).
 */
function reportManualLossScaling(ctx: RuleContext): void {
  const sema = ctx.sema;
  let checks: Node[] | null = null;
  const ownerOf = (n: Node): Node | null => nearestAncestor(n, OWNERS)?.ancestor ?? null;
  const gradChecks = (): Node[] => (checks ??= sema.callsResolvedWhere((q) => /^torch\.(isfinite|isinf|isnan)$/.test(q)).filter((c) =>
    /\.grad\b/.test(c.childForFieldName('arguments')?.text ?? '')));
  for (const call of sema.callsNamed('backward')) {
    const f = call.childForFieldName('function');
    if (f?.type !== 'attribute' || f.childForFieldName('attribute')?.text !== 'backward') continue;
    let recv = f.childForFieldName('object');
    while (recv?.type === 'parenthesized_expression') recv = recv.namedChildren[0] ?? null;
    if (recv?.type !== 'binary_operator' || recv.childForFieldName('operator')?.text !== '*') continue;
    const sides = [recv.childForFieldName('left'), recv.childForFieldName('right')];
    const scaled = sides.some((x) => {
      if (!x) return false;
      if (powerOfTwo(x)) return true;
      if (x.type !== 'identifier' && x.type !== 'attribute') return false;
      // a local bound to a power of two in the same function
      const fn = sema.enclosingFunction(call);
      if (x.type === 'identifier' && sema.bindings(x.text).some((b) => powerOfTwo(b) && sema.enclosingFunction(b)?.id === fn?.id)) return true;
      // a scale-like name counts with an inf/nan check of the gradients in the same class (or function, or module)
      return SCALE_NAME.test(x.text) && gradChecks().some((c) => ownerOf(c)?.id === ownerOf(call)?.id);
    });
    if (!scaled || sema.inXlaAwareBranch(call)) continue;
    ctx.report(call, {
      message: `\`${call.text.length > 50 ? `${call.text.slice(0, 47)}...` : call.text}\` is hand-built float16 loss scaling: TPU mixed precision is bfloat16, which needs no loss scaling, and the inf/nan checks that adjust the scale read gradients on the host`,
      related: gradChecks().slice(0, 5).map((c) => ({ start: c.startIndex, end: c.endIndex, message: 'the inf/nan check of this loss scale' })),
      fix: null,
    });
  }
}
