import type { Browser, Page } from 'playwright-core';
import { isTerminalTurnEvent, uuidv7 } from '@steerline/contracts';
import { startGateway, type RunningGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { defaultConsoleDir } from '../../apps/gateway/src/console/console-assets';
import { jsonLogger } from '../../apps/gateway/src/logger';
import { axeViolations, launchChromium } from '../support/browser';
import { eventually } from '../support/env';
import { freePort } from '../support/processes';
import { startStack, type Stack } from '../support/stack';

const sleep = (ms: number) => ({ tool: { name: 'sleep', args: { ms } } });

describe('the console in a real browser', () => {
  let stack: Stack;
  let browser: Browser;
  let gateway: RunningGateway | undefined;
  let port: number;
  const problems: string[] = [];
  const pages: Page[] = [];
  const startConsoleGateway = async (env: Record<string, string> = {}) =>
    startGateway(loadGatewayConfig({ ...stack.env, HOST: '127.0.0.1', PORT: String(port), ...env }), { logger: jsonLogger(['error']) });

  const openPage = async (hash = ''): Promise<Page> => {
    const page = await browser.newPage();
    pages.push(page);
    page.setDefaultTimeout(10_000);
    page.on('console', (m) => m.type() === 'error' && !/Failed to load resource|ERR_CONNECTION_REFUSED|net::/.test(m.text()) && problems.push(m.text()));
    page.on('pageerror', (err) => problems.push(String(err)));
    await page.goto(`http://127.0.0.1:${port}/console${hash}`);
    return page;
  };

  beforeAll(async () => {
    // npm test builds first; a lone `npx jest` of this file needs `npm run build` before it.
    if (!defaultConsoleDir()) throw new Error('dist/console is missing: run `npm run build` first');
    stack = await startStack();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
    await stack?.close();
  });
  beforeEach(async () => {
    port = await freePort();
    problems.length = 0;
  });
  afterEach(async () => {
    for (const page of pages.splice(0)) await page.close();
    await gateway?.close();
    gateway = undefined;
  });

  it('starts a turn, steers it to delivery, withdraws and resends a queued steer, and resumes the timeline across a gateway restart', async () => {
    gateway = await startConsoleGateway();
    const res = await fetch(`http://127.0.0.1:${port}/console`);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'.*connect-src 'self'/);
    const page = await openPage();
    const composer = page.locator('#composer-text');
    const receipt = page.getByTestId('receipt');

    // Each step's sleep leaves the page seconds to act within it, on a busy machine too: step 2 holds
    // a steer, an accessibility scan and a withdrawal, and the turn must outlast the resend after it.
    await page.getByText('Model for new turns').click();
    await page.locator('#script').fill(JSON.stringify([sleep(3000), sleep(7000), sleep(5000), { text: 'the answer' }]));
    await composer.fill('Write a report');
    await composer.press('Enter');
    await page.locator('[data-tool][data-state="running"]').first().waitFor();
    const cid = await eventually(() => new URL(page.url()).hash.slice(1) || undefined, 15_000, 'the conversation in the URL');

    // Enter steers the running turn; its receipt goes from queued to delivered at step 1's boundary.
    await composer.fill('go left');
    await composer.press('Enter');
    expect(await receipt.getAttribute('aria-live')).toBe('polite');
    await eventually(async () => /go left.*queued at position 1/.test((await receipt.textContent()) ?? ''), 15_000, 'the receipt to say queued');
    await page.getByText(/delivered at step 1/).first().waitFor({ timeout: 10_000 });
    await eventually(async () => /go left.*delivered at step 1/.test((await receipt.textContent()) ?? ''), 15_000, 'the receipt to say delivered');
    // In the transcript the steer comes after step 1's tool result.
    await page.locator('.transcript [data-role="steer"]').waitFor({ timeout: 10_000 });
    const roles = await page.locator('.transcript li').evaluateAll((items) => items.map((li) => li.getAttribute('data-role')));
    expect(roles.slice(0, 4)).toEqual(['user', 'assistant', 'tool', 'steer']);

    // A second steer waits for step 2's boundary: withdraw it, and Resend puts its text back in the composer.
    await composer.fill('never mind');
    await composer.press('Enter');
    await page.locator('[data-status="queued"]').waitFor();
    if (process.env.CONSOLE_SCREENSHOT) await page.screenshot({ path: process.env.CONSOLE_SCREENSHOT, fullPage: true });
    const violations = await axeViolations(page);
    expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
    // From the keyboard: the buttons are real buttons, so focus and Enter (or Space) work.
    await page.getByRole('button', { name: 'Withdraw steer 2' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('[data-status="dropped"]', { hasText: 'dropped: withdrawn' }).waitFor();
    await page.getByRole('button', { name: 'Resend steer 2' }).focus();
    await page.keyboard.press('Space');
    await eventually(async () => (await composer.inputValue()) === 'never mind', 15_000, 'the text back in the composer');
    await eventually(async () => (await page.evaluate<string | undefined>('document.activeElement?.id')) === 'composer-text', 15_000, 'the composer focused');

    // The gateway stops and starts again on the same port: the page's stream resumes from Last-Event-ID.
    expect(await page.locator('[data-kind="end"]').count()).toBe(0);
    const streamRequests: (string | undefined)[] = [];
    page.on('request', (r) => r.url().endsWith(`/v1/conversations/${cid}/events`) && streamRequests.push(r.headers()['last-event-id']));
    await gateway.close();
    gateway = await startConsoleGateway();
    await page.locator('[data-kind="end"]').waitFor({ timeout: 20_000 });
    const log = (await stack.nats.readAll()).filter((e) => e.event.conversationId === cid);
    expect(isTerminalTurnEvent(log.at(-1)!.event)).toBe(true);
    const count = (type: string) => log.filter((e) => e.event.type === type).length;
    const kinds = await page.locator('.timeline > li').evaluateAll((items) => items.map((li) => li.getAttribute('data-kind')));
    expect({ step: kinds.filter((k) => k === 'step').length, tool: kinds.filter((k) => k === 'tool').length, steer: kinds.filter((k) => k === 'steer').length, end: kinds.filter((k) => k === 'end').length }).toEqual({
      step: count('ModelRequested'),
      tool: count('ToolCallStarted'),
      steer: count('SteerQueued'),
      end: 1,
    });
    await page.getByText(/Turn completed: the answer/).waitFor();
    // The page asked the new gateway for what came after the last event it had, not for everything.
    const resumedAfter = Number(streamRequests.at(-1));
    expect(resumedAfter).toBeGreaterThan(0);
    expect(log.some((e) => e.streamSeq > resumedAfter)).toBe(true);
    expect(problems).toEqual([]);
  }, 60_000);

  it('approves a call that waits for the person, and edits a queued steer before the model reads it', async () => {
    gateway = await startConsoleGateway();
    // A turn whose sleep calls need approval, started through the API; the page opens on its conversation.
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const started = await stack.api('POST', `/conversations/${cid}/turns`, {
      prompt: 'Clean the logs',
      model: { provider: 'scripted', script: [sleep(3000), { text: 'cleaned' }] },
      approvals: { tools: ['sleep'] },
    });
    expect(started.status).toBe(202);
    const tid = started.body.turnId as string;
    const page = await browser.newPage();
    pages.push(page);
    page.setDefaultTimeout(10_000);
    page.on('pageerror', (err) => problems.push(String(err)));
    await page.goto(`http://127.0.0.1:${port}/console#${cid}`);

    // While the call waits for approval, a steer queues; Edit replaces its text in place.
    await page.getByRole('button', { name: 'Approve sleep' }).waitFor();
    const composer = page.locator('#composer-text');
    await composer.fill('use the old format');
    await composer.press('Enter');
    await page.locator('[data-status="queued"]').waitFor();
    await page.getByRole('button', { name: 'Edit steer 1' }).click();
    const edit = page.getByRole('textbox', { name: 'Edit steer 1' });
    await edit.fill('use the new format');
    await edit.press('Enter');
    await page.locator('[data-status="queued"]', { hasText: 'use the new format' }).waitFor();

    // Approve from the keyboard: the call starts, and at its boundary the edited text is what the model gets.
    await page.getByRole('button', { name: 'Approve sleep' }).focus();
    await page.keyboard.press('Enter');
    const events = await stack.turnEnded(tid, 30_000);
    const types = events.map((e) => e.event.type);
    expect(types.indexOf('ToolApprovalDecided')).toBeGreaterThan(types.indexOf('ToolApprovalRequested'));
    expect(events.find((e) => e.event.type === 'ToolApprovalDecided')!.event.data).toMatchObject({ decision: 'approved', by: 'user' });
    expect(events.find((e) => e.event.type === 'SteerEdited')!.event.data).toMatchObject({ text: 'use the new format', previousText: 'use the old format' });
    expect(events.find((e) => e.event.type === 'SteeringDelivered')!.event.data).toMatchObject({ text: 'use the new format' });
    await page.locator('[data-status="delivered"]', { hasText: 'use the new format' }).waitFor();
    expect(problems).toEqual([]);
  }, 60_000);

  it('starts a turn with an agent picked from the tenant’s agents, and the turn’s header shows the agent and its version', async () => {
    gateway = await startConsoleGateway();
    const name = `writer${uuidv7().slice(-6)}`;
    const model = (text: string) => ({ provider: 'scripted', script: [sleep(500), { text }] });
    expect((await stack.api('POST', '/agents', { name, description: 'Writes reports', instructions: 'Be brief.', model: model('from version 1') })).status).toBe(201);
    expect((await stack.api('PUT', `/agents/${name}`, { instructions: 'Be briefer.', model: model('from version 2') })).status).toBe(200);
    const page = await openPage();
    const picker = page.getByRole('combobox', { name: 'Agent for new turns' });
    await picker.locator(`option[value="${name}"]`).waitFor({ state: 'attached' });
    expect(await picker.locator(`option[value="${name}"]`).textContent()).toBe(`${name} (version 2)`);
    await picker.selectOption(name);
    const composer = page.locator('#composer-text');
    await composer.fill('Write the weekly report');
    await composer.press('Enter');
    const turn = page.locator(`[data-agent="${name}@2"]`);
    await turn.getByRole('heading', { name: new RegExp(`agent ${name}, version 2`) }).waitFor();
    await turn.getByText('Turn completed: from version 2').waitFor({ timeout: 20_000 });
    // What the page showed is what the log recorded.
    const turnId = await turn.getAttribute('data-turn');
    const started = (await stack.turnEvents(turnId!)).find((e) => e.event.type === 'TurnStarted')!.event;
    expect(started.data).toMatchObject({ agent: { name, version: 2 }, instructions: 'Be briefer.' });
    expect(await axeViolations(page).then((v) => v.filter((x) => x.impact === 'serious' || x.impact === 'critical'))).toEqual([]);
    expect(problems).toEqual([]);
  }, 60_000);

  it('Ctrl+Enter interrupts a streamed answer and steers; the button interrupts a ten-minute sleep; the timeline shows what was cut', async () => {
    gateway = await startConsoleGateway();
    const words = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const started = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'Write it all', model: { provider: 'scripted', script: [{ text: words, delayMs: 40_000 }, sleep(600_000), { text: 'redirected' }] } });
    const tid = started.body.turnId as string;
    const page = await openPage(`#${cid}`);
    // Some of the answer is on the page before the person cuts it.
    await page.locator('[data-step="1"] .answer', { hasText: 'word2' }).waitFor({ timeout: 20_000 });
    const composer = page.locator('#composer-text');
    await composer.fill('stop writing, check first');
    await composer.press('Control+Enter');
    const cut = page.locator('[data-step="1"].interrupted del');
    await cut.waitFor({ timeout: 15_000 });
    await page.locator('[data-status="delivered"]', { hasText: 'delivered at step 1 (interrupt)' }).waitFor();
    const events = await stack.turnHas(tid, 'ToolCallStarted');
    const partial = (events.find((e) => e.event.type === 'ModelInterrupted')!.event.data as { partialText: string }).partialText;
    expect(await cut.textContent()).toBe(partial);
    expect(words.startsWith(partial) && partial.length < words.length).toBe(true);

    // Step 2 sleeps for ten minutes: the button interrupts it.
    await page.locator('[data-tool][data-state="running"]').waitFor();
    await composer.fill('skip the wait');
    await page.getByRole('button', { name: 'Interrupt and steer' }).click();
    await page.locator('[data-tool][data-state="failed"]', { hasText: 'interrupted' }).waitFor({ timeout: 15_000 });
    await page.getByText(/Turn completed: [\s\S]*redirected/).waitFor({ timeout: 15_000 });
    const log = await stack.turnEnded(tid);
    expect(log.filter((e) => e.event.type === 'SteeringDelivered').map((e) => (e.event.data as { boundary: string }).boundary)).toEqual(['interrupt', 'interrupt']);
    expect(log.some((e) => e.event.type === 'ModelResponded' && (e.event.data as { step: number }).step === 1)).toBe(false);
    expect(problems).toEqual([]);
  }, 60_000);

  it('serves the console’s own files only, with a self-only Content-Security-Policy, outside the API key check', async () => {
    gateway = await startConsoleGateway({ STEERLINE_API_KEYS: 'some-key:tenant' });
    const base = `http://127.0.0.1:${port}/console`;
    const script = await fetch(`${base}/console.js`);
    expect([script.status, script.headers.get('content-type'), script.headers.get('x-content-type-options')]).toEqual([200, 'text/javascript; charset=utf-8', 'nosniff']);
    expect(script.headers.get('content-security-policy')).toBe("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
    const page = await (await fetch(`${base}/`)).text();
    expect(page).toContain('<script src="/console/console.js" defer></script>');
    expect(page).not.toMatch(/<script>|<style>| style=|https?:\/\//);
    for (const path of ['/nope.js', '/..%2Fpackage.json', '/%2e%2e%2fREADME.md']) {
      const res = await fetch(`${base}${path}`);
      expect([path, res.status]).toEqual([path, 404]);
    }
  });

  it('asks for an API key where the gateway has keys, keeps it for the tab, and asks again on a 401', async () => {
    const key = `k${uuidv7().slice(-12)}`;
    gateway = await startConsoleGateway({ STEERLINE_API_KEYS: `${key}:console-tenant` });
    const page = await openPage();
    const input = page.getByRole('textbox', { name: 'API key' });
    await input.fill('not-a-key');
    await input.press('Enter');
    // The wrong key is tried (a 401) and the prompt comes back, empty.
    await eventually(async () => (await page.evaluate<string | null>("sessionStorage.getItem('steerline.apiKey')")) === 'not-a-key', 15_000, 'the first key to be kept');
    await eventually(async () => (await input.count()) === 1 && (await input.inputValue()) === '', 15_000, 'the prompt to come back');
    await input.fill(key);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('navigation', { name: 'Conversations' }).waitFor();
    await page.getByRole('button', { name: 'New conversation' }).click();
    await page.locator('[data-conversation]').first().waitFor();
    await expect(page.evaluate<string | null>("sessionStorage.getItem('steerline.apiKey')")).resolves.toBe(key);
    expect(await axeViolations(page).then((v) => v.filter((x) => x.impact === 'serious' || x.impact === 'critical'))).toEqual([]);
    expect(problems).toEqual([]);
  }, 30_000);
});
