import type { Rule } from '../../core/rule';
import TPU701 from './TPU701-custom-cuda-kernel';
import TPU702 from './TPU702-apex';
import TPU703 from './TPU703-bitsandbytes';
import TPU704 from './TPU704-cuda-attention';
import TPU705 from './TPU705-deepspeed';
import TPU706 from './TPU706-fused-optimizer';
import TPU707 from './TPU707-jax-before-torch-xla';
import TPU708 from './TPU708-poor-xla-op';

const rules: Rule[] = [TPU701, TPU702, TPU703, TPU704, TPU705, TPU706, TPU707, TPU708];

export default rules;
