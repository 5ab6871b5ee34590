// Runs the mocha suite (dist/test/e2e/index.js) inside code-server's Node extension host: the web
// workbench honours a `payload` of extensionDevelopmentPath + extensionTestsPath and reports the
// runner's output and exit code through window.codeAutomationLog / codeAutomationExit.
// Usage: node ext-tests.js PORT WORKSPACE_FOLDER EXTENSION_DEV_PATH TESTS_INDEX_JS
'use strict';
const util = require('util');
const { launch, log, newPage, workbenchUrl } = require('./browser');

const [port, folder, devPath, testsPath] = process.argv.slice(2);
const TIMEOUT_MS = Number(process.env.E2E_EXT_TIMEOUT_MS || 600000);

(async () => {
  const browser = await launch();
  const page = await newPage(browser);
  let finish;
  const finished = new Promise((r) => (finish = r));
  await page.exposeFunction('codeAutomationLog', (type, args) => {
    for (const line of util.format(...(args || [])).split('\n')) console.log(`  ${line}`);
  });
  await page.exposeFunction('codeAutomationExit', (code) => finish(code));
  page.on('pageerror', (e) => log('page error:', String(e).slice(0, 300)));
  const authority = `127.0.0.1:${port}`;
  await page.goto(
    workbenchUrl(port, folder, [
      ['extensionDevelopmentPath', `vscode-remote://${authority}${devPath}`],
      ['extensionTestsPath', `vscode-remote://${authority}${testsPath}`],
    ]),
  );
  log('workbench loading; extension-host tests starting');
  const code = await Promise.race([finished, new Promise((r) => setTimeout(() => r('timeout'), TIMEOUT_MS))]);
  await browser.close();
  log('extension-host tests exit code:', code);
  process.exit(code === 0 ? 0 : 1);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
