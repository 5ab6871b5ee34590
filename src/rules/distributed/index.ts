import type { Rule } from '../../core/rule';
import TPU501 from './TPU501-cuda-process-group';
import TPU502 from './TPU502-cuda-launcher';
import TPU503 from './TPU503-cuda-rank-world-size';
import TPU504 from './TPU504-ddp-device-ids';
import TPU505 from './TPU505-missing-gradient-reduction';
import TPU506 from './TPU506-mixed-parallelism';
import TPU507 from './TPU507-collective-hazards';
import TPU508 from './TPU508-upstream-sharding';
import TPU509 from './TPU509-spmd-setup';
import TPU510 from './TPU510-sync-batchnorm';

const rules: Rule[] = [TPU501, TPU502, TPU503, TPU504, TPU505, TPU506, TPU507, TPU508, TPU509, TPU510];

export default rules;
