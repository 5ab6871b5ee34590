/**
 * Runtime family (TPU0nn): findings read from a PyTorch/XLA run's debug output and metrics
 * (src/evidence), not from the code. They have no static check and no fix; they sit on the line of the
 * first user frame that triggered them and confirm a static finding on that line when there is one.
 * Ids and sources live here (the catalog, shared/RULES.md, has no runtime family).
 */
import type { Rule } from '../../core/rule';

export interface RuntimeRule extends Rule {
  /** Static rules a finding of this rule confirms when both are on one line (docs: "material for"). */
  material: string[];
}

const DEBUG_UTIL = 'torch_xla/csrc/debug_util.cpp:260-430 at v2.9.0 (commit 5fab705): `analyze_graph_execution_python_frame`, the "Compilation Analysis"/"Execution Analysis" blocks; l. 236-340 at v2.3.0 ("mark_step" wording)';
const METRICS_ANALYSIS = 'torch_xla/csrc/runtime/metrics_analysis.cpp:22-200 at v2.9.0: the "pt-xla-profiler:" checks (thresholds l. 188-191), printed after each step when PT_XLA_DEBUG=1 (torch_xla/csrc/init_python_bindings.cpp:720-744)';
const METRICS = 'torch_xla/csrc/runtime/metrics.cpp:38-84, 304-376 at v2.9.0: the metrics report (`met.metrics_report()`, `met.short_metrics_report()`, torch_xla/debug/metrics.py:62-83) and `XLA_METRICS_FILE` (torch_xla/debug/metrics_saver.py:19-50)';
const TROUBLESHOOT = 'docs/source/learn/troubleshoot.md at v2.9.0 (PT_XLA_DEBUG_LEVEL, auto-metrics analysis)';

const runtimeDocs = (d: Omit<Rule['docs'], 'sources'> & { sources?: string[] }): Rule['docs'] => ({ ...d, sources: [...(d.sources ?? []), TROUBLESHOOT] });

export const TPU001: RuntimeRule = {
  id: 'TPU001',
  name: 'runtime-recompilation',
  title: 'The run compiled graphs more than once at this line',
  severity: 'warning',
  step: 9,
  effort: 3,
  message: 'The run compiled graphs more than once here',
  fix: { availability: 'none' },
  triggers: [],
  material: ['TPU203', 'TPU204', 'TPU205', 'TPU403', 'TPU404', 'TPU202'],
  docs: runtimeDocs({
    what: 'Reads the "Compilation Analysis" blocks of a run with `PT_XLA_DEBUG_LEVEL=1` or `2` (torch_xla 2.4+; `PT_XLA_DEBUG=1` in 2.3) and groups them by the first frame in user code. A line whose compilations exceed what a stable step needs (one graph, or two at a step barrier: the first step also builds the optimizer state) is reported with the number of compilations, the distinct graph hashes and the compile seconds measured by the run (`CompileTime`, mean per compilation times the count).',
    why: 'Each new graph hash is a fresh XLA compilation, seconds to minutes each. A graph that changes every step (a shape, a Python scalar, a branch on a value) compiles every step and the TPU idles meanwhile.',
    example: 'Compilation Analysis: Compilation Cause\nCompilation Analysis:   user torch_xla.sync\nCompilation Analysis:   Graph Hash: 1a2b...\nCompilation Analysis: Python Frame Triggered Execution: \nCompilation Analysis:   train (/home/me/proj/train.py:42)',
    useInstead: '# keep shapes static: pad to fixed or bucketed lengths, drop_last=True,\n# pass changing Python scalars as tensors, no value-dependent branches in the step',
    sources: [DEBUG_UTIL, METRICS],
    torchtpu: 'Read from torch_xla runs only.',
  }),
};

