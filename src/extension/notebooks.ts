/**
 * Jupyter notebooks in the editor: the engine analyses a notebook as one program (its code cells
 * joined, magics masked) so cross-cell imports resolve; findings come back with their cell index and
 * are published on that cell's `vscode-notebook-cell:` document.
 */
import * as vscode from 'vscode';
import { notebookDocument, pythonDocument, textDocument, textFileKind, type SourceDocument } from '../core/engine';
import type { NotebookCell } from '../core/notebook';

export const NOTEBOOK_TYPE = 'jupyter-notebook';

/** Path the engine reports and matches globs on: workspace-relative when inside a folder. */
export function enginePath(uri: vscode.Uri): string {
  return uri.scheme === 'untitled' ? uri.path : vscode.workspace.asRelativePath(uri, false);
}

export function notebookCells(nb: vscode.NotebookDocument): NotebookCell[] {
  return nb.getCells().map((c) => ({
    kind: c.kind === vscode.NotebookCellKind.Code ? 'code' : 'markdown',
    text: c.document.getText(),
    language: c.kind === vscode.NotebookCellKind.Code ? c.document.languageId : undefined,
  }));
}

export function notebookSource(nb: vscode.NotebookDocument): SourceDocument {
  return notebookDocument(enginePath(nb.uri), notebookCells(nb));
}

/** A Python file or a project text file (requirements, Dockerfile, …) as the engine sees it; null for other files. */
export function documentSource(doc: vscode.TextDocument): SourceDocument | null {
  const path = enginePath(doc.uri);
  if (doc.languageId === 'python' || doc.uri.path.endsWith('.py')) return pythonDocument(path, doc.getText());
  const kind = textFileKind(doc.uri.path);
  return kind ? textDocument(path, doc.getText(), kind) : null;
}
