/** Kept in sync with package.json by test/catalog.test.ts. */
export const VERSION = '0.1.0';
