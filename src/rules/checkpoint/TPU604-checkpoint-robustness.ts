import { defineRule, type FixDraft, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { methodName, receiver } from '../../core/semantics';
import { indentAt, lineStart } from '../../core/edits';
import { detectEol } from '../../core/source';
import { saveArgs, torchImport, TORCH_SAVE, XM_SAVE, XSER_SAVE } from './util';

const SAVES = new Set([TORCH_SAVE, XM_SAVE, XSER_SAVE, 'torch.distributed.checkpoint.save']);
const LOADS = /^(torch\.load|torch_xla\.utils\.serialization\.load|torch\.distributed\.checkpoint\.(load|load_state_dict)|torch\.hub\.load_state_dict_from_url|safetensors\.torch\.load_file)$/;

export default defineRule({
  id: 'TPU604',
  name: 'fragile-checkpointing',
  title: 'Checkpoint robustness: host memory, preemption, remote storage',
  severity: 'info',
  step: 8,
  effort: 3,
  message: 'checkpoints are written but the run cannot survive a preemption',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Resume from the last checkpoint' },
  triggers: ['save'],
  docs: {
    what:
      'Checks training scripts that write checkpoints (`torch.save`, `xm.save`, `xser.save`, `dist_cp.save`) for what a preemptible TPU VM needs: resume logic (a load of the checkpoint), ' +
      'and says when the files also stay on local paths with no preemption handling (`SIGTERM`, a `gs://` path or an fsspec/GCS client). Scripts that already resume, and scripts using torch_xla\'s `CheckpointManager`, are left alone. ' +
      'Reported once per file, on the `import torch` line.',
    why:
      'Spot and preemptible TPU VMs can be reclaimed: a run that never reloads its checkpoint starts over, and checkpoints on the VM\'s local disk can go with it. ' +
      '`CheckpointManager("gs://bucket/run", N)` writes through fsspec (GCS), saves asynchronously and, on a QueuedResource with autocheckpointing enabled, checkpoints on preemption (DCP:55-79). ' +
      'For very large models `xm.save` materializes every CPU copy at once; `xser.save(sd, path)`/`xser.load(path)` stream one tensor at a time to cut host memory (DEV:318-341).',
    example: 'for epoch in range(epochs):\n    train_one_epoch(model)\n    xm.save(model.state_dict(), "ckpt.pt")',
    useInstead:
      'if os.environ.get("RESUME") == "1" and os.path.exists("ckpt.pt"):\n    model.load_state_dict(torch.load("ckpt.pt", map_location="cpu"))\n' +
      'for epoch in range(epochs):\n    train_one_epoch(model)\n    xm.save(model.state_dict(), "gs://bucket/run/ckpt.pt")   # or CheckpointManager',
    fixSafety:
      'Unsafe: the fix inserts an opt-in resume step before the training loop: with `RESUME=1` in the environment it reloads the saved state dict when the file exists; ' +
      'without it the run trains exactly as before (a file left by an earlier run is never loaded on its own). It is offered only when the script saves one ' +
      '`<module>.state_dict()` to one fixed path inside its training loop (a periodic training checkpoint); a save after the loop is a final export and gets no fix. ' +
      'Review that the checkpoint matches the model, and restore the optimizer, scheduler and step counter too.',
    sources: ['DCP:55-79 (CheckpointManager: fsspec/GCS, async saves, autocheckpoint on preemption)', 'DEV:318-341 (xser.save/xser.load stream tensors)', 'MIG:352-356 (load to CPU, then load_state_dict)'],
    torchtpu: 'The resume step is plain PyTorch and applies to torch_tpu too.',
  },
  check(ctx) {
    if (!ctx.sema.usesTorch() || ctx.sema.framework) return;
    const calls = ctx.sema.nodes('call');
    const saves = calls.filter((c) => SAVES.has(ctx.sema.callee(c) ?? '') && stateDictRecv(ctx, saveArgs(c).obj, 0) !== undefined);
    if (!saves.length) return;
    if (calls.some((c) => /(^|\.)CheckpointManager$/.test(ctx.sema.callee(c) ?? ''))) return;
    const trainLoops = ctx.sema.hotLoops().filter((h) => h.kind === 'train' && h.anchor.type !== 'function_definition');
    if (!trainLoops.length) return;
    // a load inside a helper that neither trains nor is named for loading (`def stylize(args): torch.load(args.model)`,
    // an inference entry point) is not a resume
    const inTraining = (c: Node) => {
      const fn = ctx.sema.enclosingFunction(c);
      if (!fn) return true;
      if (/load|resume|restore|snapshot|ckpt|checkpoint|init|main|setup|train|fit/i.test(fn.childForFieldName('name')?.text ?? '')) return true;
      const scope = ctx.sema.enclosingClass(fn) ?? fn;
      return trainLoops.some((h) => scope.startIndex <= h.anchor.startIndex && h.anchor.endIndex <= scope.endIndex);
    };
    const resume = calls.some((c) => (LOADS.test(ctx.sema.callee(c) ?? '') && inTraining(c)) || /^(load_checkpoint|restore|resume\w*|load_from_checkpoint)$/.test(methodName(c) ?? c.childForFieldName('function')?.text ?? ''))
      || /\bresume\w*\b/i.test(ctx.sema.nodes('identifier').map((i) => i.text).join(' '));
    // a script that already loads a checkpoint (resumes) is left alone: where it keeps the files (local disk, a
    // mounted bucket, a persistent disk) is a deployment choice this file does not show (issue 9: noise on `import torch`)
    if (resume) return;
    // an RL demo (a step-count loop over an environment, no data loader) whose only save is the final model export after
    // training is not a long preemptible run with checkpoints to protect
    const inLoop = (c: Node) => trainLoops.some((h) => h.anchor.startIndex <= c.startIndex && c.endIndex <= h.anchor.endIndex);
    const loaderLoop = trainLoops.some((h) => ctx.sema.iteratesLoader(h.anchor) || ctx.sema.within('for_statement', h.anchor).some((l) => ctx.sema.iteratesLoader(l)));
    if (!saves.some(inLoop) && !loaderLoop && /\b(gym|gymnasium|envpool|dm_control|pettingzoo)\b/.test(ctx.sema.nodes('import_statement').map((i) => i.text).join('\n'))) return;
    const remote = ctx.sema.nodes('string').some((s) => /^[rbfu]*['"](gs|s3|gcs|hdfs):\/\//i.test(s.text)) || ctx.sema.imports('gcsfs') || ctx.sema.imports('fsspec') || ctx.sema.imports('google.cloud.storage');
    const preempt = /\bSIGTERM\b|preempt/i.test(ctx.text);
    const missing: string[] = ['no resume logic'];
    if (!remote && !preempt) missing.push('local paths only and no preemption handling');
    const anchor = torchImport(ctx) ?? trainLoops[0].anchor;
    ctx.report(anchor, {
      message: `checkpointing is fragile on preemptible TPU VMs: ${missing.join('; ')} (see CheckpointManager / gs://)`,
      fix: resumeFix(ctx, saves, trainLoops.map((h) => h.anchor)),
    });
  },
});

/** The module whose `state_dict()` is saved (`m.state_dict()` → `m`), else undefined. */
function stateDictRecv(ctx: RuleContext, obj: Node | null, depth: number): Node | null | undefined {
  if (!obj || depth > 2) return undefined;
  if (obj.type === 'call' && methodName(obj) === 'state_dict') return receiver(obj);
  if (obj.type === 'dictionary' && /\.state_dict\(\)/.test(obj.text)) return null;
  if (obj.type === 'identifier') {
    for (const b of ctx.sema.bindings(obj.text)) if (stateDictRecv(ctx, b, depth + 1) !== undefined) return null;
  }
  return undefined;
}

function resumeFix(ctx: RuleContext, saves: Node[], loops: Node[]): FixDraft | null {
  if (saves.length !== 1) return null;
  const save = saves[0];
  const callee = ctx.sema.callee(save) ?? '';
  if (callee === 'torch.distributed.checkpoint.save') return null;
  const { obj, path } = saveArgs(save);
  const recv = stateDictRecv(ctx, obj, 0);
  if (!recv || !path || !/^(identifier|attribute)$/.test(recv.type) || !(path.type === 'string' && !/^[rbu]*f/i.test(path.text) || path.type === 'identifier')) return null;
  // the outermost training loop around (or before) the save, in the same function: a hot loop, or an epoch loop
  // whose body trains through an inner loop or a call (`for epoch in ...: train_one_epoch()`)
  const fn = ctx.sema.enclosingFunction(save);
  const epochLoops = [...ctx.sema.nodes('for_statement'), ...ctx.sema.nodes('while_statement')].filter((l) => {
    const body = l.childForFieldName('body');
    return !!body && ctx.sema.containsTrainSignal(body);
  });
  // only a checkpoint written inside the training loop is a resumable training checkpoint: a save after the
  // loop is the final export (loading it at the next start would train a finished model again)
  const candidates = [...loops, ...epochLoops].filter((l) => ctx.sema.enclosingFunction(l)?.id === fn?.id && l.startIndex < save.startIndex && save.endIndex <= l.endIndex);
  const outer = candidates.filter((l) => !candidates.some((o) => o.id !== l.id && o.startIndex <= l.startIndex && l.endIndex <= o.endIndex));
  const loop = outer[outer.length - 1];
  if (!loop || loop.parent?.type !== 'block' && loop.parent?.type !== 'module') return null;
  const root = recv.type === 'attribute' ? recv.text.split('.')[0] : recv.text;
  if (root !== 'self' && !ctx.sema.bindings(root).some((b) => b.startIndex < loop.startIndex) && !fn?.childForFieldName('parameters')?.text.includes(root)) return null;
  // one fixed path: bound before the loop and never re-bound inside it (a per-epoch path is not the file to resume)
  if (path.type === 'identifier' && (!ctx.sema.bindings(path.text).some((b) => b.startIndex < loop.startIndex) || ctx.sema.bindings(path.text).some((b) => b.startIndex >= loop.startIndex && b.endIndex <= loop.endIndex))) return null;
  const load = callee === XSER_SAVE ? `xser.load(${path.text})` : `torch.load(${path.text}, map_location="cpu")`;
  const imports = [{ module: 'os' }, callee === XSER_SAVE ? { module: 'torch_xla.utils.serialization', alias: 'xser' } : { module: 'torch' }];
  const eol = detectEol(ctx.text);
  const indent = indentAt(ctx.text, loop.startIndex);
  // opt-in: a fresh run (and a run in a directory that still holds an earlier run's file) trains exactly as before
  const text = `${indent}if os.environ.get("RESUME") == "1" and os.path.exists(${path.text}):  # opt in: RESUME=1 to continue from the last checkpoint${eol}${indent}    ${recv.text}.load_state_dict(${load})${eol}`;
  return { title: `Resume \`${recv.text}\` from ${path.text} before training when RESUME=1`, edits: [{ start: lineStart(ctx.text, loop.startIndex), end: lineStart(ctx.text, loop.startIndex), text }], imports };
}
