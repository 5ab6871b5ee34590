import type { Rule } from '../../core/rule';
import TPU201 from './TPU201-host-read-in-hot-loop';

const rules: Rule[] = [TPU201];

export default rules;
