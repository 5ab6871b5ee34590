/**
 * Configuration: `[tool.tpu-ready]` in pyproject.toml, host settings (editor or CLI flags), and the
 * torch_xla version pinned by the project. pyproject wins over editor settings, as ruff users expect;
 * explicit CLI flags win over both.
 */
import { parse as parseToml } from 'smol-toml';
import { DEFAULT_OPTIONS, type AnalyzeOptions, type FixStyle, type TargetProfile } from './types';

export const SUPPORTED_VERSIONS = ['2.3', '2.4', '2.5', '2.6', '2.7', '2.8', '2.9'];
export const DEFAULT_VERSION = '2.9';

export interface ProjectConfig {
  select?: string[];
  ignore?: string[];
  /** glob → rule ids or prefixes */
  perFileIgnores?: Record<string, string[]>;
  exclude?: string[];
  target?: TargetProfile;
  targetVersion?: string;
  fixStyle?: FixStyle;
  accelModule?: string;
  /** `file-budget`: seconds the CLI may spend analysing one file (its --file-budget wins); the editor has its own setting. */
  fileBudget?: number;
  /** `memory-budget`: MB of memory the CLI may use analysing one file (its --memory-budget wins). */
  memoryBudget?: number;
}

export interface Settings {
  select?: string[];
  ignore?: string[];
  target?: TargetProfile;
  targetVersion?: string;
  fixStyle?: FixStyle;
  accelModule?: string;
}

export interface ConfigProblem {
  message: string;
  /** 1-based line in pyproject.toml when known */
  line?: number;
}

const KEYS = new Set(['select', 'ignore', 'per-file-ignores', 'exclude', 'extend-exclude', 'target', 'target-version', 'fix-style', 'accel-module', 'file-budget', 'memory-budget', 'cost']);

/**
 * The 1-based line of `key = …` in the `[tool.tpu-ready]` table (or its `per-file-ignores` sub-table when
 * `sub` is given) of pyproject.toml text, also written dotted (`tool.tpu-ready.key = …` at the top level);
 * undefined when not found (a value spread over an inline table, say).
 */
