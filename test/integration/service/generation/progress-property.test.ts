/**
 * Progress never goes back, as a property over many runs against the real PostgreSQL:
 * whatever a provider reports, in whatever order and however many reports race, the recorded
 * progress of a running generation is the highest report so far (0–99), no 10 % step owes its
 * webhook twice, the step reached is owed, and a generation that has ended records nothing more.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordProgress } from '../../../../core/ledger/progress';
import { newId } from '../../../../core/ids';
import { admit, release, settle } from '../../../../core/ledger';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const recorded = async (id: string): Promise<number | undefined> =>
  (await h.pool.query<{ percent: number }>('SELECT percent FROM generation_progress WHERE generation_id = $1', [id]))
    .rows[0]?.percent;

describe('recorded progress', () => {
  it('is the running maximum of the reports, whatever their order and races; no step is owed twice; nothing moves it after the end', async () => {
    const { accountId, key } = await h.account({ credits: 100_000, scopes: ['video', 'webhooks'] });
    const endpoint = await h.call('POST', '/api/v1/webhooks', {
      key,
      body: { url: 'http://127.0.0.1:9/gensvc', events: ['generation.progress'] },
    });
    expect(endpoint.statusCode, endpoint.body).toBe(201);

    // A run's reports as batches; the reports of one batch race each other.
    const reports = fc.array(fc.array(fc.integer({ min: -10, max: 130 }), { minLength: 1, maxLength: 4 }), {
      minLength: 1,
      maxLength: 8,
    });
    await fc.assert(
      fc.asyncProperty(reports, fc.boolean(), async (batches, succeeds) => {
        const id = newId('gen');
        await admit(h.pool, [
          {
            id,
            accountId,
            apiKeyId: null,
            kind: 'video',
            model: 'kling',
            params: { seconds: 5 },
            internal: {},
            prompt: 'a property',
            quoteMc: 1000,
            startsRunning: true,
          },
        ]);
        let highest: number | undefined;
        let last = -1;
        for (const batch of batches) {
          await Promise.all(batch.map((p) => recordProgress(h.pool, id, p, 'provider')));
          highest = Math.max(highest ?? 0, ...batch.map((p) => Math.max(0, Math.min(99, p))));
          const now = await recorded(id);
          expect(now).toBe(highest);
          expect(now!).toBeGreaterThanOrEqual(last);
          last = now!;
        }
        // At most one delivery per 10 % step, up to the step the run reached, that one included.
        const steps = (
          await h.pool.query<{ step: number }>(
            `SELECT progress AS step FROM webhook_deliveries WHERE generation_id = $1 AND event = 'generation.progress' ORDER BY created_at, progress`,
            [id],
          )
        ).rows.map((r) => r.step);
        const reached = Math.floor(highest! / 10) * 10;
        expect(new Set(steps).size).toBe(steps.length);
        expect(steps.every((s) => s % 10 === 0 && s >= 10 && s <= reached)).toBe(true);
        expect(Math.max(0, ...steps), JSON.stringify({ batches, steps, highest })).toBe(reached);

        await (succeeds
          ? settle(h.pool, { generationId: id, outputKey: null, outputText: null })
          : release(h.pool, id, { code: 'provider_error', message: 'failed', retryable: true }));
        await recordProgress(h.pool, id, 99, 'provider');
        expect(await recorded(id)).toBe(highest);
      }),
      { numRuns: 60 },
    );
  });
});
