/**
 * The language server as an editor drives it: `node server.js --stdio` (and `tpu-ready server`) in a
 * subprocess, a plain JSON-RPC client over its stdin/stdout. Built into a temporary folder first, so this
 * never races the CLI test's build of dist/.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { CancellationTokenSource, createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import type { ServerOptions } from '../src/server/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
/** Neovim (Debian's is 0.7) when installed: the editor check below skips without it (CI does not install it). */
const NVIM = spawnSync('nvim', ['--version'], { encoding: 'utf8' }).stdout?.match(/^NVIM v(\S+)/)?.[1] ?? null;
let OUT: string;
let WS: string;

beforeAll(async () => {
  OUT = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-lsp-'));
  const common = {
    bundle: true, platform: 'node' as const, format: 'cjs' as const, target: 'node20', logLevel: 'warning' as const, absWorkingDir: ROOT,
    alias: { 'web-tree-sitter': './node_modules/web-tree-sitter/web-tree-sitter.cjs' },
  };
  await Promise.all([
    esbuild.build({ ...common, entryPoints: ['src/server/main.ts'], outfile: path.join(OUT, 'server.js') }),
    esbuild.build({ ...common, entryPoints: ['src/cli/main.ts'], outfile: path.join(OUT, 'cli.js') }),
  ]);
  fs.copyFileSync(path.join(ROOT, 'node_modules/web-tree-sitter/web-tree-sitter.wasm'), path.join(OUT, 'web-tree-sitter.wasm'));
  fs.copyFileSync(path.join(ROOT, 'node_modules/tree-sitter-python/tree-sitter-python.wasm'), path.join(OUT, 'tree-sitter-python.wasm'));
  WS = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-lsp-ws-'));
});

afterAll(() => {
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.rmSync(WS, { recursive: true, force: true });
});

interface Published {
  uri: string;
  diagnostics: { range: { start: { line: number; character: number }; end: { line: number; character: number } }; code: string; source: string; severity: number; message: string; codeDescription?: { href: string }; data?: unknown }[];
}

class Client {
  readonly proc: ChildProcess;
  readonly rpc: MessageConnection;
  readonly published = new Map<string, Published[]>();
  private waiters: { test: (p: Published) => boolean; resolve: (p: Published) => void }[] = [];
  readonly applied: unknown[] = [];
  readonly progressTokens: (string | number)[] = [];
  readonly progress: { token: string | number; value: { kind: string; message?: string } }[] = [];
  stderr = '';

  constructor(args: string[], readonly capabilities: Record<string, unknown>, readonly initializationOptions: unknown = undefined) {
    this.proc = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr!.on('data', (d) => (this.stderr += d));
    this.rpc = createMessageConnection(new StreamMessageReader(this.proc.stdout!), new StreamMessageWriter(this.proc.stdin!));
    this.rpc.onNotification('textDocument/publishDiagnostics', (p: Published) => {
      const list = this.published.get(p.uri) ?? [];
      list.push(p);
      this.published.set(p.uri, list);
      this.waiters = this.waiters.filter((w) => {
        if (!w.test(p)) return true;
        w.resolve(p);
        return false;
      });
    });
    this.rpc.onRequest('workspace/applyEdit', (p: { edit: unknown }) => {
      this.applied.push(p.edit);
      return { applied: true };
    });
    this.rpc.onRequest('workspace/configuration', (p: { items: unknown[] }) => p.items.map(() => null));
    this.rpc.onRequest('client/registerCapability', () => null);
    this.rpc.onRequest('window/workDoneProgress/create', (p: { token: string | number }) => {
      this.progressTokens.push(p.token);
      return null;
    });
    this.rpc.onNotification('$/progress', (p: { token: string | number; value: { kind: string; message?: string } }) => void this.progress.push(p));
    this.rpc.onNotification('window/logMessage', () => undefined);
    this.rpc.listen();
  }

