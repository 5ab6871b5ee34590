import { defineConfig } from 'vitest/config';

/** Browser tests of the panel's components (Chromium via playwright-core): `npm run test:webview`. */
export default defineConfig({
  test: {
    include: ['test/webview/**/*.spec.ts'],
    testTimeout: 60000,
    hookTimeout: 60000,
    fileParallelism: false,
  },
});
