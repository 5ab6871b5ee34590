import type { Rule } from '../../core/rule';
import TPU801 from './TPU801-compile-without-xla-backend';
import TPU802 from './TPU802-eager-mode-without-compile';
import TPU803 from './TPU803-lazy-timing';
import TPU804 from './TPU804-no-compilation-cache';
import TPU805 from './TPU805-debug-env-and-gpu-profilers';
import TPU806 from './TPU806-upstream-activation-checkpoint';
import TPU807 from './TPU807-mxu-unfriendly-shapes';

const rules: Rule[] = [TPU801, TPU802, TPU803, TPU804, TPU805, TPU806, TPU807];

export default rules;
