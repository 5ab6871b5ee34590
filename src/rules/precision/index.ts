import type { Rule } from '../../core/rule';
import TPU301 from './TPU301-cuda-autocast';
import TPU302 from './TPU302-float16';

const rules: Rule[] = [TPU301, TPU302];

export default rules;
