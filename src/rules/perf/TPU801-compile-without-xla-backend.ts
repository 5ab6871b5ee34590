import { defineRule, type FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, kwValue } from '../../core/semantics';
import { deleteStatement, insertAt, replace, replaceRange } from '../../core/edits';
import { accelName, plainString } from './util';

const XLA_BACKENDS = new Set(['openxla', 'openxla_eval', 'tpu']);
const LEGACY_BACKENDS = new Set(['torchxla_trace_once', 'aot_torchxla_trace_once']);
const GPU_BACKENDS = new Set(['inductor', 'cudagraphs', 'tensorrt', 'torch_tensorrt', 'onnxrt', 'tvm']);

const MODULE_NAME = /(^|_)(model|net|module|network|transformer|unet|encoder|decoder)s?$/i;

/**
 * `model.compile(...)` on an `nn.Module` (the model knows it, or the receiver is named as one: `inner_model`), with no
 * backend and not Keras' `compile(optimizer=..., loss=...)`; not `re.compile` or any call on an imported module.
 */
function moduleCompile(ctx: Parameters<NonNullable<ReturnType<typeof defineRule>['check']>>[0], call: Node): boolean {
  const fn = call.childForFieldName('function');
  if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'compile' || !ctx.sema.usesTorch()) return false;
  const recv = fn.childForFieldName('object');
  if (!recv || (recv.type !== 'identifier' && recv.type !== 'attribute') || ctx.sema.resolve(recv)) return false;
  const { keywords } = callArgs(call);
  if (keywords.has('backend') || keywords.has('optimizer') || keywords.has('loss') || keywords.has('disable')) return false;
  if (ctx.sema.inXlaAwareBranch(call)) return false;
  return ctx.model.value(recv).kind === 'module' || MODULE_NAME.test(recv.type === 'attribute' ? recv.childForFieldName('attribute')?.text ?? '' : recv.text);
}

/** Removes a keyword argument with its separating comma. */
function dropArg(text: string, kw: Node): { start: number; end: number; text: string } {
  let start = kw.startIndex;
  let end = kw.endIndex;
  const after = /^\s*,\s*/.exec(text.slice(end));
  if (after) end += after[0].length;
  else {
    const before = /,\s*$/.exec(text.slice(0, start));
    if (before) start -= before[0].length;
  }
  return replaceRange(start, end, '');
}

/** Appends an argument before the closing parenthesis, minding a trailing comma. */
export function appendArg(text: string, list: Node, arg: string) {
  const close = list.endIndex - 1;
  const inner = text.slice(list.startIndex + 1, close);
  const trimmed = inner.replace(/\s+$/, '');
  if (trimmed === '') return insertAt(close, arg);
  if (trimmed.endsWith(',')) return insertAt(list.startIndex + 1 + trimmed.length, ` ${arg}`);
  return insertAt(list.startIndex + 1 + trimmed.length, `, ${arg}`);
}

