/**
 * The real provider adapters against local servers that speak their protocols: an
 * OpenAI-compatible API (chat streamed through the service token by token, images) and a
 * queue-style video API (submit, poll, result). Upstream refusals are final, 5xx and timeouts are
 * retried with a bound and then fail; every failure releases the hold.
 */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { createProviderRouter } from '../../../../core/providers/router';
import { createSimulator } from '../../../../core/providers/simulator';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { credits, generate, untilFinished } from '../../../support/api';
import type { GenerationRecord } from '../../../support/api';
import { failureMessage } from '../../../../core/vocabulary';
import { startReceiver } from '../../../support/webhook-receiver';
import type { TestReceiver } from '../../../support/webhook-receiver';
import { startOpenAiUpstream, startQueueVideoUpstream } from '../../../support/upstream-servers';

let h: Harness;
let chatUp: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let videoUp: Awaited<ReturnType<typeof startQueueVideoUpstream>>;
let client: (key: string) => OpenAI;
let receiver: TestReceiver;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });

beforeAll(async () => {
  chatUp = await startOpenAiUpstream();
  videoUp = await startQueueVideoUpstream();
  // The same JSON an operator puts in UPSTREAMS_JSON, through the same schema.
  const config = upstreamsSchema.parse({
    upstreams: [
      {
        name: 'local-openai',
        protocol: 'openai',
        baseUrl: chatUp.baseUrl,
        apiKey: 'sk-upstream',
        timeoutMs: 400,
        models: { 'claude-sonnet': 'upstream-sonnet', 'gpt-5.5': 'upstream-gpt', 'gpt-image-1': 'upstream-image' },
      },
      {
        name: 'local-queue',
        protocol: 'queue-video',
        baseUrl: videoUp.baseUrl,
        apiKey: 'fal-key',
        timeoutMs: 400,
        pollMs: 20,
        models: { kling: 'fal-ai/kling-video/v2.1/pro' },
      },
    ],
  });
  h = await startHarness({
    provider: createProviderRouter(config.upstreams, createSimulator(), http),
    webhooks: { relayPollMs: 100 },
  });
  receiver = await startReceiver();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  client = (key) => new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await receiver?.close();
  await chatUp?.close();
  await videoUp?.close();
  http.close();
});

const chatRequests = () => chatUp.received.filter((r) => r.path === '/v1/chat/completions');

describe('an OpenAI-compatible upstream', () => {
  it('streams through token by token; billed by the upstream’s usage when it sends one, by counting when not', async () => {
    const { key } = await h.account({ credits: 10 });
    const stream = await client(key).chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'hi up:tokens=6 up:usage=9' }],
      max_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: number | undefined;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
      if (chunk.usage) usage = chunk.usage.completion_tokens;
    }
    expect(deltas).toEqual(['alpha', ' beta', ' gamma', ' delta', ' epsilon', ' zeta']);
    expect(usage).toBe(9);
    const sent = chatRequests().at(-1)!;
    expect(sent.authorization).toBe('Bearer sk-upstream');
    expect(sent.body).toMatchObject({
      model: 'upstream-sonnet',
      stream: true,
      max_tokens: 50,
      stream_options: { include_usage: true },
    });

    const counted = await client(key).chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'up:tokens=4 up:nousage' }],
      temperature: 0.2,
    });
    expect(counted.usage?.completion_tokens).toBe(4);
    expect(chatRequests().at(-1)!.body).toMatchObject({ temperature: 0.2 });
    // The streamed reply is settled by its workflow right after its [DONE]; wait for it.
    const after = await eventually(async () => {
      const c = await credits(h, key);
      return c.holdsActive === 0 ? c : undefined;
    });
    expect(after.balance).toBe(10 - (chargeForTokens(9, 2000) + chargeForTokens(4, 2000)) / 1000);
  });

  it('runs a whole reply through the activity path (group A) and an image through the worker', async () => {
    const { key } = await h.account({ credits: 50, scopes: ['chat', 'image'] });
    const chat = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'chat', model: 'gpt-5.5', prompt: 'up:tokens=3', max_tokens: 20 },
    });
    expect(chat.json()).toMatchObject({
      status: 'succeeded',
      text: 'alpha beta gamma',
      creditsCharged: chargeForTokens(3, 1500) / 1000,
    });
    const image = await generate(h, key, { kind: 'image', model: 'gpt-image-1', prompt: 'a cube' });
    expect(image.body.generation).toMatchObject({ status: 'succeeded', creditsCharged: 6 });
    expect(chatUp.received.at(-1)).toMatchObject({
      path: '/v1/images/generations',
      body: { model: 'upstream-image', response_format: 'b64_json' },
    });
  });

  it('a 4xx is final: a content-policy refusal is a 400, asked once, nothing charged', async () => {
    const { key } = await h.account({ credits: 10 });
    const before = chatRequests().length;
    const err = (await client(key)
      .chat.completions.create({
        model: 'claude-sonnet',
        messages: [{ role: 'user', content: 'up:status=400 up:policy' }],
      })
      .catch((e: unknown) => e)) as APIError;
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ type: 'content_policy_violation' });
    expect(err.headers?.get('x-should-retry')).toBe('false');
    expect(chatRequests().length - before).toBe(1);
    expect(await credits(h, key)).toMatchObject({ balance: 10, holdsActive: 0 });
  });

  it('a 5xx and a timeout are retried (three attempts before the first token), then fail with the hold released', async () => {
    const { key } = await h.account({ credits: 10 });
    for (const content of ['up:status=503', 'up:hang']) {
      const before = chatRequests().length;
      const err = (await client(key)
        .chat.completions.create({ model: 'claude-sonnet', messages: [{ role: 'user', content }], stream: true })
        .catch((e: unknown) => e)) as APIError;
      expect(err, content).toBeInstanceOf(OpenAI.InternalServerError);
      expect(err.status).toBe(502);
      expect(chatRequests().length - before, content).toBe(3);
    }
    expect(await credits(h, key)).toMatchObject({ balance: 10, holdsActive: 0 });
  });

  it('in the worker, a 5xx is retried up to five attempts and a timeout likewise; then the generation fails, released', async () => {
    const { key } = await h.account({ credits: 50, scopes: ['image'] });
    const before = chatUp.received.length;
    const [failing, hanging] = await Promise.all([
      generate(h, key, { kind: 'image', model: 'gpt-image-1', prompt: 'up:status=500' }),
      generate(h, key, { kind: 'image', model: 'gpt-image-1', prompt: 'up:hang' }),
    ]);
    for (const r of [failing, hanging]) {
      expect(r.body.generation).toMatchObject({
        status: 'failed',
        creditsCharged: 0,
        error: { code: 'provider_error', retryable: true },
      });
    }
    expect(chatUp.received.length - before).toBe(10);
    expect(await credits(h, key)).toMatchObject({ balance: 50, holdsActive: 0 });
  }, 60_000);
});

