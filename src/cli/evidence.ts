/** `tpu-ready evidence LOG...` and `check --evidence LOG`: a PyTorch/XLA run's log back on the workspace's lines. */
import fs from 'node:fs';
import path from 'node:path';
import { counterValue, fallbackCounters, groupRuns, HOST_READ_COUNTER, latestRun, metricTotals, readRunLogs, runtimeFindings, joinWithStatic, seconds, type RunEvidence, type RunFile, type RunStatus, type RuntimeFinding, type WorkspaceFile } from '../evidence';
import { RULES } from '../rules';
import { RUNS_DIR } from '../checklist/generators';
import { RUNTIME_RULES } from '../rules/runtime';
import type { Rule } from '../core/rule';
import { eachArg, InputError, UsageError } from './args';
import { FORMATTERS, type Report } from './formatters';
import { location } from './formatters/text';
import { termSafe } from './formatters/escape';
import type { Io } from './io';
import type { OutFinding } from './process';
import { readRegularFile, safeWriteFile, UnsafeWriteError } from './safefs';
import { collectFiles, findProjectRoot } from './walk';
import { loadProject } from './check';

/** The registry the formatters describe when runtime findings are in the report. */
export const ALL_RULES: readonly Rule[] = [...RULES, ...RUNTIME_RULES];

/** Largest log read (a long PT_XLA_DEBUG_LEVEL=2 run writes hundreds of MB: the head is enough to find causes). */
const MAX_LOG_BYTES = 256 * 1024 * 1024;

export interface EvidenceArgs {
  logs: string[];
  root?: string;
  format: string;
  output?: string;
  exitZero: boolean;
}

export function parseEvidenceArgs(argv: string[]): EvidenceArgs {
  const a: EvidenceArgs = { logs: [], format: 'text', exitZero: false };
  eachArg(argv, (arg) => {
    switch (arg.flag) {
      case '--root': a.root = arg.value(); break;
      case '--format': a.format = arg.choice(['text', 'json', 'sarif', 'github']); break;
      case '--output': case '-o': a.output = arg.value(); break;
      case '--exit-zero': a.exitZero = true; break;
      default: a.logs.push(arg.positional());
    }
  });
  if (!a.logs.length) throw new UsageError('evidence needs at least one log file (a run\'s output with PT_XLA_DEBUG_LEVEL=2, or an XLA_METRICS_FILE)');
  return a;
}