export function configKeyLine(text: string, key: string, sub?: string): number | undefined {
  const lines = text.split(/\r?\n/);
  const table = sub ? `tool.tpu-ready.${sub}` : 'tool.tpu-ready';
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const bare = esc(key);
  const keyRe = new RegExp(`^\\s*(?:${bare}|"${bare}"|'${bare}')\\s*=`);
  const dotted = new RegExp(`^\\s*tool\\s*\\.\\s*"?tpu-ready"?\\s*\\.\\s*${sub ? `"?${esc(sub)}"?\\s*\\.\\s*` : ''}(?:${bare}|"${bare}"|'${bare}')\\s*=`);
  let current = '';
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*\[\[/.test(lines[i])) {
      current = '[[]]'; // an array of tables: never ours
      continue;
    }
    const header = /^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$/.exec(lines[i]);
    if (header) {
      current = header[1].replace(/\s*\.\s*/g, '.').replace(/["']/g, '');
      continue;
    }
    if (current === table && keyRe.test(lines[i])) return i + 1;
    if (current === '' && dotted.test(lines[i])) return i + 1;
  }
  return undefined;
}

/** The 1-based line of the `[tool.tpu-ready]` header (or of its first sub-table), undefined when absent. */
export function configHeaderLine(text: string): number | undefined {
  const lines = text.split(/\r?\n/);
  let sub: number | undefined;
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*\[\s*tool\s*\.\s*"?tpu-ready"?\s*\]/.test(lines[i])) return i + 1;
    if (sub === undefined && /^\s*\[\s*tool\s*\.\s*"?tpu-ready"?\s*\./.test(lines[i])) sub = i + 1;
  }
  return sub;
}

function stringList(v: unknown, key: string, problems: ConfigProblem[], line?: number): string[] | undefined {
  if (v === undefined) return undefined;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  if (typeof v === 'string') return [v];
  problems.push(line ? { message: `[tool.tpu-ready] ${key} must be a list of strings`, line } : { message: `[tool.tpu-ready] ${key} must be a list of strings` });
  return undefined;
}

/** Reads `[tool.tpu-ready]` from pyproject.toml text. Problems are reported, never thrown. */
export function parseProjectConfig(pyprojectText: string): { config: ProjectConfig; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(pyprojectText) as Record<string, unknown>;
  } catch (e) {
    const err = e as Error & { line?: number };
    return { config: {}, problems: [{ message: `pyproject.toml is not valid TOML: ${err.message.split('\n')[0]}`, line: err.line }] };
  }
  const tool = (doc.tool ?? {}) as Record<string, unknown>;
  const raw = tool['tpu-ready'] as Record<string, unknown> | undefined;
  if (raw === undefined) return { config: {}, problems };
  if (typeof raw !== 'object' || raw === null) return { config: {}, problems: [{ message: '[tool.tpu-ready] must be a table' }] };
  const config: ProjectConfig = {};
  // problems point at the offending key's line when it can be found (else hosts use the table header)
  const at = (key: string, sub?: string) => configKeyLine(pyprojectText, key, sub);
  const problem = (message: string, key: string, sub?: string) => problems.push(at(key, sub) ? { message, line: at(key, sub) } : { message });
  for (const key of Object.keys(raw)) if (!KEYS.has(key)) problem(`[tool.tpu-ready] unknown key "${key}"`, key);
  const list = (key: string, label = key, sub?: string) => stringList(raw[key], label, problems, at(key, sub));
  config.select = list('select');
  config.ignore = list('ignore');
  const exclude = [...(list('exclude') ?? []), ...(list('extend-exclude') ?? [])];
  if (exclude.length) config.exclude = exclude;
  const pfi = raw['per-file-ignores'];
  if (pfi !== undefined) {
    if (typeof pfi === 'object' && pfi !== null && !Array.isArray(pfi)) {
      config.perFileIgnores = {};
      for (const [glob, ids] of Object.entries(pfi as Record<string, unknown>)) {
        const l = stringList(ids, `per-file-ignores."${glob}"`, problems, configKeyLine(pyprojectText, glob, 'per-file-ignores'));
        if (l) config.perFileIgnores[glob] = l;
      }
    } else problem('[tool.tpu-ready] per-file-ignores must be a table of glob = [ids]', 'per-file-ignores');
  }
  if (raw.target !== undefined) {
    if (raw.target === 'torch_xla' || raw.target === 'torchtpu') config.target = raw.target;
    else problem(`[tool.tpu-ready] target must be "torch_xla" or "torchtpu", not ${JSON.stringify(raw.target)}`, 'target');
  }
  if (raw['target-version'] !== undefined) {
    const v = normalizeVersion(String(raw['target-version']));
    if (v) config.targetVersion = v;
    else problem(`[tool.tpu-ready] target-version must be one of ${SUPPORTED_VERSIONS.join(', ')}, not ${JSON.stringify(raw['target-version'])}`, 'target-version');
  }
  if (raw['fix-style'] !== undefined) {
    if (raw['fix-style'] === 'dual-path' || raw['fix-style'] === 'tpu-only') config.fixStyle = raw['fix-style'];
    else problem(`[tool.tpu-ready] fix-style must be "dual-path" or "tpu-only", not ${JSON.stringify(raw['fix-style'])}`, 'fix-style');
  }
  if (raw['accel-module'] !== undefined) {
    if (typeof raw['accel-module'] === 'string' && /^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/.test(raw['accel-module'])) config.accelModule = raw['accel-module'];
    else problem('[tool.tpu-ready] accel-module must be a Python module name such as "accel"', 'accel-module');
  }
  // the same ranges as the CLI flags
  const number = (key: string, min: number, max: number, unit: string): number | undefined => {
    const v = raw[key];
    if (v === undefined) return undefined;
    if (typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max) return v;
    problem(`[tool.tpu-ready] ${key} must be a number of ${unit} (${min}-${max}), not ${JSON.stringify(v) ?? String(v)}`, key);
    return undefined;
  };
  config.fileBudget = number('file-budget', 0.001, 3600, 'seconds');
  config.memoryBudget = number('memory-budget', 16, 65536, 'MB');
  return { config, problems };
}

