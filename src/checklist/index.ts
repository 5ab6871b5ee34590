/** The migration checklist (pure): steps, evidence, progress file, report, generators, panel message validation. */
export * from './steps';
export * from './facts';
export * from './progress';
export * from './model';
export * from './report';
export * from './generators';
export * from './messages';
export * from './webviewHtml';
