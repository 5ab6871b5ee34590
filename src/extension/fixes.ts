/**
 * The device-abstraction module (accel.py) in the editor: where the fixes' `import accel` finds it, creating it,
 * and "Update accel.py" (with why fixes were not written when the language server refused them: the existing
 * module lacks what they call). The fixes themselves come from the language server (src/server).
 */
import * as vscode from 'vscode';
import { exists, writeRefusal } from './files';
import { accelModuleSource } from '../core/accel';
import { accelUpdate, isGeneratedModule, ModuleTextCache } from '../core/accelGate';
import { CommandId } from './commands';
import type { AccelRefusal } from '../protocol/lsp';

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

/** Says why fixes were not written (the server refused them) and offers "Update <module>" for a generated module. */
export function explainAccelRefusal(file: vscode.Uri, refused: AccelRefusal): void {
  void vscode.commands.executeCommand(CommandId.UpdateAccelModule, file, refused.message);
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
