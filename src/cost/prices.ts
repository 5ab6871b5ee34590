/**
 * The hardware catalog, as data: peak dense bf16 FLOP/s, HBM capacity and bandwidth (→ ridge point),
 * interconnect bandwidths, and list prices per chip-hour by region, each with its source and as-of date
 * (/work/shared/PRICES.md, "Corrections and additions, 2026-12-01"). Users override any price in
 * .tpu-ready/cost.toml.
 */

export type HardwareId = 'v4' | 'v5e' | 'v5p' | 'v6e' | 'tpu7x' | 'a100' | 'a100-80gb' | 'h100' | 'h200' | 'b200';
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

export interface CommittedPrice {
  term: '1y' | '3y';
  usdPerChipHour: number;
  region: string;
  source: string;
  asOf: string;
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
  /** HBM bandwidth, bytes/s per chip. */
  hbmBandwidth: number;
  /** Chip-to-chip bandwidth one way, bytes/s per chip (ICI within a slice, NVLink within a GPU host); null = not in the catalog. */
  linkBandwidth: number | null;
  linkLabel: string;
  /** Network bandwidth per host between hosts, bytes/s (GPU hosts; TPU: DCN between slices). */
  hostNetwork: number | null;
  networkSource: string;
  chipsPerHost: number;
  /** TensorCores counted per chip in the slice name (v4, v5p, TPU7x: 2). */
  coresInName: 1 | 2;
  /** Chip counts a slice (or a GPU job) can have, ascending. The last is the largest single slice. */
  slices: number[];
  /** Seconds from a preemption to training again (capacity back, VM or slice up, job restarted), before recompiling. */
  restartSeconds: number;
  onDemand: Price[];
  spot: Price[];
  committed: CommittedPrice[];
  notes: string[];
}

const GiB = 2 ** 30;
const GB = 1e9;
const pow2 = (from: number, to: number) => {
  const out: number[] = [];
  for (let n = from; n <= to; n *= 2) out.push(n);
  return out;
};

export const SKY = 'SkyPilot catalog generated from the GCP billing catalog (skypilot-org/skypilot-catalog, catalogs/v9/gcp/vms.csv)';
const AS_OF = '2026-11-01';
const RECHECKED = '2026-12-01';
const TPU_DOCS = (v: string) => `Cloud TPU ${v} documentation (docs.cloud.google.com/tpu/docs/${v}, read ${RECHECKED})`;
const od = (usd: number, region: string, extra: Partial<Price> = {}): Price => ({ usdPerChipHour: usd, region, source: SKY, asOf: AS_OF, ...extra });
const sp = od;

