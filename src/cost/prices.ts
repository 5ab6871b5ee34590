/**
 * The hardware catalog, as data: peak dense bf16 FLOP/s, HBM, and list prices per chip-hour with their
 * source and as-of date (../shared/PRICES.md). Users override any price in .tpu-ready/cost.toml.
 */

export type HardwareId = 'v4' | 'v5e' | 'v5p' | 'v6e' | 'tpu7x' | 'a100' | 'h100';
export type Pricing = 'on-demand' | 'spot';

export interface Price {
  /** USD per chip-hour (GPUs: per GPU-hour including its share of the host VM). */
  usdPerChipHour: number;
  region: string;
  source: string;
  /** ISO date the price was read. */
  asOf: string;
  note?: string;
  unverified?: boolean;
}

export interface Hardware {
  id: HardwareId;
  name: string;
  kind: 'tpu' | 'gpu';
  /** Peak dense bf16 FLOP/s per chip. */
  peakBf16: number;
  peakSource: string;
  hbmBytes: number;
  hbmLabel: string;
  chipsPerHost: number;
  /** Chip counts a slice (or a GPU job) can have, ascending. */
  slices: number[];
  onDemand: Price | null;
  spot: Price | null;
  notes: string[];
}

const GiB = 2 ** 30;
const GB = 1e9;
const pow2 = (from: number, to: number) => {
  const out: number[] = [];
  for (let n = from; n <= to; n *= 2) out.push(n);
  return out;
};

const SKY = 'SkyPilot catalog generated from the GCP billing catalog (skypilot-org/skypilot-catalog, catalogs/v9/gcp/vms.csv)';
const AS_OF = '2026-11-01';

export const HARDWARE: Record<HardwareId, Hardware> = {
  v4: {
    id: 'v4', name: 'TPU v4', kind: 'tpu', peakBf16: 275e12, peakSource: 'commonly quoted Cloud TPU v4 figure',
    hbmBytes: 32 * GiB, hbmLabel: '32 GiB', chipsPerHost: 4, slices: pow2(4, 4096),
    onDemand: { usdPerChipHour: 3.22, region: 'us-central2', source: SKY, asOf: AS_OF },
    spot: { usdPerChipHour: 0.92, region: 'us-central2', source: SKY, asOf: AS_OF },
    notes: ['us-central2 only', 'slice names count TensorCores: v4-8 = 4 chips'],
  },
  v5e: {
    id: 'v5e', name: 'TPU v5e', kind: 'tpu', peakBf16: 197e12, peakSource: 'Cloud TPU v5e documentation',
    hbmBytes: 16 * GB, hbmLabel: '16 GB', chipsPerHost: 8, slices: [1, 4, 8, 16, 32, 64, 128, 256],
    onDemand: { usdPerChipHour: 1.2, region: 'us-central1', source: SKY, asOf: AS_OF, note: '1.56 in europe-west4; agrees with a secondary source dated 2026-01-27' },
    spot: { usdPerChipHour: 0.298, region: 'us-central1', source: SKY, asOf: AS_OF },
    notes: ['v5litepod-N: N = chips'],
  },
  v5p: {
    id: 'v5p', name: 'TPU v5p', kind: 'tpu', peakBf16: 459e12, peakSource: 'Cloud TPU v5p documentation',
    hbmBytes: 95 * GiB, hbmLabel: '95 GiB', chipsPerHost: 4, slices: pow2(4, 4096),
    onDemand: { usdPerChipHour: 4.2, region: 'us-central1', source: SKY, asOf: AS_OF, note: 'agrees with a secondary source dated 2026-01-27' },
    spot: { usdPerChipHour: 0.78, region: 'us-central1', source: SKY, asOf: AS_OF },
    notes: ['slice names count TensorCores: v5p-8 = 4 chips'],
  },
  v6e: {
    id: 'v6e', name: 'TPU v6e (Trillium)', kind: 'tpu', peakBf16: 918e12, peakSource: 'Cloud TPU v6e documentation',
    hbmBytes: 32 * GB, hbmLabel: '32 GB', chipsPerHost: 8, slices: [1, 4, 8, 16, 32, 64, 128, 256],
    onDemand: { usdPerChipHour: 2.7, region: 'us-central1', source: SKY, asOf: AS_OF, note: '2.97 in europe-west4' },
    spot: { usdPerChipHour: 0.593, region: 'us-central1', source: SKY, asOf: AS_OF },
    notes: ['v6e-N: N = chips'],
  },
  tpu7x: {
    id: 'tpu7x', name: 'TPU7x (Ironwood)', kind: 'tpu', peakBf16: 2307e12, peakSource: 'Cloud TPU7x documentation',
    hbmBytes: 192 * GiB, hbmLabel: '192 GiB', chipsPerHost: 4, slices: pow2(4, 8192),
    onDemand: null, spot: null,
    notes: ['preview, GKE only: no public price, compute-only estimate'],
  },
  a100: {
    id: 'a100', name: 'NVIDIA A100 40GB', kind: 'gpu', peakBf16: 312e12, peakSource: 'NVIDIA A100 datasheet (dense bf16)',
    hbmBytes: 40 * GB, hbmLabel: '40 GB', chipsPerHost: 8, slices: pow2(1, 4096),
    onDemand: { usdPerChipHour: 3.67, region: 'us-central1', source: SKY, asOf: AS_OF, note: 'GPU 2.934 + a2-highgpu-1g VM 0.739' },
    spot: { usdPerChipHour: 1.93, region: 'us-central1', source: SKY, asOf: AS_OF },
    notes: [],
  },
  h100: {
    id: 'h100', name: 'NVIDIA H100 80GB', kind: 'gpu', peakBf16: 989e12, peakSource: 'NVIDIA H100 SXM datasheet (dense bf16)',
    hbmBytes: 80 * GB, hbmLabel: '80 GB', chipsPerHost: 8, slices: pow2(1, 4096),
    onDemand: { usdPerChipHour: 5.38, region: 'us-central1', source: SKY, asOf: AS_OF, note: 'about: GPU 4.20 + a3-highgpu-1g VM 1.18', unverified: true },
    spot: null,
    notes: ['the catalog is inconsistent across regions: price unverified'],
  },
};

