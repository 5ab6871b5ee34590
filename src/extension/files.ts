/** Small workspace file helpers shared by the extension's services. */
import * as vscode from 'vscode';

const decoder = new TextDecoder();

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
