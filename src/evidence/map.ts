/** Frames of a run (absolute paths on the TPU VM) mapped onto the workspace. Pure. */
import type { Frame } from './read';

/** A frame in installed code: anything under site-packages, the interpreter's own (these never map to the workspace). */
export function isInstalledFrame(file: string): boolean {
  const f = file.split('\\').join('/');
  if (f.startsWith('<')) return true; // <frozen runpy>, <string>, <stdin>
  if (/(^|\/)(site-packages|dist-packages)\//.test(f)) return true;
  return /\/lib\/python\d+(\.\d+)?\//.test(f);
}

/**
 * A frame in library code: installed code, or a torch / torch_xla source tree (a from-source build). A path
 * that maps onto the workspace is still user code unless installed (a workspace that is a torch_xla checkout).
 */
export function isLibraryFrame(file: string): boolean {
  return isInstalledFrame(file) || /(^|\/)(torch|torch_xla)\//.test(file.split('\\').join('/'));
}

export interface PathIndex {
  /** Workspace-relative posix path by its last component. */
  byBase: Map<string, string[]>;
  /** Frame file → workspace path (or null), memoized: a long log names the same few files thousands of times. */
  memo: Map<string, string | null>;
  /** Line count of each workspace file, when known: a frame past the end (the file changed since the run) does not map. */
  lines: Map<string, number> | null;
}

export function indexPaths(paths: readonly string[], lines: Map<string, number> | null = null): PathIndex {
  const byBase = new Map<string, string[]>();
  for (const p of paths) {
    const base = p.slice(p.lastIndexOf('/') + 1);
    const list = byBase.get(base) ?? [];
    list.push(p);
    byBase.set(base, list);
  }
  return { byBase, memo: new Map(), lines };
}

/**
 * The workspace file a frame's absolute path names: the one sharing the longest suffix of path components with
 * it (`/home/me/run/src/model.py` → `src/model.py` before `model.py`); ties go to the shorter path. Null when no
 * workspace file has the frame's file name.
 */
export function mapPath(file: string, index: PathIndex): string | null {
  const parts = file.split('\\').join('/').split('/').filter(Boolean);
  const candidates = index.byBase.get(parts[parts.length - 1] ?? '');
  if (!candidates?.length) return null;
  let best: string | null = null;
  let bestScore = -1;
  for (const c of candidates) {
    const cp = c.split('/');
    let n = 0;
    while (n < cp.length && n < parts.length && cp[cp.length - 1 - n] === parts[parts.length - 1 - n]) n++;
    // a workspace path longer than what matched is another file of the same name elsewhere: a weaker match
    const score = n * 2 - (cp.length > n ? 1 : 0);
    if (score > bestScore || (score === bestScore && best !== null && c.length < best.length)) {
      best = c;
      bestScore = score;
    }
  }
  return best;
}

export interface MappedFrame extends Frame {
  /** Workspace-relative path, null when the frame is not in the workspace. */
  path: string | null;
}

/** Every frame with its workspace path; `user` is the first (innermost) frame in user code that maps. */
export function mapFrames(frames: readonly Frame[], index: PathIndex): { frames: MappedFrame[]; user: MappedFrame | null } {
  const pathOf = (file: string): string | null => {
    let p = index.memo.get(file);
    if (p === undefined) {
      // a torch/torch_xla source tree outside the workspace does not map (no workspace file shares its suffix)
      p = isInstalledFrame(file) ? null : mapPath(file, index);
      if (p !== null && isLibraryFrame(file) && !/(^|\/)(torch|torch_xla)\//.test(p)) p = null;
      index.memo.set(file, p);
    }
    return p;
  };
  const mapped = frames.map((f) => {
    const p = pathOf(f.file);
    const max = p !== null ? index.lines?.get(p) : undefined;
    return { ...f, path: max !== undefined && (f.line < 1 || f.line > max) ? null : p };
  });
  return { frames: mapped, user: mapped.find((f) => f.path !== null) ?? null };
}
