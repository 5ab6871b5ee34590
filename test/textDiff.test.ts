import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { applyChanges, changedSpan, diffText } from '../src/core/textDiff';

describe('diffText', () => {
  it('keeps unchanged lines out of the edits', () => {
    const a = 'import torch\n\nx = x.cuda()\ny = 1\n';
    const b = 'import torch\nimport torch_xla\n\nx = x.to(torch_xla.device())\ny = 1\n';
    const changes = diffText(a, b);
    expect(applyChanges(a, changes)).toBe(b);
    expect(changes).toEqual([
      { start: 13, end: 13, text: 'import torch_xla\n' },
      { start: 20, end: 25, text: 'to(torch_xla.device()' },
    ]);
  });

  it('handles empty texts, CRLF and surrogate pairs', () => {
    for (const [a, b] of [['', 'x\n'], ['x\n', ''], ['a\r\nb\r\n', 'a\r\nc\r\nb\r\n'], ['s = "😀"\n', 's = "😁"\n'], ['a', 'a\n']]) {
      const changes = diffText(a, b);
      expect(applyChanges(a, changes)).toBe(b);
      for (const c of changes) {
        expect(c.start).toBeLessThanOrEqual(c.end);
        expect(/[\udc00-\udfff]/.test(a[c.start] ?? '') && /[\ud800-\udbff]/.test(a[c.start - 1] ?? '')).toBe(false);
      }
    }
  });

  it('round-trips arbitrary line edits', () => {
    const line = fc.constantFrom('a\n', 'b\n', 'x = x.cuda()\n', '\n', 'import torch\n', 'c');
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.array(line, { maxLength: 30 }), (la, lb) => {
        const a = la.join('');
        const b = lb.join('');
        const changes = diffText(a, b);
        expect(applyChanges(a, changes)).toBe(b);
        for (let i = 1; i < changes.length; i++) expect(changes[i].start).toBeGreaterThanOrEqual(changes[i - 1].end);
      }),
      { numRuns: 500 },
    );
  });

  it('changedSpan is the one differing span', () => {
    expect(changedSpan('abcdef', 'abXYef')).toEqual({ start: 2, oldEnd: 4, newText: 'XY' });
    expect(changedSpan('same', 'same')).toBeNull();
    expect(changedSpan('aa', 'aaa')).toEqual({ start: 2, oldEnd: 2, newText: 'a' });
  });
});
