import type { Rule } from '../../core/rule';
import TPU501 from './TPU501-cuda-process-group';
import TPU502 from './TPU502-cuda-launcher';

const rules: Rule[] = [TPU501, TPU502];

export default rules;
