import type { Rule } from '../../core/rule';
import TPU401 from './TPU401-dataloader-without-mpdeviceloader';

const rules: Rule[] = [TPU401];

export default rules;
