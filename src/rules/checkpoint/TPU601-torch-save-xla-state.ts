import { defineRule, type FixDraft } from '../../core/rule';
import { replace } from '../../core/edits';
import { calledFromDeviceCode, deviceModuleIn, deviceStateCallers, fsdpV1, holdsDeviceState, isMultiProcess, isSpmd, masterGuard, placesOnDevice, projectSaveWrapper, saveArgs, TORCH_SAVE } from './util';
import { whereIn } from '../../model/facts';
import { reportRuns, type Draft } from '../shared';

function short(text: string): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > 40 ? `${one.slice(0, 39)}…` : one;
}

export default defineRule({
  id: 'TPU601',
  name: 'torch-save-xla-state',
  title: '`torch.save` of XLA tensors or state dicts',
  severity: 'warning',
  step: 8,
  effort: 1,
  message: '`torch.save` writes device tensors: XLA tensors reload only where their device exists',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Save CPU copies with `xm.save`' },
  deviceWork: true,
  triggers: ['save'],
  docs: {
    what:
      'Checks for `torch.save(obj, path)`, or a save wrapper that forwards its argument to `torch.save` (`save_on_master(*args, **kwargs)`, in this file or in another project module, reported at the call with the wrapper\'s `torch.save` as a related location and no fix; with project scope the wrapper\'s `torch.save` is reported too, related to every caller, of this file or another module, that passes it device state), where `obj` holds device state: a `model.state_dict()`, `optimizer.state_dict()` or `scheduler.state_dict()`, a dict holding one, a tensor, or the result of a helper that builds one (a function of this file or another project module whose returns hold device state; outside the project, a helper named for checkpoints, `save_checkpoint(model, optimizer, ...)`, given a model or an optimizer), ' +
      'in a file that uses torch_xla or places work on a CUDA device (the state becomes XLA state on TPU). A whole module the file moved to the device, pickled alone or inside a list/dict (`torch.save([actor_critic, obs_rms], path)`, `dict(net=net, ...)`), is reported without a fix: `xm.save` leaves its `nn.Parameter`s on the device. A rank-0 save wrapper (`save_on_master(*args, **kwargs)`) that no module of the project calls is reported without a fix (what it is given is unknown; in training code, the model state); a checkpoint module that places nothing itself counts as device code when the modules calling it do. Explicit CPU copies (`.cpu()`, `.to("cpu")`) are not reported; SPMD/FSDP code is TPU603\'s.',
    why:
      '"Directly saving XLA tensors is possible but not recommended. XLA tensors are always loaded back to the device they were saved from, and if that device is unavailable the load will fail" (DEV:343-348; TS:363-375). ' +
      '`xm.save(data, file_or_path, master_only=True, global_master=False)` syncs the pending graph, moves every XLA tensor to the CPU and, with `master_only=True`, writes only on the master of each host ' +
      '(`is_master_ordinal(local=not global_master)`; only ordinal 0 with `global_master=True`), so the file loads anywhere (XM:1210-1251). ' +
      'It has no rendezvous (removed in pytorch/xla#4926, 2023; none in `save` at v2.3.0 through v2.9.0), so it may run under your own rank guard with `master_only=False`. Do not save views: recreate them after loading (xm.save docstring).',
    example: 'if master_process:\n    torch.save(model.state_dict(), "ckpt.pt")',
    useInstead: 'import torch_xla.core.xla_model as xm\n\nif master_process:\n    xm.save(model.state_dict(), "ckpt.pt", master_only=False)   # your guard picks the writer',
    fixSafety:
      'Safe in single-process code, and under a master/rank guard: the guard stays and the call gets `master_only=False`, so exactly the processes your guard admits write ' +
      '(`if local_rank == 0:` keeps writing once per node, not once per job; `xm.save` has no rendezvous to wait for the others). ' +
      'Unguarded saves in multi-process code: with a per-rank path the fix passes `master_only=False`; with a shared path tpu-only lets the master write instead of every process (unsafe), ' +
      'while dual-path passes `master_only=False` so CPU and CUDA keep every rank writing as before. No fix when the save passes `torch.save`-only options. ' +
      'The manual equivalent is `torch.save({k: v.cpu() for k, v in sd.items()}, path)` (MIG:343-353).',
    sources: [
      'XM:1210-1251 (torch_xla/core/xla_model.py: save(data, file_or_path, master_only=True, global_master=False) → _maybe_convert_to_cpu, torch.save where should_write_data; no rendezvous: read at v2.3.0:1187-1222, v2.4.0:1187-1222, v2.5.0:1233-1275, v2.6.0:1248-1290, v2.7.0:1238-1280, v2.8.0:1213-1255, v2.9.0:1210-1252)',
      'pytorch/xla#4926 (commit 4f7f3dc, April 2023): "Remove rendezvous from xm.save"',
      'DEV:343-348, TS:363-375 (saving XLA tensors directly)',
      'MIG:343-353 (CPU copies before torch.save)',
      'XM:1254-1266 (`_maybe_convert_to_cpu`: select_fn `type(v) == torch.Tensor and is_xla_tensor(v)`, so a pickled module\'s `nn.Parameter`s stay XLA tensors; v2.3.0:1234) and torch_xla/utils/utils.py:165-206 (`_for_each_instance_rewrite` copies an object with `__dict__` shallowly)',
    ],
    torchtpu: 'No torchtpu replacement is known: move the state to CPU before `torch.save` (`{k: v.cpu() for k, v in sd.items()}`).',
  },
  check(ctx) {
    if (!ctx.sema.usesTorch() || isSpmd(ctx) || fsdpV1(ctx).used) return;
    if (ctx.sema.framework && !ctx.sema.xlaAware) return;
    // project scope: a save wrapper (`save_on_master(*args, **kwargs)`) is reported at its `torch.save`, related to the
    // callers (of this file and of other modules) that pass it device state
    const wrapperSaves = new Set<number>();
    if (ctx.project) {
      for (const call of ctx.sema.nodes('call')) {
        if (ctx.sema.callee(call) !== TORCH_SAVE || ctx.sema.inXlaAwareBranch(call)) continue;
        const { obj } = saveArgs(call);
        if (!obj || (obj.type !== 'list_splat' && obj.type !== 'identifier')) continue;
        const stats = { callers: 0 };
        const callers = deviceStateCallers(ctx, call, stats);
        if (callers && !callers.length && !stats.callers && obj.type === 'list_splat' && masterGuard(call) && placesOnDevice(ctx)) {
          // a rank-0 save wrapper no module of the project calls (`save_on_master(*args, **kwargs)`, the DeiT/BLIP
          // utility): what it is given is unknown, and in training code it is the model's state
          wrapperSaves.add(call.id);
          const fn = ctx.sema.enclosingFunction(call)?.childForFieldName('name')?.text ?? 'helper';
          ctx.report(call, {
            message: `\`${short(call.text)}\` in \`${fn}\` saves whatever its callers pass; a model's or optimizer's state is device state, which reloads only where ${ctx.idiom.profile === 'torchtpu' ? 'the device exists: save CPU copies' : 'that XLA device exists: save CPU copies (`xm.save`)'}`,
            fix: null,
          });
          continue;
        }
        if (!callers?.length) continue;
        wrapperSaves.add(call.id);
        const fn = ctx.sema.enclosingFunction(call)?.childForFieldName('name')?.text ?? 'helper';
        const first = callers[0];
        const where = `${first.path ? first.path.split('/').pop() : 'line'}${first.path ? ':' : ' '}${first.line}`;
        ctx.report(call, {
          message: `\`${short(call.text)}\` in \`${fn}\` saves the device state its callers pass (${where}${callers.length > 1 ? ` and ${callers.length - 1} more` : ''}): it writes device tensors that reload only where ${ctx.idiom.profile === 'torchtpu' ? 'the device exists; save CPU copies' : 'that XLA device exists; save CPU copies (`xm.save`)'}`,
          // the wrapper forwards whatever it gets (`*args, **kwargs`): rewriting it is for review
          fix: null,
          related: callers.slice(0, 5).map((c) => ({ start: c.call.startIndex, end: c.call.endIndex, ...(c.path ? { path: c.path } : {}), message: `a call passing device state to \`${fn}\`` })),
        });
      }
    }
    // a helper module that places nothing itself (SupContrast's util.save_model(model, optimizer, ...) builds the state
    // dict from the model its caller passes): its saves write device state when the modules calling the helper place work
    const placed = placesOnDevice(ctx);
    if (!placed && !ctx.project) return;
    let multi: boolean | undefined;
    const saves: Draft[] = [];
    for (const call of ctx.sema.nodes('call')) {
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      if (!placed && (ctx.sema.callee(call) !== TORCH_SAVE || !calledFromDeviceCode(ctx, call))) continue;
      if (ctx.sema.callee(call) !== TORCH_SAVE) {
        // a save wrapper of another project module (`utils.save_on_master(...)`): judged here, where the state is passed
        const wrapped = !ctx.sema.callee(call)?.startsWith('torch') ? projectSaveWrapper(ctx, call) : null;
        if (!wrapped || !holdsDeviceState(ctx, wrapped.obj)) continue;
        const name = wrapped.def.childForFieldName('name')?.text ?? 'helper';
        const short = wrapped.obj.text.length > 40 ? '…' : wrapped.obj.text;
        ctx.report(call, {
          message: `\`${name}(${short})\` saves with \`torch.save\` (${wrapped.path ? whereIn({ path: wrapped.path, node: wrapped.save, sema: wrapped.sema }) : `line ${ctx.text.slice(0, wrapped.save.startIndex).split('\n').length}`}): it writes device tensors that reload only where ${ctx.idiom.profile === 'torchtpu' ? 'the device exists; save CPU copies' : 'that XLA device exists; save CPU copies there (`xm.save`)'}`,
          // the save is written in the other module: change it there, for every caller
          fix: null,
          related: [{ start: wrapped.save.startIndex, end: wrapped.save.endIndex, ...(wrapped.path ? { path: wrapped.path } : {}), message: `the \`torch.save\` that \`${name}\` calls` }],
        });
        continue;
      }
      if (wrapperSaves.has(call.id)) continue;
      const { obj, path, extra } = saveArgs(call);
      if (!obj || !path || !holdsDeviceState(ctx, obj)) continue;
      const short = obj.text.length > 40 ? '…' : obj.text;
      const module = deviceModuleIn(ctx, obj);
      if (module) {
        // a pickled module keeps its device parameters even through xm.save (no fix: save its state_dict instead)
        ctx.report(call, {
          message: `\`torch.save(${short})\` pickles the module \`${module.text}\` with its device parameters, which reload only where that ${ctx.idiom.profile === 'torchtpu' ? 'device exists' : "XLA device exists (\`xm.save\` moves plain tensors to the CPU, not a module's \`nn.Parameter\`s)"}: save \`${module.text}.state_dict()\` instead, or a CPU copy of the module`,
          fix: null,
          related: [{ start: module.startIndex, end: module.endIndex, message: 'the module moved to the device' }],
        });
        continue;
      }
      const message =
        ctx.idiom.profile === 'torchtpu'
          ? `\`torch.save(${short})\` writes device tensors that reload only where the device exists; save CPU copies`
          : `\`torch.save(${short})\` writes device tensors that reload only where that XLA device exists; \`xm.save\` saves CPU copies`;
      let fix: FixDraft | null = null;
      if (!extra.length) {
        const guard = masterGuard(call);
        multi ??= isMultiProcess(ctx);
        if (guard) {
          // the user's guard picks the writer on every backend: keep it, and let every caller of the save write
          // (xm.save has had no rendezvous since pytorch/xla#4926, so calling it on some processes only is fine)
          const snippet = ctx.idiom.save(obj.text, `${path.text}, master_only=False`);
          if (snippet) {
            fix = {
              title: `Save CPU copies with \`${snippet.text.split('(')[0]}\` under the existing guard`,
              applicability: 'safe',
              edits: [replace(call, snippet.text)],
              imports: snippet.imports,
              needsAccel: snippet.needsAccel,
            };
          }
        } else {
          const perRank = multi && /rank|ordinal|local_rank/i.test(path.text);
          // dual-path keeps CPU/CUDA rank semantics: every rank that wrote still writes
          const everyRank = perRank || (multi && ctx.idiom.dualPath);
          const snippet = ctx.idiom.save(obj.text, everyRank ? `${path.text}, master_only=False` : path.text);
          if (snippet) {
            fix = {
              title: `Save CPU copies with \`${snippet.text.split('(')[0]}\`${perRank ? ' (every rank writes its own file)' : everyRank ? ' (every rank writes, as before)' : ''}`,
              applicability: multi && !everyRank ? 'unsafe' : 'safe',
              edits: [replace(call, snippet.text)],
              imports: snippet.imports,
              needsAccel: snippet.needsAccel,
            };
          }
        }
      }
      saves.push({ at: call, opts: { message, fix } });
    }
    // `torch.save(G.state_dict(), …)` then `torch.save(D.state_dict(), …)`: one checkpoint, one finding
    reportRuns(ctx, saves, (d) => `\`${short(d.at.text)}\` writes device tensors too`);
  },
});
