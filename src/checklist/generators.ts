/**
 * Files the checklist's step actions write: a TPU smoke test (step 2), a resume-from-checkpoint
 * scaffold (step 8), a GitHub Actions workflow running tpu-ready with SARIF upload (step 10) and the
 * persistent compile cache snippet (step 10). Each is written in the target profile's idiom (torch_xla
 * 2.x, version-gated through core/idioms, or the TorchTPU preview).
 */
import { Idioms } from '../core/idioms';
import { DEFAULT_OPTIONS, type Target } from '../core/types';
import { SMOKE_TEST_MARKER, type ModelRef } from './facts';

export interface GeneratedFile {
  /** Workspace-relative path suggested for the file. */
  path: string;
  text: string;
}

function idioms(target: Target): Idioms {
  return new Idioms({ ...DEFAULT_OPTIONS, target, fixStyle: 'tpu-only' });
}

function versionNote(target: Target): string {
  return target.profile === 'torchtpu' ? 'the TorchTPU preview (native `tpu` device; its API may still change)' : `torch_xla ${target.version}`;
}

/** Step 2: counts devices, times a matmul, runs a few training steps of the user's model (or a small MLP). */
export function smokeTest(target: Target, model: ModelRef | null): GeneratedFile {
  const ix = idioms(target);
  const xla = target.profile === 'torch_xla';
  const sync = xla ? ix.sync()!.text : null;
  const lines: string[] = [];
  lines.push(`"""TPU smoke test (${SMOKE_TEST_MARKER}), generated for ${versionNote(target)}.`);
  lines.push('');
  lines.push('Run it on the TPU host: python tpu_smoke_test.py');
  lines.push('It checks that the TPU is visible, times a bfloat16 matmul and runs a few training steps.');
  lines.push('"""');
  lines.push('import time', '', 'import torch', 'import torch.nn as nn');
  if (xla) {
    lines.push('import torch_xla');
    lines.push('import torch_xla.core.xla_model as xm');
    lines.push('import torch_xla.runtime as xr');
  } else {
    lines.push('import torch_tpu  # noqa: F401  (registers the "tpu" device)');
  }
  lines.push('', 'STEPS = 5', 'MATMUL_SIZE = 4096', '');
  lines.push('', 'def device_count():');
  if (xla) {
    lines.push('    return xr.global_runtime_device_count()');
  } else {
    lines.push('    tpu = getattr(torch, "tpu", None)');
    lines.push('    return tpu.device_count() if tpu is not None and hasattr(tpu, "device_count") else 1');
  }
  lines.push('', '', 'def barrier():');
  lines.push('    """Waits until the queued device work has finished."""');
  if (xla) {
    lines.push(`    ${sync}`);
    lines.push('    xm.wait_device_ops()');
  } else {
    lines.push('    tpu = getattr(torch, "tpu", None)');
    lines.push('    if tpu is not None and hasattr(tpu, "synchronize"):');
    lines.push('        tpu.synchronize()');
  }
  lines.push('', '', 'def build_model():');
  if (model) {
    lines.push(`    """Your model, {}. Pass the arguments its constructor needs."""`.replace('{}', `${model.module}.${model.name}`));
    lines.push('    try:');
    lines.push(`        from ${model.module} import ${model.name}`);
    lines.push(`        return ${model.name}()`);
    lines.push('    except Exception as e:  # constructor arguments or imports this script cannot guess');
    lines.push(`        print(f"could not build ${model.name}() ({e!r}); using a small MLP instead: edit build_model()")`);
    lines.push('        return nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 10))');
  } else {
    lines.push('    """A small MLP: replace it with your model."""');
    lines.push('    return nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 10))');
  }
  lines.push('', '', 'def make_batch(model, device):');
  lines.push('    """A fixed-shape batch (inputs, targets): edit it to match what your model takes."""');
  lines.push('    first = next((m for m in model.modules() if isinstance(m, nn.Linear)), None)');
  lines.push('    width = first.in_features if first is not None else 512');
  lines.push('    x = torch.randn(8, width, device=device)');
  lines.push('    return x, None');
  lines.push('', '', 'def loss_of(output, target):');
  lines.push('    if isinstance(output, (tuple, list)):');
  lines.push('        output = output[0]');
  lines.push('    if hasattr(output, "loss") and output.loss is not None:');
  lines.push('        return output.loss');
  lines.push('    if hasattr(output, "logits"):');
  lines.push('        output = output.logits');
  lines.push('    return output.float().pow(2).mean()');
  lines.push('', '', 'def main():');
  lines.push('    count = device_count()');
  lines.push('    print(f"TPU devices: {count}")');
  lines.push('    assert count > 0, "no TPU device visible: check the runtime (PJRT_DEVICE=TPU) and the install"');
  lines.push(`    device = ${ix.device().text}`);
  lines.push('    print(f"device: {device}")');
  lines.push('');
  lines.push('    a = torch.randn(MATMUL_SIZE, MATMUL_SIZE, dtype=torch.bfloat16, device=device)');
  lines.push('    b = torch.randn(MATMUL_SIZE, MATMUL_SIZE, dtype=torch.bfloat16, device=device)');
  lines.push('    c = a @ b  # the first run compiles');
  lines.push('    barrier()');
  lines.push('    start = time.perf_counter()');
  lines.push('    for _ in range(10):');
  lines.push('        c = a @ b');
  lines.push('    barrier()');
  lines.push('    seconds = (time.perf_counter() - start) / 10');
  lines.push('    print(f"matmul {MATMUL_SIZE}x{MATMUL_SIZE} bf16: {2 * MATMUL_SIZE ** 3 / seconds / 1e12:.1f} TFLOP/s")');
  lines.push('');
  lines.push('    model = build_model().to(device)');
  lines.push('    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)  # built after the move to the device');
  lines.push('    model.train()');
  lines.push('    for step in range(STEPS):');
  lines.push('        x, target = make_batch(model, device)');
  lines.push('        optimizer.zero_grad()');
  lines.push(`        with torch.autocast(${xla ? '"xla"' : '"tpu"'}, dtype=torch.bfloat16):`);
  lines.push('            loss = loss_of(model(x), target)');
  lines.push('        loss.backward()');
  if (xla) {
    lines.push('        xm.optimizer_step(optimizer)');
    lines.push(`        ${sync}`);
  } else {
    lines.push('        optimizer.step()');
  }
  lines.push('        print(f"step {step}: loss {loss.item():.4f}")');
  lines.push('    print("smoke test passed")');
  lines.push('', '', 'if __name__ == "__main__":', '    main()');
  return { path: 'tpu_smoke_test.py', text: lines.join('\n') + '\n' };
}

