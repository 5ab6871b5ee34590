import type { Rule } from '../../core/rule';
import TPU706 from './TPU706-fused-optimizer';

const rules: Rule[] = [TPU706];

export default rules;
