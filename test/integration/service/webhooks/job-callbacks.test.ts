/**
 * Callback URLs named on jobs, end to end on real servers: a video submitted with a callback on
 * every door (group A, group C, group B's two video spellings, MCP's tool and task) delivers
 * queued, running and succeeded to a receiver on loopback (development mode), checked with
 * node:crypto for `X-Service-Signature` and with the `standardwebhooks` package; batches (group B
 * through the `openai` SDK, MCP) tell their end; a receiver that is down gets the deliveries once it
 * is back; the callback log shows them and redelivers; an Idempotency-Key repeat adds no callback.
 */
import { createHmac } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { createConformance, loadDocument } from '../../../support/openapi';
import { receiverPool } from '../../../support/webhook-receiver';
import type { Received, TestReceiver } from '../../../support/webhook-receiver';

// Compressed: tests cannot wait 5 s, 5 min, 30 min… (the production schedule is unit-tested).
const SCHEDULE = [300, 600, 1000, 1000, 1000, 1000, 1000, 1000, 1000];
const VIDEO = { model: 'seedance-lite', prompt: 'waves sim:delay=300', seconds: 3, quality: '480p' };
const LIFECYCLE = ['generation.queued', 'generation.running', 'generation.succeeded'];

let h: Harness;
let c: ReturnType<typeof createConformance>;
let base: string;
const receivers = receiverPool();
const mcpClients: Client[] = [];
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000, webhooks: { retryScheduleMs: SCHEDULE } });
  c = createConformance(await loadDocument(h.app));
  base = await h.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await Promise.all(mcpClients.map((m) => m.close()));
  await receivers.closeAll();
  await h?.close();
});

/** An account with a callback secret (made through the API, shown once). */
async function accountWithSecret(credits = 500): Promise<{ key: string; accountId: string; secret: string }> {
  const { key, accountId } = await h.account({ credits });
  const path = '/api/v1/webhooks/callback-secret/rotate';
  const made = c.conforms<{ secret: string }>(await h.call('POST', path, { key }), 'post', path, 200);
  return { key, accountId, secret: made.secret };
}

