import type { Rule } from '../../core/rule';
import TPU901 from './TPU901-runtime-initialized-before-launch';
import TPU902 from './TPU902-spawn-without-fork';
import TPU903 from './TPU903-notebook-install-pitfalls';
import TPU904 from './TPU904-env-after-torch-xla-import';
import TPU905 from './TPU905-implicit-materialization';
import TPU906 from './TPU906-legacy-tpu-notebook-setup';
import TPU907 from './TPU907-single-device-notebook';

const rules: Rule[] = [TPU901, TPU902, TPU903, TPU904, TPU905, TPU906, TPU907];

export default rules;
