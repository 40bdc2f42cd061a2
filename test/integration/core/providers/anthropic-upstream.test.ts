/**
 * The `anthropic` upstream protocol against a local server written from Anthropic's public API
 * reference (test/support/upstream-servers.ts): a Claude id served by Anthropic's Messages API
 * through both doors (the `openai` SDK on group B, the Anthropic SDK on /v1/messages), whole and
 * streamed, with tools and structured output translated, billed by Anthropic's own output usage;
 * and, while it is overloaded, the same generation served by an OpenAI-compatible upstream.
 */
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { createPgRouteLog, createPgUpstreamHealth } from '../../../../core/db/upstreams';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { createProviderRouter } from '../../../../core/providers/router';
import { createSimulator } from '../../../../core/providers/simulator';
import { routingOf } from '../../../support/api';
import { parseMessageStream } from '../../../support/anthropic-shapes';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startAnthropicUpstream, startOpenAiUpstream } from '../../../support/upstream-servers';

let h: Harness;
let anthropicUp: Awaited<ReturnType<typeof startAnthropicUpstream>>;
let openaiUp: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let baseURL: string;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });
/** claude-sonnet's rate per 1,000 output tokens, in millicredits. */
const RATE = 2000;

beforeAll(async () => {
  anthropicUp = await startAnthropicUpstream();
  openaiUp = await startOpenAiUpstream();
  const config = upstreamsSchema.parse({
    upstreams: [
      {
        name: 'anthropic',
        protocol: 'anthropic',
        baseUrl: anthropicUp.baseUrl,
        apiKey: 'sk-ant-test',
        timeoutMs: 2000,
        models: { 'claude-sonnet': { model: 'claude-sonnet-4-5', priority: 0 } },
      },
      {
        name: 'backup',
        protocol: 'openai',
        baseUrl: openaiUp.baseUrl,
        timeoutMs: 2000,
        models: { 'claude-sonnet': { model: 'backup-sonnet', priority: 1 } },
      },
    ],
    breaker: { failures: 100, cooldownMs: 100 },
  });
  h = await startHarness({
    provider: (pool) =>
      createProviderRouter(config.upstreams, createSimulator(), http, {
        health: createPgUpstreamHealth(pool, config.breaker),
        log: createPgRouteLog(pool),
      }),
  });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await h?.close();
  await anthropicUp?.close();
  await openaiUp?.close();
  http.close();
});

const lastMessages = () => anthropicUp.received.filter((r) => r.path === '/v1/messages').at(-1)!;
const settledBalance = (key: string) =>
  eventually(async () => {
    const b = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
    return b.holdsActive === 0 ? b.balance : undefined;
  });

