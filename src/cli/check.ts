/** `tpu-ready check [PATH...]`: scan, report, fix. */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { createTwoFilesPatch } from 'diff';
import { accelModuleGaps, accelModuleSource } from '../core/accel';
import { detectTorchXlaVersion, optionsFor, parseProjectConfig, type ProjectConfig, type Settings } from '../core/config';
import { workspaceScore } from '../core/score';
import { initParser } from '../core/parse';
import { RULES } from '../rules';
import { FORMATTERS, type Notice, type Report } from './formatters';
import { collectFiles, findProjectRoot, hasProjectMarker } from './walk';
import { processFile, type FileOutcome, type FileTask, type OutFinding } from './process';
import { ALL_RULES, evidenceFindings, evidenceNote, mergeEvidence, readLogs } from './evidence';
import type { Io } from './io';
import { InputError } from './args';
import { termSafe } from './formatters/escape';
import { checkWritable, realRoots, safeWriteFile, UnsafeWriteError } from './safefs';

export interface CheckArgs {
  paths: string[];
  format: string;
  fix: boolean;
  unsafeFixes: boolean;
  diff: boolean;
  select?: string[];
  ignore?: string[];
  target?: 'torch_xla' | 'torchtpu';
  targetVersion?: string;
  fixStyle?: 'dual-path' | 'tpu-only';
  statistics: boolean;
  exitZero: boolean;
  jobs: number;
  maxBytes: number;
  /** Per-file analysis budget, ms (default DEFAULT_FILE_BUDGET_MS). */
  fileBudgetMs?: number;
  /** Per-file memory budget, bytes (default DEFAULT_FILE_MEMORY_BYTES). */
  memoryBytes?: number;
  respectGitignore: boolean;
  output?: string;
  /** Run logs to merge (runtime findings, src/evidence). */
  evidence?: string[];
}

/** Files per worker below which threads do not pay for their start-up. */
const FILES_PER_WORKER = 48;

export function loadProject(root: string, io: Io): { config: ProjectConfig; pinned: string | null } {
  let config: ProjectConfig = {};
  const pyproject = path.join(root, 'pyproject.toml');
  const texts: { path: string; text: string }[] = [];
  if (fs.existsSync(pyproject)) {
    const text = fs.readFileSync(pyproject, 'utf8');
    texts.push({ path: pyproject, text });
    const parsed = parseProjectConfig(text);
    config = parsed.config;
    for (const p of parsed.problems) io.err(`tpu-ready: ${path.relative(process.cwd(), pyproject) || 'pyproject.toml'}${p.line ? `:${p.line}` : ''}: ${p.message}\n`);
  }
  for (const f of safeReaddir(root)) {
    if (/^requirements.*\.(txt|in)$/i.test(f) || f === 'setup.cfg' || /^environment.*\.ya?ml$/.test(f)) {
      try {
        texts.push({ path: f, text: fs.readFileSync(path.join(root, f), 'utf8') });
      } catch {
        /* unreadable: the scan reports it */
      }
    }
  }
  return { config, pinned: detectTorchXlaVersion(texts) };
}

/**
 * The directory `import x` resolves from for a module at `file`: its directory, or, inside a package (a
 * directory with `__init__.py`), the first directory up without one (where `import pkg.trainer` runs from).
 */
