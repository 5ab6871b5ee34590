/**
 * File access that a hostile workspace cannot turn against the user: writes stay inside the workspace
 * root and never go through a symlink (a cloned repository can plant `.tpu-ready/progress.json -> ~/x.json`
 * or a dangling `accel.py -> /etc/...`); reads refuse FIFOs, devices and sockets before opening them and
 * count the bytes actually read (`stat.size` is 0 for `/dev/zero`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { InputError } from './args';
import { termSafe } from './formatters/escape';

/** A write the workspace does not allow: a one-line message, exit code 2. */
export class UnsafeWriteError extends InputError {}

function realOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The real paths of the workspace roots (a root that does not exist yet is taken as given). */
export function realRoots(roots: string[]): string[] {
  return [...new Set(roots.map((r) => realOrNull(r) ?? path.resolve(r)))];
}

/** The nearest existing ancestor of `p` (or `p` itself). */
function existingAncestor(p: string): string {
  let d = p;
  while (!fs.existsSync(d)) {
    const up = path.dirname(d);
    if (up === d) break;
    d = up;
  }
  return d;
}

/**
 * Throws UnsafeWriteError unless writing `file` stays inside one of `roots`: the file is not a symlink
 * (dangling or not) nor a special file, and the real path of its folder (or of the nearest existing one,
 * for folders still to be created) is inside a root.
 */
export function checkWritable(file: string, roots: string[] | null, what = 'write'): void {
  const abs = path.resolve(file);
  const shown = termSafe(path.relative(process.cwd(), abs) || abs);
  let st: fs.Stats | null = null;
  try {
    st = fs.lstatSync(abs);
  } catch {
    /* absent: created below */
  }
  if (st?.isSymbolicLink()) throw new UnsafeWriteError(`refusing to ${what} ${shown}: it is a symlink (to ${safeReadlink(abs)})`);
  if (st && !st.isFile()) throw new UnsafeWriteError(`refusing to ${what} ${shown}: not a regular file`);
  const dir = existingAncestor(path.dirname(abs));
  const realDir = realOrNull(dir) ?? dir;
  // roots null: a path the user named on the command line (`--output $RUNNER_TEMP/x.sarif`), not one derived
  // from the workspace; only the symlink and special-file checks apply
  if (roots && !roots.some((r) => inside(r, path.join(realDir, path.relative(dir, abs))))) {
    throw new UnsafeWriteError(`refusing to ${what} ${shown}: outside the workspace (${roots.join(', ')})${realDir !== dir ? ` through a symlinked folder (${dir} -> ${realDir})` : ''}`);
  }
}

function safeReadlink(p: string): string {
  try {
    return fs.readlinkSync(p);
  } catch {
    return '?';
  }
}

/** Writes `data` to `file` after checkWritable, creating its folders; O_NOFOLLOW closes the check-then-write race. */
export function safeWriteFile(file: string, data: string, roots: string[] | null, what = 'write'): void {
  checkWritable(file, roots, what);
  const abs = path.resolve(file);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  // a folder swapped for a symlink between the check and mkdir is caught here
  checkWritable(file, roots, what);
  const fd = fs.openSync(abs, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW, 0o644);
  try {
    fs.writeSync(fd, data);
  } finally {
    fs.closeSync(fd);
  }
}

/** What kind of special file a Stats is, or null for a regular file. */
export function specialKind(st: fs.Stats): string | null {
  if (st.isFile()) return null;
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a directory';
  return 'not a regular file';
}

export class ReadRefused extends Error {
  constructor(message: string, readonly tooLarge = false) {
    super(message);
  }
}

/**
 * Reads a regular file of at most `maxBytes` bytes. Special files are refused before opening (stat, then
 * O_NONBLOCK so a FIFO swapped in meanwhile cannot block, then fstat); the limit is on the bytes read.
 */
export function readRegularFile(abs: string, maxBytes: number): Buffer {
  const st = fs.statSync(abs);
  const kind = specialKind(st);
  if (kind) throw new ReadRefused(`${kind}, not read`);
  if (st.size > maxBytes) throw new ReadRefused(`larger than ${Math.round(maxBytes / 1024)} KiB (${Math.round(st.size / 1024)} KiB)`, true);
  const fd = fs.openSync(abs, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    const kind2 = specialKind(fs.fstatSync(fd));
    if (kind2) throw new ReadRefused(`${kind2}, not read`);
    const chunks: Buffer[] = [];
    let total = 0;
    const chunk = Buffer.allocUnsafe(Math.min(1 << 20, Math.max(1, maxBytes + 1)));
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      total += n;
      if (total > maxBytes) throw new ReadRefused(`larger than ${Math.round(maxBytes / 1024)} KiB (more than ${Math.round(maxBytes / 1024)} KiB read)`, true);
      chunks.push(Buffer.from(chunk.subarray(0, n)));
    }
    return Buffer.concat(chunks, total);
  } finally {
    fs.closeSync(fd);
  }
}
