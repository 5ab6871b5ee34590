/**
 * Mocha entry run inside code-server's Node extension host (the workbench loads it through the
 * `extensionTestsPath` payload; scripts/e2e.sh drives it). Bundled by esbuild.mjs to
 * dist/test/e2e/index.js with `vscode` and `mocha` external (mocha resolves from the project's
 * node_modules). Results also go to $E2E_OUT/ext-tests.json for the harness's summary line.
 */
import fs from 'node:fs';
import path from 'node:path';
import Mocha from 'mocha';

export function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'bdd', timeout: 60_000, color: false, reporter: 'spec' });
  // E2E_GREP is a regular expression over test titles (mocha's grep): an invalid one fails the run by name here,
  // not later as a phase "that produced no results"
  const grep = process.env.E2E_GREP;
  if (grep) {
    let re: RegExp;
    try {
      re = new RegExp(grep);
    } catch (e) {
      const message = `E2E_GREP is not a valid regular expression (${(e as Error).message}); escape ( ) [ ] . * + ? with a backslash`;
      const out = process.env.E2E_OUT;
      if (out) {
        fs.mkdirSync(out, { recursive: true });
        fs.writeFileSync(path.join(out, 'ext-tests.json'), JSON.stringify({ passes: 0, failures: 1, pending: 0, failed: [message] }, null, 2));
      }
      return Promise.reject(new Error(message));
    }
    mocha.grep(re);
  }
  // the suites are bundled into this file: expose describe/it before evaluating them
  mocha.suite.emit(Mocha.Suite.constants.EVENT_FILE_PRE_REQUIRE, globalThis, 'bundle', mocha);
  require('./activation.test');
  require('./diagnostics.test');
  require('./quickfix.test');
  require('./notebook.test');
  require('./config.test');
  require('./commands.test');
  require('./checklist.test');
  require('./cost.test');
  require('./evidence.test');
  require('./responsiveness.test');
  // New surfaces add their suites here: checklist tree view (sidebar), readiness panel (webview), cost lens.
  return new Promise((resolve, reject) => {
    const failed: string[] = [];
    const runner = mocha.run((failures) => {
      const out = process.env.E2E_OUT;
      if (out) {
        fs.mkdirSync(out, { recursive: true });
        const stats = runner.stats ?? { passes: 0, failures, pending: 0 };
        fs.writeFileSync(path.join(out, 'ext-tests.json'), JSON.stringify({ passes: stats.passes, failures: stats.failures, pending: stats.pending, failed }, null, 2));
      }
      if (failures) reject(new Error(`${failures} extension-host test(s) failed`));
      else resolve();
    });
    runner.on(Mocha.Runner.constants.EVENT_TEST_FAIL, (test, err) => failed.push(`${test.fullTitle()}: ${(err as Error)?.message ?? err}`));
  });
}