export const TPU002: RuntimeRule = {
  id: 'TPU002',
  name: 'runtime-host-read',
  title: 'The run executed a graph here to read a tensor value before the step barrier',
  severity: 'warning',
  step: 9,
  effort: 3,
  message: 'The run executed a graph here to read a tensor value before the step barrier',
  fix: { availability: 'none' },
  triggers: [],
  material: ['TPU201', 'TPU202', 'TPU303'],
  docs: runtimeDocs({
    what: 'Reads the "Execution Analysis" blocks (`PT_XLA_DEBUG_LEVEL=2`; `PT_XLA_DEBUG=1` in 2.3) whose cause is "most likely user code trying to access tensor value before torch_xla.sync" (before "mark_step" in 2.3-2.5) and reports each user line with its count, the syncs per step (`MarkStep` counter) and the execution seconds measured by the run (`ExecuteTime`, mean times the count).',
    why: 'Reading a value (`.item()`, `print(t)`, `if t > 0`, `.cpu()`) cuts the lazy graph: the pending work is compiled and executed, the host waits for the device, and the rest of the step becomes another graph.',
    example: 'Execution Analysis: Execution Cause\nExecution Analysis:   most likely user code trying to access tensor value before torch_xla.sync\nExecution Analysis: Python Frame Triggered Execution: \nExecution Analysis:   train (/home/me/proj/train.py:57)',
    useInstead: '# report values from a step closure, every N steps\nxm.add_step_closure(lambda loss: print(loss.item()), args=(loss,))',
    sources: [DEBUG_UTIL, METRICS],
    torchtpu: 'Read from torch_xla runs only.',
  }),
};

export const TPU003: RuntimeRule = {
  id: 'TPU003',
  name: 'runtime-cpu-fallback',
  title: 'The run fell back to the CPU for an op not lowered to XLA',
  severity: 'warning',
  step: 9,
  effort: 5,
  message: 'The run ran an op on the CPU (not lowered to XLA)',
  fix: { availability: 'none' },
  triggers: [],
  material: ['TPU708', 'TPU701', 'TPU704', 'TPU203'],
  docs: runtimeDocs({
    what: 'Reads the `aten::*` counters of the metrics report (each counts the calls that fell back to the CPU; `aten::_local_scalar_dense` is a host read and is left out, as torch_xla\'s own check does) and the "pt-xla-profiler: Op(s) not lowered" check. The op is placed on the first call in the workspace whose name matches it (`aten::_ctc_loss` → `ctc_loss(`); with none, on the log line.',
    why: 'A fallback copies the inputs to the host, runs the op on the CPU and copies the result back, and splits the graph around it, in every step.',
    example: 'pt-xla-profiler: Op(s) not lowered: aten::_ctc_loss, aten::_ctc_loss_backward,  Please open a GitHub issue with the above op lowering requests.',
    useInstead: '# use an op that lowers (see the op lowering guide), compute it once outside the step,\n# or open an op lowering request with the op name',
    sources: [METRICS, METRICS_ANALYSIS, 'torch_xla/csrc/aten_fallback.cpp at v2.9.0 (the `aten::` fallback counters)'],
    torchtpu: 'Read from torch_xla runs only.',
  }),
};

export const TPU004: RuntimeRule = {
  id: 'TPU004',
  name: 'runtime-metric-check',
  title: 'torch_xla\'s own metrics check fired: a metric too frequent or too slow',
  severity: 'warning',
  step: 9,
  effort: 3,
  message: 'torch_xla reported a metric too frequent or too slow',
  fix: { availability: 'none' },
  triggers: [],
  material: ['TPU201', 'TPU203', 'TPU204', 'TPU205', 'TPU404'],
  docs: runtimeDocs({
    what: 'Reads the "pt-xla-profiler: <metric> too frequent: N counts during M steps" and "<metric> too slow: longest instance took T" lines that torch_xla prints after each step with `PT_XLA_DEBUG=1` (the last one counts). CompileTime goes on the line that compiled most, TransferFromDeviceTime on the line that read values most, else on the log line; when a TPU001/TPU002 finding is on that line the check is folded into it.',
    why: 'torch_xla flags CompileTime above 0.5 compilations per step after 10 steps, TransferFromDeviceTime above 0.5 transfers per step, a compilation longer than 300 s and an execution longer than 30 s: each means the steps are not running as one cached graph.',
    example: 'pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps\npt-xla-profiler: TransferFromDeviceTime too frequent: 11 counts during 11 steps',
    useInstead: '# find the line with PT_XLA_DEBUG_LEVEL=2 (TPU001, TPU002) and keep the step graph stable',
    sources: [METRICS_ANALYSIS],
    torchtpu: 'Read from torch_xla runs only.',
  }),
};

export const RUNTIME_RULES: RuntimeRule[] = [TPU001, TPU002, TPU003, TPU004];
export const RUNTIME_RULES_BY_ID: ReadonlyMap<string, RuntimeRule> = new Map(RUNTIME_RULES.map((r) => [r.id, r]));
