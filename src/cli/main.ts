/** The `tpu-ready` command line: the engine in CI and in a terminal. */
import os from 'node:os';
import { runCheck, type CheckArgs } from './check';
import { runReport } from './report';
import { runCost } from './cost';
import { runEvidence } from './evidence';
import { processIo, quietOnClosedStdout, type Io } from './io';
import { checkRuleSelectors, eachArg, FIX_STYLES, InputError, TARGET_VERSIONS, TARGETS, UsageError } from './args';
import { RULES } from '../rules';
import { VERSION } from './version';

const RULE_IDS = RULES.map((r) => r.id);

const HELP = `tpu-ready ${VERSION}: find what stops or slows PyTorch training code on TPU (PyTorch/XLA)

Usage:
  tpu-ready check [PATH...] [options]   scan .py, .ipynb and project files (default: .)
  tpu-ready rules [--format text|json]  list the rules
  tpu-ready report [PATH] [--format md|html] [--output FILE] [--record]
                                        readiness report: checklist, findings, progress history
  tpu-ready cost [CONFIG...] [--hardware v5e,v6e,h100] [--chips 8] [--pricing on-demand|spot]
                 [--region R] [--mfu M] [--price P] [--format text|json|markdown]
                                        training time and cost from the training config (cost --help)
  tpu-ready cost diff A B                the cost difference of two configs or git revisions (REF:PATH)
  tpu-ready evidence LOG... [--root DIR] [--format text|json|sarif|github] [--output FILE]
                                        a PyTorch/XLA run's debug output and metrics (PT_XLA_DEBUG=1
                                        PT_XLA_DEBUG_LEVEL=2, XLA_METRICS_FILE) on the lines that caused them
  tpu-ready server [--stdio]             language server (LSP) over stdio, for editors (README: Other editors)
  tpu-ready --version | --help

Check options:
  --format text|json|sarif|github   output format (default text)
  --output FILE                     write the report to FILE
  --fix                             apply safe fixes
  --unsafe-fixes                    with --fix/--diff: apply unsafe fixes too (review them)
  --diff                            print the fixes as a unified diff, write nothing
  --select IDS, --ignore IDS        comma-separated rule ids or prefixes (TPU2, TPU101)
  --target torch_xla|torchtpu       target profile (default torch_xla)
  --target-version X.Y              torch_xla version 2.3-2.9 (default: pinned in the project, else 2.9)
  --fix-style dual-path|tpu-only    dual-path (default) keeps CUDA/CPU working via a generated accel.py
  --statistics                      counts per rule instead of findings
  --evidence LOG[,LOG]              merge a run's log (repeatable): runtime findings confirm static ones
  --exit-zero                       exit 0 even when there are findings
  --jobs N                          worker threads (default: cores)
  --max-file-size KB                skip larger files (default 2048)
  --file-budget SECONDS             skip a file whose analysis takes longer (default 10)
  --memory-budget MB                skip a file whose analysis needs more memory (default 1024)
  --no-gitignore                    do not honour .gitignore files
  --debug                           print the stack trace of an internal error

Exit codes: 0 no findings, 1 findings, 2 usage or I/O error (also a file that cannot be
analysed: unreadable, a broken notebook; --exit-zero silences findings only).
Configuration: [tool.tpu-ready] in pyproject.toml (select, ignore, per-file-ignores, exclude,
target, target-version, fix-style, accel-module, file-budget, memory-budget). Flags win over pyproject.
`;