export const HARDWARE: Record<HardwareId, Hardware> = {
  v4: {
    id: 'v4', name: 'TPU v4', kind: 'tpu', peakBf16: 275e12, peakSource: TPU_DOCS('v4'),
    hbmBytes: 32 * GiB, hbmLabel: '32 GiB', hbmBandwidth: 1200 * GB,
    linkBandwidth: null, linkLabel: 'ICI (bandwidth per chip not in the v4 docs table)', hostNetwork: null, networkSource: TPU_DOCS('v4'),
    chipsPerHost: 4, coresInName: 2, slices: pow2(4, 4096), restartSeconds: 600,
    onDemand: [od(3.22, 'us-central2')], spot: [sp(0.92, 'us-central2')], committed: [],
    notes: ['us-central2 only', 'slice names count TensorCores: v4-8 = 4 chips'],
  },
  v5e: {
    id: 'v5e', name: 'TPU v5e', kind: 'tpu', peakBf16: 197e12, peakSource: TPU_DOCS('v5e'),
    hbmBytes: 16 * GB, hbmLabel: '16 GB', hbmBandwidth: 819 * GB,
    // "Bidirectional inter-chip interconnect (ICI) bandwidth (per chip) 400 GBps"; "Per-host NIC configuration 2 x 100 Gbps NIC"
    linkBandwidth: 200 * GB, linkLabel: 'ICI 400 GB/s bidirectional per chip', hostNetwork: 25 * GB, networkSource: TPU_DOCS('v5e'),
    chipsPerHost: 8, coresInName: 1, slices: [1, 4, 8, 16, 32, 64, 128, 256], restartSeconds: 600,
    onDemand: [od(1.2, 'us-central1', { note: 'agrees with a secondary source dated 2026-01-27' }), od(1.56, 'europe-west4')],
    spot: [sp(0.217, 'northamerica-northeast1'), sp(0.298, 'us-central1'), sp(0.78, 'asia-southeast1')],
    committed: [],
    notes: ['v5litepod-N: N = chips'],
  },
  v5p: {
    id: 'v5p', name: 'TPU v5p', kind: 'tpu', peakBf16: 459e12, peakSource: TPU_DOCS('v5p'),
    hbmBytes: 95 * GiB, hbmLabel: '95 GiB', hbmBandwidth: 2765 * GB,
    // "Bidirectional ICI bandwidth per chip 1200 GBps"; "DCN bandwidth per chip 50 Gbps" × 4 chips per host
    linkBandwidth: 600 * GB, linkLabel: 'ICI 1,200 GB/s bidirectional per chip', hostNetwork: 25 * GB, networkSource: TPU_DOCS('v5p'),
    chipsPerHost: 4, coresInName: 2, slices: pow2(4, 4096), restartSeconds: 600,
    onDemand: [od(4.2, 'us-central1', { note: 'agrees with a secondary source dated 2026-01-27' })],
    spot: [sp(0.78, 'us-central1'), sp(1.61, 'europe-west1')],
    committed: [],
    notes: ['slice names count TensorCores: v5p-8 = 4 chips'],
  },
  v6e: {
    id: 'v6e', name: 'TPU v6e (Trillium)', kind: 'tpu', peakBf16: 918e12, peakSource: TPU_DOCS('v6e'),
    hbmBytes: 32 * GB, hbmLabel: '32 GB', hbmBandwidth: 1638 * GB,
    // "Bidirectional inter-chip interconnect (ICI) bandwidth (per chip) 800 GBps"
    linkBandwidth: 400 * GB, linkLabel: 'ICI 800 GB/s bidirectional per chip', hostNetwork: null, networkSource: TPU_DOCS('v6e'),
    chipsPerHost: 8, coresInName: 1, slices: [1, 4, 8, 16, 32, 64, 128, 256], restartSeconds: 600,
    onDemand: [od(2.7, 'us-central1'), od(2.97, 'europe-west4')],
    spot: [sp(0.267, 'asia-southeast1'), sp(0.345, 'us-east4'), sp(0.593, 'us-central1'), sp(1.782, 'europe-west4')],
    committed: [
      { term: '1y', usdPerChipHour: 1.89, region: 'not stated', source: 'Trillium GA announcement (Google Cloud blog, Dec 2024)', asOf: '2024-12-11' },
      { term: '3y', usdPerChipHour: 1.22, region: 'not stated', source: 'Trillium GA announcement (Google Cloud blog, Dec 2024)', asOf: '2024-12-11' },
    ],
    notes: ['v6e-N: N = chips'],
  },
  tpu7x: {
    id: 'tpu7x', name: 'TPU7x (Ironwood)', kind: 'tpu', peakBf16: 2307e12, peakSource: TPU_DOCS('tpu7x'),
    hbmBytes: 192 * GiB, hbmLabel: '192 GiB', hbmBandwidth: 7380 * GB,
    linkBandwidth: null, linkLabel: 'ICI (bandwidth per chip not in the catalog)', hostNetwork: null, networkSource: TPU_DOCS('tpu7x'),
    chipsPerHost: 4, coresInName: 2, slices: pow2(4, 8192), restartSeconds: 600,
    onDemand: [], spot: [], committed: [],
    notes: ['GKE or Compute Engine; no public price: compute-only estimate', 'slice names count TensorCores: tpu7x-8 = 4 chips'],
  },
  a100: {
    id: 'a100', name: 'NVIDIA A100 40GB', kind: 'gpu', peakBf16: 312e12, peakSource: 'NVIDIA A100 datasheet (dense bf16; 1,555 GB/s HBM2)',
    hbmBytes: 40 * GB, hbmLabel: '40 GB', hbmBandwidth: 1555 * GB,
    // NVLink 3: 600 GB/s total per GPU; a2-highgpu-8g: 100 Gbps per VM
    linkBandwidth: 300 * GB, linkLabel: 'NVLink 600 GB/s per GPU (both ways)', hostNetwork: 12.5 * GB, networkSource: 'NVIDIA A100 datasheet; GCP A2 machine types (100 Gbps per a2-highgpu-8g)',
    chipsPerHost: 8, coresInName: 1, slices: pow2(1, 4096), restartSeconds: 300,
    onDemand: [od(3.67, 'us-central1', { note: 'GPU 2.934 + a2-highgpu-1g VM 0.739' })], spot: [sp(1.93, 'us-central1')], committed: [],
    notes: [],
  },
  'a100-80gb': {
    id: 'a100-80gb', name: 'NVIDIA A100 80GB', kind: 'gpu', peakBf16: 312e12, peakSource: 'NVIDIA A100 datasheet (dense bf16; 80GB SXM: 2,039 GB/s HBM2e)',
    hbmBytes: 80 * GB, hbmLabel: '80 GB', hbmBandwidth: 2039 * GB,
    linkBandwidth: 300 * GB, linkLabel: 'NVLink 600 GB/s per GPU (both ways)', hostNetwork: 12.5 * GB, networkSource: 'NVIDIA A100 datasheet; GCP A2 ultra machine types (100 Gbps per a2-ultragpu-8g)',
    chipsPerHost: 8, coresInName: 1, slices: pow2(1, 4096), restartSeconds: 300,
    onDemand: [], spot: [], committed: [],
    notes: ['GCP a2-ultragpu: not yet priced in this catalog (set prices.a100-80gb.on-demand)'],
  },
  h100: {
    id: 'h100', name: 'NVIDIA H100 80GB', kind: 'gpu', peakBf16: 989e12, peakSource: 'NVIDIA H100 SXM datasheet (dense bf16; 3.35 TB/s HBM3)',
    hbmBytes: 80 * GB, hbmLabel: '80 GB', hbmBandwidth: 3350 * GB,
    // NVLink 4: 900 GB/s per GPU; A3 High: 8 × 200 Gbps GPU NICs = 1,600 Gbps per VM
    linkBandwidth: 450 * GB, linkLabel: 'NVLink 900 GB/s per GPU (both ways)', hostNetwork: 200 * GB, networkSource: 'NVIDIA H100 datasheet; GCP A3 High machine type (1,600 Gbps GPU network per VM)',
    chipsPerHost: 8, coresInName: 1, slices: pow2(1, 4096), restartSeconds: 300,
    onDemand: [od(5.38, 'us-central1', { note: 'GPU 4.20 + a3-highgpu-1g VM 1.18' }), od(10.98, 'us-east4', { note: 'GPU 9.80 + VM 1.18' })],
    spot: [sp(4.27, 'us-east4', { note: 'GPU 3.81 + VM 0.46; Google Spot VM pricing page lists A3-HIGH spot rates' })],
    committed: [],
    notes: ['the same catalog lists 2× different on-demand prices across US regions'],
  },
  h200: {
    id: 'h200', name: 'NVIDIA H200 141GB', kind: 'gpu', peakBf16: 989e12, peakSource: 'NVIDIA H200 datasheet (dense bf16; 4.8 TB/s HBM3e); GCP A3 Ultra',
    hbmBytes: 141 * GB, hbmLabel: '141 GB', hbmBandwidth: 4800 * GB,
    linkBandwidth: 450 * GB, linkLabel: 'NVLink 900 GB/s per GPU (both ways)', hostNetwork: 400 * GB, networkSource: 'NVIDIA H200 datasheet; GCP A3 Ultra (3,200 Gbps RDMA per VM)',
    chipsPerHost: 8, coresInName: 1, slices: pow2(1, 4096), restartSeconds: 300,
    onDemand: [], spot: [], committed: [],
    notes: ['A3 Ultra: not yet priced in this catalog (set prices.h200.on-demand)'],
  },
  b200: {
    id: 'b200', name: 'NVIDIA B200 180GB', kind: 'gpu', peakBf16: 2250e12, peakSource: 'NVIDIA B200 (HGX) datasheet (dense bf16; 8 TB/s HBM3e); GCP A4',
    hbmBytes: 180 * GB, hbmLabel: '180 GB', hbmBandwidth: 8000 * GB,
    linkBandwidth: 900 * GB, linkLabel: 'NVLink 5 1.8 TB/s per GPU (both ways)', hostNetwork: 400 * GB, networkSource: 'NVIDIA B200 datasheet; GCP A4 (3,200 Gbps RDMA per VM)',
    chipsPerHost: 8, coresInName: 1, slices: pow2(1, 4096), restartSeconds: 300,
    onDemand: [], spot: [], committed: [],
    notes: ['A4: not yet priced in this catalog (set prices.b200.on-demand)'],
  },
};

