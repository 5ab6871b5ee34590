/** Helpers for the extension-host tests: the fixture workspace, waiting for diagnostics, code actions. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';

export const SOURCE = 'tpu-ready';
export const EXTENSION_ID = 'tpu-ready.tpu-ready';

/** The fixture workspace (a fresh copy of test/e2e/workspace per run: tests may edit it). */
export function wsPath(...parts: string[]): string {
  const folder = vscode.workspace.workspaceFolders?.[0];
  assert.ok(folder, 'the e2e run opens test/e2e/workspace as a folder');
  return path.join(folder.uri.fsPath, ...parts);
}

export function wsUri(...parts: string[]): vscode.Uri {
  return vscode.Uri.file(wsPath(...parts));
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value (or throws after `ms`). */
export async function waitFor<T>(fn: () => T | undefined | null | false | Promise<T | undefined | null | false>, what: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(50);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last}` : ''}`);
}

/**
 * Waits until no extension has activated for `quietMs` (at most `ms`). Writing a workspace setting opens
 * .vscode/settings.json as a jsonc model, which activates VS Code's JSON, configuration-editing and TypeScript
 * extensions: a timing-sensitive step (a save with its participants) waits for that to finish first.
 */
export async function extensionsSettled(quietMs = 1_000, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  let active = vscode.extensions.all.filter((e) => e.isActive).length;
  let since = Date.now();
  while (Date.now() < end && Date.now() - since < quietMs) {
    await sleep(100);
    const now = vscode.extensions.all.filter((e) => e.isActive).length;
    if (now !== active) {
      active = now;
      since = Date.now();
    }
  }
}

export function ours(uri: vscode.Uri): vscode.Diagnostic[] {
  return vscode.languages.getDiagnostics(uri).filter((d) => d.source === SOURCE);
}

export function codeOf(d: vscode.Diagnostic): string {
  return typeof d.code === 'object' ? String(d.code.value) : String(d.code);
}

export function withCode(uri: vscode.Uri, code: string): vscode.Diagnostic[] {
  return ours(uri).filter((d) => codeOf(d) === code);
}

/** Waits until `uri` has diagnostics satisfying `pred` (a fresh analysis replaces the list). */
export function waitDiagnostics(uri: vscode.Uri, pred: (ds: vscode.Diagnostic[]) => boolean, what: string, ms = 20_000): Promise<vscode.Diagnostic[]> {
  return waitFor(() => {
    const ds = ours(uri);
    return pred(ds) ? ds : undefined;
  }, what, ms);
}

export async function open(uri: vscode.Uri): Promise<vscode.TextEditor> {
  const doc = await vscode.workspace.openTextDocument(uri);
  return vscode.window.showTextDocument(doc, { preview: false });
}

/** Closes every editor, discarding unsaved changes (a "Save changes?" dialog would block the run). */
export async function closeAll(): Promise<void> {
  for (let i = 0; i < 50 && vscode.window.tabGroups.all.some((g) => g.tabs.length > 0); i++) {
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  }
  await vscode.commands.executeCommand('workbench.action.closeAllEditors');
}

/** Code actions VS Code collects at `range` (resolved, so `edit` is filled). */
export async function codeActions(uri: vscode.Uri, range: vscode.Range, kind?: string): Promise<vscode.CodeAction[]> {
  const all = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', uri, range, kind, 100);
  return all ?? [];
}

export async function apply(action: vscode.CodeAction | undefined): Promise<void> {
  assert.ok(action, 'code action present');
  assert.ok(action.edit, `code action "${action.title}" has an edit`);
  assert.ok(await vscode.workspace.applyEdit(action.edit), `applying "${action.title}"`);
  if (action.command) await vscode.commands.executeCommand(action.command.command, ...(action.command.arguments ?? []));
}

export function read(...parts: string[]): string {
  return fs.readFileSync(wsPath(...parts), 'utf8');
}

/** Prints a measurement for the harness to collect (not asserted). */
export function report(label: string, ms: number): void {
  console.log(`[timing] ${label}: ${Math.round(ms)} ms`);
}

export async function setSetting(key: string, value: unknown, section = 'tpuReady'): Promise<void> {
  await vscode.workspace.getConfiguration(section).update(key, value, vscode.ConfigurationTarget.Workspace);
}
