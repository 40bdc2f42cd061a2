// A request's own cap (`max_credits`; group C `maxCredits`): every generate endpoint refuses a
// quote above it before anything is held, in each door's error shape, and nothing is charged.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

let h: Harness;
let mcpUrl: URL;
const clients: Client[] = [];
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
  mcpUrl = new URL('/api/mcp', await h.app.listen({ port: 0, host: '127.0.0.1' }));
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await h?.close();
});

interface ErrorBody {
  error: { type: string; code: number; message: string; param?: string; required?: number; max_credits?: number };
}

const post = async (key: string, url: string, body: unknown) => {
  const res = await h.call('POST', url, { key, body });
  return { status: res.statusCode, body: res.json<ErrorBody>() };
};

describe('max_credits on every generate endpoint', () => {
  it('refuses a quote above the cap with 402 max_credits_exceeded and holds nothing; a cap at the quote runs', async () => {
    const { key } = await h.account({ credits: 500, scopes: ['image', 'video', 'chat'] });
    const cases: [string, unknown, string, number][] = [
      ['/api/v1/generate', { kind: 'image', model: 'flux', prompt: 'a kite', max_credits: 2.5 }, 'max_credits', 3],
      [
        '/api/v1/generate',
        { kind: 'video', model: 'kling', prompt: 'rain', seconds: 10, quality: '1080p', max_credits: 100 },
        'max_credits',
        130,
      ],
      ['/api/generate', { kind: 'image', model: 'flux', prompt: 'a kite', maxCredits: 1 }, 'maxCredits', 3],
      ['/v1/images/generations', { model: 'flux', prompt: 'a kite', n: 2, max_credits: 5 }, 'max_credits', 6],
      [
        '/v1/chat/completions',
        { model: 'claude-haiku', messages: [{ role: 'user', content: 'hi' }], max_credits: 0 },
        'max_credits',
        -1,
      ],
      ['/v1/responses', { model: 'claude-haiku', input: 'hi', max_credits: 0 }, 'max_credits', -1],
    ];
    for (const [url, body, param, quote] of cases) {
      const res = await post(key, url, body);
      expect(res.status, `${url} ${JSON.stringify(res.body)}`).toBe(402);
      expect(res.body.error).toMatchObject({ type: 'max_credits_exceeded', code: 402, param });
      if (quote >= 0) expect(res.body.error.required).toBe(quote);
      expect(res.body.error.message).toContain('nothing was held or charged');
    }
    const balance = await h.call('GET', '/api/v1/balance', { key });
    expect(balance.json()).toMatchObject({ balance: 500, holdsActive: 0 });
    expect((await h.call('GET', '/api/v1/generations', { key })).json<{ data: unknown[] }>().data).toEqual([]);

    // A cap at the quote is no refusal.
    const ok = await post(key, '/api/v1/generate', { kind: 'image', model: 'flux', prompt: 'a kite', max_credits: 3 });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'succeeded', creditsCharged: 3 });
  });

  it('an MCP generate tool refuses the same way, as a tool error carrying the REST body', async () => {
    const { key } = await h.account({ credits: 50 });
    const client = new Client({ name: 'max-credits-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
    );
    clients.push(client);
    const result = (await client.callTool(
      { name: 'generate_image', arguments: { model: 'flux', prompt: 'a boat', max_credits: 1 } },
      CallToolResultSchema,
    )) as CallToolResult;
    expect(result.isError).toBe(true);
    const error = (JSON.parse((result.content[0] as { text: string }).text) as ErrorBody).error;
    expect(error).toMatchObject({
      type: 'max_credits_exceeded',
      code: 402,
      param: 'max_credits',
      required: 3,
      max_credits: 1,
    });
    expect((await h.call('GET', '/api/v1/balance', { key })).json()).toMatchObject({ balance: 50, holdsActive: 0 });
  });

  it('a cap that is not a number is a 400 naming the field', async () => {
    const { key } = await h.account({ credits: 10 });
    const res = await post(key, '/api/v1/generate', {
      kind: 'image',
      model: 'flux',
      prompt: 'a kite',
      max_credits: 'lots',
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', param: 'max_credits' });
  });
});
