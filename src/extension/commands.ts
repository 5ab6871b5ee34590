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
  /**
   * Replaces a generated `accel.py` that cannot serve the fixes (older format, missing function) with the current
   * one; the user's own module is never replaced. Arguments: the fixed file, and optionally why the fixes were refused.
   */
  UpdateAccelModule = 'tpuReady.updateAccelModule',
  /** Status bar click: opens the checklist panel; returns the workspace readiness summary. */
  ShowReadiness = 'tpuReady.showReadiness',
  /** Opens a rule's documentation (asks which rule when called without an id). */
  OpenRuleDocs = 'tpuReady.openRuleDocs',
  /** Opens the integration panel: the migration checklist (src/extension/checklist.ts). */
  OpenChecklist = 'tpuReady.openChecklist',
  /** Reveals a finding in the editor (the checklist trees and panel; hidden from the palette). */
  RevealFinding = 'tpuReady.revealFinding',
  /** Writes the readiness report (Markdown or HTML). */
  ExportReport = 'tpuReady.exportReport',
  /** Applies the safe fixes of one checklist step's findings across the workspace. */
  FixStep = 'tpuReady.fixStep',
  /** Step 2: writes tpu_smoke_test.py. */
  CreateSmokeTest = 'tpuReady.createSmokeTest',
  /** Step 8: writes checkpointing.py (resume from the latest checkpoint). */
  CreateResumeScaffold = 'tpuReady.createResumeScaffold',
  /** Step 10: writes .github/workflows/tpu-ready.yml (SARIF to code scanning). */
  CreateCiWorkflow = 'tpuReady.createCiWorkflow',
  /** Step 10: adds the persistent compilation cache to the training script. */
  EnableCompileCache = 'tpuReady.enableCompileCache',
  /** Ticks or unticks a manual checklist item (step, item id, checked); hidden from the palette. */
  ToggleStepItem = 'tpuReady.toggleStepItem',
  /** Shows a cost estimate (a CostVM from the cost module) in the panel's estimator section; hidden from the palette. */
  ShowCostPanel = 'tpuReady.showCostPanel',
  /** Steps 2 and 9: writes .tpu-ready/profile-run.sh (torch_xla debug output teed to .tpu-ready/runs/, read back as runtime diagnostics). */
  PrepareProfilingRun = 'tpuReady.prepareProfilingRun',
  /** Estimates training time and cost from a training config (quick picks; the code lens passes `{ ask: false }`). */
  EstimateCost = 'tpuReady.estimateCost',
}

/** The category every command is listed under in the command palette. */
export const COMMAND_CATEGORY = 'TPU Readiness';
