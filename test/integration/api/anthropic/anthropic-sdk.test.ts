/**
 * Anthropic's Messages API door with the clients people use, unmodified, over real HTTP: the
 * official `@anthropic-ai/sdk` (whole and streamed messages, tools, structured output, errors,
 * usage equal to the ledger's charge) and Claude Code (`claude -p`, telemetry off, pointed at the
 * service with ANTHROPIC_BASE_URL) against the simulator. Then the door's documented answers,
 * held to the OpenAPI document (this file owns /v1/messages in test/support/openapi.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { PLAN_RATE_LIMITS } from '../../../../core/plans';
import pg from 'pg';
import { freePort } from '../../../../runtime/process';
import { createDatabase, databaseUrlFor, dropDatabase, eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { createConformance, loadDocument } from '../../../support/openapi';
import type { Method } from '../../../support/openapi';

const run = promisify(execFile);
let h: Harness;
let baseURL: string;
let c: ReturnType<typeof createConformance>;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  c = createConformance(await loadDocument(h.app));
});
afterAll(async () => {
  await h?.close();
});

const sdk = (apiKey: string, options: Partial<ConstructorParameters<typeof Anthropic>[0]> = {}) =>
  new Anthropic({ apiKey, baseURL, maxRetries: 0, ...options });
const balanceOf = async (key: string) =>
  (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
const settled = (key: string) =>
  eventually(async () => ((await balanceOf(key)).holdsActive === 0 ? balanceOf(key) : undefined));
const chargedMc = async (id: string) =>
  (await h.pool.query<{ charged_mc: number }>('SELECT charged_mc FROM generations WHERE id = $1', [id])).rows[0]!
    .charged_mc;
/** claude-haiku's rate per 1,000 output tokens, in millicredits. */
const HAIKU = 700;
const ajv = new Ajv({ strict: false });

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: {
    type: 'object' as const,
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city', 'unit'],
  },
};

