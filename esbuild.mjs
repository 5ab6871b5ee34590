// Builds the extension (node/cjs, vscode external), the CLI and its worker (node/cjs, vscode NOT
// external: a stray `vscode` import reachable from the engine fails this build), the benchmark, the
// end-to-end test entry, and the webview (browser/esm); copies the tree-sitter wasm files into dist/.
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const exists = (p) => fs.existsSync(p);

const node = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  // web-tree-sitter's ESM build needs import.meta.url, which a CJS bundle lacks: use its CJS build
  alias: { 'web-tree-sitter': './node_modules/web-tree-sitter/web-tree-sitter.cjs' },
};

const configs = [];
if (exists('src/extension/activate.ts')) {
  configs.push({ ...node, entryPoints: ['src/extension/activate.ts'], outfile: 'dist/extension.js', external: ['vscode'] });
}
configs.push({ ...node, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } });
configs.push({ ...node, entryPoints: ['src/cli/worker.ts'], outfile: 'dist/worker.js' });
// the language server (`node dist/server.js --stdio`; the CLI's `tpu-ready server` bundles the same code)
if (exists('src/server/main.ts')) configs.push({ ...node, entryPoints: ['src/server/main.ts'], outfile: 'dist/server.js' });
if (exists('scripts/bench.ts')) configs.push({ ...node, entryPoints: ['scripts/bench.ts'], outfile: 'dist/bench.js' });
if (exists('scripts/gen-docs.ts')) configs.push({ ...node, entryPoints: ['scripts/gen-docs.ts'], outfile: 'dist/gen-docs.js' });
if (exists('test/e2e/suite/index.ts')) {
  configs.push({ ...node, entryPoints: ['test/e2e/suite/index.ts'], outfile: 'dist/test/e2e/index.js', external: ['vscode', 'mocha'] });
}
if (exists('webview/main.ts')) {
  configs.push({
    bundle: true, platform: 'browser', format: 'esm', target: 'es2022', sourcemap: !production, minify: production,
    entryPoints: ['webview/main.ts'], outfile: 'dist/webview/main.js', logLevel: 'warning',
  });
}

function copyAssets() {
  fs.mkdirSync('dist', { recursive: true });
  fs.copyFileSync('node_modules/web-tree-sitter/web-tree-sitter.wasm', 'dist/web-tree-sitter.wasm');
  fs.copyFileSync('node_modules/tree-sitter-python/tree-sitter-python.wasm', 'dist/tree-sitter-python.wasm');
}

copyAssets();
if (watch) {
  for (const c of configs) await (await esbuild.context(c)).watch();
} else {
  await Promise.all(configs.map((c) => esbuild.build(c)));
  if (exists('dist/cli.js')) fs.chmodSync(path.resolve('dist/cli.js'), 0o755);
}
