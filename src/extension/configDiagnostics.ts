/**
 * Problems in `[tool.tpu-ready]` (invalid TOML, unknown keys, bad values, as `parseProjectConfig`
 * reports them) shown as diagnostics on pyproject.toml: at the offending line when known, else on the
 * `[tool.tpu-ready]` header, else on line 1. Kept in their own collection (the linter's collection holds
 * the rule findings of an open pyproject.toml), refreshed when the file changes on disk or is edited,
 * and cleared when fixed or deleted.
 */
import * as vscode from 'vscode';
import { configHeaderLine, parseProjectConfig, type ConfigProblem } from '../core/config';
import { SOURCE } from './convert';

const GLOB = '**/pyproject.toml';
const SKIP = '**/{.git,node_modules,.venv,venv,.tox,.nox,site-packages}/**';
const DEBOUNCE_MS = 300;
/** A pyproject.toml tpu-ready reads: one with a `[tool.tpu-ready]` table (or a dotted `tool.tpu-ready.` key). */
const OURS = /^\s*\[\s*tool\s*\.\s*"?tpu-ready"?\s*[\].]|^\s*tool\s*\.\s*"?tpu-ready"?\s*\./m;

export function isPyproject(uri: vscode.Uri): boolean {
  return uri.path.endsWith('/pyproject.toml') && (uri.scheme === 'file' || uri.scheme === 'vscode-remote' || uri.scheme === 'untitled');
}

/** The diagnostics of pyproject.toml `text` (none when it has no `[tool.tpu-ready]`). */
export function configDiagnostics(text: string): vscode.Diagnostic[] {
  if (!OURS.test(text)) return [];
  const { problems } = parseProjectConfig(text);
  const lines = text.split(/\r?\n/);
  const header = configHeaderLine(text);
  return problems.map((p: ConfigProblem) => {
    const n = Math.min(Math.max((p.line ?? header ?? 1) - 1, 0), lines.length - 1);
    const line = lines[n] ?? '';
    const start = line.length - line.trimStart().length;
    const range = new vscode.Range(n, start, n, Math.max(line.trimEnd().length, start));
    const invalid = /not valid TOML/.test(p.message);
    const d = new vscode.Diagnostic(range, p.message, invalid ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning);
    d.source = SOURCE;
    d.code = invalid ? 'config-toml' : 'config';
    return d;
  });
}

export class ConfigDiagnostics implements vscode.Disposable {
  readonly collection = vscode.languages.createDiagnosticCollection(`${SOURCE}-config`);
  private readonly disposables: vscode.Disposable[] = [this.collection];
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Latest refresh per file: an older read finishing late never overwrites a newer one. */
  private readonly generations = new Map<string, number>();

  constructor(private readonly log: vscode.LogOutputChannel) {}

  /** Reads every pyproject.toml of the workspace once, then follows changes. */
  start(): void {
    const watcher = vscode.workspace.createFileSystemWatcher(GLOB);
    const ws = vscode.workspace;
    this.disposables.push(
      watcher,
      watcher.onDidCreate((u) => this.schedule(u, 0)),
      watcher.onDidChange((u) => this.schedule(u, 0)),
      watcher.onDidDelete((u) => this.drop(u)),
      ws.onDidOpenTextDocument((d) => isPyproject(d.uri) && this.schedule(d.uri, 0)),
      ws.onDidChangeTextDocument((e) => e.contentChanges.length && isPyproject(e.document.uri) && this.schedule(e.document.uri, DEBOUNCE_MS)),
      // closing an edited file without saving: the file on disk is what counts again
      ws.onDidCloseTextDocument((d) => isPyproject(d.uri) && this.schedule(d.uri, 0)),
      ws.onDidChangeWorkspaceFolders(() => void this.refreshAll()),
    );
    void this.refreshAll();
  }

  async refreshAll(): Promise<void> {
    try {
      const uris = await vscode.workspace.findFiles(GLOB, SKIP, 500);
      const keep = new Set(uris.map((u) => u.toString()));
      this.collection.forEach((u) => {
        if (!keep.has(u.toString()) && !vscode.workspace.textDocuments.some((d) => d.uri.toString() === u.toString())) this.collection.delete(u);
      });
      await Promise.all(uris.map((u) => this.refresh(u)));
    } catch (e) {
      this.log.error(`reading pyproject.toml files failed: ${(e as Error)?.message ?? e}`);
    }
  }

  private schedule(uri: vscode.Uri, delay: number): void {
    const key = uri.toString();
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        void this.refresh(uri);
      }, delay),
    );
  }

  private drop(uri: vscode.Uri): void {
    const key = uri.toString();
    clearTimeout(this.timers.get(key));
    this.generations.set(key, (this.generations.get(key) ?? 0) + 1);
    // a deleted file still open in an editor keeps the diagnostics of its text
    if (!vscode.workspace.textDocuments.some((d) => d.uri.toString() === key)) this.collection.delete(uri);
  }

  /** Re-reads one pyproject.toml (the editor's text when open, else the file) and publishes its problems. */
  async refresh(uri: vscode.Uri): Promise<void> {
    const key = uri.toString();
    const generation = (this.generations.get(key) ?? 0) + 1;
    this.generations.set(key, generation);
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key && !d.isClosed);
    let text: string | null = open ? open.getText() : null;
    if (text === null) {
      try {
        text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
      } catch {
        text = null;
      }
    }
    if (this.generations.get(key) !== generation) return;
    const ds = text === null ? [] : configDiagnostics(text);
    if (ds.length) this.collection.set(uri, ds);
    else this.collection.delete(uri);
    if (ds.length) this.log.info(`${vscode.workspace.asRelativePath(uri)}: ${ds.length} problem${ds.length === 1 ? '' : 's'} in [tool.tpu-ready]`);
  }

  dispose(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const d of this.disposables) d.dispose();
  }
}
