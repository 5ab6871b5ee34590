import type { Rule } from '../../core/rule';
import TPU401 from './TPU401-dataloader-without-mpdeviceloader';
import TPU402 from './TPU402-unsharded-data';
import TPU403 from './TPU403-ragged-last-batch';
import TPU404 from './TPU404-variable-input-shapes';
import TPU405 from './TPU405-host-generated-step-data';

const rules: Rule[] = [TPU401, TPU402, TPU403, TPU404, TPU405];

export default rules;