/** Step 8: save and resume from the latest checkpoint (preemption-safe: written to a temp file, then renamed). */
export function resumeScaffold(target: Target): GeneratedFile {
  const xla = target.profile === 'torch_xla';
  const lines: string[] = [];
  lines.push(`"""Resume-from-checkpoint helpers, generated by tpu-ready for ${versionNote(target)}.`);
  lines.push('');
  lines.push('    from checkpointing import save_checkpoint, load_latest_checkpoint');
  lines.push('    start_step = load_latest_checkpoint(CKPT_DIR, model, optimizer)  # resume after preemption');
  lines.push('    for step in range(start_step, total_steps):');
  lines.push('        ...');
  lines.push('        if step % 1000 == 0:');
  lines.push('            save_checkpoint(CKPT_DIR, step, model, optimizer)');
  lines.push('"""');
  lines.push('import os', 'import re', '', 'import torch');
  if (xla) lines.push('import torch_xla.core.xla_model as xm');
  lines.push('', '_NAME = re.compile(r"^ckpt-(\\d+)\\.pt$")', '');
  lines.push('', 'def latest_checkpoint(directory):');
  lines.push('    """Path of the newest checkpoint in `directory`, or None."""');
  lines.push('    if not os.path.isdir(directory):');
  lines.push('        return None');
  lines.push('    steps = [int(m.group(1)) for m in map(_NAME.match, os.listdir(directory)) if m]');
  lines.push('    return os.path.join(directory, f"ckpt-{max(steps)}.pt") if steps else None');
  lines.push('', '', 'def save_checkpoint(directory, step, model, optimizer):');
  lines.push('    """Writes ckpt-<step>.pt; a preempted write never replaces a good checkpoint."""');
  lines.push('    os.makedirs(directory, exist_ok=True)');
  lines.push('    state = {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()}');
  lines.push('    path = os.path.join(directory, f"ckpt-{step}.pt")');
  lines.push('    tmp = path + ".tmp"');
  if (xla) {
    lines.push('    xm.save(state, tmp)  # moves tensors to the CPU, writes on the master ordinal only');
    lines.push('    if xm.is_master_ordinal(local=False):');
    lines.push('        os.replace(tmp, path)');
    lines.push('    xm.rendezvous("checkpoint saved")');
  } else {
    lines.push('    cpu_state = {k: _to_cpu(v) for k, v in state.items()}');
    lines.push('    torch.save(cpu_state, tmp)');
    lines.push('    os.replace(tmp, path)');
  }
  lines.push('', '', 'def load_latest_checkpoint(directory, model, optimizer):');
  lines.push('    """Restores the newest checkpoint; returns the step to continue from (0 when there is none)."""');
  lines.push('    path = latest_checkpoint(directory)');
  lines.push('    if path is None:');
  lines.push('        return 0');
  lines.push('    state = torch.load(path, map_location="cpu")');
  lines.push('    model.load_state_dict(state["model"])');
  lines.push('    optimizer.load_state_dict(state["optimizer"])');
  lines.push('    print(f"resumed from {path}")');
  lines.push('    return int(state["step"]) + 1');
  if (!xla) {
    lines.push('', '', 'def _to_cpu(value):');
    lines.push('    if isinstance(value, torch.Tensor):');
    lines.push('        return value.cpu()');
    lines.push('    if isinstance(value, dict):');
    lines.push('        return {k: _to_cpu(v) for k, v in value.items()}');
    lines.push('    if isinstance(value, (list, tuple)):');
    lines.push('        return type(value)(_to_cpu(v) for v in value)');
    lines.push('    return value');
  }
  return { path: 'checkpointing.py', text: lines.join('\n') + '\n' };
}