  async initialize(): Promise<{ capabilities: Record<string, unknown> }> {
    const r = await this.rpc.sendRequest<{ capabilities: Record<string, unknown> }>('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(WS).toString(),
      workspaceFolders: [{ uri: pathToFileURL(WS).toString(), name: 'ws' }],
      capabilities: this.capabilities,
      initializationOptions: this.initializationOptions,
    });
    await this.rpc.sendNotification('initialized', {});
    return r;
  }

  /** The next diagnostics published for `uri` (or one already published) that pass `test`. */
  diagnostics(uri: string, test: (p: Published) => boolean = () => true, timeoutMs = 60000): Promise<Published> {
    const seen = [...(this.published.get(uri) ?? [])].reverse().find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no diagnostics for ${uri} within ${timeoutMs} ms; stderr: ${this.stderr}`)), timeoutMs);
      this.waiters.push({ test: (p) => p.uri === uri && test(p), resolve: (p) => (clearTimeout(timer), resolve(p)) });
    });
  }

  async close(): Promise<number | null> {
    await this.rpc.sendRequest('shutdown');
    const exited = new Promise<number | null>((r) => this.proc.on('exit', (code) => r(code)));
    await this.rpc.sendNotification('exit');
    const code = await exited;
    this.rpc.dispose();
    return code;
  }
}

const PUSH_CAPS = {
  workspace: { workspaceEdit: { documentChanges: true, resourceOperations: ['create'] }, configuration: true, applyEdit: true },
  textDocument: { publishDiagnostics: { relatedInformation: true }, codeAction: { codeActionLiteralSupport: { codeActionKind: { valueSet: ['quickfix', 'source'] } } } },
  notebookDocument: { synchronization: {} },
  window: { workDoneProgress: true },
};

// a non-ASCII line and CRLF line endings: ranges are UTF-16 columns on the editor's lines
const PY = 'import torch\r\n\r\nname = "héllo 🙂"; x = torch.ones(2).cuda()\r\ntorch.cuda.synchronize()\r\n';

/** Applies LSP text edits (UTF-16 line/character ranges, as the client would) to a text. */
function applyEdits(text: string, edits: { range: unknown; newText: string }[]): string {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  const off = (p: { line: number; character: number }) => starts[p.line] + p.character;
  const sorted = edits.map((e) => ({ ...e, range: e.range as { start: { line: number; character: number }; end: { line: number; character: number } } }))
    .sort((a, b) => off(b.range.start) - off(a.range.start));
  let out = text;
  for (const e of sorted) out = out.slice(0, off(e.range.start)) + e.newText + out.slice(off(e.range.end));
  return out;
}

type Action = { title: string; kind?: string; isPreferred?: boolean; edit?: { documentChanges?: { textDocument?: { uri: string; version: number | null }; edits?: { range: unknown; newText: string }[]; kind?: string; uri?: string }[] }; command?: { command: string; arguments: unknown[] } };

// each test starts a server process; on a loaded 2-core machine that takes seconds
describe('tpu-ready language server over stdio', { timeout: 120_000 }, () => {
  it('pushes diagnostics for a .py file and a notebook, answers code actions and commands, follows edits, shuts down', async () => {
    const client = new Client([path.join(OUT, 'server.js'), '--stdio'], PUSH_CAPS);
    const init = await client.initialize();
    expect(init.capabilities.codeActionProvider).toBeTruthy();
    expect(init.capabilities.notebookDocumentSync).toBeTruthy();
    // no pull support declared: no diagnosticProvider, diagnostics are pushed
    expect(init.capabilities.diagnosticProvider).toBeUndefined();

    const uri = pathToFileURL(path.join(WS, 'train.py')).toString();
    await client.rpc.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: PY } });
    const first = await client.diagnostics(uri, (p) => p.diagnostics.length > 0);
    const byRule = Object.fromEntries(first.diagnostics.map((d) => [d.code, d]));
    expect(Object.keys(byRule).sort()).toEqual(['TPU101', 'TPU104']);
    // `torch.ones(2).cuda()`: after `name = "héllo 🙂"; x = ` (the emoji is two UTF-16 units), on line 2 of a CRLF file
    expect(byRule.TPU101.range).toEqual({ start: { line: 2, character: 23 }, end: { line: 2, character: 43 } });
    expect(byRule.TPU104.range).toEqual({ start: { line: 3, character: 0 }, end: { line: 3, character: 24 } });
    expect(byRule.TPU101.source).toBe('tpu-ready');
    expect(byRule.TPU101.severity).toBe(1);
    expect(byRule.TPU101.codeDescription?.href).toMatch(/docs\/rules\/TPU101\.md$/);

    // code actions on the TPU101 diagnostic: the fix (safe, preferred, with the accel module created), ignore, fix-all
    const actions = await client.rpc.sendRequest<Action[]>('textDocument/codeAction', {
      textDocument: { uri },
      range: byRule.TPU101.range,
      context: { diagnostics: [byRule.TPU101] },
    });
    const titles = actions.map((a) => a.title);
    expect(titles).toContain('Ignore TPU101 on this line');
    expect(titles).toContain('Fix all safe TPU issues in this file');
    const fix = actions.find((a) => a.title.startsWith('Replace `.cuda()`'))!;
    expect(fix.isPreferred).toBe(true);
    const changes = fix.edit!.documentChanges!;
    const own = changes.find((c) => c.textDocument?.uri === uri)!;
    expect(own.textDocument!.version).toBe(1);
    expect(own.edits!.some((e) => e.newText.includes('accel.device()'))).toBe(true);
    const accelUri = pathToFileURL(path.join(WS, 'accel.py')).toString();
    expect(changes.some((c) => c.kind === 'create' && c.uri === accelUri)).toBe(true);
    expect(changes.find((c) => c.textDocument?.uri === accelUri)!.edits![0].newText).toMatch(/def device\(/);
    const ignore = actions.find((a) => a.title === 'Ignore TPU101 on this line')!;
    const ignoreEdits = ignore.edit!.documentChanges![0].edits!;
    expect(ignoreEdits).toEqual([{ range: { start: { line: 2, character: 43 }, end: { line: 2, character: 43 } }, newText: '  # tpu-ready: ignore[TPU101]' }]);

    // source.fixAll.tpuReady (what editor.codeActionsOnSave asks for): one resource, an eager edit
    const source = await client.rpc.sendRequest<Action[]>('textDocument/codeAction', {
      textDocument: { uri }, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, context: { diagnostics: [], only: ['source.fixAll'] },
    });
    expect(source.map((a) => a.kind)).toEqual(['source.fixAll.tpuReady']);
    expect(source[0].edit!.documentChanges!.every((c) => c.textDocument?.uri === uri)).toBe(true);
    expect(source[0].command?.command).toBe('tpuReady.server.createAccelModule');

    // executeCommand: fix-all goes back to the client as workspace/applyEdit
    const fixAll = actions.find((a) => a.title === 'Fix all safe TPU issues in this file')!;
    const res = await client.rpc.sendRequest<{ applied: number }>('workspace/executeCommand', fixAll.command);
    expect(res.applied).toBe(2);
    expect(client.applied).toHaveLength(1);
    const appliedEdit = client.applied[0] as NonNullable<Action['edit']>;
    const fixed = applyEdits(PY, appliedEdit.documentChanges!.find((c) => c.textDocument?.uri === uri)!.edits!);
    // the fixed file keeps its CRLF line endings and its non-ASCII line
    expect(fixed).toBe('import torch\r\nimport accel\r\n\r\nname = "héllo 🙂"; x = torch.ones(2).to(accel.device())\r\naccel.sync(wait=True)\r\n');
    // and the module its fixes call is created in the same edit
    expect(appliedEdit.documentChanges!.some((c) => c.kind === 'create' && c.uri === accelUri)).toBe(true);

    // didChange (incremental sync): the .cuda() call is removed, its diagnostic goes away, TPU104 moves up a line
    await client.rpc.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 2 },
      contentChanges: [{ range: { start: { line: 2, character: 0 }, end: { line: 3, character: 0 } }, text: '' }],
    });
    const second = await client.diagnostics(uri, (p) => p.diagnostics.length === 1);
    expect(second.diagnostics[0].code).toBe('TPU104');
    expect(second.diagnostics[0].range.start).toEqual({ line: 2, character: 0 });
    expect((second.diagnostics[0].data as { stamp: string }).stamp).toBe('2');

    // a notebook: cells analysed as one program (the import in cell 0 resolves `t` in cell 2), findings on their cell
    const nbUri = pathToFileURL(path.join(WS, 'nb.ipynb')).toString();
    const cell = (i: number) => `vscode-notebook-cell:${path.join(WS, 'nb.ipynb')}#c${i}`;
    await client.rpc.sendNotification('notebookDocument/didOpen', {
      notebookDocument: {
        uri: nbUri, notebookType: 'jupyter-notebook', version: 1,
        cells: [{ kind: 2, document: cell(0) }, { kind: 1, document: cell(1) }, { kind: 2, document: cell(2) }],
      },
      cellTextDocuments: [
        { uri: cell(0), languageId: 'python', version: 1, text: '%matplotlib inline\nimport torch as t\n' },
        { uri: cell(1), languageId: 'markdown', version: 1, text: '# Notes about t.cuda\n' },
        { uri: cell(2), languageId: 'python', version: 1, text: 'm = t.nn.Linear(2, 2)\nm.cuda()\nt.cuda.synchronize()\n' },
      ],
    });
    const nbDiags = await client.diagnostics(cell(2), (p) => p.diagnostics.length > 0);
    expect(nbDiags.diagnostics.map((d) => d.code)).toEqual(['TPU101', 'TPU104']);
    expect(nbDiags.diagnostics[0].range).toEqual({ start: { line: 1, character: 0 }, end: { line: 1, character: 8 } });
    expect((await client.diagnostics(cell(0))).diagnostics).toEqual([]);
    // the cell's quick-fix edits the cell document; the import the fix needs goes where the engine puts it (the import cell)
    const nbActions = await client.rpc.sendRequest<Action[]>('textDocument/codeAction', {
      textDocument: { uri: cell(2) }, range: nbDiags.diagnostics[0].range, context: { diagnostics: nbDiags.diagnostics },
    });
    const nbFix = nbActions.find((a) => a.title.startsWith('Replace `.cuda()`'))!;
    const touched = nbFix.edit!.documentChanges!.filter((c) => c.textDocument).map((c) => c.textDocument!.uri);
    expect(touched).toContain(cell(2));
    expect(touched.every((u) => u === cell(0) || u === cell(2) || u.endsWith('accel.py'))).toBe(true);

    // editing a cell re-analyses the whole notebook: removing the import in cell 0 leaves `t.cuda.synchronize` unresolved
    await client.rpc.sendNotification('notebookDocument/didChange', {
      notebookDocument: { uri: nbUri, version: 2 },
      change: { cells: { textContent: [{ document: { uri: cell(0), version: 2 }, changes: [{ text: '%matplotlib inline\n' }] }] } },
    });
    const after = await client.diagnostics(cell(2), (p) => (p.diagnostics[0]?.data as { stamp?: string } | undefined)?.stamp?.startsWith('2:') ?? false);
    expect(after.diagnostics.map((d) => d.code)).toEqual(['TPU101']);

    // an open pyproject.toml: problems in [tool.tpu-ready] at their line
    const pyproject = pathToFileURL(path.join(WS, 'sub', 'pyproject.toml')).toString();
    await client.rpc.sendNotification('textDocument/didOpen', { textDocument: { uri: pyproject, languageId: 'toml', version: 1, text: '[project]\nname = "x"\n\n[tool.tpu-ready]\nselct = ["TPU1"]\n' } });
    const config = await client.diagnostics(pyproject, (p) => p.diagnostics.length > 0);
    expect(config.diagnostics.map((d) => [d.code, d.range.start.line, d.message])).toEqual([['config', 4, '[tool.tpu-ready] unknown key "selct"']]);

    // custom request: the findings of the open file, for the checklist, the panel and the tree
    const findings = await client.rpc.sendRequest<{ uri: string; findings: { rule: string }[] }>('tpuReady/findings', { uri });
    expect(findings.findings.map((f) => f.rule)).toEqual(['TPU104']);

    await client.rpc.sendNotification('textDocument/didClose', { textDocument: { uri } });
    await client.diagnostics(uri, (p) => p.diagnostics.length === 0);
    expect(await client.close()).toBe(0);
  });

  it('reads [tool.tpu-ready] from pyproject.toml and the client settings; answers workspace diagnostics to a pull client', async () => {
    const dir = fs.mkdtempSync(path.join(WS, 'proj-'));
    fs.writeFileSync(path.join(dir, 'pyproject.toml'), '[tool.tpu-ready]\nignore = ["TPU104"]\n');
    fs.writeFileSync(path.join(dir, 'on_disk.py'), 'import torch\ntorch.cuda.synchronize()\nx = torch.ones(1).cuda()\n');
    fs.writeFileSync(path.join(WS, 'other.py'), 'import torch\ntorch.cuda.synchronize()\nx = torch.ones(1).cuda()\n');
    const client = new Client([path.join(OUT, 'server.js'), '--stdio'], { ...PUSH_CAPS, workspace: { ...PUSH_CAPS.workspace, configuration: false }, textDocument: { ...PUSH_CAPS.textDocument, diagnostic: {} } }, { settings: { ignore: ['TPU101'] } });
    const init = await client.initialize();
    expect(init.capabilities.diagnosticProvider).toMatchObject({ workspaceDiagnostics: true });
    const uri = pathToFileURL(path.join(dir, 'open.py')).toString();
    await client.rpc.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: 'import torch\ntorch.cuda.synchronize()\nx = torch.ones(1).cuda()\n' } });
    // pulled: pyproject's `ignore` (TPU104) wins over the client's (TPU101) for files under it
    const doc = await client.rpc.sendRequest<{ kind: string; items: { code: string }[] }>('textDocument/diagnostic', { textDocument: { uri } });
    expect(doc.kind).toBe('full');
    expect(doc.items.map((d) => d.code)).toEqual(['TPU101']);
    const ws = await client.rpc.sendRequest<{ items: { uri: string; items: { code: string }[] }[] }>('workspace/diagnostic', { previousResultIds: [] });
    const of = (name: string) => ws.items.find((i) => i.uri.endsWith(name))?.items.map((d) => d.code);
    expect(of('on_disk.py')).toEqual(['TPU101']);
    // outside that project the client's settings apply
    expect(of('other.py')).toEqual(['TPU104']);
    // the open file is live, not from disk
    expect(of('open.py')).toBeUndefined();
    // nothing pushed to a pull client
    expect(client.published.size).toBe(0);
    expect(await client.close()).toBe(0);
  });

  it('`tpu-ready server` speaks the same protocol over stdio; with run = onSave it analyses on open and save only', async () => {
    const client = new Client([path.join(OUT, 'cli.js'), 'server', '--stdio'], PUSH_CAPS, { settings: { run: 'onSave' } });
    await client.initialize();
    const uri = pathToFileURL(path.join(WS, 'cli.py')).toString();
    await client.rpc.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: 'import torch\ntorch.cuda.synchronize()\n' } });
    const d = await client.diagnostics(uri, (p) => p.diagnostics.length > 0);
    expect(d.diagnostics.map((x) => x.code)).toEqual(['TPU104']);
    const before = client.published.get(uri)!.length;
    await client.rpc.sendNotification('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: 'import torch\n' }] });
    await new Promise((r) => setTimeout(r, 800));
    expect(client.published.get(uri)!.length).toBe(before);
    await client.rpc.sendNotification('textDocument/didSave', { textDocument: { uri } });
    await client.diagnostics(uri, (p) => p.diagnostics.length === 0);
    expect(await client.close()).toBe(0);
  });

  it('scans the workspace on request with progress, publishing on files that are not open; a cancelled scan stops', async () => {
    const dir = fs.mkdtempSync(path.join(WS, 'scan-'));
    for (let i = 0; i < 25; i++) fs.writeFileSync(path.join(dir, `m${String(i).padStart(2, '0')}.py`), i % 2 ? 'import torch\ntorch.cuda.synchronize()\n' : 'print(1)\n');
    const client = new Client([path.join(OUT, 'server.js'), '--stdio'], PUSH_CAPS);
    await client.initialize();
    const result = await client.rpc.sendRequest<{ files: { uri: string; findings: { rule: string }[] }[]; score: number; cancelled: boolean }>('tpuReady/scanWorkspace', {});
    expect(result.cancelled).toBe(false);
    const mine = result.files.filter((f) => f.uri.includes(path.basename(dir)));
    expect(mine).toHaveLength(25);
    expect(mine.filter((f) => f.findings.length).map((f) => f.findings.map((x) => x.rule).join())).toEqual(Array(12).fill('TPU104'));
    expect(result.score).toBeLessThan(100);
    const m01 = pathToFileURL(path.join(dir, 'm01.py')).toString();
    expect((await client.diagnostics(m01)).diagnostics.map((d) => d.code)).toEqual(['TPU104']);
    // progress: begin, reports, end on a token the server created
    expect(client.progressTokens).toHaveLength(1);
    const kinds = client.progress.filter((p) => p.token === client.progressTokens[0]).map((p) => p.value.kind);
    expect(kinds[0]).toBe('begin');
    expect(kinds.at(-1)).toBe('end');
    expect(kinds).toContain('report');
    // cancelled at once: the scan stops before the first file
    const cts = new CancellationTokenSource();
    const pending = client.rpc.sendRequest<{ files: unknown[]; cancelled: boolean }>('tpuReady/scanWorkspace', {}, cts.token);
    cts.cancel();
    const stopped = await pending.catch((e: { code?: number }) => ({ files: [], cancelled: e.code === -32800 }));
    expect(stopped.cancelled).toBe(true);
    expect(stopped.files.length).toBeLessThan(result.files.length);
    expect(await client.close()).toBe(0);
  });

  it('ignores a finding in a Dockerfile with a comment line above it (a trailing comment would become an argument)', async () => {
    const client = new Client([path.join(OUT, 'server.js'), '--stdio'], PUSH_CAPS);
    await client.initialize();
    const uri = pathToFileURL(path.join(WS, 'docker', 'Dockerfile')).toString();
    const text = 'FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\nRUN pip install torch==2.3.0\n';
    await client.rpc.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'dockerfile', version: 1, text } });
    const d = (await client.diagnostics(uri, (p) => p.diagnostics.length > 0)).diagnostics[0];
    const actions = await client.rpc.sendRequest<Action[]>('textDocument/codeAction', { textDocument: { uri }, range: d.range, context: { diagnostics: [d] } });
    const ignore = actions.find((a) => a.title === `Ignore ${d.code} on this line`)!;
    const edits = ignore.edit!.documentChanges![0].edits!;
    const fixed = applyEdits(text, edits);
    expect(fixed.split('\n')[d.range.start.line]).toBe(`# tpu-ready: ignore[${d.code}]`);
    await client.rpc.sendNotification('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: fixed }] });
    const after = await client.diagnostics(uri, (p) => (p.diagnostics.length === 0 || (p.diagnostics[0].data as { stamp: string }).stamp === '2') && p !== client.published.get(uri)![0]);
    expect(after.diagnostics.filter((x) => x.code === d.code)).toEqual([]);
    expect(await client.close()).toBe(0);
  });

  it.skipIf(!NVIM)(`Neovim ${NVIM ?? '(not installed: skipped)'} headless: diagnostics arrive, a quick-fix applies, diagnostics follow`, async () => {
    const dir = fs.mkdtempSync(path.join(WS, 'nvim-'));
    const file = path.join(dir, 'train.py');
    fs.writeFileSync(file, 'import torch\n\nx = torch.ones(2).cuda()\ntorch.cuda.synchronize()\n');
    const out = path.join(dir, 'out.txt');
    const r = spawnSync('nvim', ['--headless', '-u', 'NONE', '-i', 'NONE', '-c', `luafile ${path.join(ROOT, 'test/nvim/check.lua')}`], {
      env: { ...process.env, TPU_READY_SERVER: path.join(OUT, 'server.js'), TPU_READY_FILE: file, TPU_READY_OUT: out, XDG_CACHE_HOME: dir, XDG_STATE_HOME: dir },
      timeout: 90_000, encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(fs.readFileSync(out, 'utf8').trim().split('\n')).toEqual([
      'diagnostic 2:4-2:24 TPU101 tpu-ready',
      'diagnostic 3:0-3:24 TPU104 tpu-ready',
      // settings from initializationOptions (Neovim 0.7 answers no workspace/configuration): tpu-only fixes
      'action Replace `.cuda()` with `.to(torch_xla.device())`',
      'action Ignore TPU101 on this line',
      'action Fix all safe TPU issues in this file',
      'line 1 import torch',
      'line 2 import torch_xla',
      'line 3 ',
      'line 4 x = torch.ones(2).to(torch_xla.device())',
      'line 5 torch.cuda.synchronize()',
      'after fix 4 TPU104',
    ]);
  });
});

