import { defineConfig } from 'vitest/config';

/**
 * The fixed-program tests (`npm run test:programs`): small training programs run on CPU PyTorch
 * (/usr/bin/python3) before and after `tpu-ready check --fix --unsafe-fixes`. The tests are
 * `it.concurrent`; programs.test.ts limits how many Python processes run at once.
 */
export default defineConfig({
  test: {
    include: ['test/programs/**/*.test.ts'],
    testTimeout: 900000, // includes waiting for a process slot; each Python run is killed after 90 s
    hookTimeout: 120000,
    maxConcurrency: 64,
    fileParallelism: false,
  },
});
