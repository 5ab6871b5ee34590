/**
 * The tpu-ready language server's own protocol: command ids, the data carried on diagnostics, and the
 * typed custom requests that hosts (the VS Code extension's checklist, panel, cost lens and tree; any other
 * client) send for what LSP has no method for. Pure types and constants: imported by the server and by
 * clients (no `vscode`, no `vscode-languageserver` import, so the webview and tests can use it too).
 */
import type { WorkspaceEdit } from 'vscode-languageserver-types';
import type { LocatedFinding } from '../core/types';

/** `source` of every diagnostic the server publishes. */
export const LSP_SOURCE = 'tpu-ready';

/** Code action kind of fix-all (VS Code: `"editor.codeActionsOnSave": {"source.fixAll.tpuReady": "explicit"}`). */
export const FIX_ALL_KIND = 'source.fixAll.tpuReady';

/** `workspace/executeCommand` commands the server implements. */
export const ServerCommand = {
  /** args: [uri: string, rule: string | null]: applies fix-all (one rule with its unsafe fixes, or every safe fix) through `workspace/applyEdit`. */
  FixAll: 'tpuReady.server.fixAll',
  /** args: [uri: string]: creates the device-abstraction module dual-path fixes call for the file, when missing. */
  CreateAccelModule: 'tpuReady.server.createAccelModule',
  /** args: []: analyses the workspace (like `workspace/diagnostic`) and answers a {@link WorkspaceScanResult}. */
  ScanWorkspace: 'tpuReady.server.scanWorkspace',
} as const;

/** `Diagnostic.data` of the server's diagnostics: enough to find the finding again when a client sends it back. */
export interface DiagnosticData {
  rule: string;
  /** Offsets in the analysed text (the notebook's combined program for cells). */
  start: number;
  end: number;
  /** Versions of the document analysed ("3", or a notebook's "version:cell,cell"). */
  stamp: string;
  fix: 'safe' | 'unsafe' | 'display' | null;
}

/** `tpuReady/findings`: the latest findings of an open file or notebook (the notebook's uri, or any of its cells'). */
export interface FindingsParams {
  uri: string;
}

export interface FindingsResult {
  /** The file or notebook uri the findings belong to. */
  uri: string;
  stamp: string;
  /** Findings with their fixes; `cell` indexes `cells` for notebooks. */
  findings: LocatedFinding[];
  /** Cell document uris of a notebook (by cell index), null for files. */
  cells: string[] | null;
  /** The file uses torch (or has findings): it counts toward the workspace score. */
  relevant: boolean;
}

export const FindingsRequest = { method: 'tpuReady/findings' } as const;

/** One file of a workspace scan. */
export interface ScannedFile {
  uri: string;
  findings: LocatedFinding[];
  relevant: boolean;
  /** Why the file was not analysed (size, budget, a broken notebook). */
  skipped?: string;
}

export interface WorkspaceScanResult {
  files: ScannedFile[];
  /** Candidate files gone through (the open ones included: they keep their live analysis). */
  done: number;
  /** 0–100, as `src/core/score.ts` computes it over the scanned and the open files. */
  score: number;
  cancelled: boolean;
}

export interface ScanWorkspaceParams {
  /** A progress token the client created (`$/progress` reports go to it). */
  workDoneToken?: string | number;
  /** Only these files (uris), when given: a closed file goes back to its text on disk. */
  uris?: string[];
}

/** `tpuReady/scanWorkspace`: analyses every candidate file of the workspace folders (with progress and cancellation). */
export const ScanWorkspaceRequest = { method: 'tpuReady/scanWorkspace' } as const;

/**
 * The client's settings the server reads (section `tpuReady` through `workspace/configuration`, or
 * `initializationOptions.settings`, or `workspace/didChangeConfiguration` `{settings: {tpuReady: …}}`):
 * the same keys as the extension's `contributes.configuration` in package.json.
 */
export interface ClientSettings {
  target?: 'torch_xla' | 'torchtpu';
  targetVersion?: string;
  fixStyle?: 'dual-path' | 'tpu-only';
  accelModule?: string;
  select?: string[];
  ignore?: string[];
  run?: 'onType' | 'onSave';
  maxFileSize?: number;
  analysis?: { fileBudgetMs?: number; memoryBudgetMb?: number };
}

/**
 * `initializationOptions` the server reads besides the settings (`settings`, `tpuReady`, or the settings
 * themselves, see the README). The VS Code extension sends every field; other editors need none.
 */
export interface InitializationOptions {
  settings?: ClientSettings;
  /** 'push': publish diagnostics even when the client could pull them (the extension keeps one diagnostic stream). */
  diagnosticMode?: 'push' | 'pull';
  /** false: no `[tool.tpu-ready]` problems on open pyproject.toml files (the client reports them itself). */
  configDiagnostics?: boolean;
  /** true: send {@link AnalysedNotification} after each analysis (the extension's checklist, status bar and tree read it). */
  findingsNotifications?: boolean;
  /**
   * A client command that explains why fixes that call the device-abstraction module were not written and offers
   * to update it: args [fileUri: string, message: string, quiet: boolean]. Without it such a fix is not offered.
   */
  accelRefusalCommand?: string;
}

/** `tpuReady/didAnalyse` (server → client): an open file or notebook was analysed (`findings` null: cleared or not analysed). */
export interface AnalysedParams {
  uri: string;
  /**
   * The findings, each fix without its edits and imports (code actions carry those). With `keepHead`/`keepTail`:
   * only the changed ones; the file's findings are then the first `keepHead` and the last `keepTail` of those
   * received before (whose offsets may be stale: lines and columns are current) around these.
   */
  findings: LocatedFinding[] | null;
  relevant: boolean;
  keepHead?: number;
  keepTail?: number;
}

export const AnalysedNotification = { method: 'tpuReady/didAnalyse' } as const;

/** Why fixed code was not written: the existing device-abstraction module lacks what the fixes call. */
export interface AccelRefusal {
  /** The module's uri. */
  module: string;
  message: string;
}

/**
 * `tpuReady/fixEdit`: the edit of fix-all on an open file or notebook (its current text), not applied: every safe
 * fix, or one rule's fixes (its unsafe ones too), or only the safe fixes of one checklist step.
 */
export interface FixEditParams {
  uri: string;
  rule: string | null;
  step?: number;
  /** Create the missing device-abstraction module in the same edit. */
  createAccel: boolean;
  /**
   * The text document versions (by uri: the file's, or each cell's) the client asks about: when the server's view
   * differs after a short wait, no edit (a save participant must not apply fixes computed on another text).
   */
  versions?: Record<string, number>;
}

export interface FixEditResult {
  edit: WorkspaceEdit | null;
  applied: number;
  /** The module the fixes call is missing (and was not created in `edit`). */
  accelToCreate: string | null;
  refused: AccelRefusal | null;
}

export const FixEditRequest = { method: 'tpuReady/fixEdit' } as const;
