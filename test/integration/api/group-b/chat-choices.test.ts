/**
 * `n` and `logprobs` on chat completions, with the official `openai` SDK: several choices are one
 * generation each, held together (all or none) and each charged the tokens it produced, in a reply
 * and in a batch line alike; log
 * probabilities come from the simulator (well formed, deterministic) and from an OpenAI-compatible
 * upstream, and are refused by name where the model's provider gives none (Anthropic's API).
 */
import type { AddressInfo } from 'node:net';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { atPercent } from '../../../../core/batches/pricing';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { findOpenAiChatModel } from '../../../../core/catalogue/models';
import { mcToCredits } from '../../../../core/money';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { createProviderRouter } from '../../../../core/providers/router';
import { createSimulator } from '../../../../core/providers/simulator';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startAnthropicUpstream, startOpenAiUpstream } from '../../../support/upstream-servers';

let h: Harness;
let anthropicUp: Awaited<ReturnType<typeof startAnthropicUpstream>>;
let openaiUp: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let baseURL: string;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });

beforeAll(async () => {
  anthropicUp = await startAnthropicUpstream();
  openaiUp = await startOpenAiUpstream();
  const { upstreams } = upstreamsSchema.parse({
    upstreams: [
      {
        name: 'anthropic',
        protocol: 'anthropic',
        baseUrl: anthropicUp.baseUrl,
        apiKey: 'sk-ant-test',
        models: { 'claude-sonnet': { model: 'claude-sonnet-4-5', priority: 0 } },
      },
      {
        name: 'openai',
        protocol: 'openai',
        baseUrl: openaiUp.baseUrl,
        models: { 'gpt-5.5': { model: 'gpt-5.5-upstream', priority: 0 } },
      },
    ],
  });
  h = await startHarness({ provider: () => createProviderRouter(upstreams, createSimulator(), http) });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  await h?.close();
  await anthropicUp?.close();
  await openaiUp?.close();
  http.close();
});

const clientFor = (key: string) => new OpenAI({ apiKey: key, baseURL: `${baseURL}/v1`, maxRetries: 0 });
const settledBalance = (key: string) =>
  eventually(async () => {
    const b = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
    return b.holdsActive === 0 ? b.balance : undefined;
  });
/** claude-haiku's rate per 1,000 output tokens, in millicredits. */
const HAIKU = findOpenAiChatModel('claude-haiku')!.priceMc;
const user = (content: string) => [{ role: 'user' as const, content }];
type ChoiceRecord = { id: string; status: string; creditsCharged: number; error: { code: string } | null };
const chatRecords = async (key: string) =>
  (await h.call('GET', '/api/v1/generations?kind=chat', { key })).json<{ data: ChoiceRecord[] }>().data;

