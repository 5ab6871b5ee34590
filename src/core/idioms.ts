/**
 * Replacement idioms per target profile, torch_xla version and fix style. Rules build fixes from
 * these so the three variants (torch_xla tpu-only, dual-path through the generated module, torchtpu)
 * stay in one place. A null result means "no known replacement": the rule then offers no fix.
 */
import type { AnalyzeOptions, ImportSpec } from './types';

export interface Snippet {
  text: string;
  imports: ImportSpec[];
  needsAccel: boolean;
}

const TORCH_XLA: ImportSpec = { module: 'torch_xla' };
const XM: ImportSpec = { module: 'torch_xla.core.xla_model', alias: 'xm' };
const XR: ImportSpec = { module: 'torch_xla.runtime', alias: 'xr' };
const PL: ImportSpec = { module: 'torch_xla.distributed.parallel_loader', alias: 'pl' };
const XMP: ImportSpec = { module: 'torch_xla.distributed.xla_multiprocessing', alias: 'xmp' };
const TORCH_TPU: ImportSpec = { module: 'torch_tpu' };

/** Compares "major.minor" versions. */
export function versionAtLeast(version: string, min: string): boolean {
  const [a, b] = version.split('.').map((x) => parseInt(x, 10) || 0);
  const [c, d] = min.split('.').map((x) => parseInt(x, 10) || 0);
  return a > c || (a === c && b >= d);
}

export class Idioms {
  constructor(readonly options: AnalyzeOptions) {}

  get profile() {
    return this.options.target.profile;
  }

  get dualPath(): boolean {
    return this.options.fixStyle === 'dual-path';
  }

  /** The torch_xla version the fixes target (torchtpu: the newest catalog version for shared idioms). */
  get version(): string {
    return this.profile === 'torch_xla' ? this.options.target.version : '2.9';
  }

  at(min: string): boolean {
    return versionAtLeast(this.version, min);
  }

  private accel(call: string): Snippet {
    const mod = this.options.accelModule;
    const alias = mod.split('.').pop()!;
    const spec: ImportSpec = mod.includes('.') ? { module: mod.slice(0, mod.lastIndexOf('.')), name: alias } : { module: mod };
    return { text: `${alias}.${call}`, imports: [spec], needsAccel: true };
  }

  private xla(text: string, ...imports: ImportSpec[]): Snippet {
    return { text, imports, needsAccel: false };
  }

  /** The device expression. */
  device(): Snippet {
    if (this.dualPath) return this.accel('device()');
    if (this.profile === 'torchtpu') return this.xla('torch.device("tpu")', TORCH_TPU);
    return this.at('2.3') ? this.xla('torch_xla.device()', TORCH_XLA) : this.xla('xm.xla_device()', XM);
  }

  /** The device-type string for `torch.autocast(device_type=...)` and comparisons. */
  deviceType(): Snippet {
    if (this.dualPath) return this.accel('device_type()');
    return this.xla(this.profile === 'torchtpu' ? '"tpu"' : '"xla"', this.profile === 'torchtpu' ? TORCH_TPU : TORCH_XLA);
  }

  /** The step barrier statement, or null when the profile has no known one. */
  sync(): Snippet | null {
    if (this.dualPath) return this.accel('sync()');
    if (this.profile === 'torchtpu') return null;
    return this.at('2.4') ? this.xla('torch_xla.sync()', TORCH_XLA) : this.xla('xm.mark_step()', XM);
  }

  /** Waits for queued device work (benchmark timing). */
  waitDeviceOps(): Snippet | null {
    if (this.dualPath) return this.accel('sync(wait=True)');
    if (this.profile === 'torchtpu') return null;
    const barrier = this.at('2.4') ? 'torch_xla.sync()' : 'xm.mark_step()';
    return this.xla(`${barrier}; xm.wait_device_ops()`, TORCH_XLA, XM);
  }

  optimizerStep(opt: string, barrier = false): Snippet | null {
    if (this.dualPath) return this.accel(`optimizer_step(${opt}${barrier ? ', barrier=True' : ''})`);
    if (this.profile === 'torchtpu') return null;
    return this.xla(`xm.optimizer_step(${opt}${barrier ? ', barrier=True' : ''})`, XM);
  }

  wrapLoader(loader: string, device: string): Snippet | null {
    if (this.dualPath) return this.accel(`wrap_loader(${loader}, ${device})`);
    if (this.profile === 'torchtpu') return null;
    return this.xla(`pl.MpDeviceLoader(${loader}, ${device})`, PL);
  }

