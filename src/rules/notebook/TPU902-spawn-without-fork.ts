import { defineRule } from '../../core/rule';
import { callArgs, kwValue } from '../../core/semantics';
import { replace } from '../../core/edits';
import { appendArg } from '../perf/TPU801-compile-without-xla-backend';
import { launchCalls, plainString, singleProcessLaunch } from './util';

export default defineRule({
  id: 'TPU902',
  name: 'notebook-spawn-without-fork',
  title: '`xmp.spawn` / `torch_xla.launch` in a notebook without `start_method=\'fork\'`',
  severity: 'error',
  step: 7,
  effort: 1,
  message: 'A notebook launch must use `start_method=\'fork\'`: `spawn` cannot pickle functions defined in the notebook',
  fix: { availability: 'always', applicability: 'safe', title: 'Launch with `start_method=\'fork\'`' },
  triggers: ['launch', 'spawn'],
  notebookOnly: true,
  docs: {
    what: 'Checks notebooks for `torch_xla.launch(...)`, `xmp.spawn(...)` and `accel.launch(...)` calls without `start_method=\'fork\'` (or with another start method).',
    why:
      '`torch_xla.launch` defaults to `start_method=\'spawn\'` (TX:241-245). A spawned child re-imports `__main__` to find the target function, and a function ' +
      'defined in an interactive notebook cell cannot be pickled that way (pytorch/xla#1217). The Kaggle PJRT sample says: "in interactive notebooks, you must ' +
      'use `start_method=\'fork\'`" (contrib/kaggle/distributed-pytorch-xla-basics-with-pjrt.ipynb).',
    example: 'torch_xla.launch(_mp_fn, args=(flags,))',
    useInstead: "torch_xla.launch(_mp_fn, args=(flags,), start_method='fork')\n# optional: share host weights across forked workers with xmp.MpModelWrapper(model)",
    fixSafety: 'Safe: only the process start method changes; `fork` is what an interactive kernel needs. Do not touch the XLA device before the launch (TPU901).',
    sources: [
      'TX:241-245 (launch(fn, args=(), start_method=\'spawn\', debug_single_process=False); pytorch/xla@022ecde torch_xla/torch_xla.py:241)',
      'contrib/kaggle/distributed-pytorch-xla-basics-with-pjrt.ipynb',
      'pytorch/xla#1217',
      'torch_xla/distributed/xla_multiprocessing.py (spawn, MpModelWrapper)',
    ],
    torchtpu: 'The fix edits the existing torch_xla launch call only; the preview launcher is not known here.',
  },
  check(ctx) {
    for (const call of launchCalls(ctx)) {
      if (singleProcessLaunch(call)) continue;
      const { keywords, list } = callArgs(call);
      const kw = keywords.get('start_method');
      const value = kwValue(kw);
      if (value && plainString(value) === null) continue;
      if (value && plainString(value) === 'fork') continue;
      if (list?.namedChildren.some((a) => a?.type === 'dictionary_splat')) continue;
      const fn = call.childForFieldName('function')!.text;
      ctx.report(value ?? call, {
        message: value
          ? `\`${fn}(start_method=${value.text})\` in a notebook: use \`'fork'\`, \`spawn\` cannot pickle functions defined in cells`
          : `\`${fn}(...)\` in a notebook defaults to \`start_method='spawn'\`, which cannot pickle functions defined in cells: pass \`start_method='fork'\``,
        fix: { edits: [value ? replace(value, "'fork'") : appendArg(ctx.text, list!, "start_method='fork'")] },
      });
    }
  },
});
