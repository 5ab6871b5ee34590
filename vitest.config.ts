import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    exclude: ['test/e2e/**', 'test/programs/**', 'node_modules/**', 'webview/**'],
    testTimeout: 60000,
    hookTimeout: 60000,
    pool: 'threads',
  },
});
