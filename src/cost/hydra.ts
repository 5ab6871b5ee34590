/**
 * Hydra/OmegaConf: compose a primary config's `defaults:` list from the files of its config folder
 * (passed in by the host), then resolve `${...}` interpolations. `???` (mandatory) stays unset.
 */
import { MAX_CONFIG_CHARS } from './readers/limits';
import { CostConfigError, type ConfigFile, type Entries, type Entry } from './types';
import { readYaml } from './readers/yaml';
import { dirname, join, norm } from './paths';

export function hasDefaults(entries: Entries): boolean {
  const d = entries.get('defaults');
  return !!d && Array.isArray(d.value);
}

interface DefaultItem {
  group: string | null;
  option: string;
  pkg: string | null;
  line: number;
}

function defaultsOf(entries: Entries): DefaultItem[] {
  const d = entries.get('defaults');
  if (!d || !Array.isArray(d.value)) return [];
  const items: DefaultItem[] = [];
  (d.value as unknown[]).forEach((raw, i) => {
    const line = entries.get(`defaults.${i}`)?.line ?? d.line;
    if (typeof raw === 'string') {
      items.push({ group: null, option: raw, pkg: null, line });
    } else if (raw && typeof raw === 'object') {
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        if (v === null || v === undefined) continue;
        let key = k.replace(/^override\s+/, '').replace(/^optional\s+/, '').trim();
        let pkg: string | null = null;
        const at = key.indexOf('@');
        if (at >= 0) {
          pkg = key.slice(at + 1);
          key = key.slice(0, at);
        }
        for (const opt of Array.isArray(v) ? v : [v]) items.push({ group: key, option: String(opt), pkg, line });
      }
    }
  });
  return items;
}

/** Reads `text` as a Hydra primary config and composes it with the group files in `folder`. */
export function composeHydra(primary: ConfigFile, folder: ConfigFile[], notes: string[]): Entries {
  const byPath = new Map(folder.map((f) => [norm(f.path), f]));
  const root = dirname(primary.path);
  const out: Entries = new Map();
  const seen = new Set<string>();
  const load = (file: ConfigFile, pkg: string, depth: number) => {
    if (depth > 8 || seen.has(norm(file.path) + '@' + pkg)) return;
    seen.add(norm(file.path) + '@' + pkg);
    const { entries } = readYaml(file.path, file.text);
    const header = /^#\s*@package\s+(\S+)/m.exec(file.text.split(/\r?\n/).slice(0, 5).join('\n'));
    const target = header ? (header[1] === '_global_' ? '' : header[1] === '_group_' ? pkg : header[1]) : pkg;
    const own = () => {
      for (const [k, e] of entries) {
        if (k === 'defaults' || k.startsWith('defaults.')) continue;
        const key = target ? `${target}.${k}` : k;
        // a later scalar replaces an earlier subtree
        if (!isObj(e.value)) for (const old of [...out.keys()]) if (old.startsWith(key + '.')) out.delete(old);
        out.set(key, e);
      }
    };
    const items = defaultsOf(entries);
    const selfAt = items.findIndex((d) => d.group === null && d.option === '_self_');
    // Hydra ≥1.1: without `_self_`, the config's own values come after its defaults
    const order = selfAt < 0 ? [...items, null] : items.map((d) => (d.group === null && d.option === '_self_' ? null : d));
    // `override /group: x` replaces an earlier choice of the same group
    const chosen = new Map<string, DefaultItem>();
    for (const d of order) if (d && d.group) chosen.set(d.group.replace(/^\//, ''), d);
    const done = new Set<string>();
    for (const d of order) {
      if (!d) {
        own();
        continue;
      }
      if (d.group === null) {
        const f = find(byPath, join(dirname(file.path), `${d.option}.yaml`)) ?? find(byPath, join(root, `${d.option}.yaml`));
        if (f) load(f, target, depth + 1);
        else notes.push(`${file.path}:${d.line}: Hydra default \`${d.option}\` not found in the config folder`);
        continue;
      }
      const g = d.group.replace(/^\//, '');
      if (done.has(g) || chosen.get(g) !== d) continue;
      done.add(g);
      if (d.option === 'null' || d.option === '???') continue;
      const base = d.group.startsWith('/') ? root : dirname(file.path);
      const f = find(byPath, join(base, g, `${d.option}.yaml`)) ?? find(byPath, join(root, g, `${d.option}.yaml`));
      if (!f) {
        notes.push(`${file.path}:${d.line}: Hydra default \`${g}: ${d.option}\` not found (looked for ${join(g, d.option)}.yaml)`);
        continue;
      }
      const childPkg = d.pkg ? (d.pkg === '_global_' ? '' : d.pkg) : g.replace(/\//g, '.');
      load(f, childPkg, depth + 1);
    }
  };
  load(primary, '', 0);
  return out;
}

function find(byPath: Map<string, ConfigFile>, p: string): ConfigFile | undefined {
  return byPath.get(norm(p)) ?? byPath.get(norm(p).replace(/\.yaml$/, '.yml'));
}

function isObj(v: unknown): boolean {
  return typeof v === 'object' && v !== null;
}

const INTERP = /\$\{([^{}]+)\}/g;

/** Resolves `${a.b}` and `${.sibling}` in place; values keep the provenance of the line they came from. */
export function interpolate(entries: Entries, notes: string[]): void {
  for (let round = 0; round < 10; round++) {
    let changed = false;
    for (const [key, e] of entries) {
      if (typeof e.value !== 'string' || !e.value.includes('${')) continue;
      const whole = /^\$\{([^{}]+)\}$/.exec(e.value);
      const lookup = (ref: string): Entry | undefined => {
        ref = ref.trim();
        if (ref.includes(':')) return undefined; // resolvers (oc.env:, now:, …) are not evaluated
        if (ref.startsWith('.')) {
          const parent = key.includes('.') ? key.slice(0, key.lastIndexOf('.')) : '';
          let up = parent;
          let r = ref.slice(1);
          while (r.startsWith('.')) {
            up = up.includes('.') ? up.slice(0, up.lastIndexOf('.')) : '';
            r = r.slice(1);
          }
          return entries.get(up ? `${up}.${r}` : r);
        }
        return entries.get(ref);
      };
      if (whole) {
        const t = lookup(whole[1]);
        if (t && !(typeof t.value === 'string' && t.value.includes('${')) && !isObj(t.value)) {
          entries.set(key, { ...t });
          changed = true;
        }
        continue;
      }
      let ok = true;
      let grown = e.value.length;
      const s = e.value.replace(INTERP, (m, ref: string) => {
        const t = lookup(ref);
        if (!t || isObj(t.value) || (typeof t.value === 'string' && t.value.includes('${'))) {
          ok = false;
          return m;
        }
        const v = String(t.value);
        // `a1: ${a0}${a0}`, `a2: ${a1}${a1}`, …: an expansion bomb doubles with every key
        grown += v.length;
        if (grown > MAX_CONFIG_CHARS) {
          throw new CostConfigError(`${e.file}:${e.line}: \`${key}\`: interpolation expands past ${MAX_CONFIG_CHARS} characters; not read`, e.file, e.line, key);
        }
        return v;
      });
      if (ok) {
        entries.set(key, { ...e, value: s });
        changed = true;
      }
    }
    if (!changed) break;
  }
  for (const [key, e] of entries) {
    if (typeof e.value === 'string' && /\$\{[^}]*\}/.test(e.value)) notes.push(`${e.file}:${e.line}: \`${key}\` = ${e.value}: interpolation not resolved`);
  }
}
