import type { Rule } from '../../core/rule';
import TPU801 from './TPU801-compile-without-xla-backend';
import TPU802 from './TPU802-eager-mode-without-compile';

const rules: Rule[] = [TPU801, TPU802];

export default rules;
