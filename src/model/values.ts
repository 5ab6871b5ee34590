/**
 * Abstract values of the program model (issue 9): what an expression evaluates to, as far as the rules need to
 * know. Each value keeps the node it came from (`origin`) so that related locations can be reported later.
 */
import type { Node } from '../core/parse';

/** Where a device lives: CUDA, XLA, the CPU, or chosen at run time (`"cuda" if cuda.is_available() else "cpu"`). */
export type DeviceKind = 'cuda' | 'xla' | 'cpu' | 'runtime' | 'unknown';

interface Base {
  /** The expression the value was computed from (for related locations). */
  readonly origin: Node | null;
}

/**
 * A tensor. `where: 'device'` is an accelerator tensor (or one that becomes one after the migration: a batch of a
 * DataLoader); `'host'` a CPU tensor or NumPy array. `weak`: known by a naming or context convention only (a
 * parameter of a hot function), not by a value flow.
 */
export interface TensorValue extends Base {
  readonly kind: 'tensor';
  readonly where: 'device' | 'host';
  readonly device: DeviceKind;
  readonly dtype?: string;
  readonly weak?: boolean;
  /** What a loader yields: a tensor or a tuple/dict of them (unpacking or indexing it reads nothing). */
  readonly batch?: boolean;
  /**
   * A host-generated tensor: its contents are made on the host from no program data, by a host RNG (`'random'`:
   * `np.random.normal(...)`, `torch.rand(...)` without `device=`) or a constant factory (`'constant'`: `torch.ones(n, 1)`),
   * also after a wrap (`torch.from_numpy`, `torch.FloatTensor`, `Variable`). The device could make it itself.
   */
  readonly generated?: 'random' | 'constant';
}
/** A Python int or float: `.item()`, `len()`, shape ints, counters, `time.time()`. */
export interface NumberValue extends Base {
  readonly kind: 'number';
  /** The constant, when one literal is known. */
  readonly value?: number;
  /** `LOCAL_RANK`, `args.local_rank`, `dist.get_rank()`: a rank, possibly with a sentinel (`-1`). */
  readonly rank?: boolean;
}
export interface StringValue extends Base {
  readonly kind: 'string';
  /** Literal contents when known (all candidates when a join left several). */
  readonly values: readonly string[];
}
export interface DtypeValue extends Base {
  readonly kind: 'dtype';
  /** Canonical torch name (`float16`, `bfloat16`, `float64`, …); null: a dtype, which one unknown. */
  readonly name: string | null;
}
export interface BoolValue extends Base {
  readonly kind: 'bool';
}
export interface DeviceValue extends Base {
  readonly kind: 'device';
  readonly device: DeviceKind;
  /** The devices a run-time choice picks among (`torch.device("cuda" if cuda.is_available() else "cpu")`). */
  readonly kinds?: readonly DeviceKind[];
}
export interface LoaderValue extends Base {
  readonly kind: 'loader';
  /** A torch DataLoader yields host batches that the loop moves; MpDeviceLoader yields XLA tensors. */
  readonly device: DeviceKind;
  /** One sample of the dataset it batches (a project Dataset's `__getitem__` return), when known. */
  readonly item?: Value;
}
export interface ModuleValue extends Base {
  readonly kind: 'module';
}
/** A list/tuple/generator/shape: `items` when the elements are known by position, `elem` their join. */
export interface SeqValue extends Base {
  readonly kind: 'seq';
  readonly items?: readonly Value[];
  readonly elem: Value;
  /** `x.shape` / `x.size()`: a torch.Size (its ints are static). */
  readonly shape?: boolean;
}
export interface DictValue extends Base {
  readonly kind: 'dict';
  readonly entries: ReadonlyMap<string, Value>;
}
/** The namespace `parser.parse_args()` returns. */
export interface ArgsValue extends Base {
  readonly kind: 'args';
}
export interface NoneValue extends Base {
  readonly kind: 'none';
}
/**
 * Nothing the rules can use. Two elements of the join lattice read as `unknown` by every query: `UNKNOWN` (bottom:
 * the model has no information, e.g. an unresolved call or a parameter no call site fills; it adds nothing to a
 * join) and `CONFLICT` (top, `conflict: true`: the paths give values of incompatible kinds, a tensor on one and a
 * dict on another; every join with it stays top).
 */