  /**
   * `with <autocast>:` context expression for bf16 mixed precision. Dual-path: `accel.autocast(...)`, which the
   * caller gives the replaced call's `dtype=`/`enabled=`/`device_type=`/`cache_enabled=`: off XLA it is exactly
   * `torch.autocast(device_type, ...)` of the original (float16 stays float16 on CUDA), bf16 on XLA.
   */
  autocast(): Snippet {
    if (this.dualPath) return this.accel('autocast()');
    if (this.profile === 'torchtpu') return this.xla('torch.autocast("tpu", dtype=torch.bfloat16)', TORCH_TPU);
    return this.xla('torch.autocast("xla", dtype=torch.bfloat16)', TORCH_XLA);
  }

  /** Checkpoint write of CPU copies; `path` may carry `, master_only=False` (a writer the caller's rank guard already picks). */
  save(obj: string, path: string): Snippet | null {
    if (this.dualPath) return this.accel(`save(${obj}, ${path})`);
    if (this.profile === 'torchtpu') return null;
    return this.xla(`xm.save(${obj}, ${path})`, XM);
  }

  /**
   * Starts `fn(index, *args)` per device. `nprocs`: the replaced launcher's process count; dual-path passes it on so that
   * CPU/CUDA start as many processes as before (`accel.launch` ignores it on XLA, where torch_xla.launch / xmp.spawn take
   * one process per device: xmp.spawn accepts only None or 1).
   */
  launch(fn: string, args: string | null, extra = '', nprocs?: string): Snippet | null {
    const argText = args ? `, args=${args}` : '';
    if (this.dualPath) return this.accel(`launch(${fn}${argText}${nprocs ? `, nprocs=${nprocs}` : ''}${extra})`);
    if (this.profile === 'torchtpu') return null;
    return this.at('2.5') ? this.xla(`torch_xla.launch(${fn}${argText}${extra})`, TORCH_XLA) : this.xla(`xmp.spawn(${fn}${argText}${extra})`, XMP);
  }

  worldSize(): Snippet | null {
    if (this.dualPath) return this.accel('world_size()');
    if (this.profile === 'torchtpu') return null;
    return this.xla('xr.world_size()', XR);
  }

  rank(): Snippet | null {
    if (this.dualPath) return this.accel('rank()');
    if (this.profile === 'torchtpu') return null;
    return this.xla('xr.global_ordinal()', XR);
  }

  localRank(): Snippet | null {
    if (this.dualPath) return this.accel('local_rank()');
    if (this.profile === 'torchtpu') return null;
    return this.xla('xr.local_ordinal()', XR);
  }

  isXla(): Snippet {
    if (this.dualPath) return this.accel('is_xla()');
    return this.xla('True');
  }

  manualSeed(seed: string): Snippet | null {
    if (this.dualPath) return this.accel(`manual_seed(${seed})`);
    if (this.profile === 'torchtpu') return null;
    // torch_xla.manual_seed from torch_xla/torch_xla.py v2.5.0:200; before, xm.set_rng_state (xla_model.py v2.3.0:1387)
    return this.at('2.5') ? this.xla(`torch_xla.manual_seed(${seed})`, TORCH_XLA) : this.xla(`xm.set_rng_state(${seed})`, XM);
  }

  /** Runs `fn(*args)` after the step's graph executed (host reads without a mid-step sync). */
  stepClosure(fn: string, args: string): Snippet | null {
    if (this.dualPath) return this.accel(`add_step_closure(${fn}, args=${args})`);
    if (this.profile === 'torchtpu') return null;
    return this.xla(`xm.add_step_closure(${fn}, args=${args})`, XM);
  }

  isMaster(): Snippet | null {
    if (this.dualPath) return this.accel('is_master()');
    if (this.profile === 'torchtpu') return null;
    return this.xla('xm.is_master_ordinal(local=False)', XM);
  }

  /** Persistent compilation cache initialisation statement. */
  initializeCache(path: string): Snippet | null {
    if (this.dualPath) return this.accel(`initialize_cache(${path})`);
    if (this.profile === 'torchtpu') return null;
    return this.xla(`xr.initialize_cache(${path}, readonly=False)`, XR);
  }

  /**
   * A torch_xla-only snippet with no dual-path or torchtpu variant. Null outside the torch_xla
   * profile and in dual-path style, where importing torch_xla unconditionally would break CUDA runs.
   */
  xlaOnly(text: string, ...imports: ImportSpec[]): Snippet | null {
    if (this.profile !== 'torch_xla' || this.dualPath) return null;
    return this.xla(text, ...imports);
  }

  /** A torch_xla snippet offered in both fix styles (the construct is already XLA-specific code). */
  xlaAlways(text: string, ...imports: ImportSpec[]): Snippet | null {
    if (this.profile !== 'torch_xla') return null;
    return this.xla(text, ...imports);
  }

  static readonly imports = { TORCH_XLA, XM, XR, PL, XMP, TORCH_TPU };
}