describe('an upstream’s error text never reaches the account', () => {
  // What the upstream's 500 body says (up:leak): its traceback, its internal path, and its name in our config.
  const LEAKS = [/upstream-internal-detail/, /\/srv\/provider/, /app\.py/, /local-openai/];
  const expectClean = (label: string, text: string) => {
    for (const leak of LEAKS) expect(text, label).not.toMatch(leak);
  };

  /** An account whose webhook endpoint (at the loopback receiver) gets generation.failed. */
  async function watchedAccount(credits: number) {
    const account = await h.account({ credits, scopes: ['chat', 'webhooks'] });
    const hook = await h.call('POST', '/api/v1/webhooks', {
      key: account.key,
      body: { url: receiver.url, events: ['generation.failed'] },
    });
    expect(hook.statusCode).toBe(201);
    return account;
  }

  /** Every customer-facing view of one failed generation: group A, the list, group C's poll, MCP, the webhook. */
  async function expectOursEverywhere(key: string, id: string) {
    const a = await h.call('GET', `/api/v1/generations/${id}`, { key });
    expect(a.json<GenerationRecord>()).toMatchObject({
      status: 'failed',
      creditsCharged: 0,
      error: { code: 'provider_error', message: failureMessage('provider_error') },
    });
    expectClean('group A read', a.body);
    expectClean('group A list', (await h.call('GET', '/api/v1/generations?kind=chat', { key })).body);
    expectClean('group C poll', (await h.call('GET', `/api/generate/${id}`, { key })).body);
    const mcp = await h.app.inject({
      method: 'POST',
      url: '/api/mcp',
      headers: {
        authorization: `Bearer ${key}`,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      },
      payload: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_generation', arguments: { id } },
      }),
    });
    expect(mcp.body).toContain(failureMessage('provider_error'));
    expectClean('MCP get_generation', mcp.body);
    const [delivery] = await receiver.until(1, (r) => JSON.stringify(r.json).includes(id));
    expect(delivery!.json).toMatchObject({
      event: 'generation.failed',
      generation: { id, error: { code: 'provider_error', message: failureMessage('provider_error') } },
    });
    expectClean('webhook', delivery!.body);
  }

  it('the activity path (group A chat): a 500 naming an internal path fails with our code and message on every door', async () => {
    const { key } = await watchedAccount(50);
    const answer = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'chat', model: 'gpt-5.5', prompt: 'up:status=500 up:leak=activity', max_tokens: 20 },
    });
    expect(answer.json()).toMatchObject({
      status: 'failed',
      error: { code: 'provider_error', message: failureMessage('provider_error'), retryable: true },
    });
    expectClean('group A answer', answer.body);
    await expectOursEverywhere(key, answer.json<GenerationRecord>().id);
    expect(await credits(h, key)).toMatchObject({ balance: 50, holdsActive: 0 });
  }, 60_000);

  it('the streamed chat (group B): the client’s error and the record carry our words only', async () => {
    const { key } = await watchedAccount(10);
    const err = (await client(key)
      .chat.completions.create({
        model: 'claude-sonnet',
        messages: [{ role: 'user', content: 'up:status=500 up:leak=stream' }],
        stream: true,
      })
      .catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(502);
    expectClean('group B error', `${err.message} ${JSON.stringify(err.error)}`);
    const list = await eventually(async () => {
      const page = (await h.call('GET', '/api/v1/generations?kind=chat&status=failed', { key })).json<{
        data: GenerationRecord[];
      }>();
      return page.data.length > 0 ? page.data : undefined;
    });
    await expectOursEverywhere(key, list[0]!.id);
    expect(await credits(h, key)).toMatchObject({ balance: 10, holdsActive: 0 });
  }, 60_000);
});

