/**
 * The integration panel's HTML shell: a strict Content-Security-Policy (`default-src 'none'`, scripts
 * only with the per-load nonce, styles and fonts only from the extension's own resources) and the
 * bundled script. Pure, so the browser tests load exactly what the panel loads.
 */
export interface WebviewHtmlOptions {
  nonce: string;
  /** `webview.cspSource` (the origin local resources are served from). */
  cspSource: string;
  scriptUri: string;
  title: string;
}

export function csp(o: Pick<WebviewHtmlOptions, 'nonce' | 'cspSource'>): string {
  return [
    "default-src 'none'",
    `img-src ${o.cspSource} data:`,
    `style-src ${o.cspSource} 'nonce-${o.nonce}'`,
    `font-src ${o.cspSource}`,
    `script-src 'nonce-${o.nonce}'`,
  ].join('; ');
}

const attr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function webviewHtml(o: WebviewHtmlOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(csp(o))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${attr(o.title)}</title>
<style nonce="${attr(o.nonce)}">body{margin:0;padding:0 16px 24px;color:var(--vscode-foreground);background:var(--vscode-editor-background);font-family:var(--vscode-font-family);font-size:var(--vscode-font-size)}</style>
</head>
<body>
<tpu-checklist></tpu-checklist>
<script type="module" nonce="${attr(o.nonce)}" src="${attr(o.scriptUri)}"></script>
</body>
</html>
`;
}

/** A nonce for one load of the panel. */
export function makeNonce(random: (n: number) => Uint8Array): string {
  return Array.from(random(24), (b) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[b % 62]).join('');
}