export function parseCheckArgs(argv: string[]): CheckArgs {
  const a: CheckArgs = {
    paths: [], format: 'text', fix: false, unsafeFixes: false, diff: false, statistics: false, exitZero: false,
    jobs: Math.max(1, os.availableParallelism?.() ?? os.cpus().length), maxBytes: 2048 * 1024, respectGitignore: true,
  };
  eachArg(argv, (arg) => {
    switch (arg.flag) {
      case '--format': a.format = arg.choice(['text', 'json', 'sarif', 'github']); break;
      case '--output': case '-o': a.output = arg.value(); break;
      case '--fix': a.fix = true; break;
      case '--unsafe-fixes': a.unsafeFixes = true; break;
      case '--diff': a.diff = true; break;
      case '--select': a.select = checkRuleSelectors('--select', arg.list(), RULE_IDS); break;
      case '--ignore': a.ignore = checkRuleSelectors('--ignore', arg.list(), RULE_IDS); break;
      case '--target': a.target = arg.choice(TARGETS); break;
      case '--target-version': a.targetVersion = arg.choice(TARGET_VERSIONS); break;
      case '--fix-style': a.fixStyle = arg.choice(FIX_STYLES); break;
      case '--statistics': a.statistics = true; break;
      case '--evidence': a.evidence = [...(a.evidence ?? []), ...arg.list()]; break;
      case '--exit-zero': a.exitZero = true; break;
      case '--no-gitignore': a.respectGitignore = false; break;
      case '--jobs': case '-j': {
        const n = arg.number(1, 256, 'a positive integer');
        if (!Number.isInteger(n)) throw new UsageError('--jobs must be a positive integer');
        a.jobs = n;
        break;
      }
      case '--file-budget': a.fileBudgetMs = arg.number(0.001, 3600, 'a number of seconds (up to 3600)') * 1000; break;
      case '--memory-budget': a.memoryBytes = arg.number(16, 65536, 'a number of MB (16-65536)') * 1024 * 1024; break;
      case '--max-file-size': a.maxBytes = arg.number(Number.MIN_VALUE, Number.MAX_SAFE_INTEGER, 'a positive number of KiB') * 1024; break;
      default: a.paths.push(arg.positional());
    }
  });
  return a;
}

export async function main(argv: string[], io: Io = processIo, wasmDir = __dirname): Promise<number> {
  // --debug (anywhere): print the stack trace of an internal error
  const debug = argv.includes('--debug');
  const [cmd, ...rest] = argv.filter((a) => a !== '--debug');
  try {
    switch (cmd) {
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        io.out(HELP);
        return cmd === undefined ? 2 : 0;
      case '--version':
      case '-V':
        io.out(`tpu-ready ${VERSION}\n`);
        return 0;
      case 'report':
        return await runReport(rest, io, wasmDir);
      case 'cost':
        return await runCost(rest, io, wasmDir);
      case 'evidence':
        return await runEvidence(rest, io);
      case 'check':
        return await runCheck(parseCheckArgs(rest), io, wasmDir);
      case 'server': {
        const bad = rest.find((a) => a !== '--stdio');
        if (bad) throw new UsageError(`server: unknown option "${bad}" (the server talks LSP over stdio)`);
        await serve(wasmDir);
        return 0;
      }
      case 'rules': {
        if (rest.includes('--format') && rest[rest.indexOf('--format') + 1] === 'json') {
          io.out(JSON.stringify(RULES.map((r) => ({ id: r.id, name: r.name, title: r.title, severity: r.severity, step: r.step, effort: r.effort, fix: r.fix })), null, 2) + '\n');
        } else {
          for (const r of RULES) io.out(`${r.id}  ${r.severity.padEnd(7)}  step ${String(r.step).padStart(2)}  ${r.fix.availability === 'none' ? '   ' : r.fix.applicability === 'safe' ? '[*]' : '[~]'}  ${r.title.replace(/`/g, '')}\n`);
        }
        return 0;
      }
      default:
        throw new UsageError(`unknown command "${cmd}" (check, report, cost, evidence, rules, server)`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(e instanceof InputError ? `tpu-ready: ${e.message}\n` : `tpu-ready: ${e.message}\nRun \`tpu-ready --help\` for usage.\n`);
      return 2;
    }
    if (debug) io.err(`tpu-ready: internal error: ${(e as Error).stack ?? e}\n`);
    else io.err(`tpu-ready: ${cmd}: ${oneLine(e)} (internal error; --debug prints the trace)\n`);
    return 2;
  }
}

/** Runs the language server on stdin/stdout until the client sends `exit` (nothing else may write to stdout). */
async function serve(wasmDir: string): Promise<void> {
  const { createConnection, ProposedFeatures } = await import('vscode-languageserver/node');
  const { startServer } = await import('../server/server');
  const connection = createConnection(ProposedFeatures.all, process.stdin, process.stdout);
  await new Promise<void>((resolve) => {
    connection.onExit(() => resolve());
    startServer(connection, { wasmDir });
  });
}

function oneLine(e: unknown): string {
  const m = e instanceof RangeError && /call stack/i.test(e.message) ? 'input nested too deeply' : e instanceof Error ? e.message : String(e);
  return m.split('\n')[0].slice(0, 300);
}

if (require.main === module) {
  if (process.argv[2] !== 'server') quietOnClosedStdout();
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      process.stderr.write(`tpu-ready: ${e}\n`);
      process.exitCode = 2;
    },
  );
}