/** `X-Service-Signature` recomputed here with node:crypto, not by the code under test; Standard Webhooks by its package. */
function expectSignedBothWays(r: Received, secret: string): void {
  const parts = String(r.headers['x-service-signature']).split(',');
  const t = parts.find((p) => p.startsWith('t='))!.slice(2);
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.${r.body}`).digest('hex');
  expect(parts.filter((p) => p.startsWith('v1=')).map((p) => p.slice(3))).toContain(expected);
  expect(Math.abs(Date.now() / 1000 - Number(t))).toBeLessThanOrEqual(300);
  expect(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
}

/** The three lifecycle events of one generation, each signed both ways, in the order the states happened. */
async function expectLifecycle(receiver: TestReceiver, id: string, secret: string): Promise<Received[]> {
  const got = await receiver.until(3, (r) => r.json.generation_id === id, 60_000);
  expect(got.map((r) => r.json.event).sort()).toEqual(LIFECYCLE);
  for (const r of got) expectSignedBothWays(r, secret);
  expect(got.find((r) => r.json.event === 'generation.succeeded')!.json).toMatchObject({
    kind: 'video',
    output_url: expect.stringMatching(/^http:\/\/files\.test\//),
    credits_charged: expect.any(Number),
  });
  return got;
}

async function mcpClient(key: string): Promise<Client> {
  const client = new Client({ name: 'callback-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/api/mcp', base), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  mcpClients.push(client);
  return client;
}

async function mcpTool(key: string, args: Record<string, unknown>, name = 'generate_video'): Promise<CallToolResult> {
  const client = await mcpClient(key);
  return (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as CallToolResult;
}

/** generate_video called as an MCP task: the generation its result names. */
async function mcpTask(key: string, args: Record<string, unknown>): Promise<string> {
  const client = await mcpClient(key);
  let id: string | undefined;
  for await (const m of client.experimental.tasks.callToolStream(
    { name: 'generate_video', arguments: args },
    CallToolResultSchema,
    { task: { ttl: 600_000 } },
  )) {
    if (m.type === 'result') id = (m.result.structuredContent as { id: string }).id;
  }
  if (!id) throw new Error('the task ended without a result');
  return id;
}

interface CallbackDelivery {
  id: string;
  event: string;
  generationId: string | null;
  batchId: string | null;
  url: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: { attempt: number; statusCode: number | null; nextRetryAt: string | null }[];
}
const LOG = '/api/v1/webhooks/callbacks/deliveries';
const callbackLog = async (key: string, job: string): Promise<CallbackDelivery[]> =>
  c.conforms<{ data: CallbackDelivery[] }>(await h.call('GET', `${LOG}?job=${job}`, { key }), 'get', LOG, 200).data;

describe('a video with a callback on each door', () => {
  it('delivers queued, running and succeeded, signed in both formats, to the URL each door names its way', async () => {
    const { key, secret } = await accountWithSecret();
    const receiver = await receivers.start();
    const submitted: Record<string, string> = {};

    const a = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'video', ...VIDEO, webhook: receiver.url },
    });
    expect(a.statusCode, a.body).toBe(202);
    submitted['group A'] = a.json<{ id: string }>().id;

    const groupC = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'video', ...VIDEO, callbackUrl: receiver.url },
    });
    expect(groupC.statusCode, groupC.body).toBe(200);
    submitted['group C'] = groupC.json<{ generation: { id: string } }>().generation.id;

    const videos = await h.call('POST', '/v1/videos', {
      key,
      body: { model: 'seedance-lite', prompt: VIDEO.prompt, seconds: 3, callback_url: receiver.url },
    });
    expect(videos.statusCode, videos.body).toBe(200);
    submitted['group B /v1/videos'] = videos.json<{ id: string }>().id;

    const spec = await h.call('POST', '/v1/video/generations', {
      key,
      body: { model: 'seedance-lite', prompt: VIDEO.prompt, duration: 5, callback_url: receiver.url },
    });
    expect(spec.statusCode, spec.body).toBe(200);
    submitted['group B /v1/video/generations'] = spec.json<{ id: string }>().id;

    const tool = await mcpTool(key, { ...VIDEO, webhook: receiver.url });
    expect(tool.isError, JSON.stringify(tool.content)).toBeFalsy();
    submitted['MCP tool'] = (tool.structuredContent as { id: string }).id;
    submitted['MCP task'] = await mcpTask(key, { ...VIDEO, webhook: receiver.url });

    for (const [door, id] of Object.entries(submitted)) {
      const got = await expectLifecycle(receiver, id, secret);
      expect(new Set(got.map((r) => r.headers['x-service-delivery'])).size, door).toBe(3);
    }

    // A succeeded video extended, edited and remixed: new jobs, each with its own callback.
    const source = submitted['group A'];
    const derived: Record<string, string> = {};
    const extend = await h.call('POST', `/api/v1/generations/${source}/extend`, {
      key,
      body: { prompt: 'the tide turns sim:delay=300', seconds: 3, webhook: receiver.url },
    });
    expect(extend.statusCode, extend.body).toBe(202);
    derived['group A extend'] = extend.json<{ id: string }>().id;
    const remix = await h.call('POST', `/api/v1/generations/${source}/remix`, {
      key,
      body: { prompt: 'at night sim:delay=300', webhook: receiver.url },
    });
    expect(remix.statusCode, remix.body).toBe(202);
    derived['group A remix'] = remix.json<{ id: string }>().id;
    const edit = await h.call('POST', '/v1/videos/edits', {
      key,
      body: { video: { id: source }, prompt: 'under snow sim:delay=300', callback_url: receiver.url },
    });
    expect(edit.statusCode, edit.body).toBe(200);
    derived['group B edit'] = edit.json<{ id: string }>().id;
    const extension = await h.call('POST', '/v1/videos/extensions', {
      key,
      body: { video: { id: source }, prompt: 'and on sim:delay=300', seconds: 4, callback_url: receiver.url },
    });
    expect(extension.statusCode, extension.body).toBe(200);
    derived['group B extension'] = extension.json<{ id: string }>().id;
    for (const id of Object.values(derived)) await expectLifecycle(receiver, id, secret);
  });

  it('delivers failed for a video that fails, and only the events its filter names', async () => {
    const { key, secret } = await accountWithSecret();
    const receiver = await receivers.start();
    const res = await h.call('POST', '/api/v1/generate', {
      key,
      body: {
        kind: 'video',
        ...VIDEO,
        prompt: 'broken sim:fail',
        webhook: receiver.url,
        webhook_events_filter: ['start', 'completed'],
      },
    });
    const id = res.json<{ id: string }>().id;
    const got = await receiver.until(2, (r) => r.json.generation_id === id);
    expect(got.map((r) => r.json.event).sort()).toEqual(['generation.failed', 'generation.running']);
    for (const r of got) expectSignedBothWays(r, secret);
    // The queued event was never recorded for it: the filter left it out.
    expect((await callbackLog(key, id)).map((d) => d.event).sort()).toEqual([
      'generation.failed',
      'generation.running',
    ]);
  });
});

describe('jobs that end within the call', () => {
  it('a group B image, an image edit and a background response send their end to the callback', async () => {
    const { key, secret } = await accountWithSecret();
    const receiver = await receivers.start();
    const image = await h.call('POST', '/v1/images/generations', {
      key,
      body: { model: 'flux', prompt: 'a fox', response_format: 'url', callback_url: receiver.url },
    });
    expect(image.statusCode, image.body).toBe(200);
    const imageId = image.json<{ data: { generation_id: string }[] }>().data[0]!.generation_id;
    const response = await h.call('POST', '/v1/responses', {
      key,
      body: { model: 'claude-haiku', input: 'hi sim:tokens=3', background: true, callback_url: receiver.url },
    });
    expect(response.statusCode, response.body).toBe(200);
    const edit = await h.call('POST', '/v1/images/edits', {
      key,
      body: { model: 'gpt-image-1', prompt: 'at night', images: [{ file_id: imageId }], callback_url: receiver.url },
    });
    expect(edit.statusCode, edit.body).toBe(200);
    const editId = edit.json<{ data: { generation_id: string }[] }>().data[0]!.generation_id;
    const got = await receiver.until(3);
    expect(got.map((r) => r.json.event)).toEqual(Array(3).fill('generation.succeeded'));
    expect(got.map((r) => r.json.kind).sort()).toEqual(['chat', 'image', 'image']);
    expect(got.map((r) => r.json.generation_id)).toEqual(expect.arrayContaining([imageId, editId]));
    for (const r of got) expectSignedBothWays(r, secret);
  });
});

describe('batches with a callback', () => {
  it('group B (openai SDK), MCP and Anthropic’s Message Batches (its SDK) tell the batch’s end to its callback', async () => {
    const { key, secret } = await accountWithSecret();
    const receiver = await receivers.start();
    const client = new OpenAI({ apiKey: key, baseURL: new URL('/v1', base).href, maxRetries: 0 });
    const line = { custom_id: 'a', method: 'POST', url: '/v1/chat/completions' };
    const body = { model: 'claude-haiku', messages: [{ role: 'user', content: 'hi sim:tokens=3' }], max_tokens: 20 };
    const file = await client.files.create({
      file: await toFile(Buffer.from(`${JSON.stringify({ ...line, body })}\n`), 'in.jsonl'),
      purpose: 'batch',
    });
    const params = {
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      callback_url: receiver.url,
    } as OpenAI.Batches.BatchCreateParams;
    const batch = await client.batches.create(params);

    const tool = await mcpTool(
      key,
      { endpoint: '/v1/chat/completions', requests: [{ custom_id: 'b', body }], webhook: receiver.url },
      'generate_batch',
    );
    const mcpBatch = (tool.structuredContent as { id: string }).id;

    // Anthropic's SDK has no callback field: it goes beside the typed ones, as an extra body field does.
    const anthropic = new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 });
    const messageBatch = await anthropic.messages.batches.create({
      requests: [{ custom_id: 'c', params: { ...body, messages: [{ role: 'user', content: 'hi sim:tokens=3' }] } }],
      callback_url: receiver.url,
    } as Anthropic.Messages.Batches.BatchCreateParams);

    for (const id of [batch.id, mcpBatch, messageBatch.id]) {
      const [end] = await receiver.until(1, (r) => JSON.stringify(r.json).includes(id), 60_000);
      expect(end!.json.event).toBe('batch.completed');
      expectSignedBothWays(end!, secret);
      expect(await callbackLog(key, id)).toMatchObject([{ event: 'batch.completed', batchId: id, url: receiver.url }]);
    }
  });
});

describe('retries, the callback log and redelivery', () => {
  it('a receiver that is down gets every delivery once it is back; the log shows the attempts; redelivery sends again with the same id', async () => {
    const { key, secret } = await accountWithSecret();
    const receiver = await receivers.start();
    let down = true;
    receiver.behave(() => (down ? 503 : 200));
    const res = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'video', ...VIDEO, webhook: receiver.url },
    });
    const id = res.json<{ id: string }>().id;

    // Down: the queued delivery fails and waits for its next attempt.
    await eventually(async () => {
      const queued = (await callbackLog(key, id)).find((d) => d.event === 'generation.queued');
      return queued && queued.attempts.length >= 2 && queued.status === 'pending' ? queued : undefined;
    }, 30_000);
    down = false;
    const log = await eventually(async () => {
      const all = await callbackLog(key, id);
      return all.length === 3 && all.every((d) => d.status === 'succeeded') ? all : undefined;
    }, 60_000);
    expect(log.map((d) => d.event).sort()).toEqual(LIFECYCLE);
    expect(log.every((d) => d.url === receiver.url && d.generationId === id)).toBe(true);
    const queued = log.find((d) => d.event === 'generation.queued')!;
    expect(queued.attempts.slice(0, 2).map((a) => a.statusCode)).toEqual([503, 503]);
    expect(queued.attempts.at(-1)).toMatchObject({ statusCode: 200, nextRetryAt: null });
    // Every attempt of one delivery carried its one id; each is signed.
    const ofQueued = receiver.received.filter((r) => r.headers['x-service-delivery'] === queued.id);
    expect(ofQueued.length).toBe(queued.attempts.length);
    for (const r of ofQueued) expectSignedBothWays(r, secret);

    const path = `${LOG}/{deliveryId}/redeliver`;
    const again = await h.call('POST', `${LOG}/${queued.id}/redeliver`, { key });
    expect(c.conforms<CallbackDelivery>(again, 'post', path, 202).id).toBe(queued.id);
    await receiver.until(ofQueued.length + 1, (r) => r.headers['x-service-delivery'] === queued.id);

    // Another account's delivery is not found; the account's own endpoints list no callback.
    const other = await h.account({ credits: 1 });
    expect((await h.call('POST', `${LOG}/${queued.id}/redeliver`, { key: other.key })).statusCode).toBe(404);
    expect((await h.call('GET', '/api/v1/webhooks', { key })).json()).toEqual({ data: [] });
  });
});

describe('one callback per job', () => {
  it('a repeat with the same Idempotency-Key registers no second callback and sends nothing twice', async () => {
    const { key } = await accountWithSecret();
    const receiver = await receivers.start();
    const submit = () =>
      h.call('POST', '/api/v1/generate', {
        key,
        body: { kind: 'video', ...VIDEO, webhook: receiver.url },
        headers: { 'idempotency-key': 'callback-once' },
      });
    const first = (await submit()).json<{ id: string }>().id;
    const second = (await submit()).json<{ id: string }>().id;
    expect(second).toBe(first);
    await receiver.until(3, (r) => r.json.generation_id === first);
    expect((await submit()).json<{ id: string }>().id).toBe(first);
    const rows = await h.pool.query('SELECT id FROM webhook_endpoints WHERE job_generation_id = $1', [first]);
    expect(rows.rowCount).toBe(1);
    expect(
      receiver.received
        .filter((r) => r.json.generation_id === first)
        .map((r) => r.json.event)
        .sort(),
    ).toEqual(LIFECYCLE);
  });
});
