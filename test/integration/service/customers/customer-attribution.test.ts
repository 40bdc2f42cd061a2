// The platform's own end user, named at every door with the clients people use: the official
// OpenAI SDK (`user`, `safety_identifier`), the official MCP SDK (a tool's `customer`), group A
// and C bodies and `X-Customer-Id`; one name inside the service, shown back on the generation and
// filtering the list. Two different names in one request are a 400 with nothing held.
import OpenAI from 'openai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

let h: Harness;
let key: string;
let accountId: string;

beforeAll(async () => {
  h = await startHarness({ listen: true, syncWaitMs: 20_000 });
  ({ key, accountId } = await h.account({ credits: 500, scopes: ['image', 'chat'] }));
});
afterAll(async () => {
  await h?.close();
});

const customerOf = async (id: string) =>
  (await h.pool.query<{ customer_id: string | null }>('SELECT customer_id FROM generations WHERE id = $1', [id]))
    .rows[0]?.customer_id;

describe('one customer name from every door', () => {
  it('group B through the OpenAI SDK: user, safety_identifier, or the header', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1` });
    const byUser = await client.chat.completions.create({
      model: 'claude-haiku',
      messages: [{ role: 'user', content: 'hi' }],
      user: 'b-user-1',
    });
    expect(await customerOf(byUser.id)).toBe('b-user-1');
    const bySafety = await client.chat.completions.create({
      model: 'claude-haiku',
      messages: [{ role: 'user', content: 'hi' }],
      safety_identifier: 'b-safe-2',
    });
    expect(await customerOf(bySafety.id)).toBe('b-safe-2');
    const byHeader = await client.chat.completions.create(
      { model: 'claude-haiku', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'X-Customer-Id': 'b-header-3' } },
    );
    expect(await customerOf(byHeader.id)).toBe('b-header-3');
    // Two different names: 400, nothing held.
    const before = (await h.pool.query('SELECT count(*)::int AS n FROM generations WHERE account_id = $1', [accountId]))
      .rows[0].n;
    await expect(
      client.chat.completions.create({
        model: 'claude-haiku',
        messages: [{ role: 'user', content: 'hi' }],
        user: 'one',
        safety_identifier: 'another',
      }),
    ).rejects.toMatchObject({ status: 400 });
    const after = (await h.pool.query('SELECT count(*)::int AS n FROM generations WHERE account_id = $1', [accountId]))
      .rows[0].n;
    expect(after).toBe(before);
  });

  it('MCP through the official SDK: a tool’s customer argument', async () => {
    const client = new Client({ name: 'attribution-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/api/mcp', h.baseUrl), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    try {
      const result = await client.callTool({
        name: 'generate_image',
        arguments: { model: 'flux', prompt: 'a kite', customer: 'mcp-user-4' },
      });
      expect(result.isError, JSON.stringify(result).slice(0, 600)).toBeFalsy();
      const g = result.structuredContent as { id: string; customer?: string };
      expect(g.customer).toBe('mcp-user-4');
      expect(await customerOf(g.id)).toBe('mcp-user-4');
    } finally {
      await client.close();
    }
  });

  it('groups A and C: the customer field or the header, shown back and filtering the list', async () => {
    const a = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a kite', customer: 'a-user-5' },
    });
    expect(a.statusCode, a.body).toBe(200);
    expect(a.json()).toMatchObject({ customer: 'a-user-5' });
    const c = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a kite' },
      headers: { 'x-customer-id': 'a-user-5' },
    });
    expect(c.statusCode, c.body).toBe(200);
    const conflict = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a kite', customer: 'a-user-5' },
      headers: { 'x-customer-id': 'someone-else' },
    });
    expect(conflict.statusCode).toBe(400);
    expect(conflict.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    const list = await h.call('GET', '/api/v1/generations?customer=a-user-5', { key });
    expect(list.json<{ data: { id: string; customer: string }[] }>().data.map((g) => g.customer)).toEqual([
      'a-user-5',
      'a-user-5',
    ]);
  });
});
