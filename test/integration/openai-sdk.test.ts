/**
 * Group B with the official `openai` package, unmodified, over real HTTP: only its base URL and
 * key point at the service.
 */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness } from '../support/harness';
import type { Harness } from '../support/harness';

let h: Harness;
let baseURL: string;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await h?.close();
});

const sdk = (apiKey: string, options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) => new OpenAI({ apiKey, baseURL, ...options });

const balanceOf = async (key: string) => {
  const res = await h.call('GET', '/api/v1/balance', { key });
  return res.json<{ balance: number; holdsActive: number }>();
};

describe('chat completions', () => {
  it('answers a whole reply with usage, charging the tokens produced and releasing the rest', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = sdk(key);
    const reply = await client.chat.completions.create({ model: 'claude-haiku', messages: [{ role: 'user', content: 'hello sim:tokens=7' }], max_tokens: 100 });
    expect(reply.object).toBe('chat.completion');
    expect(reply.model).toBe('claude-haiku');
    expect(reply.choices[0]!.message.content.split(' ')).toHaveLength(7);
    expect(reply.choices[0]!.finish_reason).toBe('stop');
    expect(reply.usage).toMatchObject({ completion_tokens: 7 });
    // 7 tokens at 0.7 credits per 1,000 = 4.9 millicredits, rounded up to 5.
    expect(await balanceOf(key)).toEqual(expect.objectContaining({ balance: 9.995, holdsActive: 0 }));
  });

  it('streams deltas ending with [DONE], with the usage chunk when asked', async () => {
    const { key } = await h.account({ credits: 10 });
    const stream = await sdk(key).chat.completions.create({
      model: 'gpt-5.5', messages: [{ role: 'user', content: 'tell me sim:tokens=12' }], stream: true, stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      const choice = chunk.choices[0];
      if (choice?.delta.content) deltas.push(choice.delta.content);
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(deltas).toHaveLength(12);
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBe(12);
    // 12 tokens at 1.5 credits per 1,000 = 18 millicredits.
    await eventually(async () => ((await balanceOf(key)).holdsActive === 0 ? true : undefined));
    expect(await balanceOf(key)).toMatchObject({ balance: 9.982 });
  });
});
