/**
 * The engine's trigger prefilter (src/core/engine.ts TriggerSearch) answers as `text.includes(trigger)` for every trigger
 * of every rule, on the bench's torch sources, on texts without those words, on non-ASCII and CRLF text, and on
 * triggers shorter than a trigram.
 */
import { describe, expect, it } from 'vitest';
import { TriggerSearch } from '../src/core/engine';
import { RULES } from '../src/rules';
import { torchSources } from '../scripts/shapes';
import { ROOT } from './setup';

const triggers = [...new Set(RULES.flatMap((r) => r.triggers))];

function disagreements(text: string, words: string[]): string[] {
  const search = new TriggerSearch(text);
  // asked twice: the second answer comes from the memo
  return [...words, ...words].filter((t) => search.has(t) !== text.includes(t));
}

describe('trigger search', () => {
  it('answers as includes on every torch source and every trigger', () => {
    const texts = torchSources(ROOT);
    expect(texts.length).toBeGreaterThan(50);
    let present = 0;
    for (const text of texts) {
      expect(disagreements(text, triggers)).toEqual([]);
      present += triggers.filter((t) => text.includes(t)).length;
    }
    // the corpus holds many triggers and lacks many: both answers are exercised
    expect(present).toBeGreaterThan(texts.length);
    expect(present).toBeLessThan(texts.length * triggers.length / 2);
  });

  it('answers as includes on edited, non-ASCII, CRLF and short texts and short words', () => {
    const words = [...triggers, 'a', 'cu', '.to', 'é', 'tö', 'x\r\n', 'cuda\r', 'é ü', ''];
    const texts = ['', 'cu', 'cud', 'import torch\r\nx = t.cuda()\r\n', 'x = "é ü tö"\nimport torch\n', 'torch'.repeat(200), 'c u d a . t o ('];
    for (const t of triggers.slice(0, 40)) texts.push(`# ${t.slice(0, -1)}\n`, `y = ${t}`, `${t.slice(1)}${t[0]}`);
    for (const text of texts) expect(disagreements(text, words)).toEqual([]);
  });
});
