/** The status bar item with the workspace readiness score; a click shows the readiness (checklist) view. */
import * as vscode from 'vscode';
import { CommandId } from './commands';
import type { Results } from './results';

export class ReadinessStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('tpuReady.score', vscode.StatusBarAlignment.Left, 50);
  private readonly subscription: vscode.Disposable;

  constructor(private readonly results: Results) {
    this.item.name = 'TPU Readiness';
    this.item.command = CommandId.ShowReadiness;
    this.subscription = results.onDidChange(() => this.update());
  }

  update(): void {
    const s = this.results.summary();
    if (!s.files) {
      this.item.hide();
      return;
    }
    this.item.text = `$(rocket) TPU ${s.score}%`;
    const tip = new vscode.MarkdownString(
      `**TPU readiness ${s.score}/100** over ${s.files} file${s.files === 1 ? '' : 's'}\n\n` +
        `${s.errors} blocking, ${s.warnings} slowing, ${s.findings - s.errors - s.warnings} advice · effort ${s.effort} points\n\n` +
        'Run "TPU Readiness: Scan Workspace" to include files that are not open.',
    );
    this.item.tooltip = tip;
    this.item.backgroundColor = s.errors ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.show();
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}
