/**
 * Project scope (issue 9): the module graph (src/model/project.ts) and the multi-module fixtures in
 * test/project-fixtures/<case>/: every .py file of a case is analysed with an index over the case folder; the
 * `# expect: TPUnnn` markers of all its files give the exact findings per line for the rules they name, and a
 * snapshot holds those findings with their related locations, plus each file as fixed (dual-path, unsafe too).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { RULES } from '../src/rules';
import { analyze, analysedText, fixDocument, locateAll, pythonDocument } from '../src/core/engine';
import { countErrors, parsePython } from '../src/core/parse';
import { Semantics } from '../src/core/semantics';
import { DEFAULT_OPTIONS } from '../src/core/types';
import { ProjectIndex, normalizePath, type ProjectHost } from '../src/model/project';
import { listPythonFiles } from '../src/cli/process';

beforeAll(async () => {
  await init();
});

/** An in-memory project. */
function memHost(files: Record<string, string>): ProjectHost & { reads: string[]; files: Record<string, string> } {
  const reads: string[] = [];
  return {
    reads,
    files,
    readFile(p) {
      reads.push(p);
      return Object.prototype.hasOwnProperty.call(files, p) ? files[p] : null;
    },
  };
}

/** The definition the first call named `callee` in `file` resolves to: "path:kind:name" or null. */
function resolved(index: ProjectIndex, file: string, text: string, callee: string): string | null {
  const tree = parsePython(text);
  const sema = new Semantics(tree, text);
  const call = sema.nodes('call').find((c) => c.childForFieldName('function')?.text === callee);
  if (!call) throw new Error(`no call ${callee}`);
  const r = index.resolveCall(call, sema, file);
  const out = r ? `${r.path}:${r.kind}:${r.def.type === 'function_definition' || r.def.type === 'class_definition' ? r.def.childForFieldName('name')?.text : r.def.text}` : null;
  tree.delete();
  return out;
}

