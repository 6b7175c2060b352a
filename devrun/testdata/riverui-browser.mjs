// Drives headless Chromium through each service's River UI, as an operator would, and exits
// non-zero at the first thing it does not see. Run by TestRiverUIInABrowser:
//
//   node riverui-browser.mjs spec.json
//
// spec.json: {"playwright": dir holding node_modules/playwright-core, "chromium": path,
//   "userDataDir": fresh dir, "user", "password",
//   "services": [{"name", "url", "queues": [..], "jobs": [{"check", "id", "texts": [..]}]}],
//   "presses": [{"check", "url", "id", "button", "state"}]}
// Each press opens the job's page, clicks the button and waits for the job's new state.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { chromium } = createRequire(spec.playwright + '/')('playwright-core');
const timeout = 15000;

const context = await chromium.launchPersistentContext(spec.userDataDir, {
  executablePath: spec.chromium,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run'],
  httpCredentials: { username: spec.user, password: spec.password },
});
// see waits until the page's visible text holds every one of texts.
async function see(page, what, texts) {
  try {
    await page.waitForFunction(
      (want) => want.every((t) => document.body.innerText.includes(t)),
      texts, { timeout });
  } catch (err) {
    const body = await page.evaluate(() => document.body.innerText).catch(() => '');
    const missing = texts.filter((t) => !body.includes(t));
    throw new Error(`${what}: not shown: ${JSON.stringify(missing)}\n--- page text ---\n${body.slice(0, 3000)}`);
  }
}

let failed = false;
try {
  const page = await context.newPage();
  for (const svc of spec.services) {
    const base = svc.url + '/riverui/';
    // Headless Chromium cancels a login prompt instead of showing it, so the refusal is
    // checked outside the browser.
    const refused = await fetch(base);
    if (refused.status !== 401 || !refused.headers.get('www-authenticate')?.startsWith('Basic ')) {
      throw new Error(`${svc.name}: ${base} without login answered ${refused.status}, want 401 with a Basic challenge`);
    }
    const resp = await page.goto(svc.url + '/riverui/queues');
    if (resp.status() !== 200) {
      throw new Error(`${svc.name}: River UI queues answered ${resp.status()} after login`);
    }
    await see(page, `${svc.name} queues`, svc.queues);
    console.log(`ok ${svc.name}: logged in, queues ${svc.queues.join(', ')}`);
    for (const job of svc.jobs) {
      await page.goto(`${svc.url}/riverui/jobs/${job.id}`);
      await see(page, `${svc.name} ${job.check} (job ${job.id})`, job.texts);
      console.log(`ok ${svc.name}: ${job.check}: job ${job.id} shows ${job.texts.map((t) => JSON.stringify(t)).join(' ')}`);
    }
  }
  for (const p of spec.presses || []) {
    await page.goto(`${p.url}/riverui/jobs/${p.id}`);
    const button = page.getByRole('button', { name: p.button, exact: true });
    await button.click({ timeout });
    await see(page, `${p.check} (job ${p.id}) after pressing ${p.button}`, ['State\n' + p.state]);
    console.log(`ok ${p.check}: pressed ${p.button} on job ${p.id}, River UI shows it ${p.state}`);
  }
} catch (err) {
  console.error(String(err.stack || err));
  failed = true;
} finally {
  await context.close();
}
process.exit(failed ? 1 : 0);
