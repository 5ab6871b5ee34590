/** Posix-style path helpers (the estimator is pure: hosts pass paths with forward slashes or backslashes). */
export function norm(p: string): string {
  const parts: string[] = [];
  const abs = p.startsWith('/');
  for (const seg of p.replace(/\\/g, '/').split('/')) {
    if (!seg || seg === '.') continue;
    if (seg === '..' && parts.length && parts[parts.length - 1] !== '..') parts.pop();
    else parts.push(seg);
  }
  return (abs ? '/' : '') + parts.join('/');
}
export function dirname(p: string): string {
  const n = norm(p);
  const i = n.lastIndexOf('/');
  return i < 0 ? '.' : i === 0 ? '/' : n.slice(0, i);
}
export function basename(p: string): string {
  const n = norm(p);
  return n.slice(n.lastIndexOf('/') + 1);
}
export function join(...ps: string[]): string {
  return norm(ps.filter(Boolean).join('/'));
}
export function extname(p: string): string {
  const b = basename(p);
  const i = b.lastIndexOf('.');
  return i <= 0 ? '' : b.slice(i).toLowerCase();
}
