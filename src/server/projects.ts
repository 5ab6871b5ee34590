/**
 * Configuration on the server side: `[tool.tpu-ready]` from the nearest pyproject.toml that has one (up to the
 * workspace folder), the torch_xla version the project pins, and the client's `tpuReady.*` settings; merged by
 * `optionsFor` in src/core/config (pyproject wins over the client's settings, as in the extension).
 * Reads files only: nothing in the workspace is executed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { detectTorchXlaVersion, normalizeVersion, optionsFor, parseProjectConfig, type ConfigProblem, type ProjectConfig, type Settings } from '../core/config';
import type { AnalyzeOptions } from '../core/types';
import type { ClientSettings } from '../protocol/lsp';

export interface ServerProject {
  root: string;
  config: ProjectConfig;
  problems: ConfigProblem[];
  /** The pyproject.toml read, when any. */
  pyproject: string | null;
  pinnedVersion: string | null;
}

/** The effective client settings, every value checked (a hand-written Neovim or Helix config can hold anything). */
export interface EffectiveSettings {
  core: Settings;
  run: 'onType' | 'onSave';
  maxFileSize: number;
  /** `analysis.fileBudgetMs` / `analysis.memoryBudgetMb`: what one live analysis may spend (clamped as in package.json). */
  fileBudgetMs: number;
  memoryBudgetMb: number;
}

/**
 * Default time budget of one live analysis: the server runs in its own process, so a long analysis holds up no
 * editor; the budget keeps one pathological file from holding up the others.
 */
export const DEFAULT_LIVE_BUDGET_MS = 5000;

const clamp = (v: unknown, min: number, max: number, dflt: number) => (typeof v === 'number' && Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : dflt);

const strings = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined);

export function effectiveSettings(raw: ClientSettings | null | undefined): EffectiveSettings {
  const s = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const analysis = (s.analysis && typeof s.analysis === 'object' ? s.analysis : {}) as Record<string, unknown>;
  const target = s.target === 'torch_xla' || s.target === 'torchtpu' ? s.target : undefined;
  const version = typeof s.targetVersion === 'string' && s.targetVersion !== 'auto' ? normalizeVersion(s.targetVersion) ?? undefined : undefined;
  const fixStyle = s.fixStyle === 'dual-path' || s.fixStyle === 'tpu-only' ? s.fixStyle : undefined;
  const accelModule = typeof s.accelModule === 'string' && /^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/.test(s.accelModule) ? s.accelModule : undefined;
  return {
    core: { target, targetVersion: version, fixStyle, accelModule, select: strings(s.select), ignore: strings(s.ignore) },
    run: s.run === 'onSave' ? 'onSave' : 'onType',
    maxFileSize: typeof s.maxFileSize === 'number' && s.maxFileSize >= 0 ? s.maxFileSize : 1_000_000,
    // nested as VS Code answers `workspace/configuration` ({analysis: {fileBudgetMs}}), or dotted from a hand-written config
    fileBudgetMs: clamp(analysis.fileBudgetMs ?? s["analysis.fileBudgetMs"], 100, 60_000, DEFAULT_LIVE_BUDGET_MS),
    memoryBudgetMb: clamp(analysis.memoryBudgetMb ?? s['analysis.memoryBudgetMb'], 16, 65_536, 512),
  };
}

function readText(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

const within = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);

export class Projects {
  private readonly byDir = new Map<string, ServerProject>();

  /** `folders`: the workspace folders (absolute paths); a file outside all of them is its own project. */
  constructor(private folders: string[]) {}

  setFolders(folders: string[]): void {
    this.folders = folders;
    this.clear();
  }

  getFolders(): readonly string[] {
    return this.folders;
  }

  clear(): void {
    this.byDir.clear();
  }

  /** The workspace folder holding `file` (the innermost), or null. */
  folderOf(file: string): string | null {
    let best: string | null = null;
    for (const f of this.folders) if (within(file, f) && (!best || f.length > best.length)) best = f;
    return best;
  }

  /** The project of a file: the nearest folder up to its workspace folder whose pyproject.toml has `[tool.tpu-ready]`. */
  projectFor(file: string): ServerProject {
    const top = this.folderOf(file) ?? path.dirname(file);
    return this.projectIn(path.dirname(file), top);
  }

  private projectIn(dir: string, top: string): ServerProject {
    let p = this.byDir.get(dir);
    if (!p) this.byDir.set(dir, (p = this.load(dir, top)));
    return p;
  }

  private load(dir: string, top: string): ServerProject {
    const pyproject = path.join(dir, 'pyproject.toml');
    const text = readText(pyproject);
    if (text !== null && /^\s*\[tool\.tpu-ready[\].]/m.test(text)) {
      const { config, problems } = parseProjectConfig(text);
      return { root: dir, config, problems, pyproject, pinnedVersion: pinned(dir, text) };
    }
    const up = path.dirname(dir);
    if (within(dir, top) && dir !== top && up !== dir && within(up, top)) return this.projectIn(up, top);
    return { root: top, config: {}, problems: [], pyproject: text !== null ? pyproject : null, pinnedVersion: pinned(top, readText(path.join(top, 'pyproject.toml'))) };
  }

  /** Options for one file, or null when `[tool.tpu-ready] exclude` excludes it. */
  optionsFor(file: string, settings: EffectiveSettings): { options: AnalyzeOptions | null; project: ServerProject; rel: string } {
    const project = this.projectFor(file);
    const rel = path.relative(project.root, file).split(path.sep).join('/');
    return { options: optionsFor(project.config, settings.core, rel, project.pinnedVersion), project, rel };
  }
}

function pinned(dir: string, pyprojectText: string | null): string | null {
  const files: { path: string; text: string }[] = [];
  if (pyprojectText) files.push({ path: 'pyproject.toml', text: pyprojectText });
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir);
  } catch {
    // unreadable folder: no pin
  }
  for (const name of names.sort()) {
    if (!/^requirements.*\.(txt|in)$/i.test(name)) continue;
    const text = readText(path.join(dir, name));
    if (text !== null) files.push({ path: name, text });
  }
  return detectTorchXlaVersion(files);
}

/** Files whose change can change the options of other files: the caches are dropped and open documents re-analysed. */
export function isConfigFile(file: string): boolean {
  const base = path.basename(file);
  return base === 'pyproject.toml' || /^requirements.*\.(txt|in)$/i.test(base);
}
