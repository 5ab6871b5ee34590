/**
 * The cost code lens: "≈ $1,070 · 4.6 days on v5e-8 · spot $270" above a training config's first key
 * setting. It renders the CostVM from src/cost (the lens never computes costs) and refreshes as the
 * config or the assumptions files change.
 */
import * as vscode from 'vscode';
import type { CostVM } from '../protocol/cost';
import { CommandId } from './commands';

/** Computes the view model of a config document (unsaved text included), or null when it is no training config. */
export type CostVMSource = (doc: vscode.TextDocument) => Promise<CostVM | null>;

export class CostLensProvider implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly cache = new Map<string, { version: number; vm: CostVM | null }>();
  private readonly disposables: vscode.Disposable[] = [this.changed];

  constructor(private readonly vmOf: CostVMSource) {
    // assumptions live in other files: any change there refreshes every lens
    const watcher = vscode.workspace.createFileSystemWatcher('**/{pyproject.toml,.tpu-ready/cost.toml}');
    const refresh = () => this.refresh();
    this.disposables.push(watcher, watcher.onDidChange(refresh), watcher.onDidCreate(refresh), watcher.onDidDelete(refresh));
    this.disposables.push(vscode.workspace.onDidCloseTextDocument((d) => this.cache.delete(d.uri.toString())));
  }

  /** Bumped by refresh(): a view model computed before it is not cached (it may predate a new run or assumptions). */
  private generation = 0;

  refresh(): void {
    this.generation++;
    this.cache.clear();
    this.changed.fire();
  }

  /** The last view model computed for `uri` (tests and the panel read it). */
  vmFor(uri: vscode.Uri): CostVM | null {
    return this.cache.get(uri.toString())?.vm ?? null;
  }

  async provideCodeLenses(doc: vscode.TextDocument, token: vscode.CancellationToken): Promise<vscode.CodeLens[]> {
    const key = doc.uri.toString();
    let hit = this.cache.get(key);
    if (!hit || hit.version !== doc.version) {
      const generation = this.generation;
      const vm = await this.vmOf(doc);
      if (token.isCancellationRequested) return [];
      hit = { version: doc.version, vm };
      if (generation === this.generation) this.cache.set(key, hit);
    }
    const vm = hit.vm;
    if (!vm?.lens) return [];
    const line = Math.min(Math.max(0, vm.lens.line), Math.max(0, doc.lineCount - 1));
    const range = new vscode.Range(line, 0, line, 0);
    return [
      new vscode.CodeLens(range, {
        title: vm.lens.text,
        tooltip: vm.lens.tooltip,
        command: CommandId.EstimateCost,
        arguments: [doc.uri, { ask: false }],
      }),
    ];
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
