import { defineRule, type FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs } from '../../core/semantics';
import { indentAt, insertAt, lineStart } from '../../core/edits';
import { detectEol } from '../../core/source';
import { envWrites, truthyValue } from './util';

const EAGER = new Set(['torch_xla.experimental.eager_mode', 'torch_xla.experimental.eager.eager_mode']);

export default defineRule({
  id: 'TPU802',
  name: 'eager-mode-without-compile',
  title: 'Eager mode left on without `torch_xla.compile`',
  severity: 'warning',
  step: 6,
  effort: 3,
  message: 'Eager mode is on but no step is wrapped in `torch_xla.compile`: every op runs eagerly',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Compile the training step with `torch_xla.compile`' },
  triggers: ['eager_mode', 'XLA_USE_EAGER_DEBUG_MODE'],
  profiles: ['torch_xla'],
  docs: {
    what:
      'Checks for `torch_xla.experimental.eager_mode(True)` and `XLA_USE_EAGER_DEBUG_MODE=1` in a file where no function is compiled with `torch_xla.compile`.',
    why:
      'Under eager mode "only functions that was `torch_xla.compile`d will be traced and compiled. Other torch ops will be executed eagerly" ' +
      '(torch_xla/experimental/eager.py). Eager mode reaches about 45% of compiled throughput on decoder-only models and about 1% on ResNet50 and ' +
      'is "not intended for main training or inference loops" (EAGER:150-168). `torch_xla.compile` also keeps data loading out of the step graph ' +
      'and, with `full_graph=True`, catches accidental graph breaks; `max_different_graphs=N` raises on recompilation (EAGER:57-60; TX:114-160).',
    example: 'torch_xla.experimental.eager_mode(True)\n\ndef train_step(x, y):\n    loss = loss_fn(model(x), y)\n    loss.backward()\n    opt.step()',
    useInstead:
      'torch_xla.experimental.eager_mode(True)\n\n@torch_xla.compile()\ndef train_step(x, y):\n    loss = loss_fn(model(x), y)\n    loss.backward()\n    opt.step()\n' +
      '# once stable: torch_xla.compile(train_step, full_graph=True, max_different_graphs=2)',
    fixSafety:
      'Unsafe: decorates the one function holding `.backward()` and the optimizer step with `@torch_xla.compile()`. Host reads inside it (`.item()`) ' +
      'split the graph; review before adding `full_graph=True`.',
    sources: [
      'EAGER (docs/source/learn/eager.md:57-60, 150-168)',
      'TX:114-160 (compile(f=None, full_graph=False, name=None, max_different_graphs=None); pytorch/xla@022ecde torch_xla/torch_xla.py:114)',
      'torch_xla/experimental/eager.py (eager_mode(enable))',
      'torch_xla/torch_xla.py: `def compile` from v2.5.0:93 (absent at v2.4.0; parameter `num_different_graphs_allowed` until v2.7.0, `max_different_graphs` from v2.8.0:114)',
      'TS (XLA_USE_EAGER_DEBUG_MODE)',
    ],
    torchtpu: 'Not run under the torchtpu profile: it checks torch_xla\'s eager mode (`torch_xla.experimental.eager_mode`); the preview is eager-first and compiles with `torch.compile(backend="tpu", dynamic=False)` (TPU801).',
  },
  check(ctx) {
    const sema = ctx.sema;
    const compiled = sema.nodes('call').some((c) => sema.callee(c) === 'torch_xla.compile') ||
      sema.nodes('decorated_definition').some((dd) =>
        dd.namedChildren.some((d) => d?.type === 'decorator' && sema.resolve(d.namedChildren[0]?.type === 'call' ? d.namedChildren[0].childForFieldName('function') : d.namedChildren[0]) === 'torch_xla.compile'));
    if (compiled) return;
    const sites: Node[] = [];
    for (const call of sema.nodes('call')) {
      if (!EAGER.has(sema.callee(call) ?? '')) continue;
      const arg = callArgs(call).positional[0] ?? callArgs(call).keywords.get('enable')?.childForFieldName('value');
      if (arg?.text === 'True') sites.push(call);
    }
    for (const w of envWrites(ctx)) if (w.name === 'XLA_USE_EAGER_DEBUG_MODE' && truthyValue(w.value)) sites.push(w.anchor);
    if (!sites.length) return;

    // the training step: the only function with .backward() and an optimizer step, directly in its body
    const steps = sema.nodes('function_definition').filter((fn) => {
      const body = fn.childForFieldName('body');
      if (!body || fn.childForFieldName('name')?.text === 'forward') return false;
      const calls = sema.callsWithin(body).filter((c) => sema.enclosingFunction(c)?.id === fn.id);
      return calls.some((c) => c.childForFieldName('function')?.childForFieldName('attribute')?.text === 'backward') &&
        calls.some((c) => sema.isTrainSignal(c) && c.childForFieldName('function')?.childForFieldName('attribute')?.text !== 'backward');
    });
    let fix: FixDraft | null = null;
    // torch_xla.compile first appears in torch_xla/torch_xla.py at v2.5.0:93 (absent at v2.4.0)
    const deco = ctx.idiom.at('2.5') ? ctx.idiom.xlaAlways('@torch_xla.compile()', { module: 'torch_xla' }) : null;
    if (steps.length === 1 && deco) {
      const fn = steps[0];
      const at = fn.parent?.type === 'decorated_definition' ? fn.parent : fn;
      const name = fn.childForFieldName('name')?.text ?? 'step';
      fix = {
        title: `Compile \`${name}\` with \`torch_xla.compile\``,
        edits: [insertAt(lineStart(ctx.text, at.startIndex), `${indentAt(ctx.text, at.startIndex)}${deco.text}${detectEol(ctx.text)}`)],
        imports: deco.imports,
      };
    }
    for (const site of sites) {
      ctx.report(site, {
        message: ctx.idiom.profile === 'torchtpu'
          ? 'torch_xla eager mode is on and no step is compiled: every op runs eagerly'
          : 'Eager mode is on but no step is wrapped in `torch_xla.compile`: every op runs eagerly',
        fix,
      });
    }
  },
});