/** Step 10: a GitHub Actions workflow running `tpu-ready check --format sarif` and uploading it to code scanning. */
export function ciWorkflow(target: Target): GeneratedFile {
  const targetFlags = target.profile === 'torchtpu' ? ' --target torchtpu' : '';
  const text = `# TPU readiness: runs tpu-ready on every push and pull request and shows its findings in
# the repository's code scanning alerts (generated by tpu-ready).
name: TPU readiness

on:
  push:
    branches: [main]
  pull_request:

permissions:
  contents: read
  security-events: write

jobs:
  tpu-ready:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-node@v4
        with:
          node-version: 20
      - name: Scan for TPU readiness
        run: npx --yes tpu-ready check --format sarif --output tpu-ready.sarif --exit-zero${targetFlags}
      - name: Upload to code scanning
        uses: github/codeql-action/upload-sarif@v3
        with:
          sarif_file: tpu-ready.sarif
          category: tpu-ready
      - name: Readiness report
        run: npx --yes tpu-ready report --format md >> "$GITHUB_STEP_SUMMARY"
`;
  return { path: '.github/workflows/tpu-ready.yml', text };
}

/** Step 10: the statement(s) that turn on the persistent compilation cache, or null when the profile has none. */
export function compileCacheSnippet(target: Target): { imports: string[]; code: string } | null {
  const s = idioms(target).initializeCache('os.environ.get("XLA_CACHE_DIR", os.path.expanduser("~/.cache/xla"))');
  if (!s) return null;
  const imports = ['import os', ...s.imports.map((i) => (i.name ? `from ${i.module} import ${i.name}${i.alias ? ` as ${i.alias}` : ''}` : `import ${i.module}${i.alias ? ` as ${i.alias}` : ''}`))];
  return {
    imports,
    code: `# Persistent XLA compilation cache: restarts reuse compiled graphs (per process; use readonly=True on SPMD readers).\n${s.text}\n`,
  };
}

