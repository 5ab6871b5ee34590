import type { Rule } from '../../core/rule';
import TPU201 from './TPU201-host-read-in-hot-loop';
import TPU204 from './TPU204-step-barrier';

const rules: Rule[] = [TPU201, TPU204];

export default rules;
