import type { Rule } from '../../core/rule';
import TPU501 from './TPU501-cuda-process-group';

const rules: Rule[] = [TPU501];

export default rules;
