/**
 * The join of the program model's abstract values (src/model/values.ts) is a join semilattice: commutative,
 * associative and idempotent (up to origins and the order of candidate lists, which `sameValue` ignores), with
 * `UNKNOWN` (no information) as its identity and `CONFLICT` as its absorbing top. Checked on random values.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CONFLICT, UNKNOWN, bool, deviceTensor, hostTensor, isDeviceTensor, join, none, num, sameValue, seq, str,
  type DeviceKind, type Value,
} from '../src/model/values';

const DEVICES: DeviceKind[] = ['cuda', 'xla', 'cpu', 'runtime', 'unknown'];
const device = fc.constantFrom(...DEVICES);

const leaf: fc.Arbitrary<Value> = fc.oneof(
  fc.constant(UNKNOWN),
  fc.constant(CONFLICT),
  fc.constant(none(null)),
  fc.constant(bool(null)),
  fc.record({ value: fc.option(fc.constantFrom(0, 1, -1), { nil: undefined }), rank: fc.option(fc.constant(true), { nil: undefined }) }).map((e) => num(null, e)),
  fc.subarray(['cuda', 'cuda:0', 'cpu', 'xla', 'mps', 'fp16', 'image']).map((vs) => str(null, vs)),
  fc.constantFrom(null, 'float16', 'bfloat16', 'float32').map((name): Value => ({ kind: 'dtype', origin: null, name })),
  fc.oneof(
    device.map((d): Value => ({ kind: 'device', origin: null, device: d })),
    fc.subarray(['cuda', 'cpu', 'xla'] as DeviceKind[], { minLength: 2 }).map((kinds): Value => ({ kind: 'device', origin: null, device: 'runtime', kinds })),
  ),
  device.map((d): Value => ({ kind: 'loader', origin: null, device: d })),
  fc.constant<Value>({ kind: 'module', origin: null }),
  fc.constant<Value>({ kind: 'args', origin: null }),
  fc
    .record({
      where: fc.constantFrom('device', 'host'),
      device,
      dtype: fc.option(fc.constantFrom('float16', 'bfloat16', 'bool'), { nil: undefined }),
      weak: fc.option(fc.constant(true), { nil: undefined }),
      batch: fc.option(fc.constant(true), { nil: undefined }),
    })
    .map((t) => {
      const extra = { ...(t.dtype ? { dtype: t.dtype } : {}) };
      return t.where === 'host' ? hostTensor(null, extra) : deviceTensor(null, t.device, { ...extra, ...(t.weak ? { weak: true } : {}), ...(t.batch ? { batch: true } : {}) });
    }),
);

const value: fc.Arbitrary<Value> = fc.letrec<{ v: Value }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.tuple(tie('v'), fc.option(fc.array(tie('v'), { maxLength: 2 }), { nil: undefined }), fc.boolean()).map(([elem, items, shape]) => seq(null, elem, items, shape || undefined)),
    fc.dictionary(fc.constantFrom('loss', 'x', 'y'), tie('v'), { maxKeys: 2 }).map((o): Value => ({ kind: 'dict', origin: null, entries: new Map(Object.entries(o)) })),
  ),
})).v;

const RUNS = { numRuns: 3000, seed: 9 };

describe('join lattice (values.ts)', () => {
  it('is commutative', () => {
    fc.assert(fc.property(value, value, (a, b) => sameValue(join(a, b), join(b, a))), RUNS);
  });
  it('is associative', () => {
    fc.assert(fc.property(value, value, value, (a, b, c) => sameValue(join(join(a, b), c), join(a, join(b, c)))), RUNS);
  });
  it('is idempotent', () => {
    fc.assert(fc.property(value, (a) => sameValue(join(a, a), a) && sameValue(join(a, structuredCopy(a)), a)), RUNS);
  });
  it('has UNKNOWN as identity and CONFLICT as top', () => {
    fc.assert(fc.property(value, (a) => sameValue(join(UNKNOWN, a), a) && sameValue(join(a, UNKNOWN), a) && sameValue(join(a, CONFLICT), CONFLICT) && sameValue(join(CONFLICT, a), CONFLICT)), RUNS);
  });
  it('sameValue tells kinds and fields apart (the laws above are not vacuous)', () => {
    expect(sameValue(deviceTensor(null, 'cuda'), deviceTensor(null, 'xla'))).toBe(false);
    expect(sameValue(UNKNOWN, CONFLICT)).toBe(false);
    expect(sameValue(str(null, ['cuda', 'cpu']), str(null, ['cpu', 'cuda']))).toBe(true);
    expect(sameValue(seq(null, num(null), [num(null)]), seq(null, num(null)))).toBe(false);
  });
  it('a conflict stays a conflict whichever way the paths are grouped (the old join forgot it)', () => {
    const t = deviceTensor(null, 'cuda');
    const d: Value = { kind: 'dict', origin: null, entries: new Map() };
    expect(join(join(t, d), t)).toBe(CONFLICT);
    expect(join(t, join(d, t))).toBe(CONFLICT);
    expect(isDeviceTensor(join(join(t, d), t))).toBe(false);
    // the may-analysis joins that rules rely on are unchanged: None and no-information add nothing, a counter becomes a tensor
    expect(join(none(null), t)).toBe(t);
    expect(join(UNKNOWN, t)).toBe(t);
    expect(join(num(null, { value: 0 }), t)).toBe(t);
    expect(join(hostTensor(null), t)).toBe(t);
  });
});

/** A copy with fresh objects (the `a === b` shortcut of join does not apply). */
function structuredCopy(v: Value): Value {
  if (v === UNKNOWN || v === CONFLICT) return v;
  if (v.kind === 'seq') return { ...v, elem: structuredCopy(v.elem), items: v.items?.map(structuredCopy) };
  if (v.kind === 'dict') return { ...v, entries: new Map([...v.entries].map(([k, x]) => [k, structuredCopy(x)])) };
  return { ...v };
}
