import { defineRule, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, enclosingStatement, methodName, receiver, type Semantics } from '../../core/semantics';
import { deleteStatement, insertLineAfter, insertLineBefore } from '../../core/edits';
import { isDeviceLike, isXlaDevice } from './runtime-util';
import { lastName } from '../../model/facts';

/** Optimizers and parameter-holding EMAs (by the last name segment when not resolved to torch.optim). */
const OPTIMIZER_NAME = /^(Adam\w*|SGD|RMSprop|Adagrad|Adadelta|Adamax|NAdam|RAdam|ASGD|Rprop|LBFGS|SparseAdam|Adafactor|Lion|LAMB|Lamb|LARS|Lars|Shampoo|Sophia\w*|\w*Optimizer|ExponentialMovingAverage|EMA|ModelEma\w*)$/;

interface Move {
  call: Node;
  /** The statement holding the move when it is a plain `m.to(d)` / `m = m.to(d)` / `m = Cls(...).to(d)` line. */
  stmt: Node | null;
  /** The name holding the model after the move. */
  holder: string;
}

function movesOf(ctx: RuleContext, name: string, after: number, scope: Node | null, xlaOnly = false): Move[] {
  const out: Move[] = [];
  for (const call of ctx.sema.nodes('call')) {
    if (call.startIndex < after) continue;
    const meth = methodName(call);
    if (meth !== 'to' && meth !== 'cuda') continue;
    const recv = receiver(call);
    if (!recv || recv.text !== name) continue;
    if ((ctx.sema.enclosingFunction(call)?.id ?? null) !== (scope?.id ?? null)) continue;
    const { positional, keywords } = callArgs(call);
    const dev = positional[0] ?? keywords.get('device')?.childForFieldName('value') ?? null;
    if (meth === 'to' && !(xlaOnly ? isXlaDevice(ctx.sema, dev) : isDeviceLike(ctx.sema, dev, ctx.model))) continue;
    if (meth === 'cuda' && xlaOnly) continue;
    out.push({ call, stmt: simpleStatement(call), holder: name });
  }
  return out;
}

/** The statement when it is exactly `call` or `x = call`. */
function simpleStatement(call: Node): Node | null {
  const stmt = enclosingStatement(call);
  if (stmt.type !== 'expression_statement' || stmt.namedChildren.length !== 1) return null;
  const inner = stmt.namedChildren[0]!;
  if (inner.id === call.id) return stmt;
  if (inner.type === 'assignment' && inner.childForFieldName('right')?.id === call.id && inner.childForFieldName('left')?.type === 'identifier') return stmt;
  return null;
}

interface Tie {
  /** `lm_head.weight` (without `self.`). */
  left: string;
  right: string;
  /** The tying assignment. */
  node: Node;
  /** The method `__init__` calls that ties (`tie_weights`), absent when `__init__` ties itself. */
  via?: string;
}

/**
 * `self.A.weight = self.B.weight` in the class's `__init__`, or in a method of the class that `__init__` calls as
 * `self.m()` (`self.tie_weights()`), read in the class's own module.
 */
function tiesOf(sema: Semantics, cls: Node): Tie[] {
  const out: Tie[] = [];
  const methods = new Map<string, Node>();
  for (const st of cls.childForFieldName('body')?.namedChildren ?? []) {
    const d = st?.type === 'decorated_definition' ? st.childForFieldName('definition') : st;
    const n = d?.type === 'function_definition' ? d.childForFieldName('name')?.text : undefined;
    if (d && n) methods.set(n, d);
  }
  const init = methods.get('__init__');
  if (!init) return out;
  const bodies = [init];
  for (const c of sema.within('call', init)) {
    const f = c.childForFieldName('function');
    if (f?.type !== 'attribute' || f.childForFieldName('object')?.text !== 'self') continue;
    const m = methods.get(f.childForFieldName('attribute')?.text ?? '');
    if (m && m.id !== init.id && !bodies.includes(m)) bodies.push(m);
  }
  for (const body of bodies) {
    for (const a of sema.within('assignment', body)) {
      if (sema.enclosingFunction(a)?.id !== body.id || sema.enclosingClass(a)?.id !== cls.id) continue;
      const lm = /^self\.([\w.]+\.weight)$/.exec(a.childForFieldName('left')?.text ?? '');
      const rm = /^self\.([\w.]+\.weight)$/.exec(a.childForFieldName('right')?.text ?? '');
      if (lm && rm) out.push({ left: lm[1], right: rm[1], node: a, ...(body.id !== init.id ? { via: body.childForFieldName('name')?.text ?? '' } : {}) });
    }
  }
  return out;
}