describe('asking the upstream while the hold is placed', () => {
  it('stops the upstream call of a request whose hold is refused after all, before anything reaches the client', async () => {
    // Enough for one hold of 2 credits (1,000 tokens at 2 credits per 1,000), not for two: the
    // balance read with the key lets both ask the upstream early, the ledger admits one.
    const { key } = await h.account({ credits: 3 });
    const received = [0, 0];
    const request = (i: number) =>
      client(key)
        .chat.completions.create({
          model: 'claude-sonnet',
          messages: [{ role: 'user', content: `race ${i} up:tokens=20 up:pace=100` }],
          max_tokens: 1000,
          stream: true,
        })
        .then(async (stream) => {
          for await (const chunk of stream) if (chunk.choices[0]?.delta.content) received[i]!++;
          return received[i]!;
        });
    const results = await Promise.allSettled([request(0), request(1)]);
    const refused = results.findIndex((r) => r.status === 'rejected');
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect((results[refused] as PromiseRejectedResult).reason).toMatchObject({
      status: 402,
      type: 'insufficient_credits',
    });
    // What the customer sees: the refused request is a 402 and nothing else, not one token of the
    // upstream's answer; the admitted one is whole. How soon the refused call is cut is the bench's
    // to measure (npm run bench -- --only=stream), not a test's.
    expect(received[refused]).toBe(0);
    expect(results[1 - refused]).toMatchObject({ status: 'fulfilled', value: 20 });
    const calls = chatRequests().filter((r) => JSON.stringify(r.body).includes('race '));
    expect(calls.length).toBeGreaterThanOrEqual(1);
    expect(calls.length).toBeLessThanOrEqual(2);
    // Charged for the admitted reply alone, and nothing stays held.
    const after = await eventually(async () => {
      const c = await credits(h, key);
      return c.holdsActive === 0 ? c : undefined;
    });
    expect(after.balance).toBe(3 - chargeForTokens(20, 2000) / 1000);
  });
});

describe('a queue-style video upstream', () => {
  it('submits, polls through 5xx answers, fetches the result and stores its file; charged once', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['video'] });
    const r = await generate(h, key, {
      kind: 'video',
      model: 'kling',
      prompt: 'waves up:polls=3 up:pollfail=2',
      seconds: 5,
    });
    const before = videoUp.submits();
    const done = await untilFinished(h, key, r.body.generation.id);
    expect(done).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });
    expect(videoUp.submits() - before).toBeLessThanOrEqual(1);
    const submit = videoUp.received.find((x) => x.method === 'POST' && String(x.body?.prompt).includes('pollfail'))!;
    expect(submit).toMatchObject({
      path: '/fal-ai/kling-video/v2.1/pro',
      authorization: 'Key fal-key',
      body: { duration: 5, resolution: '720p', aspect_ratio: '16:9' },
    });
    // The two 503s were retried by Temporal, which resumed the same upstream job (no second submit).
    expect(
      videoUp.received.filter((x) => x.method === 'POST' && String(x.body?.prompt).includes('pollfail')),
    ).toHaveLength(1);
    const file = await h.call('GET', new URL(done.outputUrl).pathname + new URL(done.outputUrl).search);
    expect(file.rawPayload.subarray(0, 4)).toEqual(Buffer.from([0x1a, 0x45, 0xdf, 0xa3]));
  }, 60_000);

  it('a refused submit and a failed job are final: failed, asked once, released', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['video'] });
    for (const prompt of ['up:status=422', 'up:fail up:polls=1']) {
      const r = await generate(h, key, { kind: 'video', model: 'kling', prompt });
      const done = await untilFinished(h, key, r.body.generation.id);
      expect(done, prompt).toMatchObject({ status: 'failed', creditsCharged: 0, error: { retryable: false } });
      expect(
        videoUp.received.filter((x) => x.method === 'POST' && x.body?.prompt === prompt),
        prompt,
      ).toHaveLength(1);
    }
    expect(await credits(h, key)).toMatchObject({ balance: 100, holdsActive: 0 });
  });
});
