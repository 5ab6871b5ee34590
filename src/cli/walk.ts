/** Finds the files to check under the given paths, honouring .gitignore files and `exclude` globs. */
import fs from 'node:fs';
import path from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { textFileKind } from '../core/engine';
import { matchesAny } from '../core/config';

const SKIP_DIRS = new Set(['.git', '.hg', '.svn', 'node_modules', '__pycache__', '.venv', 'venv', '.tox', '.nox', '.mypy_cache', '.pytest_cache', '.ruff_cache', '.ipynb_checkpoints', 'site-packages', '.eggs']);

export function isCandidate(file: string): boolean {
  return file.endsWith('.py') || file.endsWith('.ipynb') || textFileKind(file) !== null;
}

interface Level {
  dir: string;
  ig: Ignore;
}

function loadIgnore(dir: string): Ignore | null {
  const f = path.join(dir, '.gitignore');
  try {
    return ignore().add(fs.readFileSync(f, 'utf8'));
  } catch {
    return null;
  }
}

function ignoredBy(levels: Level[], abs: string, isDir: boolean): boolean {
  for (const l of levels) {
    let rel = path.relative(l.dir, abs).split(path.sep).join('/');
    if (!rel || rel.startsWith('..')) continue;
    if (isDir) rel += '/';
    if (l.ig.ignores(rel)) return true;
  }
  return false;
}

/**
 * Expands paths to files. Explicitly named files are always included; directories are walked
 * (hidden and tool folders skipped, .gitignore honoured at every level when `respectGitignore`).
 * `exclude` globs are matched against paths relative to `root`.
 */
export function collectFiles(paths: string[], root: string, exclude: string[] | undefined, respectGitignore = true): { files: string[]; missing: { path: string; reason: string }[]; unreadable: { path: string; reason: string; error?: boolean }[] } {
  const files: string[] = [];
  const missing: { path: string; reason: string }[] = [];
  const unreadable: { path: string; reason: string; error?: boolean }[] = [];
  const seen = new Set<string>();
  const rootLevels: Level[] = [];
  if (respectGitignore) {
    // .gitignore files from the root down to each start path apply too
    const ig = loadIgnore(root);
    if (ig) rootLevels.push({ dir: root, ig });
  }
  const add = (f: string) => {
    if (!seen.has(f)) {
      seen.add(f);
      files.push(f);
    }
  };
  const walk = (dir: string, levels: Level[]) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (e) {
      unreadable.push({ path: path.relative(process.cwd(), dir) || dir, reason: `folder not read: ${errText(e)}` });
      return;
    }
    const own = respectGitignore && dir !== root ? loadIgnore(dir) : null;
    const here = own ? [...levels, { dir, ig: own }] : levels;
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const abs = path.join(dir, e.name);
      // a name that is not valid UTF-8 reaches us with U+FFFD in it and opens nothing: say so, do not report ENOENT
      if (e.name.includes('\ufffd') && !fs.existsSync(abs)) {
        if (isCandidate(e.name) || e.isDirectory()) unreadable.push({ path: path.relative(process.cwd(), abs) || abs, reason: 'not analysed: its name is not valid UTF-8 (rename it to scan it)', error: true });
        continue;
      }
      const rel = path.relative(root, abs).split(path.sep).join('/');
      if (e.isDirectory()) {
        if (SKIP_DIRS.has(e.name) || (e.name.startsWith('.') && e.name !== '.')) continue;
        if (ignoredBy(here, abs, true) || matchesAny(rel + '/', exclude) || matchesAny(rel, exclude)) continue;
        walk(abs, here);
      } else if (e.isFile() && isCandidate(e.name)) {
        if (ignoredBy(here, abs, false) || matchesAny(rel, exclude)) continue;
        add(abs);
      }
    }
  };
  for (const p of paths) {
    const abs = path.resolve(p);
    let st: fs.Stats;
    try {
      st = fs.statSync(abs);
    } catch (e) {
      missing.push({ path: p, reason: errText(e) });
      continue;
    }
    if (st.isDirectory()) walk(abs, rootLevels);
    else add(abs);
  }
  return { files, missing, unreadable };
}

/** The nearest folder at or above `start` holding a pyproject.toml or .git, else `start`. */
/** Whether `dir` holds what marks a project's top (pyproject.toml or .git). */
export function hasProjectMarker(dir: string): boolean {
  return fs.existsSync(path.join(dir, 'pyproject.toml')) || fs.existsSync(path.join(dir, '.git'));
}

export function findProjectRoot(start: string): string {
  let dir = path.resolve(start);
  try {
    if (!fs.statSync(dir).isDirectory()) dir = path.dirname(dir);
  } catch {
    dir = process.cwd();
  }
  for (let d = dir; ; d = path.dirname(d)) {
    if (hasProjectMarker(d)) return d;
    if (path.dirname(d) === d) return dir;
  }
}

function errText(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'ELOOP') return 'symlink loop';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'ENOTDIR') return 'not a directory';
  return code ?? (e as Error).message;
}
