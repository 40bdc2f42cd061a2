/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core): an operator's
 * invitation, setting the password, logging in, keys, webhooks, the playground, batches of both
 * formats and logging out,
 * each checked against the API with plain HTTP as a client would. Screenshots of every page
 * (desktop, and a phone for some) go to docs/screenshots/ with UPDATE_SCREENSHOTS=1:
 *   UPDATE_SCREENSHOTS=1 npx vitest run test/integration/api/dashboard/dashboard-browser.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { launchBrowser, screenshotFolder } from '../../../support/browser';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startReceiver } from '../../../support/webhook-receiver';
import type { TestReceiver } from '../../../support/webhook-receiver';

const shots = screenshotFolder('dashboard');
const SHOTS = shots.dir;
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 860 };
const PASSWORD = 'a password for the browser test';

let h: Harness;
let browser: Awaited<ReturnType<typeof launchBrowser>>;
let context: BrowserContext;
let page: Page;
let receiver: TestReceiver;
let base: string;
let accountId: string;
let email: string;
let pageErrors: string[];

beforeAll(async () => {
  await shots.make();
  h = await startHarness({
    listen: true,
    syncWaitMs: 20_000,
    webhooks: { retryScheduleMs: [200, 200], relayPollMs: 200 },
  });
  base = h.baseUrl!;
  receiver = await startReceiver();
  browser = await launchBrowser();
  context = browser.context;
  ({ page, pageErrors } = browser);
  page.on('dialog', (dialog) => void dialog.accept());
  ({ accountId } = await h.account({ credits: 500, chatCap: 3 }));
  email = `browser-${Date.now()}@example.com`;
});
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await h?.close();
  await shots.remove();
});

async function shot(name: string, size = DESKTOP): Promise<void> {
  await page.setViewportSize(size);
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
  await page.setViewportSize(DESKTOP);
}

const http = (path: string, init: RequestInit = {}) => fetch(`${base}${path}`, init);

