// GET /api/v1/ledger: every movement of the account after a mixed workload — opening
// balance, an operator's top-up, a charge, a failure released, a cancel, a per-token chat whose
// unused hold comes back — page by page and as CSV; the amounts add up to the balance.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
});
afterAll(async () => {
  await h?.close();
});

interface Entry {
  id: string;
  type: string;
  amount: number;
  credits: number;
  balanceAfter: number;
  heldAfter: number;
  generationId: string | null;
  keyId: string | null;
  createdAt: string;
}
interface Page {
  data: Entry[];
  next_cursor: string | null;
}

/** Decimal credits add up exactly in millicredits. */
const sumOf = (amounts: number[]) => amounts.reduce((s, a) => s + Math.round(a * 1000), 0) / 1000;

function parseCsv(text: string): Record<string, string>[] {
  const [head, ...rows] = text.trimEnd().split('\r\n');
  const columns = head!.split(',');
  return rows.map((r) => Object.fromEntries(r.split(',').map((v, i): [string, string] => [columns[i]!, v])));
}

describe('the account ledger', () => {
  it('lists every movement with the key and generation; the amounts add up to the balance, in JSON pages and in CSV', async () => {
    const { key, keyId, accountId } = await h.account({ credits: 100, scopes: ['image', 'video', 'chat'] });
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      h.call('POST', '/api/v1/generate', { key, body, headers });
    expect((await h.admin('POST', `/admin/v1/accounts/${accountId}/credits`, { credits: 20.5 })).statusCode).toBe(200);
    expect((await post({ kind: 'image', model: 'flux', prompt: 'a kite' })).json()).toMatchObject({
      status: 'succeeded',
      creditsCharged: 3,
    });
    expect((await post({ kind: 'image', model: 'flux', prompt: 'a kite sim:fail' })).json()).toMatchObject({
      status: 'failed',
      creditsCharged: 0,
    });
    const chat = (await post({ kind: 'chat', model: 'chat-sonnet', prompt: 'hello sim:tokens=5' })).json<{
      id: string;
      status: string;
    }>();
    expect(chat.status).toBe('succeeded');
    const video = (await post({ kind: 'video', model: 'kling', prompt: 'rain sim:delay=30000' })).json<{
      id: string;
    }>();
    expect((await h.call('POST', `/api/v1/generations/${video.id}/cancel`, { key })).statusCode).toBe(200);
    const held = (await post({ kind: 'video', model: 'seedance-lite', prompt: 'clouds sim:delay=60000' })).json<{
      id: string;
    }>();

    // Page by page, 3 at a time, newest first.
    const entries: Entry[] = [];
    let cursor: string | null = null;
    do {
      const res = await h.call('GET', `/api/v1/ledger?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { key });
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json<Page>();
      expect(page.data.length).toBeLessThanOrEqual(3);
      entries.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    const ids = entries.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);

    const balance = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
    expect(sumOf(entries.map((e) => e.amount))).toBe(balance.balance);
    expect(entries[0]!.balanceAfter).toBe(balance.balance);
    expect(entries[0]!.heldAfter).toBe(balance.holdsActive);
    expect(entries.at(-1)).toMatchObject({ type: 'adjustment', amount: 100, generationId: null, keyId: null });
    expect(
      entries
        .filter((e) => e.type === 'adjustment')
        .map((e) => e.amount)
        .sort(),
    ).toEqual([100, 20.5]);
    expect(new Set(entries.map((e) => e.type))).toEqual(new Set(['adjustment', 'hold', 'charge', 'release']));
    // A charge turns its hold into spending: the available balance moved when it was held.
    for (const e of entries.filter((x) => x.type === 'charge')) expect(e.amount).toBe(0);
    expect(entries.filter((e) => e.generationId === video.id).map((e) => e.type)).toEqual(['release', 'hold']);
    expect(entries.filter((e) => e.generationId === held.id).map((e) => e.type)).toEqual(['hold']);
    expect(entries.filter((e) => e.generationId !== null).every((e) => e.keyId === keyId)).toBe(true);

    // The same entries as CSV, asked either way.
    const asks: { url: string; headers: Record<string, string> }[] = [
      { url: '/api/v1/ledger?format=csv', headers: {} },
      { url: '/api/v1/ledger', headers: { accept: 'text/csv' } },
    ];
    for (const ask of asks) {
      const res = await h.call('GET', ask.url, { key, headers: ask.headers });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/csv/);
      const rows = parseCsv(res.body);
      expect(rows.map((r) => r.id)).toEqual(entries.map((e) => e.id));
      expect(sumOf(rows.map((r) => Number(r.amount)))).toBe(balance.balance);
      expect(rows.find((r) => r.generationId === held.id)).toMatchObject({ type: 'hold', keyId });
    }

    // Another account sees none of it.
    const other = await h.account({ credits: 1 });
    expect((await h.call('GET', '/api/v1/ledger', { key: other.key })).json<Page>().data.map((e) => e.amount)).toEqual([
      1,
    ]);
  });

  it('a cursor that is not one is a 400 in the documented shape', async () => {
    const { key } = await h.account({ credits: 1 });
    const res = await h.call('GET', '/api/v1/ledger?cursor=nonsense', { key });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'cursor' } });
    expect((await h.call('GET', '/api/v1/ledger?limit=600', { key })).json()).toMatchObject({
      error: { type: 'invalid_request_error', param: 'limit' },
    });
  });
});
