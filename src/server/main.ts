/**
 * Entry of dist/server.js: `node dist/server.js --stdio` (or `--node-ipc`, `--socket=PORT`, as
 * vscode-languageserver reads them). `tpu-ready server` starts the same server over stdio.
 */
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { startServer } from './server';

if (!process.argv.some((a) => a === '--stdio' || a === '--node-ipc' || a.startsWith('--socket=') || a.startsWith('--pipe='))) process.argv.push('--stdio');
startServer(createConnection(ProposedFeatures.all), { wasmDir: __dirname });
