import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, eventually } from '../support/harness';
import type { Harness } from '../support/harness';
import { credits, generate } from '../support/api';

let h: Harness;
beforeAll(async () => {
  // No worker at first: nothing can place the hold, as when the workers or the database are down.
  h = await startHarness({ worker: false, admissionTimeoutMs: 1500 });
});
afterAll(async () => {
  await h?.close();
});

describe('an admission that cannot be decided in time', () => {
  it('answers 503 and never charges, even when the hold is placed later', async () => {
    const { key, accountId } = await h.account({ credits: 20 });
    const res = await h.call('POST', '/api/generate', { key, body: { kind: 'image', model: 'flux', prompt: 'a quay at night' } });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.json()).toMatchObject({ error: { type: 'server_error', code: 503 } });
    expect(await credits(h, key)).toMatchObject({ balance: 20, holdsActive: 0 });

    // The workers come back: the stranded workflow places its hold, sees the cancel, releases it.
    await h.startWorker();
    const failed = await eventually(async () => {
      const r = await h.pool.query<{ status: string; error: { code: string } | null }>('SELECT status, error FROM generations WHERE account_id = $1', [accountId]);
      return r.rows[0]?.status === 'failed' ? r.rows[0] : undefined;
    });
    expect(failed.error).toMatchObject({ code: 'cancelled' });
    expect(await credits(h, key)).toMatchObject({ balance: 20, holdsActive: 0 });

    // And the service works normally again.
    const ok = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a quay at dawn' });
    expect(ok.body.generation).toMatchObject({ status: 'succeeded', creditsCharged: 3 });
  });
});
