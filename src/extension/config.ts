/**
 * Effective analysis options per file: `tpuReady.*` settings (per workspace folder) merged with
 * `[tool.tpu-ready]` from the nearest pyproject.toml that has one (it wins, as ruff users expect),
 * and the torch_xla version the project pins. The merge itself is `optionsFor` in src/core/config.
 */
import * as vscode from 'vscode';
import { detectTorchXlaVersion, optionsFor, parseProjectConfig, type ConfigProblem, type ProjectConfig, type Settings } from '../core/config';
import type { AnalyzeOptions, FixStyle, TargetProfile } from '../core/types';

/** Mirrors `contributes.configuration` in package.json (section `tpuReady`). */
export interface ExtensionSettings {
  /** `tpuReady.target`: the TPU software stack fixes and messages are written for. */
  target: TargetProfile;
  /** `tpuReady.targetVersion`: torch_xla "major.minor", or "auto" for the version the project pins (else the newest). */
  targetVersion: string;
  /** `tpuReady.fixStyle`: "dual-path" fixes call the generated `accel` module; "tpu-only" fixes call torch_xla directly. */
  fixStyle: FixStyle;
  /** `tpuReady.accelModule`: Python module name of the generated device-abstraction module. */
  accelModule: string;
  /** `tpuReady.select`: rule ids or prefixes to run (empty: all). */
  select: string[];
  /** `tpuReady.ignore`: rule ids or prefixes never to run. */
  ignore: string[];
  /** `tpuReady.run`: analyse as you type, or only when a file is saved. */
  run: 'onType' | 'onSave';
  /** `tpuReady.maxFileSize`: files with more characters than this are not analysed. */
  maxFileSize: number;
  /** `tpuReady.analysis.fileBudgetMs`: time the editor may spend analysing one file (clamped to 100 ms-60 s). */
  fileBudgetMs: number;
  /** `tpuReady.analysis.memoryBudgetMb`: memory the editor may use analysing one file (clamped to 16 MB-64 GB). */
  memoryBudgetMb: number;
}

/** Default editor budget per file: keeps the extension host responsive on every edit. */
export const DEFAULT_EDITOR_FILE_BUDGET_MS = 5000;
export const DEFAULT_EDITOR_MEMORY_BUDGET_MB = 512;

/** A numeric setting within [min, max]; the default for a non-number (a hand-edited settings.json). */
export function clampSetting(v: unknown, min: number, max: number, dflt: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : dflt;
}

export const SECTION = 'tpuReady';

export function readSettings(scope: vscode.ConfigurationScope | undefined): ExtensionSettings {
  const c = vscode.workspace.getConfiguration(SECTION, scope);
  return {
    target: c.get<TargetProfile>('target', 'torch_xla'),
    targetVersion: c.get<string>('targetVersion', 'auto'),
    fixStyle: c.get<FixStyle>('fixStyle', 'dual-path'),
    accelModule: c.get<string>('accelModule', 'accel'),
    select: c.get<string[]>('select', []),
    ignore: c.get<string[]>('ignore', []),
    run: c.get<'onType' | 'onSave'>('run', 'onType'),
    maxFileSize: c.get<number>('maxFileSize', 1_000_000),
    fileBudgetMs: clampSetting(c.get<unknown>('analysis.fileBudgetMs'), 100, 60_000, DEFAULT_EDITOR_FILE_BUDGET_MS),
    memoryBudgetMb: clampSetting(c.get<unknown>('analysis.memoryBudgetMb'), 16, 65_536, DEFAULT_EDITOR_MEMORY_BUDGET_MB),
  };
}

function toCoreSettings(s: ExtensionSettings): Settings {
  return {
    target: s.target,
    targetVersion: s.targetVersion === 'auto' || !s.targetVersion ? undefined : s.targetVersion,
    fixStyle: s.fixStyle,
    accelModule: s.accelModule,
    select: s.select,
    ignore: s.ignore,
  };
}

/** A folder holding a pyproject.toml with `[tool.tpu-ready]` (or the workspace folder root when none has). */
export interface Project {
  root: vscode.Uri;
  config: ProjectConfig;
  problems: ConfigProblem[];
  /** The pyproject.toml read, when any. */
  pyproject: vscode.Uri | null;
  pinnedVersion: string | null;
}

const decoder = new TextDecoder();

async function readText(uri: vscode.Uri): Promise<string | null> {
  try {
    return decoder.decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return null;
  }
}

function parentOf(uri: vscode.Uri): vscode.Uri {
  return vscode.Uri.joinPath(uri, '..');
}

function isWithin(child: vscode.Uri, parent: vscode.Uri): boolean {
  const p = parent.path.endsWith('/') ? parent.path : parent.path + '/';
  return child.scheme === parent.scheme && child.authority === parent.authority && (child.path === parent.path || child.path.startsWith(p));
}