/**
 * Inserts the cache initialisation into a training script: imports merged after the existing import
 * block, the call right after it. Returns null when the text already initialises a cache.
 */
export function insertCompileCache(text: string, target: Target): string | null {
  if (/\binitialize_cache\(/.test(text)) return null;
  const snippet = compileCacheSnippet(target);
  if (!snippet) return null;
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split(/\r?\n/);
  let last = -1;
  let i = 0;
  // skip a module docstring and the leading import block
  const doc = /^\s*(r|u)?("""|''')/.exec(lines[0] ?? '');
  if (doc) {
    const q = doc[2];
    i = lines[0].indexOf(q, lines[0].indexOf(q) + 3) >= 0 ? 1 : lines.findIndex((l, k) => k > 0 && l.includes(q)) + 1;
    last = i - 1;
  }
  for (; i < lines.length; i++) {
    const l = lines[i];
    if (/^(import|from)\s+\S/.test(l)) {
      // a parenthesised import may span lines
      if (l.includes('(') && !l.includes(')')) while (i < lines.length - 1 && !lines[i].includes(')')) i++;
      last = i;
    } else if (l.trim() === '' || l.startsWith('#')) continue;
    else break;
  }
  const present = new Set(lines.slice(0, last + 1).map((l) => l.trim()));
  const newImports = snippet.imports.filter((im) => !present.has(im));
  const insert = [...newImports, '', ...snippet.code.trimEnd().split('\n')];
  lines.splice(last + 1, 0, ...insert);
  return lines.join(eol);
}

/** Where profiling runs' logs go; the extension watches it and `tpu-ready evidence .tpu-ready/runs` reads it. */
export const RUNS_DIR = '.tpu-ready/runs';

/** Marker of the generated profiling launcher. */
export const PROFILING_RUN_MARKER = 'tpu-ready: profiling run';

/**
 * Steps 2 and 9: a launch script that runs a Python program with torch_xla's debug output on, tees its output to
 * `.tpu-ready/runs/<UTC date>.log`, writes the per-step metrics to `<date>.metrics` and prints the metrics report
 * at exit: what `tpu-ready evidence` and the extension read back onto the lines. torch_xla only (the variables
 * are torch_xla's): null for the TorchTPU preview.
 *
 * - PT_XLA_DEBUG=1: the "pt-xla-profiler:" checks after each step (torch_xla/csrc/init_python_bindings.cpp
 *   l. 720-744 at v2.9.0), and in 2.3 the compilation and execution analysis too (debug_util.cpp l. 239-252 at
 *   v2.3.0); PT_XLA_DEBUG_LEVEL=2 (since 2.4, debug_util.cpp l. 241 at v2.4.0; l. 245-300 at v2.9.0): both
 *   analyses, where PT_XLA_DEBUG=1 alone would mean level 100.
 * - XLA_METRICS_FILE: the report after every step, `<file>.<ordinal>` per process when there are several
 *   (torch_xla/debug/metrics_saver.py l. 19-50).
 * - Every line written to the log is stamped with the seconds since launch ("[tpu-ready 12.345] ", the
 *   terminal gets the line as printed): the step barriers' execution blocks then give the step time
 *   (src/evidence/steps.ts). The TPU type is recorded first, from `TPU_ACCELERATOR_TYPE` or the VM's `tpu-env`
 *   metadata, as torch_xla reads it (torch_xla/_internal/tpu.py l. 89-94 and 166-185 at v2.9.0).
 */
export function profilingRun(target: Target): GeneratedFile | null {
  if (target.profile !== 'torch_xla') return null;
  const lines = [
    '#!/usr/bin/env bash',
    `# ${PROFILING_RUN_MARKER}, generated for ${versionNote(target)}.`,
    '#',
    '# Usage, on the TPU host from anywhere in the project:',
    '#   bash .tpu-ready/profile-run.sh train.py --your --args',
    '# Runs a few steps with torch_xla\'s debug analysis on (slower than a real run: profile 10-50 steps, then',
    '# read .tpu-ready/runs/ with `tpu-ready evidence .tpu-ready/runs` or in VS Code, where the findings appear on',
    '# the lines that caused them). Do not leave these variables set for real runs.',
    'set -euo pipefail',
    'root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"',
    `runs="$root/${RUNS_DIR}"`,
    'mkdir -p "$runs"',
    'stamp="$(date -u +%Y-%m-%dT%H-%M-%SZ)"',
    'log="$runs/$stamp.log"',
    'if [ "$#" -lt 1 ]; then echo "usage: bash $0 SCRIPT.py [ARGS...]" >&2; exit 2; fi',
    '',
    '# compilations (level 1) and executions (level 2) with their cause, graph hash and Python frames (2.4+;',
    '# torch_xla 2.3 prints both with PT_XLA_DEBUG=1)',
    'export PT_XLA_DEBUG_LEVEL=2',
    '# the pt-xla-profiler checks after each step: "CompileTime too frequent", "Op(s) not lowered"',
    'export PT_XLA_DEBUG=1',
    '# the metrics report after every step (one file per process when there are several)',
    'export XLA_METRICS_FILE="$runs/$stamp.metrics"',
    'export PYTHONUNBUFFERED=1',
    '',
    '# the TPU type, for the measured step time in `tpu-ready cost --evidence` (a Cloud TPU VM\'s tpu-env metadata)',
    'acc="${TPU_ACCELERATOR_TYPE:-}"',
    'if [ -z "$acc" ] && command -v curl >/dev/null 2>&1; then',
    '  acc="$(curl -s -m 2 -H "Metadata-Flavor: Google" http://metadata.google.internal/computeMetadata/v1/instance/attributes/tpu-env 2>/dev/null | sed -n "s/^ACCELERATOR_TYPE: *[\'\\"]\\{0,1\\}\\([A-Za-z0-9-]*\\).*/\\1/p" | head -n 1 || true)"',
    'fi',
    '',
    'echo "tpu-ready: writing $log" >&2',
    '{',
    'echo "tpu-ready: accelerator-type ${acc:-unknown}"',
    '# the metrics report is printed at exit as well (the counters of CPU fallbacks are in it)',
    '"${PYTHON:-python3}" -c \'',
    'import atexit, runpy, sys',
    'def _report():',
    '    try:',
    '        import torch_xla.debug.metrics as met',
    '        print(met.metrics_report(), flush=True)',
    '    except Exception as e:',
    '        print("tpu-ready: no metrics report: %r" % (e,), flush=True)',
    'atexit.register(_report)',
    'sys.argv = sys.argv[1:]',
    'runpy.run_path(sys.argv[0], run_name="__main__")',
    '\' "$@" 2>&1',
    '# every line to the terminal as printed, and to the log stamped with the seconds since launch',
    '} | "${PYTHON:-python3}" -u -c \'',
    'import sys, time',
    't0 = time.monotonic()',
    'with open(sys.argv[1], "a", encoding="utf-8", errors="replace") as log:',
    '    for line in sys.stdin.buffer:',
    '        sys.stdout.buffer.write(line)',
    '        sys.stdout.buffer.flush()',
    '        log.write("[tpu-ready %.3f] " % (time.monotonic() - t0) + line.decode("utf-8", "replace"))',
    '        log.flush()',
    '\' "$log"',
    'status="${PIPESTATUS[0]}"',
    'echo "tpu-ready: run log in $log (read it with: npx tpu-ready evidence $runs)" >&2',
    'exit "$status"',
  ];
  return { path: '.tpu-ready/profile-run.sh', text: lines.join('\n') + '\n' };
}
