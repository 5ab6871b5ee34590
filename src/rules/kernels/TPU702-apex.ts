import { defineRule, type FixDraft, type ReportOptions, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { kwValue } from '../../core/semantics';
import { deleteStatement, replace } from '../../core/edits';
import { argShape, deleteUnusedImport, importInfos, insertKw, isGuardedImport, isOptionalImport, refFor, removeArgs, underLibGuard } from './util';

/** Keyword arguments the torch optimizer accepts with the same meaning, and Apex-only ones that only tune the kernel. */
const ADAM_KEEP = new Set(['lr', 'betas', 'eps', 'weight_decay', 'amsgrad']);
const ADAM_DROP = new Set(['adam_w_mode', 'set_grad_none']);
const SGD_KEEP = new Set(['lr', 'momentum', 'dampening', 'weight_decay', 'nesterov']);
const NORM_KEEP = new Set(['normalized_shape', 'eps', 'elementwise_affine']);

export default defineRule({
  id: 'TPU702',
  name: 'apex',
  title: 'NVIDIA Apex',
  severity: 'error',
  step: 5,
  effort: 3,
  message: 'NVIDIA Apex is CUDA-only and does not run on TPU',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Replace the Apex API with its PyTorch equivalent' },
  triggers: ['apex', 'amp_C'],
  docs: {
    what:
      'Checks for NVIDIA Apex: `import apex`, `from apex import amp` (`amp.initialize`, `amp.scale_loss`), `apex.optimizers.FusedAdam/FusedLAMB/FusedSGD`, ' +
      '`apex.normalization.FusedLayerNorm/FusedRMSNorm`, `apex.parallel.DistributedDataParallel`/`SyncBatchNorm`, and `import amp_C`. ' +
      'One finding per problem: a use of a name bound by a reported `from apex… import Name` with no known replacement (`LARC(optimizer=...)`) is a related location of the import, ' +
      'and the `amp.scale_loss` blocks of a file with one `amp.initialize` are related locations of it (its fix rewrites them too).',
    why:
      'Apex ships CUDA kernels and CUDA-only mixed precision; a TPU host cannot import or run them. The PyTorch equivalents lower to XLA: ' +
      '`torch.autocast("xla", dtype=torch.bfloat16)` instead of `amp` (no loss scaling needed for bf16, TPU301/TPU303), `torch.optim.AdamW`/`SGD` instead of the fused optimizers (without `fused=True`, TPU706), ' +
      '`torch.nn.LayerNorm` instead of `FusedLayerNorm`, `torch.nn.RMSNorm` instead of `FusedRMSNorm` (the minimum torch version of `nn.RMSNorm` is unverified here), and torch_xla data parallelism instead of `apex.parallel` (TPU504/TPU505). ' +
      'XLA support for `SyncBatchNorm` is unverified: review it by hand.',
    example:
      'from apex import amp\nfrom apex.optimizers import FusedAdam\nfrom apex.normalization import FusedLayerNorm\n\n' +
      'norm = FusedLayerNorm(512)\nopt = FusedAdam(model.parameters(), lr=1e-4)\nmodel, opt = amp.initialize(model, opt, opt_level="O1")\n' +
      'with amp.scale_loss(loss, opt) as scaled_loss:\n    scaled_loss.backward()',
    useInstead:
      'import torch\n\nnorm = torch.nn.LayerNorm(512)\nopt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)\n' +
      'with torch.autocast("xla", dtype=torch.bfloat16):\n    loss = criterion(model(x), y)\nloss.backward()',
    fixSafety:
      '`FusedLayerNorm` → `torch.nn.LayerNorm` with the same arguments is safe (same normalization and parameters). ' +
      'The rest is unsafe and needs review: `FusedAdam` becomes `torch.optim.AdamW` (`adam_w_mode=False`: `Adam`) with `weight_decay=0.0` made explicit, because Apex defaults to 0 and torch AdamW to 0.01; ' +
      '`FusedRMSNorm` becomes `torch.nn.RMSNorm` with `eps=1e-5` made explicit (torch defaults to the dtype epsilon); ' +
      'dropping `amp.initialize` and `amp.scale_loss` removes fp16 loss scaling, and you still add a bf16 autocast around the forward pass. ' +
      'An Apex import is deleted (safely) once nothing uses it. When every Apex import is optional (`try: from apex import amp` / `except ImportError`), ' +
      'the Apex calls are reported as info (that path never runs on a TPU host) and the dual-path style leaves them for CUDA. ' +
      'The same holds for an import under a guard that names Apex (`if is_apex_available():`); a call that is itself gated on Apex (`if self.use_apex:`, `amp.master_params(opt) if self.use_apex else model.parameters()`, `if has_apex:`) is not reported.',
    sources: [
      'AMP (docs/source/perf/amp.md: bf16 autocast on XLA without a GradScaler)',
      'MIG (docs/source/learn/migration-to-xla-on-tpus.md)',
      'PT:torch/utils/_foreach_utils.py (fused kernels: no xla)',
    ],
    torchtpu: 'The same PyTorch replacements apply; the bf16 autocast becomes `torch.autocast("tpu", dtype=torch.bfloat16)`.',
  },
  check(ctx) {
    type Related = { start: number; end: number; message: string };
    // reported Apex imports, and for `from apex.x import Name` the names they bind (uses without a fix fold into them)
    const importFindings: { stmt: Node; opts: ReportOptions & { related: Related[] } }[] = [];
    const byName = new Map<string, Related[]>();
    for (const info of importInfos(ctx)) {
      if (!info.modules.some((m) => /^apex(\.|$)/.test(m) || m === 'amp_C')) continue;
      if (isOptionalImport(info.stmt) || isGuardedImport(info)) continue;
      const edits = deleteUnusedImport(ctx, info);
      const opts = {
        message: `\`${info.stmt.text.split('\n')[0]}\` imports NVIDIA Apex, which is CUDA-only and not installable on a TPU host`,
        fix: edits ? { title: 'Remove the unused Apex import', applicability: 'safe' as const, edits } : null,
        related: [] as Related[],
      };
      importFindings.push({ stmt: info.stmt, opts });
      if (info.stmt.type === 'import_from_statement') for (const b of info.bound) byName.set(b, opts.related);
    }
    // `model, opt = amp.initialize(...)` … `with amp.scale_loss(loss, opt) as s:` (swav main_swav.py): the loss scaling of
    // that AMP setup is one problem with it; its fix rides on the `amp.initialize` finding
    const ampCalls: { call: Node; opts: ReportOptions; fix: FixDraft | null }[] = [];
    // `try: from apex import amp; has_apex = True / except ImportError: has_apex = False` (timm train.py): the Apex calls
    // sit on an optional path that never runs on a TPU host, where apex is not installed
    const apexImports = importInfos(ctx).filter((i) => i.modules.some((m) => /^apex(\.|$)/.test(m)));
    // `if is_apex_available(): from apex import amp` (HF Trainer) is optional the same way
    const optional = apexImports.length > 0 && apexImports.every((i) => isOptionalImport(i.stmt) || isGuardedImport(i));
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (!/^apex\./.test(callee)) continue;
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      const name = callee.split('.').pop()!;
      if (optional) {
        // `if self.use_apex: amp.initialize(...)`, `amp.master_params(opt) if self.use_apex else model.parameters()`:
        // the call itself is gated on Apex, so a TPU host never reaches it: nothing to report
        if (underLibGuard(call, 'apex')) continue;
        ctx.report(call, {
          severity: 'info',
          message: `${messageFor(name, callee, ctx.idiom.profile)} (apex is imported optionally: this path does not run on a TPU host, where apex is not installed)`,
          // dual-path keeps the CUDA Apex path working; tpu-only may clean the dead path up
          fix: ctx.idiom.dualPath ? null : fixFor(ctx, call, callee),
        });
        continue;
      }
      const fix = fixFor(ctx, call, callee);
      // `optimizer = LARC(optimizer=...)` after `from apex.parallel.LARC import LARC` (swav): the import's finding already
      // names the class and no replacement is known, so the use is a related location of it
      const fn = call.childForFieldName('function');
      const viaImport = fn?.type === 'identifier' ? byName.get(fn.text) : undefined;
      if (!fix && viaImport) {
        viaImport.push({ start: call.startIndex, end: call.endIndex, message: `used here: ${messageFor(name, callee, ctx.idiom.profile)}` });
        continue;
      }
      if (callee === 'apex.amp.initialize' || callee === 'apex.amp.scale_loss') {
        ampCalls.push({ call, opts: { message: messageFor(name, callee, ctx.idiom.profile) }, fix });
        continue;
      }
      ctx.report(call, { message: messageFor(name, callee, ctx.idiom.profile), fix });
    }
    for (const f of importFindings) ctx.report(f.stmt, { ...f.opts, related: f.opts.related.length ? f.opts.related : undefined });
    reportAmp(ctx, ampCalls);
  },
});

