// How tall a report is, in screens of a 1280x800 window: as opened, and with
// every folded part (<details>) open. Uses Debian's chromium, headless.
//   node report/web/page-height.mjs REPORT.html [REPORT.html ...]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const files = process.argv.slice(2);
if (!files.length) {
  console.error('usage: node page-height.mjs REPORT.html [REPORT.html ...]');
  process.exit(2);
}
for (const f of files)
  if (!fs.existsSync(f)) {
    console.error(`page-height.mjs: ${f}: no such file`);
    process.exit(2);
  }
const viewport = { width: 1280, height: 800 };
const context = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(os.tmpdir(), 'page-height-')), {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, viewport,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
try {
  for (const f of files) {
    const page = await context.newPage();
    await page.goto(pathToFileURL(path.resolve(f)).href);
    await page.waitForFunction(() => window.__scalescopeReady === true, null, { timeout: 60000 });
    const opened = await page.evaluate(() => document.documentElement.scrollHeight);
    const folds = await page.evaluate(() => {
      const all = document.querySelectorAll('details');
      for (const d of all) d.open = true;
      return all.length;
    });
    const unfolded = await page.evaluate(() => document.documentElement.scrollHeight);
    const charts = await page.evaluate(() => document.querySelectorAll('.chart').length);
    const screens = px => (px / viewport.height).toFixed(1);
    console.log(`${f}: ${screens(opened)} screens as opened (${opened} px), ${screens(unfolded)} with every ` +
      `section open (${unfolded} px); ${charts} charts, ${folds} folded parts; window ${viewport.width}x${viewport.height}`);
    await page.close();
  }
} finally {
  await context.close();
}