describe('Claude ids served by Anthropic’s Messages API', () => {
  it('translates a chat (system, turns, sampling) and bills Anthropic’s output usage, whole and streamed, through both doors', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const openai = new OpenAI({ apiKey: key, baseURL: `${baseURL}/v1`, maxRetries: 0 });
    const reply = await openai.chat.completions.create({
      model: 'claude-sonnet',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello up:tokens=4' },
      ],
      max_tokens: 50,
      temperature: 1.5,
      stop: ['END'],
    });
    expect(reply.choices[0]!.message.content).toBe('alpha beta gamma delta');
    expect(reply.usage?.completion_tokens).toBe(4);
    const sent = lastMessages();
    expect(sent.body).toMatchObject({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      system: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello up:tokens=4' }] }],
      temperature: 1,
      stop_sequences: ['END'],
      stream: true,
    });
    expect(anthropicUp.received.at(-1)!.authorization).toBeUndefined();

    const anthropic = new Anthropic({ apiKey: key, baseURL, maxRetries: 0 });
    const streamed = await anthropic.messages
      .stream({
        model: 'claude-sonnet-4-5-20250929',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'again up:tokens=3' }],
      })
      .finalMessage();
    expect(streamed.usage.output_tokens).toBe(3);
    expect(streamed.content[0]).toMatchObject({ type: 'text', text: 'alpha beta gamma' });
    expect(await settledBalance(key)).toBe(10 - (chargeForTokens(4, RATE) + chargeForTokens(3, RATE)) / 1000);
    const routes = await h.pool.query<{ id: string }>('SELECT id FROM generations WHERE account_id = $1', [accountId]);
    for (const { id } of routes.rows) expect(await routingOf(h, id)).toMatchObject({ upstream: 'anthropic' });
  });

  it('passes the client’s anthropic-version and anthropic-beta to Anthropic unchanged; another door’s chat goes as 2023-06-01 without betas', async () => {
    const { key } = await h.account({ credits: 10 });
    const betas = ['interleaved-thinking-2025-05-14', 'fine-grained-tool-streaming-2025-05-14'];
    const anthropic = new Anthropic({
      apiKey: key,
      baseURL,
      maxRetries: 0,
      defaultHeaders: { 'anthropic-version': '2025-10-01' },
    });
    const message = await anthropic.beta.messages.create({
      model: 'claude-sonnet',
      max_tokens: 50,
      betas,
      messages: [{ role: 'user', content: 'hello up:tokens=2' }],
    });
    expect(message.usage.output_tokens).toBe(2);
    expect(lastMessages().headers).toMatchObject({
      'anthropic-version': '2025-10-01',
      'anthropic-beta': betas.join(','),
    });

    const streamed = await new Anthropic({ apiKey: key, baseURL, maxRetries: 0 }).messages
      .stream({ model: 'claude-sonnet', max_tokens: 50, messages: [{ role: 'user', content: 'hi up:tokens=2' }] })
      .finalMessage();
    expect(streamed.usage.output_tokens).toBe(2);
    expect(lastMessages().headers['anthropic-beta']).toBeUndefined();

    const openai = new OpenAI({ apiKey: key, baseURL: `${baseURL}/v1`, maxRetries: 0 });
    await openai.chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'hey up:tokens=1' }],
    });
    expect(lastMessages().headers['anthropic-version']).toBe('2023-06-01');
    expect(lastMessages().headers['anthropic-beta']).toBeUndefined();
  });

  it('a failure after the first token reaches the client as Anthropic’s error event, and costs nothing', async () => {
    const { key } = await h.account({ credits: 10 });
    const res = await fetch(`${baseURL}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude-sonnet',
        max_tokens: 50,
        stream: true,
        messages: [{ role: 'user', content: 'hi up:tokens=5 up:overload_after=2' }],
      }),
    });
    const events = parseMessageStream(await res.text());
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'error',
    ]);
    expect(events.at(-1)!.data).toMatchObject({
      error: { type: 'api_error' },
      request_id: res.headers.get('request-id'),
    });
    expect(await settledBalance(key)).toBe(10);
  });

  it('passes tools and structured output on, and a tool call’s result back as a tool_result', async () => {
    const { key } = await h.account({ credits: 10 });
    const anthropic = new Anthropic({ apiKey: key, baseURL, maxRetries: 0 });
    const tools = [
      {
        name: 'get_weather',
        input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ];
    const asked = await anthropic.messages.create({
      model: 'claude-sonnet',
      max_tokens: 100,
      tools,
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(lastMessages().body).toMatchObject({
      tools: [{ name: 'get_weather', input_schema: tools[0]!.input_schema }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
    });
    expect(asked.stop_reason).toBe('tool_use');
    const use = asked.content.find((b) => b.type === 'tool_use');
    expect(use).toMatchObject({ id: 'toolu_up1', name: 'get_weather', input: { city: 'Paris' } });

    const answered = await anthropic.messages.create({
      model: 'claude-sonnet',
      max_tokens: 100,
      tools,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: asked.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_up1', content: '18 °C' }] },
      ],
    });
    expect(answered.stop_reason).toBe('end_turn');
    expect(lastMessages().body!.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_up1', name: 'get_weather', input: { city: 'Paris' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_up1', content: '18 °C' }] },
    ]);

    const openai = new OpenAI({ apiKey: key, baseURL: `${baseURL}/v1`, maxRetries: 0 });
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    const json = await openai.chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'JSON please' }],
      response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
    });
    expect(lastMessages().body).toMatchObject({ output_config: { format: { type: 'json_schema', schema } } });
    expect(JSON.parse(json.choices[0]!.message.content!)).toEqual({ answer: 'alpha' });
  });

  it('falls back to the next upstream while Anthropic is overloaded (529), in the same generation', async () => {
    const { key } = await h.account({ credits: 10 });
    anthropicUp.always.directives = 'up:status=529';
    try {
      const anthropic = new Anthropic({ apiKey: key, baseURL, maxRetries: 0 });
      const message = await anthropic.messages.create({
        model: 'claude-sonnet',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hello up:tokens=2' }],
      });
      expect(message.usage.output_tokens).toBe(2);
      expect(await routingOf(h, message.id)).toMatchObject({ upstream: 'backup', tried: ['anthropic', 'backup'] });
      expect(await settledBalance(key)).toBe(10 - chargeForTokens(2, RATE) / 1000);
    } finally {
      anthropicUp.always.directives = '';
    }
  });
});