/** `fabric.setup(model, ...)` / `fabric.setup_module(model)`: Lightning Fabric moves the module to the device. */
function fabricSetup(ctx: RuleContext, holder: string, after: number, scope: Node | null): Node | null {
  for (const call of ctx.sema.nodes('call')) {
    if (call.startIndex < after || (ctx.sema.enclosingFunction(call)?.id ?? null) !== (scope?.id ?? null)) continue;
    const meth = methodName(call);
    if (meth !== 'setup' && meth !== 'setup_module') continue;
    const recv = receiver(call);
    if (!recv || !(/fabric/i.test(recv.text) || ctx.sema.isBoundTo(recv.text, (v) => /(^|\.)Fabric$/.test(ctx.sema.callee(v) ?? v.childForFieldName('function')?.text ?? '')))) continue;
    const first = callArgs(call).positional[0];
    if (first?.text === holder && callArgs(call).keywords.get('move_to_device')?.childForFieldName('value')?.text !== 'False') return call;
  }
  return null;
}

/**
 * A tie the script makes itself, `m.a.weight = m.b.weight`, before `m` moves to the device (`m.to(dev)`, `m.cuda()`,
 * Lightning Fabric's `fabric.setup(m)`, whose XLA path copies the parameters: lightning/fabric/fabric.py
 * `_move_model_to_device`, "XLA makes a copy on the parameters", remaps only the optimizers' references), with no
 * re-tie after it: on XLA the two weights become independent copies.
 */
function reportScriptTies(ctx: RuleContext): void {
  const sema = ctx.sema;
  for (const a of sema.nodes('assignment')) {
    const lm = /^([A-Za-z_]\w*)\.([\w.]+\.weight)$/.exec(a.childForFieldName('left')?.text ?? '');
    const rm = /^([A-Za-z_]\w*)\.([\w.]+\.weight)$/.exec(a.childForFieldName('right')?.text ?? '');
    if (!lm || !rm || lm[1] !== rm[1] || lm[1] === 'self' || lm[2] === rm[2]) continue;
    const holder = lm[1];
    const scope = sema.enclosingFunction(a);
    const move = movesOf(ctx, holder, a.endIndex, scope)[0]?.call ?? fabricSetup(ctx, holder, a.endIndex, scope);
    if (!move) continue;
    // tied again after the move?
    const esc = holder.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (new RegExp(`\\b${esc}\\.[\\w.]+\\.weight\\s*=\\s*${esc}\\.[\\w.]+\\.weight|\\b${esc}\\.tie_weights\\(`).test(ctx.text.slice(move.endIndex, scope?.endIndex ?? ctx.text.length))) continue;
    ctx.report(move, {
      message: `\`${a.text.length > 60 ? `${holder}.${lm[2]} = ${holder}.${rm[2]}` : a.text}\` (line ${line(ctx, a)}) ties the weights before \`${move.text.length > 40 ? `${methodName(move)}(${holder})` : move.text}\` moves the model: on XLA the move copies each parameter, so the two become independent copies (re-tie after the move)`,
      // where to re-tie (on the wrapper the move returns, before the optimizer is built or set up) is for review
      fix: null,
      related: [{ start: a.startIndex, end: a.endIndex, message: 'the tie, lost on the XLA device after the move' }],
    });
  }
}

function line(ctx: RuleContext, node: Node): number {
  return ctx.text.slice(0, node.startIndex).split('\n').length;
}

