import type { Rule } from '../../core/rule';

const rules: Rule[] = [];

export default rules;
