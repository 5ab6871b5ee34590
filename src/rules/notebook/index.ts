import type { Rule } from '../../core/rule';
import TPU901 from './TPU901-runtime-initialized-before-launch';

const rules: Rule[] = [TPU901];

export default rules;
