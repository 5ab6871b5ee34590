import { defineRule } from '../../core/rule';
import { downgrade } from '../../core/engine';
import { replace, replaceRange } from '../../core/edits';
import type { Node } from '../../core/parse';
import type { RuleContext, FixDraft } from '../../core/rule';
import { callArgs, kwValue, mentionsXla, methodName, receiver, stringContent } from '../../core/semantics';
import type { ImportSpec } from '../../core/types';
import { gpuSelfTest } from '../device/cuda-util';
import { bf16ProbeRaises } from '../shared';
import { stringSource } from '../distributed/util';
import { autocastCall, isBfloat16, isFloat16, torchAttr, underCudaOnlyBranch, evalsOnTpu } from './util';

const HF_ARGS = /(^|\.)(TrainingArguments|Seq2SeqTrainingArguments|SFTConfig|DPOConfig|ORPOConfig|RewardConfig|GRPOConfig)$/;
const LIGHTNING = /^(lightning|lightning\.pytorch|pytorch_lightning|lightning\.fabric|lightning_fabric)\.(Trainer|Fabric)$/;

/**
 * The `"fp16"` literal an Accelerate `mixed_precision=` value evaluates to: the literal itself, a name or `args.x` bound
 * to it once (a parameter default `mixed_precision_type = 'fp16'`, an argparse default), or one arm of a conditional
 * (`mixed_precision_type if amp else 'no'`, then `arm`).
 */
const ACCELERATE_FP16_RAISES = 'on a TPU host `Accelerator(...)` raises `ValueError: fp16 mixed precision requires a GPU (not \'xla\')` (accelerate v1.9.0 accelerator.py:557-567)';

const ACCELERATE_FP16_TORCHTPU = 'Accelerate allows fp16 only on its GPU device types (accelerate v1.9.0 accelerator.py:557-567)';

function accelerateFp16(ctx: RuleContext, v: Node): { literal: Node; arm: boolean } | null {
  const one = (e: Node | null | undefined): Node | null => {
    if (!e) return null;
    const src = e.type === 'string' ? e : stringSource(ctx, e)?.literal ?? null;
    return src && stringContent(src) === 'fp16' ? src : null;
  };
  if (v.type === 'conditional_expression') {
    const arm = one(v.namedChildren[0]) ?? one(v.namedChildren[2]);
    return arm ? { literal: arm, arm: true } : null;
  }
  const lit = one(v);
  return lit ? { literal: lit, arm: false } : null;
}

function bf16For(ctx: RuleContext, node: Node): { text: string; imports: { module: string }[] } {
  if (node.type === 'string') {
    const q = node.text[node.text.length - 1];
    const content = stringContent(node) ?? '';
    return { text: `${q}${content.startsWith('torch.') ? 'torch.bfloat16' : content === 'fp16' ? 'bf16' : 'bfloat16'}${q}`, imports: [] };
  }
  if (node.type === 'attribute') return { text: `${node.childForFieldName('object')!.text}.bfloat16`, imports: [] };
  return torchAttr(ctx, 'bfloat16');
}

const TORCH_AUTOCASTS = /^torch\.(autocast|amp\.autocast|amp\.autocast_mode\.autocast|cuda\.amp\.autocast|cpu\.amp\.autocast)$/;
const FSDP_MP = /^torch\.distributed\.(fsdp\.(fully_sharded_data_parallel\.|api\.)?MixedPrecision|fsdp\.MixedPrecisionPolicy|_composable\.fsdp\.MixedPrecisionPolicy|_composable\.fsdp\.fully_shard\.MixedPrecisionPolicy|fsdp\._fully_shard\._fsdp_api\.MixedPrecisionPolicy)$/;

/** A `from torch.distributed…fsdp import MixedPrecision…` statement inside the function that makes `call`. */
function localFsdpImport(ctx: RuleContext, call: Node): boolean {
  const fn = ctx.sema.enclosingFunction(call);
  return !!fn && ctx.sema.within('import_from_statement', fn).some((s) => /^from\s+torch\.distributed\.[\w.]*fsdp[\w.]*\s+import\b[^\n]*\bMixedPrecision/.test(s.text));
}

/** The condition of the `if`/`elif` arm whose body holds `node` (in the same function). */
function branchCondition(node: Node): Node | null {
  for (let p: Node | null = node.parent, child: Node = node; p; child = p, p = p.parent) {
    if ((p.type === 'if_statement' || p.type === 'elif_clause') && child.id === p.childForFieldName('consequence')?.id) return p.childForFieldName('condition');
    if (p.type === 'function_definition' || p.type === 'module') return null;
  }
  return null;
}

const short = (t: string, max = 60) => (t.length > max ? t.slice(0, max - 3) + '…' : t);

/** A dtype lookup table: a dict literal with string keys (written inline or bound to a name). */
function dtypeTable(ctx: RuleContext, node: Node | null): { key: string; value: Node }[] | null {
  let dict = node;
  if (dict?.type === 'identifier') {
    const values = ctx.sema.bindings(dict.text);
    dict = values.length === 1 ? values[0] : null;
  }
  if (dict?.type !== 'dictionary') return null;
  const out: { key: string; value: Node }[] = [];
  for (const pair of dict.namedChildren) {
    if (pair?.type !== 'pair') continue;
    const k = pair.childForFieldName('key');
    const v = pair.childForFieldName('value');
    const key = k?.type === 'string' ? stringContent(k) : null;
    if (key !== null && v) out.push({ key, value: v });
  }
  return out.length ? out : null;
}