describe('tpu-ready language server in process', () => {
  /** A server in this process over a pair of streams (the grammar from node_modules: the server's initParser reuses it). */
  async function inProcess(extra: Pick<ServerOptions, 'projectModel'> = {}): Promise<{ rpc: MessageConnection; dispose: () => void }> {
    const { PassThrough } = await import('node:stream');
    const { createConnection, ProposedFeatures } = await import('vscode-languageserver/node');
    const { startServer } = await import('../src/server/server');
    const { init } = await import('./setup');
    await init();
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    const connection = createConnection(ProposedFeatures.all, new StreamMessageReader(toServer), new StreamMessageWriter(toClient));
    const server = startServer(connection, { wasmDir: path.join(ROOT, 'dist'), ...extra });
    const rpc = createMessageConnection(new StreamMessageReader(toClient), new StreamMessageWriter(toServer));
    return {
      rpc,
      dispose: () => {
        rpc.dispose();
        server.dispose();
        connection.dispose();
      },
    };
  }

  it('feeds the project model each analysed text and re-analyses the open files it names as affected', async () => {
    const dir = fs.mkdtempSync(path.join(WS, 'model-'));
    const a = path.join(dir, 'a.py');
    const b = path.join(dir, 'b.py');
    const updates: string[] = [];
    const model = {
      update: (p: string, text: string | null) => {
        updates.push(`${path.basename(p)}:${text?.length ?? 'deleted'}`);
        return p === a ? [a, b] : [p];
      },
      dependants: (p: string) => (p === a ? [b] : []),
      // asked before each analysis of a file: counts the analyses
      viewFor: (p: string) => {
        views.push(path.basename(p));
        return null;
      },
    };
    const views: string[] = [];
    const { rpc, dispose } = await inProcess({ projectModel: model });
    const published: string[] = [];
    rpc.onNotification('textDocument/publishDiagnostics', (p: Published) => void published.push(`${path.basename(p.uri)}:${p.diagnostics.length}`));
    rpc.onRequest('workspace/configuration', (p: { items: unknown[] }) => p.items.map(() => null));
    rpc.listen();
    try {
      await rpc.sendRequest('initialize', { processId: null, rootUri: pathToFileURL(dir).toString(), capabilities: PUSH_CAPS });
      await rpc.sendNotification('initialized', {});
      const until = async (test: () => boolean) => {
        for (let i = 0; i < 600 && !test(); i++) await new Promise((r) => setTimeout(r, 50));
        expect(test()).toBe(true);
      };
      const text = 'import torch\ntorch.cuda.synchronize()\n';
      await rpc.sendNotification('textDocument/didOpen', { textDocument: { uri: pathToFileURL(b).toString(), languageId: 'python', version: 1, text } });
      await until(() => published.includes('b.py:1'));
      await rpc.sendNotification('textDocument/didOpen', { textDocument: { uri: pathToFileURL(a).toString(), languageId: 'python', version: 1, text: 'print(1)\n' } });
      // a.py analysed: the model names b.py affected, and b.py (open) is analysed again
      await until(() => views.filter((x) => x === 'b.py').length === 2);
      expect(updates.slice(0, 2)).toEqual([`b.py:${text.length}`, 'a.py:9']);
      // b.py's text did not change: the model is not told again, so nothing loops; the same findings are not sent again
      await new Promise((r) => setTimeout(r, 500));
      expect(updates).toHaveLength(2);
      expect(views.filter((x) => x === 'b.py')).toHaveLength(2);
      expect(published.filter((x) => x.startsWith('b.py'))).toEqual(['b.py:1']);
    } finally {
      dispose();
    }
  });
  it('answers source.fixAll on save even when an analysis scheduled meanwhile supersedes the one the request started', async () => {
    const dir = fs.mkdtempSync(path.join(WS, 'save-'));
    const uri = pathToFileURL(path.join(dir, 'fix_on_save.py')).toString();
    const { rpc, dispose } = await inProcess();
    const published: number[] = [];
    rpc.onNotification('textDocument/publishDiagnostics', (p: Published) => void (p.uri === uri && published.push(p.diagnostics.length)));
    // the client answers settings slowly (an extension host busy with a save): notifications queue up meanwhile
    let slow = false;
    rpc.onRequest('workspace/configuration', async (p: { items: unknown[] }) => {
      if (slow) await new Promise((r) => setTimeout(r, 300));
      return p.items.map(() => ({ fixStyle: 'tpu-only' }));
    });
    rpc.listen();
    try {
      await rpc.sendRequest('initialize', { processId: null, rootUri: pathToFileURL(dir).toString(), capabilities: PUSH_CAPS });
      await rpc.sendNotification('initialized', {});
      const text = 'import torch\n\nmodel = torch.nn.Linear(4, 4).cuda()\nx = torch.randn(2, 4).cuda()\n';
      await rpc.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
      for (let i = 0; i < 600 && !published.some((n) => n >= 2); i++) await new Promise((r) => setTimeout(r, 50));
      expect(published.some((n) => n >= 2)).toBe(true);
      slow = true;
      // an edit, a settings change (re-analysis of every open file), the save's fix-all request, another settings change
      await rpc.sendNotification('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: `# saved\n${text}` }] });
      await rpc.sendNotification('workspace/didChangeConfiguration', { settings: null });
      const asked = rpc.sendRequest<Action[]>('textDocument/codeAction', {
        textDocument: { uri }, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, context: { diagnostics: [], only: ['source.fixAll.tpuReady'] },
      });
      await rpc.sendNotification('workspace/didChangeConfiguration', { settings: null });
      const actions = await asked;
      expect(actions.map((a) => a.kind)).toEqual(['source.fixAll.tpuReady']);
      const edits = actions[0].edit!.documentChanges!.find((c) => c.textDocument?.uri === uri)!;
      expect(edits.textDocument!.version).toBe(2);
      expect(applyEdits(`# saved\n${text}`, edits.edits!)).toBe('# saved\nimport torch\nimport torch_xla\n\nmodel = torch.nn.Linear(4, 4).to(torch_xla.device())\nx = torch.randn(2, 4).to(torch_xla.device())\n');
    } finally {
      dispose();
    }
  });
  it('tpuReady/fixEdit with the versions a notebook save sees: fixes that text only (waits briefly for changes on their way)', async () => {
    const dir = fs.mkdtempSync(path.join(WS, 'nbsave-'));
    const nbFile = path.join(dir, 'save.ipynb');
    fs.writeFileSync(nbFile, '{}');
    const nbUri = pathToFileURL(nbFile).toString();
    const { rpc, dispose } = await inProcess();
    const published = new Map<string, Published>();
    rpc.onNotification('textDocument/publishDiagnostics', (p: Published) => void published.set(p.uri, p));
    rpc.onRequest('workspace/configuration', (p: { items: unknown[] }) => p.items.map(() => ({ fixStyle: 'tpu-only' })));
    rpc.listen();
    type FixEdit = { edit: { documentChanges: { textDocument: { uri: string; version: number | null }; edits: { range: unknown; newText: string }[] }[] } | null; applied: number };
    try {
      await rpc.sendRequest('initialize', { processId: null, rootUri: pathToFileURL(dir).toString(), capabilities: PUSH_CAPS });
      await rpc.sendNotification('initialized', {});
      // the first cell markdown, as VS Code's save participant meets it
      const cell = (i: number) => `vscode-notebook-cell:${nbFile}#c${i}`;
      const code = 'import torch\nx = torch.randn(2).cuda()\n';
      await rpc.sendNotification('notebookDocument/didOpen', {
        notebookDocument: { uri: nbUri, notebookType: 'jupyter-notebook', version: 1, cells: [{ kind: 1, document: cell(0) }, { kind: 2, document: cell(1) }] },
        cellTextDocuments: [
          { uri: cell(0), languageId: 'markdown', version: 1, text: '# Train' },
          { uri: cell(1), languageId: 'python', version: 1, text: code },
        ],
      });
      for (let i = 0; i < 600 && !published.get(cell(1))?.diagnostics.some((d) => d.code === 'TPU101'); i++) await new Promise((r) => setTimeout(r, 50));
      const fixEdit = (versions?: Record<string, number>) => rpc.sendRequest<FixEdit>('tpuReady/fixEdit', { uri: nbUri, rule: null, createAccel: false, versions });
      // the versions the server has: the fix, on the cell, for that version
      const now = await fixEdit({ [cell(0)]: 1, [cell(1)]: 1 });
      expect(now.applied).toBe(1);
      expect(now.edit!.documentChanges.map((c) => c.textDocument)).toEqual([{ uri: cell(1), version: 1 }]);
      expect(applyEdits(code, now.edit!.documentChanges[0].edits)).toBe('import torch\nimport torch_xla\nx = torch.randn(2).to(torch_xla.device())\n');
      // a version the server never gets: no edit (computed on another text, it would be applied to this one)
      const t0 = performance.now();
      expect(await fixEdit({ [cell(0)]: 1, [cell(1)]: 7 })).toMatchObject({ edit: null, applied: 0 });
      expect(performance.now() - t0).toBeGreaterThanOrEqual(900);
      // the cell edited, its change still on its way when the save asks: the server waits for it and fixes that text
      const edited = `${code}y = torch.ones(2).cuda()\n`;
      const asked = fixEdit({ [cell(0)]: 1, [cell(1)]: 2 });
      await new Promise((r) => setTimeout(r, 100));
      await rpc.sendNotification('notebookDocument/didChange', {
        notebookDocument: { uri: nbUri, version: 2 },
        change: { cells: { textContent: [{ document: { uri: cell(1), version: 2 }, changes: [{ text: edited }] }] } },
      });
      const later = await asked;
      expect(later.applied).toBe(2);
      expect(later.edit!.documentChanges.map((c) => c.textDocument)).toEqual([{ uri: cell(1), version: 2 }]);
      expect(applyEdits(edited, later.edit!.documentChanges[0].edits)).toBe('import torch\nimport torch_xla\nx = torch.randn(2).to(torch_xla.device())\ny = torch.ones(2).to(torch_xla.device())\n');
      // no versions named (the Fix all command): the current text
      expect((await fixEdit()).applied).toBe(2);
    } finally {
      dispose();
    }
  });

  it('finds a sync in a helper module from the training loop of a module that imports it, open or not, and follows edits to that loop', async () => {
    const dir = fs.mkdtempSync(path.join(WS, 'reverse-'));
    const loop = (call: string) =>
      `import torch\nimport helpers\n\n\ndef train(model, loader, opt):\n    for x in loader:\n        loss = model(x).sum()\n        loss.backward()\n${call}        opt.step()\n`;
    fs.writeFileSync(path.join(dir, 'train.py'), loop('        helpers.grad_norms(model)\n'));
    const helper = 'def grad_norms(model):\n    out = []\n    for p in model.parameters():\n        out.append(p.grad.norm().item())\n    return out\n';
    fs.writeFileSync(path.join(dir, 'helpers.py'), helper);
    const helperUri = pathToFileURL(path.join(dir, 'helpers.py')).toString();
    const trainUri = pathToFileURL(path.join(dir, 'train.py')).toString();
    const { rpc, dispose } = await inProcess();
    const published = new Map<string, Published[]>();
    rpc.onNotification('textDocument/publishDiagnostics', (p: Published) => void published.set(p.uri, [...(published.get(p.uri) ?? []), p]));
    rpc.onRequest('workspace/configuration', (p: { items: unknown[] }) => p.items.map(() => null));
    rpc.listen();
    const latest = (uri: string) => published.get(uri)?.at(-1)?.diagnostics.map((d) => `${d.code}:${d.range.start.line}`) ?? null;
    const until = async (what: string, test: () => boolean) => {
      for (let i = 0; i < 600 && !test(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(test(), what).toBe(true);
    };
    try {
      await rpc.sendRequest('initialize', { processId: null, rootUri: pathToFileURL(dir).toString(), workspaceFolders: [{ uri: pathToFileURL(dir).toString(), name: 'w' }], capabilities: PUSH_CAPS });
      await rpc.sendNotification('initialized', {});
      // only the helper is open: the loop that makes it hot is read from disk
      await rpc.sendNotification('textDocument/didOpen', { textDocument: { uri: helperUri, languageId: 'python', version: 1, text: helper } });
      await until('the helper analysed', () => latest(helperUri) !== null);
      expect(latest(helperUri)).toEqual(['TPU201:3']);
      // the loop opened and edited so that it no longer calls the helper: the helper is analysed again, with no sync
      await rpc.sendNotification('textDocument/didOpen', { textDocument: { uri: trainUri, languageId: 'python', version: 1, text: loop('        helpers.grad_norms(model)\n') } });
      await rpc.sendNotification('textDocument/didChange', { textDocument: { uri: trainUri, version: 2 }, contentChanges: [{ text: loop('') }] });
      await until('the helper analysed again without the sync', () => JSON.stringify(latest(helperUri)) === '[]');
      // and back: the call in the loop again
      await rpc.sendNotification('textDocument/didChange', { textDocument: { uri: trainUri, version: 3 }, contentChanges: [{ text: loop('        helpers.grad_norms(model)\n') }] });
      await until('the sync again', () => JSON.stringify(latest(helperUri)) === '["TPU201:3"]');
    } finally {
      dispose();
    }
  });
  it('resolves the imports of a notebook in the workspace folder: a tie in a project module behind the move in a cell', async () => {
    const dir = fs.mkdtempSync(path.join(WS, 'nbproject-'));
    fs.writeFileSync(path.join(dir, 'lm.py'), 'import torch.nn as nn\n\n\nclass LM(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.wte = nn.Embedding(8, 4)\n        self.lm_head = nn.Linear(4, 8, bias=False)\n        self.lm_head.weight = self.wte.weight\n');
    const nbFile = path.join(dir, 'train.ipynb');
    fs.writeFileSync(nbFile, '{}');
    const { rpc, dispose } = await inProcess();
    const published = new Map<string, Published>();
    rpc.onNotification('textDocument/publishDiagnostics', (p: Published) => void published.set(p.uri, p));
    rpc.onRequest('workspace/configuration', (p: { items: unknown[] }) => p.items.map(() => null));
    rpc.listen();
    try {
      await rpc.sendRequest('initialize', { processId: null, rootUri: pathToFileURL(dir).toString(), workspaceFolders: [{ uri: pathToFileURL(dir).toString(), name: 'w' }], capabilities: PUSH_CAPS });
      await rpc.sendNotification('initialized', {});
      const cell = (i: number) => `vscode-notebook-cell:${nbFile}#c${i}`;
      await rpc.sendNotification('notebookDocument/didOpen', {
        notebookDocument: { uri: pathToFileURL(nbFile).toString(), notebookType: 'jupyter-notebook', version: 1, cells: [{ kind: 2, document: cell(0) }, { kind: 2, document: cell(1) }] },
        cellTextDocuments: [
          { uri: cell(0), languageId: 'python', version: 1, text: 'import torch\nfrom lm import LM\n' },
          { uri: cell(1), languageId: 'python', version: 1, text: 'model = LM()\nmodel.to("cuda")\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n' },
        ],
      });
      for (let i = 0; i < 600 && !published.get(cell(1))?.diagnostics.some((d) => d.code === 'TPU108'); i++) await new Promise((r) => setTimeout(r, 50));
      const tie = published.get(cell(1))?.diagnostics.find((d) => d.code === 'TPU108');
      expect(tie?.range.start).toEqual({ line: 1, character: 0 });
      expect(tie?.message).toMatch(/^`LM` \(lm\.py\) ties `lm_head\.weight` to `wte\.weight`/);
      const related = (tie as unknown as { relatedInformation: { location: { uri: string; range: { start: { line: number } } } }[] }).relatedInformation;
      expect(related.some((r) => r.location.uri === pathToFileURL(path.join(dir, 'lm.py')).toString() && r.location.range.start.line === 8)).toBe(true);
    } finally {
      dispose();
    }
  });
});