export const HARDWARE_IDS = Object.keys(HARDWARE) as HardwareId[];
export const DEFAULT_HARDWARE: HardwareId[] = ['v5e', 'v6e', 'v5p', 'a100', 'h100'];
/** On-demand list prices change rarely; spot prices "can change up to once every day" (Google Spot VM docs). */
export const STALE_AFTER_DAYS: Record<Pricing, number> = { 'on-demand': 180, spot: 7 };

/** Peak bf16 FLOP/s ÷ HBM bytes/s: the arithmetic intensity (FLOP/byte) above which a kernel is compute-bound. */
export function ridgePoint(hw: Hardware): number {
  return hw.peakBf16 / hw.hbmBandwidth;
}

const ALIASES: Record<string, HardwareId> = {
  v4: 'v4', tpuv4: 'v4', v5e: 'v5e', v5litepod: 'v5e', v5lite: 'v5e', tpuv5e: 'v5e', tpuv5lite: 'v5e', v5p: 'v5p', tpuv5p: 'v5p',
  v6e: 'v6e', trillium: 'v6e', tpuv6e: 'v6e', tpu7x: 'tpu7x', v7: 'tpu7x', v7x: 'tpu7x', ironwood: 'tpu7x',
  a100: 'a100', a10040gb: 'a100', a10080gb: 'a100-80gb', a10080: 'a100-80gb', h100: 'h100', h10080gb: 'h100', h200: 'h200', b200: 'b200',
};
export const HARDWARE_NAMES = Object.keys(ALIASES);

