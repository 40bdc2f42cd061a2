/**
 * A batch through the official openai Python package (the way its users write it:
 * test/support/openai-batch.py) against our /v1 over real HTTP. The package is installed into a
 * virtual environment in the gensvc cache on first use, as the Open Responses compliance test does.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { pythonWith } from '../../../support/python-venv';

const run = promisify(execFile);
const VERSION = '3.57.0';
const script = join(import.meta.dirname, '..', '..', '..', 'support', 'openai-batch.py');

let h: Harness;
let baseURL: string;
let python: string;
beforeAll(async () => {
  python = await pythonWith(`openai-py-${VERSION}`, [`openai==${VERSION}`]);
  h = await startHarness({ syncWaitMs: 20_000, batchLimits: { perBatch: 3, perAccount: 6 } });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
}, 240_000);
afterAll(async () => {
  await h?.close();
});

interface Seen {
  file: { id: string; purpose: string; bytes: number };
  created_status: string;
  batch: { id: string; status: string; endpoint: string; metadata: unknown; request_counts: unknown };
  listed: boolean;
  output: { custom_id: string; response: { status_code: number; body: Record<string, unknown> }; error: null }[];
  errors: { custom_id: string; response: { status_code: number; body: { error: { type: string } } } }[];
}

describe('a batch through the openai Python package', () => {
  it('uploads, creates, polls to completed, downloads and parses the output and error files; the failed line costs nothing', async () => {
    const { key } = await h.account({ credits: 100 });
    const out = await run(python, [script, baseURL, key], { maxBuffer: 4 * 1024 * 1024 });
    const seen = JSON.parse(out.stdout) as Seen;
    expect(seen.file).toMatchObject({ purpose: 'batch' });
    expect(seen.created_status).toBe('in_progress');
    expect(seen.batch).toMatchObject({
      status: 'completed',
      endpoint: '/v1/chat/completions',
      metadata: { client: 'python' },
      request_counts: { total: 3, completed: 2, failed: 1 },
    });
    expect(seen.listed).toBe(true);
    expect(seen.output.map((l) => l.custom_id)).toEqual(['tide', 'dunes']);
    for (const l of seen.output) {
      expect(l.response.status_code).toBe(200);
      expect(l.response.body).toMatchObject({ object: 'chat.completion', model: 'claude-haiku' });
      expect(l.response.body.id).toMatch(/^gen_/);
      // The line's generation is the account's, readable like any other, and names its batch.
      const g = await h.call('GET', `/api/v1/generations/${String(l.response.body.id)}`, { key });
      expect(g.json<{ batchId: string; status: string }>()).toMatchObject({
        batchId: seen.batch.id,
        status: 'succeeded',
      });
    }
    expect(seen.errors).toHaveLength(1);
    expect(seen.errors[0]).toMatchObject({
      custom_id: 'broken',
      response: { status_code: 502, body: { error: { type: 'server_error' } } },
    });
    const balance = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
    expect(balance.holdsActive).toBe(0);
    expect(balance.balance).toBeLessThan(100);
    expect(balance.balance).toBeGreaterThan(99.9);
  }, 240_000);
});