export default defineRule({
  id: 'TPU801',
  name: 'compile-without-xla-backend',
  title: '`torch.compile` without an XLA backend, or with inductor-only options',
  severity: 'warning',
  step: 6,
  effort: 1,
  message: '`torch.compile` uses the inductor backend, which cannot target an XLA device',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Compile with the `openxla` backend' },
  triggers: ['compile', '_inductor'],
  docs: {
    what:
      'Checks for `torch.compile(...)`, `@torch.compile` and the method form `model.compile()` (`nn.Module.compile`, reported without a fix) with no `backend`, or with a GPU backend (`inductor`, `cudagraphs`, `tensorrt`), ' +
      'the legacy `torchxla_trace_once` / `aot_torchxla_trace_once` backends, inductor-only `mode=` / `options=`, and `torch._inductor.config` settings.',
    why:
      'The dynamo backends that target XLA are `openxla` (training through AOTAutograd) and `openxla_eval` (PT:torch/_dynamo/backends/torchxla.py). ' +
      'torch_xla recommends `torch_xla.compile` "for compiling training loops" and `torch.compile(backend="openxla")` for inference (EAGER:101-133); ' +
      'dynamo training on XLA is experimental and produces several graphs per step (DYN). The legacy `*torchxla_trace_once` names warn that they are deprecated in favour of `openxla`. ' +
      'How inductor fails on XLA tensors is unverified; it does not generate XLA code.',
    example: 'model = torch.compile(model, mode="max-autotune")\n\n@torch.compile\ndef train_step(x, y): ...',
    useInstead:
      '# inference\nmodel = torch.compile(model, backend="openxla")\n# training: drop torch.compile, optionally compile the step with torch_xla\n' +
      'train_step = torch_xla.compile(train_step, full_graph=True, name="train_step")',
    fixSafety:
      'Safe for inference-only files (no `.backward()` or optimizer step): adds `backend="openxla"` and drops inductor-only `mode`/`options`; the legacy backend names become `openxla`. ' +
      'Unsafe for training: the compile is dropped (torch_xla profile) or disabled on XLA with `disable=accel.is_xla()` (dual-path), so CUDA keeps inductor.',
    sources: [
      'EAGER (docs/source/learn/eager.md:101-133)',
      'DYN (docs/source/perf/dynamo.md)',
      'TX:114-160 (torch_xla.compile(f, full_graph, name, max_different_graphs); pytorch/xla@022ecde torch_xla/torch_xla.py:114)',
      'PT:torch/_dynamo/backends/torchxla.py (openxla, openxla_eval; trace_once deprecation warning)',
      'PT:torch/nn/modules/module.py `Module.compile` (torch 2.2+: `self._compiled_call_impl = torch.compile(self._call_impl, *args, **kwargs)`)',
    ],
    torchtpu:
      'The preview compiles with `torch.compile(backend="tpu", dynamic=False)`; the fix adds those arguments (unsafe: the preview API is moving). In dual-path style the backend is picked ' +
      'per device: `"openxla"` on XLA, `"tpu"` with `dynamic=False` when `accel.backend()` is `tpu`, the original backend elsewhere with `dynamic=None`, torch.compile\'s default ' +
      '(https://docs.pytorch.org/docs/stable/generated/torch.compile.html), so CUDA and CPU compile as before. TorchTPU\'s compile options are otherwise not public ' +
      '(vllm-torchtpu documents its compilation cache only: https://raw.githubusercontent.com/vllm-project/vllm-torchtpu/9c8d9b0534b19627978777b915162d3bcb32f4cb/docs/user_guide/compilation_cache.md).',
  },
  check(ctx) {
    const sema = ctx.sema;
    const text = ctx.text;
    const tpu = ctx.idiom.profile === 'torchtpu';
    // the preview compiles training and inference alike with backend="tpu"
    const training = !tpu && sema.nodes('call').some((c) => sema.isTrainSignal(c));

    const reportedCompiles: Node[] = [];
    const reportCompile = (call: Node | null, deco: Node | null) => {
      const target = call ?? deco!;
      if (sema.inXlaAwareBranch(target)) return;
      const { positional, keywords, list } = call ? callArgs(call) : { positional: [], keywords: new Map<string, Node>(), list: null };
      if (keywords.has('disable')) return;
      const backendKw = keywords.get('backend');
      const backendVal = kwValue(backendKw);
      const backend = backendVal ? plainString(backendVal) : null;
      if (backendVal && backend === null) return; // a variable or callable: unknown
      const modeKw = keywords.get('mode');
      const optsKw = keywords.get('options');
      const mode = plainString(kwValue(modeKw));
      const inductorOnly = (mode !== null && mode !== 'default') || !!optsKw;

      if (backend && XLA_BACKENDS.has(backend)) return;
      if (backend && LEGACY_BACKENDS.has(backend)) {
        const repl = ctx.idiom.profile === 'torch_xla' ? '"openxla"' : null;
        ctx.report(backendVal!, {
          message: tpu
            ? `\`backend="${backend}"\` is a legacy backend that targets no TPU device of the preview; compile with \`backend="tpu", dynamic=False\``
            : `\`backend="${backend}"\` is a legacy name, deprecated in favour of \`backend="openxla"\``,
          fix: repl ? { applicability: 'safe', title: 'Use `backend="openxla"`', edits: [replace(backendVal!, repl)] } : null,
        });
        return;
      }
      if (backend && !GPU_BACKENDS.has(backend)) return;

      const what = backend ? `\`backend="${backend}"\`` : 'the default inductor backend';
      const extra = inductorOnly ? ` (and inductor-only \`${modeKw ? `mode="${mode}"` : 'options'}\`)` : '';
      const message = training
        ? `\`torch.compile\` with ${what}${extra} cannot target XLA; for training use \`torch_xla.compile\` on the step, or no \`torch.compile\``
        : tpu
          ? `\`torch.compile\` with ${what}${extra} cannot target the TPU; compile with \`backend="tpu", dynamic=False\``
          : `\`torch.compile\` with ${what}${extra} cannot target XLA; compile with \`backend="openxla"\``;

      let fix: FixDraft | null = null;
      if (!training) {
        // inference: pick the XLA backend, keep the rest
        const edits = [];
        const dual = ctx.idiom.dualPath;
        if (dual && inductorOnly) {
          fix = null;
        } else {
          const gpu = backend ?? 'inductor';
          // dual-path: openxla on XLA, the preview's backend="tpu" (with dynamic=False) on the tpu device, the
          // original backend elsewhere (dynamic=None is torch.compile's default: CUDA and CPU compile as before)
          const onTpu = `${accelName(ctx, 'backend')}() == "tpu"`;
          const value = dual ? `"openxla" if ${accelName(ctx, 'is_xla')}() else "tpu" if ${onTpu} else "${gpu}"` : tpu ? '"tpu"' : '"openxla"';
          const imports = dual ? ctx.idiom.isXla().imports : [];
          if (backendVal) edits.push(replace(backendVal, value));
          if (!dual) {
            if (modeKw) edits.push(dropArg(text, modeKw));
            if (optsKw) edits.push(dropArg(text, optsKw));
          }
          const extraArgs = keywords.has('dynamic') ? '' : dual ? `, dynamic=False if ${onTpu} else None` : tpu ? ', dynamic=False' : '';
          if (call && list) {
            if (!backendVal) edits.push(appendArg(text, list, `backend=${value}${extraArgs}`));
            else if (extraArgs) edits.push(appendArg(text, list, extraArgs.slice(2)));
          } else if (deco) {
            edits.push(insertAt(deco.endIndex, `(backend=${value}${extraArgs})`));
          }
          fix = {
            applicability: tpu ? 'unsafe' : 'safe',
            title: tpu
              ? `Compile with \`backend="tpu", dynamic=False\`${dual ? ' on the tpu device' : ''}`
              : `Compile with \`backend=${dual ? '"openxla"` on XLA (`"tpu"`, `dynamic=False` on the tpu device)' : '"openxla"`'}`,
            edits,
            imports,
            needsAccel: dual,
          };
        }
      } else if (ctx.idiom.dualPath) {
        const cond = `disable=${accelName(ctx, 'is_xla')}()`;
        const edits = call && list ? [appendArg(text, list, cond)] : [insertAt(deco!.endIndex, `(${cond})`)];
        fix = { applicability: 'unsafe', title: 'Disable `torch.compile` on XLA', edits, imports: ctx.idiom.isXla().imports, needsAccel: true };
      } else if (ctx.idiom.profile === 'torch_xla') {
        // drop the compile: `m = torch.compile(m, ...)` → `m = m`; `@torch.compile` → removed
        if (call && positional.length === 1 && positional[0].type !== 'keyword_argument') {
          const stmt = call.parent;
          const simpleSelf = stmt?.type === 'assignment' && stmt.childForFieldName('left')?.text === positional[0].text && stmt.parent?.type === 'expression_statement';
          const edit = simpleSelf ? deleteStatement(text, stmt!.parent!) : replace(call, positional[0].text);
          fix = { applicability: 'unsafe', title: 'Drop `torch.compile` for XLA training', edits: [edit] };
        } else if (!call && deco) {
          const decorator = deco.parent!;
          let end = decorator.endIndex;
          const nl = /^[ \t]*\r?\n[ \t]*/.exec(text.slice(end));
          if (nl) end += nl[0].length;
          fix = { applicability: 'unsafe', title: 'Drop `@torch.compile` for XLA training', edits: [replaceRange(decorator.startIndex, end, '')] };
        } else if (call && call.parent?.type === 'decorator' && positional.length === 0) {
          const decorator = call.parent;
          let end = decorator.endIndex;
          const nl = /^[ \t]*\r?\n[ \t]*/.exec(text.slice(end));
          if (nl) end += nl[0].length;
          fix = { applicability: 'unsafe', title: 'Drop `@torch.compile` for XLA training', edits: [replaceRange(decorator.startIndex, end, '')] };
        }
      }
      reportedCompiles.push(target);
      ctx.report(target, { message, fix });
    };

    for (const call of sema.nodes('call')) {
      if (sema.callee(call) === 'torch.compile') reportCompile(call, null);
      else if (moduleCompile(ctx, call)) {
        // `model.compile()`: nn.Module.compile is `torch.compile(self._call_impl, *args, **kwargs)` (PT:torch/nn/modules/
        // module.py `Module.compile`, torch 2.2+), the same inductor default; no fix (its options are the caller's)
        const recv = (call.childForFieldName('function') as Node).childForFieldName('object')!;
        ctx.report(call, {
          message: tpu
            ? `\`${recv.text.length > 30 ? '…' : recv.text}.compile()\` is \`torch.compile\` of the module's forward (\`nn.Module.compile\`) with the inductor backend, which cannot target the TPU; pass \`backend="tpu", dynamic=False\``
            : `\`${recv.text.length > 30 ? '…' : recv.text}.compile()\` is \`torch.compile\` of the module's forward (\`nn.Module.compile\`) with the inductor backend, which cannot target an XLA device; pass \`backend="openxla"\` for inference, or leave it off on XLA for training`,
        });
      }
    }
    for (const deco of sema.nodes('decorated_definition')) {
      for (const d of deco.namedChildren) {
        if (d?.type !== 'decorator') continue;
        const expr = d.namedChildren[0];
        if (expr && (expr.type === 'identifier' || expr.type === 'attribute') && sema.resolve(expr) === 'torch.compile') reportCompile(null, expr);
      }
    }
    // `torch._inductor.config.<x> = ...`
    for (const a of sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      if (left?.type !== 'attribute') continue;
      const q = sema.resolve(left);
      // a tuning flag set in the same block as a reported `torch.compile`, or in a block nested in the compile's
      // (`if args.compile:` / `if hasattr(config, ...):` then `torch.compile`, llm.c), is part of that finding
      if (q && q.startsWith('torch._inductor.config.') && !reportedCompiles.some((c) => sameBlockOrAncestor(a, c) || sameBlockOrAncestor(c, a))) {
        ctx.report(left, { severity: 'info', message: `\`${q.replace(/^torch\./, 'torch.')}\` tunes inductor, which does not run on XLA` });
      }
    }
  },
});

/** `a` and `b` share a block, or `b` sits in a block nested under `a`'s (`if args.compile: config.x = True; …; torch.compile(m)`). */
function sameBlockOrAncestor(a: Node, b: Node): boolean {
  const block = (n: Node) => {
    let p = n.parent;
    while (p && p.type !== 'block' && p.type !== 'module') p = p.parent;
    return p;
  };
  const ba = block(a);
  return !!ba && b.startIndex >= ba.startIndex && b.endIndex <= ba.endIndex && ba.type !== 'module';
}
