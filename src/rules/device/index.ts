import type { Rule } from '../../core/rule';
import TPU101 from './TPU101-cuda-call';
import TPU111 from './TPU111-deprecated-xla-api';

const rules: Rule[] = [TPU101, TPU111];

export default rules;
