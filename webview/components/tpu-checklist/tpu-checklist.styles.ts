import { css } from 'lit';

export const styles = css`
  :host { display: block; color: var(--vscode-foreground); font-family: var(--vscode-font-family, sans-serif); font-size: var(--vscode-font-size, 13px); }
  header { display: flex; flex-wrap: wrap; align-items: center; gap: 12px 24px; padding: 12px 0; border-bottom: 1px solid var(--vscode-panel-border, var(--vscode-contrastBorder, transparent)); }
  h1 { font-size: 1.4em; margin: 0; font-weight: 600; }
  h2 { font-size: 1.1em; margin: 16px 0 4px; }
  .score { font-size: 2em; font-weight: 600; line-height: 1; }
  .score small { font-size: 0.45em; font-weight: normal; color: var(--vscode-descriptionForeground); }
  .progress { flex: 1 1 200px; min-width: 160px; }
  .progress-label { color: var(--vscode-descriptionForeground); margin-bottom: 4px; }
  .toolbar { display: flex; flex-wrap: wrap; gap: 8px; }
  .banner { margin: 8px 0; padding: 6px 10px; border-left: 3px solid var(--vscode-editorError-foreground, #f14c4c); background: var(--vscode-inputValidation-errorBackground, transparent); }
  .notice { margin: 8px 0; padding: 6px 10px; border-left: 3px solid var(--vscode-focusBorder, #0078d4); }
  .notice.error { border-left-color: var(--vscode-editorError-foreground, #f14c4c); }
  vscode-collapsible { margin-top: 6px; }
  .step-body { padding: 8px 12px 12px 22px; }
  .explanation { margin: 0 0 8px; line-height: 1.5; }
  ul { list-style: none; margin: 0; padding: 0; }
  li { margin: 3px 0; }
  .status { display: inline-block; min-width: 5.5em; }
  .status.done { color: var(--vscode-testing-iconPassed, #73c991); }
  .status.in-progress { color: var(--vscode-editorWarning-foreground, #cca700); }
  .status.todo { color: var(--vscode-descriptionForeground); }
  .evidence .mark { display: inline-block; width: 1.2em; }
  .evidence.met .mark { color: var(--vscode-testing-iconPassed, #73c991); }
  .from-code { color: var(--vscode-descriptionForeground); font-size: 0.9em; }
  .finding { display: flex; gap: 6px; align-items: baseline; }
  button.link { background: none; border: none; padding: 0; font: inherit; color: var(--vscode-textLink-foreground); cursor: pointer; text-align: left; }
  button.link:hover { text-decoration: underline; color: var(--vscode-textLink-activeForeground, var(--vscode-textLink-foreground)); }
  button.link:focus-visible, a:focus-visible { outline: 1px solid var(--vscode-focusBorder); outline-offset: 1px; }
  a { color: var(--vscode-textLink-foreground); }
  .sev { font-size: 0.85em; padding: 0 4px; border-radius: 2px; border: 1px solid currentColor; }
  .sev.error { color: var(--vscode-editorError-foreground, #f14c4c); }
  .sev.warning { color: var(--vscode-editorWarning-foreground, #cca700); }
  .sev.info, .sev.hint { color: var(--vscode-editorInfo-foreground, #3794ff); }
  .message { overflow-wrap: anywhere; }
  code { font-family: var(--vscode-editor-font-family, monospace); font-size: 0.95em; background: var(--vscode-textCodeBlock-background, transparent); padding: 0 2px; border-radius: 2px; }
  .more { color: var(--vscode-descriptionForeground); }
  .actions { display: flex; flex-wrap: wrap; gap: 8px; margin-top: 10px; }
  vscode-textarea { width: 100%; }
  label.note-label { display: block; margin: 10px 0 4px; color: var(--vscode-descriptionForeground); }
  .priced-note, .estimate-label { color: var(--vscode-descriptionForeground); font-weight: normal; }
  .priced-note { margin: 0 0 6px; line-height: 1.5; }
  .priced-finding { margin: 6px 0; }
  .priced-head { display: flex; flex-wrap: wrap; gap: 6px; align-items: baseline; }
  .priced-summary { font-weight: 600; overflow-wrap: anywhere; }
  .priced-finding .message { margin-left: 1em; }
  .priced-finding details { margin-left: 1em; }
  .priced-finding summary { cursor: pointer; color: var(--vscode-descriptionForeground); }
  .priced-finding summary:focus-visible { outline: 1px solid var(--vscode-focusBorder); }
  .assumptions li { margin: 2px 0 2px 1em; }
  .priced-inline { display: block; color: var(--vscode-descriptionForeground); font-size: 0.92em; }
  @media (forced-colors: active) { .sev, .status { forced-color-adjust: auto; } }
`;