export interface UnknownValue extends Base {
  readonly kind: 'unknown';
  readonly conflict?: true;
}

export type Value =
  | TensorValue | NumberValue | StringValue | DtypeValue | BoolValue | DeviceValue | LoaderValue | ModuleValue
  | SeqValue | DictValue | ArgsValue | NoneValue | UnknownValue;

export const UNKNOWN: UnknownValue = Object.freeze({ kind: 'unknown', origin: null });
/** Top of the join lattice: values of incompatible kinds met (see `UnknownValue`). */
export const CONFLICT: UnknownValue = Object.freeze({ kind: 'unknown', origin: null, conflict: true });

export const unknown = (): Value => UNKNOWN;
export const num = (origin: Node | null, extra: { value?: number; rank?: boolean } = {}): NumberValue => ({ kind: 'number', origin, ...extra });
export const bool = (origin: Node | null): BoolValue => ({ kind: 'bool', origin });
export const str = (origin: Node | null, values: readonly string[]): StringValue => ({ kind: 'string', origin, values });
export const none = (origin: Node | null): NoneValue => ({ kind: 'none', origin });
export const deviceTensor = (origin: Node | null, device: DeviceKind = 'unknown', extra: { dtype?: string; weak?: boolean; batch?: boolean } = {}): TensorValue => ({
  kind: 'tensor', where: 'device', device, origin, ...extra,
});
export const hostTensor = (origin: Node | null, extra: { dtype?: string; generated?: 'random' | 'constant' } = {}): TensorValue => ({ kind: 'tensor', where: 'host', device: 'cpu', origin, ...extra });
export const seq = (origin: Node | null, elem: Value, items?: readonly Value[], shape?: boolean): SeqValue => ({ kind: 'seq', origin, elem, items, shape });

/** The device a string names: `"cuda"`, `"cuda:0"`, `f"cuda:{rank}"`, `"xla"`, `"cpu"`, `"mps"`. */
export function deviceOfString(s: string): DeviceKind | null {
  if (/^cuda(:\d+|:\{[^}]*\}|:%[ds]|:)?$/.test(s) || /^cuda:\{/.test(s)) return 'cuda';
  if (/^xla(:\d+)?$/.test(s) || s === 'tpu') return 'xla';
  if (s === 'cpu') return 'cpu';
  return null;
}

function joinDevice(a: DeviceKind, b: DeviceKind): DeviceKind {
  if (a === b) return a;
  if (a === 'unknown') return b;
  if (b === 'unknown') return a;
  return 'runtime';
}

/** The device a value names (a device, a device string, a rank int: `x.to(local_rank)` is CUDA), else null. */
export function deviceOf(v: Value): DeviceKind | null {
  if (v.kind === 'device') return v.device;
  if (v.kind === 'string') {
    const kinds = v.values.map(deviceOfString);
    if (!kinds.length || kinds.some((k) => k === null)) return null;
    return kinds.reduce<DeviceKind>((a, b) => joinDevice(a, b!), kinds[0]!);
  }
  return null;
}

/** The devices a value may name: each arm of a run-time choice (`["cuda", "cpu"]`), or [] when it names none. */
export function deviceKinds(v: Value): readonly DeviceKind[] {
  if (v.kind === 'device') return v.kinds ?? [v.device];
  if (v.kind === 'string') {
    // a choice among CUDA and another backend (`arg = "cuda:0" … "mps" … "cpu"`) still names CUDA on one path
    const kinds = v.values.map((s) => deviceOfString(s) ?? (OTHER_DEVICE.test(s) ? 'unknown' : null));
    if (!kinds.length || kinds.some((k) => k === null)) return [];
    return [...new Set(kinds as DeviceKind[])];
  }
  return [];
}

/** Device strings of backends the model does not track (Apple MPS, Intel XPU, Habana HPU, meta tensors). */
const OTHER_DEVICE = /^(mps|xpu|hpu|npu|ipu|meta|vulkan)(:\d+)?$/;

