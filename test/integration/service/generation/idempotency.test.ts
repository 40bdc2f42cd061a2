import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit } from '../../../../core/ledger';
import { requestHash } from '../../../../core/generation/idempotency';
import { newId } from '../../../../core/ids';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { credits, generate, untilFinished } from '../../../support/api';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const count = async (accountId: string) =>
  Number(
    (await h.pool.query<{ n: string }>('SELECT count(*) AS n FROM generations WHERE account_id = $1', [accountId]))
      .rows[0]!.n,
  );

describe('Idempotency-Key on POST /api/generate', () => {
  it('returns the same generation for the same key and body, with one hold and one charge', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const body = { kind: 'video', model: 'kling', prompt: 'a slow river sim:delay=800' };
    const first = await generate(h, key, body, { 'idempotency-key': 'order-1' });
    // Same request, keys in another order: a true repeat.
    const again = await generate(
      h,
      key,
      { prompt: body.prompt, model: 'kling', kind: 'video' },
      { 'idempotency-key': 'order-1' },
    );
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body.generation.id).toBe(first.body.generation.id);
    expect(await credits(h, key)).toMatchObject({ balance: 57.5, holdsActive: 42.5 });

    await untilFinished(h, key, first.body.generation.id);
    const late = await generate(h, key, body, { 'idempotency-key': 'order-1' });
    expect(late.body.generation).toMatchObject({
      id: first.body.generation.id,
      status: 'succeeded',
      creditsCharged: 42.5,
    });
    expect(await credits(h, key)).toMatchObject({ balance: 57.5, holdsActive: 0 });
    expect(await count(accountId)).toBe(1);
  });

  it('a repeat starts the workflow that the first request never started (its API died after answering)', async () => {
    const { key, accountId, keyId } = await h.account({ credits: 100 });
    const body = { kind: 'video', model: 'kling', prompt: 'an orphan sim:delay=0' };
    // What the first request left behind: the claim, the hold and a queued generation, no workflow.
    const id = newId('gen');
    await admit(
      h.pool,
      [
        {
          id,
          accountId,
          apiKeyId: keyId,
          kind: 'video',
          model: 'kling',
          params: { seconds: 5, resolution: '720p', aspect: '16:9', width: 320, height: 176 },
          internal: {},
          prompt: body.prompt,
          quoteMc: 42_500,
        },
      ],
      { accountId, key: 'order-orphan', requestHash: requestHash('POST /api/generate', body) },
    );
    const again = await generate(h, key, body, { 'idempotency-key': 'order-orphan' });
    expect(again.status).toBe(200);
    expect(again.body.generation.id).toBe(id);
    expect(await untilFinished(h, key, id)).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });
    expect(await credits(h, key)).toMatchObject({ balance: 57.5, holdsActive: 0 });
    expect(await count(accountId)).toBe(1);
  });

  it('10 concurrent retries of one request make one generation', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        generate(h, key, { kind: 'image', model: 'flux', prompt: 'a red door' }, { 'idempotency-key': 'retry-storm' }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.body.generation.id)).size).toBe(1);
    await untilFinished(h, key, results[0]!.body.generation.id);
    expect(await credits(h, key)).toMatchObject({ balance: 7, holdsActive: 0 });
    expect(await count(accountId)).toBe(1);
  });

  it('409 idempotency_conflict when the key is reused for another request; nothing charged', async () => {
    const { key } = await h.account({ credits: 20 });
    await generate(h, key, { kind: 'image', model: 'flux', prompt: 'one' }, { 'idempotency-key': 'k1' });
    const other = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'two' }, { 'idempotency-key': 'k1' });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ type: 'idempotency_conflict', code: 409, param: 'Idempotency-Key' });
    expect(await credits(h, key)).toMatchObject({ balance: 17, holdsActive: 0 });
  });

  it('a refused request answers the same 402 when repeated, and a rejected one does not use up its key', async () => {
    const { key, accountId } = await h.account({ credits: 1 });
    const first = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'x' }, { 'idempotency-key': 'poor' });
    const again = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'x' }, { 'idempotency-key': 'poor' });
    for (const r of [first, again])
      expect(r.body.error).toMatchObject({ type: 'insufficient_credits', required: 3, available: 1 });
    expect(await count(accountId)).toBe(0);

    const invalid = await generate(
      h,
      key,
      { kind: 'image', model: 'no-such', prompt: 'x' },
      { 'idempotency-key': 'typo' },
    );
    expect(invalid.status).toBe(400);
    const fixed = await generate(
      h,
      key,
      { kind: 'chat', model: 'chat-haiku', prompt: 'x' },
      { 'idempotency-key': 'typo' },
    );
    expect(fixed.body.generation).toMatchObject({ status: 'succeeded', creditsCharged: 1 });
  });

  it('keys belong to one account, and a malformed key is a 400', async () => {
    const a = await h.account({ credits: 10 });
    const b = await h.account({ credits: 10 });
    const ra = await generate(
      h,
      a.key,
      { kind: 'chat', model: 'chat-haiku', prompt: 'hi' },
      { 'idempotency-key': 'shared' },
    );
    const rb = await generate(
      h,
      b.key,
      { kind: 'chat', model: 'chat-haiku', prompt: 'hi' },
      { 'idempotency-key': 'shared' },
    );
    expect(ra.body.generation.id).not.toBe(rb.body.generation.id);
    const bad = await generate(h, a.key, { kind: 'chat', prompt: 'hi' }, { 'idempotency-key': 'has spaces' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ type: 'invalid_request_error', param: 'Idempotency-Key' });
  });
});
