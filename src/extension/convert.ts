/** Conversions between the engine's model (offsets, LocatedFinding, SourceDocument) and `vscode` types. */
import * as vscode from 'vscode';
import { docsUrl } from '../core/rule';
import { LineIndex } from '../core/source';
import type { SourceDocument } from '../core/engine';
import type { LocatedFinding, Severity } from '../core/types';
import { diffText } from '../core/textDiff';

export const SOURCE = 'tpu-ready';

import { STEP_TITLES } from '../core/types';

/** Titles of the ten integration-checklist steps (shared/RULES.md §0.4). */
export { STEP_TITLES };

export function toSeverity(s: Severity): vscode.DiagnosticSeverity {
  switch (s) {
    case 'error':
      return vscode.DiagnosticSeverity.Error;
    case 'warning':
      return vscode.DiagnosticSeverity.Warning;
    case 'info':
      return vscode.DiagnosticSeverity.Information;
    case 'hint':
      return vscode.DiagnosticSeverity.Hint;
  }
}

export function toRange(f: LocatedFinding): vscode.Range {
  return new vscode.Range(f.startPos.line, f.startPos.character, f.endPos.line, f.endPos.character);
}

export function docsUri(rule: string): vscode.Uri {
  return vscode.Uri.parse(docsUrl(rule));
}

/** A diagnostic for a finding placed in `uri` (the file, or the notebook cell it lies in). */
export function toDiagnostic(f: LocatedFinding, uri: vscode.Uri, range = toRange(f), cellUri?: (cell: number) => vscode.Uri | undefined): vscode.Diagnostic {
  const d = new vscode.Diagnostic(range, f.message || f.rule, toSeverity(f.severity));
  d.source = SOURCE;
  d.code = { value: f.rule, target: docsUri(f.rule) };
  d.relatedInformation = [
    new vscode.DiagnosticRelatedInformation(new vscode.Location(uri, range), `Checklist step ${f.step} of 10: ${STEP_TITLES[f.step] ?? ''}`),
  ];
  // other places of the same problem (issue 9): another module's line, or a duplicate folded into this finding
  for (const r of f.related ?? []) {
    const at = r.path !== undefined ? vscode.Uri.file(r.path) : r.cell !== null && r.cell !== f.cell ? cellUri?.(r.cell) : uri;
    if (!at) continue;
    const where = new vscode.Range(r.startPos.line, r.startPos.character, r.endPos.line, r.endPos.character);
    d.relatedInformation.push(new vscode.DiagnosticRelatedInformation(new vscode.Location(at, where), r.message));
  }
  return d;
}

/** Where an analysed document lives in the editor: a file, or one cell document per notebook cell index. */
export interface DocumentTarget {
  uri: vscode.Uri;
  cells: readonly vscode.Uri[] | null;
}

function addTextEdits(edit: vscode.WorkspaceEdit, uri: vscode.Uri, before: string, after: string): number {
  const changes = diffText(before, after);
  if (!changes.length) return 0;
  const lines = new LineIndex(before);
  const pos = (o: number) => {
    const p = lines.position(o);
    return new vscode.Position(p.line, p.character);
  };
  for (const c of changes) edit.replace(uri, new vscode.Range(pos(c.start), pos(c.end)), c.text);
  return changes.length;
}

/**
 * Adds to `edit` the changes turning `before` into `after` (as the engine rewrote it): minimal text edits
 * on the file, or on each changed cell document of a notebook. Returns the number of text edits.
 */
export function addDocumentEdits(edit: vscode.WorkspaceEdit, target: DocumentTarget, before: SourceDocument, after: SourceDocument): number {
  if (before.kind === 'notebook' && after.kind === 'notebook') {
    let n = 0;
    before.cells.forEach((cell, i) => {
      const next = after.cells[i];
      const uri = target.cells?.[i];
      if (next && uri && next.text !== cell.text) n += addTextEdits(edit, uri, cell.text, next.text);
    });
    return n;
  }
  if (before.kind !== 'notebook' && after.kind !== 'notebook') return addTextEdits(edit, target.uri, before.text, after.text);
  return 0;
}
