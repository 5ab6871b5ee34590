/**
 * `vocab_size` from a nanoGPT `data/<dataset>/meta.pkl` without unpickling it: the pickle's opcodes are scanned
 * for the key string followed by an integer opcode (Python's pickletools names: SHORT_BINUNICODE, BINUNICODE,
 * MEMOIZE, BINPUT, LONG_BINPUT, BININT1, BININT2, BININT). Nothing is executed; anything else gives null.
 */
export function pickledInt(bytes: Uint8Array, key: string): number | null {
  const k = new TextEncoder().encode(key);
  const at = (i: number) => bytes[i];
  for (let i = 0; i + k.length < bytes.length; i++) {
    let start: number;
    if (at(i) === 0x8c && at(i + 1) === k.length) start = i + 2; // SHORT_BINUNICODE len:u8
    else if (at(i) === 0x58 && at(i + 1) === k.length && at(i + 2) === 0 && at(i + 3) === 0 && at(i + 4) === 0) start = i + 5; // BINUNICODE len:u32
    else continue;
    let same = true;
    for (let j = 0; j < k.length; j++) if (at(start + j) !== k[j]) same = false;
    if (!same) continue;
    let p = start + k.length;
    if (at(p) === 0x94) p += 1; // MEMOIZE
    else if (at(p) === 0x71) p += 2; // BINPUT
    else if (at(p) === 0x72) p += 5; // LONG_BINPUT
    const op = at(p);
    if (op === 0x4b) return at(p + 1); // BININT1
    if (op === 0x4d) return at(p + 1) | (at(p + 2) << 8); // BININT2
    if (op === 0x4a) return (at(p + 1) | (at(p + 2) << 8) | (at(p + 3) << 16) | (at(p + 4) << 24)) >> 0; // BININT
    return null;
  }
  return null;
}
