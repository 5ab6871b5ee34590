import type { Rule } from '../../core/rule';
import TPU601 from './TPU601-torch-save-xla-state';
import TPU602 from './TPU602-torch-load-cuda';
import TPU603 from './TPU603-sharded-unsharded-save';
import TPU604 from './TPU604-checkpoint-robustness';

const rules: Rule[] = [TPU601, TPU602, TPU603, TPU604];

export default rules;
