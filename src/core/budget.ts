/**
 * The per-file analysis budget (time and memory) while one file is analysed. The engine arms it around
 * `analyze`; checks run on every finding, between rules, and every 1,024 node navigations (nodecache), so a
 * rule that walks a huge tree without reporting is stopped too. Pure: the host passes the memory probe in
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
  constructor(readonly rule: string | null, readonly kind: 'time' | 'memory' = 'time', readonly usedBytes = 0) {
    super(kind === 'time'
      ? `analysis ran past its time budget${rule ? ` (in ${rule})` : ''}`
      : `analysis needed more than its memory budget${rule ? ` (in ${rule})` : ''}`);
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
  if (performance.now() > a.deadline) throw new BudgetExceeded(a.rule, 'time');
  if (a.memory) {
    const used = a.memory.usage() - a.base;
    if (used > a.memory.maxBytes) throw new BudgetExceeded(a.rule, 'memory', used);
  }
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
  const rule = e.rule ? `, in ${e.rule}` : '';
  return e.kind === 'memory'
    ? `analysis needed more than the ${mb(budget.bytes)} memory budget per file (${mb(e.usedBytes)} when stopped${rule}); raise it with ${how.memory}`
    : `analysis took longer than the ${budget.ms / 1000} s budget per file (stopped after ${(elapsedMs / 1000).toFixed(1)} s${rule}); raise it with ${how.time}`;
}