describe('the dashboard in Chromium', () => {
  it('an invited user sets a password once, then logs in', async () => {
    const invite = await h.admin('POST', '/admin/v1/users', { accountId, email });
    const { setPasswordUrl } = invite.json<{ setPasswordUrl: string }>();
    expect(setPasswordUrl.startsWith(`${base}/dashboard/set-password#token=`)).toBe(true);

    await page.goto(setPasswordUrl);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('The same again').fill(PASSWORD);
    // The token has left the address bar (it was only ever in the fragment).
    expect(page.url()).toBe(`${base}/dashboard/set-password`);
    await shot('set-password');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.waitForURL(/\/dashboard\/login\?password=set/);
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Your password is set');

    // The same link again is refused.
    await page.goto(setPasswordUrl);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('The same again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('already been used');

    await page.goto(`${base}/dashboard/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not the right one');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('The email or the password is wrong.');
    await shot('login');
    await shot('login-phone', PHONE);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(`${base}/dashboard`);
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('500 credits');
    const cookie = (await context.cookies(base)).find((c) => c.name === 'gensvc_session')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    await shot('overview');
    await shot('overview-phone', PHONE);
  });

  it('creates a key shown once, which works over HTTP until it is revoked', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(/\/dashboard\/keys$/);
    await page.getByLabel('Models').fill('flux, kling');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.locator('input[data-secret]');
    await secret.waitFor();
    const key = await secret.inputValue();
    expect(key).toMatch(/^gsk_/);
    // The operator's key of the account, and this one.
    const row = page.locator('[data-key]').filter({ hasText: `${key.slice(0, 8)}…${key.slice(-4)}` });
    await row.waitFor();
    expect(await page.locator('[data-key]').count()).toBe(2);
    await shot('keys-created');

    const auth = { authorization: `Bearer ${key}` };
    expect((await http('/api/v1/balance', { headers: auth })).status).toBe(200);
    const image = await http('/api/generate', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'image', model: 'flux', prompt: 'a kite' }),
    });
    expect(image.status).toBe(200);
    // A key limited to flux and kling may not use another model.
    const other = await http('/api/generate', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'image', model: 'image-qwen', prompt: 'a kite' }),
    });
    expect(other.status).toBe(403);

    // A budget set here holds the key: 3 credits spent of 5 a day leave too little for another image.
    await row.getByRole('button', { name: /^Set the budget of / }).click();
    await row.getByLabel('Max credits').fill('5');
    await row.getByLabel('Period').selectOption('day');
    await row.getByRole('button', { name: 'Save budget' }).click();
    await row.getByTestId('budget').filter({ hasText: '3 credits of 5 credits per day' }).waitFor();
    const over = await http('/api/generate', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'image', model: 'flux', prompt: 'a kite' }),
    });
    expect(over.status).toBe(402);
    expect(((await over.json()) as { error: { type: string } }).error.type).toBe('budget_exceeded');
    await shot('keys-budget');

    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.reload();
    await row.waitFor();
    // Never shown again: not in the page, and "last used" says when it was.
    expect(await page.content()).not.toContain(key);
    expect(await row.locator('td[data-label="Last used"]').textContent()).not.toBe('never');
    await shot('keys');
    await shot('keys-phone', PHONE);

    await row.getByRole('button', { name: /^Revoke / }).click();
    await row.waitFor({ state: 'detached' });
    expect(await page.locator('[data-key]').count()).toBe(1);

    // Usage: the spend chart (uPlot, served by the API) and the tables by model and by key.
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.waitForURL(/\/dashboard\/usage$/);
    await page.getByTestId('spend-chart').locator('canvas').first().waitFor();
    await page.locator('[data-usage="image-flux"]').waitFor();
    expect(await page.locator('[data-usage="image-flux"] td[data-label="Credits charged"]').textContent()).toBe('3');
    await shot('usage');
    expect((await http('/api/v1/balance', { headers: auth })).status).toBe(401);
  });

  it('registers a webhook (secret shown once) and sees a test delivery with its status code in the log', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL(/\/dashboard\/webhooks$/);
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByLabel('Description').fill('my laptop');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = await page.locator('input[data-secret]').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await receiver.until(1, (r) => r.json.event === 'ping');
    const row = page.locator('[data-delivery][data-status="succeeded"]');
    await row.first().waitFor({ timeout: 20_000 });
    expect(await row.first().locator('[data-testid="status-code"]').textContent()).toBe('200');
    expect(await page.content()).not.toContain(secret);

    // Edit it: a flat endpoint's events are not offered for a nested one, but the description is.
    await page.getByRole('button', { name: 'Edit' }).click();
    await page
      .getByRole('form', { name: /^Edit / })
      .getByLabel('Description')
      .fill('my laptop, renamed');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('[data-endpoint] p').first().textContent()).toContain('renamed');
    await page
      .getByRole('button', { name: /^Redeliver / })
      .first()
      .click();
    await receiver.until(2, (r) => r.json.event === 'ping');
    await page
      .locator('[data-delivery][data-status="succeeded"] td[data-label="Attempts"]', { hasText: '2' })
      .waitFor({ timeout: 20_000 });
    await shot('webhooks');
  });

  it('quotes a video in the playground, submits it, follows it live to succeeded and the balance follows', async () => {
    await page.getByRole('link', { name: 'Playground' }).click();
    await page.waitForURL(/\/dashboard\/playground$/);
    await page.getByLabel('video').check();
    await page.getByLabel('Model').selectOption('kling');
    await page.getByLabel('Prompt').fill('waves on a beach sim:delay=2500');
    await page.getByLabel(/^Seconds/).fill('10');
    await page.getByLabel('Resolution').selectOption('1080p');
    await expect.poll(() => page.getByTestId('quote').textContent()).toBe('130 credits');
    const before = await page.getByTestId('playground-balance').textContent();
    expect(before).toBe('497 credits');
    await shot('playground-quote');
    await page.getByRole('button', { name: 'Generate for 130 credits' }).click();
    const result = page.locator('[data-result]');
    await result.waitFor();
    await expect.poll(() => page.getByTestId('playground-balance').textContent()).toBe('367 credits');
    await page.locator('[data-result][data-status="succeeded"]').waitFor({ timeout: 30_000 });
    await page.locator('[data-result] video').waitFor();
    const id = await result.getAttribute('data-result');
    const record = (await (
      await http(`/api/v1/generations/${id}`, {
        headers: {
          authorization: `Bearer ${(await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['video'] })).json<{ key: string }>().key}`,
        },
      })
    ).json()) as { status: string; creditsCharged: number };
    expect(record).toMatchObject({ status: 'succeeded', creditsCharged: 130 });
    await shot('playground');
    await shot('playground-phone', PHONE);
  });

  it('lists the generations with previews and updates one in flight live', async () => {
    await page.getByRole('link', { name: 'Generations' }).click();
    await page.waitForURL(/\/dashboard\/generations$/);
    await page.locator('[data-generation] video').first().waitFor();
    await page.locator('[data-generation] img').first().waitFor();
    // A job made elsewhere (group C with the cookie, as the playground does) appears and finishes live.
    const csrf = await page
      .locator('#boot')
      .evaluate((el) => (JSON.parse(el.textContent ?? '{}') as { csrfToken: string }).csrfToken);
    const id = await page.evaluate(async (token) => {
      const res = await fetch('/api/generate', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': token, prefer: 'respond-async' },
        body: JSON.stringify({ kind: 'image', model: 'flux', prompt: 'a lighthouse sim:delay=1500' }),
      });
      return ((await res.json()) as { generation: { id: string } }).generation.id;
    }, csrf);
    await page.locator(`[data-generation="${id}"]`).waitFor();
    await page.locator(`[data-generation="${id}"][data-status="succeeded"] img`).waitFor({ timeout: 20_000 });
    await page.getByLabel('Kind').selectOption('video');
    await expect.poll(async () => page.locator('[data-generation] img').count()).toBe(0);
    await page.getByLabel('Kind').selectOption('');
    await page.locator(`[data-generation="${id}"]`).waitFor();
    await shot('generations');
    await shot('generations-phone', PHONE);
  });

  it('lists the key budget reached earlier on the overview, sets a low-balance threshold there, and lists the crossing a generation makes as it happens', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.waitForURL(`${base}/dashboard`);
    // The key budget refused an image earlier: that is listed already, once.
    await page.locator('[data-alert="key.budget_reached"]').waitFor();
    expect(await page.locator('[data-alert]').count()).toBe(1);
    const auth = {
      authorization: `Bearer ${(await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['image'] })).json<{ key: string }>().key}`,
    };
    const { balance } = (await (await http('/api/v1/balance', { headers: auth })).json()) as { balance: number };
    const threshold = balance - 1;
    // The overview re-renders as its live data arrives, which can reset a field typed into before
    // it; a person would type it again, and so does this until the operator's view shows it saved.
    const saved = async () =>
      (await h.admin('GET', `/admin/v1/accounts/${accountId}/alerts`)).json<{ thresholdCredits: number | null }>()
        .thresholdCredits;
    await expect
      .poll(
        async () => {
          const now = await saved();
          if (now !== threshold) {
            await page.getByLabel(/Alert me below/).fill(String(threshold));
            await page.getByRole('button', { name: 'Save', exact: true }).click();
          }
          return now;
        },
        { timeout: 20_000, interval: 1_000 },
      )
      .toBe(threshold);

    // 3 credits take the available credits below it: balance.low, shown live on the page.
    const image = await http('/api/v1/generate', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'image', model: 'flux', prompt: 'a low tide' }),
    });
    expect(image.status).toBe(200);
    const alert = page.locator('[data-alert="balance.low"]');
    await alert.waitFor({ timeout: 20_000 });
    expect(await alert.textContent()).toContain(`below ${threshold} credits`);
    expect(await page.locator('[data-alert]').count()).toBe(2);
    await shot('overview-alerts');
  });

  it('lists OpenAI batches and Anthropic Message Batches side by side, each named by its format, with its downloads', async () => {
    const key = (await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['chat'] })).json<{
      key: string;
    }>().key;
    const params = { model: 'claude-haiku', max_tokens: 20, messages: [{ role: 'user', content: 'hi sim:tokens=2' }] };
    const messageBatch = await http('/v1/messages/batches', {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ requests: [{ custom_id: 'one', params }] }),
    });
    expect(messageBatch.status).toBe(200);
    const anthropicId = ((await messageBatch.json()) as { id: string }).id;
    const form = new FormData();
    form.append('purpose', 'batch');
    const line = { custom_id: 'one', method: 'POST', url: '/v1/chat/completions', body: params };
    form.append('file', new Blob([`${JSON.stringify(line)}\n`]), 'in.jsonl');
    const auth = { authorization: `Bearer ${key}` };
    const file = (await (await http('/v1/files', { method: 'POST', headers: auth, body: form })).json()) as {
      id: string;
    };
    const openai = await http('/v1/batches', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
    });
    expect(openai.status).toBe(200);
    const openaiId = ((await openai.json()) as { id: string }).id;

    await page.getByRole('link', { name: 'Batches' }).click();
    await page.waitForURL(/\/dashboard\/batches$/);
    for (const [id, format] of [
      [anthropicId, 'Anthropic'],
      [openaiId, 'OpenAI'],
    ] as const) {
      const row = page.locator(`[data-batch="${id}"][data-status="completed"]`);
      await row.waitFor({ timeout: 20_000 });
      expect(await row.locator('[data-format]').textContent()).toBe(format);
      const href = await row.getByRole('link', { name: 'Output' }).getAttribute('href');
      const first = await page.evaluate(async (url) => (await (await fetch(url!)).text()).split('\n')[0]!, href);
      const parsed = JSON.parse(first) as {
        custom_id: string;
        result?: { type: string };
        response?: { status_code: number };
      };
      expect(parsed.custom_id).toBe('one');
      if (format === 'Anthropic') expect(parsed.result?.type).toBe('succeeded');
      else expect(parsed.response?.status_code).toBe(200);
    }
    await shot('batches');
  });

  it('makes the callback secret (shown once) and sees a job’s callback delivery in the callback log, redelivered', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL(/\/dashboard\/webhooks$/);
    await page.getByRole('button', { name: 'Make callback secret' }).click();
    const secret = await page.locator('input[data-secret]').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByRole('button', { name: 'Rotate callback secret' }).waitFor();

    const made = await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['image'] });
    const key = made.json<{ key: string }>().key;
    const image = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a fox for the callback', webhook: receiver.url },
    });
    const id = image.json<{ id: string }>().id;
    const [first] = await receiver.until(1, (r) => r.json.generation_id === id);
    const row = page.locator(
      `[data-delivery="${String(first!.headers['x-service-delivery'])}"][data-status="succeeded"]`,
    );
    await row.waitFor({ timeout: 20_000 });
    expect(await row.locator('td[data-label="Job and URL"]').textContent()).toContain(id);
    await row.getByRole('button', { name: /^Redeliver / }).click();
    await receiver.until(2, (r) => r.json.generation_id === id);
  });

  it('logs out: the old cookie no longer opens /api/credits', async () => {
    const cookie = (await context.cookies(base)).find((c) => c.name === 'gensvc_session')!;
    const withCookie = { cookie: `gensvc_session=${cookie.value}` };
    expect((await http('/api/credits', { headers: withCookie })).status).toBe(200);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/dashboard\/login$/);
    expect((await context.cookies(base)).find((c) => c.name === 'gensvc_session')).toBeUndefined();
    const after = await http('/api/credits', { headers: withCookie });
    expect(after.status).toBe(401);
    expect(await after.json()).toMatchObject({ error: { type: 'unauthorized' } });
    expect(pageErrors).toEqual([]);
  });
});
