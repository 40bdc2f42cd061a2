/**
 * Every answer of the Anthropic door held to the published types of `@anthropic-ai/sdk`, as strict
 * zod schemas (test/support/anthropic-shapes.ts): whole and streamed messages with text and with
 * tool use, every error body, and the model list Claude Code discovers its models with
 * (`GET /v1/models?limit=1000` with `anthropic-version`), which the path's OpenAI clients still get
 * in OpenAI's shape.
 */
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAI_CHAT_MODELS } from '../../../../core/catalogue/models';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { errorResponse, message, modelInfo, modelPage, parseMessageStream } from '../../../support/anthropic-shapes';

let h: Harness;
let baseURL: string;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await h?.close();
});

const VERSION = { 'anthropic-version': '2023-06-01' };
const send = (method: 'GET' | 'POST', url: string, headers: Record<string, string>, body?: object) =>
  h.app.inject({ method, url, headers, ...(body === undefined ? {} : { payload: body }) });
const weather = {
  name: 'get_weather',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('messages as Anthropic’s SDK types them', () => {
  it('whole and streamed, text and tool use: every answer and every event parses strictly', async () => {
    const { key } = await h.account({ credits: 10 });
    const auth = { ...VERSION, 'x-api-key': key };
    const text = { model: 'claude-haiku', max_tokens: 50, messages: [{ role: 'user', content: 'hi sim:tokens=4' }] };
    const tools = {
      model: 'claude-haiku',
      max_tokens: 200,
      tools: [weather],
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    };
    const cut = { ...text, max_tokens: 2 };
    for (const body of [text, tools, cut]) {
      const whole = await send('POST', '/v1/messages', auth, body);
      expect(whole.statusCode).toBe(200);
      message.parse(whole.json());

      const streamed = await send('POST', '/v1/messages', auth, { ...body, stream: true });
      expect(streamed.statusCode).toBe(200);
      const events = parseMessageStream(streamed.body).map((e) => e.event);
      expect(events[0]).toBe('message_start');
      expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
    }
    const called = message.parse((await send('POST', '/v1/messages', auth, tools)).json());
    expect(called.content.map((b) => b.type)).toContain('tool_use');
  });

  it('every error body is an ErrorResponse that names its request', async () => {
    const { key } = await h.account({ credits: 0.01 });
    const text = { model: 'claude-haiku', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] };
    const answers = [
      [400, await send('POST', '/v1/messages', { 'x-api-key': key }, text)],
      [400, await send('POST', '/v1/messages', { ...VERSION, 'x-api-key': key }, { ...text, model: 'nope' })],
      [401, await send('POST', '/v1/messages', { ...VERSION, 'x-api-key': 'gsk_bogus' }, text)],
      [402, await send('POST', '/v1/messages', { ...VERSION, 'x-api-key': key }, { ...text, max_tokens: 5000 })],
      [404, await send('GET', '/v1/models/nope', { ...VERSION, 'x-api-key': key })],
      [
        413,
        await send('POST', '/v1/messages', { ...VERSION, 'x-api-key': key }, { ...text, stop: 'x'.repeat(9_000_000) }),
      ],
    ] as const;
    for (const [status, res] of answers) {
      expect(res.statusCode, res.body.slice(0, 200)).toBe(status);
      const body = errorResponse.parse(res.json());
      expect(body.request_id).toBe(res.headers['request-id']);
    }
  });
});

describe('Claude Code’s model discovery', () => {
  it('GET /v1/models?limit=1000 with anthropic-version answers Anthropic’s list; without it, OpenAI’s', async () => {
    const { key } = await h.account({ credits: 1 });
    const ids = OPENAI_CHAT_MODELS.map((m) => m.id);
    const keys: Record<string, string>[] = [{ 'x-api-key': key }, { authorization: `Bearer ${key}` }];
    for (const auth of keys) {
      const res = await send('GET', '/v1/models?limit=1000', { ...VERSION, ...auth });
      expect(res.statusCode).toBe(200);
      const page = modelPage.parse(res.json());
      expect(page.data.map((m) => m.id)).toEqual(ids);
      expect(page).toMatchObject({ has_more: false, first_id: ids[0], last_id: ids.at(-1) });
      expect(page.data.find((m) => m.id === 'claude-sonnet')).toMatchObject({
        display_name: 'Claude Sonnet',
        line: 'sonnet',
        max_tokens: 64_000,
      });
    }
    const openai = await send('GET', '/v1/models', { authorization: `Bearer ${key}` });
    expect(openai.json()).toMatchObject({ object: 'list', data: expect.arrayContaining([]) });
    expect(openai.json<{ data: { object: string }[] }>().data[0]!.object).toBe('model');
    expect((await send('GET', '/v1/models/claude-sonnet', { authorization: `Bearer ${key}` })).json()).toMatchObject({
      object: 'model',
      id: 'claude-sonnet',
    });
    // x-api-key alone is Anthropic's client too: Anthropic requires the version on every call.
    const versionless = await send('GET', '/v1/models', { 'x-api-key': key });
    expect(versionless.statusCode).toBe(400);
    expect(errorResponse.parse(versionless.json()).error.message).toMatch(/anthropic-version/);
  });

  it('the SDK’s models.list() pages through every model, and models.retrieve() takes Claude Code’s dated ids', async () => {
    const { key } = await h.account({ credits: 1 });
    const client = new Anthropic({ apiKey: key, baseURL, maxRetries: 0 });
    const seen: string[] = [];
    for await (const model of client.models.list({ limit: 3 })) seen.push(modelInfo.parse(model).id);
    expect(seen).toEqual(OPENAI_CHAT_MODELS.map((m) => m.id));
    const last = await client.models.list({ limit: 2, before_id: seen[4]! });
    expect(last.data.map((m) => m.id)).toEqual(seen.slice(2, 4));

    const dated = await client.models.retrieve('claude-sonnet-4-5-20250929');
    expect(modelInfo.parse(dated)).toMatchObject({ id: 'claude-sonnet-4-5-20250929', line: 'sonnet' });
    await expect(client.models.retrieve('nope')).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });
});
