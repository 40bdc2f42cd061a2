/**
 * A Message Batch through the official anthropic Python package (the way its users write it:
 * test/support/anthropic-batch.py) against the Anthropic door over real HTTP: create, retrieve until
 * it has ended, results, list, and a refused batch. The package is installed into a virtual
 * environment in the gensvc cache on first use (test/support/python-venv.ts).
 */
import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { messageBatch, messageBatchResult } from '../../../support/anthropic-shapes';
import { pythonWith } from '../../../support/python-venv';

const run = promisify(execFile);
const VERSION = '2.10.0';
const script = join(import.meta.dirname, '..', '..', '..', 'support', 'anthropic-batch.py');

let h: Harness;
let baseURL: string;
let python: string;
beforeAll(async () => {
  python = await pythonWith(`anthropic-py-${VERSION}`, [`anthropic==${VERSION}`]);
  h = await startHarness({ syncWaitMs: 20_000 });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
}, 240_000);
afterAll(async () => {
  await h?.close();
});

interface Seen {
  created: { id: string; processing_status: string; request_counts: Record<string, number> };
  ended: { id: string; processing_status: string; request_counts: Record<string, number>; results_url: string };
  results: {
    custom_id: string;
    result: { type: string; message?: { id: string; usage: { output_tokens: number } } };
  }[];
  listed: boolean;
  refused: { status: number; body: { type: string; error: { type: string; message: string } } } | null;
}

describe('a Message Batch through the anthropic Python package', () => {
  it('creates, polls until it has ended, reads the results; the failed request costs nothing, a refused batch holds nothing', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const out = await run(python, [script, baseURL, key], { maxBuffer: 4 * 1024 * 1024 });
    const seen = JSON.parse(out.stdout) as Seen;
    messageBatch.parse(seen.created);
    messageBatch.parse(seen.ended);
    expect(seen.created).toMatchObject({ processing_status: 'in_progress', request_counts: { processing: 3 } });
    expect(seen.ended).toMatchObject({
      id: seen.created.id,
      processing_status: 'ended',
      request_counts: { processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 },
      results_url: `${baseURL}/v1/messages/batches/${seen.created.id}/results`,
    });
    for (const r of seen.results) messageBatchResult.parse(r);
    expect(seen.results.map((r) => [r.custom_id, r.result.type])).toEqual([
      ['tide', 'succeeded'],
      ['dunes', 'succeeded'],
      ['broken', 'errored'],
    ]);
    expect(seen.results.map((r) => r.result.message?.usage.output_tokens)).toEqual([3, 4, undefined]);
    expect(seen.listed).toBe(true);
    expect(seen.refused).toMatchObject({
      status: 400,
      body: { type: 'error', error: { type: 'invalid_request_error' } },
    });
    expect(seen.refused!.body.error.message).toMatch(/requests\[1\]\.custom_id: "same" is already used/);

    // The two answered requests were charged what they produced at the batch rate; one hold in all.
    const rate = 700 / 2;
    const charged = chargeForTokens(3, rate) + chargeForTokens(4, rate);
    const balance = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
    expect(balance).toMatchObject({ balance: (100_000 - charged) / 1000, holdsActive: 0 });
    const holds = await h.pool.query('SELECT 1 FROM ledger_entries WHERE account_id = $1 AND entry = $2', [
      accountId,
      'hold',
    ]);
    expect(holds.rowCount).toBe(1);
  }, 240_000);
});