describe('messages with the official Anthropic SDK', () => {
  it('a whole message: text, stop reason, usage; output_tokens is exactly what the ledger charged', async () => {
    const { key } = await h.account({ credits: 10 });
    const { data: message, response } = await sdk(key)
      .messages.create({
        model: 'claude-haiku',
        max_tokens: 100,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'hello sim:tokens=7' }],
      })
      .withResponse();
    expect(response.headers.get('request-id')).toMatch(/^req_/);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku',
      stop_reason: 'end_turn',
      usage: { output_tokens: 7, input_tokens: expect.any(Number) },
    });
    expect(message.content[0]!.type === 'text' && message.content[0].text.split(' ')).toHaveLength(7);
    expect(await chargedMc(message.id)).toBe(chargeForTokens(7, HAIKU));
    expect(await balanceOf(key)).toMatchObject({ balance: 10 - chargeForTokens(7, HAIKU) / 1000, holdsActive: 0 });

    const cut = await sdk(key).messages.create({
      model: 'claude-sonnet-4-5-20250929',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'sim:tokens=50' }],
    });
    expect(cut).toMatchObject({ model: 'claude-sonnet', stop_reason: 'max_tokens', usage: { output_tokens: 5 } });
  });

  it('a streamed message: Anthropic’s event sequence, accumulated by the SDK; the charge is the output usage', async () => {
    const { key } = await h.account({ credits: 10 });
    const stream = sdk(key).messages.stream({
      model: 'claude-haiku',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'tell me sim:tokens=6' }],
    });
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(types.filter((t) => t === 'content_block_delta')).toHaveLength(6);
    expect(final.usage.output_tokens).toBe(6);
    expect(final.usage.input_tokens).toBeGreaterThan(0);
    // The stream's end settles the charge as the last event goes out.
    expect((await settled(key)).balance).toBe(10 - chargeForTokens(6, HAIKU) / 1000);
    expect(await chargedMc(final.id)).toBe(chargeForTokens(6, HAIKU));
  });

  it('tools: any calls one with input valid against its schema, whole and streamed; a tool_result is answered in words', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = sdk(key);
    const asked = await client.messages.create({
      model: 'claude-haiku',
      max_tokens: 200,
      tools: [weather],
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(asked.stop_reason).toBe('tool_use');
    const use = asked.content.find((b) => b.type === 'tool_use')!;
    expect(use.type === 'tool_use' && use.name).toBe('get_weather');
    expect(ajv.validate(weather.input_schema, use.type === 'tool_use' ? use.input : undefined)).toBe(true);

    const streamed = await client.messages
      .stream({
        model: 'claude-haiku',
        max_tokens: 200,
        tools: [weather],
        messages: [{ role: 'user', content: 'use get_weather please' }],
      })
      .finalMessage();
    expect(streamed.content.find((b) => b.type === 'tool_use')).toMatchObject({ name: 'get_weather' });

    const answered = await client.messages.create({
      model: 'claude-haiku',
      max_tokens: 200,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: asked.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: use.type === 'tool_use' ? use.id : '', content: '18 °C' }],
        },
      ],
    });
    expect(answered.stop_reason).toBe('end_turn');
    expect(answered.content[0]).toMatchObject({ type: 'text', text: expect.any(String) });
    const total = [asked, streamed, answered].reduce(
      (sum, m) => sum + chargeForTokens(m.usage.output_tokens, HAIKU),
      0,
    );
    expect((await settled(key)).balance).toBe(10 - total / 1000);
  });

  it('structured output (output_config.format) answers JSON valid against the schema', async () => {
    const { key } = await h.account({ credits: 10 });
    const schema = {
      type: 'object',
      properties: { name: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
      required: ['name', 'tags'],
      additionalProperties: false,
    };
    const message = await sdk(key).messages.create({
      model: 'claude-haiku',
      max_tokens: 200,
      messages: [{ role: 'user', content: 'A product' }],
      output_config: { format: { type: 'json_schema', schema } },
    } as Anthropic.MessageCreateParamsNonStreaming);
    const text = message.content[0]!.type === 'text' ? message.content[0].text : '';
    expect(ajv.validate(schema, JSON.parse(text))).toBe(true);
  });

  it('errors in Anthropic’s shape, as the SDK’s classes: 400, 401, 402 billing_error, 404; nothing charged', async () => {
    const { key } = await h.account({ credits: 0.01 });
    const client = sdk(key);
    const errorOf = (p: Promise<unknown>) =>
      p.then(
        () => expect.fail('should fail'),
        (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
      );
    const poor = await errorOf(
      client.messages.create({ model: 'claude-opus', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(poor.status).toBe(402);
    expect(poor.error).toMatchObject({
      type: 'error',
      error: { type: 'billing_error', message: expect.stringMatching(/Insufficient credits/) },
    });
    const bad = await errorOf(
      client.messages.create({ model: 'claude-haiku', messages: [{ role: 'user', content: 'hi' }] } as never),
    );
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect(bad.error).toMatchObject({
      error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') },
    });
    const unknown = await errorOf(
      client.messages.create({ model: 'nope', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(unknown).toBeInstanceOf(Anthropic.BadRequestError);
    expect(unknown.message).toMatch(/nope/);
    const image = await errorOf(
      client.messages.create({
        model: 'claude-haiku',
        max_tokens: 10,
        messages: [
          { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }] },
        ],
      }),
    );
    expect(image).toBeInstanceOf(Anthropic.BadRequestError);
    const auth = await errorOf(
      sdk('gsk_bogus').messages.create({
        model: 'claude-haiku',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    expect(auth).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(auth.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const missing = await errorOf(client.messages.batches.retrieve(`batch_${'0'.repeat(26)}`));
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect(missing.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(await balanceOf(key)).toMatchObject({ balance: 0.01, holdsActive: 0 });
  });

  it('takes the key as x-api-key or Bearer, any anthropic-version from 2023-06-01 to 2026-10-21, and counts tokens for free', async () => {
    const { key } = await h.account({ credits: 10 });
    const send = (headers: Record<string, string>, url = '/v1/messages', body?: unknown) =>
      h.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json', ...headers },
        payload: body ?? {
          model: 'claude-haiku',
          max_tokens: 10,
          messages: [{ role: 'user', content: 'sim:tokens=2' }],
        },
      });
    expect((await send({ 'x-api-key': key, 'anthropic-version': '2023-06-01' })).statusCode).toBe(200);
    expect((await send({ authorization: `Bearer ${key}`, 'anthropic-version': '2026-10-21' })).statusCode).toBe(200);
    for (const version of [undefined, '2023-01-01', '2027-01-01', 'latest']) {
      const res = await send({ 'x-api-key': key, ...(version ? { 'anthropic-version': version } : {}) });
      expect(res.statusCode, version).toBe(400);
      expect(res.json()).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringContaining('anthropic-version') },
      });
    }
    const counted = await sdk(key).messages.countTokens({
      model: 'claude-haiku',
      messages: [{ role: 'user', content: 'x'.repeat(400) }],
    });
    expect(counted.input_tokens).toBeGreaterThanOrEqual(100);
    expect((await settled(key)).balance).toBe(10 - (2 * chargeForTokens(2, HAIKU)) / 1000);
  });
});

describe('Claude Code against the simulator', () => {
  it('claude -p completes a one-shot prompt with telemetry off; each of its messages is charged the tokens it was sent', async () => {
    const { key, accountId } = await h.account({ credits: 500 });
    const home = await mkdtemp(join(tmpdir(), 'claude-home-'));
    try {
      const wrapper = join(process.cwd(), 'node_modules', '@anthropic-ai', 'claude-code', 'cli-wrapper.cjs');
      const { stdout } = await run(process.execPath, [wrapper, '-p', 'Say hello sim:tokens=5'], {
        cwd: home,
        timeout: 120_000,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          ANTHROPIC_BASE_URL: baseURL,
          ANTHROPIC_API_KEY: key,
          DISABLE_TELEMETRY: '1',
          DISABLE_ERROR_REPORTING: '1',
          DISABLE_AUTOUPDATER: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
      });
      const rows = await h.pool.query<{
        id: string;
        status: string;
        charged_mc: number;
        params: { outputTokens?: number };
        output_text: string;
      }>(
        "SELECT id, status, charged_mc, params, output_text FROM generations WHERE account_id = $1 AND kind = 'chat' ORDER BY id",
        [accountId],
      );
      expect(rows.rows.length).toBeGreaterThan(0);
      const reply = rows.rows.at(-1)!;
      expect(reply.status).toBe('succeeded');
      expect(stdout.trim()).toBe(reply.output_text.trim());
      expect(reply.params.outputTokens).toBe(5);
      for (const r of rows.rows) expect(r.charged_mc).toBe(chargeForTokens(r.params.outputTokens ?? 0, 3500));
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }, 180_000);
});

const inject = (method: Method, url: string, key?: string, body?: unknown, headers: Record<string, string> = {}) =>
  h.app.inject({
    method: method.toUpperCase() as 'POST',
    url,
    headers: { 'anthropic-version': '2023-06-01', ...(key ? { 'x-api-key': key } : {}), ...headers },
    ...(body === undefined ? {} : { payload: body as object }),
  });

describe('the /v1/messages routes conform to the OpenAPI document', () => {
  const msg = { model: 'claude-haiku', max_tokens: 20, messages: [{ role: 'user', content: 'hi sim:tokens=3' }] };
  const count = { model: 'claude-haiku', messages: [{ role: 'user', content: 'hi' }] };

  it('200s, the stream, and the 400s, 402, 403, 409, 413 and 502', async () => {
    const { key } = await h.account({ credits: 100 });
    c.conforms(await inject('post', '/v1/messages', key, msg), 'post', '/v1/messages', 200);
    const streamed = await inject('post', '/v1/messages', key, { ...msg, stream: true });
    c.conforms(streamed, 'post', '/v1/messages', 200);
    expect(streamed.body).toMatch(/^event: message_start\n/);
    expect(streamed.body.trimEnd().endsWith('data: {"type":"message_stop"}')).toBe(true);
    c.conforms(await inject('post', '/v1/messages/count_tokens', key, count), 'post', '/v1/messages/count_tokens', 200);
    c.conforms(await inject('post', '/v1/messages', key, { ...msg, temperature: 3 }), 'post', '/v1/messages', 400);
    c.conforms(
      await inject('post', '/v1/messages/count_tokens', key, { ...count, bogus: 1 }),
      'post',
      '/v1/messages/count_tokens',
      400,
    );
    const failed = await inject('post', '/v1/messages', key, {
      ...msg,
      messages: [{ role: 'user', content: 'sim:fail' }],
    });
    expect(c.conforms(failed, 'post', '/v1/messages', 502)).toMatchObject({ error: { type: 'api_error' } });
    expect(failed.headers['x-should-retry']).toBe('false');
    const huge = { ...msg, messages: [{ role: 'user', content: 'x'.repeat(9 * 1024 * 1024) }] };
    c.conforms(await inject('post', '/v1/messages', key, huge), 'post', '/v1/messages', 413);
    c.conforms(
      await inject('post', '/v1/messages/count_tokens', key, { ...count, messages: huge.messages }),
      'post',
      '/v1/messages/count_tokens',
      413,
    );
    const poor = (await h.account({ credits: 0 })).key;
    c.conforms(await inject('post', '/v1/messages', poor, msg), 'post', '/v1/messages', 402);
    const noChat = (await h.account({ credits: 10, scopes: ['image'] })).key;
    c.conforms(await inject('post', '/v1/messages', noChat, msg), 'post', '/v1/messages', 403);
    const headers = { 'idempotency-key': 'anthropic-409' };
    await inject('post', '/v1/messages', key, msg, headers);
    const conflict = await inject('post', '/v1/messages', key, { ...msg, max_tokens: 21 }, headers);
    c.conforms(conflict, 'post', '/v1/messages', 409);
  });

  it('401 and 429 on every route, 500 and 503 when the database is broken or gone', async () => {
    for (const [path, body] of [
      ['/v1/messages', msg],
      ['/v1/messages/count_tokens', count],
    ] as const) {
      expect(c.conforms(await inject('post', path, 'gsk_bogus', body), 'post', path, 401)).toMatchObject({
        type: 'error',
        error: { type: 'authentication_error' },
      });
    }
    const { key } = await h.account({ credits: 10, plan: 'free' });
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) await inject('post', '/v1/messages/count_tokens', key, count);
    for (const [path, body] of [
      ['/v1/messages', msg],
      ['/v1/messages/count_tokens', count],
    ] as const) {
      const res = await inject('post', path, key, body);
      expect(c.conforms(res, 'post', path, 429)).toMatchObject({ error: { type: 'rate_limit_error' } });
      expect(res.headers['retry-after-ms']).toBe(String(1000 * Number(res.headers['retry-after'])));
    }
  });

  it('503 when PostgreSQL cannot be reached and 500 when it is broken, in Anthropic’s shape, without internals', async () => {
    const { key } = await h.account({ credits: 10 });
    const unreachable = new pg.Pool({
      connectionString: `postgresql://nobody@127.0.0.1:${await freePort()}/nowhere`,
      connectionTimeoutMillis: 2_000,
      max: 1,
    });
    const name = `t_broken_anthropic_${Date.now()}`;
    await createDatabase(name);
    const broken = new pg.Pool({ connectionString: databaseUrlFor(name), max: 2 });
    await broken.query('DROP TABLE ledger_entries, holds, idempotency_keys, generations, api_keys, accounts CASCADE');
    try {
      for (const [pool, status, type] of [
        [unreachable, 503, 'overloaded_error'],
        [broken, 500, 'api_error'],
      ] as const) {
        const app = await productionApi(h, {
          pool,
        });
        try {
          for (const [path, body] of [
            ['/v1/messages', msg],
            ['/v1/messages/count_tokens', count],
          ] as const) {
            const res = await app.inject({
              method: 'POST',
              url: path,
              headers: { 'anthropic-version': '2023-06-01', 'x-api-key': key },
              payload: body,
            });
            const answer = c.conforms<{ error: { type: string; message: string } }>(res, 'post', path, status);
            expect(answer.error.type).toBe(type);
            expect(answer.error.message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|relation/);
          }
        } finally {
          await app.close();
        }
      }
    } finally {
      await unreachable.end();
      await broken.end();
      await dropDatabase(name);
    }
  });

  it('every documented status of the /v1/messages routes was produced above', () => {
    c.expectCoverage('anthropic-sdk.test.ts');
  });
});
