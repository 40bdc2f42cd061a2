/**
 * Roles in a real browser (Debian's Chromium through playwright-core): an owner invites a member
 * with a role, changes it and reads the audit log; a viewer's pages offer no change and the API
 * refuses what a role lacks; a billing member caps one of the platform's customers on the
 * Customers page. Each step is checked against the API over plain HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../../../support/browser';
import { linkToken } from '../../../support/dashboard';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

const PASSWORD = 'a password for the team test';

let h: Harness;
let browser: Awaited<ReturnType<typeof launchBrowser>>;
let page: Page;
let pageErrors: string[];
let base: string;
let accountId: string;
let key: string;

beforeAll(async () => {
  h = await startHarness({ listen: true });
  base = h.baseUrl!;
  browser = await launchBrowser();
  ({ page, pageErrors } = browser);
  page.on('dialog', (dialog) => void dialog.accept());
  ({ accountId, key } = await h.account({ credits: 500 }));
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** A member of the account with `role`, password set over HTTP; their email. */
async function member(role: string): Promise<string> {
  const email = `${role}-${Date.now()}@example.com`;
  const invite = await h.admin('POST', '/admin/v1/users', { accountId, email, role });
  expect(invite.statusCode, invite.body).toBe(201);
  await setPassword(invite.json<{ setPasswordUrl: string }>().setPasswordUrl);
  return email;
}

