/** Worker thread: analyses batches of files for the CLI's main thread. */
import { parentPort, workerData } from 'node:worker_threads';
import { initParser } from '../core/parse';
import { safeProcess } from './check';
import type { FileTask } from './process';

const ready = initParser((workerData as { wasmDir: string }).wasmDir);
parentPort!.on('message', async (msg: { start: number; tasks: FileTask[] }) => {
  await ready;
  parentPort!.postMessage({ start: msg.start, results: msg.tasks.map(safeProcess) });
});
