/**
 * Buying credits from the dashboard in a real browser (Debian's Chromium through playwright-core):
 * the Billing page exists only when Stripe is configured, opens a Checkout Session made against a
 * real stripe-mock, and the account is credited when Stripe's signed event arrives (signed here
 * with the SDK's test-header helper, as Stripe would). Screenshot `billing` with UPDATE_SCREENSHOTS=1.
 */
import type { Page } from 'playwright-core';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshotFolder } from '../../../support/browser';
import { userOf } from '../../../support/dashboard';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startStripeMock } from '../../../support/stripe-mock-server';
import type { StripeMockServer } from '../../../support/stripe-mock-server';

const shots = screenshotFolder('billing');
const SHOTS = shots.dir;
const WEBHOOK_SECRET = 'whsec_test_billing_browser_0123456789';

let h: Harness;
let closed: Harness;
let mock: StripeMockServer;
let browser: Awaited<ReturnType<typeof launchBrowser>>;
let page: Page;
let pageErrors: string[];

beforeAll(async () => {
  await shots.make();
  mock = await startStripeMock();
  h = await startHarness({
    listen: true,
    worker: false,
    billing: {
      secretKey: 'sk_test_123',
      webhookSecret: WEBHOOK_SECRET,
      apiUrl: mock.url,
      minPurchaseCredits: 500,
      maxPurchaseCredits: 50_000,
    },
  });
  closed = await startHarness({ listen: true, worker: false });
  browser = await launchBrowser();
  ({ page, pageErrors } = browser);
});
afterAll(async () => {
  await browser?.close();
  await closed?.close();
  await h?.close();
  await mock?.stop();
  await shots.remove();
});

async function logIn(base: string, u: { email: string; password: string }) {
  await page.goto(`${base}/dashboard/login`);
  await page.getByLabel('Email').fill(u.email);
  await page.getByLabel('Password').fill(u.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(`${base}/dashboard`);
}

describe('the Billing page in Chromium', () => {
  it('is absent without Stripe: no link, no page', async () => {
    const { accountId } = await closed.account({ credits: 1 });
    await logIn(closed.baseUrl!, await userOf(closed, accountId));
    await page.getByRole('link', { name: 'Usage' }).waitFor();
    expect(await page.getByRole('link', { name: 'Billing' }).count()).toBe(0);
    expect((await fetch(`${closed.baseUrl!}/dashboard/billing`, { redirect: 'manual' })).status).toBe(404);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/dashboard\/login$/);
  });

  it('opens Stripe Checkout for the amount typed; the signed payment event credits the account, shown on the overview', async () => {
    const { accountId } = await h.account({ credits: 5 });
    await logIn(h.baseUrl!, await userOf(h, accountId));
    await page.getByRole('link', { name: 'Billing' }).click();
    await page.waitForURL(/\/dashboard\/billing$/);
    await page.getByLabel('Credits', { exact: true }).fill('1000');
    const pay = page.getByRole('button', { name: 'Pay 10.00 EUR' });
    await pay.waitFor();
    await page.screenshot({ path: `${SHOTS}billing.png`, fullPage: true });

    // The network is closed: Stripe's page is answered here; what matters is that the browser goes there.
    let checkoutUrl = '';
    await page.route('https://checkout.stripe.com/**', async (route) => {
      checkoutUrl = route.request().url();
      await route.fulfill({
        status: 200,
        contentType: 'text/html',
        body: '<title>Stripe Checkout</title><h1>Stripe Checkout (test)</h1>',
      });
    });
    await pay.click();
    await page.waitForURL(/^https:\/\/checkout\.stripe\.com\//);
    expect(checkoutUrl).toMatch(/^https:\/\/checkout\.stripe\.com\//);

    // Stripe reports the payment: credited once, and the overview shows it.
    const stripe = new Stripe('sk_test_123');
    const payload = JSON.stringify({
      id: 'evt_browser_paid',
      object: 'event',
      type: 'checkout.session.completed',
      api_version: '2025-01-01',
      created: Math.floor(Date.now() / 1000),
      data: {
        object: {
          id: 'cs_browser_paid',
          object: 'checkout.session',
          payment_status: 'paid',
          status: 'complete',
          amount_total: 1000,
          currency: 'eur',
          client_reference_id: accountId,
          metadata: { accountId, credits: '1000' },
          payment_intent: 'pi_browser_paid',
        },
      },
    });
    const delivered = await fetch(`${h.baseUrl!}/api/v1/billing/stripe/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
      },
      body: payload,
    });
    expect(await delivered.json()).toEqual({ received: true, outcome: 'credited' });
    await page.goto(`${h.baseUrl!}/dashboard?checkout=success`);
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('the credits are added');
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('1,005 credits');

    // An amount outside the limits never leaves the page: the form holds the limits the API gave.
    await page.goto(`${h.baseUrl!}/dashboard/billing`);
    const credits = page.getByLabel('Credits', { exact: true });
    await credits.fill('100');
    expect(
      await credits.evaluate(
        (el) => (el as unknown as { validity: { rangeUnderflow: boolean } }).validity.rangeUnderflow,
      ),
    ).toBe(true);
    await page.getByRole('button', { name: /^Pay/ }).click();
    expect(page.url()).toBe(`${h.baseUrl!}/dashboard/billing`);
    expect(pageErrors).toEqual([]);
  });
});
