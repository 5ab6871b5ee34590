/**
 * Throughput per hardware and model: achievable MFU from the arithmetic intensity of the model's dense
 * matmuls against the chip's ridge point, calibrated to public anchor runs; and the communication a
 * data-parallel step exposes (gradient all-reduce over ICI, NVLink or the host network).
 *
 * Arithmetic intensity (FLOP/byte) of one transformer block's matmuls at m = micro-batch × sequence tokens,
 * bf16 (2 bytes per element), weights W = 4d² + 2·d·f (QKV, output, MLP up and down):
 *   FLOPs = 2·m·W;  bytes = 2·(W + m·(8d + 2f))  (every weight once, every activation in and out)
 *   AI    = m·W ÷ (W + m·(8d + 2f))              → 0.75·d for f = 4d and large m (576 for d = 768)
 * Soft roofline with x = AI ÷ ridge (ridge = peak bf16 ÷ HBM bandwidth):
 *   MFU = η × x ÷ (x + κ)
 * The non-matmul work (norms, softmax, activations, optimizer) moves bytes in proportion to the activations
 * while the matmuls' FLOPs grow with d: κ folds that share in, η is the ceiling of the software stack.
 * η and κ are fitted by hand to the anchors below (TPU: v6e GPT-2 124M ≈ 23% and MaxText 16B on v5e ≈ 58%,
 * 32B on v5p ≈ 70%; GPU: llm.c GPT-2 124M on H100 ≈ 40%); the nearest anchor on the same hardware then pulls
 * the estimate to what was measured, less the further the model is from it, and the band widens with that
 * distance (and more when the hardware has no anchor at all).
 */
import { HARDWARE, ridgePoint, type Hardware, type HardwareId } from './prices';

export interface Anchor {
  hardware: HardwareId;
  what: string;
  /** Model width and MLP width of the measured run, and its micro-batch × sequence tokens per chip. */
  dModel: number;
  ffn: number;
  tokensPerMicroBatch: number;
  /** Measured MFU range (end to end, wall clock). */
  mfu: [number, number];
  source: string;
  date: string;
}

/** Public runs, with how each MFU follows from what was published. */
export const ANCHORS: Anchor[] = [
  {
    hardware: 'v6e', what: 'GPT-2 124M (modded-nanoGPT ported to JAX) on v6e-8: ≈ 23% MFU, bound by HBM bandwidth',
    dModel: 768, ffn: 3072, tokensPerMicroBatch: 64 * 1024, mfu: [0.21, 0.25],
    source: 'nor-blog.pages.dev/posts/2025-08-21-modded-nanogpt-jax (also cited by vorushin.github.io, 2026-02-22)', date: '2025-08-21',
  },
  {
    hardware: 'a100', what: 'GPT-2 124M (nanoGPT) on 8× A100 40GB: ~300B tokens in "about 4 days" → 0.87M tokens/s × 8.55e8 FLOPs/token ÷ (8 × 312e12) ≈ 29% (3.5–4.5 days: 26–33%)',
    dModel: 768, ffn: 3072, tokensPerMicroBatch: 12 * 1024, mfu: [0.25, 0.33],
    source: 'karpathy/nanoGPT README ("about 4 days" on one 8XA100 40GB node)', date: 'read 2026-12-01',
  },
  {
    hardware: 'a100-80gb', what: 'GPT-2 124M (llm.c) on 8× A100 80GB: 10B tokens in ~90 min → 1.85M tokens/s × 8.6e8 FLOPs/token ÷ (8 × 312e12) ≈ 60–64%',
    dModel: 768, ffn: 3072, tokensPerMicroBatch: 64 * 1024, mfu: [0.55, 0.65],
    source: "Karpathy, 'Reproducing GPT-2 (124M) in llm.c in 90 minutes for $20' (karpathy/llm.c discussion #481)", date: '2024-05-28',
  },
  {
    hardware: 'h100', what: 'GPT-2 124M (llm.c) on 8× H100: 10B tokens in ~45 min → 3.7M tokens/s × 8.6e8 FLOPs/token ÷ (8 × 989e12) ≈ 40%',
    dModel: 768, ffn: 3072, tokensPerMicroBatch: 64 * 1024, mfu: [0.36, 0.44],
    source: 'KellerJordan/modded-nanogpt README (the llm.c baseline: 45 minutes on 8× H100)', date: 'read 2026-12-01',
  },
  {
    hardware: 'v5e', what: 'MaxText 16B (d 4096, MLP 28,672, 6 × 2048 tokens per chip) on 1–32 × v5e-256: 54.7–61.1% MFU',
    dModel: 4096, ffn: 28672, tokensPerMicroBatch: 6 * 2048, mfu: [0.546, 0.611],
    source: 'AI-Hypercomputer/maxtext MaxText/configs/v5e/README.md and 16b.sh', date: 'read 2026-12-01',
  },
  {
    hardware: 'v5p', what: 'MaxText 32B (d 8192, MLP 28,672) on 1–2 × v5p-128: 69.4–71.5% MFU',
    dModel: 8192, ffn: 28672, tokensPerMicroBatch: 4 * 2048, mfu: [0.694, 0.715],
    source: 'AI-Hypercomputer/maxtext MaxText/configs/v5p/README.md', date: 'read 2026-12-01',
  },
];

