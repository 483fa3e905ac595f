import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

// Debian's chromium (.ci/run installs it when missing), driven headless with playwright-core.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const KEY = 'reference-key';
// A turn that stays in its first tool call long enough to be steered from the page.
const script = [{ tool: { name: 'sleep', args: { ms: 60_000 } } }, { text: 'done' }];

describe('the interactive API reference at /docs', () => {
  let stack: Stack;
  let browser: Browser;
  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
    stack = await startStack({ env: { STEERLINE_API_KEYS: `${KEY}:acme` } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('serves the plain page to terminals and with ?plain, and the reference to browsers under a policy that allows only the gateway', async () => {
    for (const [path, accept] of [['/docs', '*/*'], ['/docs?plain', 'text/html']]) {
      const res = await fetch(`${stack.url}${path}`, { headers: { accept } });
      expect(await res.text()).toContain('<td><code>/v1/turns/:tid/steers</code></td>');
    }
    const page = await fetch(`${stack.url}/docs`, { headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'self'; script-src 'self'; style-src 'self'/);
    expect(await page.text()).toContain('<script src="/docs/assets/swagger-ui-bundle.js"></script>');
    expect((await fetch(`${stack.url}/docs/assets/..%2Fpackage.json`)).status).toBe(404);
  });

  it('finds the steer route, shows its examples, and a steer sent from the page with the API key gets a receipt from the running turn', async () => {
    const auth = { authorization: `Bearer ${KEY}` };
    const cid = (await stack.api('POST', '/conversations', undefined, auth)).body.id;
    const turn = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'Refactor the parser', model: { provider: 'scripted', script } }, auth);
    expect(turn.status).toBe(202);
    const tid: string = turn.body.turnId;

    const page = await browser.newPage();
    const foreign: string[] = [];
    const refused: string[] = [];
    const failed: string[] = [];
    page.on('response', (r) => (r.status() >= 400 ? failed.push(`${r.status()} ${r.url()}`) : undefined));
    page.on('request', (r) => (r.url().startsWith(stack.url) || r.url().startsWith('data:') ? undefined : foreign.push(r.url())));
    page.on('console', (m) => (/Content Security Policy|Refused/i.test(m.text()) ? refused.push(m.text()) : undefined));
    try {
      await page.goto(`${stack.url}/docs`);
      // Authorize with the bearer key, as a person would.
      await page.locator('.auth-wrapper button.authorize').click();
      await page.locator('.modal-ux input').first().fill(KEY);
      await page.locator('.modal-ux .auth-btn-wrapper button.authorize').click();
      await page.locator('.modal-ux button.btn-done').click();

      const steer = page.locator('#operations-steers-steerTurn');
      await steer.locator('.opblock-summary').first().click();
      // The example body comes from the golden fixtures.
      await steer.getByRole('button', { name: 'Try it out' }).click();
      const body = steer.locator('textarea.body-param__text');
      expect(await body.inputValue()).toContain('"text": "use the new API"');
      await steer.locator('tr[data-param-name="tid"] input').fill(tid);
      // The Prefer header is filled in with its example (wait=10): the turn sleeps for a minute, so take the receipt at once.
      await steer.locator('tr[data-param-name="Prefer"] input').fill('');
      await body.fill(JSON.stringify({ text: 'Keep the public API unchanged' }));
      await steer.getByRole('button', { name: 'Execute' }).click();

      const answer = steer.locator('.live-responses-table tr.response');
      await answer.waitFor({ timeout: 15_000 });
      expect((await answer.locator('.response-col_status').innerText()).trim()).toBe('202');
      const receipt = JSON.parse(await answer.locator('.response-col_description pre.microlight').first().innerText()) as Record<string, unknown>;
      expect(receipt).toMatchObject({ turnId: tid, status: 'queued', position: 1, text: 'Keep the public API unchanged' });
      // The page sent the key: the steer is the acme tenant's, in the turn's log.
      const events = await eventually(async () => (await stack.turnEvents(tid)).find((e) => e.event.type === 'SteerQueued'), 10_000, 'SteerQueued');
      expect(events.event).toMatchObject({ tenantId: 'acme', data: { steerId: receipt.steerId } });
      expect({ foreign, refused, failed }).toEqual({ foreign: [], refused: [], failed: [] });
    } finally {
      await page.close();
      await stack.api('POST', `/turns/${tid}/cancel`, {}, auth);
    }
  });
});
