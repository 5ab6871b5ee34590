/**
 * Evidence the checklist reads from the project beyond the findings: whether the code already uses
 * the TPU stack, has a smoke test, resumes from checkpoints, profiles, caches compilations, and runs
 * tpu-ready in CI. Pure: hosts pass the file contents in (Python sources, notebook code joined,
 * requirements and workflow files).
 */
import type { TargetProfile } from '../core/types';

export type FactKey = 'importsTpuStack' | 'usesTpuDevice' | 'pinsTpuStack' | 'hasSmokeTest' | 'hasResume' | 'usesProfiler' | 'hasCompileCache' | 'hasCiWorkflow' | 'hasRunEvidence';

export type Facts = Record<FactKey, boolean>;

export const NO_FACTS: Facts = {
  importsTpuStack: false, usesTpuDevice: false, pinsTpuStack: false, hasSmokeTest: false, hasResume: false, usesProfiler: false, hasCompileCache: false, hasCiWorkflow: false, hasRunEvidence: false,
};

export interface ProjectFile {
  /** Workspace-relative path with forward slashes. */
  path: string;
  text: string;
}

/** Files whose contents the facts depend on (hosts read only these). */
export function isFactFile(path: string): boolean {
  return /\.(py|ipynb)$/.test(path) || isWorkflow(path) || isRequirements(path);
}

function isWorkflow(path: string): boolean {
  return /(^|\/)\.github\/workflows\/[^/]+\.ya?ml$/.test(path) || /(^|\/)\.gitlab-ci\.ya?ml$/.test(path);
}

function isRequirements(path: string): boolean {
  const base = path.split('/').pop() ?? '';
  return /^requirements.*\.(txt|in)$/i.test(base) || base === 'pyproject.toml' || base === 'setup.cfg' || /^(environment|conda)[\w.-]*\.ya?ml$/i.test(base);
}

/** Marker the generated smoke test carries, so the checklist recognises it wherever it is moved. */
export const SMOKE_TEST_MARKER = 'tpu-ready: smoke test';

const XLA = {
  imports: /^\s*(import\s+torch_xla\b|from\s+torch_xla\b)/m,
  device: /\btorch_xla\.device\(|\bxm\.xla_device\(|\btorch\.device\(\s*["']xla["']|\.to\(\s*["']xla["']|device\s*=\s*["']xla["']|\baccel\.device\(/,
  pin: /^\s*["']?torch[_-]xla(\[[^\]]*\])?\s*(==|~=|>=)\s*\d/im,
  profiler: /\btorch_xla\.debug\.(profiler|metrics)\b|\bxp\.(start_server|trace|Trace|StepTrace)\b|\bmet\.(metrics_report|short_metrics_report)\(/,
  cache: /\binitialize_cache\(|XLA_PERSISTENT_CACHE_PATH/,
};
const TPU = {
  imports: /^\s*(import\s+torch_tpu\b|from\s+torch_tpu\b)/m,
  device: /\btorch\.device\(\s*["']tpu["']|\.to\(\s*["']tpu["']|device\s*=\s*["']tpu["']|\baccel\.device\(/,
  pin: /^\s*["']?torch[_-]tpu(\[[^\]]*\])?\s*(==|~=|>=)\s*\d/im,
  profiler: /\btorch\.profiler\b|\btorch_tpu\.profiler\b/,
  cache: /\binitialize_cache\(|compile_cache/,
};
const RESUME = /\b(resume|latest_checkpoint|load_checkpoint|restore_checkpoint)\w*\b[\s\S]{0,400}?\b(torch\.load|xser\.load|dcp\.load|load_state_dict)\b|\b(torch\.load|xser\.load|dcp\.load)\b[\s\S]{0,400}?\bresume\w*\b/i;

export function collectFacts(files: readonly ProjectFile[], profile: TargetProfile): Facts {
  const p = profile === 'torchtpu' ? TPU : XLA;
  const facts: Facts = { ...NO_FACTS };
  for (const f of files) {
    if (isWorkflow(f.path)) {
      if (/tpu-ready\b[^\n]*\bcheck\b/.test(f.text)) facts.hasCiWorkflow = true;
      continue;
    }
    if (isRequirements(f.path)) {
      if (p.pin.test(f.text)) facts.pinsTpuStack = true;
      continue;
    }
    if (!/\.(py|ipynb)$/.test(f.path)) continue;
    const t = f.text;
    if (p.imports.test(t)) facts.importsTpuStack = true;
    if (p.device.test(t)) facts.usesTpuDevice = true;
    if (p.profiler.test(t)) facts.usesProfiler = true;
    if (p.cache.test(t)) facts.hasCompileCache = true;
    if (t.includes(SMOKE_TEST_MARKER)) facts.hasSmokeTest = true;
    if (RESUME.test(t)) facts.hasResume = true;
  }
  return facts;
}

/** A model class the smoke test can train: the first `class X(nn.Module)` (or `torch.nn.Module`) found. */
export interface ModelRef {
  /** Python module path (`models.gpt`). */
  module: string;
  name: string;
}

export function findModel(files: readonly ProjectFile[]): ModelRef | null {
  const candidates = files.filter((f) => f.path.endsWith('.py') && !/(^|\/)(tests?|vendored|site-packages)\//.test(f.path) && !f.path.split('/').pop()!.startsWith('test_'));
  // prefer files named like models
  candidates.sort((a, b) => rank(a.path) - rank(b.path) || a.path.localeCompare(b.path));
  for (const f of candidates) {
    const m = /^class\s+([A-Za-z_]\w*)\s*\(\s*(?:torch\.)?nn\.Module\s*\)\s*:/m.exec(f.text);
    if (!m) continue;
    const module = f.path.replace(/\.py$/, '').replace(/\/__init__$/, '').split('/').join('.');
    if (!/^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/.test(module)) continue;
    return { module, name: m[1] };
  }
  return null;
}

function rank(path: string): number {
  return /model/i.test(path) ? 0 : 1;
}
