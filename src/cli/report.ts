/**
 * `tpu-ready report --format md|html [PATH]`: the readiness report (score, checklist status per step,
 * open findings with links, progress history). The findings come from the same scan as `check` (its
 * versioned JSON output); the team's ticks, notes and history from `.tpu-ready/progress.json`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  checklistVM, collectFacts, emptyProgress, isFactFile, isoDate, parseProgress, PROGRESS_PATH, ProgressFormatError, recordSnapshot, renderHtml,
  renderMarkdown, serializeProgress, snapshotOf, stepStates, type ChecklistFinding, type ChecklistInput, type Progress, type ProjectFile,
} from '../checklist';
import { parseIpynb } from '../core/notebook';
import { RULES } from '../rules';
import type { Step, TargetProfile } from '../core/types';
import { loadProject, runCheck, type CheckArgs } from './check';
import { mergeEvidence, projectRun } from './evidence';
import type { Io } from './io';
import { realRoots, safeWriteFile, UnsafeWriteError } from './safefs';
import { checkRuleSelectors, eachArg, InputError, TARGET_VERSIONS, TARGETS, UsageError } from './args';
import { readText, type OutFinding } from './process';
import { collectFiles, findProjectRoot } from './walk';

export interface ReportArgs {
  format: 'md' | 'html';
  paths: string[];
  output?: string;
  /** Add today's snapshot to the progress history (writes .tpu-ready/progress.json). */
  record: boolean;
  target?: TargetProfile;
  targetVersion?: string;
  select?: string[];
  ignore?: string[];
  respectGitignore: boolean;
}

export const REPORT_HELP = `Usage: tpu-ready report [PATH] [options]
  --format md|html          report format (default md)
  --output FILE             write the report to FILE
  --record                  add today's snapshot to .tpu-ready/progress.json (the burn-down history)
  --target, --target-version, --select, --ignore, --no-gitignore   as for check
`;

export function parseReportArgs(argv: string[]): ReportArgs {
  const a: ReportArgs = { format: 'md', paths: [], record: false, respectGitignore: true };
  eachArg(argv, (arg) => {
    switch (arg.flag) {
      case '--format': a.format = arg.choice(['md', 'html']); break;
      case '--output': case '-o': a.output = arg.value(); break;
      case '--record': a.record = true; break;
      case '--target': a.target = arg.choice(TARGETS); break;
      case '--target-version': a.targetVersion = arg.choice(TARGET_VERSIONS); break;
      case '--select': a.select = checkRuleSelectors('--select', arg.list(), RULES.map((r) => r.id)); break;
      case '--ignore': a.ignore = checkRuleSelectors('--ignore', arg.list(), RULES.map((r) => r.id)); break;
      case '--no-gitignore': a.respectGitignore = false; break;
      default: a.paths.push(arg.positional());
    }
  });
  if (a.paths.length > 1) throw new UsageError('report takes one PATH (a project folder)');
  return a;
}

interface CheckJson {
  version: number;
  target: { profile: TargetProfile; version: string };
  summary: { score: number };
  findings: OutFinding[];
}

/** Runs `check` with its JSON output captured: the same scan, options and exclusions. */
async function scan(a: ReportArgs, io: Io, wasmDir: string): Promise<CheckJson | null> {
  let out = '';
  const capture: Io = { out: (s) => (out += s), err: (s) => io.err(s), isTTY: false };
  const args: CheckArgs = {
    paths: a.paths, format: 'json', fix: false, unsafeFixes: false, diff: false, select: a.select, ignore: a.ignore, target: a.target,
    targetVersion: a.targetVersion, statistics: false, exitZero: true, jobs: Math.max(1, os.availableParallelism?.() ?? os.cpus().length),
    maxBytes: 2048 * 1024, respectGitignore: a.respectGitignore,
  };
  // exit code 2 with JSON output means some files could not be analysed (already reported on stderr)
  await runCheck(args, capture, wasmDir);
  if (!out.trim()) return null;
  return JSON.parse(out) as CheckJson;
}

/** The Python sources, notebooks (code cells joined), requirements and CI workflows the checklist's evidence reads. */
function factFiles(root: string, a: ReportArgs): ProjectFile[] {
  const quiet: Io = { out: () => undefined, err: () => undefined, isTTY: false };
  const { config } = loadProject(root, quiet);
  const { files } = collectFiles(a.paths.length ? a.paths : ['.'], root, config.exclude, a.respectGitignore);
  const wf = path.join(root, '.github', 'workflows');
  for (const f of safeReaddir(wf)) if (/\.ya?ml$/.test(f)) files.push(path.join(wf, f));
  if (fs.existsSync(path.join(root, '.gitlab-ci.yml'))) files.push(path.join(root, '.gitlab-ci.yml'));
  const out: ProjectFile[] = [];
  for (const abs of files) {
    const rel = path.relative(root, abs).split(path.sep).join('/');
    if (!isFactFile(rel)) continue;
    const { text } = readText(abs, 2048 * 1024);
    if (text === undefined) continue;
    if (rel.endsWith('.ipynb')) {
      try {
        out.push({ path: rel, text: parseIpynb(text).cells.filter((c) => c.kind === 'code').map((c) => c.text).join('\n') });
      } catch {
        /* a broken notebook: check reports it */
      }
    } else out.push({ path: rel, text });
  }
  return out;
}

