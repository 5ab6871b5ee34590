import { LitElement, html, nothing } from 'lit';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import '@vscode-elements/elements/dist/vscode-progress-bar/index.js';
import '@vscode-elements/elements/dist/vscode-textarea/index.js';
import '../tpu-burndown/tpu-burndown';
import '../tpu-estimate/tpu-estimate';
import type { ChecklistVM, FindingVM, StepStatus, StepVM } from '../../../src/protocol/checklist';
import type { CostVM, PricedFindingVM, PricedFindingsVM } from '../../../src/protocol/cost';
import type { ToHost, ToHostMessage } from '../../../src/protocol/messages';
import { HOST_MESSAGE_EVENT, toHost } from '../../protocol';
import { styles } from './tpu-checklist.styles';

/** Text with `code` spans shown as <code>: each part is a Lit text binding, so nothing is parsed as HTML. */
function withCode(s: string) {
  return s.split(/(`[^`]+`)/).map((part, i) => (i % 2 ? html`<code>${part.slice(1, -1)}</code>` : part));
}

const STATUS: Record<StepStatus, string> = { done: '✓ done', 'in-progress': '◐ in progress', todo: '○ to do' };

/** UI state worth restoring when the panel is reopened. */
export interface UiState {
  open: number[];
}

/**
 * The integration panel: readiness score, n/10 progress bar, burn-down chart, and the ten steps with
 * their explanation, sub-items (tick boxes for the manual ones), open findings linked to the code,
 * a note, and the step's actions. Every value is rendered as text (Lit escapes bindings).
 *
 * @tag tpu-checklist
 * @fires tpu-host-message - a typed ToHost message for the extension host (detail: ToHostMessage)
 * @fires tpu-ui-state - the open steps changed (detail: UiState)
 * @cssprop [--vscode-foreground]
 * @cssprop [--vscode-textLink-foreground] - finding links
 */
export class TpuChecklist extends LitElement {
  static override properties = { vm: { attribute: false }, cost: { attribute: false }, priced: { attribute: false }, open: { attribute: false }, notice: { attribute: false } };
  static override styles = styles;

  // `declare` + constructor: class fields would shadow Lit's reactive accessors (useDefineForClassFields)
  declare vm: ChecklistVM | null;
  /** The cost module's last estimate: the estimator section shows only when there is one. */
  declare cost: CostVM | null;
  /** Open findings priced on the workspace's training config (estimates): their own section, and a line under each in its step. */
  declare priced: PricedFindingsVM | null;
  /** Steps shown expanded. */
  declare open: number[];
  declare notice: { level: 'info' | 'error'; text: string } | null;

  constructor() {
    super();
    this.vm = null;
    this.cost = null;
    this.priced = null;
    this.open = [];
    this.notice = null;
  }
  private noteTimers = new Map<number, ReturnType<typeof setTimeout>>();

  private send<K extends keyof ToHost>(type: K, body: ToHost[K]): void {
    const msg: ToHostMessage = toHost(type, body);
    this.dispatchEvent(new CustomEvent(HOST_MESSAGE_EVENT, { detail: msg, bubbles: true, composed: true }));
  }

  private toggled(step: number, isOpen: boolean): void {
    const next = new Set(this.open);
    if (isOpen) next.add(step);
    else next.delete(step);
    this.open = [...next].sort((a, b) => a - b);
    this.dispatchEvent(new CustomEvent<UiState>('tpu-ui-state', { detail: { open: this.open }, bubbles: true, composed: true }));
  }

  private noteInput(step: number, text: string, now: boolean): void {
    clearTimeout(this.noteTimers.get(step));
    if (now) {
      this.noteTimers.delete(step);
      this.send('note', { step, text });
    } else this.noteTimers.set(step, setTimeout(() => this.noteInput(step, text, true), 600));
  }

  override render() {
    const vm = this.vm;
    if (!vm) return html`<p>Loading the checklist…</p>`;
    const open = vm.steps.reduce((a, s) => a + s.open, 0);
    return html`
      <header>
        <div>
          <h1>TPU readiness</h1>
          <div class="score" aria-label="Readiness score ${vm.score} of 100">${vm.score}<small>/100</small></div>
        </div>
        <div class="progress">
          <div class="progress-label" id="progress-label">${vm.done}/${vm.total} steps done · ${open} open finding${open === 1 ? '' : 's'} · ${vm.profile === 'torchtpu' ? 'TorchTPU preview' : 'PyTorch/XLA'}</div>
          <vscode-progress-bar .value=${vm.done} .max=${vm.total} aria-labelledby="progress-label"></vscode-progress-bar>
        </div>
        <div class="toolbar">
          <vscode-button secondary @click=${() => this.send('rescan', {})}>Rescan workspace</vscode-button>
          <vscode-button secondary @click=${() => this.send('estimateCost', {})}>Estimate training cost…</vscode-button>
          <vscode-button secondary @click=${() => this.send('exportReport', { format: 'md' })}>Export report (Markdown)</vscode-button>
          <vscode-button secondary @click=${() => this.send('exportReport', { format: 'html' })}>Export report (HTML)</vscode-button>
        </div>
      </header>
      ${vm.progressError ? html`<div class="banner" role="alert">${vm.progressError}. Ticks and notes are not saved until the file is fixed.</div>` : nothing}
      ${this.notice ? html`<div class="notice ${this.notice.level}" role="status">${this.notice.text}</div>` : nothing}
      <h2>Burn-down</h2>
      <tpu-burndown .history=${vm.history}></tpu-burndown>
      ${this.cost ? html`<h2>Training cost estimate</h2><tpu-estimate .cost=${this.cost}></tpu-estimate>` : nothing}
      ${this.renderPriced()}
      <h2>Steps</h2>
      ${vm.steps.map((s) => this.renderStep(s))}
    `;
  }

  private renderStep(s: StepVM) {
    return html`
      <vscode-collapsible
        data-step=${s.step}
        .heading=${`${s.step}. ${s.title}`}
        .description=${`${STATUS[s.status]}${s.open ? ` · ${s.open} open` : ''}`}
        .open=${this.open.includes(s.step)}
        @vsc-collapsible-toggle=${(e: CustomEvent<{ open: boolean }>) => this.toggled(s.step, e.detail.open)}
      >
        <div class="step-body">
          <p class="explanation">${withCode(s.explanation)}</p>
          <ul class="items" aria-label="Checklist items of step ${s.step}">
            ${s.items.map((i) =>
              i.kind === 'manual'
                ? html`<li><vscode-checkbox data-item=${i.id} .checked=${i.met} .label=${i.text} @change=${(e: Event) => this.send('tick', { step: s.step, item: i.id, checked: (e.target as HTMLInputElement).checked })}></vscode-checkbox></li>`
                : html`<li class="evidence ${i.met ? 'met' : ''}"><span class="mark" aria-hidden="true">${i.met ? '✓' : '○'}</span>${i.text} <span class="from-code">(${i.met ? 'found in the code' : 'not found in the code yet'})</span></li>`,
            )}
          </ul>
          ${s.findings.length ? html`<h3>Open findings (${s.open})</h3><ul class="findings">${s.findings.map((f) => this.renderFinding(f))}${s.open > s.findings.length ? html`<li class="more">… and ${s.open - s.findings.length} more</li>` : nothing}</ul>` : nothing}
          <label class="note-label" for="note-${s.step}">Note</label>
          <vscode-textarea
            id="note-${s.step}"
            rows="2"
            placeholder="Decisions, links, owners…"
            .value=${s.note}
            @input=${(e: Event) => this.noteInput(s.step, (e.target as HTMLTextAreaElement).value, false)}
            @change=${(e: Event) => this.noteInput(s.step, (e.target as HTMLTextAreaElement).value, true)}
          ></vscode-textarea>
          ${s.actions.length ? html`<div class="actions">${s.actions.map((a) => html`<vscode-button data-action=${a.id} ?secondary=${a.id !== 'fixSafe'} @click=${() => this.send('action', { step: s.step, action: a.id })}>${a.label}</vscode-button>`)}</div>` : nothing}
        </div>
      </vscode-collapsible>
    `;
  }

  /** The priced finding made from this finding (same file, cell, line and rule), if any. */
  private pricedOf(f: FindingVM): PricedFindingVM | undefined {
    return this.priced?.findings.find((p) => p.uri === f.uri && p.rule === f.rule && p.cell === f.cell && p.line === f.line);
  }

  private renderPriced() {
    const p = this.priced;
    if (!p || !p.findings.length) return nothing;
    return html`
      <h2 id="priced-heading">Priced findings <span class="estimate-label">(estimates)</span></h2>
      <section class="priced" aria-labelledby="priced-heading">
        <p class="priced-note">
          What each open finding adds to the run in <code>${p.config}</code> on ${p.basis}: an estimate from the assumptions listed with it, not a
          measurement (profile on a TPU to confirm). Edit them under <code>[findings.TPUnnn]</code> in <code>.tpu-ready/cost.toml</code>.
        </p>
        <ul class="priced-list">
          ${p.findings.map((x) => {
            const where = x.cell === null ? `${x.path}:${x.line + 1}` : `${x.path} cell ${x.cell}:${x.line + 1}`;
            return html`<li class="priced-finding" data-rule=${x.rule}>
              <div class="priced-head">
                <button class="link" title="Go to the code" @click=${() => this.send('openFinding', { uri: x.uri, line: x.line, character: x.character, cell: x.cell })}>${where}</button>
                <span class="rule">${x.rule}</span>
                <span class="priced-summary">${x.summary}</span>
              </div>
              <div class="message">${withCode(x.message)}${x.lines.length > 1 ? html` <span class="more">(lines ${x.lines.join(', ')}, priced once)</span>` : nothing}</div>
              <details>
                <summary>Assumptions (${x.assumptions.length})</summary>
                <ul class="assumptions">
                  ${x.assumptions.map((a) => html`<li><code>${a.key}</code> = ${a.value} ${a.unit}: ${a.meaning} <span class="more">(${a.source})</span></li>`)}
                </ul>
              </details>
            </li>`;
          })}
          ${p.more ? html`<li class="more">… and ${p.more} more priced finding${p.more === 1 ? '' : 's'}</li>` : nothing}
        </ul>
      </section>
    `;
  }

  private renderFinding(f: FindingVM) {
    const where = f.cell === null ? `${f.path}:${f.line + 1}` : `${f.path} cell ${f.cell}:${f.line + 1}`;
    const priced = this.pricedOf(f);
    return html`<li class="finding">
      <span class="sev ${f.severity}">${f.severity}</span>
      <button class="link" title="Go to the code" @click=${() => this.send('openFinding', { uri: f.uri, line: f.line, character: f.character, cell: f.cell })}>${where}</button>
      <a href=${f.docsUrl} title="Rule documentation">${f.rule}</a>
      <span class="message">${withCode(f.message)}${f.fix === 'safe' ? ' (safe fix)' : ''}${priced
        ? html`<span class="priced-inline" title=${priced.assumptions.map((a) => `${a.key} = ${a.value} ${a.unit}: ${a.meaning}`).join('\n')}>${priced.summary}</span>`
        : nothing}</span>
    </li>`;
  }
}

if (!customElements.get('tpu-checklist')) customElements.define('tpu-checklist', TpuChecklist);

declare global {
  interface HTMLElementTagNameMap {
    'tpu-checklist': TpuChecklist;
  }
}
