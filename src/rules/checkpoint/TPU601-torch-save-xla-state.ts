import { defineRule, type FixDraft } from '../../core/rule';
import { replace } from '../../core/edits';
import { fsdpV1, holdsDeviceState, isMultiProcess, isPureMasterCheck, isSpmd, masterGuard, placesOnDevice, saveArgs, TORCH_SAVE } from './util';

export default defineRule({
  id: 'TPU601',
  name: 'torch-save-xla-state',
  title: '`torch.save` of XLA tensors or state dicts',
  severity: 'warning',
  step: 8,
  effort: 1,
  message: '`torch.save` writes device tensors: XLA tensors reload only where their device exists',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Save CPU copies with `xm.save`' },
  triggers: ['save'],
  docs: {
    what:
      'Checks for `torch.save(obj, path)` where `obj` holds device state: a `model.state_dict()`, `optimizer.state_dict()` or `scheduler.state_dict()`, a dict holding one, or a tensor, ' +
      'in a file that uses torch_xla or places work on a CUDA device (the state becomes XLA state on TPU). Explicit CPU copies (`.cpu()`, `.to("cpu")`) are not reported; SPMD/FSDP code is TPU603\'s.',
    why:
      '"Directly saving XLA tensors is possible but not recommended. XLA tensors are always loaded back to the device they were saved from, and if that device is unavailable the load will fail" (DEV:343-348; TS:363-375). ' +
      '`xm.save(data, file_or_path, master_only=True, global_master=False)` syncs the pending graph, moves every XLA tensor to the CPU and writes only on the master (XM:1210-1251), so the file loads anywhere. ' +
      'It ends with `xm.rendezvous`, so call it on every process, not under a rank-0 guard. Do not save views: recreate them after loading (xm.save docstring).',
    example: 'if master_process:\n    torch.save(model.state_dict(), "ckpt.pt")',
    useInstead: 'import torch_xla.core.xla_model as xm\n\nxm.save(model.state_dict(), "ckpt.pt")   # on every process; writes on the master only',
    fixSafety:
      'Safe in single-process code, and when the save is the only statement under a plain master check: the guard is removed because `xm.save` picks the writer itself and must run on every process (it ends with a rendezvous). ' +
      'Unsafe for unguarded saves in multi-process code: with a per-rank path the fix passes `master_only=False`, otherwise one process writes instead of all. ' +
      'No fix when the save shares its guard with other statements, or passes `torch.save`-only options: keep one `xm.save` call that every process reaches. ' +
      'The manual equivalent is `torch.save({k: v.cpu() for k, v in sd.items()}, path)` (MIG:343-353).',
    sources: [
      'XM:1210-1251 (torch_xla/core/xla_model.py: save(data, file_or_path, master_only=True, global_master=False) → _maybe_convert_to_cpu, torch.save on the master, rendezvous)',
      'DEV:343-348, TS:363-375 (saving XLA tensors directly)',
      'MIG:343-353 (CPU copies before torch.save)',
    ],
    torchtpu: 'No torchtpu replacement is known: move the state to CPU before `torch.save` (`{k: v.cpu() for k, v in sd.items()}`).',
  },
  check(ctx) {
    if (!ctx.sema.usesTorch() || isSpmd(ctx) || fsdpV1(ctx).used) return;
    if (ctx.sema.framework && !ctx.sema.xlaAware) return;
    if (!placesOnDevice(ctx)) return;
    let multi: boolean | undefined;
    for (const call of ctx.sema.nodes('call')) {
      if (ctx.sema.callee(call) !== TORCH_SAVE || ctx.sema.inXlaAwareBranch(call)) continue;
      const { obj, path, extra } = saveArgs(call);
      if (!obj || !path || !holdsDeviceState(ctx, obj)) continue;
      const short = obj.text.length > 40 ? '…' : obj.text;
      const message =
        ctx.idiom.profile === 'torchtpu'
          ? `\`torch.save(${short})\` writes device tensors that reload only where the device exists; save CPU copies`
          : `\`torch.save(${short})\` writes device tensors that reload only where that XLA device exists; \`xm.save\` saves CPU copies`;
      const stmt = call.parent?.type === 'expression_statement' && call.parent.namedChildren.length === 1 ? call.parent : null;
      let fix: FixDraft | null = null;
      if (!extra.length) {
        const guard = masterGuard(call);
        multi ??= isMultiProcess(ctx);
        if (guard) {
          const body = guard.childForFieldName('consequence')?.namedChildren.filter((c) => c && c.type !== 'comment') ?? [];
          const alone = !!stmt && body.length === 1 && body[0]?.id === stmt.id && !guard.childForFieldName('alternative') && isPureMasterCheck(guard);
          const snippet = alone ? ctx.idiom.save(obj.text, path.text) : null;
          if (snippet) {
            fix = {
              title: `Replace the guarded save with \`${snippet.text.split('(')[0]}\` on every process`,
              applicability: 'safe',
              edits: [replace(guard, snippet.text)],
              imports: snippet.imports,
              needsAccel: snippet.needsAccel,
            };
          }
        } else {
          const perRank = multi && /rank|ordinal|local_rank/i.test(path.text);
          const snippet = ctx.idiom.save(obj.text, perRank ? `${path.text}, master_only=False` : path.text);
          if (snippet) {
            fix = {
              title: `Save CPU copies with \`${snippet.text.split('(')[0]}\`${perRank ? ' (every rank writes its own file)' : ''}`,
              applicability: multi ? 'unsafe' : 'safe',
              edits: [replace(call, snippet.text)],
              imports: snippet.imports,
              needsAccel: snippet.needsAccel,
            };
          }
        }
      }
      ctx.report(call, { message, fix });
    }
  },
});
