/**
 * Turns engine fixes into WorkspaceEdits: one fix, a suppression comment, or fix-all (the engine's
 * convergent `fixDocument`), each one undo step, with the device-abstraction module created in the
 * same edit when a dual-path fix calls it and it is not there yet.
 */
import * as vscode from 'vscode';
import { exists } from './files';
import { accelModuleSource } from '../core/accel';
import { analysedText, applyFixBatch, applyToDocument, cellOf, fixDocument, type SourceDocument } from '../core/engine';
import { parsePython } from '../core/parse';
import { suppressionEdit } from '../core/suppress';
import type { AnalyzeOptions, Finding } from '../core/types';
import { RULES } from '../rules';
import { addDocumentEdits, type DocumentTarget } from './convert';
import { sourceOf, targetOf, type Analysable, type FindingRef } from './diagnostics';

/**
 * The directory `import x` resolves from for a module at `file`: its folder, or, inside a package (a folder
 * with `__init__.py`), the first folder up without one (where `import pkg.trainer` runs from).
 */
async function importRoot(file: vscode.Uri): Promise<vscode.Uri> {
  let dir = vscode.Uri.joinPath(file, '..');
  for (let i = 0; i < 64 && (await exists(vscode.Uri.joinPath(dir, '__init__.py'))); i++) {
    const up = vscode.Uri.joinPath(dir, '..');
    if (up.path === dir.path) break;
    dir = up;
  }
  return dir;
}

/** Where the fixes' `import <name>` (dotted: `utils.accel`) finds the module for `file`, or null for unsaved files. */
export async function accelModuleUri(file: vscode.Uri, name: string): Promise<vscode.Uri | null> {
  if (file.scheme === 'untitled') return null;
  const parts = name.split('.');
  return vscode.Uri.joinPath(await importRoot(file), ...parts.slice(0, -1), `${parts[parts.length - 1]}.py`);
}

/** The module file to create for `file`, or null when it (or a package of that name) already exists. */
export async function missingAccelModule(file: vscode.Uri, name: string): Promise<vscode.Uri | null> {
  const uri = await accelModuleUri(file, name);
  if (!uri) return null;
  const pkg = vscode.Uri.joinPath(uri, '..', uri.path.split('/').pop()!.replace(/\.py$/, ''), '__init__.py');
  return (await exists(uri)) || (await exists(pkg)) ? null : uri;
}

export function addCreateAccel(edit: vscode.WorkspaceEdit, uri: vscode.Uri, name: string): void {
  // create + insert rather than `contents`: code-server 4.100's workbench fails to revive file contents
  // sent from the extension host ("Could not revive data transfer file")
  edit.createFile(uri, { ignoreIfExists: true });
  edit.insert(uri, new vscode.Position(0, 0), accelModuleSource(name));
}

export interface FixOutcome {
  edit: vscode.WorkspaceEdit;
  /** Fixes applied (fix-all counts each one). */
  applied: number;
  /** The device-abstraction module the fixes call and that does not exist yet. */
  accelToCreate: vscode.Uri | null;
}

async function outcome(
  target: DocumentTarget,
  before: SourceDocument,
  after: SourceDocument,
  applied: number,
  needsAccel: boolean,
  options: AnalyzeOptions,
  createAccel: boolean,
): Promise<FixOutcome> {
  const edit = new vscode.WorkspaceEdit();
  addDocumentEdits(edit, target, before, after);
  const accelToCreate = needsAccel ? await missingAccelModule(target.uri, options.accelModule) : null;
  if (accelToCreate && createAccel) addCreateAccel(edit, accelToCreate, options.accelModule);
  return { edit, applied, accelToCreate };
}

/** The edit of one finding's fix, against the text it was found in. */
export function fixEdit(ref: FindingRef): Promise<FixOutcome> | null {
  const fix = ref.finding.fix;
  if (!fix) return null;
  const { unit } = ref;
  const batch = applyFixBatch(unit.source, [fix]);
  if (!batch.applied.length) return null;
  return outcome(unit.target, unit.source, batch.doc, 1, fix.needsAccel, unit.options, true);
}

/** The edit adding `# tpu-ready: ignore[RULE]` for a finding. */
export function ignoreEdit(ref: FindingRef): vscode.WorkspaceEdit {
  const { unit, finding } = ref;
  const text = analysedText(unit.source);
  const tree = parsePython(text);
  try {
    const node = tree.rootNode.descendantForIndex(finding.start, Math.max(finding.start, finding.end - 1)) ?? tree.rootNode;
    const after = applyToDocument(unit.source, [suppressionEdit(text, node, finding.rule)]);
    const edit = new vscode.WorkspaceEdit();
    addDocumentEdits(edit, unit.target, unit.source, after);
    return edit;
  } finally {
    tree.delete();
  }
}

export interface FixAllRequest {
  /** Only this rule's findings (its unsafe fixes too); null: every safe fix. */
  rule: string | null;
  /** Create the device-abstraction module inside the edit (false for fix-all on save, which must touch one resource). */
  createAccel: boolean;
  /**
   * Only the findings in this notebook cell (index counting every cell). The imports those fixes need
   * still go where the engine puts them (the notebook's import cell) when they are not there yet.
   */
  cell?: number;
}

/** Fix-all on the current text of a file or notebook: the engine applies fixes until they converge. */
export function fixAllEdit(a: Analysable, options: AnalyzeOptions, req: FixAllRequest): Promise<FixOutcome> | null {
  const source = sourceOf(a);
  if (!source) return null;
  const cell = req.cell;
  const only =
    req.rule === null && cell === undefined
      ? undefined
      : (f: Finding, current: SourceDocument) => (req.rule === null || f.rule === req.rule) && (cell === undefined || cellOf(current, f.start) === cell);
  const result = fixDocument(source, RULES, options, { unsafe: req.rule !== null, only });
  return outcome(targetOf(a), source, result.doc, result.applied, result.needsAccel, options, req.createAccel);
}
