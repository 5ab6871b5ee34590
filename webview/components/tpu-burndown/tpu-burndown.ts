import { LitElement, html, svg, css, nothing } from 'lit';
import type { HistoryPointVM } from '../../../src/protocol/checklist';

const W = 480;
const H = 160;
const PAD = { left: 36, right: 36, top: 12, bottom: 28 };

/**
 * Burn-down chart of the progress history: open findings (bars, left axis) and the readiness score
 * (line, right axis, 0–100), drawn in SVG. A table with the same numbers follows for screen readers.
 *
 * @tag tpu-burndown
 * @cssprop [--vscode-charts-red] - open findings bars
 * @cssprop [--vscode-charts-green] - score line
 */
export class TpuBurndown extends LitElement {
  static override properties = { history: { attribute: false } };
  declare history: HistoryPointVM[];

  constructor() {
    super();
    this.history = [];
  }

  static override styles = css`
    :host { display: block; }
    svg { width: 100%; max-width: 640px; height: auto; overflow: visible; }
    .bar { fill: var(--vscode-charts-red, #f14c4c); opacity: 0.75; }
    .score { fill: none; stroke: var(--vscode-charts-green, #89d185); stroke-width: 2; }
    .dot { fill: var(--vscode-charts-green, #89d185); }
    .axis { stroke: var(--vscode-editorWidget-border, var(--vscode-contrastBorder, #888)); stroke-width: 1; }
    text { fill: var(--vscode-descriptionForeground, currentColor); font-size: 10px; font-family: var(--vscode-font-family, sans-serif); }
    .legend { display: flex; gap: 16px; font-size: 12px; color: var(--vscode-descriptionForeground); margin: 4px 0; }
    .swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: middle; }
    .swatch.open { background: var(--vscode-charts-red, #f14c4c); }
    .swatch.score-swatch { background: var(--vscode-charts-green, #89d185); }
    .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
    .empty { color: var(--vscode-descriptionForeground); font-style: italic; }
  `;

  override render() {
    const h = this.history;
    if (!h.length) return html`<p class="empty">No history yet: a snapshot is recorded each day the checklist changes.</p>`;
    const maxOpen = Math.max(1, ...h.map((p) => p.open));
    const iw = W - PAD.left - PAD.right;
    const ih = H - PAD.top - PAD.bottom;
    const slot = iw / h.length;
    const barW = Math.max(2, Math.min(28, slot * 0.6));
    const x = (i: number) => PAD.left + slot * (i + 0.5);
    const yOpen = (n: number) => PAD.top + ih - (n / maxOpen) * ih;
    const yScore = (s: number) => PAD.top + ih - (Math.max(0, Math.min(100, s)) / 100) * ih;
    const line = h.map((p, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${yScore(p.score).toFixed(1)}`).join(' ');
    const labelEvery = Math.max(1, Math.ceil(h.length / 6));
    const last = h[h.length - 1];
    const summary = `Burn-down over ${h.length} snapshot${h.length === 1 ? '' : 's'}: open findings ${h[0].open} to ${last.open}, score ${h[0].score} to ${last.score}, ${last.done} of 10 steps done.`;
    return html`
      <div class="legend" aria-hidden="true">
        <span><span class="swatch open"></span>Open findings</span>
        <span><span class="swatch score-swatch"></span>Readiness score</span>
      </div>
      <svg viewBox="0 0 ${W} ${H}" role="img" aria-label=${summary}>
        ${svg`
          <line class="axis" x1=${PAD.left} y1=${PAD.top + ih} x2=${W - PAD.right} y2=${PAD.top + ih}></line>
          <line class="axis" x1=${PAD.left} y1=${PAD.top} x2=${PAD.left} y2=${PAD.top + ih}></line>
          <line class="axis" x1=${W - PAD.right} y1=${PAD.top} x2=${W - PAD.right} y2=${PAD.top + ih}></line>
          <text x=${PAD.left - 4} y=${PAD.top + 4} text-anchor="end">${maxOpen}</text>
          <text x=${PAD.left - 4} y=${PAD.top + ih} text-anchor="end">0</text>
          <text x=${W - PAD.right + 4} y=${PAD.top + 4}>100</text>
          <text x=${W - PAD.right + 4} y=${PAD.top + ih}>0</text>
          ${h.map((p, i) => svg`<rect class="bar" x=${x(i) - barW / 2} y=${yOpen(p.open)} width=${barW} height=${PAD.top + ih - yOpen(p.open)}><title>${p.date}: ${p.open} open</title></rect>`)}
          <path class="score" d=${line}></path>
          ${h.map((p, i) => svg`<circle class="dot" cx=${x(i)} cy=${yScore(p.score)} r="2.5"><title>${p.date}: score ${p.score}</title></circle>`)}
          ${h.map((p, i) => (i % labelEvery === 0 || i === h.length - 1 ? svg`<text x=${x(i)} y=${H - 8} text-anchor="middle">${p.date.slice(5)}</text>` : nothing))}
        `}
      </svg>
      <table class="sr">
        <caption>Progress history</caption>
        <tr><th>Date</th><th>Open findings</th><th>Score</th><th>Steps done</th></tr>
        ${h.map((p) => html`<tr><td>${p.date}</td><td>${p.open}</td><td>${p.score}</td><td>${p.done}</td></tr>`)}
      </table>
    `;
  }
}

if (!customElements.get('tpu-burndown')) customElements.define('tpu-burndown', TpuBurndown);

declare global {
  interface HTMLElementTagNameMap {
    'tpu-burndown': TpuBurndown;
  }
}
