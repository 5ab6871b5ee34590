import type { Rule } from '../../core/rule';
import TPU301 from './TPU301-cuda-autocast';

const rules: Rule[] = [TPU301];

export default rules;
