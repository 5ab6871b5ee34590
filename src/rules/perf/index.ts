import type { Rule } from '../../core/rule';
import TPU801 from './TPU801-compile-without-xla-backend';

const rules: Rule[] = [TPU801];

export default rules;
