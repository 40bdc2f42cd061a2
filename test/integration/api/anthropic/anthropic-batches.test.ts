/**
 * Anthropic's Message Batches through the official `@anthropic-ai/sdk`, unmodified, over real HTTP:
 * a batch of 1,000 requests held once and settled line by line (the ledger shows it), retrieve,
 * list with Anthropic's pagination, results parsed by the SDK, a cancel part-way, delete; the same
 * batch in group A beside OpenAI batches; bad input refused in Anthropic's shape with nothing held.
 * Every batch and result is held to the SDK's types (test/support/anthropic-shapes.ts); the routes'
 * documented answers are anthropic-batches-routes.test.ts's.
 */
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import type { MessageBatchIndividualResponse } from '@anthropic-ai/sdk/resources/messages/batches';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { messageBatch, messageBatchResult } from '../../../support/anthropic-shapes';

let h: Harness;
let baseURL: string;
beforeAll(async () => {
  h = await startHarness({
    syncWaitMs: 20_000,
    batchLimits: { perBatch: 20, perAccount: 40 },
    batches: { fileLimits: { maxBytes: 4 * 1024 * 1024, maxLines: 1_000, maxLineBytes: 64 * 1024 } },
  });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await h?.close();
});

const sdk = (apiKey: string) => new Anthropic({ apiKey, baseURL, maxRetries: 0 });
/** claude-haiku's rate per 1,000 output tokens, in millicredits; a batch's request runs at half. */
const RATE = 700 / 2;
const MAX_TOKENS = 20;
const QUOTE = chargeForTokens(MAX_TOKENS, RATE);
const request = (id: string, content: string) => ({
  custom_id: id,
  params: { model: 'claude-haiku', max_tokens: MAX_TOKENS, messages: [{ role: 'user' as const, content }] },
});
const balanceOf = async (key: string) =>
  (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
const groupA = async (key: string, id: string) =>
  (await h.call('GET', `/api/v1/batches/${id}`, { key })).json<{
    format: string;
    status: string;
    requestCounts: { total: number; completed: number; failed: number };
    running: number;
    creditsHeld: number;
    creditsCharged: number;
  }>();

async function ended(client: Anthropic, id: string, timeoutMs = 120_000) {
  return eventually(
    async () => {
      const b = await client.messages.batches.retrieve(id);
      return b.processing_status === 'ended' ? b : undefined;
    },
    timeoutMs,
    500,
  );
}

async function resultsOf(client: Anthropic, id: string): Promise<MessageBatchIndividualResponse[]> {
  const out: MessageBatchIndividualResponse[] = [];
  for await (const r of await client.messages.batches.results(id)) out.push(r);
  return out;
}

async function ledgerOf(accountId: string) {
  const r = await h.pool.query<{ entry: string; amount_mc: number; generation_id: string | null; batch_id: string }>(
    `SELECT e.entry, e.amount_mc, e.generation_id, COALESCE(e.batch_id, g.batch_id) AS batch_id
       FROM ledger_entries e LEFT JOIN generations g ON g.id = e.generation_id
      WHERE e.account_id = $1 AND e.entry <> 'credit' ORDER BY e.id`,
    [accountId],
  );
  return r.rows;
}

const sumOf = (ledger: { entry: string; amount_mc: number }[], entry: string) =>
  ledger.filter((e) => e.entry === entry).reduce((sum, e) => sum + e.amount_mc, 0);

describe('a Message Batch of 1,000 requests through the Anthropic SDK', () => {
  it('is held once, settles line by line, and answers every request as /v1/messages would', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const client = sdk(key);
    const tokensOf = (i: number) => (i % 5) + 1;
    const failing = new Set([17, 503]);
    const requests = Array.from({ length: 1_000 }, (_, i) =>
      request(`req-${i}`, failing.has(i) ? 'sim:fail' : `line ${i} sim:tokens=${tokensOf(i)} sim:delay=1`),
    );
    const created = await client.messages.batches.create({ requests });
    messageBatch.parse(created);
    expect(created).toMatchObject({
      type: 'message_batch',
      processing_status: 'in_progress',
      request_counts: { processing: 1_000, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
      ended_at: null,
      results_url: null,
      archived_at: null,
      cancel_initiated_at: null,
    });
    expect(Date.parse(created.expires_at) - Date.parse(created.created_at)).toBe(24 * 3_600_000);

    const done = await ended(client, created.id, 240_000);
    messageBatch.parse(done);
    expect(done.request_counts).toEqual({ processing: 0, succeeded: 998, errored: 2, canceled: 0, expired: 0 });
    expect(done.ended_at).not.toBeNull();
    expect(done.results_url).toBe(`${baseURL}/v1/messages/batches/${created.id}/results`);

    const results = await resultsOf(client, created.id);
    expect(results.map((r) => r.custom_id)).toEqual(requests.map((r) => r.custom_id));
    for (const [i, r] of results.entries()) {
      messageBatchResult.parse(r);
      if (failing.has(i)) {
        expect(r.result).toMatchObject({ type: 'errored', error: { type: 'error', error: { type: 'api_error' } } });
        continue;
      }
      if (r.result.type !== 'succeeded') throw new Error(`request ${i} did not succeed`);
      expect(r.result.message).toMatchObject({
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku',
        stop_reason: 'end_turn',
        usage: { output_tokens: tokensOf(i), service_tier: 'batch' },
      });
    }

    // One hold for the whole batch; each succeeded request one charge of what it produced; the
    // failed ones released whole.
    const charges = requests.flatMap((_, i) => (failing.has(i) ? [] : [chargeForTokens(tokensOf(i), RATE)]));
    const ledger = await ledgerOf(accountId);
    expect(ledger.filter((e) => e.entry === 'hold')).toEqual([
      { entry: 'hold', amount_mc: 1_000 * QUOTE, generation_id: null, batch_id: created.id },
    ]);
    expect(
      ledger
        .filter((e) => e.entry === 'charge')
        .map((e) => e.amount_mc)
        .sort(),
    ).toEqual(charges.sort());
    const failedGenerations = await h.pool.query<{ id: string }>(
      "SELECT id FROM generations WHERE batch_id = $1 AND status = 'failed'",
      [created.id],
    );
    expect(failedGenerations.rows).toHaveLength(2);
    for (const { id } of failedGenerations.rows)
      expect(ledger.filter((e) => e.generation_id === id)).toEqual([
        { entry: 'release', amount_mc: QUOTE, generation_id: id, batch_id: created.id },
      ]);
    expect(ledger.every((e) => e.batch_id === created.id)).toBe(true);
    // What was held is, to the millicredit, what was charged and what went back.
    expect(sumOf(ledger, 'charge') + sumOf(ledger, 'release')).toBe(1_000 * QUOTE);
    const charged = charges.reduce((a, b) => a + b, 0);
    expect(await balanceOf(key)).toEqual(
      expect.objectContaining({ balance: (100_000 - charged) / 1000, holdsActive: 0 }),
    );

    // The same batch in group A, named by its format; OpenAI's Batch API does not list it.
    expect(await groupA(key, created.id)).toMatchObject({
      format: 'anthropic',
      status: 'completed',
      requestCounts: { total: 1_000, completed: 998, failed: 2 },
      creditsHeld: (1_000 * QUOTE) / 1000,
      creditsCharged: charged / 1000,
    });
    const errors = await h.call('GET', `/api/v1/batches/${created.id}/errors`, { key });
    expect(
      errors.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { custom_id: string }),
    ).toEqual([
      expect.objectContaining({ custom_id: 'req-17', result: expect.objectContaining({ type: 'errored' }) }),
      expect.objectContaining({ custom_id: 'req-503' }),
    ]);
    expect((await h.call('GET', `/v1/batches/${created.id}`, { key })).statusCode).toBe(404);
  }, 300_000);
});