export function importRoot(file: string): string {
  let dir = path.dirname(file);
  while (fs.existsSync(path.join(dir, '__init__.py'))) {
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return dir;
}

/** Where the fixes' `import <name>` (dotted: `utils.accel`) finds the generated module for `file`. */
export function accelModulePath(file: string, name: string): string {
  const parts = name.split('.');
  return path.join(importRoot(file), ...parts.slice(0, -1), `${parts[parts.length - 1]}.py`);
}

/** The module is there: as `accel.py`, or as a package `accel/__init__.py`. */
function accelModuleExists(file: string): boolean {
  return fs.existsSync(file) || fs.existsSync(path.join(file.replace(/\.py$/, ''), '__init__.py'));
}

/** The existing module's text (`accel.py` or `accel/__init__.py`), or null when it cannot be read. */
function readAccelModule(file: string): string | null {
  for (const f of [file, path.join(file.replace(/\.py$/, ''), '__init__.py')]) {
    try {
      return fs.readFileSync(f, 'utf8');
    } catch {
      // try the package form
    }
  }
  return null;
}

function safeReaddir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

async function runTasks(tasks: FileTask[], jobs: number, wasmDir: string): Promise<FileOutcome[]> {
  const workers = Math.min(jobs, Math.floor(tasks.length / FILES_PER_WORKER));
  if (workers < 2) {
    await initParser(wasmDir);
    return tasks.map(safeProcess);
  }
  const results: FileOutcome[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, () =>
      new Promise<void>((resolve, reject) => {
        const w = new Worker(path.join(wasmDir, 'worker.js'), { workerData: { wasmDir } });
        const feed = () => {
          if (next >= tasks.length) {
            void w.terminate();
            resolve();
            return;
          }
          // send small batches so threads finish together
          const start = next;
          next = Math.min(tasks.length, next + 8);
          w.postMessage({ start, tasks: tasks.slice(start, next) });
        };
        w.on('message', (msg: { start: number; results: FileOutcome[] }) => {
          msg.results.forEach((r, i) => (results[msg.start + i] = r));
          feed();
        });
        w.on('error', reject);
        w.once('online', feed);
      }),
    ),
  );
  return results;
}

export function safeProcess(task: FileTask): FileOutcome {
  try {
    return processFile(task);
  } catch (e) {
    return { display: task.display, abs: task.abs, kind: null, findings: [], relevant: false, ruleErrors: [], skipped: `internal error: ${(e as Error).message}`, failed: true };
  }
}

/** A file with no write permission bit for anyone. */
function isReadOnly(file: string): boolean {
  try {
    return (fs.statSync(file).mode & 0o222) === 0;
  } catch {
    return false;
  }
}

function writeErrText(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'ENOSPC') return 'no space left on the device';
  if (code === 'EROFS') return 'read-only file system';
  return code ?? (e as Error).message.split('\n')[0];
}

