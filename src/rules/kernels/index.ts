import type { Rule } from '../../core/rule';
import TPU702 from './TPU702-apex';
import TPU706 from './TPU706-fused-optimizer';
import TPU707 from './TPU707-jax-before-torch-xla';

const rules: Rule[] = [TPU702, TPU706, TPU707];

export default rules;
