/**
 * The integration panel host: one webview panel (createOrShow / revive through the serializer), the
 * strict-CSP shell from src/checklist/webviewHtml.ts, local resources only (dist/webview, media),
 * typed messages both ways (what the page sends is validated by parseToHost; anything else is dropped).
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { makeNonce, parseToHost, webviewHtml } from '../checklist';
import type { ChecklistVM } from '../protocol/checklist';
import type { CostVM, PricedFindingsVM } from '../protocol/cost';
import type { ToHostMessage, ToWebview } from '../protocol/messages';
import type { ChecklistService } from './checklistService';

export const PANEL_VIEW_TYPE = 'tpuReady.checklistPanel';

/** Prices the open findings on the workspace's training config (the cost module); null without one. */
export type FindingPricer = () => Promise<PricedFindingsVM | null>;

/** What the panel asks the host to do (implemented in checklist.ts). */
export type PanelHandler = (msg: Exclude<ToHostMessage, { type: 'ready' }>) => Promise<void> | void;

export class ChecklistPanel implements vscode.Disposable {
  static current: ChecklistPanel | undefined;
  /** The cost module's last estimate (tpuReady.showCostPanel), shown in the estimator section. */
  static cost: CostVM | null = null;
  /** Set by the extension when the cost module is there: the panel's "Priced findings". */
  static pricer: FindingPricer | null = null;
  /** The last priced findings sent: the state goes out at once with them, then again when pricing the new findings differs. */
  private priced: PricedFindingsVM | null = null;
  private generation = 0;
  private disposed = false;
  private readonly disposables: vscode.Disposable[] = [];

  static createOrShow(extensionUri: vscode.Uri, service: ChecklistService, handle: PanelHandler): ChecklistPanel {
    if (ChecklistPanel.current) {
      ChecklistPanel.current.panel.reveal(undefined, false);
      return ChecklistPanel.current;
    }
    const panel = vscode.window.createWebviewPanel(PANEL_VIEW_TYPE, 'TPU Readiness', vscode.ViewColumn.Active, ChecklistPanel.options(extensionUri));
    return (ChecklistPanel.current = new ChecklistPanel(panel, extensionUri, service, handle));
  }

  static revive(panel: vscode.WebviewPanel, extensionUri: vscode.Uri, service: ChecklistService, handle: PanelHandler): ChecklistPanel {
    ChecklistPanel.current?.dispose();
    panel.webview.options = ChecklistPanel.options(extensionUri);
    return (ChecklistPanel.current = new ChecklistPanel(panel, extensionUri, service, handle));
  }

  private static options(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
    return {
      enableScripts: true,
      enableCommandUris: false,
      retainContextWhenHidden: false,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webview'), vscode.Uri.joinPath(extensionUri, 'media')],
    };
  }

  private constructor(
    readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    private readonly service: ChecklistService,
    private readonly handle: PanelHandler,
  ) {
    panel.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'tpu-ready.svg');
    const webview = panel.webview;
    webview.html = webviewHtml({
      nonce: makeNonce((n) => randomBytes(n)),
      cspSource: webview.cspSource,
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webview', 'main.js')).toString(),
      title: 'TPU Readiness',
    });
    this.disposables.push(
      panel.onDidDispose(() => this.dispose()),
      webview.onDidReceiveMessage((raw: unknown) => {
        const msg = parseToHost(raw);
        if (!msg) return; // not a ToHost message: ignored
        if (msg.type === 'ready') this.postState();
        else void Promise.resolve(this.handle(msg)).catch((e) => this.post('notice', { level: 'error', text: String((e as Error)?.message ?? e) }));
      }),
      service.onDidChange(() => this.postState()),
      panel.onDidChangeViewState(() => panel.visible && this.postState()),
    );
  }

  post<K extends keyof ToWebview>(type: K, body: ToWebview[K]): void {
    void this.panel.webview.postMessage({ type, body });
  }

  postState(): void {
    if (!this.panel.visible) return;
    const generation = ++this.generation;
    const checklist = this.service.vm();
    this.post('state', { checklist, cost: ChecklistPanel.cost, priced: this.priced });
    void this.reprice(generation, checklist);
  }

  private async reprice(generation: number, checklist: ChecklistVM): Promise<void> {
    const pricer = ChecklistPanel.pricer;
    if (!pricer) return;
    let priced: PricedFindingsVM | null = null;
    try {
      priced = await pricer();
    } catch {
      priced = null; // a config that no longer estimates: no priced findings
    }
    if (this.disposed || generation !== this.generation || !this.panel.visible) return; // closed, or a newer state went out meanwhile
    if (JSON.stringify(priced) === JSON.stringify(this.priced)) return;
    this.priced = priced;
    this.post('state', { checklist, cost: ChecklistPanel.cost, priced });
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (ChecklistPanel.current === this) ChecklistPanel.current = undefined;
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}
