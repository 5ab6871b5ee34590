/**
 * Entry of the integration panel (bundled to dist/webview/main.js). Validates the host's messages,
 * forwards the components' typed messages to the host, and keeps the UI state (last view model,
 * expanded steps) through getState/setState so the panel restores when reopened or reloaded.
 */
import './components/tpu-checklist/tpu-checklist';
import type { TpuChecklist, UiState } from './components/tpu-checklist/tpu-checklist';
import type { ChecklistVM } from '../src/protocol/checklist';
import type { CostVM, PricedFindingsVM } from '../src/protocol/cost';
import type { ToHostMessage } from '../src/protocol/messages';
import { HOST_MESSAGE_EVENT, isChecklistVM, isCostVM, isPricedFindingsVM, parseToWebview, toHost, type HostMessageEvent } from './protocol';

interface VsCodeApi {
  postMessage(msg: ToHostMessage): void;
  getState(): unknown;
  setState(state: SavedState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface SavedState {
  checklist: ChecklistVM | null;
  cost: CostVM | null;
  priced: PricedFindingsVM | null;
  open: number[];
}

const vscode = acquireVsCodeApi();
const el = document.querySelector('tpu-checklist') as TpuChecklist;

function restore(): SavedState {
  const s = vscode.getState() as Partial<SavedState> | undefined;
  return {
    checklist: s && isChecklistVM(s.checklist) ? s.checklist : null,
    cost: s && isCostVM(s.cost) ? s.cost : null,
    priced: s && isPricedFindingsVM(s.priced) ? s.priced : null,
    open: s && Array.isArray(s.open) ? s.open.filter((n): n is number => Number.isInteger(n) && n >= 1 && n <= 10) : [],
  };
}

const state = restore();
el.vm = state.checklist;
el.cost = state.cost;
el.priced = state.priced;
el.open = state.open;
const save = () => vscode.setState({ checklist: el.vm, cost: el.cost, priced: el.priced, open: el.open });

let noticeTimer: ReturnType<typeof setTimeout> | undefined;
window.addEventListener('message', (event: MessageEvent) => {
  const msg = parseToWebview(event.data);
  if (!msg) return;
  switch (msg.type) {
    case 'state':
      el.vm = msg.body.checklist;
      el.cost = msg.body.cost;
      el.priced = msg.body.priced;
      save();
      break;
    case 'notice':
      el.notice = msg.body;
      clearTimeout(noticeTimer);
      noticeTimer = setTimeout(() => (el.notice = null), 8000);
      break;
  }
});

el.addEventListener(HOST_MESSAGE_EVENT, (e) => vscode.postMessage((e as HostMessageEvent).detail));
el.addEventListener('tpu-ui-state', (e) => {
  el.open = (e as CustomEvent<UiState>).detail.open;
  save();
});

vscode.postMessage(toHost('ready', {}));