describe('listing, cancelling and deleting', () => {
  it('lists newest first with Anthropic’s pagination (after_id, before_id, first_id, last_id, has_more)', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await client.messages.batches.create({ requests: [request(`only-${i}`, 'sim:tokens=1')] })).id);
    const newestFirst = [...ids].reverse();
    const seen: string[] = [];
    for await (const b of client.messages.batches.list({ limit: 2 })) seen.push(b.id);
    expect(seen).toEqual(newestFirst);
    const page = await client.messages.batches.list({ limit: 2, after_id: newestFirst[1] });
    expect(page.data.map((b) => b.id)).toEqual(newestFirst.slice(2, 4));
    expect(page).toMatchObject({ has_more: true, first_id: newestFirst[2], last_id: newestFirst[3] });
    const back = await client.messages.batches.list({ limit: 2, before_id: newestFirst[3] });
    expect(back.data.map((b) => b.id)).toEqual(newestFirst.slice(1, 3));
    expect(back.has_more).toBe(true);
    const top = await client.messages.batches.list({ limit: 2, before_id: newestFirst[1] });
    expect(top.data.map((b) => b.id)).toEqual([newestFirst[0]]);
    expect(top.has_more).toBe(false);
    // OpenAI's format does not list them; group A lists them with their format.
    expect((await h.call('GET', '/v1/batches', { key })).json<{ data: unknown[] }>().data).toEqual([]);
    const listed = (await h.call('GET', '/api/v1/batches?limit=10', { key })).json<{ data: { format: string }[] }>();
    expect(listed.data.map((b) => b.format)).toEqual(Array(5).fill('anthropic'));
  }, 60_000);

  it('a cancel part-way: finished requests stay charged, those running and those never started end canceled and released', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const client = sdk(key);
    // Twenty at a time: the three quick ones finish, then twenty slow ones run and seven wait.
    const requests = [
      ...[0, 1, 2].map((i) => request(`quick-${i}`, 'quick sim:tokens=4')),
      ...Array.from({ length: 27 }, (_, i) => request(`slow-${i}`, 'slow sim:delay=60000 sim:tokens=4')),
    ];
    const batch = await client.messages.batches.create({ requests });
    await eventually(
      async () => {
        const a = await groupA(key, batch.id);
        return a.requestCounts.completed === 3 && a.running === 20 ? a : undefined;
      },
      60_000,
      250,
    );
    const err = await client.messages.batches.delete(batch.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.ConflictError);
    expect((err as InstanceType<typeof Anthropic.ConflictError>).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error' },
    });

    const canceling = await client.messages.batches.cancel(batch.id);
    messageBatch.parse(canceling);
    expect(['canceling', 'ended']).toContain(canceling.processing_status);
    expect(canceling.cancel_initiated_at).not.toBeNull();
    const done = await ended(client, batch.id, 30_000);
    expect(done.request_counts).toEqual({ processing: 0, succeeded: 3, errored: 0, canceled: 27, expired: 0 });
    const results = await resultsOf(client, batch.id);
    expect(results.map((r) => [r.custom_id, r.result.type])).toEqual(
      requests.map((r, i) => [r.custom_id, i < 3 ? 'succeeded' : 'canceled']),
    );

    const ledger = await ledgerOf(accountId);
    expect(ledger.filter((e) => e.entry === 'hold')).toHaveLength(1);
    expect(ledger.filter((e) => e.entry === 'charge').map((e) => e.amount_mc)).toEqual(
      Array(3).fill(chargeForTokens(4, RATE)),
    );
    // The seven never started go back with the batch's rest; the twenty stopped running, one by one.
    const releases = ledger.filter((e) => e.entry === 'release');
    expect(releases.filter((e) => e.generation_id === null)).toEqual([
      { entry: 'release', amount_mc: 7 * QUOTE, generation_id: null, batch_id: batch.id },
    ]);
    const stoppedInFlight = releases.filter((e) => e.generation_id !== null && e.amount_mc === QUOTE);
    expect(stoppedInFlight).toHaveLength(20);
    expect(sumOf(ledger, 'charge') + sumOf(ledger, 'release')).toBe(30 * QUOTE);
    expect(await balanceOf(key)).toMatchObject({
      balance: 100 - (3 * chargeForTokens(4, RATE)) / 1000,
      holdsActive: 0,
    });

    // Cancelling again answers it again; an ended batch is deleted, and gone for every door.
    expect((await client.messages.batches.cancel(batch.id)).processing_status).toBe('ended');
    expect(await client.messages.batches.delete(batch.id)).toEqual({ id: batch.id, type: 'message_batch_deleted' });
    await expect(client.messages.batches.retrieve(batch.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    expect((await h.call('GET', `/api/v1/batches/${batch.id}`, { key })).statusCode).toBe(404);
  }, 120_000);
});

