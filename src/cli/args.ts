/** Command-line argument reading shared by the subcommands: `--flag value`, `--flag=value`, positionals. */
import { didYouMean } from '../core/suggest';

/** A usage error: reported with a hint, exit code 2. */
export class UsageError extends Error {}

/** A bad input (a file, a key, a value): one line naming it, exit code 2, no usage hint. */
export class InputError extends UsageError {}

export interface Arg {
  /** `--flag` (without any `=value`), or the positional text. */
  flag: string;
  raw: string;
  /** The flag's value (the `=value` part or the next argument). */
  value(): string;
  /** A comma-separated value. */
  list(): string[];
  /** A number value within [lo, hi]. */
  number(lo: number, hi: number, what: string): number;
  /** A value that must be one of `choices`. */
  choice<T extends string>(choices: readonly T[]): T;
  /** Throws for an unknown option; otherwise the argument is a positional. */
  positional(hint?: string): string;
}

export function eachArg(argv: string[], fn: (a: Arg) => void): void {
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i];
    const eq = raw.indexOf('=');
    const inline = raw.startsWith('--') && eq > 0;
    const flag = inline ? raw.slice(0, eq) : raw;
    const value = (): string => {
      if (inline) return raw.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${flag} needs a value`);
      return v;
    };
    fn({
      flag,
      raw,
      value,
      list: () => value().split(',').map((s) => s.trim()).filter(Boolean),
      number(lo, hi, what) {
        const v = value();
        const n = Number(v);
        if (!Number.isFinite(n) || n < lo || n > hi) throw new UsageError(`${flag} must be ${what}, not "${v}"`);
        return n;
      },
      choice<T extends string>(choices: readonly T[]): T {
        const v = value();
        if (!(choices as readonly string[]).includes(v)) throw new UsageError(`${flag} must be ${choices.join(', ').replace(/, ([^,]*)$/, ' or $1')}, not "${v}"`);
        return v as T;
      },
      positional(hint) {
        if (raw.startsWith('-') && raw !== '-') throw new UsageError(`unknown option ${raw}${hint ? ` (${hint})` : ''}`);
        return raw;
      },
    });
  }
}

export const TARGETS = ['torch_xla', 'torchtpu'] as const;
export const TARGET_VERSIONS = ['2.3', '2.4', '2.5', '2.6', '2.7', '2.8', '2.9'] as const;
export const FIX_STYLES = ['dual-path', 'tpu-only'] as const;

/**
 * `--select`/`--ignore` entries must be rule ids or prefixes of some (TPU2, TPU101): an entry that matches
 * nothing would silently turn the scan off (100/100).
 */
export function checkRuleSelectors(flag: string, list: string[], ids: readonly string[]): string[] {
  for (const p of list) {
    const u = p.toUpperCase();
    if (!ids.some((id) => id.startsWith(u))) throw new InputError(`${flag}: "${p}" matches no rule${didYouMean(u, ids)} (rule ids or prefixes: TPU1, TPU101)`);
  }
  return list;
}