export const HARDWARE_IDS = Object.keys(HARDWARE) as HardwareId[];
export const DEFAULT_HARDWARE: HardwareId[] = ['v5e', 'v6e', 'v5p', 'a100', 'h100'];
export const STALE_AFTER_DAYS = 180;

const ALIASES: Record<string, HardwareId> = {
  v4: 'v4', tpuv4: 'v4', v5e: 'v5e', v5litepod: 'v5e', v5lite: 'v5e', tpuv5e: 'v5e', v5p: 'v5p', tpuv5p: 'v5p',
  v6e: 'v6e', trillium: 'v6e', tpuv6e: 'v6e', tpu7x: 'tpu7x', v7: 'tpu7x', v7x: 'tpu7x', ironwood: 'tpu7x',
  a100: 'a100', h100: 'h100',
};

/** `v5litepod-16`, `v6e`, `TPU v5p`, `H100` → catalog id; accelerator types also give a chip count. */
export function parseHardware(s: string): { id: HardwareId; chips?: number } | null {
  const t = s.trim().toLowerCase().replace(/\s+/g, '').replace(/_/g, '-');
  const m = /^([a-z0-9-]+?)(?:-(\d+))?$/.exec(t);
  if (!m) return null;
  // own keys only: `constructor` or `__proto__` must not find Object.prototype's
  const alias = (k: string): HardwareId | undefined => (Object.hasOwn(ALIASES, k) ? ALIASES[k] : undefined);
  const id = alias(m[1].replace(/-/g, '')) ?? alias(m[1].replace(/^tpu-?/, '').replace(/-/g, ''));
  if (!id) return null;
  if (!m[2]) return { id };
  const n = Number(m[2]);
  // v4 and v5p suffixes count TensorCores (2 per chip); v5e, v6e suffixes count chips
  return { id, chips: id === 'v4' || id === 'v5p' ? n / 2 : n };
}

/** The slice as Google names it (v4-8 is 4 chips), or "8× H100" for GPUs. */
export function sliceName(hw: Hardware, chips: number): string {
  if (hw.kind === 'gpu') return `${chips}× ${hw.id.toUpperCase()}`;
  if (hw.id === 'v4' || hw.id === 'v5p') return `${hw.id}-${chips * 2}`;
  return `${hw.id}-${chips}`;
}

export function priceOf(hw: Hardware, pricing: Pricing): Price | null {
  return pricing === 'spot' ? hw.spot : hw.onDemand;
}

/** Whole days from `asOf` to `today` (both ISO dates). */
export function ageDays(asOf: string, today: string): number {
  return Math.floor((Date.parse(today) - Date.parse(asOf)) / 86_400_000);
}

export function staleness(price: Price, today: string): string | null {
  const age = ageDays(price.asOf, today);
  return age > STALE_AFTER_DAYS ? `price as of ${price.asOf} is ${age} days old (over ${STALE_AFTER_DAYS}): re-check it and override it in .tpu-ready/cost.toml` : null;
}