describe('bad input is a 400 in Anthropic’s shape, and nothing is held', () => {
  const refused = async (client: Anthropic, requests: unknown[]) => {
    const err = await client.messages.batches
      .create({ requests: requests as Anthropic.Messages.BatchCreateParams.Request[] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    const body = (err as InstanceType<typeof Anthropic.BadRequestError>).error as {
      type: string;
      error: { type: string; message: string };
    };
    expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    return body.error.message;
  };

  it('a missing or repeated custom_id, params the Messages API refuses, too many requests', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const client = sdk(key);
    const ok = request('a', 'hi');
    expect(await refused(client, [ok, { params: ok.params }])).toMatch(/^requests\[1\]\.custom_id: /);
    expect(await refused(client, [ok, { ...ok, custom_id: 'not ok!' }])).toMatch(/^requests\[1\]\.custom_id: /);
    expect(await refused(client, [ok, request('b', 'x'), { ...ok }])).toMatch(
      /^requests\[2\]\.custom_id: "a" is already used by requests\[0\]/,
    );
    expect(await refused(client, [ok, { custom_id: 'b', params: { ...ok.params, temperature: 3 } }])).toMatch(
      /^requests\[1\]\.params: temperature/,
    );
    expect(await refused(client, [{ custom_id: 'b', params: { ...ok.params, max_tokens: undefined } }])).toMatch(
      /^requests\[0\]\.params: max_tokens/,
    );
    expect(await refused(client, [{ custom_id: 'b', params: { ...ok.params, model: 'no-such-model' } }])).toMatch(
      /^requests\[0\]\.params: .*no-such-model/,
    );
    expect(await refused(client, [{ custom_id: 'b', params: { ...ok.params, stream: true } }])).toMatch(
      /^requests\[0\]\.params: stream: /,
    );
    expect(await refused(client, [{ custom_id: 'b', params: { ...ok.params, surprise: 1 } }])).toMatch(
      /^requests\[0\]\.params: surprise: Extra inputs are not permitted/,
    );
    expect(
      await refused(
        client,
        Array.from({ length: 1_001 }, (_, i) => request(`r${i}`, 'x')),
      ),
    ).toMatch(/^requests: 1001 requests is more than a batch may have \(1000\)/);
    expect(await refused(client, [])).toMatch(/^requests: /);
    // Every problem is named (the first few), not only the first.
    const both = [{ params: ok.params }, { custom_id: 'c', params: { ...ok.params, temperature: 3 } }];
    expect(await refused(client, both)).toMatch(/^requests\[0\]\.custom_id: .* requests\[1\]\.params: temperature/);
    expect(await balanceOf(key)).toMatchObject({ balance: 100, holdsActive: 0 });
    expect(await ledgerOf(accountId)).toEqual([]);
    expect((await client.messages.batches.list()).data).toEqual([]);
  });

  it('402 billing_error when the account cannot cover the whole batch: nothing held or recorded', async () => {
    const { key, accountId } = await h.account({ credits: 0.01 });
    const client = sdk(key);
    const err = await client.messages.batches
      .create({ requests: [request('a', 'x'), request('b', 'y')] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(402);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { type: 'billing_error' } });
    expect(await ledgerOf(accountId)).toEqual([]);
    expect((await client.messages.batches.list()).data).toEqual([]);
  });
});
