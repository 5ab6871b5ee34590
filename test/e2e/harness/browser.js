// Shared by the drivers: headless Debian Chromium through playwright-core (installed by scripts/e2e.sh
// into its cache folder, outside the project's node_modules, and passed in PLAYWRIGHT_CORE).
'use strict';
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');

const t0 = Date.now();
exports.log = (...args) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...args);

exports.launch = () =>
  chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });

exports.newPage = async (browser) => (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();

/** Polls `fn` until it returns a truthy value. */
exports.waitFor = async (fn, ms, what) => {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}; last: ${String(last).slice(0, 300)}`);
};

/** The workbench URL of a folder, with optional launch `payload` (what the desktop takes as flags). */
exports.workbenchUrl = (port, folder, payload) => {
  let url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`;
  if (payload) url += `&payload=${encodeURIComponent(JSON.stringify(payload))}`;
  return url;
};
