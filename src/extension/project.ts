/**
 * Project scope in the editor (issue 9): one module index per workspace folder, read from open documents first and
 * from disk otherwise, kept up to date as Python files change, are saved, created or deleted. The linter asks it
 * for the index of a document and for the open files that import a changed module (re-analysed, not the workspace).
 * Kept in one file so that the language-server port moves it whole.
 */
import fs from 'node:fs';
import * as vscode from 'vscode';
import { ProjectIndex, normalizePath } from '../model/project';

/** Modules larger than this are not read from disk for project scope (tpuReady.maxFileSize decides for open ones). */
const MAX_MODULE_BYTES = 1_000_000;

export class WorkspaceProjects implements vscode.Disposable {
  private readonly indexes = new Map<string, ProjectIndex>();
  private readonly disposables: vscode.Disposable[] = [];

  /** `relint(paths)` analyses again the open documents among `paths` (normalized file paths). */
  constructor(private readonly relint: (paths: string[]) => void) {
    const watcher = vscode.workspace.createFileSystemWatcher('**/*.py');
    const changed = (uri: vscode.Uri, deleted: boolean) => {
      if (uri.scheme !== 'file' || this.openText(uri.fsPath) !== null) return;
      const index = this.indexFor(uri);
      if (!index) return;
      this.relint(index.update(uri.fsPath, deleted ? null : readModule(uri.fsPath)).slice(1));
    };
    this.disposables.push(
      watcher,
      watcher.onDidChange((u) => changed(u, false)),
      watcher.onDidCreate((u) => changed(u, false)),
      watcher.onDidDelete((u) => changed(u, true)),
      // a closed document falls back to what is on disk
      vscode.workspace.onDidCloseTextDocument((doc) => {
        if (doc.languageId !== 'python' || doc.uri.scheme !== 'file') return;
        const index = this.indexFor(doc.uri);
        if (index) this.relint(index.update(doc.uri.fsPath, readModule(doc.uri.fsPath)).slice(1));
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.reset()),
    );
  }

  private openText(fsPath: string): string | null {
    const p = normalizePath(fsPath);
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && normalizePath(d.uri.fsPath) === p);
    return doc ? doc.getText() : null;
  }

  /** The index of the workspace folder holding `uri`, or null (untitled documents, files outside the workspace). */
  indexFor(uri: vscode.Uri): ProjectIndex | null {
    if (uri.scheme !== 'file') return null;
    const folder = vscode.workspace.getWorkspaceFolder(uri);
    if (!folder || folder.uri.scheme !== 'file') return null;
    const key = folder.uri.toString();
    let index = this.indexes.get(key);
    if (!index) {
      index = new ProjectIndex([folder.uri.fsPath], { readFile: (p) => this.openText(p) ?? readModule(p) });
      this.indexes.set(key, index);
    }
    return index;
  }

  /**
   * Before analysing a document: its current text goes into its folder's index. Returns the index and the other
   * files whose analysis depends on this text, when it changed (the caller re-analyses the open ones).
   */
  prepare(uri: vscode.Uri, text: string): { index: ProjectIndex | null; dependants: string[] } {
    const index = uri.fsPath.endsWith('.py') ? this.indexFor(uri) : null;
    if (!index) return { index: null, dependants: [] };
    const affected = index.update(uri.fsPath, text);
    index.load(uri.fsPath);
    return { index, dependants: affected.slice(1) };
  }

  private reset(): void {
    for (const i of this.indexes.values()) i.dispose();
    this.indexes.clear();
  }

  dispose(): void {
    this.reset();
    for (const d of this.disposables) d.dispose();
  }
}

function readModule(p: string): string | null {
  try {
    const st = fs.statSync(p);
    if (!st.isFile() || st.size > MAX_MODULE_BYTES) return null;
    return fs.readFileSync(p, 'utf8');
  } catch {
    return null;
  }
}
