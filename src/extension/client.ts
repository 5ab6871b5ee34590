/**
 * The extension as the client of the tpu-ready language server (issue 13): everything that is analysis runs in
 * dist/server.js, a Node process of its own (IPC transport), never on the extension host thread. The client syncs
 * Python files, Jupyter notebooks (LSP 3.17 notebook sync: cells as one program) and the project text files the
 * engine reads; the server pushes the diagnostics (same source, codes, docs links, related locations as before),
 * answers code actions (quick-fixes, ignore, fix-all, `source.fixAll.tpuReady` for editor.codeActionsOnSave, from
 * the document's current version), scans the workspace, keeps the project index, and tells the extension what it
 * found (`tpuReady/didAnalyse`) for the checklist, the status bar, the tree and the cost lens, which stay here.
 */
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import { LanguageClient, TransportKind, WorkDoneProgress, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import {
  AnalysedNotification, FixEditRequest, ScanWorkspaceRequest,
  type AnalysedParams, type FixEditParams, type FixEditResult, type InitializationOptions, type ScanWorkspaceParams, type WorkspaceScanResult,
} from '../protocol/lsp';
import type { LocatedFinding } from '../core/types';
import { CommandId } from './commands';
import { SECTION } from './config';
import { SOURCE } from './convert';
import { NOTEBOOK_TYPE } from './notebooks';
import type { Confirmation } from './evidence';
import type { Results, Summary } from './results';

/** Project text files the engine reads (src/core/engine.ts textFileKind), synced to the server when open. */
const TEXT_FILES =
  '**/{requirements*.txt,requirements*.in,*.requirements.txt,constraints*.txt,pyproject.toml,setup.cfg,Dockerfile,Dockerfile.*,Containerfile,Containerfile.*,*.dockerfile,*.sh,*.bash,*.zsh,*.slurm,*.sbatch,.env,.env.*,*.env,*.yml,*.yaml}';

export interface ScanSummary extends Summary {
  scanned: number;
  cancelled: boolean;
}

export class Analysis implements vscode.Disposable {
  readonly client: LanguageClient;
  private started: Promise<void> | null = null;
  /** Files the last workspace scan reported on: when one of them is closed, its text on disk is scanned again. */
  private readonly scanned = new Set<string>();
  private readonly disposables: vscode.Disposable[] = [];
  /** The server's diagnostics per uri as published, before the runtime confirmations are added. */
  private readonly raw = new Map<string, [vscode.Uri, vscode.Diagnostic[]]>();
  private confirmations: (uri: vscode.Uri) => Confirmation[] = () => [];

  constructor(
    context: vscode.ExtensionContext,
    private readonly results: Results,
    log: vscode.LogOutputChannel,
  ) {
    const module = context.asAbsolutePath('dist/server.js');
    const serverOptions: ServerOptions = {
      // --background: the server runs at a lower CPU priority, so the editor stays first on a busy machine
      run: { module, transport: TransportKind.ipc, args: ['--background'] },
      debug: { module, transport: TransportKind.ipc, args: ['--background'], options: { execArgv: ['--nolazy'] } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
        { scheme: 'file', pattern: '**/*.py' },
        { scheme: 'file', pattern: TEXT_FILES },
        // every cell: VS Code asks notebook-wide fix-all (notebook.codeActionsOnSave) on the first cell, often markdown
        { notebook: NOTEBOOK_TYPE },
      ],
      diagnosticCollectionName: SOURCE,
      outputChannel: log,
      synchronize: { configurationSection: SECTION },
      initializationOptions: (): InitializationOptions => ({
        diagnosticMode: 'push',
        // the extension reports [tool.tpu-ready] problems itself, on every pyproject.toml of the workspace (configDiagnostics.ts)
        configDiagnostics: false,
        findingsNotifications: true,
        accelRefusalCommand: CommandId.UpdateAccelModule,
      }),
      middleware: {
        // a static finding the latest profiling run confirms says so in its own message (issue 12)
        handleDiagnostics: (uri, diagnostics, next) => {
          this.raw.set(uri.toString(), [uri, diagnostics]);
          next(uri, this.decorate(uri, diagnostics));
        },
        // "Learn about TPUnnn" after each "Ignore TPUnnn on this line": it opens the rule's page (a command of this extension)
        provideCodeActions: async (document, range, ctx, token, next) => {
          const actions = await next(document, range, ctx, token);
          if (!actions) return actions;
          const out: (vscode.Command | vscode.CodeAction)[] = [];
          for (const a of actions) {
            out.push(a);
            const m = a instanceof vscode.CodeAction ? /^Ignore (\S+) on this line$/.exec(a.title) : null;
            if (!m) continue;
            const learn = new vscode.CodeAction(`Learn about ${m[1]}`, vscode.CodeActionKind.QuickFix);
            learn.command = { command: CommandId.OpenRuleDocs, title: learn.title, arguments: [m[1]] };
            learn.diagnostics = (a as vscode.CodeAction).diagnostics;
            out.push(learn);
          }
          return out;
        },
      },
    };
    this.client = new LanguageClient('tpuReady', 'TPU Readiness', serverOptions, clientOptions);
    this.disposables.push(
      this.client.onNotification(AnalysedNotification.method, (p: AnalysedParams) => this.analysed(p)),
    );
  }

  /**
   * Where the runtime confirmations come from (the profiling runs, evidence.ts), and when they change: the static
   * diagnostics are decorated again ("… (seen in the run: 3 compilations, 2 s)").
   */
  useConfirmations(of: (uri: vscode.Uri) => Confirmation[], changed: vscode.Event<void>): void {
    this.confirmations = of;
    this.disposables.push(
      changed(() => {
        for (const [uri, ds] of this.raw.values()) this.client.diagnostics?.set(uri, this.decorate(uri, ds));
      }),
    );
  }

  private decorate(uri: vscode.Uri, ds: vscode.Diagnostic[]): vscode.Diagnostic[] {
    if (!ds.length) this.raw.delete(uri.toString());
    const confirmed = this.confirmations(uri);
    if (!confirmed.length) return ds;
    return ds.map((d) => {
      const rule = typeof d.code === 'object' ? String(d.code.value) : String(d.code);
      const c = confirmed.find((x) => x.line === d.range.start.line && x.rules.includes(rule));
      if (!c) return d;
      const out = new vscode.Diagnostic(d.range, `${d.message} (seen in the run: ${c.text})`, d.severity);
      out.source = d.source;
      out.code = d.code;
      out.relatedInformation = d.relatedInformation;
      out.tags = d.tags;
      return out;
    });
  }

  /** Starts the server (once); resolves when it is initialized. */
  start(): Promise<void> {
    return (this.started ??= this.client.start());
  }

  private analysed(p: AnalysedParams): void {
    const uri = vscode.Uri.parse(p.uri);
    if (p.findings) {
      let findings = p.findings;
      if (typeof p.keepHead === 'number' && typeof p.keepTail === 'number') {
        // only what changed since the last message: around the unchanged head and tail of what we have
        const prev = (this.results.get(uri)?.findings ?? []) as LocatedFinding[];
        findings = [...prev.slice(0, p.keepHead), ...p.findings, ...(p.keepTail ? prev.slice(prev.length - p.keepTail) : [])];
      }
      this.results.set({ uri, findings, relevant: p.relevant, origin: 'live' });
      return;
    }
    this.results.delete(uri);
    // closed (or no longer analysed): a file the scan reported on shows its text on disk again
    if (this.scanned.has(p.uri)) void this.rescan([p.uri]);
  }

  /** Scans the workspace behind a cancellable progress notification; resolves with the workspace summary. */
  scan(): Thenable<ScanSummary> {
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'TPU Readiness: scanning the workspace', cancellable: true },
      async (progress, token) => {
        await this.start();
        const workDoneToken = randomUUID();
        let last = 0;
        const sub = this.client.onProgress(WorkDoneProgress.type, workDoneToken, (v) => {
          if (v.kind === 'end') return;
          const pct = v.percentage ?? last;
          progress.report({ message: v.message, increment: Math.max(0, pct - last) });
          last = pct;
        });
        try {
          const params: ScanWorkspaceParams = { workDoneToken };
          const r = await this.client.sendRequest<WorkspaceScanResult>(ScanWorkspaceRequest.method, params, token);
          this.record(r);
          return { ...this.results.summary(), scanned: r.done, cancelled: r.cancelled || token.isCancellationRequested };
        } finally {
          sub.dispose();
        }
      },
    );
  }

  private async rescan(uris: string[]): Promise<void> {
    try {
      await this.start();
      const params: ScanWorkspaceParams = { uris };
      this.record(await this.client.sendRequest<WorkspaceScanResult>(ScanWorkspaceRequest.method, params));
    } catch {
      // the server stopped: nothing to show
    }
  }

  private record(r: WorkspaceScanResult): void {
    for (const f of r.files) {
      const uri = vscode.Uri.parse(f.uri);
      if (this.results.get(uri)?.origin === 'live' && this.isOpen(uri)) continue;
      if (f.skipped) {
        this.results.delete(uri);
        this.scanned.delete(f.uri);
        continue;
      }
      this.results.set({ uri, findings: f.findings, relevant: f.relevant, origin: 'scan' });
      this.scanned.add(f.uri);
    }
  }

  private isOpen(uri: vscode.Uri): boolean {
    const key = uri.toString();
    return vscode.workspace.textDocuments.some((d) => d.uri.toString() === key) || vscode.workspace.notebookDocuments.some((n) => n.uri.toString() === key);
  }

  /** Fix-all's edit on an open file or notebook (its current text), computed by the server, not applied. */
  async fixEdit(uri: vscode.Uri, req: Omit<FixEditParams, 'uri'>): Promise<{ edit: vscode.WorkspaceEdit | null; applied: number; accelToCreate: vscode.Uri | null; refused: FixEditResult['refused'] }> {
    await this.start();
    const params: FixEditParams = { uri: this.client.code2ProtocolConverter.asUri(uri), ...req };
    const r = await this.client.sendRequest<FixEditResult>(FixEditRequest.method, params);
    const edit = r.edit ? await this.client.protocol2CodeConverter.asWorkspaceEdit(r.edit) : null;
    return { edit, applied: r.applied, accelToCreate: r.accelToCreate ? vscode.Uri.parse(r.accelToCreate) : null, refused: r.refused };
  }

  /** The static findings at a 0-based line of a file, from the latest analysis or scan. */
  findingsAt(uri: vscode.Uri, line: number): LocatedFinding[] {
    return ((this.results.get(uri)?.findings ?? []) as LocatedFinding[]).filter((f) => f.startPos?.line === line);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    void this.client.stop().catch(() => undefined);
  }
}
