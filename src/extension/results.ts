/**
 * The latest findings of every file the extension knows about (open documents as they are analysed,
 * the others from the last workspace scan), and the readiness score over them. The status bar and,
 * later, the checklist tree and panel read this store and refresh on its change event.
 */
import * as vscode from 'vscode';
import { effort, workspaceScore } from '../core/score';
import type { Finding } from '../core/types';

export interface FileResult {
  /** The file or notebook. */
  uri: vscode.Uri;
  findings: Finding[];
  /** The file uses torch (or has findings): it counts toward the workspace score. */
  relevant: boolean;
  origin: 'live' | 'scan';
}

export interface Summary {
  score: number;
  files: number;
  findings: number;
  errors: number;
  warnings: number;
  effort: number;
}

export class Results implements vscode.Disposable {
  private readonly byUri = new Map<string, FileResult>();
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires (coalesced) after results changed. */
  readonly onDidChange = this.changed.event;
  private pending: NodeJS.Timeout | undefined;

  set(result: FileResult): void {
    this.byUri.set(result.uri.toString(), result);
    this.schedule();
  }

  delete(uri: vscode.Uri): void {
    if (this.byUri.delete(uri.toString())) this.schedule();
  }

  get(uri: vscode.Uri): FileResult | undefined {
    return this.byUri.get(uri.toString());
  }

  all(): FileResult[] {
    return [...this.byUri.values()];
  }

  summary(): Summary {
    const files = this.all();
    const findings = files.flatMap((f) => f.findings);
    return {
      score: workspaceScore(files),
      files: files.filter((f) => f.relevant || f.findings.length).length,
      findings: findings.length,
      errors: findings.filter((f) => f.severity === 'error').length,
      warnings: findings.filter((f) => f.severity === 'warning').length,
      effort: effort(findings),
    };
  }

  private schedule(): void {
    if (this.pending) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.changed.fire();
    }, 100);
  }

  dispose(): void {
    if (this.pending) clearTimeout(this.pending);
    this.changed.dispose();
  }
}
