/**
 * Device copies inside the data pipeline: `.to(device)`/`.cuda()` in a map-style dataset's `__getitem__` or in a function
 * a DataLoader is given as `collate_fn`. The DataLoader runs those in its worker processes (with `num_workers > 0`) and
 * hands device tensors to the loop, which `MpDeviceLoader` cannot prefetch: it moves only CPU tensors
 * (`send_cpu_data_to_device` selects `type(v) == torch.Tensor and v.device.type == 'cpu'`, torch_xla/core/xla_model.py
 * at v2.9.0), so each sample (or batch) is its own synchronous small transfer. TPU401 reports one finding per function,
 * on its first copy, the others related; a copy to the CPU or a dtype cast is none (`isDeviceCopy`).
 */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { isDeviceCopy } from '../shared';
import { collateFnNames } from './util';

export interface WorkerMove {
  fn: Node;
  /** `Pairs.__getitem__` or `collate` */
  where: string;
  kind: 'dataset' | 'collate';
  moves: Node[];
}

const DATASET_BASE = /(^|\.)(Dataset|IterableDataset)$/;

function datasetClass(ctx: RuleContext, cls: Node, depth = 0): boolean {
  const supers = cls.childForFieldName('superclasses')?.namedChildren ?? [];
  for (const s of supers) {
    if (!s || (s.type !== 'identifier' && s.type !== 'attribute')) continue;
    if (DATASET_BASE.test(ctx.sema.resolve(s) ?? s.text)) return true;
    // `class Pairs(BaseSet)` where `class BaseSet(Dataset)` is in this file
    if (depth < 2 && s.type === 'identifier') {
      const base = ctx.sema.nodes('class_definition').find((c) => c.childForFieldName('name')?.text === s.text);
      if (base && base.id !== cls.id && datasetClass(ctx, base, depth + 1)) return true;
    }
  }
  return false;
}

export function workerMoves(ctx: RuleContext): WorkerMove[] {
  const out: WorkerMove[] = [];
  const fns: { fn: Node; where: string; kind: 'dataset' | 'collate' }[] = [];
  for (const fn of ctx.sema.functionsNamed('__getitem__')) {
    const cls = ctx.sema.enclosingClass(fn);
    if (cls && datasetClass(ctx, cls)) fns.push({ fn, where: `${cls.childForFieldName('name')?.text ?? 'Dataset'}.__getitem__`, kind: 'dataset' });
  }
  const seen = new Set(fns.map((f) => f.fn.id));
  for (const name of collateFnNames(ctx)) {
    for (const fn of ctx.sema.functionsNamed(name)) {
      if (seen.has(fn.id)) continue;
      seen.add(fn.id);
      const cls = ctx.sema.enclosingClass(fn)?.childForFieldName('name')?.text;
      fns.push({ fn, where: cls ? `${cls}.${name}` : name, kind: 'collate' });
    }
  }
  for (const { fn, where, kind } of fns) {
    const moves = ctx.sema.callsWithin(fn).filter((c) => ctx.sema.enclosingFunction(c)?.id === fn.id && isDeviceCopy(ctx, c));
    if (moves.length) out.push({ fn, where, kind, moves });
  }
  return out;
}
