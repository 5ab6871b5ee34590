/**
 * Turns engine fixes into WorkspaceEdits: one fix, a suppression comment, or fix-all (the engine's
 * convergent `fixDocument`), each one undo step, with the device-abstraction module created in the
 * same edit when a dual-path fix calls it and it is not there yet.
 */
import * as vscode from 'vscode';
import { exists, writeRefusal } from './files';
import { accelModuleSource } from '../core/accel';
import { accelDecision, accelUpdate, isGeneratedModule, ModuleTextCache, type AccelDecision } from '../core/accelGate';
import { CommandId } from './commands';
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
  /**
   * The existing module cannot serve the fixes (it lacks a called function, or is an older generated format):
   * `edit` is empty and `applied` 0, as the CLI leaves such a file unfixed. Show it with `explainAccelRefusal`.
   */
  refused?: { module: vscode.Uri; file: vscode.Uri; decision: Extract<AccelDecision, { kind: 'refuse' }> };
}

/**
 * Texts of device-abstraction modules, cached by mtime and size (a watcher invalidates them, see
 * `watchAccelModules`): fix-all on save decides from the cache in one turn; other paths stat, and read on change.
 */
export const accelTexts = new ModuleTextCache(
  async (key) => {
    try {
      const st = await vscode.workspace.fs.stat(vscode.Uri.parse(key));
      return st.type & vscode.FileType.File ? { mtime: st.mtime, size: st.size } : null;
    } catch {
      return null;
    }
  },
  async (key) => {
    try {
      return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.parse(key)));
    } catch {
      return null;
    }
  },
);

/** Forgets cached module texts when .py files change on disk. */
export function watchAccelModules(): vscode.Disposable {
  const w = vscode.workspace.createFileSystemWatcher('**/*.py');
  const drop = (u: vscode.Uri) => accelTexts.invalidate(u.toString());
  return vscode.Disposable.from(w, w.onDidChange(drop), w.onDidCreate(drop), w.onDidDelete(drop));
}

/** The module's current text: the open editor's (unsaved edits too), else the cache (`wait`: read it when unknown). */
async function moduleText(uri: vscode.Uri, wait: boolean): Promise<string | null> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open) return open.getText();
  const known = accelTexts.peek(uri.toString());
  return known !== undefined && !wait ? known : accelTexts.read(uri.toString());
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
  const accelToCreate = needsAccel ? await missingAccelModule(target.uri, options.accelModule) : null;
  const refused = needsAccel && !accelToCreate ? await accelRefusal(target.uri, after, options, !createAccel) : null;
  if (refused) return { edit, applied: 0, accelToCreate: null, refused };
  addDocumentEdits(edit, target, before, after);
  if (accelToCreate && createAccel) addCreateAccel(edit, accelToCreate, options.accelModule);
  return { edit, applied, accelToCreate };
}

/**
 * Why fixed code of `file` that calls the module must not be written: the module there lacks what it calls (the
 * CLI's check, src/cli/check.ts). Null when it serves, or when there is none (the caller creates it).
 * `cached`: decide from the cache when it knows the module (fix-all on save: nothing interleaves).
 */
export async function accelRefusal(file: vscode.Uri, after: SourceDocument, options: AnalyzeOptions, cached = false): Promise<FixOutcome['refused'] | null> {
  const module = await accelModuleUri(file, options.accelModule);
  const existing = module ? await moduleText(module, !cached) : null;
  if (!module || existing === null) return null;
  const decision = accelDecision(true, existing, analysedText(after), options.accelModule, vscode.workspace.asRelativePath(module));
  return decision.kind === 'refuse' ? { module, file, decision } : null;
}

/** A command that says why the fixes were not written, offering "Update <module>" for a generated module. */
export function accelRefusalCommand(refused: NonNullable<FixOutcome['refused']>): vscode.Command {
  return { command: CommandId.UpdateAccelModule, title: 'Why not fixed', arguments: [refused.file, refused.decision.message] };
}

/** Shows why (once per module and reason when `quiet`, as fix-all on save does on every save). */
const shown = new Set<string>();
export function explainAccelRefusal(refused: NonNullable<FixOutcome['refused']>, quiet = false): void {
  const key = `${refused.module.toString()}\n${refused.decision.message}`;
  if (quiet && shown.has(key)) return;
  shown.add(key);
  void vscode.commands.executeCommand(CommandId.UpdateAccelModule, refused.file, refused.decision.message);
}

/**
 * "Update accel.py": replaces a generated module with the current one (one undoable edit, saved); the user's own
 * module is never replaced. With `reason`, asks first, saying why the fixes were not written.
 */
export async function updateAccelModule(file: vscode.Uri, name: string, reason?: string): Promise<boolean> {
  const module = await accelModuleUri(file, name);
  if (!module) return false;
  const label = vscode.workspace.asRelativePath(module);
  const existing = await moduleText(module, true);
  const next = existing === null ? null : accelUpdate(existing, name);
  if (reason !== undefined) {
    const pick = await vscode.window.showWarningMessage(`TPU Readiness: ${reason}.`, ...(next ? [`Update ${label}`] : []));
    if (!pick) return false;
  } else if (!next) {
    const why = existing === null ? `there is no ${label} to update` : isGeneratedModule(existing) ? `${label} is current` : `${label} is your own module: it is not replaced`;
    void vscode.window.showInformationMessage(`TPU Readiness: ${why}.`);
    return false;
  }
  if (!next) return false;
  const folder = vscode.workspace.getWorkspaceFolder(module);
  const refusal = folder ? writeRefusal(module, folder.uri) : null;
  if (refusal) {
    void vscode.window.showErrorMessage(`TPU Readiness: not updating ${label}: ${refusal}`);
    return false;
  }
  const doc = await vscode.workspace.openTextDocument(module);
  const edit = new vscode.WorkspaceEdit();
  edit.replace(module, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), next);
  if (!(await vscode.workspace.applyEdit(edit))) return false;
  await doc.save();
  accelTexts.invalidate(module.toString());
  return true;
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