/** Log files named (a folder: its files, not recursive), read as UTF-8 (invalid bytes replaced). */
export function readLogs(paths: string[], label = ''): { name: string; abs: string; text: string }[] {
  const out: { name: string; abs: string; text: string }[] = [];
  for (const p of paths) {
    let st: fs.Stats;
    try {
      st = fs.statSync(p);
    } catch (e) {
      throw new InputError(`${label}${termSafe(p)}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : `cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`}`);
    }
    const files = st.isDirectory()
      ? fs.readdirSync(p).filter((f) => !f.startsWith('.')).sort().map((f) => path.join(p, f)).filter((f) => fs.statSync(f).isFile())
      : [p];
    if (st.isDirectory() && !files.length) throw new InputError(`${label}${termSafe(p)}: folder has no log files`);
    for (const f of files) {
      let buf: Buffer;
      try {
        buf = readRegularFile(f, MAX_LOG_BYTES);
      } catch (e) {
        throw new InputError(`${label}${termSafe(f)}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      }
      if (buf.subarray(0, 8192).includes(0)) throw new InputError(`${label}${termSafe(f)}: a binary file, not a log (profiler traces are not read: pass the run's text output)`);
      out.push({ name: f, abs: path.resolve(f), text: buf.toString('utf8') });
    }
  }
  return out;
}

/** The Python files of `files` (absolute; default: every file of the project under `root`), relative posix paths and texts: what frames map onto. */
export function workspaceFiles(root: string, exclude: string[] | undefined, files = collectFiles([root], root, exclude, true).files): WorkspaceFile[] {
  const out: WorkspaceFile[] = [];
  for (const abs of files) {
    if (!abs.endsWith('.py')) continue;
    try {
      out.push({ path: path.relative(root, abs).split(path.sep).join('/'), text: fs.readFileSync(abs, 'utf8') });
    } catch {
      // unreadable: the scan reports it
    }
  }
  return out;
}

/** Runtime findings of logs against the project at `root`, paths displayed relative to the cwd. */
export function evidenceFindings(logs: { name: string; text: string }[], root: string, exclude: string[] | undefined, files?: string[]): { ev: RunEvidence; findings: (OutFinding & RuntimeFinding)[] } {
  const ev = readRunLogs(logs);
  const cwd = process.cwd();
  const display = (rel: string) => path.relative(cwd, path.join(root, rel)) || rel;
  const found = runtimeFindings(ev, workspaceFiles(root, exclude, files), logs.map((l) => l.name));
  const findings = found.map((f) => ({
    ...f,
    path: f.inWorkspace ? display(f.path) : f.path,
    related: f.related.map((r) => ({ ...r, path: display(r.path) })),
    evidence: { ...f.evidence, log: { ...f.evidence.log } },
  }));
  return { ev, findings };
}

/** One line naming what the logs held, for stderr. */
export function evidenceNote(ev: RunEvidence): string {
  const c = ev.blocks.filter((b) => b.kind === 'compilation').length;
  const e = ev.blocks.length - c;
  return `read ${ev.logs.length} log${ev.logs.length === 1 ? '' : 's'}: ${c} compilation and ${e} execution blocks${ev.truncatedBlocks ? ` (${ev.truncatedBlocks} cut off)` : ''}, ${ev.checks.length} pt-xla-profiler lines, ${ev.metrics.length} metrics report${ev.metrics.length === 1 ? '' : 's'}`;
}

/** Merges runtime findings into static ones (check --evidence): confirmations first, then the runtime-only ones. */
export function mergeEvidence(statics: OutFinding[], runtime: (OutFinding & RuntimeFinding)[]): { findings: OutFinding[]; confirmed: number } {
  const j = joinWithStatic(statics, runtime, (s, r) => path.resolve(s.path) === path.resolve(r.path));
  return { findings: [...j.statics, ...j.runtime], confirmed: j.confirmed };
}

export async function runEvidence(argv: string[], io: Io): Promise<number> {
  const args = parseEvidenceArgs(argv);
  if (args.root !== undefined && !(fs.existsSync(args.root) && fs.statSync(args.root).isDirectory())) throw new InputError(`--root ${termSafe(args.root)}: not a folder`);
  const root = args.root !== undefined ? path.resolve(args.root) : findProjectRoot(process.cwd());
  const logs = readLogs(args.logs);
  const { config } = loadProject(root, io);
  const { ev, findings } = evidenceFindings(logs, root, config.exclude);
  if (!ev.recognized) throw new InputError(`${logs.map((l) => termSafe(l.name)).join(', ')}: no PyTorch/XLA debug output or metrics found (run with PT_XLA_DEBUG=1 PT_XLA_DEBUG_LEVEL=2, or pass the XLA_METRICS_FILE)`);
  const rendered = renderEvidence(args.format, ev, findings, io);
  if (args.output) {
    try {
      safeWriteFile(args.output, rendered, null, 'write the report to');
    } catch (e) {
      if (e instanceof UnsafeWriteError) throw e;
      throw new InputError(`cannot write --output ${termSafe(args.output)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  } else io.out(rendered);
  io.err(`tpu-ready: ${evidenceNote(ev)}\n`);
  return args.exitZero ? 0 : findings.length ? 1 : 0;
}

/** What the run measured, for the JSON summary and the text tail. */
export function runSummary(ev: RunEvidence): { compilations: number; executions: number; truncatedBlocks: number; steps: number | null; compileSeconds: number | null; executeSeconds: number | null; fallbackOps: Record<string, number> } {
  const ct = metricTotals(ev, 'CompileTime');
  const et = metricTotals(ev, 'ExecuteTime');
  const c = ev.blocks.filter((b) => b.kind === 'compilation').length;
  const fb = fallbackCounters(ev);
  fb.delete(HOST_READ_COUNTER);
  return {
    compilations: c,
    executions: ev.blocks.length - c,
    truncatedBlocks: ev.truncatedBlocks,
    steps: counterValue(ev, 'MarkStep'),
    compileSeconds: ct?.accumulator ?? null,
    executeSeconds: et?.accumulator ?? null,
    fallbackOps: Object.fromEntries([...fb].sort((a, b) => a[0].localeCompare(b[0]))),
  };
}

function renderEvidence(format: string, ev: RunEvidence, findings: (OutFinding & RuntimeFinding)[], io: Io): string {
  const summary = { findings: findings.length, ...runSummary(ev) };
  if (format === 'json') return JSON.stringify({ version: 1, source: 'runtime', logs: ev.logs, summary, findings }, null, 2) + '\n';
  if (format === 'text') {
    const color = io.isTTY && !process.env.NO_COLOR;
    const b = (s: string) => (color ? `\x1b[1m${s}\x1b[0m` : s);
    const lines: string[] = [];
    for (const f of findings) {
      lines.push(`${b(location(f))}: ${f.rule} ${termSafe(f.message)} (${f.severity}, step ${f.step}, runtime)`);
      for (const r of f.related.slice(0, 5)) lines.push(`    ${termSafe(r.path)}:${r.line}: ${termSafe(r.message)}`);
    }
    const m = summary;
    const measured = [m.steps !== null ? `${m.steps} steps` : null, `${m.compilations} compilations`, m.compileSeconds !== null ? `${seconds(m.compileSeconds)} compiling` : null, m.executeSeconds !== null ? `${seconds(m.executeSeconds)} executing` : null, Object.keys(m.fallbackOps).length ? `CPU fallbacks: ${Object.keys(m.fallbackOps).join(', ')}` : null].filter(Boolean).join(', ');
    return (lines.length ? lines.join('\n') + '\n\n' : '') + `${findings.length ? `Found ${findings.length} runtime issue${findings.length === 1 ? '' : 's'}` : 'No runtime issues'} in the run (${measured}).\n`;
  }
  const report: Report = {
    target: { profile: 'torch_xla', version: '2.9' },
    summary: { files: 0, findings: findings.length, score: 0, errors: 0, warnings: findings.length, info: 0, fixable: { safe: 0, unsafe: 0 }, effort: 0, byStep: {}, skipped: 0, failed: 0, fixed: 0 },
    findings,
    notices: [],
    statistics: false,
    color: false,
  };
  return FORMATTERS[format].format(report, ALL_RULES);
}

/**
 * The newest profiling run in `<root>/.tpu-ready/runs/` against the project's Python files (`tpu-ready report`:
 * checklist step 9), or null when there is none. The code's last change is the newest Python file's mtime.
 */
export function projectRun(root: string, exclude: string[] | undefined): RunStatus | null {
  const dir = path.join(root, ...RUNS_DIR.split('/'));
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir).filter((n) => !n.startsWith('.'));
  } catch {
    return null;
  }
  const runs: RunFile[] = [];
  for (const n of names) {
    const abs = path.join(dir, n);
    try {
      const st = fs.lstatSync(abs);
      if (!st.isFile()) continue;
      runs.push({ path: `${RUNS_DIR}/${n}`, mtimeMs: st.mtimeMs, text: '' });
    } catch {
      // gone meanwhile
    }
  }
  const [newest] = groupRuns(runs);
  if (!newest) return null;
  for (const f of newest) {
    try {
      f.text = readRegularFile(path.join(root, f.path), MAX_LOG_BYTES).toString('utf8');
    } catch {
      // unreadable: left empty
    }
  }
  const { files } = collectFiles([root], root, exclude, true);
  const py = files.filter((f) => f.endsWith('.py'));
  let codeMtime = 0;
  for (const f of py) {
    try {
      codeMtime = Math.max(codeMtime, fs.statSync(f).mtimeMs);
    } catch {
      // gone meanwhile
    }
  }
  return latestRun(newest, workspaceFiles(root, exclude, py), codeMtime);
}
