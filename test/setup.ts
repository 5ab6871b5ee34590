import path from 'node:path';
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