/** Hand-fitted to the anchors (see the header). */
export const CURVE: Record<'tpu' | 'gpu', { eta: number; kappa: number }> = {
  tpu: { eta: 0.7, kappa: 2.1 },
  gpu: { eta: 0.6, kappa: 1.0 },
};
/** No public training run sustains more. */
export const MFU_CEILING = 0.75;

export function matmulIntensity(dModel: number, ffn: number, tokensPerMicroBatch: number): number {
  const d = dModel;
  const f = ffn;
  const m = tokensPerMicroBatch;
  const W = 4 * d * d + 2 * d * f;
  return (m * W) / (W + m * (8 * d + 2 * f));
}

export function curveMfu(hw: Hardware, intensity: number): number {
  const { eta, kappa } = CURVE[hw.kind];
  const x = intensity / ridgePoint(hw);
  return (eta * x) / (x + kappa);
}

export interface MfuEstimate {
  mfu: number;
  low: number;
  high: number;
  intensity: number;
  ridge: number;
  /** Roofline model before calibration. */
  curve: number;
  anchor: Anchor | null;
  /** |ln(d ÷ d_anchor)|: how far the model is from the anchor it is calibrated to. */
  distance: number | null;
  /** Human-readable derivation. */
  formula: string;
}

/**
 * Expected MFU and its band for a model of width `dModel` (MLP `ffn`) at `tokensPerMicroBatch` tokens
 * per chip on `hwId`.
 */
export function estimateMfu(hwId: HardwareId, dModel: number, ffn: number, tokensPerMicroBatch: number): MfuEstimate {
  const hw = HARDWARE[hwId];
  const ai = matmulIntensity(dModel, ffn, tokensPerMicroBatch);
  const ridge = ridgePoint(hw);
  const curve = curveMfu(hw, ai);
  const dist = (a: Anchor) => Math.abs(Math.log(dModel / a.dModel));
  const nearest = (list: Anchor[]) => list.reduce<Anchor | null>((b, a) => (!b || dist(a) < dist(b) ? a : b), null);
  const own = nearest(ANCHORS.filter((a) => a.hardware === hwId));
  let mfu = curve;
  let width: number;
  let why: string;
  if (own) {
    const mid = (own.mfu[0] + own.mfu[1]) / 2;
    const atAnchor = curveMfu(hw, matmulIntensity(own.dModel, own.ffn, own.tokensPerMicroBatch));
    const w = Math.exp(-dist(own));
    mfu = curve * (mid / atAnchor) ** w;
    width = Math.max(Math.log(own.mfu[1] / own.mfu[0]) / 2, 0.1) + 0.2 * dist(own);
    why = `calibrated to ${own.what} (${own.source}, ${own.date}) with weight e^−${dist(own).toFixed(2)} = ${w.toFixed(2)}`;
  } else {
    const kin = nearest(ANCHORS.filter((a) => HARDWARE[a.hardware].kind === hw.kind));
    const dk = kin ? dist(kin) : 2;
    width = 0.1 + 0.2 * dk + 0.25;
    why = `no public anchor run on ${hw.name}: roofline curve only, band widened`;
  }
  mfu = Math.min(mfu, MFU_CEILING);
  const low = mfu * Math.exp(-width);
  const high = Math.min(MFU_CEILING, mfu * Math.exp(width));
  const formula = `AI ${ai.toFixed(0)} FLOP/byte (d ${dModel}, MLP ${ffn}, ${Math.round(tokensPerMicroBatch)} tokens per micro-batch) ÷ ridge ${ridge.toFixed(0)} = ${(ai / ridge).toFixed(2)}; `
    + `${CURVE[hw.kind].eta} × x ÷ (x + ${CURVE[hw.kind].kappa}) = ${(curve * 100).toFixed(1)}%; ${why}; band ×/÷ ${Math.exp(width).toFixed(2)}`;
  return { mfu, low, high, intensity: ai, ridge, curve, anchor: own, distance: own ? dist(own) : null, formula };
}

