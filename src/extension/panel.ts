/**
 * The integration panel host: one webview panel (createOrShow / revive through the serializer), the
 * strict-CSP shell from src/checklist/webviewHtml.ts, local resources only (dist/webview, media),
 * typed messages both ways (what the page sends is validated by parseToHost; anything else is dropped).
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { makeNonce, parseToHost, webviewHtml } from '../checklist';
import type { CostVM } from '../protocol/cost';
import type { ToHostMessage, ToWebview } from '../protocol/messages';
import type { ChecklistService } from './checklistService';

export const PANEL_VIEW_TYPE = 'tpuReady.checklistPanel';

/** What the panel asks the host to do (implemented in checklist.ts). */
export type PanelHandler = (msg: Exclude<ToHostMessage, { type: 'ready' }>) => Promise<void> | void;

export class ChecklistPanel implements vscode.Disposable {
  static current: ChecklistPanel | undefined;
  /** The cost module's last estimate (tpuReady.showCostPanel), shown in the estimator section. */
  static cost: CostVM | null = null;
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
    if (this.panel.visible) this.post('state', { checklist: this.service.vm(), cost: ChecklistPanel.cost });
  }

  dispose(): void {
    if (ChecklistPanel.current === this) ChecklistPanel.current = undefined;
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}
