/**
 * "TPU Readiness: Scan Workspace": analyses every Python file, notebook and project file of the
 * workspace with a cancellable progress notification. Files that are open keep their live
 * diagnostics; the others get theirs in the Problems panel (notebooks on the .ipynb file, each
 * message prefixed with its cell and line, until the notebook is opened).
 */
import * as vscode from 'vscode';
import { analyze, locateAll, mayMatch, notebookDocument, pythonDocument, textDocument, textFileKind, type SourceDocument } from '../core/engine';
import { NotebookFormatError, parseIpynb } from '../core/notebook';
import { initParser } from '../core/parse';
import { normalizeLoneCr } from '../core/source';
import type { LocatedFinding } from '../core/types';
import { RULES } from '../rules';
import type { ConfigService } from './config';
import { toDiagnostic, toRange } from './convert';
import type { Linter } from './diagnostics';
import { enginePath } from './notebooks';
import type { Results, Summary } from './results';
import { isGeneratedAccel } from '../core/accel';

const SKIP_DIRS = '**/{.git,.hg,.svn,node_modules,__pycache__,.venv,venv,.tox,.nox,.mypy_cache,.pytest_cache,.ruff_cache,.ipynb_checkpoints,site-packages,.eggs}/**';
const MAX_FILES = 20000;

export function isCandidate(path: string): boolean {
  return path.endsWith('.py') || path.endsWith('.ipynb') || textFileKind(path) !== null;
}

export interface ScanSummary extends Summary {
  scanned: number;
  cancelled: boolean;
}

export class Scanner implements vscode.Disposable {
  /** Files the last scan reported on: when one of them is closed, its on-disk content is scanned again. */
  private readonly scanned = new Set<string>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly wasmDir: string,
    private readonly linter: Linter,
    private readonly config: ConfigService,
    private readonly results: Results,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      linter.onDidForget((uri) => {
        if (this.scanned.has(uri.toString())) void this.scanFile(uri);
      }),
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  /** Runs the scan behind a progress notification; resolves with the workspace summary. */
  run(): Thenable<ScanSummary> {
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'TPU Readiness: scanning the workspace', cancellable: true },
      (progress, token) => this.scan(progress, token),
    );
  }

  private async scan(progress: vscode.Progress<{ message?: string; increment?: number }>, token: vscode.CancellationToken): Promise<ScanSummary> {
    await initParser(this.wasmDir);
    const uris = (await vscode.workspace.findFiles('**/*', SKIP_DIRS, MAX_FILES, token)).filter((u) => isCandidate(u.path));
    uris.sort((a, b) => a.path.localeCompare(b.path));
    let done = 0;
    for (const uri of uris) {
      if (token.isCancellationRequested) break;
      if (!this.linter.isOpen(uri)) await this.scanFile(uri);
      done++;
      if (done % 10 === 0 || done === uris.length) {
        progress.report({ message: `${done}/${uris.length} files`, increment: (10 * 100) / Math.max(uris.length, 1) });
        await new Promise((r) => setImmediate(r)); // let the extension host breathe between batches
      }
    }
    return { ...this.results.summary(), scanned: done, cancelled: token.isCancellationRequested };
  }

  /** Analyses one file from disk and publishes its diagnostics (on the file uri). */
  async scanFile(uri: vscode.Uri): Promise<void> {
    const key = uri.toString();
    try {
      await initParser(this.wasmDir);
      const { options, settings } = await this.config.optionsFor(uri);
      const bytes = await vscode.workspace.fs.readFile(uri);
      if (!options || bytes.length > settings.maxFileSize) {
        this.forget(uri);
        return;
      }
      const raw = new TextDecoder().decode(bytes);
      const source = this.sourceOf(uri, raw);
      if (!source || this.linter.isOpen(uri)) return;
      const analysis = analyze(source, RULES, options);
      analysis.tree?.delete();
      const findings = locateAll(analysis);
      this.linter.collection.set(uri, findings.map((f) => this.diagnostic(f, uri)));
      this.results.set({ uri, findings, relevant: (mayMatch(source.kind === 'notebook' ? source.program.text : source.text) && !(source.kind === 'python' && isGeneratedAccel(source.text))) || findings.length > 0, origin: 'scan' });
      this.scanned.add(key);
    } catch (e) {
      if (e instanceof NotebookFormatError) this.log.warn(`${vscode.workspace.asRelativePath(uri)}: ${e.message}`);
      else this.log.error(`scanning ${uri.toString(true)} failed: ${(e as Error)?.stack ?? e}`);
      this.forget(uri);
    }
  }

  private forget(uri: vscode.Uri): void {
    this.scanned.delete(uri.toString());
    this.linter.collection.delete(uri);
    this.results.delete(uri);
  }

  private sourceOf(uri: vscode.Uri, raw: string): SourceDocument | null {
    const path = enginePath(uri);
    // lone-CR line endings as "\n" (same offsets): lines as the editor counts them
    if (uri.path.endsWith('.py')) return pythonDocument(path, normalizeLoneCr(raw));
    if (uri.path.endsWith('.ipynb')) return notebookDocument(path, parseIpynb(raw).cells);
    const kind = textFileKind(uri.path);
    return kind ? textDocument(path, raw, kind) : null;
  }

  private diagnostic(f: LocatedFinding, uri: vscode.Uri): vscode.Diagnostic {
    if (f.cell === null) return toDiagnostic(f, uri);
    // cell positions do not map into the .ipynb JSON: anchor at the top and say where
    const d = toDiagnostic(f, uri, new vscode.Range(0, 0, 0, 0));
    d.message = `cell ${f.cell + 1}, line ${toRange(f).start.line + 1}: ${d.message}`;
    return d;
  }
}