export class ConfigService implements vscode.Disposable {
  /** Project per directory (uri string), resolved lazily; cleared when a pyproject.toml or requirements file changes. */
  private readonly projects = new Map<string, Promise<Project | null>>();
  /** The same projects once resolved (by directory), for callers that must not wait (fix-all on save). */
  private readonly settled = new Map<string, Project | null>();
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when settings or project files changed: every open document must be analysed again. */
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];

  constructor() {
    const watcher = vscode.workspace.createFileSystemWatcher('**/{pyproject.toml,requirements*.txt,requirements*.in}');
    const invalidate = () => {
      this.projects.clear();
      this.settled.clear();
      this.changed.fire();
    };
    this.disposables.push(
      watcher,
      watcher.onDidChange(invalidate),
      watcher.onDidCreate(invalidate),
      watcher.onDidDelete(invalidate),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(SECTION)) invalidate();
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(invalidate),
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  /** The project a file belongs to: the nearest folder up to its workspace folder whose pyproject.toml has `[tool.tpu-ready]`. */
  async projectFor(file: vscode.Uri): Promise<Project | null> {
    const folder = vscode.workspace.getWorkspaceFolder(file);
    if (!folder) return null;
    return this.projectIn(parentOf(file), folder.uri);
  }

  private projectIn(dir: vscode.Uri, top: vscode.Uri): Promise<Project | null> {
    const key = dir.toString();
    let p = this.projects.get(key);
    if (!p) {
      const loading = this.loadProject(dir, top);
      p = loading;
      this.projects.set(key, p);
      void loading.then((project) => {
        if (this.projects.get(key) === loading) this.settled.set(key, project);
      }, () => undefined);
    }
    return p;
  }

  private async loadProject(dir: vscode.Uri, top: vscode.Uri): Promise<Project | null> {
    const pyproject = vscode.Uri.joinPath(dir, 'pyproject.toml');
    const text = await readText(pyproject);
    const atTop = !isWithin(dir, top) || dir.path === top.path || dir.path.length <= top.path.length;
    if (text !== null && /^\s*\[tool\.tpu-ready[\].]/m.test(text)) {
      const { config, problems } = parseProjectConfig(text);
      return { root: dir, config, problems, pyproject, pinnedVersion: await this.pinnedVersion(dir, text) };
    }
    if (!atTop) return this.projectIn(parentOf(dir), top);
    return { root: top, config: {}, problems: [], pyproject: text !== null ? pyproject : null, pinnedVersion: await this.pinnedVersion(top, text) };
  }

  private async pinnedVersion(dir: vscode.Uri, pyprojectText: string | null): Promise<string | null> {
    const files: { path: string; text: string }[] = [];
    if (pyprojectText) files.push({ path: 'pyproject.toml', text: pyprojectText });
    try {
      for (const [name, type] of await vscode.workspace.fs.readDirectory(dir)) {
        if (type !== vscode.FileType.File || !/^requirements.*\.(txt|in)$/i.test(name)) continue;
        const text = await readText(vscode.Uri.joinPath(dir, name));
        if (text !== null) files.push({ path: name, text });
      }
    } catch {
      // unreadable folder: no pin
    }
    return detectTorchXlaVersion(files);
  }

  /** Options for one file, or null when `[tool.tpu-ready] exclude` excludes it. */
  async optionsFor(file: vscode.Uri): Promise<{ options: AnalyzeOptions | null; settings: ExtensionSettings; project: Project | null }> {
    return this.optionsWith(file, await this.projectFor(file));
  }

  /**
   * `optionsFor` without waiting, when the file's project is already resolved (else undefined): a save
   * participant answers in one turn of the extension host instead of yielding to other requests mid-way.
   */
  resolvedOptionsFor(file: vscode.Uri): { options: AnalyzeOptions | null; settings: ExtensionSettings; project: Project | null } | undefined {
    const folder = vscode.workspace.getWorkspaceFolder(file);
    if (!folder) return this.optionsWith(file, null);
    const key = parentOf(file).toString();
    if (!this.settled.has(key)) return undefined;
    return this.optionsWith(file, this.settled.get(key) ?? null);
  }

  private optionsWith(file: vscode.Uri, project: Project | null): { options: AnalyzeOptions | null; settings: ExtensionSettings; project: Project | null } {
    const settings = readSettings(file);
    const rel = project ? file.path.slice(project.root.path.replace(/\/$/, '').length + 1) : file.path.split('/').pop() ?? '';
    const options = optionsFor(project?.config ?? {}, toCoreSettings(settings), rel, project?.pinnedVersion ?? null);
    return { options, settings, project };
  }

  /** Every project resolved so far (for reporting pyproject problems). */
  async knownProjects(): Promise<Project[]> {
    const all = await Promise.all(this.projects.values());
    return [...new Set(all.filter((p): p is Project => !!p))];
  }
}
