/**
 * TPU508: imports of PyTorch's composable FSDP (FSDP2 `fully_shard`, `FSDPModule`, `MixedPrecisionPolicy`, the older
 * `torch.distributed._composable.fully_shard`). A call of `fully_shard(...)` in the file is reported by TPU508 itself,
 * so the import is reported only when no such call is (a helper module that imports the API and passes it on).
 */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';

/** Modules of the composable FSDP API. */
const FSDP2_MODULE = /^torch\.distributed\.(_composable\.fsdp(\.\w+)*|_composable\.fully_shard|fsdp\._fully_shard(\.\w+)*)$/;
/** Names of the composable API exported by `torch.distributed.fsdp` (FSDP2). */
const FSDP2_NAMES = new Set(['fully_shard', 'FSDPModule', 'MixedPrecisionPolicy', 'CPUOffloadPolicy', 'OffloadPolicy', 'register_fsdp_forward_method', 'UnshardHandle']);

/** The import statements (or imported names) of the composable FSDP API. */
export function fsdp2Imports(ctx: RuleContext): Node[] {
  const out: Node[] = [];
  for (const imp of ctx.sema.nodes('import_from_statement')) {
    const mod = imp.childForFieldName('module_name')?.text.replace(/\s+/g, '') ?? '';
    if (FSDP2_MODULE.test(mod) || (mod === 'torch.distributed._composable' && /\bfully_shard\b/.test(imp.text))) {
      out.push(imp);
    } else if (mod === 'torch.distributed.fsdp') {
      const names = imp.childrenForFieldName('name').map((n) => (n?.type === 'aliased_import' ? n.childForFieldName('name')?.text : n?.text) ?? '');
      if (names.some((n) => FSDP2_NAMES.has(n))) out.push(imp);
    }
  }
  for (const imp of ctx.sema.nodes('import_statement')) {
    const names = imp.namedChildren.map((n) => (n?.type === 'aliased_import' ? n.childForFieldName('name')?.text : n?.text) ?? '');
    if (names.some((n) => FSDP2_MODULE.test(n))) out.push(imp);
  }
  return out;
}

export const FSDP2_IMPORT_MESSAGE =
  'PyTorch composable FSDP (FSDP2 `fully_shard`) is not a documented torch_xla path; torch_xla shards with FSDPv2 on SPMD (`torch_xla.experimental.spmd_fully_sharded_data_parallel.SpmdFullyShardedDataParallel`, mesh axis "fsdp") or `XlaFullyShardedDataParallel`';
export const FSDP2_IMPORT_MESSAGE_TORCHTPU =
  'PyTorch composable FSDP (FSDP2 `fully_shard`) is not a documented TPU path; look for the TorchTPU sharding API (not public yet)';
