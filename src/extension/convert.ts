/** The diagnostics' source and the rules' documentation links, as the language server publishes them. */
import * as vscode from 'vscode';
import { docsUrl } from '../core/rule';
import { LSP_SOURCE } from '../protocol/lsp';

/** `source` of every diagnostic of ours (the language server's `LSP_SOURCE`). */
export const SOURCE = LSP_SOURCE;

export function docsUri(rule: string): vscode.Uri {
  return vscode.Uri.parse(docsUrl(rule));
}
