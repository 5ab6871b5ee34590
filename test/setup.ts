import path from 'node:path';
import { expect } from 'vitest';
import { initParser } from '../src/core/parse';

const root = path.resolve(__dirname, '..');

/** Loads the pinned runtime and grammar straight from node_modules. */
export function init() {
  return initParser({
    runtime: path.join(root, 'node_modules/web-tree-sitter/web-tree-sitter.wasm'),
    grammar: path.join(root, 'node_modules/tree-sitter-python/tree-sitter-python.wasm'),
  });
}

export const ROOT = root;

/** A command's error output is one line: no stack trace, no "internal error" (bad input ends in a message). */
export function oneLine(err: string): void {
  expect(err).not.toMatch(/\n\s+at /);
  expect(err).not.toContain('internal error');
  expect(err.trim().split('\n')).toHaveLength(1);
}