/**
 * The join of two values bound to one name on different paths (may-analysis), a join semilattice: commutative,
 * associative and idempotent up to `origin` (the first operand's is kept) and the order of candidate lists
 * (test/values.test.ts checks the laws on random values).
 * - `UNKNOWN` (no information) is the bottom: `join(UNKNOWN, v)` is `v`; None is just above it (`x = None` then
 *   `x = t` is `t`); `CONFLICT` is the top.
 * - bool < number < tensor (`total = 0; total += loss` is a tensor); a device tensor is above a host one and a
 *   value-flow (strong) tensor above a naming-convention (`weak`) one, each taken whole; two tensors of one rank
 *   join their devices (different kinds: chosen at run time), keep a dtype (and a host generation) they agree on, and
 *   are a loader's batch only when both are.
 * - strings union their candidates (one whose contents are unknown adds none); device strings and devices join into a
 *   device (a run-time choice among their kinds).
 * - sequences join their elements (and their positional items when both have the same length); dicts their entries.
 * - any other pair of kinds is `CONFLICT` (and so is a string that names no device joined with a device).
 */
export function join(a: Value, b: Value): Value {
  if (a === b) return a;
  if (a.kind === 'unknown' && !a.conflict) return b;
  if (b.kind === 'unknown' && !b.conflict) return a;
  if (a.kind === 'unknown') return a;
  if (b.kind === 'unknown') return b;
  if (a.kind === 'none') return b;
  if (b.kind === 'none') return a;
  if (a.kind === 'tensor' && b.kind === 'tensor') return joinTensors(a, b);
  if (a.kind === 'tensor' && (b.kind === 'number' || b.kind === 'bool')) return a;
  if (b.kind === 'tensor' && (a.kind === 'number' || a.kind === 'bool')) return b;
  if (a.kind === 'number' && b.kind === 'number') {
    if (a.value === b.value && a.rank === b.rank) return a;
    return { kind: 'number', origin: a.origin, rank: a.rank || b.rank || undefined, value: a.value === b.value ? a.value : undefined };
  }
  if (a.kind === 'bool' && b.kind === 'bool') return a;
  if ((a.kind === 'number' && b.kind === 'bool') || (a.kind === 'bool' && b.kind === 'number')) return a.kind === 'number' ? a : b;
  if (a.kind === 'string' && b.kind === 'string') {
    const values = [...new Set([...a.values, ...b.values])];
    return values.length === a.values.length ? a : str(a.origin, values);
  }
  if (a.kind === 'dtype' && b.kind === 'dtype') return a.name === b.name ? a : { kind: 'dtype', origin: a.origin, name: null };
  if ((a.kind === 'device' || a.kind === 'string') && (b.kind === 'device' || b.kind === 'string')) {
    // a string whose contents are not known adds no candidate (as among strings)
    if (a.kind === 'string' && !a.values.length) return b;
    if (b.kind === 'string' && !b.values.length) return a;
    const da = deviceOf(a);
    const db = deviceOf(b);
    if (da && db) return { kind: 'device', origin: a.origin, device: joinDevice(da, db), kinds: [...new Set([...deviceKinds(a), ...deviceKinds(b)])] };
    return CONFLICT;
  }
  if (a.kind === 'loader' && b.kind === 'loader') return a.device === b.device ? a : { ...a, device: joinDevice(a.device, b.device) };
  if (a.kind === 'seq' && b.kind === 'seq') {
    const items = a.items && b.items && a.items.length === b.items.length ? a.items.map((x, i) => join(x, b.items![i]!)) : undefined;
    return seq(a.origin, join(a.elem, b.elem), items, (a.shape && b.shape) || undefined);
  }
  if (a.kind === 'dict' && b.kind === 'dict') {
    const entries = new Map(a.entries);
    for (const [k, v] of b.entries) entries.set(k, entries.has(k) ? join(entries.get(k)!, v) : v);
    return { kind: 'dict', origin: a.origin, entries };
  }
  if (a.kind === b.kind) return a; // module, args: no fields to join
  return CONFLICT;
}