/**
 * One finding for an Apex AMP setup: on the first `amp.initialize` (when the file has exactly one), its `amp.scale_loss`
 * blocks as related locations, and one fix that makes all their edits when each has one (a partial fix would leave
 * `scale_loss` without its `initialize`). Without an `initialize`, each `scale_loss` is its own finding.
 */
function reportAmp(ctx: RuleContext, calls: { call: Node; opts: ReportOptions; fix: FixDraft | null }[]): void {
  const inits = calls.filter((c) => ctx.sema.callee(c.call) === 'apex.amp.initialize');
  const scales = calls.filter((c) => ctx.sema.callee(c.call) === 'apex.amp.scale_loss');
  if (inits.length !== 1 || !scales.length) {
    for (const c of calls) ctx.report(c.call, { ...c.opts, fix: c.fix });
    return;
  }
  const [init] = inits;
  const all = [init, ...scales];
  const fix: FixDraft | null = all.every((c) => c.fix)
    ? {
      title: `${init.fix!.title}; ${scales.length === 1 ? 'its `amp.scale_loss` block calls' : `its ${scales.length} \`amp.scale_loss\` blocks call`} \`backward()\` on the loss`,
      applicability: 'unsafe',
      edits: all.flatMap((c) => c.fix!.edits).sort((a, b) => a.start - b.start),
    }
    : null;
  ctx.report(init.call, {
    message: `${init.opts.message}; its \`amp.scale_loss\` fp16 loss scaling goes with it (bf16 needs none)`,
    fix,
    related: scales.map((c) => ({ start: c.call.startIndex, end: c.call.endIndex, message: 'Apex fp16 loss scaling of this AMP setup' })),
  });
}