export default defineRule({
  id: 'TPU108',
  name: 'param-identity-move',
  title: 'Parameter identity changes on `.to(xla)`: optimizer built before the move, and weight tying',
  severity: 'warning',
  step: 3,
  effort: 1,
  message: 'Moving the model to the XLA device creates new Parameter objects',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Move the model before building the optimizer' },
  triggers: ['.parameters(', '.weight', 'tie_weights', 'tie_word_embeddings'],
  docs: {
    what:
      'Checks for (a) an optimizer or EMA built from `model.parameters()` before `model.to(device)`/`.cuda()` on the same model in the same scope, and ' +
      '(b) weights tied in a module\'s `__init__` (`self.lm_head.weight = self.wte.weight`), or a Hugging Face model loaded with `tie_word_embeddings=True` or tied by `tie_weights()`, ' +
      'then moved to the device without being tied again. With project scope the class may live in another module (`from model import GPT`): the finding is on the move, with the tie in the constructor (or in a method `__init__` calls, `self.tie_weights()`) as a related location. Code managed by HF `Trainer`, Accelerate or Lightning is skipped: they build the optimizer after the move. A tie the script makes itself (`model.transformer.wte.weight = model.lm_head.weight`) before the model moves (`.to(device)`, `.cuda()`, or Lightning Fabric\'s `fabric.setup(model)`) with no re-tie after it in the same function is reported at the move, with no fix (where to re-tie depends on the wrapper the move returns).',
    why:
      'Moving a CPU module to an XLA device replaces its Parameter objects, so an optimizer built earlier keeps updating the stale CPU tensors and the model does not train (reported as an error: no exception, wrong results) ' +
      '(pytorch/xla#1623, #1764). Tied weights become two independent copies: tying must be done "AFTER the modules are moved to an XLA device. Otherwise two independent copies of the shared tensor will be made" (TS:376-381). ' +
      'The HF Accelerate TPU guide says the same: moving the model to a TPU breaks weight tying and the weights must be re-tied.',
    example: 'model = GPT(cfg)\nopt = torch.optim.AdamW(model.parameters(), lr=3e-4)\nmodel.to(device)',
    useInstead: 'model = GPT(cfg)\nmodel.to(device)\nmodel.lm_head.weight = model.transformer.wte.weight  # re-tie after the move\nopt = torch.optim.AdamW(model.parameters(), lr=3e-4)',
    fixSafety:
      'Unsafe: it reorders statements (the move goes right before the optimizer) or adds a re-tie line after the move (`m.A.weight = m.B.weight` mirroring the `__init__` tie, or `m.tie_weights()` for HF models). ' +
      'Offered only when the move is a plain statement in the same block and nothing it uses is assigned in between. Moving before building the optimizer is also correct on CUDA, so the fix is the same in every style.',
    sources: [
      'pytorch torch/nn/modules/module.py Module._apply: the Parameter object is kept only when `torch._has_compatible_shallow_copy_type(param, param_applied)` (c10 TensorImpl::has_compatible_shallow_copy_type: same key set or both dense CPU/CUDA-like backends); CPU to XLA is not, so `_parameters[key]` becomes a new Parameter',
      'lightning/fabric/fabric.py Fabric._move_model_to_device: on XLAStrategy `model = self.to_device(model)`, "XLA makes a copy on the parameters", then only the optimizers\' parameter references are remapped (no re-tie; read at Lightning-AI/pytorch-lightning, src/lightning/fabric/fabric.py)',
      'TS: docs/source/learn/troubleshoot.md:376-381 (tie weights after moving to the XLA device)',
      'pytorch/xla#1623 "Sending .to(device) after defining optimizer leads to subtle bug"; pytorch/xla#1764 "Model does not train"',
      'huggingface/accelerate docs, concept guide "Training on TPUs" (re-tie weights after moving to TPU)',
    ],
    torchtpu: 'Whether the native `tpu` device keeps Parameter identity on `.to("tpu")` is not known; the same order (move, re-tie, then build the optimizer) is safe everywhere.',
  },
  check(ctx) {
    const sema = ctx.sema;
    if (sema.framework) return;

    // (a) optimizer before the move
    for (const call of sema.nodes('call')) {
      const fq = sema.callee(call) ?? '';
      const last = (fq || (call.childForFieldName('function')?.text ?? '')).split('.').pop() ?? '';
      const isOpt = /^torch\.optim\.(?!lr_scheduler|swa_utils)\w+$/.test(fq) || /^torch\.optim\.swa_utils\.(?!AveragedModel)/.test(fq) ? true : OPTIMIZER_NAME.test(last);
      if (!isOpt || /lr_scheduler|Scheduler|AveragedModel/.test(fq + last)) continue;
      const { positional, keywords } = callArgs(call);
      const first = positional[0] ?? keywords.get('params')?.childForFieldName('value') ?? null;
      if (!first) continue;
      const pcall = [first, ...sema.within('call', first)].find((c) => c.type === 'call' && /^(parameters|named_parameters)$/.test(methodName(c) ?? ''));
      const model = pcall ? receiver(pcall) : null;
      if (!model || (model.type !== 'identifier' && model.type !== 'attribute')) continue;
      const scope = sema.enclosingFunction(call);
      const moves = movesOf(ctx, model.text, call.endIndex, scope);
      if (!moves.length) continue;
      const move = moves[0];
      // an optimizer rebuilt after the move replaces the stale one
      const optStmt = enclosingStatement(call);
      const target = optStmt.type === 'expression_statement' && optStmt.namedChildren[0]?.type === 'assignment' ? optStmt.namedChildren[0]!.childForFieldName('left')?.text : null;
      if (target && sema.bindings(target).some((v) => v.startIndex > move.call.endIndex && v.type === 'call' && v.text.includes(`${model.text}.`) && (sema.enclosingFunction(v)?.id ?? null) === (scope?.id ?? null))) continue;
      let fix = null;
      const ms = move.stmt;
      if (ms && ms.parent?.id === optStmt.parent?.id && optStmt.parent) {
        const between = optStmt.parent.namedChildren.filter((n): n is Node => !!n && n.startIndex >= optStmt.startIndex && n.endIndex <= ms.startIndex);
        const used = new Set((ms.text.match(/[A-Za-z_]\w*/g) ?? []).filter((w) => w !== model.text.split('.')[0]));
        const clobbered = between.some((n) => [...sema.within('assignment', n), ...sema.within('augmented_assignment', n)].some((a) => used.has(a.childForFieldName('left')?.text ?? '')));
        const sameLine = ctx.text.slice(optStmt.endIndex, ms.startIndex).indexOf('\n') === -1;
        if (!clobbered && !sameLine) {
          fix = {
            title: `Move \`${model.text}\` to the device before building the optimizer`,
            applicability: 'unsafe' as const,
            edits: [insertLineBefore(ctx.text, optStmt, ms.text), deleteStatement(ctx.text, ms)],
          };
        }
      }
      // error: the optimizer silently trains nothing on XLA. torch/nn/modules/module.py Module._apply keeps a
      // Parameter object only when torch._has_compatible_shallow_copy_type(param, param_applied) holds (dense
      // CPU/CUDA-like backends, c10 TensorImpl::has_compatible_shallow_copy_type); a CPU -> XLA move fails it,
      // so the module gets new Parameters and the optimizer keeps the old CPU ones (pytorch/xla#1623, #1764).
      ctx.report(call, {
        // (torchtpu: whether `.to("tpu")` keeps identity is not known, so it stays a warning there)
        severity: ctx.idiom.profile === 'torchtpu' ? 'warning' : 'error',
        message: `optimizer built from \`${model.text}.parameters()\` before \`${move.call.text.length > 40 ? `${model.text}.${methodName(move.call)}(…)` : move.call.text}\` (line ${line(ctx, move.call)}): on XLA the move creates new parameters and the optimizer keeps updating the CPU copies`,
        fix,
      });
    }

    // (c) a script that ties weights itself (`model.transformer.wte.weight = model.lm_head.weight`), then moves the model
    reportScriptTies(ctx);

    // (b) weight tying before the move
    const ties = new Map<string, Tie[]>();
    for (const cls of sema.nodes('class_definition')) {
      const name = cls.childForFieldName('name')?.text;
      if (!name) continue;
      const pairs = tiesOf(sema, cls);
      if (pairs.length) ties.set(name, pairs);
    }
    for (const a of sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      let right = a.childForFieldName('right');
      if (left?.type !== 'identifier' || right?.type !== 'call') continue;
      const holder = left.text;
      // m = Cls(...).to(dev): the move is the right-hand side itself
      let inlineMove: Node | null = null;
      if (methodName(right) === 'to' || methodName(right) === 'cuda') {
        const recv = receiver(right);
        const { positional, keywords } = callArgs(right);
        const dev = positional[0] ?? keywords.get('device')?.childForFieldName('value') ?? null;
        if (recv?.type === 'call' && (methodName(right) === 'cuda' || isDeviceLike(sema, dev, ctx.model))) {
          inlineMove = right;
          right = recv;
        }
      }
      const ctor = right.childForFieldName('function');
      let clsName = ctor?.type === 'identifier' ? ctor.text : null;
      let customTies = clsName ? ties.get(clsName) : undefined;
      // a class of another module of the project (`from model import GPT`): its constructor's ties, with their lines
      let external: { path: string; file: string } | null = null;
      // a class name (capitalised last segment): other calls are not resolved
      if (!customTies && ctx.project && ctor && /^[A-Z]/.test(lastName(ctor)) && !sema.bindings(ctor.text.split('.')[0]).length) {
        const r = ctx.project.resolveCall(right, sema, ctx.path);
        if (r?.kind === 'class') {
          const pairs = tiesOf(r.module.sema, r.def);
          if (pairs.length) {
            customTies = pairs;
            clsName = r.def.childForFieldName('name')?.text ?? ctor.text;
            external = { path: r.path, file: r.path.split('/').pop() ?? r.path };
          }
        }
      }
      const hf = methodName(right) === 'from_pretrained';
      const hfTied = hf && (/tie_word_embeddings\s*=\s*True/.test(right.text) || /\.tie_weights\(\)/.test(ctx.text.slice(a.endIndex)));
      if (!customTies && !hfTied) continue;
      const scope = sema.enclosingFunction(a);
      const moves: Move[] = inlineMove ? [{ call: inlineMove, stmt: simpleStatement(inlineMove), holder }] : movesOf(ctx, holder, a.endIndex, scope, !!hf);
      for (const move of moves) {
        if (hf && !isXlaDevice(sema, callArgs(move.call).positional[0] ?? null)) continue;
        // tied again after the move?
        const rest = ctx.text.slice(move.call.endIndex);
        const esc = holder.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        if (new RegExp(`\\b${esc}\\.tie_weights\\(`).test(rest) || new RegExp(`\\b${esc}\\.[\\w.]+\\.weight\\s*=\\s*${esc}\\.[\\w.]+\\.weight`).test(rest)) continue;
        if (hf && /\.tie_weights\(/.test(ctx.text.slice(a.endIndex, move.call.startIndex)) === false && !/tie_word_embeddings\s*=\s*True/.test(right.text)) continue;
        const retie = customTies ? customTies.map(({ left: l, right: r }) => `${holder}.${l} = ${holder}.${r}`) : [`${holder}.tie_weights()`];
        const fix = move.stmt
          ? { title: 'Re-tie the weights after the move', applicability: 'unsafe' as const, edits: [insertLineAfter(ctx.text, move.stmt, retie.join('; '))] }
          : null;
        ctx.report(move.call, {
          message: customTies
            ? `\`${clsName}\`${external ? ` (${external.file})` : ''} ties \`${customTies[0].left}\` to \`${customTies[0].right}\` in \`__init__\`${customTies[0].via ? ` (through \`self.${customTies[0].via}()\`)` : ''}; moving it to the XLA device unties them (re-tie after the move)`
            : `moving a weight-tied Hugging Face model to the XLA device unties its weights; call \`${holder}.tie_weights()\` after the move`,
          fix,
          related: customTies?.map((t) => ({
            start: t.node.startIndex,
            end: t.node.endIndex,
            ...(external ? { path: external.path } : {}),
            message: `the tie \`${t.left}\` = \`${t.right}\`: two independent copies after the move to the XLA device`,
          })),
        });
        break;
      }
    }
  },
});
