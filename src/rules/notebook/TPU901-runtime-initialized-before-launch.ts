import { defineRule, type FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import { insertLineBefore } from '../../core/edits';
import { atModuleLevel, deleteStatementInCell, deviceAccess, isVariableUse, launchCalls, singleProcessLaunch, topStatement } from './util';

function isDocstring(n: Node): boolean {
  return n.type === 'expression_statement' && n.namedChildren.length === 1 && n.namedChildren[0]?.type === 'string';
}

export default defineRule({
  id: 'TPU901',
  name: 'runtime-initialized-before-launch',
  title: 'XLA runtime initialized before `xmp.spawn` / `torch_xla.launch`',
  severity: 'error',
  step: 7,
  effort: 3,
  message: 'The XLA runtime is initialized before the launch: the spawned processes fail with "Runtime is already initialized"',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Move the device access into the launched function' },
  triggers: ['launch', 'spawn'],
  docs: {
    what:
      'Checks notebooks (every cell run before the launch cell) and scripts (module level, before the launch) for code that touches the XLA runtime before ' +
      '`torch_xla.launch` / `xmp.spawn`: `torch_xla.device()`, `xm.xla_device()`, `torch_xla.devices()`, `xm.xla_real_devices()`, ' +
      '`xm.get_xla_supported_devices()`, `xr.is_bf16_supported()`, `.to("xla")` and `device="xla"` factories.',
    why:
      'The launcher refuses to start when the parent process already owns the runtime: `RuntimeError: Runtime is already initialized. Do not use the XLA ' +
      'device before calling xmp.spawn.` (XPJRT:144-146). DEV: "the user can start retrieving and accessing XLA devices only from within the target ' +
      'function of `torch_xla.launch()`". In a notebook the kernel keeps the runtime alive, so once a cell has touched the device every later launch fails ' +
      'until the kernel restarts (pytorch/xla#7765, #9303).',
    example: 'device = torch_xla.device()\n\ndef _mp_fn(index):\n    model = Net().to(device)\n\ntorch_xla.launch(_mp_fn, start_method="fork")',
    useInstead: 'def _mp_fn(index):\n    device = torch_xla.device()\n    model = Net().to(device)\n\ntorch_xla.launch(_mp_fn, start_method="fork")',
    fixSafety:
      'Unsafe: moves a single-line `name = <device call>` into the launched function when that name is used nowhere else. Restart the notebook kernel after ' +
      'an accidental initialization. Alternatives: stay single-process, or use SPMD from one process (TPU907).',
    sources: [
      'XPJRT:144-146 (torch_xla/_internal/pjrt.py: "Runtime is already initialized")',
      'DEV (docs/source/learn/pytorch-on-xla-devices.md: devices only inside the launch target)',
      'TX:241 (torch_xla.launch(fn, args, start_method, debug_single_process); pytorch/xla@022ecde torch_xla/torch_xla.py:241)',
      'pytorch/xla#7765, pytorch/xla#9303',
    ],
    torchtpu: 'The preview\'s multi-process launcher is not known here; the finding applies to torch_xla launches in the file.',
  },
  check(ctx) {
    const sema = ctx.sema;
    const launches = launchCalls(ctx).filter((l) => !singleProcessLaunch(l));
    if (!launches.length) return;
    // where the launch runs, in execution order of module-level code
    let point = Infinity;
    let target: Node | undefined;
    for (const l of launches) {
      let at: number | undefined;
      if (atModuleLevel(l)) at = topStatement(l).startIndex;
      else {
        const fn = sema.enclosingFunction(l);
        const name = fn?.childForFieldName('name')?.text;
        // `name(...)` calls at module level (the file's calls by name are indexed once: callsNamed)
        const sites = sema.callsNamed(name ?? '').filter((c) => c.childForFieldName('function')?.type === 'identifier' && c.childForFieldName('function')!.text === name && atModuleLevel(c));
        if (sites.length) at = Math.min(...sites.map((s) => s.startIndex));
      }
      if (at === undefined || at >= point) continue;
      point = at;
      const arg = l.childForFieldName('arguments')?.namedChildren[0];
      target = arg?.type === 'identifier'
        ? sema.nodes('function_definition').find((f) => f.childForFieldName('name')?.text === arg.text && atModuleLevel(f))
        : undefined;
    }
    if (point === Infinity) return;
    for (const call of sema.nodes('call')) {
      if (call.startIndex >= point) break;
      if (!atModuleLevel(call) || !deviceAccess(ctx, call)) continue;
      if (call.parent && call.parent.type === 'call' && deviceAccess(ctx, call.parent)) continue;
      let fix: FixDraft | null = null;
      const assign = call.parent?.type === 'assignment' ? call.parent : null;
      const stmt = assign?.parent?.type === 'expression_statement' && assign.parent.parent?.type === 'module' ? assign.parent : null;
      const left = assign?.childForFieldName('left');
      if (stmt && target && left?.type === 'identifier' && !stmt.text.includes('\n')) {
        const uses = sema.identifiersNamed(left.text).filter((id) => id.id !== left.id && isVariableUse(id));
        const body = target.childForFieldName('body');
        const first = body?.namedChildren.filter((n): n is Node => !!n && n.type !== 'comment').find((n) => !isDocstring(n));
        if (body && first && uses.every((u) => u.startIndex >= body.startIndex && u.endIndex <= body.endIndex)) {
          fix = {
            title: `Move \`${left.text}\` into \`${target.childForFieldName('name')?.text}\``,
            edits: [deleteStatementInCell(ctx, stmt), insertLineBefore(ctx.text, first, stmt.text)],
          };
        }
      }
      ctx.report(call, {
        message: `\`${call.text.length > 40 ? call.text.slice(0, 37) + '…' : call.text}\` initializes the XLA runtime before the launch: the spawned processes fail with "Runtime is already initialized"`,
        fix,
      });
    }
  },
});
