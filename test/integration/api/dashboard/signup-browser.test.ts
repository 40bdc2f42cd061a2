/**
 * Self-service sign-up in a real browser (Debian's Chromium through playwright-core), SIGNUP=open:
 * the login page links to it, the sign-up page answers the same sentence, the link arrives by
 * email (Mailpit, read through its API), the verify page creates the account and sends the user to
 * log in, and the overview shows the starting credits. Screenshots go to docs/screenshots/ with
 * UPDATE_SCREENSHOTS=1, as in dashboard-browser.test.ts.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailRelay } from '../../../../runtime/mail-relay';
import type { MailRelay } from '../../../../runtime/mail-relay';
import { launchBrowser, screenshotFolder } from '../../../support/browser';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startMailpit } from '../../../support/mailpit-server';
import type { MailpitServer } from '../../../support/mailpit-server';

const shots = screenshotFolder('signup');
const SHOTS = shots.dir;
const PASSWORD = 'a password typed in the browser';

let h: Harness;
let smtp: MailpitServer;
let relay: MailRelay;
let browser: Awaited<ReturnType<typeof launchBrowser>>;
let page: Page;
let pageErrors: string[];

beforeAll(async () => {
  await shots.make();
  h = await startHarness({ listen: true, worker: false, signup: { startingCredits: 10, chatCap: 5 } });
  smtp = await startMailpit();
  relay = startMailRelay({
    pool: h.pool,
    smtpUrl: smtp.smtpUrl,
    from: 'Generation service <signup@gensvc.test>',
    dashboardUrl: `${h.baseUrl!}/dashboard`,
    pollMs: 100,
  });
  browser = await launchBrowser();
  ({ page, pageErrors } = browser);
});
afterAll(async () => {
  await browser?.close();
  await relay?.stop();
  await smtp?.stop();
  await h?.close();
  await shots.remove();
});

describe('sign-up in Chromium', () => {
  it('signs up, confirms the emailed link, logs in and sees the starting credits', async () => {
    const email = `signup-${Date.now()}@example.com`;
    await page.goto(`${h.baseUrl!}/dashboard/login`);
    await page.getByRole('link', { name: 'Sign up' }).click();
    await page.waitForURL(/\/dashboard\/signup$/);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('The same again').fill(PASSWORD);
    await page.screenshot({ path: `${SHOTS}signup.png`, fullPage: true });
    await page.getByRole('button', { name: 'Sign up' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('a link to confirm it is on its way');
    await page.screenshot({ path: `${SHOTS}signup-sent.png`, fullPage: true });

    const [mail] = await eventually(async () => {
      const m = (await smtp.messages()).filter((x) => x.To.some((t) => t.Address === email));
      return m.length > 0 ? m : undefined;
    });
    const link = /(http:\/\/\S+\/dashboard\/verify#token=[A-Za-z0-9_-]+)/.exec(await smtp.text(mail!.ID))?.[1];
    expect(link?.startsWith(`${h.baseUrl!}/dashboard/verify#token=`)).toBe(true);

    await page.goto(link!);
    await page.waitForURL(/\/dashboard\/login\?verified=1/);
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Your email is confirmed');
    await page.screenshot({ path: `${SHOTS}signup-verified.png`, fullPage: true });
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(`${h.baseUrl!}/dashboard`);
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('10 credits');

    // The link works once: opened again, the page says so.
    await page.goto(link!);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('already been used');
    expect(pageErrors).toEqual([]);
  });
});