describe('ProjectIndex', () => {
  const files = {
    '/p/train.py': '',
    '/p/utils.py': 'import torch\ndef select_device(x):\n    return torch.device("cuda")\nSEED = 3\n',
    '/p/engine.py': 'from utils import select_device\ndef train_one_epoch(m):\n    pass\n',
    '/p/pkg/__init__.py': 'from .models import Net\nfrom . import data\n',
    '/p/pkg/models.py': 'import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n    def step(self):\n        pass\n',
    '/p/pkg/data.py': 'from .models import Net as N\nfrom ..utils import SEED\ndef build_loader():\n    pass\n',
    '/p/pkg/sub/__init__.py': '',
    '/p/pkg/sub/deep.py': 'from .. import models\ndef f():\n    return models.Net()\n',
    '/p/cyc_a.py': 'from cyc_b import g\n',
    '/p/cyc_b.py': 'from cyc_a import g\n',
  };

  it('resolves sibling-script, dotted, aliased, relative and re-exported names', () => {
    const index = new ProjectIndex(['/p'], memHost(files));
    expect(resolved(index, '/p/train.py', 'import utils\nutils.select_device(1)\n', 'utils.select_device')).toBe('/p/utils.py:function:select_device');
    expect(resolved(index, '/p/train.py', 'from utils import select_device as pick\npick(1)\n', 'pick')).toBe('/p/utils.py:function:select_device');
    // a re-export in a package __init__.py
    expect(resolved(index, '/p/train.py', 'from pkg import Net\nNet()\n', 'Net')).toBe('/p/pkg/models.py:class:Net');
    expect(resolved(index, '/p/train.py', 'import pkg\npkg.Net()\n', 'pkg.Net')).toBe('/p/pkg/models.py:class:Net');
    // `import a.b` binds `a`; the chain walks submodules, then a class, then its method
    expect(resolved(index, '/p/train.py', 'import pkg.models\npkg.models.Net.step(1)\n', 'pkg.models.Net.step')).toBe('/p/pkg/models.py:method:step');
    // `from . import data` is a submodule; `from pkg import data` too
    expect(resolved(index, '/p/train.py', 'from pkg import data\ndata.build_loader()\n', 'data.build_loader')).toBe('/p/pkg/data.py:function:build_loader');
    // relative imports from inside the package, one and two levels up
    expect(resolved(index, '/p/pkg/data.py', 'from .models import Net as N\nN()\n', 'N')).toBe('/p/pkg/models.py:class:Net');
    expect(resolved(index, '/p/pkg/sub/deep.py', 'from .. import models\nmodels.Net()\n', 'models.Net')).toBe('/p/pkg/models.py:class:Net');
    // a function imported into engine.py and imported again from there
    expect(resolved(index, '/p/train.py', 'from engine import select_device\nselect_device(0)\n', 'select_device')).toBe('/p/utils.py:function:select_device');
  });

  it('leaves missing modules, externals, cycles and shadowed names unresolved', () => {
    const host = memHost(files);
    const index = new ProjectIndex(['/p'], host);
    expect(resolved(index, '/p/train.py', 'import nothere\nnothere.f()\n', 'nothere.f')).toBeNull();
    expect(resolved(index, '/p/train.py', 'from utils import missing\nmissing()\n', 'missing')).toBeNull();
    expect(resolved(index, '/p/train.py', 'from cyc_a import g\ng()\n', 'g')).toBeNull();
    // a name the file binds again is not the import
    expect(resolved(index, '/p/train.py', 'from utils import select_device\nselect_device = lambda x: x\nselect_device(1)\n', 'select_device')).toBeNull();
    expect(resolved(index, '/p/train.py', 'from utils import select_device\ndef select_device(x):\n    return x\nselect_device(1)\n', 'select_device')).toBeNull();
    // torch is never looked up as a project file
    host.reads.length = 0;
    expect(resolved(index, '/p/train.py', 'import torch\ntorch.device("cuda")\n', 'torch.device')).toBeNull();
    expect(host.reads.some((r) => r.includes('torch'))).toBe(false);
    // nothing outside the roots is read
    expect(resolved(index, '/p/pkg/data.py', 'from ...outside import f\nf()\n', 'f')).toBeNull();
    expect(host.reads.every((r) => r.startsWith('/p/'))).toBe(true);
  });

  it('parses each module once and honours the module limit', () => {
    const host = memHost(files);
    const index = new ProjectIndex(['/p'], host);
    for (let i = 0; i < 3; i++) resolved(index, '/p/train.py', 'import utils\nutils.select_device(1)\n', 'utils.select_device');
    expect(index.parsed).toBe(1);
    expect(host.reads.filter((r) => r === '/p/utils.py')).toHaveLength(1);
    const small = new ProjectIndex(['/p'], memHost(files), { maxModules: 0 });
    expect(resolved(small, '/p/train.py', 'import utils\nutils.select_device(1)\n', 'utils.select_device')).toBeNull();
  });

  it('updates a changed or deleted file and lists its dependants', () => {
    const host = memHost({ ...files });
    const index = new ProjectIndex(['/p'], host);
    index.load('/p/train.py', 'from engine import train_one_epoch\nimport pkg\n');
    // train.py imports pkg, whose __init__ imports data, which imports ..utils
    expect(index.dependants('/p/utils.py')).toEqual(['/p/engine.py', '/p/pkg/__init__.py', '/p/pkg/data.py', '/p/train.py']);
    expect(index.dependants('/p/pkg/models.py')).toEqual(['/p/pkg/__init__.py', '/p/pkg/data.py', '/p/train.py']);
    expect(index.dependants('/p/train.py')).toEqual([]);
    // changed: the new text is what resolution sees
    const affected = index.update('/p/utils.py', 'def select_device(x):\n    return x\ndef other():\n    pass\n');
    expect(affected).toEqual(['/p/utils.py', '/p/engine.py', '/p/pkg/__init__.py', '/p/pkg/data.py', '/p/train.py']);
    expect(resolved(index, '/p/train.py', 'from utils import other\nother()\n', 'other')).toBe('/p/utils.py:function:other');
    // the same text again changes nothing
    expect(index.update('/p/utils.py', index.textOf('/p/utils.py'))).toEqual([]);
    // deleted
    index.update('/p/utils.py', null);
    expect(resolved(index, '/p/train.py', 'from utils import other\nother()\n', 'other')).toBeNull();
    // created later: a cached absence does not hide it
    delete host.files['/p/later.py'];
    expect(resolved(index, '/p/train.py', 'import later\nlater.f()\n', 'later.f')).toBeNull();
    host.files['/p/later.py'] = 'def f():\n    pass\n';
    index.update('/p/later.py', host.files['/p/later.py']);
    expect(resolved(index, '/p/train.py', 'import later\nlater.f()\n', 'later.f')).toBe('/p/later.py:function:f');
    index.dispose();
  });

  it('normalizes Windows and relative paths', () => {
    expect(normalizePath('C:\\w\\p\\..\\q\\a.py')).toBe('C:/w/q/a.py');
    const index = new ProjectIndex(['p'], memHost(files), { cwd: '/' });
    expect(resolved(index, 'p/train.py', 'import utils\nutils.select_device(1)\n', 'utils.select_device')).toBe('/p/utils.py:function:select_device');
  });
});

