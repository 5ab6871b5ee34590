/**
 * The per-file call indexes of Semantics (src/core/semantics.ts) that rules use instead of passing every call of the
 * file to a test: callsResolvedWhere, callsResolvedTo and callsNamedAny must give the same calls, in the same order, as
 * that filter over nodes('call'), and a call's memo (callee, method name, arguments on its mirror handle) the answers of
 * a fresh computation. Checked on every rule fixture.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init } from './setup';
import { parsePython, type Node } from '../src/core/parse';
import { Semantics, callArgs, methodName } from '../src/core/semantics';

beforeAll(async () => {
  await init();
});

const FIXTURES = fs
  .readdirSync('src/rules', { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .flatMap((d) => {
    const dir = path.join('src/rules', d.name, 'fixtures');
    return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.py')).map((f) => path.join(dir, f)) : [];
  });

const ids = (nodes: readonly Node[]): number[] => nodes.map((n) => n.id);

describe('call indexes', () => {
  it('has fixtures to check', () => expect(FIXTURES.length).toBeGreaterThan(50));

  it('equal a filter over every call, in document order', () => {
    for (const file of FIXTURES) {
      const text = fs.readFileSync(file, 'utf8');
      const tree = parsePython(text);
      const sema = new Semantics(tree, text);
      const calls = sema.nodes('call');
      const q = (c: Node) => sema.callee(c) ?? '';
      for (const test of [(s: string) => /^torch\.cuda\./.test(s), (s: string) => s === '', (s: string) => /\.\w*Scaler$/.test(s)]) {
        expect(ids(sema.callsResolvedWhere(test)), file).toEqual(ids(calls.filter((c) => test(q(c)))));
      }
      const names = ['torch.cuda.is_available', 'torch.compile', ''];
      expect(ids(sema.callsResolvedTo(names)), file).toEqual(ids(calls.filter((c) => names.includes(q(c)))));
      for (const set of [['to', 'cuda'], ['prepare', 'setup_dataloaders', 'prepare'], ['backward']]) {
        const named = (c: Node) => {
          const f = c.childForFieldName('function');
          const key = f?.type === 'identifier' ? f.text : f?.type === 'attribute' ? f.childForFieldName('attribute')?.text : undefined;
          return key !== undefined && set.includes(key);
        };
        expect(ids(sema.callsNamedAny(set)), `${file} ${set}`).toEqual(ids(calls.filter(named)));
      }
      // the memo on the handle answers what the node's own fields say, the second time too
      for (const c of calls) {
        const f = c.childForFieldName('function');
        const meth = f?.type === 'attribute' ? f.childForFieldName('attribute')?.text ?? null : null;
        expect(methodName(c)).toBe(meth);
        expect(methodName(c)).toBe(meth);
        expect(callArgs(c)).toBe(callArgs(c));
        expect(sema.callee(c)).toBe(sema.resolve(f));
      }
      tree.delete();
    }
  });
});
