import type { Rule } from '../../core/rule';
import TPU401 from './TPU401-dataloader-without-mpdeviceloader';
import TPU402 from './TPU402-unsharded-data';

const rules: Rule[] = [TPU401, TPU402];

export default rules;
