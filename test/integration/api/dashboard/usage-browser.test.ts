/**
 * The usage page in a real browser (Debian's Chromium through playwright-core) shows a chat's
 * tokens in detail — reasoning, input, cache reads and writes — as the usage report sums them,
 * and a dash where a model's generations have no tokens (an image).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../../../support/browser';
import { linkToken } from '../../../support/dashboard';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

const PASSWORD = 'a password for the usage test';

let h: Harness;
let browser: Awaited<ReturnType<typeof launchBrowser>>;
let page: Page;
let pageErrors: string[];
let base: string;

beforeAll(async () => {
  h = await startHarness({ listen: true });
  base = h.baseUrl!;
  browser = await launchBrowser();
  ({ page, pageErrors } = browser);
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function logInAsOwnerOf(accountId: string): Promise<void> {
  const email = `usage-${Date.now()}@example.com`;
  const invite = await h.admin('POST', '/admin/v1/users', { accountId, email });
  expect(invite.statusCode, invite.body).toBe(201);
  const set = await fetch(`${base}/dashboard/api/set-password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      token: linkToken(invite.json<{ setPasswordUrl: string }>().setPasswordUrl),
      password: PASSWORD,
    }),
  });
  expect(set.status).toBe(200);
  await page.goto(`${base}/dashboard/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(`${base}/dashboard`);
}

interface UsageRow {
  group: string;
  outputTokens: number;
  inputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
}

describe('the usage page in Chromium', () => {
  it('shows each model’s chat tokens in detail, as the usage report sums them, and a dash where there are none', async () => {
    const { accountId, key } = await h.account({ credits: 100 });
    const chat = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-haiku',
        max_tokens: 40,
        messages: [
          {
            role: 'user',
            content: 'Details sim:delay=0 sim:pace=0 sim:tokens=6 sim:cached=20 sim:cache_write=5 sim:reasoning=2',
          },
        ],
      }),
    });
    expect(chat.status).toBe(200);
    const image = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a lighthouse' },
    });
    expect(image.statusCode, image.body).toBe(200);

    const report = (await h.call('GET', '/api/v1/usage?group_by=model', { key })).json<{ data: UsageRow[] }>();
    const chatRow = report.data.find((r) => r.outputTokens > 0)!;
    expect(chatRow).toMatchObject({ outputTokens: 8, cachedInputTokens: 20, cacheWriteTokens: 5, reasoningTokens: 2 });

    await logInAsOwnerOf(accountId);
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Usage' }).click();
    await page.waitForURL(/\/dashboard\/usage$/);
    const cell = (group: string, label: string) =>
      page.locator(`[data-usage="${group}"] td[data-label="${label}"]`).first().textContent();
    await page.locator(`[data-usage="${chatRow.group}"]`).first().waitFor();
    expect(await cell(chatRow.group, 'Output tokens')).toBe('8');
    expect(await cell(chatRow.group, 'Reasoning tokens')).toBe('2');
    expect(await cell(chatRow.group, 'Input tokens')).toBe(String(chatRow.inputTokens));
    expect(await cell(chatRow.group, 'Cached input')).toBe('20');
    expect(await cell(chatRow.group, 'Cache writes')).toBe('5');
    expect(await cell('image-flux', 'Cached input')).toBe('—');
    const summary = await page.getByTestId('token-summary').textContent();
    expect(summary?.replace(/\s+/g, ' ')).toContain(
      `read ${chatRow.inputTokens} input tokens (20 from the prompt cache, 5 written to it) and wrote 8 output tokens (2 of them reasoning)`,
    );
    expect(pageErrors).toEqual([]);
  });
});