export interface CommInput {
  hw: Hardware;
  chips: number;
  /** Bytes of gradients all-reduced per optimizer step. */
  gradBytes: number;
  /** Compute seconds of one optimizer step (all micro-batches). */
  stepSeconds: number;
}

export interface Comm {
  /** Seconds per step on the chip-to-chip links and between hosts. */
  linkSeconds: number;
  networkSeconds: number;
  /** Seconds per step not hidden behind the backward pass. */
  exposedSeconds: number;
  hosts: number;
  formula: string;
  warning: string | null;
}

/**
 * Ring all-reduce per step: each chip sends and receives 2(n−1)/n × G bytes. TPU chips of one slice talk over
 * ICI (multi-host slices included); GPUs over NVLink inside a host, and between hosts over the host network
 * (hierarchical: each host carries 2(h−1)/h × G). TPU jobs larger than one slice go over DCN between slices.
 * The all-reduce overlaps the backward pass (≈ 2/3 of the step), so only what exceeds it is exposed: the
 * anchor runs' MFU already includes what they exposed.
 */
export function communication(c: CommInput): Comm {
  const { hw, chips, gradBytes: G, stepSeconds } = c;
  if (chips <= 1) return { linkSeconds: 0, networkSeconds: 0, exposedSeconds: 0, hosts: 1, formula: 'one chip: no all-reduce', warning: null };
  const maxSlice = hw.slices[hw.slices.length - 1];
  const hosts = Math.max(1, Math.ceil(chips / hw.chipsPerHost));
  let inner: number; // chips in one ring over the fast links
  let groups: number; // groups joined over the slower network
  if (hw.kind === 'tpu') {
    inner = Math.min(chips, maxSlice);
    groups = Math.ceil(chips / maxSlice);
  } else {
    inner = Math.min(chips, hw.chipsPerHost);
    groups = hosts;
  }
  const warnings: string[] = [];
  let linkSeconds = 0;
  if (inner > 1) {
    if (hw.linkBandwidth) linkSeconds = ((2 * (inner - 1)) / inner) * G / hw.linkBandwidth;
    else warnings.push(`${hw.name}: chip-to-chip bandwidth not in the catalog, all-reduce assumed hidden`);
  }
  let networkSeconds = 0;
  if (groups > 1) {
    if (hw.hostNetwork) networkSeconds = ((2 * (groups - 1)) / groups) * G / hw.hostNetwork;
    else warnings.push(`${hw.name}: network bandwidth between ${hw.kind === 'tpu' ? 'slices' : 'hosts'} not in the catalog, all-reduce across them assumed hidden`);
  }
  const total = linkSeconds + networkSeconds;
  const exposedSeconds = Math.max(0, total - (2 / 3) * stepSeconds);
  const gb = (G / 1e9).toPrecision(3);
  const formula = `${gb} GB of gradients: ring 2(n−1)/n × G over ${hw.linkLabel} (${(linkSeconds * 1000).toPrecision(3)} ms)`
    + (groups > 1 ? ` + ${groups} ${hw.kind === 'tpu' ? 'slices over DCN' : 'hosts over the host network'} (${(networkSeconds * 1000).toPrecision(3)} ms)` : '')
    + ` − 2/3 of the ${(stepSeconds * 1000).toPrecision(3)} ms step it overlaps = ${(exposedSeconds * 1000).toPrecision(3)} ms exposed per step`;
  return { linkSeconds, networkSeconds, exposedSeconds, hosts, formula, warning: warnings.join('; ') || null };
}
