/** Small workspace file helpers shared by the extension's services. */
import * as vscode from 'vscode';
import { checkWritable, realRoots } from '../cli/safefs';

const decoder = new TextDecoder();

/**
 * Why writing `uri` must be refused (a symlink, a folder symlinked out of the workspace: a cloned repository
 * can plant `.tpu-ready/progress.json -> ~/.ssh/config`), or null. Local files only: other schemes have no symlinks
 * that node's fs can see.
 */
export function writeRefusal(uri: vscode.Uri, root: vscode.Uri): string | null {
  if (uri.scheme !== 'file' || root.scheme !== 'file') return null;
  try {
    checkWritable(uri.fsPath, realRoots([root.fsPath]));
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

export async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

/** The text of a file: the open document's (unsaved edits included) when it is open, else the disk's; null when unreadable. */
export async function readText(uri: vscode.Uri): Promise<string | null> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open) return open.getText();
  try {
    return decoder.decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return null;
  }
}
