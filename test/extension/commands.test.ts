/**
 * The extension's commands and settings are typed once (src/extension/commands.ts `CommandId`,
 * src/extension/config.ts `readSettings`) and must match package.json `contributes` both ways.
 * `CommandId` is a `const enum` (inlined by the bundler), so its members are read from the source.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../setup';

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const read = (f: string) => fs.readFileSync(path.join(ROOT, 'src/extension', f), 'utf8');

function commandIds(): Map<string, string> {
  const src = read('commands.ts');
  const body = /export const enum CommandId \{([\s\S]*?)\n\}/.exec(src)![1];
  return new Map([...body.matchAll(/^\s*(\w+) = '([^']+)',?$/gm)].map((m) => [m[1], m[2]]));
}

describe('commands', () => {
  const ids = commandIds();
  const contributed: { command: string; title: string; category?: string }[] = pkg.contributes.commands;

  it('CommandId lists exactly the commands package.json contributes', () => {
    expect(ids.size).toBeGreaterThan(0);
    expect([...ids.values()].sort()).toEqual(contributed.map((c) => c.command).sort());
  });

  it('every command is tpuReady.*, titled, under the "TPU Readiness" category', () => {
    for (const c of contributed) {
      expect(c.command).toMatch(/^tpuReady\.[a-z][A-Za-z]+$/);
      expect(c.title.length).toBeGreaterThan(0);
      expect(c.category).toBe('TPU Readiness');
    }
  });

  it('every CommandId is registered by the extension', () => {
    const dir = path.join(ROOT, 'src/extension');
    const sources = fs.readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => read(f)).join('\n');
    for (const name of ids.keys()) expect(sources, `CommandId.${name}`).toMatch(new RegExp(`register(Command)?\\(CommandId\\.${name},`));
  });

  it('command palette menus name only contributed commands', () => {
    for (const m of pkg.contributes.menus?.commandPalette ?? []) expect([...ids.values()]).toContain(m.command);
  });
});

describe('settings', () => {
  it('readSettings reads exactly the tpuReady.* settings package.json contributes', () => {
    const src = read('config.ts');
    const body = /export function readSettings[\s\S]*?\n\}/.exec(src)![0];
    const read_ = [...body.matchAll(/c\.get<[^>]+>\('([\w.]+)'/g)].map((m) => `tpuReady.${m[1]}`).sort();
    expect(read_).toEqual(Object.keys(pkg.contributes.configuration.properties).sort());
  });

  it('each setting is resource-scoped (multi-root: every folder its own) and documented', () => {
    for (const [key, p] of Object.entries<Record<string, unknown>>(pkg.contributes.configuration.properties)) {
      expect(p.scope, key).toBe('resource');
      expect(p.description ?? p.markdownDescription, key).toBeTruthy();
    }
  });
});

describe('manifest', () => {
  it('activates on Python files, notebooks and training configs only, and supports untrusted workspaces', () => {
    // configs (YAML/JSON/TOML) carry the cost lens; the serializer restores the checklist panel after a reload
    expect(pkg.activationEvents).toEqual([
      'onLanguage:python', 'onNotebook:jupyter-notebook', 'onLanguage:yaml', 'onLanguage:json', 'onLanguage:toml', 'onWebviewPanel:tpuReady.checklistPanel',
    ]);
    expect(pkg.activationEvents.some((e: string) => e === '*' || e === 'onStartupFinished')).toBe(false);
    expect(pkg.capabilities.untrustedWorkspaces.supported).toBe(true);
    expect(pkg.main).toBe('./dist/extension.js');
  });

  it('.vscodeignore is an allowlist that ships the bundle and both wasm files', () => {
    const lines = fs.readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8').split('\n').map((l) => l.trim());
    expect(lines[0]).toBe('**');
    for (const need of ['!dist/extension.js', '!dist/web-tree-sitter.wasm', '!dist/tree-sitter-python.wasm', '!package.json']) expect(lines).toContain(need);
  });
});