// ---------------------------------------------------------------------------------------------
// Multi-module fixtures

const CASES = path.join(ROOT, 'test/project-fixtures');
const MARKER = /#\s*expect(?:\[([+-]\d+)\])?:\s*([A-Z0-9, ]+)/g;

function pyFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? (e.name === '__snapshots__' ? [] : pyFiles(path.join(dir, e.name))) : e.name.endsWith('.py') ? [path.join(dir, e.name)] : [])).sort();
}

function diskHost(): ProjectHost {
  return { readFile: (p) => (fs.existsSync(p) && fs.statSync(p).isFile() ? fs.readFileSync(p, 'utf8') : null), listPython: (root, max) => listPythonFiles(root, max) };
}

describe('project fixtures', () => {
  const cases = fs.existsSync(CASES) ? fs.readdirSync(CASES).filter((c) => fs.statSync(path.join(CASES, c)).isDirectory()).sort() : [];
  it('there are cases', () => expect(cases.length).toBeGreaterThan(0));
  for (const c of cases) {
    it(c, async () => {
      const dir = path.join(CASES, c);
      const files = pyFiles(dir);
      const rel = (p: string) => path.relative(dir, p).split(path.sep).join('/');
      const rules = new Set<string>();
      const expected = new Map<string, string[]>();
      for (const f of files) {
        fs.readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
          MARKER.lastIndex = 0;
          for (let m = MARKER.exec(line); m; m = MARKER.exec(line)) {
            const key = `${rel(f)}:${i + (m[1] ? parseInt(m[1], 10) : 0) + 1}`;
            for (const id of m[2].split(',').map((s) => s.trim()).filter(Boolean)) {
              rules.add(id);
              expected.set(key, [...(expected.get(key) ?? []), id].sort());
            }
          }
        });
      }
      expect(rules.size, `${c} has # expect markers`).toBeGreaterThan(0);
      const index = new ProjectIndex([dir], diskHost());
      const options = { ...DEFAULT_OPTIONS, project: index };
      const actual = new Map<string, string[]>();
      const lines: string[] = [];
      const fixed: string[] = [];
      for (const f of files) {
        const doc = pythonDocument(f, fs.readFileSync(f, 'utf8'));
        const analysis = analyze(doc, RULES, options);
        const located = locateAll(analysis).filter((x) => rules.has(x.rule));
        analysis.tree?.delete();
        for (const x of located) {
          const key = `${rel(f)}:${x.startPos.line + 1}`;
          actual.set(key, [...(actual.get(key) ?? []), x.rule].sort());
          lines.push(`${key}:${x.startPos.character + 1} ${x.rule} [${x.severity}] ${x.message}${x.fix ? ` (fix: ${x.fix.applicability}: ${x.fix.title})` : ''}`);
          for (const r of x.related ?? []) lines.push(`    related ${r.path === undefined ? rel(f) : rel(r.path)}:${r.startPos.line + 1}:${r.startPos.character + 1} ${r.message}`);
        }
        // fixes with project scope: converge, parse, and applying twice equals once
        const only = (y: { rule: string }) => rules.has(y.rule);
        const once = fixDocument(doc, RULES, options, { unsafe: true, only, strict: true });
        const twice = fixDocument(once.doc, RULES, options, { unsafe: true, only, strict: true });
        const text = analysedText(once.doc);
        const tree = parsePython(text);
        expect(countErrors(tree), `${rel(f)} fixed parses`).toBe(0);
        tree.delete();
        expect(once.converged).toBe(true);
        expect(analysedText(twice.doc)).toBe(text);
        if (text !== doc.text) fixed.push(`--- ${rel(f)} (fixed: dual-path, unsafe included)\n${text}`);
      }
      const show = (m: Map<string, string[]>) => [...m].sort().map(([k, v]) => `${k} ${v.join(',')}`);
      expect(show(actual)).toEqual(show(expected));
      index.dispose();
      await expect([...lines, '', ...fixed].join('\n')).toMatchFileSnapshot(path.join(dir, '__snapshots__', `${c}.snap`));
    });
  }
});