function safeReaddir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** A relative link whose first folder looks like a URL scheme (`http:/x.py`) is `./`-prefixed so it stays relative. */
export function relativeLink(rel: string): string {
  return /^[^/]*:/.test(rel) ? `./${rel}` : rel;
}

/** Reads the progress file: null when absent; throws ProgressFormatError when malformed. */
export function readProgressFile(root: string): Progress | null {
  const file = path.join(root, PROGRESS_PATH);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ProgressFormatError(`cannot read (${(e as Error).message})`);
  }
  return parseProgress(text);
}

export async function runReport(argv: string[], io: Io, wasmDir: string, now: () => Date = () => new Date()): Promise<number> {
  let a: ReportArgs;
  try {
    a = parseReportArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(`tpu-ready: ${e.message}\n${e instanceof InputError ? '' : REPORT_HELP}`);
    return 2;
  }
  const cwd = process.cwd();
  const root = findProjectRoot(a.paths[0] ?? cwd);
  const result = await scan(a, io, wasmDir);
  if (!result) return 2;

  let progress = emptyProgress();
  let progressError: string | null = null;
  try {
    progress = readProgressFile(root) ?? progress;
  } catch (e) {
    if (!(e instanceof ProgressFormatError)) throw e;
    progressError = e.message;
    io.err(`tpu-ready: ${e.message}\n`);
  }

  const outDir = a.output ? path.dirname(path.resolve(a.output)) : cwd;
  // checklist step 9: the newest profiling run in .tpu-ready/runs/ (torch_xla); its runtime findings confirm the
  // static ones on their lines (as check --evidence does) or are listed as such
  const run = result.target.profile === 'torch_xla' ? projectRun(root, loadProject(root, { out: () => undefined, err: () => undefined, isTTY: false }).config.exclude) : null;
  const runtime = (run?.findings ?? []).filter((f) => f.inWorkspace).map((f) => ({ ...f, path: path.relative(cwd, path.join(root, f.path)) || f.path }));
  const all = runtime.length ? mergeEvidence(result.findings, runtime).findings : result.findings;
  const findings: ChecklistFinding[] = all.map((f) => ({
    rule: f.rule, step: f.step as Step, severity: f.severity, message: f.message, path: f.path,
    uri: relativeLink(path.relative(outDir, path.resolve(cwd, f.path)).split(path.sep).join('/')),
    line: f.line, column: f.column, cell: f.cell, fix: f.fix,
    ...(f.related?.length ? { related: f.related.map((r) => ({ path: r.path, line: r.line, cell: r.cell, message: r.message })) } : {}),
  }));
  const facts = { ...collectFacts(factFiles(root, a), result.target.profile), hasRunEvidence: run?.met ?? false };
  const input: ChecklistInput = { profile: result.target.profile, score: result.summary.score, findings, facts, progress, progressError, run: run?.summary ?? null };

  if (a.record) {
    if (progressError) {
      io.err(`tpu-ready: not recording a snapshot: fix ${PROGRESS_PATH} first\n`);
      return 2;
    }
    input.progress = recordSnapshot(progress, snapshotOf(stepStates(input), input.score, isoDate(now())));
    const file = path.join(root, PROGRESS_PATH);
    try {
      safeWriteFile(file, serializeProgress(input.progress), realRoots([root]), 'record progress in');
    } catch (e) {
      io.err(`tpu-ready: ${e instanceof UnsafeWriteError ? e.message : `cannot write ${PROGRESS_PATH}: ${(e as Error).message}`}\n`);
      return 2;
    }
  }

  const vm = checklistVM(input, Infinity);
  const options = { project: path.basename(root), generated: now().toISOString().replace(/\.\d+Z$/, 'Z') };
  const text = a.format === 'html' ? renderHtml(vm, options) : renderMarkdown(vm, options);
  if (a.output) {
    try {
      safeWriteFile(a.output, text, null, 'write the report to');
    } catch (e) {
      io.err(`tpu-ready: ${e instanceof UnsafeWriteError ? e.message : `cannot write ${a.output}: ${(e as Error).message}`}\n`);
      return 2;
    }
  } else io.out(text);
  return 0;
}
