/**
 * The integration panel's components in a real browser (Debian's Chromium through playwright-core),
 * loaded exactly as the panel loads them: the same HTML shell and CSP, the bundled webview/main.ts,
 * and a stand-in for VS Code's `acquireVsCodeApi` that records what the page posts and stores.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checklistVM, emptyProgress, NO_FACTS, recordSnapshot, setNote, setTick, webviewHtml, type ChecklistFinding } from '../../src/checklist';
import type { ChecklistVM } from '../../src/protocol/checklist';
import { buildCostVM, estimateFromFiles, pricedFindingsVM } from '../../src/cost';
import type { Step } from '../../src/core/types';

const ROOT = path.resolve(__dirname, '../..');
const ORIGIN = 'https://panel.test';
const NONCE = 'testnonce0123456789';
const XSS = '<img src=x onerror="window.__xss=(window.__xss||0)+1">';
const ARTIFACTS = path.join(ROOT, '.ci/out/webview');

let context: BrowserContext;
let bundle: string;

/** VS Code's dark theme variables, as the workbench injects them (a subset). */
const THEMES: Record<string, string> = {
  dark: '--vscode-foreground:#cccccc;--vscode-editor-background:#1f1f1f;--vscode-descriptionForeground:#9d9d9d;--vscode-textLink-foreground:#4daafc;--vscode-focusBorder:#0078d4;--vscode-button-background:#0078d4;--vscode-button-foreground:#fff;--vscode-charts-red:#f14c4c;--vscode-charts-green:#89d185;--vscode-font-family:sans-serif;--vscode-font-size:13px',
  light: '--vscode-foreground:#3b3b3b;--vscode-editor-background:#ffffff;--vscode-descriptionForeground:#717171;--vscode-textLink-foreground:#005fb8;--vscode-focusBorder:#005fb8;--vscode-button-background:#005fb8;--vscode-button-foreground:#fff;--vscode-charts-red:#e51400;--vscode-charts-green:#388a34;--vscode-font-family:sans-serif;--vscode-font-size:13px',
  'high-contrast': '--vscode-foreground:#ffffff;--vscode-editor-background:#000000;--vscode-descriptionForeground:#ffffff;--vscode-textLink-foreground:#21a6ff;--vscode-focusBorder:#f38518;--vscode-contrastBorder:#6fc3df;--vscode-charts-red:#f14c4c;--vscode-charts-green:#89d185;--vscode-font-family:sans-serif;--vscode-font-size:13px',
};

function page_html(theme: string): string {
  const html = webviewHtml({ nonce: NONCE, cspSource: ORIGIN, scriptUri: `${ORIGIN}/main.js`, title: 'TPU Readiness' });
  const fake = `<style nonce="${NONCE}">html{${THEMES[theme]}}</style>
<script nonce="${NONCE}">
window.__posted = []; window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
window.acquireVsCodeApi = () => ({
  postMessage: (m) => window.__posted.push(JSON.parse(JSON.stringify(m))),
  getState: () => JSON.parse(sessionStorage.getItem('state') || 'null') || undefined,
  setState: (s) => sessionStorage.setItem('state', JSON.stringify(s)),
});
</script>`;
  return html.replace('<script type="module"', `${fake}\n<script type="module"`);
}

function sampleVM(note = 'v5e-8 in us-central2'): ChecklistVM {
  const f = (step: Step, o: Partial<ChecklistFinding>): ChecklistFinding => ({
    rule: 'TPU101', step, severity: 'error', message: '`m.cuda()` places work on a CUDA device', path: 'train.py', uri: 'file:///ws/train.py', line: 6, column: 9, cell: null, fix: { applicability: 'safe' }, ...o,
  });
  let progress = setNote(setTick(setTick(emptyProgress(), 1, 'tpu-type', true), 1, 'host', true), 3, note);
  const open = (n: number) => ({ 1: 0, 2: 1, 3: n, 4: 2, 5: 1, 6: 3, 7: 0, 8: 1, 9: 0, 10: 0 }) as Record<Step, number>;
  progress = recordSnapshot(progress, { date: '2026-01-05', score: 21, done: 0, open: open(9) });
  progress = recordSnapshot(progress, { date: '2026-01-12', score: 38, done: 1, open: open(5) });
  progress = recordSnapshot(progress, { date: '2026-01-19', score: 57, done: 1, open: open(2) });
  return checklistVM({
    profile: 'torch_xla', score: 57, facts: { ...NO_FACTS, importsTpuStack: true }, progress,
    findings: [f(3, {}), f(3, { rule: 'TPU102', path: `src/${XSS}.py`, message: `device ${XSS} flows`, line: 12, severity: 'warning', fix: null }), f(6, { rule: 'TPU201', message: 'host read', cell: 2, path: 'nb.ipynb' })],
  });
}