/** "2.8.0" / "2.8" / "2.8.*" → "2.8" when supported (versions above the newest known clamp to it). */
export function normalizeVersion(v: string): string | null {
  const m = /^(\d+)\.(\d+)/.exec(v.trim());
  if (!m) return null;
  const mm = `${m[1]}.${m[2]}`;
  if (SUPPORTED_VERSIONS.includes(mm)) return mm;
  const [a, b] = [parseInt(m[1], 10), parseInt(m[2], 10)];
  if (a === 2 && b > 9) return DEFAULT_VERSION;
  return null;
}

/** Converts a glob (`*`, `**`, `?`) to a regex; patterns without `/` match a path's base name or any folder. */
export function globToRegExp(glob: string): RegExp {
  let g = glob.replace(/\\/g, '/').replace(/^\.\//, '');
  // as in .gitignore: a slash at the start or in the middle anchors; a trailing one does not
  const anchored = g.replace(/\/+$/, '').includes('/') && !g.startsWith('**/');
  if (g.endsWith('/')) g += '**';
  let re = '';
  for (let i = 0; i < g.length; i++) {
    const c = g[i];
    if (c === '*') {
      if (g[i + 1] === '*') {
        re += '.*';
        i++;
        if (g[i + 1] === '/') i++;
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(anchored ? `^${re}(/.*)?$` : `(^|/)${re}(/.*)?$`);
}

export function matchesAny(relPath: string, globs: string[] | undefined): boolean {
  if (!globs?.length) return false;
  const p = relPath.replace(/\\/g, '/').replace(/^\.\//, '');
  return globs.some((g) => globToRegExp(g).test(p));
}

/**
 * Effective options for one file (path relative to the project root), or null when excluded.
 * Precedence: `flags` (CLI) > pyproject > `settings` (editor) > pinned version > defaults.
 */
export function optionsFor(
  config: ProjectConfig,
  settings: Settings,
  relPath: string,
  pinnedVersion?: string | null,
  flags: Settings = {},
): AnalyzeOptions | null {
  if (matchesAny(relPath, config.exclude)) return null;
  const pick = <K extends keyof Settings>(k: K): Settings[K] => flags[k] ?? (config as Settings)[k] ?? settings[k];
  const profile = pick('target') ?? 'torch_xla';
  const version = profile === 'torchtpu' ? 'preview' : pick('targetVersion') ?? pinnedVersion ?? DEFAULT_VERSION;
  const ignore = [...(pick('ignore') ?? [])];
  for (const [glob, ids] of Object.entries(config.perFileIgnores ?? {})) if (matchesAny(relPath, [glob])) ignore.push(...ids);
  return {
    ...DEFAULT_OPTIONS,
    target: { profile, version },
    fixStyle: pick('fixStyle') ?? DEFAULT_OPTIONS.fixStyle,
    accelModule: pick('accelModule') ?? DEFAULT_OPTIONS.accelModule,
    select: pick('select') ?? [],
    ignore,
  };
}

/**
 * The torch_xla version pinned by the project: `torch_xla[tpu]==2.8.0`, `torch-xla~=2.7`, … in
 * requirements files, pyproject dependencies, setup.cfg, conda files or notebook `%pip` lines.
 */
export function detectTorchXlaVersion(files: { path: string; text: string }[]): string | null {
  const pin = /torch[_-]xla(?:\[[^\]]*\])?\s*(?:==|~=|>=|===)\s*v?(\d+\.\d+)/i;
  for (const f of files) {
    const m = pin.exec(f.text);
    if (m) {
      const v = normalizeVersion(m[1]);
      if (v) return v;
    }
  }
  return null;
}
