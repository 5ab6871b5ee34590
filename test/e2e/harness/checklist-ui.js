// UI checks of the migration checklist (what a user sees): the "TPU Readiness" sidebar with the ten
// steps and n/10 progress, and the integration panel, where ticking a step writes
// .tpu-ready/progress.json and moves the tree's progress. Scenarios for ui-checks.js.
'use strict';
const fs = require('fs');
const path = require('path');

module.exports = ({ page: getPage, folder, shot, waitFor }) => {
  const sidebar = async () => (await getPage().locator('.part.sidebar').first().innerText().catch(() => '')).replace(/\u00a0/g, ' ');
  const progressOf = async () => (/(\d+)\/10/.exec(await getPage().locator('.part.sidebar .pane-header', { hasText: 'Checklist' }).first().innerText().catch(() => '')) || [])[1];
  let before;

  /** The frame of the checklist webview (webviews are nested iframes in the workbench). */
  const panelFrame = async () => {
    for (const f of getPage().frames()) {
      if (await f.locator('tpu-checklist').count().catch(() => 0)) return f;
    }
    return null;
  };

  return [
    ['the TPU Readiness sidebar shows the ten checklist steps and n/10 progress', async () => {
      const page = getPage();
      await page.locator('.activitybar .action-item a[aria-label^="TPU Readiness"], .activitybar .action-item[aria-label^="TPU Readiness"]').first().click({ timeout: 30000 });
      await waitFor(async () => (await sidebar()).includes('1. Environment'), 60000, 'the checklist steps in the sidebar');
      // the workspace scan (run when the checklist is first shown) fills in the open findings
      await waitFor(async () => /3\. Move model to the XLA device[\s\S]*?\d+ open/.test(await sidebar()), 60000, 'open findings on step 3');
      const s = await sidebar();
      for (const want of ['1. Environment', '2. Install', '3. Move model to the XLA device', '6. Shape discipline and compilation boundaries', '10. CI and reproducibility']) {
        if (!s.includes(want)) throw new Error(`sidebar lacks "${want}":\n${s}`);
      }
      before = await waitFor(progressOf, 15000, 'n/10 in the Checklist view header');
      if (!/^\d+$/.test(before) || Number(before) > 9) throw new Error(`unexpected progress ${before}/10`);
      await shot('checklist-sidebar');
    }],

    ['the panel opens; ticking step 1 in it writes .tpu-ready/progress.json and moves the tree to n+1/10', async () => {
      const page = getPage();
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible', timeout: 15000 });
      await input.fill('>TPU Readiness: Open Migration Checklist');
      await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Open Migration Checklist' }).first().waitFor({ timeout: 15000 });
      await page.keyboard.press('Enter');
      const frame = await waitFor(panelFrame, 60000, 'the checklist webview');
      await waitFor(async () => (await frame.locator('tpu-checklist vscode-collapsible').count()) === 10, 30000, 'ten steps in the panel');
      const step1 = frame.locator('tpu-checklist vscode-collapsible[data-step="1"]');
      await step1.locator('.collapsible-header').click();
      await step1.locator('vscode-checkbox[data-item="tpu-type"]').click();
      await step1.locator('vscode-checkbox[data-item="host"]').click();
      const file = path.join(folder, '.tpu-ready', 'progress.json');
      await waitFor(() => {
        try {
          const p = JSON.parse(fs.readFileSync(file, 'utf8'));
          return p.steps['1'].ticks['tpu-type'] === true && p.steps['1'].ticks.host === true;
        } catch {
          return false;
        }
      }, 30000, `both ticks of step 1 in ${file}`);
      await waitFor(async () => (await progressOf()) === String(Number(before) + 1), 30000, `the Checklist view header at ${Number(before) + 1}/10`);
      await waitFor(async () => /1\. Environment\s*done/.test(await sidebar()), 15000, 'step 1 shown as done in the tree');
      await page.waitForTimeout(500);
      await shot('checklist-panel');
    }],

    ['the panel lists the open hot-loop findings priced on the workspace config, as estimates with their assumptions', async () => {
      const frame = await waitFor(panelFrame, 30000, 'the checklist webview');
      const section = frame.locator('tpu-checklist section.priced');
      await waitFor(async () => (await section.locator('.priced-finding').count().catch(() => 0)) > 0, 60000, 'priced findings in the panel');
      const t = (await section.innerText()).replace(/\u00a0/g, ' ');
      for (const want of [/cost\/config\.yaml/, /≈ \+[\d.]+ (s|min|h|days)/, /\(estimate: /, /not a measurement/, /\.tpu-ready\/cost\.toml/]) {
        if (!want.test(t)) throw new Error(`the priced findings lack ${want}:\n${t}`);
      }
      const heading = await frame.locator('tpu-checklist #priced-heading').innerText();
      if (!/Priced findings/.test(heading) || !/estimate/.test(heading)) throw new Error(`unexpected heading "${heading}"`);
      await section.locator('.priced-finding details summary').first().click();
      await section.locator('.assumptions').first().waitFor({ state: 'visible', timeout: 5000 });
      await section.scrollIntoViewIfNeeded();
      await getPage().waitForTimeout(300);
      await shot('checklist-priced');
    }],
  ];
};
