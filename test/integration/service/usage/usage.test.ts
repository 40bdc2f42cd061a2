// GET /api/v1/usage: what an account's generations were charged and how they ended,
// per day, model, key and kind, from whichever door; another account's never counts.
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

interface Usage {
  data: {
    group: string;
    creditsCharged: number;
    generations: number;
    succeeded: number;
    failed: number;
    outputTokens: number;
  }[];
  total: Record<string, number>;
}

describe('usage', () => {
  it('adds up charges, counts, failures and tokens per model, key, kind and day', async () => {
    const { key, keyId, accountId } = await h.account({ credits: 100, scopes: ['image', 'chat'] });
    const second = (await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['image'] })).json<{
      id: string;
      key: string;
    }>();
    const gen = (k: string, body: unknown) => h.call('POST', '/api/v1/generate', { key: k, body });
    expect((await gen(key, { kind: 'image', model: 'flux', prompt: 'one' })).statusCode).toBe(200);
    expect((await gen(second.key, { kind: 'image', model: 'flux', prompt: 'two' })).statusCode).toBe(200);
    expect((await gen(second.key, { kind: 'image', model: 'flux', prompt: 'three sim:fail' })).json()).toMatchObject({
      status: 'failed',
    });
    const reply = await h.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'claude-haiku', messages: [{ role: 'user', content: 'hi sim:tokens=7' }] },
    });
    expect(reply.statusCode, reply.body).toBe(200);
    await h
      .account({ credits: 10 })
      .then(async (other) => gen(other.key, { kind: 'image', model: 'flux', prompt: 'not ours' }));

    const usage = async (q: string) => {
      const res = await h.call('GET', `/api/v1/usage?${q}`, { key });
      expect(res.statusCode, res.body).toBe(200);
      return res.json<Usage>();
    };
    const byModel = await usage('group_by=model');
    const chat = byModel.data.find((d) => d.group !== 'image-flux')!;
    // The simulator's input: the prompt at about four characters a token, nothing cached.
    const details = { cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
    expect(chat).toMatchObject({
      generations: 1,
      succeeded: 1,
      failed: 0,
      outputTokens: 7,
      inputTokens: 4,
      ...details,
    });
    expect(byModel.data.find((d) => d.group === 'image-flux')).toEqual({
      group: 'image-flux',
      creditsCharged: 6,
      generations: 3,
      succeeded: 2,
      failed: 1,
      outputTokens: 0,
      inputTokens: 0,
      ...details,
    });
    expect(byModel.total).toEqual({
      creditsCharged: 6 + chat.creditsCharged,
      generations: 4,
      succeeded: 3,
      failed: 1,
      outputTokens: 7,
      inputTokens: 4,
      ...details,
    });

    const byKey = await usage('group_by=key');
    expect(byKey.data.find((d) => d.group === second.id)).toMatchObject({
      creditsCharged: 3,
      generations: 2,
      failed: 1,
    });
    expect(byKey.data.find((d) => d.group === keyId)).toMatchObject({ generations: 2 });
    expect((await usage('group_by=kind')).data.map((d) => d.group).sort()).toEqual(['chat', 'image']);

    // Every day of the range, today's with everything; the charges agree with the ledger.
    const byDay = await usage('group_by=day');
    expect(byDay.data).toHaveLength(30);
    expect(byDay.data.at(-1)).toMatchObject({ group: new Date().toISOString().slice(0, 10), generations: 4 });
    expect(byDay.data.slice(0, -1).every((d) => d.generations === 0)).toBe(true);
    const balance = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number }>().balance;
    expect(byDay.total.creditsCharged).toBeCloseTo(100 - balance, 6);

    // A range without them.
    expect(
      (await usage('from=2026-01-01T00:00:00Z&to=2026-01-03T00:00:00Z&group_by=day')).data.map((d) => d.generations),
    ).toEqual([0, 0]);
    const bad = await h.call('GET', '/api/v1/usage?from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', { key });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'from' } });
  });
});