/** String literals a lookup key can hold: a literal, a name's string bindings (same scope), an argparse default or config field. */
function keySources(ctx: RuleContext, key: Node): { node: Node; flag?: string }[] {
  if (key.type === 'string') return [{ node: key }];
  if (key.type === 'identifier') {
    const fn = ctx.sema.enclosingFunction(key);
    let values = ctx.sema.bindings(key.text).filter((v) => (ctx.sema.enclosingFunction(v)?.id ?? -1) === (fn?.id ?? -1));
    if (!values.length && fn) values = ctx.sema.bindings(key.text).filter((v) => ctx.sema.enclosingFunction(v) === null);
    // a CUDA-keyed picker is the picker check's; another expression (a flag, a config read) leaves the choice to the user
    return values.filter((v) => v.type === 'string').map((node) => ({ node }));
  }
  if (key.type === 'attribute') {
    const attr = key.childForFieldName('attribute')?.text ?? '';
    const out: { node: Node; flag?: string }[] = [];
    for (const call of ctx.sema.callsNamed('add_argument')) {
      if (methodName(call) !== 'add_argument') continue;
      const { positional, keywords } = callArgs(call);
      const def = kwValue(keywords.get('default'));
      if (def?.type !== 'string') continue;
      const dest = kwValue(keywords.get('dest'));
      const flag = positional.find((x) => x.type === 'string' && (stringContent(x) ?? '').startsWith('--'));
      const name = dest ? stringContent(dest) : flag ? stringContent(flag)!.replace(/^-+/, '').replace(/-/g, '_') : null;
      if (name === attr) out.push({ node: def, flag: flag ? stringContent(flag) ?? undefined : undefined });
    }
    // dataclass / config class field `dtype: str = 'float16'`
    for (const a of ctx.sema.nodes('assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (left?.type === 'identifier' && left.text === attr && right?.type === 'string' && ctx.sema.enclosingClass(a) && !ctx.sema.enclosingFunction(a)) out.push({ node: right });
    }
    return out;
  }
  return [];
}

const HOST_CALL = /^(cpu|numpy|tolist|item)$/;

/**
 * A float16 cast that sets how data is stored rather than what the device computes in: the value is on the host
 * (`.cpu().half()`, `.half().cpu()`), reaches `torch.save` (inline, or through a name saved later in the same scope), or
 * converts a state dict (`{k: v.half() for k, v in model.state_dict().items()}`). Rewriting it would change the checkpoint format.
 */
/** `m.half().float()`: cast down and straight back (rounding the values to float16 precision), no float16 compute. */
function roundTrip(call: Node): boolean {
  const p = call.parent;
  if (p?.type !== 'attribute' || p.childForFieldName('object')?.id !== call.id) return false;
  return /^(float|double|bfloat16)$/.test(p.childForFieldName('attribute')?.text ?? '') && p.parent?.type === 'call';
}

const FP16_NAME = /^(fp16|float16|half|torch\.float16|torch\.half|16|16-mixed)$/;
const BF16_NAME = /^(bf16|bfloat16|torch\.bfloat16|bf16-mixed)$/;

const FLOAT16_TEST = /\b(torch\.)?(float16|half)\b/;

/**
 * `.half()` taken only when the input already is float16 (`m.half() if x.dtype is torch.float16 else m`, `if dtype in
 * (torch.float16, ...): return cos.half()`): it follows the caller's dtype, it does not choose float16.
 */
function followsDtype(call: Node): boolean {
  for (let p: Node | null = call.parent, child: Node = call; p; child = p, p = p.parent) {
    if (p.type === 'conditional_expression' && p.namedChildren[0]?.id === child.id && FLOAT16_TEST.test(p.namedChildren[1]?.text ?? '') && /\b(dtype|is_floating_point)\b/.test(p.namedChildren[1]?.text ?? '')) return true;
    if ((p.type === 'if_statement' || p.type === 'elif_clause') && child.id === p.childForFieldName('consequence')?.id) {
      const cond = p.childForFieldName('condition')?.text ?? '';
      if (FLOAT16_TEST.test(cond) && /\bdtype\b/.test(cond) && !/\bnot\b|!=/.test(cond)) return true;
      // `if z.type() == 'torch.cuda.HalfTensor': audio = audio.half()` (a CUDA half input: never on a TPU host)
      if (/HalfTensor\b/.test(cond) && !/\bnot\b|!=/.test(cond)) return true;
      if (fp16ArmBesideBf16(p)) return true;
    }
    if (p.type === 'function_definition' || p.type === 'class_definition') return false;
  }
  return false;
}

/** The compared string of `mode == 'fp16'` (either side), or null. */
function comparedMode(cond: Node | null | undefined): { subject: string; value: string } | null {
  let c = cond;
  while (c?.type === 'parenthesized_expression' && c.namedChildren.length === 1) c = c.namedChildren[0]!;
  if (c?.type !== 'comparison_operator' || c.child(1)?.text !== '==' || c.namedChildren.length !== 2) return null;
  const [a, b] = c.namedChildren as Node[];
  const str = a.type === 'string' ? a : b.type === 'string' ? b : null;
  const other = str === a ? b : a;
  if (!str || other.type === 'string') return null;
  return { subject: other.text, value: str.text.replace(/^[rbuf]*['"]+|['"]+$/gi, '') };
}

/**
 * The float16 arm of an explicit precision dispatch that also has a bfloat16 arm on the same mode
 * (`if os.environ['RWKV_FLOAT_MODE'] == 'fp16': y.half()` `elif ... == 'bf16': y.bfloat16()`): the run picks the mode, and
 * a TPU run picks bf16 (the mode's own default or option is where float16 is chosen, reported there when it is).
 */
function fp16ArmBesideBf16(clause: Node): boolean {
  const mine = comparedMode(clause.childForFieldName('condition'));
  if (!mine || !FP16_NAME.test(mine.value)) return false;
  const chain = clause.type === 'elif_clause' ? clause.parent : clause;
  if (chain?.type !== 'if_statement') return false;
  const conds = [chain.childForFieldName('condition'), ...chain.namedChildren.filter((k) => k?.type === 'elif_clause').map((k) => k!.childForFieldName('condition'))];
  return conds.some((c) => {
    const m = comparedMode(c);
    return !!m && m.subject === mine.subject && BF16_NAME.test(m.value);
  });
}

function storageCast(ctx: RuleContext, call: Node): boolean {
  // host side before or after the cast
  for (let n: Node | null = receiver(call); n; n = n.type === 'call' ? receiver(n) : n.type === 'attribute' ? n.childForFieldName('object') : null) {
    if (n.type === 'call' && HOST_CALL.test(methodName(n) ?? '')) return true;
  }
  for (let p: Node | null = call.parent, child: Node = call; p; child = p, p = p.parent) {
    if (p.type === 'attribute' && p.childForFieldName('object')?.id === child.id && HOST_CALL.test(p.childForFieldName('attribute')?.text ?? '')) return true;
    if (p.type === 'call' && /^torch\.save$|^torch_xla\.(core\.xla_model|utils\.serialization)\.save$|\.save$/.test(ctx.sema.callee(p) ?? '')) return true;
    if (/comprehension$/.test(p.type) && /state_dict\(\)|\.items\(\)/.test(p.text)) return true;
    if (p.type === 'assignment') {
      const left = p.childForFieldName('left');
      const target = left?.type === 'identifier' ? left.text : left?.type === 'subscript' ? left.childForFieldName('value')?.text : null;
      if (!target || !/^\w+$/.test(target)) return false;
      // the name is only ever read inside the object argument of a save (a model cast and then also run is compute)
      const scope = ctx.sema.enclosingFunction(p);
      const uses = ctx.sema.identifiersNamed(target).filter((n) => n.startIndex >= p.endIndex && (ctx.sema.enclosingFunction(n)?.id ?? -1) === (scope?.id ?? -1));
      const inSave = (n: Node) => {
        for (let q: Node | null = n.parent, child: Node = n; q; child = q, q = q.parent) {
          if (q.type === 'call' && /^torch\.save$|\.save$/.test(ctx.sema.callee(q) ?? (methodName(q) === 'save' ? 'x.save' : ''))) return callArgs(q).positional[0]?.id === child.id || child.type === 'argument_list' && callArgs(q).positional[0] && n.startIndex >= callArgs(q).positional[0]!.startIndex && n.endIndex <= callArgs(q).positional[0]!.endIndex;
          // `del ckpt` after the saves frees the copy: not a use
          if (q.type === 'delete_statement') return true;
          if (q.type === 'expression_statement' || q.type === 'block') return false;
        }
        return false;
      };
      return uses.length > 0 && uses.every(inSave);
    }
    if (/^(function_definition|class_definition|module|block)$/.test(p.type)) return false;
  }
  return false;
}

export default defineRule({
  id: 'TPU302',
  name: 'float16-dtype',
  title: 'float16 as the compute or AMP dtype, and dtype pickers keyed on CUDA',
  severity: 'warning',
  step: 5,
  effort: 1,
  message: 'float16 is not the TPU mixed-precision dtype: use bfloat16',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Use bfloat16' },
  triggers: ['float16', 'half', 'fp16', 'precision', '16'],
  docs: {
    what:
      'Checks for float16 as the compute or AMP dtype: `autocast(..., dtype=torch.float16|torch.half)`, `.half()`, `.to(torch.float16)`, ' +
      'a dtype name set to float16 on one arm of a precision switch (`if precision == "amp": amp_dtype = torch.float16 elif ...`) that reaches an autocast, `functools.partial(torch.amp.autocast, dtype=...)`, a local alias of an autocast (`amp_autocast = torch.cuda.amp.autocast`) or torch FSDP\'s `MixedPrecision`/`MixedPrecisionPolicy(param_dtype=..., reduce_dtype=..., buffer_dtype=...)`, ' +
      '`from_pretrained(torch_dtype=torch.float16)`, float16 chosen by a flag (`data_type = torch.float16 if args.fp16 else torch.float32`, `torch_dtype=torch.float16 if cfg.use_fp16 else "auto"`), a name bound to float16 and passed on as `dtype=` (`inputs_dtype = torch.half` … `partial(collate, dtype=inputs_dtype)`), HF `TrainingArguments(fp16=True)`, Lightning `Trainer(precision=16|"16"|"16-mixed"|"16-true")`, ' +
      'Accelerate `Accelerator(mixed_precision="fp16")` (also through a name or `args.x` bound once to `"fp16"`: a constructor parameter default `mixed_precision_type="fp16"`, an argparse default; as a warning when `"fp16"` is one arm of a switch such as `mixed_precision_type if amp else "no"`) and `mixed_precision: fp16` in Accelerate config YAML, both errors because `Accelerator.__init__` raises `ValueError("fp16 mixed precision requires a GPU")` on a TPU host, `--fp16` (HF example scripts) and `--mixed_precision fp16` (`accelerate launch`) in shell launchers, DeepSpeed `"fp16": {"enabled": True}` config dicts, ' +
      'and dtype pickers keyed on CUDA such as nanoGPT\'s `\'bfloat16\' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else \'float16\'`, which evaluate to float16 on a TPU host (or whose arms are both float16). ' +
      'A dtype-name table reaching autocast (`ptdtype = {\'float32\': torch.float32, \'bfloat16\': torch.bfloat16, \'float16\': torch.float16}[dtype]`) is followed to where its key is set to a float16 entry: ' +
      'a literal (`dtype = \'float16\'`), an argparse default (`--dtype` with `default=\'float16\'`) or a config-class field. ' +
      'Not reported: a cast taken only when the input already is float16 (`if x.dtype == torch.float16:`, `if z.type() == "torch.cuda.HalfTensor":`), and the float16 arm of a precision dispatch that has a bfloat16 arm on the same mode (`if mode == "fp16": y.half()` `elif mode == "bf16": y.bfloat16()`: a TPU run picks bf16; the mode\'s default is reported where it is float16). ' +
      'An autocast dtype the program model follows to one float16 value (a config-class field `cfg.amp_dtype`, an attribute, a parameter every call site passes `torch.float16` to, `getattr(torch, args.dtype)` with an argparse default `\'float16\'`) is reported where the float16 is written. ' +
      'An argparse option whose default is a float16 spelling (`fp16`, `float16`, `half`) while its `choices` offer a bfloat16 one (`--dtype`, default `\'fp16\'`, choices `[\'bf16\', \'fp16\', \'fp32\']`) is reported at the default, whatever the option is called. ' +
      'Code in a branch that only runs when CUDA is available is not flagged.',
    why:
      'TPUs compute in bfloat16 natively and need no loss scaling (AMP:12-16, 51-52). `torch_xla.amp.autocast` with a dtype other than bf16 warns ' +
      '"torch_xla Autocast only supports dtype of torch.bfloat16 currently" and disables autocast (XAMP:26-34). ' +
      'Plain `torch.autocast("xla", dtype=torch.float16)` passes PyTorch\'s dtype check; its TPU behaviour is unverified, and bf16 is the supported path.',
    example: 'with torch.autocast("xla", dtype=torch.float16):\n    ...\nmodel = model.half()\ndtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"',
    useInstead: 'with torch.autocast("xla", dtype=torch.bfloat16):\n    ...\nmodel = model.bfloat16()\ndtype = "bfloat16"',
    fixSafety:
      'Unsafe: it changes numerics (bf16 has fewer mantissa bits than fp16, more exponent range). `fp16=True` becomes `bf16=True`; Lightning `"16-mixed"` becomes `"bf16-mixed"` ' +
      '(Lightning\'s XLA precision strings are unverified); Accelerate `fp16` becomes `bf16`. In dual-path style a CUDA-keyed picker keeps its CUDA behaviour and picks bf16 when ' +
      '`accel.is_xla()`; a table key becomes `\'bfloat16\'` (dual-path: `\'bfloat16\' if accel.is_xla() else \'float16\'`) and is offered only when the table has a bfloat16 entry. DeepSpeed configs get no fix (DeepSpeed does not run on TPU, TPU705). `xr.is_bf16_supported()` exists (XR:86-93) but creates an XLA tensor and so ' +
      'initializes the runtime; the fix writes a constant instead.',
    sources: [
      'AMP (docs/source/perf/amp.md:12-16, 51-52): TPUs use bfloat16, gradient scaling is not necessary',
      'XAMP (torch_xla/amp/autocast_mode.py:26-34): non-bf16 dtype disables torch_xla autocast (read at pytorch/xla@01834d7)',
      'XR:86-93 (torch_xla/runtime.py is_bf16_supported)',
      'PT:torch/amp/autocast_mode.py (xla branch accepts fp16 and bf16)',
      'accelerate v1.9.0 src/accelerate/accelerator.py:551-567 (fp16 raises ValueError when is_torch_xla_available(check_is_tpu=True); the same test since v0.28, and v0.20 raised for any device type but cuda/mps)',
    ],
    torchtpu: 'Same detection; the replacements are plain PyTorch dtypes, so the fixes are the same.',
  },
  textKinds: ['yaml', 'shell'],
  check(outer) {
    // a GPU self-test of a module that does not train (FastChat's flash-attention patch) checks float16 on CUDA on purpose
    const ctx: RuleContext = Object.create(outer, {
      report: { value: (at: Node, opts: Parameters<RuleContext['report']>[1]) => ('type' in at && gpuSelfTest(outer.sema, at) ? undefined : outer.report(at, opts)) },
    });
    const sev = (node: Node) => {
      const hot = ctx.sema.hot(node);
      return hot && (hot.kind === 'eval' || hot.throttled) ? downgrade('warning') : 'warning';
    };
    /**
     * float16 → bfloat16. In dual-path style code that also runs on CUDA/CPU keeps its float16 there:
     * `torch.bfloat16 if accel.is_xla() else torch.float16` (`xlaOnly`: the construct already runs on XLA only).
     */
    const dtypeFix = (node: Node, xlaOnly = false): FixDraft => {
      const b = bf16For(ctx, node);
      if (ctx.idiom.dualPath && !xlaOnly) return xlaPick(node, b.text, b.imports);
      return { title: `Replace \`${node.text}\` with \`${b.text}\``, edits: [replace(node, b.text)], imports: b.imports };
    };
    const xlaPick = (node: Node, bf16: string, imports: ImportSpec[] = []): FixDraft => {
      const x = ctx.idiom.isXla();
      const bare = /^(argument_list|keyword_argument|assignment|pair|expression_statement|parenthesized_expression)$/.test(node.parent?.type ?? '');
      const pick = `${bf16} if ${x.text} else ${node.text}`;
      return { title: `Pick \`${bf16}\` on XLA, keep \`${node.text}\` elsewhere`, edits: [replace(node, bare ? pick : `(${pick})`)], imports: [...imports, ...x.imports], needsAccel: x.needsAccel };
    };

    const dtypeDefs = new Set<number>();

    /**
     * An autocast dtype the program model follows to one float16 value: a config field (`cfg.amp_dtype`), an attribute set
     * elsewhere (`self.dtype = torch.float16`), a parameter all call sites pass float16 to, or `getattr(torch, args.dtype)`
     * with an argparse default `'float16'`. Reported once, where the float16 is written; a string default is the user's
     * choice (no fix).
     */
    const reportModelDtype = (expr: Node) => {
      const v = ctx.model.value(expr);
      const origin = v.kind === 'dtype' && v.name === 'float16' ? v.origin : null;
      if (!origin || dtypeDefs.has(origin.id) || ctx.sema.inXlaAwareBranch(origin)) return;
      if (origin.type !== 'string' && !isFloat16(ctx, origin)) return;
      dtypeDefs.add(origin.id);
      ctx.report(origin, {
        message: `\`${origin.text}\` becomes the autocast dtype (through \`${expr.text}\`): TPU mixed precision is bfloat16${ctx.idiom.profile === 'torchtpu' ? '' : ' (torch_xla disables autocast for other dtypes)'}`,
        fix: origin.type === 'string' ? null : dtypeFix(origin),
      });
    };

    /**
     * `{'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]` reaching autocast: the key
     * set to a float16 entry by a literal (`dtype = 'float16'`), an argparse default (`--dtype float16`) or a config field
     * is reported where it is set. CUDA-keyed pickers (`'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'`) are
     * reported by the picker check below.
     */
    const reportLookup = (sub: Node, holder?: string) => {
      const table = dtypeTable(ctx, sub.childForFieldName('value'));
      const key = sub.childForFieldName('subscript');
      if (!table || !key) return;
      const fp16Keys = new Set(table.filter((e) => isFloat16(ctx, e.value)).map((e) => e.key));
      const bf16 = table.find((e) => isBfloat16(ctx, e.value))?.key ?? null;
      if (!fp16Keys.size) return;
      for (const site of keySources(ctx, key)) {
        const value = stringContent(site.node) ?? '';
        if (!fp16Keys.has(value) || dtypeDefs.has(site.node.id) || ctx.sema.inXlaAwareBranch(site.node)) continue;
        dtypeDefs.add(site.node.id);
        const q = site.node.text[site.node.text.length - 1];
        let fix: FixDraft | null = null;
        if (bf16) {
          if (ctx.idiom.dualPath) {
            const x = ctx.idiom.isXla();
            fix = { title: `Pick \`${q}${bf16}${q}\` on XLA`, edits: [replace(site.node, `${q}${bf16}${q} if ${x.text} else ${site.node.text}`)], imports: x.imports, needsAccel: x.needsAccel };
          } else fix = { title: `Replace \`${site.node.text}\` with \`${q}${bf16}${q}\``, edits: [replace(site.node, `${q}${bf16}${q}`)] };
        }
        const via = `${holder ? `${holder} = ` : ''}${sub.childForFieldName('value')?.type === 'identifier' ? sub.childForFieldName('value')!.text : '{…}'}[${short(key.text, 30)}]`;
        ctx.report(site.node, {
          message: `${site.flag ? `\`${site.flag}\` defaults to` : `\`${key.text}\` is set to`} ${site.node.text}, which selects float16 as the autocast dtype (\`${via}\`): TPU mixed precision is bfloat16`,
          fix,
        });
      }
    };
    /**
     * A dtype name bound on several branches (`if precision == 'amp': amp_dtype = torch.float16 elif ...: amp_dtype =
     * torch.bfloat16`, wenet's `if dtype == "fp16": dtype = torch.float16`) whose float16 arm reaches a mixed-precision
     * sink: each float16 binding is reported where it is written (the other arms are the user's choices).
     */
    const reportBranchDtypes = (name: Node, defs: Node[], what: string): boolean => {
      const f16 = defs.filter((v) => isFloat16(ctx, v) && v.type !== 'string');
      if (!f16.length || f16.length === defs.length) return false;
      let any = false;
      for (const def of f16) {
        // a straight-line rebinding (`d = torch.float16` then `d = torch.bfloat16`) leaves no float16: only a branch's arm
        const cond = branchCondition(def);
        if (!cond || dtypeDefs.has(def.id) || ctx.sema.inXlaAwareBranch(def)) continue;
        dtypeDefs.add(def.id);
        any = true;
        ctx.report(def, {
          message: `\`${name.text} = ${def.text}\` (when \`${short(cond.text, 40)}\`) becomes ${what}: TPU mixed precision is bfloat16${ctx.idiom.profile === 'torchtpu' || what !== 'the autocast dtype' ? '' : ' (torch_xla disables autocast for other dtypes)'}`,
          fix: dtypeFix(def),
        });
      }
      return any;
    };
    /** A dtype expression reaching a mixed-precision sink (`functools.partial(torch.autocast, dtype=d)`, FSDP `MixedPrecision(param_dtype=d)`). */
    const reportSinkDtype = (d: Node, call: Node, what: string) => {
      if (isFloat16(ctx, d) && d.type !== 'string') {
        if (dtypeDefs.has(d.id)) return;
        dtypeDefs.add(d.id);
        ctx.report(d, { severity: sev(call), message: `\`${d.text}\` is ${what}: TPU mixed precision is bfloat16`, fix: dtypeFix(d) });
        return;
      }
      if (d.type !== 'identifier') return;
      const fn = ctx.sema.enclosingFunction(call);
      const defs = ctx.sema.bindings(d.text).filter((v) => {
        const f = ctx.sema.enclosingFunction(v);
        return (f?.id ?? -1) === (fn?.id ?? -1) && v.startIndex < call.startIndex;
      });
      if (defs.length > 1) reportBranchDtypes(d, defs, what);
      else if (defs.length === 1 && isFloat16(ctx, defs[0]) && defs[0].type !== 'string' && !dtypeDefs.has(defs[0].id)) {
        dtypeDefs.add(defs[0].id);
        ctx.report(defs[0], { message: `\`${d.text} = ${defs[0].text}\` is ${what}: TPU mixed precision is bfloat16`, fix: dtypeFix(defs[0]) });
      }
    };
    for (const call of ctx.sema.nodes('call')) {
      if (ctx.sema.inXlaAwareBranch(call) || underCudaOnlyBranch(ctx, call)) continue;
      const q = ctx.sema.callee(call) ?? '';
      const { positional, keywords } = callArgs(call);

      // `functools.partial(torch.amp.autocast, device_type=..., dtype=amp_dtype)` (open_clip's get_autocast)
      if (q === 'functools.partial' && positional[0] && TORCH_AUTOCASTS.test(ctx.sema.resolve(positional[0]) ?? '')) {
        const d = kwValue(keywords.get('dtype'));
        if (d) reportSinkDtype(d, call, 'the autocast dtype');
        continue;
      }
      // torch FSDP mixed precision: `MixedPrecision(param_dtype=torch.float16)` (FSDP1), `MixedPrecisionPolicy(...)` (FSDP2)
      // (a function-local `from torch.distributed._composable.fsdp import MixedPrecisionPolicy`, open_clip, names it too)
      if (FSDP_MP.test(q) || (!q && /^(MixedPrecision|MixedPrecisionPolicy)$/.test(call.childForFieldName('function')?.text ?? '') && localFsdpImport(ctx, call))) {
        for (const k of ['param_dtype', 'reduce_dtype', 'buffer_dtype', 'output_dtype']) {
          const d = kwValue(keywords.get(k));
          if (d) reportSinkDtype(d, call, `FSDP's \`${k}\``);
        }
        continue;
      }

      const ac = autocastCall(ctx, call);
      // `amp_autocast = torch.cuda.amp.autocast` ... `amp_autocast(enabled=..., dtype=dtype)` (wenet): a local alias of an autocast
      const fnNode = call.childForFieldName('function');
      if (!ac && fnNode?.type === 'identifier' && !q.startsWith('torch')) {
        const aliases = ctx.sema.bindings(fnNode.text);
        const d = kwValue(keywords.get('dtype'));
        if (d && aliases.length && aliases.some((v) => TORCH_AUTOCASTS.test(ctx.sema.resolve(v) ?? ''))) {
          reportSinkDtype(d, call, 'the autocast dtype');
          continue;
        }
      }
      // the generated `accel.autocast(dtype=torch.float16)` already picks bf16 on XLA/TPU and keeps float16 for CUDA
      if (ac?.kind === 'accel') continue;
      if (ac) {
        // an autocast on the XLA device runs on XLA only; a CUDA one is TPU301's (dual-path: accel.autocast keeps float16 on CUDA)
        const onXla = ac.kind === 'xla' || (!!ac.device && mentionsXla(ac.device.text));
        if (ac.dtype && isFloat16(ctx, ac.dtype) && ac.dtype.type !== 'string') {
          ctx.report(ac.dtype, { severity: sev(call), message: `Autocast with \`${ac.dtype.text}\`: TPU mixed precision is bfloat16${ctx.idiom.profile === 'torchtpu' ? '' : ' (torch_xla disables autocast for other dtypes)'}`, fix: ctx.idiom.dualPath && !onXla ? null : dtypeFix(ac.dtype, onXla) });
        } else if (ac.dtype?.type === 'subscript') {
          reportLookup(ac.dtype);
        } else if (ac.dtype?.type === 'identifier') {
          // `dtype = torch.float16` ... `torch.autocast(..., dtype=dtype)` (nanoGPT bench.py): reported once, where it is set
          const fn = ctx.sema.enclosingFunction(call);
          const defs = ctx.sema.bindings(ac.dtype.text).filter((v) => {
            const f = ctx.sema.enclosingFunction(v);
            return f === null || f.id === fn?.id;
          });
          const def = defs[0];
          // `ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]` (nanoGPT)
          if (defs.length === 1 && def.type === 'subscript') reportLookup(def, ac.dtype.text);
          else if (defs.length > 1 && reportBranchDtypes(ac.dtype, defs, 'the autocast dtype')) continue;
          else if (def && defs.every((v) => isFloat16(ctx, v) && v.type !== 'string') && !dtypeDefs.has(def.id)) {
            dtypeDefs.add(def.id);
            ctx.report(def, {
              message: `\`${ac.dtype.text} = ${def.text}\` is the autocast dtype: TPU mixed precision is bfloat16${ctx.idiom.profile === 'torchtpu' ? '' : ' (torch_xla disables autocast for other dtypes)'}`,
              fix: dtypeFix(def),
            });
          } else if (!defs.length || !def || def.type === 'call') reportModelDtype(ac.dtype);
        } else if (ac.dtype && (ac.dtype.type === 'attribute' || ac.dtype.type === 'call')) {
          reportModelDtype(ac.dtype);
        }
        continue;
      }

      const meth = methodName(call);
      const recv = receiver(call);
      if (meth === 'half' && recv && !ctx.sema.resolve(recv) && positional.length === 0 && keywords.size === 0) {
        // a storage cast (`{k: v.half() for k, v in sd.items()}` saved to a checkpoint, `.cpu().half()`) is the checkpoint's
        // format, not compute on the device: not this rule's
        if (storageCast(ctx, call) || roundTrip(call) || followsDtype(call)) continue;
        const attr = call.childForFieldName('function')!.childForFieldName('attribute')!;
        let fix: FixDraft;
        if (ctx.idiom.dualPath) {
          // `.half()` is `.to(torch.float16)` for tensors and modules: CUDA and CPU keep float16
          const x = ctx.idiom.isXla();
          const bf = torchAttr(ctx, 'bfloat16');
          const f16 = torchAttr(ctx, 'float16');
          const text = `to(${bf.text} if ${x.text} else ${f16.text})`;
          fix = { title: `Cast to bfloat16 on XLA, float16 elsewhere (\`.${text}\`)`, edits: [replaceRange(attr.startIndex, call.endIndex, text)], imports: [...bf.imports, ...x.imports], needsAccel: x.needsAccel };
        } else fix = { title: 'Replace `.half()` with `.bfloat16()`', edits: [replaceRange(attr.startIndex, call.endIndex, 'bfloat16()')] };
        ctx.report(call, { severity: sev(call), message: `\`.half()\` casts to float16; TPUs compute in bfloat16`, fix });
        continue;
      }
      if ((meth === 'to' || meth === 'type') && recv && !ctx.sema.resolve(recv)) {
        const d = kwValue(keywords.get('dtype')) ?? positional.find((p) => isFloat16(ctx, p) && p.type !== 'string') ?? null;
        if (d && isFloat16(ctx, d) && d.type !== 'string') {
          if (storageCast(ctx, call) || followsDtype(call)) continue;
          ctx.report(d, { severity: sev(call), message: `\`.${meth}(${d.text})\` casts to float16; TPUs compute in bfloat16`, fix: dtypeFix(d, mentionsXla(call.childForFieldName('arguments')?.text ?? '')) });
        }
        continue;
      }
      if (meth === 'from_pretrained' || /\.from_pretrained$/.test(q)) {
        for (const k of ['torch_dtype', 'dtype']) {
          const d = kwValue(keywords.get(k));
          if (d && isFloat16(ctx, d)) ctx.report(d, { severity: 'warning', message: `\`${k}=${d.text}\` loads the weights in float16; load them in bfloat16 on TPU`, fix: dtypeFix(d) });
        }
        continue;
      }
      if (HF_ARGS.test(q)) {
        const kw = keywords.get('fp16');
        const v = kwValue(kw);
        if (kw && v?.text === 'True') {
          const hasBf16 = keywords.has('bf16');
          const x = ctx.idiom.isXla();
          ctx.report(kw, {
            message: '`fp16=True` trains in float16 mixed precision; on TPU use `bf16=True`',
            fix: hasBf16
              ? null
              : ctx.idiom.dualPath
                ? { title: 'float16 off XLA, bf16 on XLA', edits: [replace(kw, `fp16=not ${x.text}, bf16=${x.text}`)], imports: x.imports, needsAccel: x.needsAccel }
                : { title: 'Replace `fp16=True` with `bf16=True`', edits: [replace(kw, 'bf16=True')] },
          });
        }
        continue;
      }
      if (LIGHTNING.test(q)) {
        const v = kwValue(keywords.get('precision'));
        if (!v) continue;
        const s = v.type === 'integer' ? v.text : v.type === 'string' ? stringContent(v) ?? '' : '';
        if (!/^16(-mixed|-true)?$/.test(s)) continue;
        const to = s === '16-true' ? 'bf16-true' : 'bf16-mixed';
        const q2 = v.type === 'string' ? v.text[v.text.length - 1] : '"';
        ctx.report(v, {
          message: `Lightning \`precision=${v.text}\` is float16; on TPU use bfloat16 (\`"${to}"\`)`,
          fix: ctx.idiom.dualPath ? xlaPick(v, `${q2}${to}${q2}`) : { title: `Replace with \`${q2}${to}${q2}\``, edits: [replace(v, `${q2}${to}${q2}`)] },
        });
        continue;
      }
      if (q === 'accelerate.Accelerator') {
        const v = kwValue(keywords.get('mixed_precision'));
        const hit = v ? accelerateFp16(ctx, v) : null;
        if (!v || !hit) continue;
        const lit = hit.literal;
        const qq = lit.text[lit.text.length - 1];
        const fix = ctx.idiom.dualPath ? xlaPick(lit, `${qq}bf16${qq}`) : { title: 'Replace with `"bf16"`', edits: [replace(lit, `${qq}bf16${qq}`)] };
        const via = lit.id === v.id ? '' : ` (\`${short(v.text, 40)}\` ${hit.arm ? 'takes on one arm' : 'is'} the \`"fp16"\` at line ${lit.startPosition.row + 1})`;
        // accelerate v1.9.0 src/accelerate/accelerator.py:551-567 (the same test since v0.28): fp16 with a device that is
        // not a GPU type, or whenever is_torch_xla_available(check_is_tpu=True), raises in Accelerator.__init__
        const raises = ctx.idiom.profile === 'torchtpu' ? ACCELERATE_FP16_TORCHTPU : ACCELERATE_FP16_RAISES;
        ctx.report(v, {
          // an arm of a switch (`mixed_precision_type if amp else "no"`) raises only when that arm is taken
          severity: hit.arm ? 'warning' : 'error',
          message: `Accelerate \`mixed_precision\` "fp16"${via}: ${raises}; TPUs use \`"bf16"\``,
          fix,
          related: lit.id === v.id ? undefined : [{ start: lit.startIndex, end: lit.endIndex, message: 'the "fp16" it takes' }],
        });
        continue;
      }
    }

    // A dtype flag whose default is a float16 spelling while its choices offer a bfloat16 one (DeepSpeed examples:
    // `--dtype`, default 'fp16', choices ['bf16', 'fp16', 'fp32']): the choices make it a dtype switch whatever its name,
    // and the default trains in float16 unless the user passes the bfloat16 choice. Reported once, at the default.
    for (const call of ctx.sema.callsNamed('add_argument')) {
      if (methodName(call) !== 'add_argument' || ctx.sema.inXlaAwareBranch(call)) continue;
      const { positional, keywords } = callArgs(call);
      const def = kwValue(keywords.get('default'));
      const choices = kwValue(keywords.get('choices'));
      if (def?.type !== 'string' || !choices || !/^(list|tuple|set)$/.test(choices.type) || dtypeDefs.has(def.id)) continue;
      const spelled = choices.namedChildren.filter((c): c is Node => c?.type === 'string').map((c) => stringContent(c) ?? '');
      const bf16 = spelled.find((c) => BF16_NAME.test(c));
      if (!FP16_NAME.test(stringContent(def) ?? '') || !bf16 || !spelled.includes(stringContent(def)!)) continue;
      dtypeDefs.add(def.id);
      const flag = positional.find((x) => x.type === 'string' && (stringContent(x) ?? '').startsWith('-'));
      const q = def.text[def.text.length - 1];
      let fix: FixDraft;
      if (ctx.idiom.dualPath) {
        const x = ctx.idiom.isXla();
        fix = { title: `Default to \`${q}${bf16}${q}\` on XLA`, edits: [replace(def, `${q}${bf16}${q} if ${x.text} else ${def.text}`)], imports: x.imports, needsAccel: x.needsAccel };
      } else fix = { title: `Default to \`${q}${bf16}${q}\``, edits: [replace(def, `${q}${bf16}${q}`)] };
      ctx.report(def, {
        message: `${flag ? `\`${stringContent(flag)}\`` : 'This option'} defaults to ${def.text} (float16) although its choices offer ${q}${bf16}${q}: TPU mixed precision is bfloat16${ctx.idiom.profile === 'torchtpu' ? '' : ' (torch_xla disables autocast for other dtypes)'}`,
        fix,
      });
    }

    // DeepSpeed config dicts: {"fp16": {"enabled": True}}
    for (const s of ctx.sema.nodes('string')) {
      if (stringContent(s) !== 'fp16' || s.parent?.type !== 'pair' || s.parent.childForFieldName('key')?.id !== s.id) continue;
      const value = s.parent.childForFieldName('value');
      if (value?.type !== 'dictionary' || !/["']enabled["']\s*:\s*True\b/.test(value.text)) continue;
      ctx.report(s, { message: 'DeepSpeed `"fp16": {"enabled": True}` trains in float16; TPUs use bfloat16 (and DeepSpeed itself does not run on TPU)', fix: null });
    }

    // dtype pickers keyed on CUDA that pick float16 when CUDA is absent
    for (const cond of ctx.sema.nodes('conditional_expression')) {
      const [yes, test, no] = cond.namedChildren;
      if (!yes || !test || !no) continue;
      const onTpu = evalsOnTpu(ctx, test);
      if (onTpu === null) continue;
      const picked = onTpu ? yes : no;
      const other = onTpu ? no : yes;
      if (!isFloat16(ctx, picked)) continue;
      if (ctx.sema.inXlaAwareBranch(cond)) continue;
      // `torch.cuda.is_bf16_supported()` that raises for the target (torch < 2.5): TPU103 reports the error
      if ((test.type === 'call' ? [test, ...ctx.sema.callsWithin(test)] : ctx.sema.callsWithin(test)).some((c) => bf16ProbeRaises(ctx, c))) continue;
      let fix: FixDraft | null;
      if (isFloat16(ctx, other)) {
        // both arms are float16 (`'float16' if torch.cuda.is_available() else 'float16'`): float16 everywhere
        const b = bf16For(ctx, picked);
        if (ctx.idiom.dualPath) {
          const x = ctx.idiom.isXla();
          fix = { title: `Pick \`${b.text}\` on XLA`, edits: [replace(cond, `${b.text} if ${x.text} else ${other.text}`)], imports: [...b.imports, ...x.imports], needsAccel: x.needsAccel };
        } else fix = { title: `Replace the picker with \`${b.text}\``, edits: [replace(cond, b.text)], imports: b.imports };
        ctx.report(cond, { message: `Both arms of this dtype picker are float16 (\`${short(picked.text)}\`), so it is float16 on a TPU host too; TPUs use bfloat16`, fix });
        continue;
      }
      if (ctx.idiom.dualPath) {
        const isXla = ctx.idiom.isXla();
        const t = test.type === 'boolean_operator' || test.type === 'conditional_expression' ? `(${test.text})` : test.text;
        const newTest = onTpu ? `not ${isXla.text} and ${t}` : `${isXla.text} or ${t}`;
        fix = {
          title: `Pick \`${other.text}\` on XLA`,
          edits: [replace(test, newTest)],
          imports: isXla.imports,
          needsAccel: isXla.needsAccel,
        };
      } else {
        fix = { title: `Replace the picker with \`${other.text}\``, edits: [replace(cond, other.text)] };
      }
      // a flag with a known default (`torch.float16 if args.use_fp16 else torch.float32`, `--use_fp16` default True) is no CUDA key
      const cudaKeyed = /cuda|bf16_supported|device|mps|gpu/i.test(test.text);
      ctx.report(cond, {
        message: cudaKeyed
          ? `This dtype picker is keyed on CUDA and evaluates to \`${picked.text}\` on a TPU host; TPUs use bfloat16`
          : `This dtype picker evaluates to \`${picked.text}\` as configured (\`${short(test.text, 40)}\` is ${onTpu ? 'True' : 'False'} by default): float16 on TPU too, where mixed precision is bfloat16`,
        fix,
      });
    }

    // float16 chosen by a flag (`self.data_type = torch.float16 if args.fp16 else torch.float32`,
    // `from_pretrained(..., torch_dtype=torch.float16 if cfg.use_fp16 else "auto")`): the float16 arm, a user's choice that
    // computes in float16 on TPU too (CUDA-keyed pickers are reported above)
    for (const cond of ctx.sema.nodes('conditional_expression')) {
      const [yes, test, no] = cond.namedChildren;
      if (!yes || !test || !no || evalsOnTpu(ctx, test) !== null || /cuda|device|is_xla|xla/i.test(test.text)) continue;
      const holder = cond.parent;
      const sink = holder?.type === 'assignment' && holder.childForFieldName('right')?.id === cond.id ? holder.childForFieldName('left') : holder?.type === 'keyword_argument' && /^(torch_dtype|dtype)$/.test(holder.childForFieldName('name')?.text ?? '') ? holder.childForFieldName('name') : null;
      if (!sink) continue;
      const f16 = [yes, no].filter((a) => isFloat16(ctx, a) && a.type !== 'string');
      const other = f16.length === 1 ? (f16[0].id === yes.id ? no : yes) : null;
      // the other arm: another dtype (float32, bfloat16) or `"auto"` (from_pretrained's own choice)
      const otherOk = !!other && !isFloat16(ctx, other) && (/^torch\.(float32|float|bfloat16|float64|double)$/.test(ctx.sema.resolve(other) ?? '') || (other.type === 'string' && stringContent(other) === 'auto'));
      if (!otherOk || dtypeDefs.has(f16[0].id) || dtypeDefs.has(cond.id) || ctx.sema.inXlaAwareBranch(cond)) continue;
      dtypeDefs.add(f16[0].id);
      ctx.report(f16[0], {
        severity: sev(cond),
        message: `\`${short(sink.text, 30)}\` is \`${f16[0].text}\` when \`${short(test.text, 40)}\`: float16 on TPU too, where mixed precision is bfloat16`,
        fix: dtypeFix(f16[0]),
      });
    }

    // a dtype name bound only to float16 and passed on as a dtype (`inputs_dtype = torch.half` ...
    // `partial(collate_and_cast, dtype=inputs_dtype)`): reported where the float16 is written
    for (const kw of ctx.sema.nodes('keyword_argument')) {
      const v = kwValue(kw);
      if (kw.childForFieldName('name')?.text !== 'dtype' || v?.type !== 'identifier') continue;
      const fn = ctx.sema.enclosingFunction(kw);
      const defs = ctx.sema.bindings(v.text).filter((b) => (ctx.sema.enclosingFunction(b)?.id ?? -1) === (fn?.id ?? -1) && b.startIndex < kw.startIndex);
      if (defs.length !== 1 || !isFloat16(ctx, defs[0]) || defs[0].type === 'string' || dtypeDefs.has(defs[0].id) || ctx.sema.inXlaAwareBranch(defs[0])) continue;
      const call = kw.parent?.parent;
      if (call?.type === 'call' && storageCast(ctx, call)) continue;
      dtypeDefs.add(defs[0].id);
      ctx.report(defs[0], {
        message: `\`${v.text} = ${defs[0].text}\` is passed on as \`dtype=${v.text}\`: float16 on TPU, where mixed precision is bfloat16`,
        fix: dtypeFix(defs[0]),
        related: [{ start: kw.startIndex, end: kw.endIndex, message: 'where the dtype is used' }],
      });
    }
  },
  checkText(ctx) {
    // launcher flags and config files have no `accel.is_xla()`: in dual-path style the CUDA run keeps its float16, so no fix
    const offer = <T>(f: T): T | null => (ctx.idiom.dualPath ? null : f);
    if (ctx.fileKind === 'shell') {
      // `python run_clm.py --fp16` (HF TrainingArguments flag), `accelerate launch --mixed_precision fp16`
      const flags = /(^|[ \t])(--fp16)(?=[ \t]|$)(?![ \t]+(False|false|0)\b)|(--mixed_precision(?:[ \t]+|=))(['"]?)fp16\5(?=[ \t]|$)/gm;
      for (let m = flags.exec(ctx.text); m; m = flags.exec(ctx.text)) {
        const lineStart = ctx.text.lastIndexOf('\n', m.index) + 1;
        if (/^\s*#/.test(ctx.text.slice(lineStart, m.index + 1))) continue;
        if (m[2]) {
          const start = m.index + m[1].length;
          ctx.report({ start, end: start + m[2].length }, {
            message: '`--fp16` trains in float16 mixed precision; on TPU pass `--bf16`',
            fix: offer({ title: 'Replace with `--bf16`', edits: [{ start, end: start + m[2].length, text: '--bf16' }] }),
          });
        } else {
          const start = m.index + m[4].length;
          const end = start + m[5].length * 2 + 4;
          ctx.report({ start, end }, {
            message: '`--mixed_precision fp16` is float16; on TPU use `bf16`',
            fix: offer({ title: 'Replace with `bf16`', edits: [{ start, end, text: `${m[5]}bf16${m[5]}` }] }),
          });
        }
      }
      return;
    }
    // Accelerate config YAML (`accelerate config` output): mixed_precision: fp16
    if (!/^\s*(compute_environment|distributed_type)\s*:/m.test(ctx.text)) return;
    const re = /^([ \t]*mixed_precision[ \t]*:[ \t]*)(['"]?)fp16\2[ \t]*(#.*)?$/gm;
    for (let m = re.exec(ctx.text); m; m = re.exec(ctx.text)) {
      const start = m.index + m[1].length;
      const end = start + m[2].length * 2 + 4;
      ctx.report({ start, end }, {
        // the config's mixed_precision reaches Accelerator.__init__, which raises for fp16 on a TPU (see accelerateFp16)
        severity: 'error',
        message: `Accelerate \`mixed_precision: fp16\`: ${ctx.idiom.profile === 'torchtpu' ? ACCELERATE_FP16_TORCHTPU : ACCELERATE_FP16_RAISES}; TPUs use \`bf16\``,
        fix: offer({ title: 'Replace with `bf16`', edits: [{ start, end, text: `${m[2]}bf16${m[2]}` }] }),
      });
    }
  },
});
