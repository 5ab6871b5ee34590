import type { Rule } from '../../core/rule';
import TPU101 from './TPU101-cuda-call';

const rules: Rule[] = [TPU101];

export default rules;
