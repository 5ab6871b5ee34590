/** The ordered rule registry. A new rule is one line in its family's index.ts. */
import type { Rule } from '../core/rule';
import device from './device';
import graph from './graph';
import precision from './precision';
import data from './data';
import distributed from './distributed';
import checkpoint from './checkpoint';
import kernels from './kernels';
import perf from './perf';
import notebook from './notebook';

export const RULES: Rule[] = [...device, ...graph, ...precision, ...data, ...distributed, ...checkpoint, ...kernels, ...perf, ...notebook].sort((a, b) =>
  a.id.localeCompare(b.id),
);

export const RULES_BY_ID: ReadonlyMap<string, Rule> = new Map(RULES.map((r) => [r.id, r]));

/** Family folder of each hundreds digit. */
export const FAMILIES: Record<string, string> = {
  '1': 'device', '2': 'graph', '3': 'precision', '4': 'data', '5': 'distributed', '6': 'checkpoint', '7': 'kernels', '8': 'perf', '9': 'notebook',
};