/** Two tensors: device above host, strong above weak (the higher one whole), else devices, dtypes and batch marks joined. */
function joinTensors(a: TensorValue, b: TensorValue): TensorValue {
  if (a.where !== b.where) return a.where === 'device' ? a : b;
  if (!a.weak !== !b.weak) return a.weak ? b : a;
  const device = joinDevice(a.device, b.device);
  const dtype = a.dtype === b.dtype ? a.dtype : undefined;
  const batch = a.batch && b.batch ? a.batch : undefined;
  const generated = a.generated === b.generated ? a.generated : undefined;
  if (device === a.device && dtype === a.dtype && batch === a.batch && generated === a.generated) return a;
  const out: { -readonly [K in keyof TensorValue]: TensorValue[K] } = { ...a, device };
  if (dtype === undefined) delete out.dtype;
  else out.dtype = dtype;
  if (batch === undefined) delete out.batch;
  if (generated === undefined) delete out.generated;
  return out;
}

/**
 * Two values are the same abstract value (origins aside; candidate lists as sets). The program model's fixpoint
 * stops when a value is the same as its previous approximation.
 */
export function sameValue(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case 'unknown':
      return !a.conflict === !(b as UnknownValue).conflict;
    case 'tensor': {
      const t = b as TensorValue;
      return a.where === t.where && a.device === t.device && a.dtype === t.dtype && !a.weak === !t.weak && !a.batch === !t.batch && a.generated === t.generated;
    }
    case 'number': {
      const n = b as NumberValue;
      return a.value === n.value && !a.rank === !n.rank;
    }
    case 'string':
      return sameSet(a.values, (b as StringValue).values);
    case 'dtype':
      return a.name === (b as DtypeValue).name;
    case 'device': {
      const d = b as DeviceValue;
      return a.device === d.device && sameSet(deviceKinds(a), deviceKinds(d));
    }
    case 'loader':
      return a.device === (b as LoaderValue).device;
    case 'seq': {
      const s = b as SeqValue;
      if (!a.shape !== !s.shape || !sameValue(a.elem, s.elem) || !a.items !== !s.items) return false;
      return !a.items || (a.items.length === s.items!.length && a.items.every((x, i) => sameValue(x, s.items![i]!)));
    }
    case 'dict': {
      const d = b as DictValue;
      if (a.entries.size !== d.entries.size) return false;
      for (const [k, v] of a.entries) {
        const w = d.entries.get(k);
        if (!w || !sameValue(v, w)) return false;
      }
      return true;
    }
    default:
      return true;
  }
}

function sameSet<T>(a: readonly T[], b: readonly T[]): boolean {
  const sa = new Set(a);
  const sb = new Set(b);
  return sa.size === sb.size && [...sa].every((x) => sb.has(x));
}

/** Host data: a Python number, bool, string, dtype, a CPU tensor or NumPy array, or a container of those. */
export function isHostValue(v: Value): boolean {
  switch (v.kind) {
    case 'number':
    case 'bool':
    case 'string':
    case 'dtype':
    case 'none':
      return true;
    case 'tensor':
      return v.where === 'host';
    case 'seq':
      return v.shape === true || (v.elem.kind !== 'unknown' && isHostValue(v.elem) && (!v.items || v.items.every((i) => i.kind === 'unknown' || isHostValue(i))));
    case 'dict':
      return v.entries.size > 0 && [...v.entries.values()].every(isHostValue);
    default:
      return false;
  }
}

export function isDeviceTensor(v: Value, strong = false): boolean {
  return v.kind === 'tensor' && v.where === 'device' && (!strong || !v.weak);
}

/** Canonical dtype names of `torch.<attr>`. */
export const DTYPE_ALIASES: Record<string, string> = {
  float16: 'float16', half: 'float16', bfloat16: 'bfloat16', float32: 'float32', float: 'float32', float64: 'float64',
  double: 'float64', int64: 'int64', long: 'int64', int32: 'int32', int: 'int32', int16: 'int16', short: 'int16', int8: 'int8',
  uint8: 'uint8', bool: 'bool', complex64: 'complex64', complex128: 'complex128', cfloat: 'complex64', cdouble: 'complex128',
};
