/**
 * The per-file analysis budget (time and memory) while one file is analysed. The engine arms it around
 * `analyze`; checks run inside the parse (tree-sitter's progress callback, src/core/parse.ts), on every finding,
 * between rules, and every 1,024 node navigations (nodecache, the tree mirror and its construction), so neither a
 * deep file's parse nor a rule that walks a huge tree without reporting runs past it. Pure: the host passes the memory probe in
 * (`node:v8`'s heap statistics in the CLI and the extension), so core imports no Node API.
 */

export interface MemoryBudget {
  /** Bytes the analysis of one file may add to the probe's reading (heap and WebAssembly memory). */
  maxBytes: number;
  /** Current bytes in use (JS heap plus external memory: the tree-sitter WebAssembly heap is external). */
  usage: () => number;
}

/** The file's analysis ran past its time or memory budget: the caller reports the file as skipped. */
export class BudgetExceeded extends Error {
  /** `parsing`: tree-sitter's parse itself was stopped (no rule had run yet). */
  constructor(readonly rule: string | null, readonly kind: 'time' | 'memory' = 'time', readonly usedBytes = 0, readonly parsing = false) {
    const where = rule ? ` (in ${rule})` : parsing ? ' (while parsing)' : '';
    super(kind === 'time' ? `analysis ran past its time budget${where}` : `analysis needed more than its memory budget${where}`);
    this.name = 'BudgetExceeded';
  }
}

interface Armed {
  deadline: number;
  memory: MemoryBudget | null;
  base: number;
  rule: string | null;
}

let armed: Armed | null = null;
let ticks = 0;

/** Starts budget checks for one file; returns the previous state for `disarm` (analyses may nest: fix loop). */
export function arm(deadline: number | undefined, memory: MemoryBudget | undefined): Armed | null {
  const prev = armed;
  if (deadline === undefined && !memory) return prev;
  // a nested analysis (imports after a fix batch) keeps the outer file's baseline: the budget is per file
  armed = { deadline: deadline ?? Infinity, memory: memory ?? null, base: prev?.memory ? prev.base : memory ? memory.usage() : 0, rule: null };
  return prev;
}

export function disarm(prev: Armed | null): void {
  armed = prev;
}

/** The rule now running (named in the skip reason). */
export function budgetRule(rule: string | null): void {
  if (armed) armed.rule = rule;
}

/** Throws BudgetExceeded when the armed budget is spent. */
export function checkBudget(): void {
  const a = armed;
  if (!a) return;
  const e = spent(a, false);
  if (e) throw e;
}

/** The budget's verdict now: null while within it. */
function spent(a: Armed, parsing: boolean): BudgetExceeded | null {
  if (performance.now() > a.deadline) return new BudgetExceeded(a.rule, 'time', 0, parsing);
  if (a.memory) {
    const used = a.memory.usage() - a.base;
    if (used > a.memory.maxBytes) return new BudgetExceeded(a.rule, 'memory', used, parsing);
  }
  return null;
}

/**
 * For one parse while a budget is armed: tree-sitter's progress callback (web-tree-sitter 0.26 `ParseOptions.progressCallback`,
 * called periodically from inside the parse; returning true cancels it and `Parser.parse` answers null) and `stopped()`,
 * why it was cancelled. Undefined when nothing is armed. The clock is read on every call, the memory probe on every eighth
 * (test/hardening.test.ts measures how soon a deep file's parse stops).
 */
export function parseBudget(): { progress: () => boolean; stopped: () => BudgetExceeded | null } | undefined {
  const a = armed;
  if (!a) return undefined;
  let why: BudgetExceeded | null = null;
  let calls = 0;
  const memory = a.memory;
  return {
    progress: () => {
      if (why) return true;
      if (performance.now() > a.deadline) why = new BudgetExceeded(a.rule, 'time', 0, true);
      else if (memory && (++calls & 7) === 0) {
        const used = memory.usage() - a.base;
        if (used > memory.maxBytes) why = new BudgetExceeded(a.rule, 'memory', used, true);
      }
      return why !== null;
    },
    stopped: () => why ?? spent(a, true),
  };
}

/** A cheap check for hot paths: the real one every 1,024 calls. */
export function budgetTick(): void {
  if (armed !== null && (++ticks & 1023) === 0) checkBudget();
}

const mb = (n: number) => `${Math.round(n / (1024 * 1024))} MB`;

/**
 * Why a file was skipped, for the host to show: "analysis took longer than the 1.5 s budget per file (stopped
 * after 1.6 s, in TPU101); raise it with <how.time>" or "... needed more than the 512 MB memory budget ...".
 */
export function budgetSkipReason(e: BudgetExceeded, budget: { ms: number; bytes: number }, elapsedMs: number, how: { time: string; memory: string }): string {
  const rule = e.rule ? `, in ${e.rule}` : e.parsing ? ', while parsing' : '';
  return e.kind === 'memory'
    ? `analysis needed more than the ${mb(budget.bytes)} memory budget per file (${mb(e.usedBytes)} when stopped${rule}); raise it with ${how.memory}`
    : `analysis took longer than the ${budget.ms / 1000} s budget per file (stopped after ${(elapsedMs / 1000).toFixed(1)} s${rule}); raise it with ${how.time}`;
}
