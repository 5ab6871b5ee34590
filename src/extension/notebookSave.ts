/**
 * Notebook fix-all on save (`"notebook.codeActionsOnSave": {"notebook.source.fixAll.tpuReady": "explicit"}`), made
 * reliable. VS Code's own notebook save participant (1.100: contrib/notebook/browser/contrib/saveParticipants/
 * saveParticipants.ts, CodeActionOnSaveParticipant) asks the `notebook.*` kinds on `cells[0]` only, creating that
 * cell's text model first. When that cell is markdown, the model's creation activates the extensions waiting on
 * `onLanguage:markdown` (markdown-language-features, ...); their code action providers register while our answer is
 * in flight, and getCodeActions (editor/contrib/codeAction/browser/codeAction.ts) cancels a request whenever the set
 * of providers for the model changes (`registry.onDidChange` -> `cts.cancel()`): the answer is dropped and the
 * notebook is written unfixed, about one save in two. So the extension also takes part in the save itself
 * (`onWillSaveNotebookDocument`, which runs after VS Code's participants): it asks the server for fix-all's edit on
 * the notebook's current cells. When VS Code's participant did apply the fixes, nothing is left to fix and nothing
 * is written twice; the server answers only for the cell versions the editor has (a stale answer is dropped).
 */
import * as vscode from 'vscode';
import type { Analysis } from './client';
import { CommandId } from './commands';
import { NOTEBOOK_TYPE } from './notebooks';

/** The notebook-wide fix-all kind the server provides (src/server/server.ts NOTEBOOK_FIX_ALL_KIND). */
export const NOTEBOOK_FIX_ALL_KIND = 'notebook.source.fixAll.tpuReady';

/** A configured kind covers ours when it is ours or one of its parents (`notebook.source.fixAll`, `notebook`). */
const covers = (configured: string, kind: string) => configured === kind || kind.startsWith(`${configured}.`);

/**
 * Whether `notebook.codeActionsOnSave` runs our notebook fix-all on an explicit save, as VS Code decides it: the
 * object form only (VS Code reads `value[kind]`, which an array never has), `"explicit"` or `true` on our kind or a
 * parent, and no `"never"`/`false` on one.
 */
export function fixAllOnSave(setting: unknown, kind = NOTEBOOK_FIX_ALL_KIND): boolean {
  if (!setting || typeof setting !== 'object' || Array.isArray(setting)) return false;
  const entries = Object.entries(setting as Record<string, unknown>).filter(([k]) => covers(k, kind));
  if (entries.some(([, v]) => v === 'never' || v === false)) return false;
  return entries.some(([, v]) => v === 'explicit' || v === true);
}

/** How long the save waits for the server's fix-all edit. */
const ASK_MS = 1_500;

export function registerNotebookFixOnSave(analysis: Analysis, log: vscode.LogOutputChannel): vscode.Disposable {
  return vscode.workspace.onWillSaveNotebookDocument((e) => {
    const nb = e.notebook;
    // VS Code runs codeActionsOnSave on explicit saves only (not on auto save), in a trusted workspace
    if (e.reason !== vscode.TextDocumentSaveReason.Manual || nb.notebookType !== NOTEBOOK_TYPE || !vscode.workspace.isTrusted) return;
    if (!fixAllOnSave(vscode.workspace.getConfiguration('notebook', nb.uri).get('codeActionsOnSave'))) return;
    const versions = Object.fromEntries(nb.getCells().map((c) => [c.document.uri.toString(), c.document.version]));
    let timer: ReturnType<typeof setTimeout> | undefined;
    // VS Code stops waiting for this participant after 1.75 s (mainThreadNotebookSaveParticipant) and would apply a
    // later edit after the file is written: past ASK_MS the notebook is saved as it is
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => {
        log.warn(`fix-all on save of ${nb.uri.toString()}: no answer within ${ASK_MS} ms; saved without it`);
        resolve(undefined);
      }, ASK_MS);
    });
    const asked = (async () => {
      const r = await analysis.fixEdit(nb.uri, { rule: null, createAccel: true, versions });
      if (r.refused) void vscode.commands.executeCommand(CommandId.UpdateAccelModule, nb.uri.toString(), r.refused.message, true);
      if (!r.edit || !r.applied) return undefined;
      log.info(`fix-all on save of ${nb.uri.toString()}: ${r.applied} fix${r.applied === 1 ? '' : 'es'}`);
      return r.edit;
    })().catch((err) => {
      log.warn(`fix-all on save of ${nb.uri.toString()}: ${(err as Error)?.message ?? err}`);
      return undefined;
    });
    const edit = Promise.race([asked, late]).then((r) => {
      clearTimeout(timer);
      return e.token.isCancellationRequested ? undefined : r;
    });
    // undefined: nothing to apply (the thenable overload); a WorkspaceEdit: applied before the notebook is written
    e.waitUntil(edit as Thenable<vscode.WorkspaceEdit>);
  });
}