async function open(theme = 'dark'): Promise<Page> {
  const page = await context.newPage();
  await page.route(`${ORIGIN}/**`, (route) => {
    const url = new URL(route.request().url());
    if (url.pathname === '/main.js') return route.fulfill({ contentType: 'text/javascript', body: bundle });
    return route.fulfill({ contentType: 'text/html', body: page_html(theme) });
  });
  await page.goto(`${ORIGIN}/index.html?theme=${theme}`);
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === 'ready'));
  return page;
}

const post = (page: Page, msg: unknown) => page.evaluate((m) => window.postMessage(m, '*'), msg);
const posted = (page: Page) => page.evaluate(() => (window as unknown as { __posted: { type: string; body: Record<string, unknown> }[] }).__posted);
/** Text of the panel, through every shadow root. */
const deepText = (page: Page) =>
  page.evaluate(() => {
    const walk = (n: Node): string => {
      let s = n.nodeType === Node.TEXT_NODE ? n.textContent ?? '' : '';
      if (n instanceof Element && n.shadowRoot) s += walk(n.shadowRoot);
      n.childNodes.forEach((c) => (s += walk(c)));
      return s;
    };
    return walk(document.body).replace(/\s+/g, ' ');
  });
const deepCount = (page: Page, selector: string) =>
  page.evaluate((sel) => {
    let count = 0;
    const walk = (root: Document | ShadowRoot) => {
      count += root.querySelectorAll(sel).length;
      root.querySelectorAll('*').forEach((e) => e.shadowRoot && walk(e.shadowRoot));
    };
    walk(document);
    return count;
  }, selector);

