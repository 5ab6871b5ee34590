/**
 * Every command id of the extension, typed once. test/extension/commands.test.ts checks this enum
 * against package.json `contributes.commands` (both ways), so a command cannot be registered without
 * being declared, or declared without existing.
 */
export const enum CommandId {
  /** Scans every Python file, notebook and project file of the workspace ({@link scanWorkspace}). */
  ScanWorkspace = 'tpuReady.scanWorkspace',
  /** Applies every safe fix to the active file or notebook, in one undo step. */
  FixAllInFile = 'tpuReady.fixAllInFile',
  /** Writes the device-abstraction module (`accel.py`) beside the active file. */
  CreateAccelModule = 'tpuReady.createAccelModule',
  /** Status bar click: shows the readiness of the workspace (the Problems panel until the checklist panel lands). */
  ShowReadiness = 'tpuReady.showReadiness',
  /** Opens a rule's documentation (asks which rule when called without an id). */
  OpenRuleDocs = 'tpuReady.openRuleDocs',
}

/** The category every command is listed under in the command palette. */
export const COMMAND_CATEGORY = 'TPU Readiness';
