/** Unit tests of the engine's core: parsing, positions, notebooks, imports, suppressions, config, score. */
import { beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { init, ROOT } from './setup';
import { indentationError } from '../src/core/indent';
import { countErrors, parsePython, treeEditFor } from '../src/core/parse';
import { codePointColumn, LineIndex, normalizeLoneCr, restoreLoneCr } from '../src/core/source';
import { combineCells, editIpynb, maskCell, parseIpynb, spanAt } from '../src/core/notebook';
import { analyze, applyFixBatch, cellOf, fixDocument, locateAll, notebookDocument, pythonDocument, textDocument, textFileKind } from '../src/core/engine';
import { importEdits, importsAfterUse } from '../src/core/imports';
import { Semantics } from '../src/core/semantics';
import { applyEdits, deleteStatement } from '../src/core/edits';
import { suppressionEdit } from '../src/core/suppress';
import { configHeaderLine, detectTorchXlaVersion, globToRegExp, optionsFor, parseProjectConfig } from '../src/core/config';
import { fileScore, workspaceScore } from '../src/core/score';
import { accelModuleSource, ACCEL_FUNCTIONS } from '../src/core/accel';
import { RULES_BY_ID } from '../src/rules';
import { DEFAULT_OPTIONS, type AnalyzeOptions } from '../src/core/types';

const TPU101 = [RULES_BY_ID.get('TPU101')!];
const tpuOnly: AnalyzeOptions = { ...DEFAULT_OPTIONS, fixStyle: 'tpu-only' };

beforeAll(async () => {
  await init();
});

describe('parser', () => {
  it('loads the pinned grammar and parses Python', () => {
    const tree = parsePython('import torch\nx = torch.zeros(3).cuda()\n');
    expect(tree.rootNode.type).toBe('module');
    expect(tree.rootNode.hasError).toBe(false);
    expect(countErrors(parsePython('def f(:\n  pass\n'))).toBeGreaterThan(0);
  });

  it('re-parses incrementally after an edit', () => {
    const before = 'x = 1\ny = x.cuda()\n';
    const tree = parsePython(before);
    const after = 'x = 2\ny = x.cuda()\n';
    tree.edit(treeEditFor(before, 4, 5, '2'));
    const again = parsePython(after, tree);
    expect(again.rootNode.text).toBe(after);
    expect(again.rootNode.hasError).toBe(false);
  });
});

describe('positions', () => {
  it('maps offsets to lines and UTF-16 columns with CRLF', () => {
    const text = 'a = 1\r\nb = "é😀"; c.cuda()\r\n';
    const li = new LineIndex(text);
    const off = text.indexOf('c.cuda');
    expect(li.position(off)).toEqual({ line: 1, character: 11 });
    expect(li.lineText(1)).toBe('b = "é😀"; c.cuda()');
    expect(li.offset({ line: 1, character: 11 })).toBe(off);
    // the CLI prints code point columns: the emoji is one character
    expect(codePointColumn(li.lineText(1), 11)).toBe(11);
  });

  it('locates findings exactly in CRLF files with non-ASCII text', () => {
    const text = 'import torch\r\n# ünïcödé 名前\r\ns = "😀"; x = torch.ones(2).cuda()\r\n';
    const analysis = analyze(pythonDocument('t.py', text), TPU101, tpuOnly);
    const [f] = locateAll(analysis);
    expect(f.startPos.line).toBe(2);
    expect(text.split('\r\n')[2].slice(f.startPos.character, f.endPos.character)).toBe('torch.ones(2).cuda()');
  });

  it('fixes CRLF files keeping CRLF line endings', () => {
    const text = 'import torch\r\n\r\nx = torch.ones(2).cuda()\r\n';
    const out = fixDocument(pythonDocument('t.py', text), TPU101, tpuOnly, { unsafe: true, strict: true });
    const fixed = (out.doc as { text: string }).text;
    expect(fixed).toBe('import torch\r\nimport torch_xla\r\n\r\nx = torch.ones(2).to(torch_xla.device())\r\n');
    expect(fixed.replace(/\r\n/g, '')).not.toContain('\n');
  });
});

describe('line endings kept', () => {
  it('analyses lone-CR files as LF (same offsets) and restores their CRs around the fix', () => {
    const raw = 'import torch\rx = torch.ones(2).cuda()\r# é\r';
    const norm = normalizeLoneCr(raw);
    expect(norm.length).toBe(raw.length);
    const [f] = locateAll(analyze(pythonDocument('t.py', norm), TPU101, tpuOnly));
    expect(f.startPos).toEqual({ line: 1, character: 4 });
    const out = fixDocument(pythonDocument('t.py', norm), TPU101, tpuOnly, { unsafe: true, strict: true });
    expect(restoreLoneCr(raw, norm, (out.doc as { text: string }).text)).toBe('import torch\rimport torch_xla\rx = torch.ones(2).to(torch_xla.device())\r# é\r');
  });

  it('keeps the LF lines of a mixed file and writes new lines with the dominant ending', () => {
    const raw = 'import torch\r\ry = 1\nx = torch.ones(2).cuda()\r';
    const norm = normalizeLoneCr(raw);
    const out = fixDocument(pythonDocument('t.py', norm), TPU101, tpuOnly, { unsafe: true, strict: true });
    expect(restoreLoneCr(raw, norm, (out.doc as { text: string }).text)).toBe('import torch\rimport torch_xla\r\ry = 1\nx = torch.ones(2).to(torch_xla.device())\r');
  });
});

describe('CRLF files: every fixture, all rules', () => {
  it('fixes write CRLF, never split a CRLF pair, and fixing the CRLF file equals fixing the LF one', () => {
    const rules = [...RULES_BY_ID.values()];
    for (const rel of ['checkpoint/fixtures/TPU601-ddp.py', 'perf/fixtures/TPU805.py', 'device/fixtures/TPU101.py']) {
      const lf = fs.readFileSync(path.join(ROOT, 'src/rules', rel), 'utf8').replace(/\r\n/g, '\n');
      const crlf = lf.replace(/\n/g, '\r\n');
      for (const fixStyle of ['dual-path', 'tpu-only'] as const) {
        const opts = { ...DEFAULT_OPTIONS, fixStyle };
        // not strict: TPU104 and TPU805 each delete one of a block's two statements in one batch (an empty
        // block, which only the indentation check sees); the engine keeps the first and fixes the other next round
        const a = (fixDocument(pythonDocument('t.py', lf), rules, opts, { unsafe: true }).doc as { text: string }).text;
        const b = (fixDocument(pythonDocument('t.py', crlf), rules, opts, { unsafe: true }).doc as { text: string }).text;
        expect(indentationError(a), `${rel} ${fixStyle}`).toBeNull();
        expect(countErrors(parsePython(a)), `${rel} ${fixStyle}`).toBe(0);
        expect(b.replace(/\r\n/g, ''), `${rel} ${fixStyle}: no LF-only line`).not.toMatch(/[\r\n]/);
        expect(b.replace(/\r\n/g, '\n'), `${rel} ${fixStyle}`).toBe(a);
      }
    }
  });
});

describe('notebooks', () => {
  const nbJson = JSON.stringify(
    {
      cells: [
        { cell_type: 'markdown', metadata: {}, source: ['# Title\n', 'text'] },
        { cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: ['!nvidia-smi\n', '%pip install torch\n', 'import torch'] },
        { cell_type: 'code', execution_count: 1, metadata: { tags: ['x'] }, outputs: [], source: ['%%time\n', 'x = torch.ones(3).cuda()\n', 'y = 1'] },
        { cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: '%%bash\necho hi\nls -la' },
      ],
      metadata: { kernelspec: { language: 'python', name: 'python3' } },
      nbformat: 4,
      nbformat_minor: 5,
    },
    null,
    1,
  ) + '\n';

  it('masks magics to same-length comments and records them', () => {
    const m = maskCell('!nvidia-smi\n  %time f()\nx = !ls\nok = 1');
    expect(m.text).toBe('#nvidia-smi\n  #time f()\n# = !ls\nok = 1');
    expect(m.magics.map((x) => x.kind)).toEqual(['!', '%', '!']);
    const foreign = maskCell('%%bash\necho $X\n  ls');
    expect(parsePython(foreign.text).rootNode.hasError).toBe(false);
  });

  it('analyses cells as one program and reports (cell, line)', () => {
    const parsed = parseIpynb(nbJson);
    expect(parsed.cells.map((c) => c.kind)).toEqual(['markdown', 'code', 'code', 'code']);
    const doc = notebookDocument('nb.ipynb', parsed.cells);
    expect(parsePython(doc.program.text).rootNode.hasError).toBe(false);
    const [f] = locateAll(analyze(doc, TPU101, tpuOnly));
    expect(f.cell).toBe(2);
    expect(f.startPos).toEqual({ line: 1, character: 4 });
    expect(doc.program.magics.map((m) => [m.cell, m.text])).toEqual([
      [1, '!nvidia-smi'],
      [1, '%pip install torch'],
      [2, '%%time'],
      [3, '%%bash'],
    ]);
  });

  it('round-trips the JSON byte for byte and fixes the right cell (imports in the first importing cell)', () => {
    const parsed = parseIpynb(nbJson);
    expect(editIpynb(nbJson, parseIpynb(nbJson), new Map())).toBe(nbJson);
    const out = fixDocument(notebookDocument('nb.ipynb', parsed.cells), TPU101, tpuOnly, { unsafe: true, strict: true });
    expect(out.doc.kind).toBe('notebook');
    const cells = (out.doc as ReturnType<typeof notebookDocument>).cells;
    expect(cells[1].text).toBe('!nvidia-smi\n%pip install torch\nimport torch\nimport torch_xla');
    expect(cells[2].text).toBe('%%time\nx = torch.ones(3).to(torch_xla.device())\ny = 1');
    const changed = new Map(cells.map((c, i) => [i, c.text] as [number, string]).filter(([i, t]) => t !== parsed.cells[i].text));
    const written = JSON.parse(editIpynb(nbJson, parsed, changed));
    expect(written.cells[2].metadata).toEqual({ tags: ['x'] });
    expect(written.cells[2].source).toEqual(['%%time\n', 'x = torch.ones(3).to(torch_xla.device())\n', 'y = 1']);
    expect(written.cells[3].source).toBe('%%bash\necho hi\nls -la');
  });

  /** Fixes a notebook's raw JSON as the CLI does: only the changed cells' sources are written. */
  const fixRaw = (raw: string, options: AnalyzeOptions = tpuOnly) => {
    const parsed = parseIpynb(raw);
    const out = fixDocument(notebookDocument('nb.ipynb', parsed.cells), TPU101, options, { unsafe: true, strict: true });
    const cells = (out.doc as ReturnType<typeof notebookDocument>).cells;
    const changed = new Map(cells.map((c, i) => [i, c.text] as [number, string]).filter(([i, t]) => t !== parsed.cells[i].text));
    return editIpynb(raw, parsed, changed);
  };

  it('keeps every byte but the fixed source: compact JSON, big ints, 1.0, \\u escapes, key order, outputs', () => {
    const src = '["import torch\\n","x = torch.zeros(1).cuda()\\n","print(x, \'\\u00e9\')"]';
    const head = '{"nbformat":4,"nbformat_minor":5,"metadata":{"kernelspec":{"name":"python3","language":"python"}},"cells":[{"cell_type":"code","metadata":{"z":1,"a":2},' +
      '"outputs":[{"output_type":"execute_result","data":{"text/plain":["1234567890123456789"]},"metadata":{},"execution_count":1,"big":1234567890123456789,"f":1.0}],"source":';
    const tail = '},{"cell_type":"markdown","metadata":{},"source":"# T\\u00e9"}]}';
    const raw = head + src + tail;
    expect(fixRaw(raw)).toBe(head + '["import torch\\n","import torch_xla\\n","x = torch.zeros(1).to(torch_xla.device())\\n","print(x, \'\\u00e9\')"]' + tail);
  });

  it('keeps CRLF, the indentation and a string-valued source', () => {
    const raw = [
      '{',
      '  "cells": [',
      '    {',
      '      "source": [',
      '        "import torch\\n",',
      '        "x = torch.zeros(1).cuda()"',
      '      ],',
      '      "cell_type": "code", "outputs": [{"n": 1.50, "t": "é"}], "metadata": {}',
      '    },',
      '    {"cell_type": "code", "metadata": {}, "outputs": [], "source": "y = torch.ones(1).cuda()\\n"}',
      '  ],',
      '  "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 4',
      '}',
      '',
    ].join('\r\n');
    const out = fixRaw(raw);
    expect(out).toBe(
      raw
        .replace('        "import torch\\n",\r\n', '        "import torch\\n",\r\n        "import torch_xla\\n",\r\n')
        .replace('"x = torch.zeros(1).cuda()"', '"x = torch.zeros(1).to(torch_xla.device())"')
        .replace('"y = torch.ones(1).cuda()\\n"', '"y = torch.ones(1).to(torch_xla.device())\\n"'),
    );
    expect(out.replace(/\r\n/g, '')).not.toContain('\n');
  });

  it('lays out lines written into an empty source list like the file', () => {
    const raw = '{\n "cells": [\n  {\n   "cell_type": "code",\n   "metadata": {},\n   "outputs": [],\n   "source": []\n  }\n ],\n "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n';
    const parsed = parseIpynb(raw);
    const out = editIpynb(raw, parsed, new Map([[0, 'import torch\nx = 1']]));
    expect(out).toBe(raw.replace('"source": []', '"source": [\n    "import torch\\n",\n    "x = 1"\n   ]'));
  });

  it('judges overlap on the edits as applied: a deletion kept in its cell does not collide with an insertion (all rules on TPU906.ipynb threw)', () => {
    const raw = fs.readFileSync(path.join(ROOT, 'src/rules/notebook/fixtures/TPU906.ipynb'), 'utf8');
    const doc = notebookDocument('nb.ipynb', parseIpynb(raw).cells);
    for (const fixStyle of ['dual-path', 'tpu-only'] as const) {
      const r = fixDocument(doc, [...RULES_BY_ID.values()], { ...DEFAULT_OPTIONS, fixStyle }, { unsafe: true, strict: true });
      expect(r.applied).toBeGreaterThan(0);
    }
  });

  it("puts a fix's imports in the cell that imports torch, never after the first cell that uses them", () => {
    const cells = [
      { kind: 'code' as const, text: 'import os' },
      { kind: 'code' as const, text: '%pip install torch_xla' },
      { kind: 'code' as const, text: 'from datasets import load_dataset\nds = load_dataset("x")' },
      { kind: 'code' as const, text: 'import torch\nn = xm.xrt_world_size()' },
    ];
    const doc = notebookDocument('nb.ipynb', cells);
    const spec = { module: 'torch_xla.runtime', alias: 'xr' };
    const at = (i: number, t: string) => doc.program.spans.find((x) => x.cell === i)!.start + cells[i].text.indexOf(t);
    const cellTexts = (d: ReturnType<typeof applyFixBatch>['doc']) => (d as ReturnType<typeof notebookDocument>).cells.map((c) => c.text);
    const used = (i: number, t: string) => ({ title: 't', applicability: 'safe' as const, edits: [{ start: at(i, t), end: at(i, t) + t.length, text: 'xr.world_size()' }], imports: [spec], needsAccel: false });
    // the use is in the torch cell: the import goes there, not to the earlier `import os` cell that runs before the install
    expect(cellTexts(applyFixBatch(doc, [used(3, 'xm.xrt_world_size()')]).doc)).toEqual([
      'import os',
      '%pip install torch_xla',
      'from datasets import load_dataset\nds = load_dataset("x")',
      'import torch\nimport torch_xla.runtime as xr\nn = xr.world_size()',
    ]);
    // a use in an earlier cell: the import goes to the last importing cell before it
    expect(cellTexts(applyFixBatch(doc, [used(2, 'load_dataset("x")')]).doc)[2]).toBe('from datasets import load_dataset\nimport torch_xla.runtime as xr\nds = xr.world_size()');
  });

  it('fixes one cell only: the predicate sees the current round document, whose offsets shifted', () => {
    const cells = [
      { kind: 'code' as const, text: 'import torch' },
      { kind: 'code' as const, text: 'x = m.cuda()' },
      { kind: 'code' as const, text: 'y = n.cuda()' },
    ];
    const doc = notebookDocument('nb.ipynb', cells);
    const out = fixDocument(doc, TPU101, tpuOnly, { unsafe: false, strict: true, only: (f, current) => cellOf(current, f.start) === 2 });
    expect((out.doc as ReturnType<typeof notebookDocument>).cells.map((c) => c.text)).toEqual([
      'import torch\nimport torch_xla', // the import the fix needs, in the import cell
      'x = m.cuda()', // untouched
      'y = n.to(torch_xla.device())',
    ]);
    expect(out.applied).toBe(1);
    expect(out.converged).toBe(true);
    // a predicate on the original offsets takes cell 1's call for cell 2's once the import shifted it
    const span = doc.program.spans.find((x) => x.cell === 2)!;
    const stale = fixDocument(doc, TPU101, tpuOnly, { unsafe: false, only: (f) => f.start >= span.start && f.start <= span.end });
    expect((stale.doc as ReturnType<typeof notebookDocument>).cells[1].text).not.toBe('x = m.cuda()');
    expect(cellOf(doc, span.start)).toBe(2);
    expect(cellOf(pythonDocument('a.py', 'x = 1'), 0)).toBeNull();
  });

  it('maps combined offsets to cells', () => {
    const p = combineCells([{ kind: 'code', text: 'a = 1' }, { kind: 'markdown', text: '# x' }, { kind: 'code', text: 'b = 2' }]);
    expect(p.text).toBe('a = 1\nb = 2');
    expect(spanAt(p, 7)?.cell).toBe(2);
    expect(spanAt(p, 5)?.cell).toBe(0);
  });

  it('reports broken notebooks clearly', () => {
    expect(() => parseIpynb('{"cells": [')).toThrow(/not valid JSON/);
    expect(() => parseIpynb('{"nbformat": 4}')).toThrow(/no "cells" array/);
    expect(() => parseIpynb('{"cells": [{"cell_type": "code", "source": 3}]}')).toThrow(/cell 0/);
  });
});

describe('imports', () => {
  const add = (text: string, specs: Parameters<typeof importEdits>[3]) => {
    const tree = parsePython(text);
    return applyEdits(text, importEdits(tree, text, new Semantics(tree, text), specs));
  };

  it('adds after the docstring, __future__ and leading imports, once', () => {
    const text = '"""Doc."""\nfrom __future__ import annotations\nimport os\n\nx = 1\n';
    expect(add(text, [{ module: 'torch_xla.core.xla_model', alias: 'xm' }, { module: 'torch_xla.core.xla_model', alias: 'xm' }])).toBe(
      '"""Doc."""\nfrom __future__ import annotations\nimport os\nimport torch_xla.core.xla_model as xm\n\nx = 1\n',
    );
  });

  it('puts import torch_xla right after import torch and skips bound names', () => {
    const text = 'import torch\nimport numpy as np\nimport torch_xla.core.xla_model as xm\n';
    expect(add(text, [{ module: 'torch_xla' }, { module: 'torch_xla.core.xla_model', alias: 'xm' }])).toBe(
      'import torch\nimport torch_xla\nimport numpy as np\nimport torch_xla.core.xla_model as xm\n',
    );
  });

  it('merges from-imports into an existing statement', () => {
    expect(add('from torch_xla.experimental import scan\n', [{ module: 'torch_xla.experimental', name: 'fori_loop' }])).toBe('from torch_xla.experimental import scan, fori_loop\n');
  });

  it('never lands after a statement that reads the name: one-line import and use', () => {
    expect(add('import torch; x = torch_xla.device()\nprint(x)\n', [{ module: 'torch_xla' }])).toBe('import torch; import torch_xla; x = torch_xla.device()\nprint(x)\n');
    expect(add('import os; import torch; d = accel.device()\n', [{ module: 'accel' }])).toBe('import os; import torch; import accel; d = accel.device()\n');
  });

  it('imports again above a read when the user imports the name only further down (never moves their import)', () => {
    const text = 'import torch\nxr.initialize_cache("/tmp/c")\nimport torch_xla.runtime as xr\n';
    const out = add(text, [{ module: 'torch_xla.runtime', alias: 'xr' }]);
    expect(out).toBe('import torch\nimport torch_xla.runtime as xr\nxr.initialize_cache("/tmp/c")\nimport torch_xla.runtime as xr\n');
    expect(importsAfterUse(parsePython(text).rootNode, [{ module: 'torch_xla.runtime', alias: 'xr' }])).toEqual(['import torch_xla.runtime as xr']);
    expect(importsAfterUse(parsePython(out).rootNode, [{ module: 'torch_xla.runtime', alias: 'xr' }])).toEqual([]);
    // a read inside a function body runs later: not a violation, nothing added
    const deferred = 'import torch\ndef f():\n    return xr.world_size()\nimport torch_xla.runtime as xr\n';
    expect(add(deferred, [{ module: 'torch_xla.runtime', alias: 'xr' }])).toBe(deferred);
  });

  it('inserts at the top of a file without imports, after a shebang', () => {
    expect(add('#!/usr/bin/env python\nx = 1\n', [{ module: 'torch_xla' }])).toBe('#!/usr/bin/env python\nimport torch_xla\nx = 1\n');
  });
});

describe('fixing files with syntax errors', () => {
  it('rewrites nothing, as ruff does (an edit could land in text the parser misread)', () => {
    const text = 'import t"""orch_xla\nimport torch\nx = torch.ones(1).cuda()\n';
    const r = fixDocument(pythonDocument('t.py', text), TPU101, tpuOnly, { unsafe: true });
    expect(r.syntaxErrors).toBe(true);
    expect(r.applied).toBe(0);
    expect((r.doc as { text: string }).text).toBe(text);
  });
});

describe('indentation errors Python rejects (tree-sitter recovers from them)', () => {
  const cases: [string, string | null][] = [
    ['import torch\nif True:\n    x = torch.ones(1).cuda()\n  y = 1\n', 'unindent does not match any outer indentation level'],
    ['import torch\nif True:\n\tx = torch.ones(1).cuda()\n        y = 1\n', 'inconsistent use of tabs and spaces in indentation (TabError)'],
    ['import torch\nif True:\n        x = torch.ones(1).cuda()\n\ty = 1\n', 'inconsistent use of tabs and spaces in indentation (TabError)'],
    ['import torch\nx = 1\n    y = torch.ones(1).cuda()\n', 'unexpected indent'],
    ['import torch\nif True:\nx = torch.ones(1).cuda()\n', 'expected an indented block'],
    ['import torch\nif True:\n\tif True:\n\t\tx = torch.ones(1).cuda()\n\ty = 1\n', null],
    ['import torch\ndef f(a,\n        b):\n    s = """\n  x\n"""\n    # a comment\n  # an odd one\n    return torch.ones(1).cuda() + [1,\n 2][0]\n\nif 1: y = 2\nclass A: pass\nz = 1 \\\n      + 2\n', null],
    ['import torch\r\nif True:\r\n    x = torch.ones(1).cuda()\r\n', null],
  ];
  const python = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : null;

  it('follows CPython: the same verdict as compile()', () => {
    for (const [src, message] of cases) {
      expect(indentationError(src)?.message ?? null, src).toBe(message);
      if (!python) continue;
      const r = spawnSync(python, ['-c', 'import sys; compile(sys.stdin.read(), "t.py", "exec")'], { input: src, encoding: 'utf8' });
      expect(r.status === 0, `python3 compile() on ${JSON.stringify(src)}: ${r.stderr}`).toBe(message === null);
    }
  });

  it('refuses to bulk-fix such a file, as for other syntax errors', () => {
    for (const [src, message] of cases) {
      const r = fixDocument(pythonDocument('t.py', src), TPU101, tpuOnly, { unsafe: true });
      expect(r.syntaxErrors ?? false, src).toBe(message !== null);
      expect(r.applied > 0, src).toBe(message === null);
    }
  });

  it('checks notebook cells one by one (each compiles alone)', () => {
    const doc = notebookDocument('nb.ipynb', [
      { kind: 'code', text: 'import torch\nif True:\n    pass' },
      { kind: 'code', text: '  x = torch.ones(1).cuda()' },
    ]);
    expect(fixDocument(doc, TPU101, tpuOnly, { unsafe: true }).syntaxErrors).toBe(true);
  });
});

describe('edits', () => {
  it('deletes a statement, or replaces a lone one with pass', () => {
    const text = 'if a:\n    f()\nelse:\n    g()\n    h()\n';
    const tree = parsePython(text);
    const calls = tree.rootNode.descendantsOfType('expression_statement');
    expect(applyEdits(text, [deleteStatement(text, calls[0]!)])).toBe('if a:\n    pass\nelse:\n    g()\n    h()\n');
    expect(applyEdits(text, [deleteStatement(text, calls[1]!)])).toBe('if a:\n    f()\nelse:\n    h()\n');
  });

  it('skips overlapping fixes: first wins', () => {
    const doc = pythonDocument('t.py', 'abc');
    const r = applyFixBatch(doc, [
      { title: 'a', applicability: 'safe', edits: [{ start: 0, end: 2, text: 'X' }], imports: [], needsAccel: false },
      { title: 'b', applicability: 'safe', edits: [{ start: 1, end: 3, text: 'Y' }], imports: [], needsAccel: false },
    ]);
    expect(r.applied).toEqual([0]);
    expect((r.doc as { text: string }).text).toBe('Xc');
  });
});

describe('suppressions', () => {
  const count = (text: string) => analyze(pythonDocument('t.py', text), TPU101, tpuOnly).findings.length;
  it('honours line, line-above, statement and file directives', () => {
    expect(count('x.cuda()\n')).toBe(1);
    expect(count('x.cuda()  # tpu-ready: ignore[TPU101]\n')).toBe(0);
    expect(count('x.cuda()  # tpu-ready: ignore[TPU201]\n')).toBe(1);
    expect(count('x.cuda()  # tpu-ready: ignore\n')).toBe(0);
    expect(count('# tpu-ready: ignore[TPU101]\nx.cuda()\n')).toBe(0);
    expect(count('f(a,  # tpu-ready: ignore[TPU101]\n  x.cuda())\n')).toBe(0);
    expect(count('# tpu-ready: ignore-file[TPU101]\nimport torch\n\nx.cuda()\n')).toBe(0);
  });

  it('adds an ignore comment, merging into an existing one', () => {
    const text = 'y = x.cuda()  # tpu-ready: ignore[TPU201]\nz = x.cuda()\n';
    const tree = parsePython(text);
    const calls = tree.rootNode.descendantsOfType('call');
    expect(applyEdits(text, [suppressionEdit(text, calls[0]!, 'TPU101')])).toBe('y = x.cuda()  # tpu-ready: ignore[TPU201, TPU101]\nz = x.cuda()\n');
    expect(applyEdits(text, [suppressionEdit(text, calls[1]!, 'TPU101')])).toBe('y = x.cuda()  # tpu-ready: ignore[TPU201]\nz = x.cuda()  # tpu-ready: ignore[TPU101]\n');
  });
});

describe('config', () => {
  it('reads [tool.tpu-ready] and reports problems by name', () => {
    const { config, problems } = parseProjectConfig(
      '[tool.tpu-ready]\nselect = ["TPU1"]\ntarget-version = "2.6"\nfix-style = "tpu-only"\nbogus = 1\n[tool.tpu-ready.per-file-ignores]\n"tests/**" = ["TPU2"]\n',
    );
    expect(config).toMatchObject({ select: ['TPU1'], targetVersion: '2.6', fixStyle: 'tpu-only', perFileIgnores: { 'tests/**': ['TPU2'] } });
    expect(problems.map((p) => p.message)).toEqual(['[tool.tpu-ready] unknown key "bogus"']);
    expect(parseProjectConfig('[tool.tpu-ready\n').problems[0].message).toMatch(/not valid TOML/);
    expect(parseProjectConfig('[tool.tpu-ready]\ntarget = "gpu"\n').problems[0].message).toMatch(/target must be/);
  });

  it('places each problem on the line of its key, else leaves the line to the host (the table header)', () => {
    const text = [
      '[project]',
      'name = "x"  # target = "gpu" here is not ours',
      '',
      '[tool.tpu-ready]',
      'select = ["TPU1"]',
      'bogus-key = 1',
      "'fix-style' = \"fast\"",
      'ignore = 3',
      '',
      '[tool.tpu-ready.per-file-ignores]',
      '"tests/**" = 2',
      '',
      '[[tool.other]]',
      'target = "gpu"',
    ].join('\n');
    const { problems } = parseProjectConfig(text);
    expect(problems.map((p) => [p.line, p.message.replace(/ must be.*| unknown key/, '')])).toEqual([
      [6, '[tool.tpu-ready] "bogus-key"'],
      [8, '[tool.tpu-ready] ignore'],
      [11, '[tool.tpu-ready] per-file-ignores."tests/**"'],
      [7, '[tool.tpu-ready] fix-style'],
    ]);
    expect(configHeaderLine(text)).toBe(4);
    expect(configHeaderLine('[tool.tpu-ready.per-file-ignores]\n"a" = ["TPU1"]\n')).toBe(1);
    expect(configHeaderLine('[project]\n')).toBeUndefined();
    // dotted keys at the top level, and invalid TOML with the parser's line
    expect(parseProjectConfig('x = 1\ntool.tpu-ready.target = "gpu"\n').problems).toEqual([{ message: expect.stringMatching(/target must be/), line: 2 }]);
    expect(parseProjectConfig('[tool.tpu-ready]\nselect = ["TPU1"\n\n').problems[0]).toMatchObject({ message: expect.stringMatching(/not valid TOML/), line: expect.any(Number) });
  });

  it('resolves options with precedence flags > pyproject > settings > pinned', () => {
    const { config } = parseProjectConfig('[tool.tpu-ready]\nfix-style = "tpu-only"\nexclude = ["legacy/"]\n[tool.tpu-ready.per-file-ignores]\n"tests/**" = ["TPU2"]\n');
    expect(optionsFor(config, { fixStyle: 'dual-path' }, 'train.py')!.fixStyle).toBe('tpu-only');
    expect(optionsFor(config, {}, 'train.py', null, { fixStyle: 'dual-path' })!.fixStyle).toBe('dual-path');
    expect(optionsFor(config, {}, 'train.py', '2.6')!.target).toEqual({ profile: 'torch_xla', version: '2.6' });
    expect(optionsFor(config, {}, 'legacy/a.py')).toBeNull();
    expect(optionsFor(config, {}, 'tests/unit/a.py')!.ignore).toEqual(['TPU2']);
  });

  it('detects the pinned torch_xla version', () => {
    expect(detectTorchXlaVersion([{ path: 'requirements.txt', text: 'torch==2.8.0\ntorch_xla[tpu]==2.8.0\n' }])).toBe('2.8');
    expect(detectTorchXlaVersion([{ path: 'pyproject.toml', text: 'dependencies = ["torch-xla~=2.6.1"]' }])).toBe('2.6');
    expect(detectTorchXlaVersion([{ path: 'r.txt', text: 'torch\n' }])).toBeNull();
  });

  it('matches globs like gitignore', () => {
    expect(globToRegExp('*.py').test('a/b/c.py')).toBe(true);
    expect(globToRegExp('tests/**').test('tests/x/y.py')).toBe(true);
    expect(globToRegExp('tests/**').test('src/tests/y.py')).toBe(false);
    expect(globToRegExp('legacy/').test('pkg/legacy/a.py')).toBe(true);
  });
});

describe('score', () => {
  it('follows the documented formula', () => {
    expect(fileScore([])).toBe(100);
    expect(fileScore([{ severity: 'error' }])).toBe(82);
    expect(fileScore(Array(5).fill({ severity: 'error' }))).toBe(37);
    expect(fileScore([{ severity: 'warning' }, { severity: 'info' }])).toBe(90);
    expect(workspaceScore([])).toBe(100);
    expect(workspaceScore([{ findings: [], relevant: true }, { findings: [{ severity: 'error', effort: 1 }], relevant: true }, { findings: [], relevant: false }])).toBe(91);
  });
});

describe('text project files', () => {
  it('recognises project file kinds by name', () => {
    expect(textFileKind('requirements-dev.txt')).toBe('requirements');
    expect(textFileKind('docker/Dockerfile.tpu')).toBe('dockerfile');
    expect(textFileKind('scripts/launch.sh')).toBe('shell');
    expect(textFileKind('.env')).toBe('dotenv');
    expect(textFileKind('environment.yml')).toBe('conda');
    expect(textFileKind('train.py')).toBeNull();
    expect(analyze(textDocument('requirements.txt', 'torch\n', 'requirements'), TPU101, tpuOnly).findings).toEqual([]);
  });
});

describe('generated device module', () => {
  it('parses and defines every function the fixes may call', () => {
    const src = accelModuleSource('accel');
    const tree = parsePython(src);
    expect(tree.rootNode.hasError).toBe(false);
    const defs = tree.rootNode.descendantsOfType('function_definition').map((f) => f!.childForFieldName('name')!.text);
    for (const fn of ACCEL_FUNCTIONS) expect(defs).toContain(fn);
    // torch_xla only imported when present
    expect(src).toMatch(/try:[^\n]*\n\s+import torch_xla\n[\s\S]*?except ImportError/);
  });
});

describe('file-level advice on launchers', () => {
  it('TPU804 stays quiet on a launcher that spawns another module\'s _mp_fn (transformers xla_spawn.py)', () => {
    const rules = [RULES_BY_ID.get('TPU804')!];
    const launcher = 'import importlib\nimport sys\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n' +
      'mod = importlib.import_module(sys.argv[1])\nxmp.spawn(mod._mp_fn, args=())\n';
    expect(analyze(pythonDocument('xla_spawn.py', launcher), rules, DEFAULT_OPTIONS).findings).toEqual([]);
    const local = launcher.replace('mod._mp_fn', '_mp_fn') + '\n\ndef _mp_fn(index):\n    pass\n';
    expect(analyze(pythonDocument('train.py', local), rules, DEFAULT_OPTIONS).findings.map((f) => f.rule)).toEqual(['TPU804']);
  });
});

/** Runs `check` on the lines as one parsed file; the tree is freed afterwards. */
function withTree(lines: string[], check: (tree: ReturnType<typeof parsePython>, text: string) => void): void {
  const text = lines.join('\n');
  const tree = parsePython(text);
  try {
    check(tree, text);
  } finally {
    tree.delete();
  }
}

describe('semantic indexes', () => {
  it('identifiersNamed (text search, then the node) finds exactly the identifier nodes of that name', () => {
    withTree([
      'import torch_xla.core.xla_model as xm',
      'xm_rate = 1  # xm in a comment',
      's = "xm in a string"',
      'naïvexm = xm.xla_device()',
      'def f(xm=None):',
      '    return f"{xm}" + xm_rate',
      'é = xm',
    ], (tree, text) => {
      const a = new Semantics(tree, text);
      const b = new Semantics(tree, text);
      for (const name of new Set(b.nodes('identifier').map((n) => n.text))) {
        expect(a.identifiersNamed(name).map((n) => n.startIndex), name).toEqual(
          b.nodes('identifier').filter((n) => n.text === name).map((n) => n.startIndex),
        );
      }
      expect(a.identifiersNamed('xm').length).toBe(5);
    });
  });

  it('callsResolvedTo (the per-file callee index) equals filtering every call by its callee, in document order', () => {
    withTree([
      'import torch',
      'import torch.distributed as dist',
      'from torch import save as tsave',
      'torch.save(torch.save, "a.pt")',
      'tsave(m.state_dict(), f(g(1))(2))',
      'def h():',
      '    dist.init_process_group("nccl"); torch.save(x, p); unknown(1)',
      'obj.method()(torch.save(y, q))',
    ], (tree, text) => {
      const sema = new Semantics(tree, text);
      const calls = sema.nodes('call');
      const names = [...new Set(calls.map((c) => sema.callee(c) ?? ''))];
      const asks = [...names.map((n) => [n]), names, ['torch.save', 'torch.distributed.init_process_group'], ['torch.save', 'torch.save'], ['', 'torch.save'], ['no.such.name']];
      for (const ask of asks) {
        const set = new Set(ask);
        expect(sema.callsResolvedTo(ask).map((c) => c.startIndex * 1000 + c.endIndex), ask.join(',')).toEqual(
          calls.filter((c) => set.has(sema.callee(c) ?? '')).map((c) => c.startIndex * 1000 + c.endIndex),
        );
      }
      expect(sema.callsResolvedTo(['torch.save']).length).toBe(4);
      // a fresh array each time: callers may filter or sort it
      expect(sema.callsResolvedTo(['torch.save'])).not.toBe(sema.callsResolvedTo(['torch.save']));
    });
  });
});
