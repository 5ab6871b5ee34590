/** Output channels, injectable so tests capture them. */
export interface Io {
  out(s: string): void;
  err(s: string): void;
  isTTY: boolean;
}

export const processIo: Io = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  isTTY: !!process.stdout.isTTY,
};
