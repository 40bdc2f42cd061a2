import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

/**
 * `Cancel-After` on the chat replies the API streams itself (group B's chat completions and
 * responses): the deadline ends the reply like a disconnect the client asked for in advance. A
 * stream is charged the tokens it was sent; a whole reply, which sends nothing before its end,
 * and a stream cut before its first token are charged nothing and fail with `timeout`.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ listen: true });
});
afterAll(async () => {
  await h?.close();
});

const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
const balanceOf = async (key: string) =>
  (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
const settled = (key: string) =>
  eventually(async () => ((await balanceOf(key)).holdsActive === 0 ? balanceOf(key) : undefined));
const generationOf = async (key: string, id: string) =>
  (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<{
    status: string;
    creditsCharged: number;
    params: { outputTokens?: number };
    error: { code: string } | null;
  }>();
/** Claude Sonnet's rate: 2,000 millicredits per 1,000 output tokens. */
const creditsFor = (tokens: number) => chargeForTokens(tokens, 2000) / 1000;

describe('Cancel-After on a streamed chat', () => {
  it('chat completions: the stream ends at the deadline with an error event; the tokens sent are charged, no more', async () => {
    const { key } = await h.account({ credits: 10 });
    const stream = await sdk(key).chat.completions.create(
      {
        model: 'claude-sonnet',
        messages: [{ role: 'user', content: 'a long story sim:tokens=40 sim:pace=150' }],
        stream: true,
        max_tokens: 40,
      },
      { headers: { 'Cancel-After': '1' } },
    );
    let received = 0;
    let id = '';
    const err = await (async () => {
      for await (const chunk of stream) {
        id = chunk.id;
        if (chunk.choices[0]?.delta.content) received++;
      }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).message).toMatch(
      /deadline of 1 s \(Cancel-After\) passed; the reply stopped after \d+ tokens/,
    );
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(40);
    const after = await settled(key);
    const g = await generationOf(key, id);
    expect(g).toMatchObject({
      status: 'succeeded',
      creditsCharged: creditsFor(received),
      params: { outputTokens: received },
    });
    expect(after.balance).toBeCloseTo(10 - creditsFor(received), 6);
  });

  it('a deadline before the first token is a 504 answer, nothing charged, the generation failed timeout', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const err = await sdk(key)
      .chat.completions.create(
        {
          model: 'claude-sonnet',
          messages: [{ role: 'user', content: 'think first sim:delay=3000' }],
          stream: true,
          max_tokens: 40,
        },
        { headers: { 'Cancel-After': '1' } },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(504);
    expect(await settled(key)).toMatchObject({ balance: 10, holdsActive: 0 });
    const rows = await h.pool.query<{ status: string; code: string }>(
      `SELECT status, error->>'code' AS code FROM generations WHERE account_id = $1`,
      [accountId],
    );
    expect(rows.rows).toEqual([{ status: 'failed', code: 'timeout' }]);
  });

  it('a whole (not streamed) reply past its deadline charges nothing: nothing was sent', async () => {
    const { key } = await h.account({ credits: 10 });
    const err = await sdk(key)
      .chat.completions.create(
        {
          model: 'claude-sonnet',
          messages: [{ role: 'user', content: 'a long story sim:tokens=40 sim:pace=150' }],
          max_tokens: 40,
        },
        { headers: { 'Cancel-After': '1' } },
      )
      .catch((e: unknown) => e);
    expect((err as APIError).status).toBe(504);
    expect(await settled(key)).toMatchObject({ balance: 10, holdsActive: 0 });
  });

  it('responses: a streamed response is cut at its deadline the same way', async () => {
    const { key } = await h.account({ credits: 10 });
    const stream = await sdk(key).responses.create(
      { model: 'claude-sonnet', input: 'a long story sim:tokens=40 sim:pace=150', stream: true, max_output_tokens: 40 },
      { headers: { 'Cancel-After': '1' } },
    );
    let deltas = 0;
    const err = await (async () => {
      for await (const event of stream) if (event.type === 'response.output_text.delta') deltas++;
    })().catch((e: unknown) => e);
    expect(deltas).toBeGreaterThan(0);
    expect(deltas).toBeLessThan(40);
    expect(String((err as Error | undefined)?.message ?? '')).toMatch(/Cancel-After/);
    expect(await settled(key)).toMatchObject({ balance: 10 - creditsFor(deltas) });
  });
});
