import type { Rule } from '../../core/rule';
import TPU601 from './TPU601-torch-save-xla-state';

const rules: Rule[] = [TPU601];

export default rules;
