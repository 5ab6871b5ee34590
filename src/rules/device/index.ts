import type { Rule } from '../../core/rule';
import TPU101 from './TPU101-cuda-call';
import TPU102 from './TPU102-cuda-device-expression';
import TPU103 from './TPU103-cuda-capability-check';
import TPU104 from './TPU104-cuda-runtime-api';
import TPU105 from './TPU105-cuda-memory-api';
import TPU106 from './TPU106-cuda-rng-seed';
import TPU107 from './TPU107-cuda-backend-flag';
import TPU108 from './TPU108-param-identity-move';
import TPU109 from './TPU109-cuda-runtime-env';
import TPU110 from './TPU110-tpu-runtime-requirements';
import TPU111 from './TPU111-deprecated-xla-api';
import TPU112 from './TPU112-cuda-default-tensor-type';
import TPU113 from './TPU113-xla-generator';
import TPU114 from './TPU114-cpu-only-training';

const rules: Rule[] = [TPU101, TPU102, TPU103, TPU104, TPU105, TPU106, TPU107, TPU108, TPU109, TPU110, TPU111, TPU112, TPU113, TPU114];

export default rules;