/**
 * `v5litepod-16`, `v6e`, `TPU v5p`, `H100`, `a100-80gb` → catalog id; slice names also give a chip count
 * (v4, v5p and TPU7x names count TensorCores, 2 per chip: v5p-8 = 4 chips; v5e and v6e names count chips).
 */
export function parseHardware(s: string): { id: HardwareId; chips?: number } | null {
  const t = s.trim().toLowerCase().replace(/\s+/g, '').replace(/_/g, '-');
  // own keys only: `constructor` or `__proto__` must not find Object.prototype's
  const alias = (k: string): HardwareId | undefined => (Object.hasOwn(ALIASES, k) ? ALIASES[k] : undefined);
  const whole = alias(t.replace(/-/g, '')) ?? alias(t.replace(/^tpu-?/, '').replace(/-/g, ''));
  if (whole) return { id: whole };
  const m = /^([a-z0-9-]+?)-(\d+)$/.exec(t);
  if (!m) return null;
  const id = alias(m[1].replace(/-/g, '')) ?? alias(m[1].replace(/^tpu-?/, '').replace(/-/g, ''));
  if (!id) return null;
  const n = Number(m[2]);
  const hw = HARDWARE[id];
  const chips = n / hw.coresInName;
  if (!Number.isInteger(chips) || chips < 1) return null;
  return { id, chips };
}

/** The slice as Google names it (v4-8 is 4 chips), or "8× H100" for GPUs. */
export function sliceName(hw: Hardware, chips: number): string {
  if (hw.kind === 'gpu') return `${chips}× ${hw.id.replace(/-80gb$/, ' 80GB').toUpperCase()}`;
  return `${hw.id}-${chips * hw.coresInName}`;
}

export function pricesOf(hw: Hardware, pricing: Pricing): Price[] {
  return pricing === 'spot' ? hw.spot : hw.onDemand;
}

/** The price in `region`, else the cheapest region's. Null when the hardware has no price for this pricing (or region). */
export function priceOf(hw: Hardware, pricing: Pricing, region?: string): Price | null {
  const list = pricesOf(hw, pricing);
  if (region) return list.find((p) => p.region === region) ?? null;
  return list.reduce<Price | null>((best, p) => (!best || p.usdPerChipHour < best.usdPerChipHour ? p : best), null);
}

/** Lowest and highest catalog price across regions. */
export function priceRange(hw: Hardware, pricing: Pricing): { min: Price; max: Price } | null {
  const list = pricesOf(hw, pricing);
  if (!list.length) return null;
  const sorted = [...list].sort((a, b) => a.usdPerChipHour - b.usdPerChipHour);
  return { min: sorted[0], max: sorted[sorted.length - 1] };
}

export const ALL_REGIONS = [...new Set(HARDWARE_IDS.flatMap((id) => [...HARDWARE[id].onDemand, ...HARDWARE[id].spot].map((p) => p.region)))].sort();

/** Whole days from `asOf` to `today` (both ISO dates). */
export function ageDays(asOf: string, today: string): number {
  return Math.floor((Date.parse(today) - Date.parse(asOf)) / 86_400_000);
}

export function staleness(price: Price, today: string, pricing: Pricing = 'on-demand'): string | null {
  const age = ageDays(price.asOf, today);
  const limit = STALE_AFTER_DAYS[pricing];
  const why = pricing === 'spot' ? ' (spot prices can change daily)' : '';
  return age > limit ? `${pricing} price as of ${price.asOf} is ${age} days old (over ${limit}${why}): re-check it and override it in .tpu-ready/cost.toml` : null;
}