function messageFor(name: string, callee: string, profile: string): string {
  if (callee === 'apex.amp.initialize') return '`amp.initialize` is Apex CUDA mixed precision; use bf16 `torch.autocast` on TPU';
  if (callee === 'apex.amp.scale_loss') return '`amp.scale_loss` is Apex fp16 loss scaling; bf16 on TPU needs no loss scaling';
  if (/^apex\.optimizers\./.test(callee)) return `Apex \`${name}\` is a fused CUDA optimizer; use the torch.optim equivalent on TPU`;
  if (/^apex\.normalization\./.test(callee)) return `Apex \`${name}\` is a fused CUDA kernel; use the torch.nn layer on TPU`;
  if (/^apex\.parallel\./.test(callee)) return `\`apex.parallel.${name}\` is CUDA data parallelism; ${profile === 'torchtpu' ? 'TorchTPU data parallelism is not public yet' : 'use torch_xla data parallelism on TPU'}`;
  return `Apex \`${name}\` is CUDA-only and does not run on TPU`;
}

function fixFor(ctx: RuleContext, call: Node, callee: string): FixDraft | null {
  const { positional, keywords, hasSplat } = argShape(call);
  if (hasSplat) return null;
  const fn = call.childForFieldName('function')!;
  const name = callee.split('.').pop()!;
  switch (callee) {
    case 'apex.normalization.FusedLayerNorm':
    case 'apex.normalization.fused_layer_norm.FusedLayerNorm': {
      if ([...keywords.keys()].some((k) => !NORM_KEEP.has(k)) || positional.length > 3) return null;
      const ref = refFor(ctx, 'torch.nn.LayerNorm');
      return { title: `Replace \`${name}\` with \`${ref.text}\``, applicability: 'safe', edits: [replace(fn, ref.text)], imports: ref.imports };
    }
    case 'apex.normalization.FusedRMSNorm':
    case 'apex.normalization.fused_layer_norm.FusedRMSNorm': {
      if ([...keywords.keys()].some((k) => !NORM_KEEP.has(k)) || positional.length > 3) return null;
      const ref = refFor(ctx, 'torch.nn.RMSNorm');
      const edits = [replace(fn, ref.text)];
      if (!keywords.has('eps') && positional.length < 2) edits.push(insertKw(call, 'eps=1e-5'));
      return { title: `Replace \`${name}\` with \`${ref.text}\` (eps=1e-5 kept)`, edits, imports: ref.imports };
    }
    case 'apex.optimizers.FusedAdam': {
      if ([...keywords.keys()].some((k) => !ADAM_KEEP.has(k) && !ADAM_DROP.has(k)) || positional.length > 1) return null;
      const mode = kwValue(keywords.get('adam_w_mode'));
      if (mode && mode.type !== 'true' && mode.type !== 'false') return null;
      const adamw = !mode || mode.type === 'true';
      const ref = refFor(ctx, adamw ? 'torch.optim.AdamW' : 'torch.optim.Adam');
      const edits = [replace(fn, ref.text), ...removeArgs(ctx, [...keywords].filter(([k]) => ADAM_DROP.has(k)).map(([, kw]) => kw))];
      if (adamw && !keywords.has('weight_decay')) edits.push(insertKw(call, 'weight_decay=0.0'));
      return { title: `Replace \`FusedAdam\` with \`${ref.text}\``, edits, imports: ref.imports };
    }
    case 'apex.optimizers.FusedSGD': {
      if ([...keywords.keys()].some((k) => !SGD_KEEP.has(k)) || positional.length > 2) return null;
      const ref = refFor(ctx, 'torch.optim.SGD');
      return { title: `Replace \`FusedSGD\` with \`${ref.text}\``, edits: [replace(fn, ref.text)], imports: ref.imports };
    }
    case 'apex.amp.initialize': {
      // model, opt = amp.initialize(model, opt, opt_level="O1")  →  (deleted)
      const assign = call.parent;
      if (assign?.type !== 'assignment' || assign.parent?.type !== 'expression_statement') return null;
      const left = assign.childForFieldName('left');
      const lhs = left?.type === 'pattern_list' || left?.type === 'tuple_pattern' ? left.namedChildren.map((c) => c?.text) : [left?.text];
      const rhs = positional.map((p) => p.text);
      if (lhs.length !== rhs.length || lhs.some((l, i) => l !== rhs[i])) return null;
      return { title: 'Remove `amp.initialize` (add a bf16 autocast around the forward pass)', edits: [deleteStatement(ctx.text, assign.parent)] };
    }
    case 'apex.amp.scale_loss': {
      // with amp.scale_loss(loss, opt) as scaled: scaled.backward()  →  loss.backward()
      // (with_statement (with_clause (with_item value: (as_pattern (call) alias: (as_pattern_target)))))
      const item = call.parent;
      const clause = item?.parent?.parent;
      const withStmt = clause?.parent;
      if (item?.type !== 'as_pattern' || clause?.type !== 'with_clause' || clause.namedChildren.length !== 1 || withStmt?.type !== 'with_statement' || positional.length < 1) return null;
      const alias = item.childForFieldName('alias')?.text ?? item.namedChildren[1]?.text;
      const body = withStmt.childForFieldName('body');
      const stmts = body?.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment') ?? [];
      if (stmts.length !== 1 || !alias) return null;
      const m = new RegExp(`^${alias}\\.backward\\((.*)\\)$`).exec(stmts[0].text);
      if (!m) return null;
      return {
        title: 'Call `backward()` on the loss directly (no loss scaling with bf16)',
        edits: [replace(withStmt, `${positional[0].text}.backward(${m[1]})`)],
      };
    }
    default:
      return null;
  }
}
