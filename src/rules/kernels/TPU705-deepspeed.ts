import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import { kwValue, receiver, methodName, stringContent } from '../../core/semantics';
import { importInfos, importRuns, isGuardedImport, isOptionalImport, removeArg, underLibGuard } from './util';

const DS_CALLS = new Set(['deepspeed.initialize', 'deepspeed.init_distributed', 'deepspeed.add_config_arguments', 'deepspeed.zero.Init']);
const TRAINING_ARGS = /(TrainingArguments|SFTConfig|DPOConfig|GRPOConfig|ORPOConfig|KTOConfig|RewardConfig)$/;

export default defineRule({
  id: 'TPU705',
  name: 'deepspeed',
  title: 'DeepSpeed',
  severity: 'error',
  step: 7,
  effort: 7,
  message: 'DeepSpeed has no XLA accelerator and does not run on TPU',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Remove the DeepSpeed config' },
  triggers: ['deepspeed', 'DEEPSPEED', 'DeepSpeed'],
  textKinds: ['yaml', 'shell'],
  docs: {
    what:
      'Checks for `import deepspeed`, `deepspeed.initialize(...)` (and `init_distributed`, `add_config_arguments`, `zero.Init`), `backward`/`step` on the engine it returns, ' +
      'Hugging Face `TrainingArguments(deepspeed=...)` and its `--deepspeed` flag in shell launchers, the `deepspeed` launcher in shell scripts, Lightning `strategy="deepspeed..."` and `DeepSpeedStrategy(...)`, and Accelerate configs with `distributed_type: DEEPSPEED`.',
    why:
      'DeepSpeed ships no XLA accelerator: its `accelerator/` directory has cuda, cpu, xpu, npu, mps, hpu, mlu, sdaa and supa only. ' +
      'On TPU, shard parameters and optimizer state with FSDPv2/SPMD (TPU508/TPU509), use a bf16 autocast instead of DeepSpeed fp16/bf16, and `xm.optimizer_step` in multi-process data parallelism. ' +
      'Map the DeepSpeed batch keys (train_micro_batch_size_per_gpu, gradient_accumulation_steps) to the canonical fields of the cost estimator. ' +
      'An import and its calls under a guard that selects DeepSpeed (`if args.deepspeed:`, `if isinstance(fabric.strategy, DeepSpeedStrategy):`, `if is_deepspeed_available():`) are not reported: a TPU run does not take that branch.',
    example: 'import deepspeed\nengine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")\nengine.backward(loss)\nengine.step()',
    useInstead:
      'from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2\n' +
      'model = FSDPv2(model)              # mesh with an "fsdp" axis (TPU508)\nloss.backward()\noptimizer.step()',
    fixSafety:
      'Only `TrainingArguments(deepspeed=...)` has a fix (unsafe): it removes the DeepSpeed config, so the Trainer runs without ZeRO sharding. ' +
      'Configure FSDPv2 instead (`fsdp_config={"xla": True, "xla_fsdp_v2": True}`) or the model may not fit. The rest needs a rewrite.',
    sources: ['deepspeedai/DeepSpeed accelerator/ directory at HEAD (no XLA accelerator; catalog TPU705)', 'FSDP2 (docs/source/perf/fsdp_spmd.md)', 'XM:1169 (xm.optimizer_step)'],
    torchtpu: 'The same: DeepSpeed has no torch_tpu accelerator either.',
  },
  check(ctx) {
    const dsImports = importInfos(ctx).filter((info) => info.modules.some((m) => /^deepspeed(\.|$)/.test(m)) && !isOptionalImport(info.stmt) && !isGuardedImport(info));
    // One finding per problem (issue 9): the import and `deepspeed.initialize` carry the DeepSpeed engine; the calls
    // that only configure or drive that engine (add_config_arguments, init_distributed, engine.backward/step) and a
    // ZeRO config dict are related locations of the initialize (or, without one, of the import) finding.
    type Site = { node: Node; message: string };
    const primaries: Site[] = [];
    const secondaries: Site[] = [];
    const engines = new Set<string>();
    for (const call of ctx.sema.callsResolvedTo(DS_CALLS)) {
      const callee = ctx.sema.callee(call) ?? '';
      // `if self.deepspeed: deepspeed.init_distributed()`: the branch a TPU host (no --deepspeed) does not take
      if (!DS_CALLS.has(callee) || ctx.sema.inXlaAwareBranch(call) || (!dsImports.length && underLibGuard(call, 'deepspeed'))) continue;
      const site = { node: call as Node, message: `\`${callee}\` sets up DeepSpeed, which has no XLA accelerator; use FSDPv2/SPMD on TPU` };
      if (callee === 'deepspeed.initialize' || callee === 'deepspeed.zero.Init') primaries.push(site);
      else secondaries.push(site);
      if (callee === 'deepspeed.initialize') {
        const left = call.parent?.type === 'assignment' ? call.parent.childForFieldName('left') : null;
        const first = left?.type === 'pattern_list' || left?.type === 'tuple_pattern' ? left.namedChildren[0] : left;
        if (first?.type === 'identifier') engines.add(first.text);
      }
    }
    for (const call of ctx.sema.nodes('call')) {
      const recv = receiver(call);
      const meth = methodName(call);
      if (recv?.type !== 'identifier' || !engines.has(recv.text) || (meth !== 'backward' && meth !== 'step')) continue;
      secondaries.push({ node: call as Node, message: `\`${recv.text}.${meth}()\` is the DeepSpeed engine's ${meth}; on TPU call \`loss.backward()\`/\`optimizer.step()\`` });
    }
    const runs = importRuns(dsImports);
    // the finding that carries the rest: the first deepspeed.initialize, else the first import run
    const carrier: Node | null = primaries[0]?.node ?? runs[0]?.[0].stmt ?? null;
    const related = carrier
      ? secondaries.map((s) => ({ start: s.node.startIndex, end: s.node.endIndex, message: s.message }))
      : [];
    if (carrier && dsImports.length > 0) {
      // a ZeRO config dict in a file that runs the DeepSpeed engine is part of that engine (TPU508 stays quiet there)
      for (const s of ctx.sema.nodes('string')) {
        if (stringContent(s) !== 'zero_optimization' || s.parent?.type !== 'pair' || s.parent.childForFieldName('key')?.id !== s.id) continue;
        related.push({ start: s.startIndex, end: s.endIndex, message: 'the DeepSpeed ZeRO config of this engine' });
      }
    }
    // one finding per run of consecutive deepspeed imports
    for (const run of runs) {
      const isCarrier = !!carrier && run[0].stmt.id === carrier.id;
      ctx.report(run[0].stmt, {
        message: `\`deepspeed\` is imported${run.length > 1 ? ` (${run.length} import statements)` : ''}: DeepSpeed has no XLA accelerator`,
        ...(isCarrier && related.length ? { related } : {}),
      });
    }
    for (const p of primaries) ctx.report(p.node, { message: p.message, ...(!!carrier && p.node.id === carrier.id && related.length ? { related } : {}) });
    if (!carrier) for (const s of secondaries) ctx.report(s.node, { message: s.message });
    // DeepSpeed's optimizer ops (`deepspeed.ops.adam.FusedAdam`, `DeepSpeedCPUAdam`, `deepspeed.ops.lamb.FusedLamb`):
    // compiled CUDA (or CPU SIMD) extensions built by DeepSpeed's op builder; one finding per statement that uses them
    const opStmts = new Set<number>();
    for (const n of [...ctx.sema.nodes('identifier'), ...ctx.sema.nodes('attribute')]) {
      if (n.parent?.type === 'attribute' && n.parent.childForFieldName('object')?.id === n.id) continue;
      // the attribute name of `torch.optim.Adam` is no reference to a name bound by `from deepspeed.ops.adam import FusedAdam as Adam`
      if (n.type === 'identifier' && n.parent?.type === 'attribute' && n.parent.childForFieldName('attribute')?.id === n.id) continue;
      const full = ctx.sema.resolve(n) ?? '';
      const m = /^deepspeed\.ops\.(\w+)\.(\w+)$/.exec(full);
      if (!m || !/^[A-Z]/.test(m[2])) continue;
      let stmt: Node | null = n;
      while (stmt && !/statement$|^assignment$/.test(stmt.type)) stmt = stmt.parent;
      if (!stmt || /import/.test(stmt.type) || opStmts.has(stmt.startIndex) || ctx.sema.inXlaAwareBranch(n)) continue;
      opStmts.add(stmt.startIndex);
      ctx.report(n, { message: `\`${m[2]}\` is a DeepSpeed op (deepspeed.ops.${m[1]}), a CUDA/CPU extension DeepSpeed compiles, with no XLA kernel; use the \`torch.optim\` optimizer with the same update rule on TPU` });
    }
    // Lightning: `Trainer(strategy="deepspeed_stage_2")`, `Fabric(strategy=DeepSpeedStrategy(...))`
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? call.childForFieldName('function')?.text ?? '';
      if (!/(^|\.)DeepSpeedStrategy$/.test(callee) || ctx.sema.inXlaAwareBranch(call)) continue;
      ctx.report(call, { message: '`DeepSpeedStrategy` runs Lightning on DeepSpeed, which has no XLA accelerator; use `XLAFSDPStrategy` (or `XLAStrategy`) on TPU' });
    }
    for (const kw of ctx.sema.nodes('keyword_argument')) {
      if (kw.childForFieldName('name')?.text !== 'strategy') continue;
      const value = kwValue(kw);
      if (value?.type !== 'string' || !/^deepspeed/.test(stringContent(value) ?? '')) continue;
      const call = kw.parent?.parent as Node | null;
      const callee = call?.type === 'call' ? ctx.sema.callee(call) ?? call.childForFieldName('function')?.text ?? '' : '';
      if (!/(^|\.)(Trainer|Fabric)$/.test(callee)) continue;
      ctx.report(value, { message: `Lightning \`strategy=${value.text}\` runs DeepSpeed, which has no XLA accelerator; use \`strategy="xla_fsdp"\` (or "xla") on TPU` });
    }
    for (const kw of ctx.sema.nodes('keyword_argument')) {
      if (kw.childForFieldName('name')?.text !== 'deepspeed') continue;
      const call = kw.parent?.parent as Node | null;
      if (call?.type !== 'call') continue;
      const callee = ctx.sema.callee(call) ?? call.childForFieldName('function')?.text ?? '';
      const value = kwValue(kw);
      if (!TRAINING_ARGS.test(callee) || !value || value.type === 'none') continue;
      ctx.report(kw, {
        message: '`deepspeed=` makes the Trainer run DeepSpeed, which has no XLA accelerator; configure FSDPv2 (`fsdp_config={"xla": True, "xla_fsdp_v2": True}`)',
        fix: { title: 'Remove `deepspeed=` (configure FSDPv2 instead)', edits: [removeArg(ctx, kw)] },
      });
    }
  },
  checkText(ctx) {
    for (let i = 0; i < ctx.lines.lineCount; i++) {
      const line = ctx.lines.lineText(i);
      const start = ctx.lines.starts[i];
      if (/^\s*#/.test(line)) continue;
      if (ctx.fileKind === 'yaml') {
        const m = /^(\s*distributed_type\s*:\s*)(['"]?)DEEPSPEED\2\s*(#.*)?$/.exec(line);
        if (m) ctx.report({ start: start + m[1].length, end: start + line.trimEnd().replace(/\s*#.*$/, '').length }, { message: 'Accelerate `distributed_type: DEEPSPEED` has no XLA accelerator; use an XLA (FSDPv2) config on TPU' });
      } else {
        const m = /(^|[;&|]\s*|\bexec\s+)(deepspeed)(\s+)(?!-h\b)/.exec(line);
        if (m) {
          const at = start + m.index + m[1].length;
          ctx.report({ start: at, end: at + 'deepspeed'.length }, { message: ctx.idiom.profile === 'torchtpu' ? 'the `deepspeed` launcher starts DeepSpeed, which has no TPU accelerator; a TorchTPU launcher is not public yet' : 'the `deepspeed` launcher starts DeepSpeed, which has no XLA accelerator; launch with `torch_xla.launch` or SPMD on TPU' });
        } else if (ctx.fileKind === 'shell') {
          // `torchrun run_clm.py --deepspeed ds_config.json`: the HF Trainer's flag turns DeepSpeed on
          const f = /(^|\s)(--deepspeed)(?=[\s=]|$)/.exec(line);
          if (f) {
            const at = start + f.index + f[1].length;
            ctx.report({ start: at, end: at + f[2].length }, { message: '`--deepspeed` makes the training script run DeepSpeed, which has no XLA accelerator; drop it and configure FSDPv2 (`--fsdp_config` with `"xla": true`) on TPU' });
          }
        }
      }
    }
  },
});
