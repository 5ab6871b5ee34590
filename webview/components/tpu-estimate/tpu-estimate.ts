import { LitElement, html, css, nothing } from 'lit';
import type { CostVM } from '../../../src/protocol/cost';

/**
 * The estimator section: the cost module's view model (CostVM) as the panel shows it: estimates per
 * hardware (time, cost, range, throughput), the config values and assumptions with their sources, and
 * what is missing. It renders; it never computes.
 *
 * @tag tpu-estimate
 * @cssprop [--vscode-descriptionForeground] - sources and notes
 */
export class TpuEstimate extends LitElement {
  static override properties = { cost: { attribute: false } };
  declare cost: CostVM | null;

  constructor() {
    super();
    this.cost = null;
  }

  static override styles = css`
    :host { display: block; }
    table { border-collapse: collapse; margin: 6px 0 10px; }
    th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid var(--vscode-editorWidget-border, var(--vscode-contrastBorder, transparent)); vertical-align: top; }
    th { font-weight: 600; }
    .primary td { font-weight: 600; }
    .source, .note { color: var(--vscode-descriptionForeground); font-size: 0.92em; }
    .warn { color: var(--vscode-editorWarning-foreground, #cca700); }
    .error { color: var(--vscode-editorError-foreground, #f14c4c); }
    details { margin: 4px 0; }
    summary { cursor: pointer; }
    summary:focus-visible { outline: 1px solid var(--vscode-focusBorder); }
  `;

  override render() {
    const c = this.cost;
    if (!c) return nothing;
    return html`
      <p class="note">From ${c.files.join(', ') || 'the training config'}${c.frameworks.length ? ` (${c.frameworks.join(', ')})` : ''}: an estimate, not a quote.</p>
      ${c.error ? html`<p class="error" role="alert">${c.error.message}</p>` : nothing}
      ${c.missing.length ? html`<ul>${c.missing.map((m) => html`<li><strong>${m.field}</strong>: ${m.message} <span class="note">${m.howToSupply}</span></li>`)}</ul>` : nothing}
      ${c.estimates.length
        ? html`<table aria-label="Training time and cost per hardware">
            <thead><tr><th>Hardware</th><th>Slice</th><th>Pricing</th><th>Time</th><th>Cost</th><th>Range</th><th>MFU</th><th>Tokens/s</th><th>Price (region, as of, source)</th></tr></thead>
            <tbody>${c.estimates.map((e) => html`<tr class=${e.primary ? 'primary' : ''}><td>${e.hardwareName}</td><td>${e.slice} (${e.chips} chips)</td><td>${e.pricing}</td><td>${e.display.time}</td><td>${e.display.cost}</td><td>${e.display.range}</td><td>${e.display.mfu}</td><td>${e.display.tokensPerSecond}</td><td class="source">${e.display.price}</td></tr>
              ${e.warnings.length ? html`<tr><td colspan="9" class="warn">${e.warnings.join(' · ')}</td></tr>` : nothing}`)}</tbody>
          </table>`
        : nothing}
      ${c.warnings.length ? html`<ul class="warn">${c.warnings.map((w) => html`<li>${w}</li>`)}</ul>` : nothing}
      ${c.fields.length || c.assumptions.length
        ? html`<details><summary>Config values and assumptions (${c.fields.length + c.assumptions.length})</summary>
            <table><tbody>${[...c.fields, ...c.assumptions].map((v) => html`<tr><td>${v.label}</td><td>${v.display}</td><td class="source">${v.source.text}</td></tr>`)}</tbody></table>
          </details>`
        : nothing}
    `;
  }
}

if (!customElements.get('tpu-estimate')) customElements.define('tpu-estimate', TpuEstimate);

declare global {
  interface HTMLElementTagNameMap {
    'tpu-estimate': TpuEstimate;
  }
}