async function setPassword(url: string): Promise<void> {
  const res = await fetch(`${base}/dashboard/api/set-password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: linkToken(url), password: PASSWORD }),
  });
  expect(res.status).toBe(200);
}

async function logIn(email: string): Promise<void> {
  await page.context().clearCookies();
  await page.goto(`${base}/dashboard/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(`${base}/dashboard`);
}

const nav = () => page.getByRole('navigation', { name: 'Dashboard' });

describe('roles in Chromium', () => {
  it('an owner invites a developer, makes them billing, and reads both changes in the audit log', async () => {
    await logIn(await member('owner'));
    await expect.poll(() => page.getByTestId('role').first().textContent()).toBe('owner');
    await nav().getByRole('link', { name: 'Team' }).click();
    await page.waitForURL(`${base}/dashboard/team`);
    const invitee = `dev-${Date.now()}@example.com`;
    await page.getByLabel('Email').fill(invitee);
    await page.getByLabel('Role', { exact: true }).selectOption('developer');
    await page.getByRole('button', { name: 'Invite' }).click();
    const link = page.locator('input[data-secret]');
    await expect.poll(() => link.count()).toBe(1);
    await setPassword(await link.inputValue());
    await page.getByRole('button', { name: 'I have saved it' }).click();
    const row = page.locator(`tr[data-member="${invitee}"]`);
    await expect.poll(() => row.count()).toBe(1);
    await row.getByLabel(`Role of ${invitee}`).selectOption('billing');
    await expect.poll(() => row.getByLabel(`Role of ${invitee}`).inputValue()).toBe('billing');

    await nav().getByRole('link', { name: 'Audit log' }).click();
    await page.waitForURL(`${base}/dashboard/audit`);
    await expect.poll(() => page.locator('tr[data-action="member.role_changed"]').count()).toBe(1);
    expect(await page.locator('tr[data-action="member.role_changed"]').textContent()).toContain('billing');
    expect(await page.locator('tr[data-action="member.invited"]').count()).toBeGreaterThanOrEqual(2);

    // The invitee logs in as billing: the Customers page caps one of the platform's users.
    await logIn(invitee);
    await expect.poll(() => page.getByTestId('role').first().textContent()).toBe('billing');
    expect(await nav().getByRole('link', { name: 'Playground' }).count()).toBe(0);
    expect(await nav().getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    await nav().getByRole('link', { name: 'Customers' }).click();
    await page.waitForURL(`${base}/dashboard/customers`);
    await expect.poll(() => page.getByText('No customer yet', { exact: false }).count()).toBe(1);
    const own = page.getByRole('form', { name: "A customer's own limits" });
    await own.getByLabel('Customer').fill('alice');
    await own.getByLabel('Budget (credits)').fill('6');
    await own.getByLabel('Period').selectOption('month');
    await own.getByRole('button', { name: 'Save for this customer' }).click();
    const alice = page.locator('tr[data-customer="alice"]');
    await expect.poll(() => alice.count()).toBe(1);
    expect(await alice.textContent()).toContain('6 credits');
    // The API says the same with the member's session.
    const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const view = await fetch(`${base}/dashboard/api/customers/alice`, { headers: { cookie } });
    expect(await view.json()).toMatchObject({
      customer: 'alice',
      budget: { maxCredits: 6, period: 'month', source: 'customer' },
    });

    // What alice spent, for the period the platform invoices: the last 30 days, then another.
    const image = await h.call('POST', '/api/generate', {
      key,
      headers: { 'x-customer-id': 'alice' },
      body: { kind: 'image', model: 'flux', prompt: 'a kite for alice' },
    });
    expect(image.statusCode, image.body).toBeLessThan(300);
    await page.reload();
    const spent = page.locator('tr[data-usage="alice"] td[data-label="Credits charged"]');
    await expect.poll(() => spent.textContent()).toBe('3');
    const csv = page.getByRole('link', { name: 'Download as CSV' });
    const period = page.getByRole('form', { name: 'Spend period' });
    await period.getByLabel('From').fill('2025-01-01');
    await period.getByLabel('To (included)').fill('2025-01-31');
    await period.getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => page.getByTestId('spend-period').textContent()).toBe('2025-01-01 to 2025-01-31 (UTC)');
    await expect.poll(() => page.locator('tr[data-usage="alice"]').count()).toBe(0);
    const href = (await csv.getAttribute('href'))!;
    expect(href).toContain('from=2025-01-01T00:00:00Z&to=2025-02-01T00:00:00Z');
    const report = await fetch(`${base}${href}`, { headers: { cookie } });
    expect(report.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(await report.text()).not.toContain('alice');
    expect(pageErrors).toEqual([]);
  });

  it('a viewer is offered no change, and the API refuses one anyway', async () => {
    await logIn(await member('viewer'));
    await expect.poll(() => page.getByTestId('role').first().textContent()).toBe('viewer');
    // The overview says the low-balance alert without offering to change it.
    await expect.poll(() => page.getByText('Low-balance alert: none').count()).toBe(1);
    expect(await page.getByRole('form', { name: 'Low-balance alert' }).count()).toBe(0);
    expect(await nav().getByRole('link', { name: 'Playground' }).count()).toBe(0);
    expect(await nav().getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    await nav().getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(`${base}/dashboard/keys`);
    await expect.poll(() => page.getByRole('heading', { name: 'Keys', exact: true }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    // The account's key is listed, with nothing to change on it.
    await expect.poll(() => page.locator('[data-key]').count()).toBe(1);
    expect(await page.getByRole('button', { name: /^Revoke / }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Set the budget of / }).count()).toBe(0);
    await nav().getByRole('link', { name: 'Team' }).click();
    await page.waitForURL(`${base}/dashboard/team`);
    await expect.poll(() => page.getByRole('heading', { name: 'Members' }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Invite' }).count()).toBe(0);
    await page.goto(`${base}/dashboard/audit`);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('viewer');
    // With the page's own session and CSRF token, a change is refused: 403 permission_error.
    const { csrfToken } = JSON.parse((await page.locator('#boot').textContent())!) as { csrfToken: string };
    const refused = await page.evaluate(async (csrf) => {
      const res = await fetch('/dashboard/api/keys', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
        body: JSON.stringify({ scopes: ['image'] }),
      });
      return { status: res.status, body: (await res.json()) as { error: { type: string } } };
    }, csrfToken);
    expect(refused).toMatchObject({ status: 403, body: { error: { type: 'permission_error' } } });
    expect(pageErrors).toEqual([]);
  });
});
