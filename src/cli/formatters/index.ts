import { githubFormatter } from './github';
import { jsonFormatter } from './json';
import { sarifFormatter } from './sarif';
import { textFormatter } from './text';
import type { Formatter } from './types';

export const FORMATTERS: Record<string, Formatter> = {
  text: textFormatter,
  json: jsonFormatter,
  sarif: sarifFormatter,
  github: githubFormatter,
};

export type { Formatter, Report, Summary, Notice } from './types';
