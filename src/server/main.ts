/**
 * Entry of dist/server.js: `node dist/server.js --stdio` (or `--node-ipc`, `--socket=PORT`, as
 * vscode-languageserver reads them). `tpu-ready server` starts the same server over stdio. `--background` lowers
 * its CPU priority (nice 10).
 */
import os from 'node:os';
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { startServer } from './server';

// `--background` (the VS Code extension passes it): analysis yields the CPU to the editor on a busy machine
if (process.argv.includes('--background')) {
  try {
    os.setPriority(process.pid, 10);
  } catch {
    // not permitted here: normal priority
  }
}

if (!process.argv.some((a) => a === '--stdio' || a === '--node-ipc' || a.startsWith('--socket=') || a.startsWith('--pipe='))) process.argv.push('--stdio');
startServer(createConnection(ProposedFeatures.all), { wasmDir: __dirname });
