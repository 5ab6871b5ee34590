/**
 * The ten integration-checklist steps (catalog §0.4) as data: what each step means, its sub-items
 * (ticked by the team, or read from the code as evidence), and the actions the panel offers. The
 * rules that drive each step come from the registry's `step` field (`rulesOfStep`).
 */
import { RULES } from '../rules';
import { STEP_TITLES, type Step, type TargetProfile } from '../core/types';
import type { StepActionId } from '../protocol/messages';
import type { FactKey } from './facts';

export type StepItem =
  | { id: string; kind: 'manual'; text: string; profiles?: TargetProfile[] }
  | { id: string; kind: 'evidence'; text: Record<TargetProfile, string>; fact: FactKey; profiles?: TargetProfile[] };

export interface StepDef {
  step: Step;
  title: string;
  explanation: Record<TargetProfile, string>;
  items: StepItem[];
  actions: StepActionId[];
}

const same = (s: string): Record<TargetProfile, string> => ({ torch_xla: s, torchtpu: s });

export const STEPS: readonly StepDef[] = [
  {
    step: 1,
    title: STEP_TITLES[1],
    explanation: {
      torch_xla:
        'Pick the TPU generation and topology (for example v5e-8 or v6e-8), and where it runs: a TPU VM, a GKE node pool or a notebook runtime. Set the runtime with PJRT_DEVICE=TPU and keep CUDA-only environment variables out of the launch scripts.',
      torchtpu:
        'Pick the TPU generation and topology (for example v5e-8 or v6e-8), and where it runs: a TPU VM, a GKE node pool or a notebook runtime. The TorchTPU preview uses the native `tpu` device; keep CUDA-only environment variables out of the launch scripts.',
    },
    items: [
      { id: 'tpu-type', kind: 'manual', text: 'Chose the TPU generation and topology' },
      { id: 'host', kind: 'manual', text: 'Created the TPU host (TPU VM, GKE node pool or notebook runtime)' },
    ],
    actions: [],
  },
  {
    step: 2,
    title: STEP_TITLES[2],
    explanation: {
      torch_xla:
        "Install torch and torch_xla[tpu] of the same version on the TPU host, without CUDA wheels, and pin them in the project's requirements. Then run a smoke test: it counts the devices, times a matmul and runs a few training steps of your model.",
      torchtpu:
        'Install torch and the TorchTPU preview package on the TPU host, without CUDA wheels, and pin them. Then run a smoke test: it counts the devices, times a matmul and runs a few training steps of your model.',
    },
    items: [
      { id: 'pinned', kind: 'evidence', fact: 'pinsTpuStack', text: { torch_xla: 'torch_xla is pinned in the requirements', torchtpu: 'torch_tpu is pinned in the requirements' } },
      { id: 'smoke-test', kind: 'evidence', fact: 'hasSmokeTest', text: same('The project has a TPU smoke test') },
      { id: 'smoke-passed', kind: 'manual', text: 'The smoke test passed on the TPU host' },
    ],
    actions: ['smokeTest'],
  },
  {
    step: 3,
    title: STEP_TITLES[3],
    explanation: {
      torch_xla:
        'Replace every CUDA device (`.cuda()`, `"cuda"`, `torch.cuda.*`) with the XLA device from `torch_xla.device()`, and move the model before you build the optimizer so its parameters are the ones being trained.',
      torchtpu:
        'Replace every CUDA device (`.cuda()`, `"cuda"`, `torch.cuda.*`) with the native `torch.device("tpu")` after `import torch_tpu`, and move the model before you build the optimizer.',
    },
    items: [
      { id: 'imports', kind: 'evidence', fact: 'importsTpuStack', text: { torch_xla: 'The code imports torch_xla', torchtpu: 'The code imports torch_tpu' } },
      { id: 'device', kind: 'evidence', fact: 'usesTpuDevice', text: { torch_xla: 'The code uses an XLA device', torchtpu: 'The code uses the tpu device' } },
    ],
    actions: ['fixSafe'],
  },
  {
    step: 4,
    title: STEP_TITLES[4],
    explanation: same(
      'Feed batches through the XLA device loader (MpDeviceLoader) so host-to-device copies overlap with compute, shard the data across replicas, drop the ragged last batch and pad inputs to a few fixed shapes: every new shape is a new compilation.',
    ),
    items: [{ id: 'fixed-shapes', kind: 'manual', text: 'Every batch has one of a few fixed shapes (padding or bucketing)' }],
    actions: ['fixSafe'],
  },
  {
    step: 5,
    title: STEP_TITLES[5],
    explanation: same(
      'TPUs compute in bfloat16: autocast to bf16 instead of fp16, drop the GradScaler (bf16 needs no loss scaling), avoid float64, and remove CUDA-only precision flags. Compare the loss curve with the GPU baseline.',
    ),
    items: [{ id: 'loss-matches', kind: 'manual', text: 'The bf16 loss curve matches the GPU baseline' }],
    actions: ['fixSafe'],
  },
  {
    step: 6,
    title: STEP_TITLES[6],
    explanation: same(
      'XLA traces the step into a graph and compiles it once per distinct shape and control path. Keep host reads (`.item()`, printing tensors) and data-dependent branches out of the hot loop, mark the step boundary, and replace CUDA-only kernels and fused optimizers.',
    ),
    items: [{ id: 'compiles-flat', kind: 'manual', text: 'The number of compilations stays flat after the first steps (metrics report)' }],
    actions: ['fixSafe'],
  },
  {
    step: 7,
    title: STEP_TITLES[7],
    explanation: {
      torch_xla:
        'Use the xla process-group backend and torch_xla.launch (or SPMD) instead of nccl, torchrun and DistributedDataParallel device ids; read rank and world size from the XLA runtime, and reduce gradients across replicas.',
      torchtpu:
        'Replace nccl, torchrun and DistributedDataParallel device ids with the TorchTPU preview launcher and collectives; read rank and world size from the runtime, and reduce gradients across replicas.',
    },
    items: [{ id: 'all-cores', kind: 'manual', text: 'Training runs on every TPU core (or is single-core by design)' }],
    actions: ['fixSafe'],
  },
  {
    step: 8,
    title: STEP_TITLES[8],
    explanation: {
      torch_xla:
        'Save with xm.save (moves tensors to the CPU and writes once per host), load with map_location="cpu", use distributed checkpointing for sharded models, and resume from the latest checkpoint: TPU VMs can be preempted.',
      torchtpu:
        'Move state to the CPU before saving, load with map_location="cpu", and resume from the latest checkpoint: TPU VMs can be preempted.',
    },
    items: [
      { id: 'resume', kind: 'evidence', fact: 'hasResume', text: same('Training resumes from the latest checkpoint') },
      { id: 'resume-tested', kind: 'manual', text: 'Resume was tested after stopping a run' },
    ],
    actions: ['fixSafe', 'resumeScaffold'],
  },
  {
    step: 9,
    title: STEP_TITLES[9],
    explanation: {
      torch_xla:
        'Measure on the device, not the host: time after torch_xla.sync() and xm.wait_device_ops(), read the metrics report for compilations and CPU fallbacks, and capture a profile with torch_xla.debug.profiler. Turn debug environment variables off for real runs.',
      torchtpu: 'Measure on the device, not the host: synchronise before timing, and capture a profile of a training step. Turn debug environment variables off for real runs.',
    },
    items: [
      { id: 'profiler', kind: 'evidence', fact: 'usesProfiler', text: { torch_xla: 'The code uses the XLA profiler or metrics report', torchtpu: 'The code uses a profiler' } },
      // torch_xla: a run's debug output read back (src/evidence); the preview has no reader: a tick
      { id: 'run-evidence', kind: 'evidence', fact: 'hasRunEvidence', profiles: ['torch_xla'], text: same('A profiling run newer than the code was read (.tpu-ready/runs/), with no open runtime finding') },
      { id: 'profile-captured', kind: 'manual', profiles: ['torchtpu'], text: 'A profile of a training step was captured and read' },
    ],
    actions: ['fixSafe'],
  },
  {
    step: 10,
    title: STEP_TITLES[10],
    explanation: {
      torch_xla:
        'Keep the migration from regressing: run `tpu-ready check` in CI and upload its SARIF to code scanning, seed the RNGs through torch_xla, replace deprecated torch_xla APIs, and keep a persistent compilation cache so restarts do not recompile.',
      torchtpu: 'Keep the migration from regressing: run `tpu-ready check` in CI and upload its SARIF to code scanning, seed the RNGs for the device, and cache compilations where the preview allows it.',
    },
    items: [
      { id: 'ci', kind: 'evidence', fact: 'hasCiWorkflow', text: same('A CI workflow runs tpu-ready') },
      { id: 'cache', kind: 'evidence', fact: 'hasCompileCache', text: same('A persistent compilation cache is initialised') },
    ],
    actions: ['fixSafe', 'ciWorkflow', 'compileCache'],
  },
];

export const STEP_BY_NUMBER: ReadonlyMap<number, StepDef> = new Map(STEPS.map((s) => [s.step, s]));

/** Ids of the rules whose findings block a step. */
export function rulesOfStep(step: Step): string[] {
  return RULES.filter((r) => r.step === step).map((r) => r.id);
}

export const ACTION_LABELS: Record<StepActionId, string> = {
  fixSafe: 'Fix all safe issues of this step in the workspace',
  smokeTest: 'Create TPU smoke test',
  resumeScaffold: 'Add resume-from-checkpoint scaffold',
  ciWorkflow: 'Create CI workflow',
  compileCache: 'Enable persistent compile cache',
};

export function isStep(n: unknown): n is Step {
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 10;
}