describe('n choices', () => {
  it('answers n choices whole, each a generation charged its own tokens, the usage of them all', async () => {
    const { key } = await h.account({ credits: 100 });
    const reply = await clientFor(key).chat.completions.create({
      model: 'claude-haiku',
      messages: user('Three takes sim:delay=0 sim:pace=0 sim:tokens=6 sim:reasoning=2'),
      max_tokens: 40,
      n: 3,
    });
    expect(reply.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    for (const c of reply.choices) {
      expect(c).toMatchObject({ finish_reason: 'stop', logprobs: null, message: { role: 'assistant' } });
      expect(c.message.content?.split(' ')).toHaveLength(6);
    }
    expect(reply.usage).toMatchObject({
      completion_tokens: 3 * 8,
      completion_tokens_details: { reasoning_tokens: 3 * 2 },
    });
    // Each choice is charged its 8 tokens on its own: three charges, each rounded once.
    expect(await settledBalance(key)).toBeCloseTo(100 - mcToCredits(3 * chargeForTokens(8, HAIKU)), 6);
    const list = (await h.call('GET', '/api/v1/generations?kind=chat', { key })).json<{
      data: { id: string; creditsCharged: number; usage: { outputTokens: number } }[];
    }>();
    expect(list.data).toHaveLength(3);
    expect(list.data.map((g) => g.usage.outputTokens)).toEqual([8, 8, 8]);
    expect(list.data.map((g) => g.id)).toContain(reply.id);
  });

  it('streams n choices interleaved, each with its role, deltas and finish, then the summed usage', async () => {
    const { key } = await h.account({ credits: 100 });
    const stream = await clientFor(key).chat.completions.create({
      model: 'gpt-5.5',
      messages: user('Two takes up:tokens=4 up:cached=10'),
      max_tokens: 40,
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const text = ['', ''];
    const finishes: (string | null)[] = [null, null];
    const roles = [0, 0];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text[c.index] += c.delta.content ?? '';
        if (c.delta.role) roles[c.index]! += 1;
        if (c.finish_reason) finishes[c.index] = c.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(roles).toEqual([1, 1]);
    expect(finishes).toEqual(['stop', 'stop']);
    expect(text[0]!.split(' ')).toHaveLength(4);
    expect(text[1]).toBe(text[0]);
    expect(usage).toMatchObject({
      // The prompt once, as OpenAI counts it for n choices; the output of both.
      prompt_tokens: 13,
      completion_tokens: 2 * 4,
      prompt_tokens_details: { cached_tokens: 10 },
    });
    expect(await settledBalance(key)).toBeCloseTo(
      100 - mcToCredits(2 * chargeForTokens(4, findOpenAiChatModel('gpt-5.5')!.priceMc)),
      6,
    );
  });

  it('holds all the choices or none: n whose holds the balance cannot cover is a 402, nothing held', async () => {
    // claude-haiku holds its 4,096-token cap per choice: about 2.9 credits each.
    const { key } = await h.account({ credits: 5 });
    const client = clientFor(key);
    await expect(
      client.chat.completions.create({ model: 'claude-haiku', messages: user('sim:delay=0 hi'), n: 2 }),
    ).rejects.toMatchObject({ status: 402 });
    expect(await settledBalance(key)).toBe(5);
    const one = await client.chat.completions.create({ model: 'claude-haiku', messages: user('sim:delay=0 hi'), n: 1 });
    expect(one.choices).toHaveLength(1);
  });

  it('charges nothing for a whole reply one of whose choices fails: the others are released, not charged', async () => {
    const { key } = await h.account({ credits: 100 });
    // The second request with this prompt breaks off after 3 of its 6 tokens; the others complete.
    const ask = clientFor(key).chat.completions.create({
      model: 'gpt-5.5',
      messages: user('Three takes up:tokens=6 up:pace=20 up:cut=3 up:nth=2'),
      max_tokens: 40,
      n: 3,
    });
    await expect(ask).rejects.toMatchObject({ status: 502 });
    await expect(ask).rejects.toThrow(/provider failed; nothing was charged/);
    expect(await settledBalance(key)).toBe(100);
    const records = await chatRecords(key);
    expect(records).toHaveLength(3);
    for (const r of records) expect(r).toMatchObject({ status: 'failed', creditsCharged: 0 });
    expect(records.map((r) => r.error?.code).sort()).toEqual(['choice_failed', 'choice_failed', 'provider_error']);
  });

  it('charges nothing for a stream one of whose choices fails before the first chunk', async () => {
    const { key } = await h.account({ credits: 100 });
    // The upstream refuses the second request with this prompt; the first has begun to answer.
    const ask = clientFor(key).chat.completions.create({
      model: 'gpt-5.5',
      messages: user('Two takes up:tokens=6 up:status=400 up:nth=2'),
      max_tokens: 40,
      n: 2,
      stream: true,
    });
    await expect(ask).rejects.toMatchObject({ status: 400 });
    expect(await settledBalance(key)).toBe(100);
    const records = await chatRecords(key);
    expect(records.map((r) => [r.status, r.creditsCharged])).toEqual([
      ['failed', 0],
      ['failed', 0],
    ]);
  });

  it('refuses n outside 1 to 8 by name', async () => {
    const { key } = await h.account({ credits: 100 });
    await expect(
      clientFor(key).chat.completions.create({ model: 'claude-haiku', messages: user('hi'), n: 9 }),
    ).rejects.toMatchObject({ status: 400, param: 'n' });
  });
});

describe('logprobs', () => {
  const wellFormed = (content: OpenAI.ChatCompletionTokenLogprob[], top: number, text: string) => {
    expect(content.map((t) => t.token).join('')).toBe(text);
    for (const t of content) {
      expect(t.logprob).toBeLessThanOrEqual(0);
      expect(t.bytes).toEqual([...Buffer.from(t.token)]);
      expect(t.top_logprobs).toHaveLength(top);
      if (top > 0) expect(t.top_logprobs[0]).toMatchObject({ token: t.token, logprob: t.logprob });
      const probabilities = t.top_logprobs.map((x) => Math.exp(x.logprob));
      expect(probabilities.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1);
      expect([...probabilities].sort((a, b) => b - a)).toEqual(probabilities);
    }
  };

  it('the simulator gives well-formed, deterministic log probabilities, whole and streamed', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = clientFor(key);
    const ask = {
      model: 'claude-haiku',
      messages: user('Logprobs sim:delay=0 sim:pace=0 sim:tokens=5'),
      max_tokens: 20,
    };
    const whole = await client.chat.completions.create({ ...ask, logprobs: true, top_logprobs: 3 });
    const content = whole.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(5);
    wellFormed(content, 3, whole.choices[0]!.message.content!);
    expect(whole.choices[0]!.logprobs!.refusal).toBeNull();

    const stream = await client.chat.completions.create({ ...ask, logprobs: true, top_logprobs: 3, stream: true });
    const streamed: OpenAI.ChatCompletionTokenLogprob[] = [];
    for await (const chunk of stream) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    expect(streamed).toEqual(content);

    const without = await client.chat.completions.create(ask);
    expect(without.choices[0]!.logprobs).toBeNull();
  });

  it('passes an OpenAI-compatible upstream’s log probabilities on', async () => {
    const { key } = await h.account({ credits: 100 });
    const stream = await clientFor(key).chat.completions.create({
      model: 'gpt-5.5',
      messages: user('up:tokens=3'),
      logprobs: true,
      top_logprobs: 2,
      stream: true,
    });
    const content: OpenAI.ChatCompletionTokenLogprob[] = [];
    let text = '';
    for await (const chunk of stream) {
      content.push(...(chunk.choices[0]?.logprobs?.content ?? []));
      text += chunk.choices[0]?.delta.content ?? '';
    }
    wellFormed(content, 2, text);
    expect(openaiUp.received.at(-1)!.body).toMatchObject({ logprobs: true, top_logprobs: 2 });
  });

  it('refuses logprobs where the model’s provider gives none, and top_logprobs without logprobs', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = clientFor(key);
    await expect(
      client.chat.completions.create({ model: 'claude-sonnet', messages: user('hi'), logprobs: true }),
    ).rejects.toMatchObject({ status: 400, param: 'logprobs' });
    await expect(
      client.chat.completions.create({ model: 'claude-haiku', messages: user('hi'), top_logprobs: 2 }),
    ).rejects.toMatchObject({ status: 400, param: 'top_logprobs' });
    expect(await settledBalance(key)).toBe(100);
  });
});

describe('n choices in a batch line', () => {
  type Line = { custom_id: string; response: { status_code: number; body: Record<string, unknown> } };
  const linesOf = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
  const line = (customId: string, content: string) => ({
    custom_id: customId,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'gpt-5.5', messages: user(content), max_tokens: 40, n: 3 },
  });

  it('charges a line all or none: a line one of whose choices fails charges none of them, the others all of theirs, once', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const client = clientFor(key);
    // The upstream refuses the second request of a failing line's prompt: at once (its two other
    // choices would take 19 s; they are stopped), or after 3 s (they have ended and wait for it).
    const lines = [
      line('good-6', 'Batch takes one up:tokens=6'),
      line('fails-first', 'Batch takes two up:tokens=20 up:pace=1000 up:status=400 up:nth=2'),
      line('fails-last', 'Batch takes three up:tokens=4 up:status=400 up:nth=2 up:late=3000'),
      line('good-4', 'Batch takes four up:tokens=4'),
    ];
    const file = await client.files.create({
      file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n')), 'in.jsonl'),
      purpose: 'batch',
    });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await eventually(
      async () => {
        const b = await client.batches.retrieve(created.id);
        return b.status === 'completed' ? b : undefined;
      },
      90_000,
      300,
    );
    expect(done.request_counts).toEqual({ total: 4, completed: 2, failed: 2 });

    const output = linesOf(await (await client.files.content(done.output_file_id!)).text());
    expect(output.map((l) => [l.custom_id, l.response.status_code])).toEqual([
      ['good-6', 200],
      ['good-4', 200],
    ]);
    for (const l of output) expect(l.response.body.choices).toHaveLength(3);
    const errors = linesOf(await (await client.files.content(done.error_file_id!)).text());
    expect(errors.map((l) => l.custom_id)).toEqual(['fails-first', 'fails-last']);
    for (const l of errors) {
      expect(l.response.status_code).toBeGreaterThanOrEqual(400);
      // The line answers the choice's own failure, not the others' `choice_failed`.
      expect(JSON.stringify(l.response.body)).not.toContain('choice_failed');
    }

    // The ledger: the batch held once; each choice of a failing line released whole, with the
    // failure for one and `choice_failed` for the others; each choice of a good line charged once.
    const rate = atPercent(findOpenAiChatModel('gpt-5.5')!.priceMc, 50);
    const quote = chargeForTokens(40, rate);
    const entries = (
      await h.pool.query<{ entry: string; amount_mc: number; note: string | null; custom_id: string | null }>(
        `SELECT e.entry, e.amount_mc, e.note, l.custom_id
           FROM ledger_entries e LEFT JOIN generations g ON g.id = e.generation_id
                LEFT JOIN batch_lines l ON l.batch_id = g.batch_id AND l.line = g.batch_line
          WHERE e.account_id = $1 AND e.entry <> 'credit' ORDER BY e.id`,
        [accountId],
      )
    ).rows;
    const of = (entry: string, customId: string | null) =>
      entries.filter((e) => e.entry === entry && e.custom_id === customId);
    expect(of('hold', null).map((e) => e.amount_mc)).toEqual([12 * quote]);
    expect(entries.filter((e) => e.entry === 'hold')).toHaveLength(1);
    for (const failing of ['fails-first', 'fails-last']) {
      expect(of('charge', failing)).toEqual([]);
      expect(of('release', failing).map((e) => e.amount_mc)).toEqual([quote, quote, quote]);
      expect(
        of('release', failing)
          .map((e) => (e.note === 'choice_failed' ? e.note : 'own'))
          .sort(),
      ).toEqual(['choice_failed', 'choice_failed', 'own']);
    }
    for (const [good, tokens] of [
      ['good-6', 6],
      ['good-4', 4],
    ] as const) {
      expect(of('charge', good).map((e) => e.amount_mc)).toEqual([1, 2, 3].map(() => chargeForTokens(tokens, rate)));
      expect(of('release', good).map((e) => e.amount_mc)).toEqual(
        [1, 2, 3].map(() => quote - chargeForTokens(tokens, rate)),
      );
    }
    const charged = 3 * chargeForTokens(6, rate) + 3 * chargeForTokens(4, rate);
    const moved = entries.reduce((sum, e) => sum + (e.entry === 'hold' ? e.amount_mc : -e.amount_mc), 0);
    expect(moved).toBe(0);
    const balance = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
    expect(balance).toEqual(expect.objectContaining({ balance: mcToCredits(100_000 - charged), holdsActive: 0 }));

    // The choices still running when their line failed were stopped, as a reply's are: their
    // upstream calls were cut off rather than run to their end.
    // (The workflow ends at once; its activity hears of the cancel with its next heartbeat.)
    const failingFirst = openaiUp.received.filter((r) => JSON.stringify(r.body).includes('Batch takes two'));
    expect(failingFirst).toHaveLength(3);
    const cut = await eventually(async () => {
      const closed = failingFirst.filter((r) => r.closedAfterMs !== undefined);
      return closed.length === 2 ? closed : undefined;
    }, 20_000);
    for (const r of cut) expect(r.closedAfterMs).toBeLessThan(15_000);

    const records = await chatRecords(key);
    expect(records).toHaveLength(12);
    expect(records.filter((r) => r.status === 'succeeded')).toHaveLength(6);
    for (const r of records.filter((x) => x.status !== 'succeeded')) expect(r.creditsCharged).toBe(0);
  }, 120_000);
});
