import type { Rule } from '../../core/rule';
import TPU301 from './TPU301-cuda-autocast';
import TPU302 from './TPU302-float16';
import TPU303 from './TPU303-grad-scaler';
import TPU304 from './TPU304-float64';
import TPU305 from './TPU305-precision-env';
import TPU306 from './TPU306-autocast-wraps-backward';

const rules: Rule[] = [TPU301, TPU302, TPU303, TPU304, TPU305, TPU306];

export default rules;
