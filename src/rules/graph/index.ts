import type { Rule } from '../../core/rule';
import TPU201 from './TPU201-host-read-in-hot-loop';
import TPU202 from './TPU202-data-dependent-control-flow';
import TPU203 from './TPU203-dynamic-shape-op';
import TPU204 from './TPU204-step-barrier';
import TPU205 from './TPU205-structural-dynamism';

const rules: Rule[] = [TPU201, TPU202, TPU203, TPU204, TPU205];

export default rules;