export async function runCheck(args: CheckArgs, io: Io, wasmDir: string): Promise<number> {
  const formatter = FORMATTERS[args.format];
  if (!formatter) {
    io.err(`tpu-ready: unknown --format "${args.format}" (text, json, sarif, github)\n`);
    return 2;
  }
  const cwd = process.cwd();
  const root = findProjectRoot(args.paths[0] ?? cwd);
  const { config, pinned } = loadProject(root, io);
  const flags: Settings = { select: args.select, ignore: args.ignore, target: args.target, targetVersion: args.targetVersion, fixStyle: args.fixStyle };
  const startPaths = args.paths.length ? args.paths : ['.'];
  // writes (fixes, accel.py, --output) stay inside the project roots of the paths named
  const roots = realRoots([root, ...startPaths.map(findProjectRoot)]);
  const { files, missing, unreadable } = collectFiles(startPaths, root, config.exclude, args.respectGitignore);
  if (args.output) {
    const out = path.resolve(args.output);
    if (!fs.existsSync(path.dirname(out))) throw new InputError(`--output ${args.output}: folder ${path.dirname(args.output)} does not exist`);
    checkWritable(out, null, 'write the report to');
    const real = fs.existsSync(out) ? fs.realpathSync(out) : out;
    if (files.some((f) => f === out || f === real)) throw new InputError(`--output ${args.output}: refusing to overwrite a scanned file`);
  }
  for (const m of missing) io.err(`tpu-ready: ${termSafe(m.path)}: ${m.reason}\n`);
  if (missing.length && !files.length) return 2;
  // named paths that are not there: in the report (JSON names them) and exit 2 even with --exit-zero
  const missingNotices: Notice[] = missing.map((m) => ({ path: m.path, message: `not analysed: ${m.reason}`, error: true }));

  // project scope: imports resolve inside the project roots of the named paths (and their own folders)
  const named = startPaths.map((p) => path.resolve(p)).filter((p) => fs.existsSync(p) && fs.statSync(p).isDirectory());
  const projectRoots = [...new Set([root, ...startPaths.map(findProjectRoot), ...named])];
  // a checkout without .git or pyproject.toml (an unpacked archive), checked from its top: `check scripts/train.py`
  // resolves `import mylib` from the working directory, as `python -m` and most launchers put it on sys.path
  const inCwd = (p: string) => {
    const abs = path.resolve(p);
    return abs === cwd || abs.startsWith(cwd.endsWith(path.sep) ? cwd : cwd + path.sep);
  };
  if (startPaths.some((p) => inCwd(p) && !hasProjectMarker(findProjectRoot(p))) && !projectRoots.includes(cwd)) projectRoots.push(cwd);
  const project = { roots: projectRoots, cwd };
  const tasks: FileTask[] = [];
  for (const abs of files) {
    const rel = path.relative(root, abs).split(path.sep).join('/');
    const options = optionsFor(config, {}, rel, pinned, flags);
    if (!options) continue;
    tasks.push({ abs, display: path.relative(cwd, abs) || path.basename(abs), options, fix: args.fix || args.diff ? { unsafe: args.unsafeFixes } : null, maxBytes: args.maxBytes,
      budgetMs: args.fileBudgetMs ?? (config.fileBudget !== undefined ? config.fileBudget * 1000 : undefined),
      memoryBytes: args.memoryBytes ?? (config.memoryBudget !== undefined ? config.memoryBudget * 1024 * 1024 : undefined), project });
  }
  const outcomes = await runTasks(tasks, args.jobs, wasmDir);

  const notices: Notice[] = unreadable.map((u) => ({ path: u.path, message: u.reason, error: !!u.error }));
  let fixed = 0;
  let writeFailures = 0;
  const diffs: string[] = [];
  const accelWritten = new Set<string>();
  for (const o of outcomes) {
    if (o.skipped) notices.push({ path: o.display, message: `${o.failed ? 'not analysed' : 'skipped'}: ${o.skipped}`, error: !!o.failed });
    for (const e of o.ruleErrors) notices.push({ path: o.display, message: `internal error in ${e.rule}: ${e.error.split('\n')[0]}` });
    if (o.fixSkipped && o.findings.some((f) => f.fix)) notices.push({ path: o.display, message: o.fixSkipped });
    if (!o.fixed) continue;
    fixed += o.fixed.applied;
    const task = tasks.find((t) => t.abs === o.abs)!;
    const accelFile = accelModulePath(o.abs, task.options.accelModule);
    const needAccel = o.fixed.needsAccel && !accelModuleExists(accelFile) && !accelWritten.has(accelFile);
    // an existing module that lacks what the fixed code calls (an older generated one, or the user's own) would
    // make the fixed program raise: leave the file unfixed and say why
    if (o.fixed.needsAccel && !needAccel && !accelWritten.has(accelFile)) {
      const existing = readAccelModule(accelFile);
      const gaps = existing === null ? [] : accelModuleGaps(existing, o.fixed.after, task.options.accelModule.split('.').pop());
      if (gaps.length) {
        fixed -= o.fixed.applied;
        notices.push({ path: o.display, message: `not fixed: ${path.relative(cwd, accelFile)} cannot serve these fixes (${gaps.join('; ')}): delete it so that --fix writes the current one, or add what is missing`, error: false });
        continue;
      }
    }
    if (args.diff) {
      diffs.push(createTwoFilesPatch(`a/${o.display}`, `b/${o.display}`, o.fixed.before, o.fixed.after, '', '', { context: 3 }).replace(/^=+\n/, ''));
      if (needAccel) {
        accelWritten.add(accelFile);
        const rel = path.relative(cwd, accelFile);
        diffs.push(createTwoFilesPatch('/dev/null', `b/${rel}`, '', accelModuleSource(task.options.accelModule), '', '').replace(/^=+\n/, ''));
      }
    } else {
      // a read-only file is the user's "do not touch" (even for root, whom the OS would let write): it stays
      // unfixed, the others are fixed, and the run ends with exit 2 naming it
      if (isReadOnly(o.abs)) {
        fixed -= o.fixed.applied;
        writeFailures++;
        notices.push({ path: o.display, message: 'not fixed: the file is read-only (make it writable to apply the fixes)', error: true });
        continue;
      }
      try {
        // check both before writing either: a fixed file without its accel module would not run
        checkWritable(o.abs, roots, 'fix');
        if (needAccel) checkWritable(accelFile, roots, 'create');
        safeWriteFile(o.abs, o.fixed.after, roots, 'fix');
        if (needAccel) {
          safeWriteFile(accelFile, accelModuleSource(task.options.accelModule), roots, 'create');
          accelWritten.add(accelFile);
          notices.push({ path: path.relative(cwd, accelFile), message: 'created the device-abstraction module the dual-path fixes call' });
        }
      } catch (e) {
        if (e instanceof UnsafeWriteError) {
          io.err(`tpu-ready: ${e.message}\n`);
          return 2;
        }
        // one file that cannot be written (permissions, a full disk) does not stop the others being fixed
        fixed -= o.fixed.applied;
        writeFailures++;
        notices.push({ path: o.display, message: `not fixed: cannot write it (${writeErrText(e)})`, error: true });
      }
    }
  }

  let findings: OutFinding[] = outcomes.flatMap((o) => o.findings);
  if (args.evidence?.length) {
    const logs = readLogs(args.evidence, '--evidence ');
    const { ev, findings: runtime } = evidenceFindings(logs, root, config.exclude, files);
    if (!ev.recognized) throw new InputError(`--evidence ${logs.map((l) => termSafe(l.name)).join(', ')}: no PyTorch/XLA debug output or metrics found`);
    const merged = mergeEvidence(findings, runtime);
    findings = merged.findings;
    notices.push({ path: args.evidence.join(', '), message: `${evidenceNote(ev)}; ${merged.confirmed} static finding${merged.confirmed === 1 ? '' : 's'} confirmed by the run, ${findings.length - outcomes.reduce((n, o) => n + o.findings.length, 0)} runtime-only` });
  }
  const analysed = outcomes.filter((o) => !o.skipped);
  const byStep: Record<string, number> = {};
  for (const f of findings) byStep[f.step] = (byStep[f.step] ?? 0) + 1;
  const defaultTarget = optionsFor(config, {}, '', pinned, flags)?.target ?? { profile: 'torch_xla', version: '2.9' };
  const report: Report = {
    target: defaultTarget,
    summary: {
      files: analysed.length,
      findings: findings.length,
      score: workspaceScore(analysed.map((o) => ({ findings: o.findings, relevant: o.relevant }))),
      errors: findings.filter((f) => f.severity === 'error').length,
      warnings: findings.filter((f) => f.severity === 'warning').length,
      info: findings.filter((f) => f.severity === 'info' || f.severity === 'hint').length,
      fixable: { safe: findings.filter((f) => f.fix?.applicability === 'safe').length, unsafe: findings.filter((f) => f.fix?.applicability === 'unsafe').length },
      effort: findings.reduce((s, f) => s + f.effort, 0),
      byStep,
      skipped: outcomes.length - analysed.length,
      failed: outcomes.filter((o) => o.failed).length + missing.length + writeFailures + unreadable.filter((u) => u.error).length,
      fixed: args.diff ? 0 : fixed,
    },
    findings,
    notices: [...missingNotices, ...notices],
    statistics: args.statistics,
    color: args.format === 'text' && io.isTTY && !process.env.NO_COLOR,
  };
  if (args.diff) {
    io.out(diffs.join(''));
    if (args.format === 'text') io.err(`${fixed} fix${fixed === 1 ? '' : 'es'} would be applied.\n`);
    return args.exitZero ? 0 : diffs.length ? 1 : 0;
  }
  const rendered = formatter.format(report, args.evidence?.length ? ALL_RULES : RULES);
  if (args.output) {
    try {
      safeWriteFile(args.output, rendered, null, 'write the report to');
    } catch (e) {
      if (e instanceof UnsafeWriteError) throw e;
      throw new InputError(`cannot write --output ${args.output}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  else io.out(rendered);
  if (args.format !== 'text' && notices.length) for (const n of notices) io.err(`tpu-ready: ${termSafe(n.path)}: ${termSafe(n.message)}\n`);
  // unreadable or broken files are errors (exit 2) even with --exit-zero, as in ruff
  if (report.summary.failed) return 2;
  return args.exitZero ? 0 : findings.length ? 1 : 0;
}

