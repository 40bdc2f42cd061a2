/**
 * OpenAI-format webhooks end to end: an endpoint registered with `format: "openai"` receives
 * batch, response and generation events as OpenAI's event object with Standard Webhooks headers,
 * and the official openai packages accept them as OpenAI's own: `client.webhooks.unwrap()` of the
 * JS package here, and of the Python package (test/support/openai-webhooks.py, installed into a
 * virtual environment in the gensvc cache on first use, as the other Python tests do). Both refuse
 * a tampered body.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI, { InvalidWebhookSignatureError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { pythonWith } from '../../../support/python-venv';
import { startReceiver } from '../../../support/webhook-receiver';
import type { Received, TestReceiver } from '../../../support/webhook-receiver';

const run = promisify(execFile);
const VERSION = '3.57.0';
const script = join(import.meta.dirname, '..', '..', '..', 'support', 'openai-webhooks.py');

let h: Harness;
let receiver: TestReceiver;
let baseURL: string;
let python: string;
beforeAll(async () => {
  python = await pythonWith(`openai-py-${VERSION}`, [`openai==${VERSION}`]);
  h = await startHarness({ syncWaitMs: 20_000, webhooks: { retryScheduleMs: [150, 300, 600] } });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  receiver = await startReceiver();
}, 240_000);
afterAll(async () => {
  await receiver?.close();
  await h?.close();
});

/** The headers as a receiver's framework hands them over: one string each. */
const headersOf = (r: Received): Record<string, string> =>
  Object.fromEntries(Object.entries(r.headers).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v]] : [])));

/** Triggers one of each ending: every event an OpenAI-format endpoint gets, with the id each names. */
async function triggerEveryEnding(client: OpenAI): Promise<Record<string, string>> {
  const completed = await client.responses.create({ model: 'claude-haiku', input: 'hi sim:tokens=3' });
  const incomplete = await client.responses.create({
    model: 'claude-haiku',
    input: 'long sim:tokens=20',
    max_output_tokens: 16,
  });
  const slow = await client.responses.create({
    model: 'claude-haiku',
    input: 'slow sim:delay=8000 sim:tokens=3',
    background: true,
  });
  await client.responses.cancel(slow.id);
  const failing = await client.responses.create({ model: 'claude-haiku', input: 'sim:fail', background: true });
  const chat = await client.chat.completions.create({
    model: 'claude-haiku',
    messages: [{ role: 'user', content: 'hey sim:tokens=2' }],
  });
  const line = { custom_id: 'a', method: 'POST', url: '/v1/chat/completions' };
  const body = { model: 'claude-haiku', messages: [{ role: 'user', content: 'sim:tokens=2' }], max_tokens: 20 };
  const file = await client.files.create({
    file: await toFile(Buffer.from(`${JSON.stringify({ ...line, body })}\n`), 'in.jsonl'),
    purpose: 'batch',
  });
  const batch = await client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
  });
  await eventually(async () => ((await client.batches.retrieve(batch.id)).status === 'completed' ? true : undefined));
  return {
    'response.completed': completed.id,
    'response.incomplete': incomplete.id,
    'response.cancelled': slow.id,
    'response.failed': failing.id,
    'generation.completed': chat.id,
    'batch.completed': batch.id,
  };
}

describe('webhooks in OpenAI’s format', () => {
  it('batch, response and generation events verify and parse with client.webhooks.unwrap() of the JS and Python packages', async () => {
    const { key } = await h.account({ credits: 50 });
    const created = await h.call('POST', '/api/v1/webhooks', { key, body: { url: receiver.url, format: 'openai' } });
    expect(created.statusCode).toBe(201);
    const endpoint = created.json<{ id: string; format: string; events: string[]; secret: string }>();
    expect(endpoint.format).toBe('openai');
    expect(endpoint.events).toEqual(expect.arrayContaining(['batch.completed', 'response.completed']));

    const client = new OpenAI({ apiKey: key, baseURL, maxRetries: 0, webhookSecret: endpoint.secret });
    const expected = await triggerEveryEnding(client);
    const ofEndpoint = (r: Received) => r.headers['x-service-event'] !== undefined;
    const got = await receiver.until(Object.keys(expected).length, ofEndpoint, 60_000);
    expect(Object.fromEntries(got.map((r) => [r.json.type, (r.json.data as { id: string }).id]))).toEqual(expected);

    for (const r of got) {
      const event = await client.webhooks.unwrap(r.body, headersOf(r));
      expect(event).toEqual({
        id: r.headers['webhook-id'],
        object: 'event',
        type: r.json.type,
        created_at: expect.any(Number),
        data: { id: expected[event.type] },
      });
      expect(Math.abs(event.created_at - Date.now() / 1000)).toBeLessThan(120);
      await expect(client.webhooks.unwrap(r.body.replace('"data"', '"data" '), headersOf(r))).rejects.toBeInstanceOf(
        InvalidWebhookSignatureError,
      );
    }

    const dir = await mkdtemp(join(tmpdir(), 'openai-webhooks-'));
    try {
      const file = join(dir, 'deliveries.json');
      const deliveries = got.map((r) => ({ body: r.body, headers: headersOf(r) }));
      await writeFile(file, JSON.stringify({ secret: endpoint.secret, deliveries }));
      const { stdout } = await run(python, [script, file]);
      const seen = JSON.parse(stdout) as { type: string; data_id: string; id: string; tampered_refused: boolean }[];
      expect(seen.map((s) => [s.type, s.data_id])).toEqual(
        got.map((r) => [r.json.type, expected[String(r.json.type)]]),
      );
      expect(seen.map((s) => s.id)).toEqual(got.map((r) => r.headers['webhook-id']));
      expect(seen.every((s) => s.tampered_refused)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an OpenAI-format endpoint may list its events; names of the other catalogues are refused by name', async () => {
    const { key } = await h.account({ credits: 1 });
    const listed = await h.call('POST', '/api/v1/webhooks', {
      key,
      body: { url: receiver.url, format: 'openai', events: ['batch.failed', 'response.completed'] },
    });
    expect(listed.json()).toMatchObject({ format: 'openai', events: ['batch.failed', 'response.completed'] });
    const refused = await h.call('POST', '/api/v1/webhooks', {
      key,
      body: { url: receiver.url, format: 'openai', events: ['generation.succeeded'] },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ error: { message: expect.stringContaining('generation.succeeded') } });
  });
});