beforeAll(async () => {
  const out = await esbuild.build({ entryPoints: [path.join(ROOT, 'webview/main.ts')], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'error' });
  bundle = out.outputFiles[0].text;
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  context = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-chromium-')), {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    viewport: { width: 900, height: 1400 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}, 60000);

afterAll(async () => {
  await context?.close();
});

describe('integration panel (Chromium)', () => {
  let page: Page;
  beforeEach(async () => {
    page = await open();
  });

  it('renders score, n/10 progress, burn-down and the ten steps under the strict CSP', async () => {
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost: null } });
    await page.waitForFunction(() => document.querySelector('tpu-checklist')?.shadowRoot?.querySelectorAll('vscode-collapsible').length === 10);
    const text = await deepText(page);
    expect(text).toContain('57/100');
    expect(text).toContain('1/10 steps done');
    expect(await page.locator('tpu-checklist vscode-collapsible').evaluateAll((els) => els.map((e) => (e as unknown as { heading: string }).heading))).toEqual([
      '1. Environment', '2. Install', '3. Move model to the XLA device', '4. Data input and static shapes', '5. Mixed precision',
      '6. Shape discipline and compilation boundaries', '7. Distributed training', '8. Checkpointing and resilience', '9. Profiling and debugging', '10. CI and reproducibility',
    ]);
    expect(await deepCount(page, 'svg rect.bar')).toBe(3);
    expect(await page.locator('tpu-burndown svg').getAttribute('aria-label')).toMatch(/open findings 17 to 10, score 21 to 57/);
    expect(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations)).toEqual([]);
    for (const theme of Object.keys(THEMES)) {
      const p = theme === 'dark' ? page : await open(theme);
      if (p !== page) await post(p, { type: 'state', body: { checklist: sampleVM(), cost: null } });
      await p.locator('tpu-checklist vscode-collapsible[data-step="3"]').evaluate((e) => ((e as unknown as { open: boolean }).open = true));
      await p.waitForTimeout(200);
      await p.screenshot({ path: path.join(ARTIFACTS, `panel-${theme}.png`), fullPage: true });
    }
  });

  it('a note, a path and a message carrying <img onerror> render as text and run nothing', async () => {
    await post(page, { type: 'state', body: { checklist: sampleVM(`see ${XSS}`), cost: null } });
    await page.locator('tpu-checklist vscode-collapsible[data-step="3"]').evaluate((e) => ((e as unknown as { open: boolean }).open = true));
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await deepCount(page, 'img')).toBe(0);
    expect(await page.locator('#note-3').evaluate((e) => (e as unknown as { value: string }).value)).toBe(`see ${XSS}`);
    const text = await deepText(page);
    expect(text).toContain(`src/${XSS}.py:12`);
    expect(text).toContain(`device ${XSS} flows`);
  });

  it('ticks, notes, finding links, actions and exports become typed messages to the host', async () => {
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost: null } });
    const step = (n: number) => page.locator(`tpu-checklist vscode-collapsible[data-step="${n}"]`);
    await step(2).evaluate((e) => ((e as unknown as { open: boolean }).open = true));
    await step(3).evaluate((e) => ((e as unknown as { open: boolean }).open = true));
    await step(2).locator('vscode-checkbox[data-item="smoke-passed"]').click();
    await step(3).locator('button.link').first().click();
    await step(2).locator('vscode-button[data-action="smokeTest"]').click();
    await step(3).locator('vscode-button[data-action="fixSafe"]').click();
    await page.locator('tpu-checklist vscode-button', { hasText: 'Export report (HTML)' }).click();
    await page.locator('#note-2 >> textarea').fill('passes on v5e-8');
    await page.waitForTimeout(900);
    const msgs = (await posted(page)).filter((m) => m.type !== 'ready');
    expect(msgs).toEqual([
      { type: 'tick', body: { step: 2, item: 'smoke-passed', checked: true } },
      { type: 'openFinding', body: { uri: 'file:///ws/train.py', line: 5, character: 8, cell: null } },
      { type: 'action', body: { step: 2, action: 'smokeTest' } },
      { type: 'action', body: { step: 3, action: 'fixSafe' } },
      { type: 'exportReport', body: { format: 'html' } },
      { type: 'note', body: { step: 2, text: 'passes on v5e-8' } },
    ]);
  });

  it('works with the keyboard: Tab reaches a step header, Enter opens it, Space ticks a box', async () => {
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost: null } });
    await page.waitForTimeout(100);
    const activeStep = () =>
      page.evaluate(() => {
        let a: Element | null = document.activeElement;
        while (a && a.shadowRoot?.activeElement) {
          if (a.tagName === 'VSCODE-COLLAPSIBLE') return Number(a.getAttribute('data-step'));
          a = a.shadowRoot.activeElement;
        }
        return a?.tagName === 'VSCODE-COLLAPSIBLE' ? Number(a.getAttribute('data-step')) : null;
      });
    let found = false;
    for (let i = 0; i < 20 && !found; i++) {
      await page.keyboard.press('Tab');
      found = (await activeStep()) === 1;
    }
    expect(found).toBe(true);
    await page.keyboard.press('Enter');
    await page.waitForTimeout(100);
    expect(await page.locator('tpu-checklist vscode-collapsible[data-step="1"]').evaluate((e) => (e as unknown as { open: boolean }).open)).toBe(true);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    await page.waitForTimeout(100);
    expect((await posted(page)).find((m) => m.type === 'tick')).toEqual({ type: 'tick', body: { step: 1, item: 'tpu-type', checked: false } });
  });

  it('ignores malformed messages, and restores its state (view model, open steps) on reload', async () => {
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost: null } });
    await page.locator('tpu-checklist vscode-collapsible[data-step="4"]').evaluate((e) => ((e as unknown as { open: boolean }).open = true));
    // the collapsible's own toggle event is what the page saves; fire it as a click on the header would
    await page.locator('tpu-checklist vscode-collapsible[data-step="5"] >> .collapsible-header').click();
    for (const bad of [{ type: 'state', body: { checklist: { ...sampleVM(), score: 'x' }, cost: null } }, { type: 'state', body: { checklist: sampleVM(), cost: { status: 'ok' } } }, { type: 'eval', body: { code: 'x' } }, 'state', null, { type: 'state' }]) await post(page, bad);
    await page.waitForTimeout(100);
    expect(await deepText(page)).toContain('57/100');
    await page.reload();
    await page.waitForFunction(() => document.querySelector('tpu-checklist')?.shadowRoot?.querySelectorAll('vscode-collapsible').length === 10);
    expect(await deepText(page)).toContain('57/100');
    expect(await page.locator('tpu-checklist vscode-collapsible[data-step="5"]').evaluate((e) => (e as unknown as { open: boolean }).open)).toBe(true);
  });

  it('shows the estimator section only when the cost module provides a CostVM, with workspace text escaped', async () => {
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost: null } });
    await page.waitForTimeout(100);
    expect(await deepText(page)).not.toContain('Training cost estimate');
    const text = fs.readFileSync(path.join(ROOT, 'test/cost-fixtures/same/train.yaml'), 'utf8');
    const cost = buildCostVM({ report: estimateFromFiles({ configs: [{ path: `cfg/${XSS}.yaml`, text }], today: '2026-01-01' }), forFile: 'x' });
    expect(cost.estimates.length).toBeGreaterThan(0);
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost } });
    await page.waitForFunction(() => !!document.querySelector('tpu-checklist')?.shadowRoot?.querySelector('tpu-estimate'));
    const t = await deepText(page);
    expect(t).toContain('Training cost estimate');
    expect(t).toContain(`cfg/${XSS}.yaml`);
    for (const e of cost.estimates) expect(t).toContain(e.display.cost);
    expect(await deepCount(page, 'tpu-estimate')).toBe(1);
    expect(await deepCount(page, 'img')).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await page.locator('tpu-checklist vscode-button', { hasText: 'Estimate training cost' }).click();
    expect((await posted(page)).some((m) => m.type === 'estimateCost')).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'panel-estimate.png'), fullPage: true });
  });
  it('lists priced findings as estimates with their assumptions, in their own section and under the step finding, escaped', async () => {
    const text = fs.readFileSync(path.join(ROOT, 'test/cost-fixtures/same/train.yaml'), 'utf8');
    const report = estimateFromFiles({ configs: [{ path: 'cfg/train.yaml', text }], today: '2026-01-01' });
    const estimate = report.estimates.find((e) => e.cost !== null)!;
    const priced = pricedFindingsVM(
      [
        // the sample checklist's TPU201 (step 6, notebook cell 2), and a loader finding in a file whose name and message carry markup
        { rule: 'TPU201', severity: 'warning', message: 'host read', path: 'nb.ipynb', uri: 'file:///ws/train.py', line: 6, column: 9, cell: 2 },
        { rule: 'TPU401', severity: 'warning', message: `batches moved by hand ${XSS}`, path: `src/${XSS}.py`, uri: 'file:///ws/x.py', line: 3, column: 5, cell: null },
        { rule: 'TPU101', severity: 'error', message: 'not priced', path: 'train.py', uri: 'file:///ws/train.py', line: 1, column: 1, cell: null },
      ],
      report,
      estimate,
      `cfg/${XSS}.yaml`,
    );
    expect(priced.findings.map((f) => f.rule).sort()).toEqual(['TPU201', 'TPU401']);
    // a malformed priced list drops the whole message; a state without `priced` shows no section
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost: null, priced: { ...priced, label: 'measured' } } });
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost: null, priced: { ...priced, findings: [{ ...priced.findings[0], hours: 'lots' }] } } });
    await page.waitForTimeout(100);
    expect(await deepText(page)).toContain('Loading the checklist');
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost: null } });
    await page.waitForTimeout(100);
    expect(await deepText(page)).toContain('57/100');
    expect(await deepText(page)).not.toContain('Priced findings');
    await post(page, { type: 'state', body: { checklist: sampleVM(), cost: null, priced } });
    await page.waitForFunction(() => !!document.querySelector('tpu-checklist')?.shadowRoot?.querySelector('.priced-finding'));
    await page.locator('tpu-checklist vscode-collapsible[data-step="6"]').evaluate((e) => ((e as unknown as { open: boolean }).open = true));
    await page.locator('tpu-checklist .priced-finding details').first().evaluate((e) => ((e as HTMLDetailsElement).open = true));
    await page.waitForTimeout(200);
    const t = await deepText(page);
    expect(t).toContain('Priced findings (estimates)');
    expect(t).toContain(`cfg/${XSS}.yaml`);
    expect(t).toContain('an estimate from the assumptions listed with it, not a measurement');
    for (const f of priced.findings) {
      expect(f.summary).toMatch(/^≈ \+.* on .* \(estimate: /);
      expect(t).toContain(f.summary);
    }
    expect(t).toContain(`src/${XSS}.py:3`);
    expect(t).toContain('ms-per-sync = 20 ms: time the device pipeline drains per host read');
    // under the step finding it was made from (step 6, nb.ipynb cell 2, line 6)
    const inline = await page.locator('tpu-checklist vscode-collapsible[data-step="6"] .priced-inline').allInnerTexts();
    expect(inline).toEqual([priced.findings.find((f) => f.rule === 'TPU201')!.summary]);
    expect(await deepCount(page, 'img')).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await page.locator('tpu-checklist .priced-finding[data-rule="TPU401"] button.link').click();
    expect((await posted(page)).filter((m) => m.type === 'openFinding')).toEqual([{ type: 'openFinding', body: { uri: 'file:///ws/x.py', line: 2, character: 4, cell: null } }]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'panel-priced.png'), fullPage: true });
    // restored after a reload, with the rest of the state
    await page.reload();
    await page.waitForFunction(() => !!document.querySelector('tpu-checklist')?.shadowRoot?.querySelector('.priced-finding'));
  });
});
