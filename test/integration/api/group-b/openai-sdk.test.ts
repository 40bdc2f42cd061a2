/**
 * Group B with the official `openai` package, unmodified, over real HTTP: only its base URL and
 * key point at the service. Then every documented answer of the /v1 routes, held to the OpenAPI
 * document (this file owns /v1/ in test/support/openapi.ts).
 */
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import OpenAI, { APIError, toFile } from 'openai';
import type { VideoSeconds } from 'openai/resources/videos';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAN_RATE_LIMITS } from '../../../../core/plans';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { GenerationStatus } from '../../../../core/search-attributes';
import { freePort } from '../../../../runtime/process';
import { createDatabase, databaseUrlFor, dropDatabase, eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { download } from '../../../support/api';
import sharp from 'sharp';
import { vp8Keyframes, webpOfVp8Keyframe } from '../../../../core/media/webm-frames';
import Ajv from 'ajv';
import { createConformance, loadDocument } from '../../../support/openapi';
import type { Method } from '../../../support/openapi';

let h: Harness;
let baseURL: string;
let c: ReturnType<typeof createConformance>;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  c = createConformance(await loadDocument(h.app));
  // An image of the service's own (its signed URL is read from the store): what the edits below edit.
  const { key } = await h.account({ credits: 10 });
  const made = await h.call('POST', '/v1/images/generations', {
    key,
    body: { model: 'flux', prompt: 'an image to edit', size: '1024x1024' },
  });
  editSource = made.json<{ data: { url: string; generation_id: string }[] }>().data[0]!;
});
let editSource: { url: string; generation_id: string };
afterAll(async () => {
  await h?.close();
});

const sdk = (apiKey: string, options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
  new OpenAI({ apiKey, baseURL, ...options });
const MISSING = `gen_${'0'.repeat(26)}`;

interface GroupAGeneration {
  id: string;
  status: string;
  kind: string;
  model: string;
  creditsCharged: number;
  creditsQuoted: number;
  params: Record<string, unknown>;
  text: string | null;
}

const balanceOf = async (key: string) =>
  (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
const settled = (key: string) =>
  eventually(async () => ((await balanceOf(key)).holdsActive === 0 ? balanceOf(key) : undefined));
const generationA = async (key: string, id: string) =>
  (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<GroupAGeneration>();
const generationCount = async (accountId: string) =>
  (await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM generations WHERE account_id = $1', [accountId]))
    .rows[0]!.n;
const credits = (mc: number) => mc / 1000;

describe('chat completions (per-token billing)', () => {
  it('answers a whole reply with usage; charges the tokens produced and releases the rest of the hold', async () => {
    const { key } = await h.account({ credits: 10 });
    const { data: reply, response } = await sdk(key)
      .chat.completions.create({
        model: 'claude-haiku',
        messages: [{ role: 'user', content: 'hello sim:tokens=7' }],
        max_tokens: 100,
      })
      .withResponse();
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    expect(reply).toMatchObject({ object: 'chat.completion', model: 'claude-haiku', usage: { completion_tokens: 7 } });
    expect(reply.choices[0]!.message.content?.split(' ')).toHaveLength(7);
    expect(reply.choices[0]!.finish_reason).toBe('stop');
    // 7 tokens at 0.7 credits per 1,000: 4.9 millicredits, rounded up to 5; answered once settled.
    expect(await balanceOf(key)).toMatchObject({ balance: 10 - credits(chargeForTokens(7, 700)), holdsActive: 0 });
    const g = await generationA(key, reply.id);
    expect(g).toMatchObject({
      kind: 'chat',
      status: 'succeeded',
      creditsQuoted: credits(chargeForTokens(100, 700)),
      creditsCharged: 0.005,
      params: { outputTokens: 7 },
    });
    // Its workflow is started once the reply has ended, with the outcome and its final status, and
    // records it in its first task: no timer, no signal, no activity, no search attribute to upsert.
    const history = await eventually(async () => {
      const d = await h.client.workflow
        .getHandle(reply.id)
        .describe()
        .catch(() => undefined);
      return d?.status.name === 'COMPLETED' ? h.client.workflow.getHandle(reply.id).fetchHistory() : undefined;
    });
    expect(history.events?.map((e) => e.eventType)).toHaveLength(5);
    const described = await h.client.workflow.getHandle(reply.id).describe();
    expect(described.typedSearchAttributes.get(GenerationStatus)).toBe('succeeded');
  });

  it('holds max_tokens (or the model’s cap) while the reply runs, then settles what was produced', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const pending = client.chat.completions.create({
      model: 'claude-opus',
      messages: [{ role: 'user', content: 'slow sim:delay=1500 sim:tokens=3' }],
    });
    // No max_tokens: the hold covers the model's default cap, 4,096 tokens at 3.5 credits per 1,000.
    await eventually(async () => ((await balanceOf(key)).holdsActive > 0 ? true : undefined));
    expect(await balanceOf(key)).toMatchObject({ holdsActive: credits(chargeForTokens(4096, 3500)) });
    const reply = await pending;
    expect(reply.usage?.completion_tokens).toBe(3);
    expect(await balanceOf(key)).toMatchObject({ balance: 100 - credits(chargeForTokens(3, 3500)), holdsActive: 0 });
  });

  it('stops at max_tokens with finish_reason length and charges exactly that', async () => {
    const { key } = await h.account({ credits: 10 });
    const reply = await sdk(key).chat.completions.create({
      model: 'auto',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'sim:tokens=50' },
      ],
      max_completion_tokens: 8,
    });
    expect(reply).toMatchObject({
      model: 'claude-haiku',
      usage: { completion_tokens: 8 },
      choices: [{ finish_reason: 'length' }],
    });
    expect(await balanceOf(key)).toMatchObject({ balance: 10 - credits(chargeForTokens(8, 700)) });
  });

  it('streams chat.completion.chunk deltas ending with [DONE], with the usage chunk when asked', async () => {
    const { key } = await h.account({ credits: 10 });
    const stream = await sdk(key).chat.completions.create({
      model: 'gpt-5.5',
      messages: [{ role: 'user', content: 'tell me sim:tokens=12' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    let id = '';
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      id = chunk.id;
      const choice = chunk.choices[0];
      if (choice?.delta.content) deltas.push(choice.delta.content);
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(deltas).toHaveLength(12);
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBe(12);
    // 12 tokens at 1.5 credits per 1,000 = 18 millicredits; the workflow settles after [DONE].
    expect(await settled(key)).toMatchObject({ balance: 10 - credits(chargeForTokens(12, 1500)) });
    expect(await generationA(key, id)).toMatchObject({
      status: 'succeeded',
      text: deltas.join(''),
      params: { outputTokens: 12 },
    });
  });

  it('charges a client that disconnects halfway exactly the tokens it was sent: more than none, less than the hold', async () => {
    const { key } = await h.account({ credits: 10 });
    const stream = await sdk(key).chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'a long story sim:tokens=40 sim:pace=250' }],
      stream: true,
      max_tokens: 40,
    });
    let received = 0;
    let id = '';
    for await (const chunk of stream) {
      id = chunk.id;
      if (chunk.choices[0]?.delta.content) received++;
      if (received === 10) break; // the SDK aborts the request
    }
    const after = await settled(key);
    const g = await generationA(key, id);
    expect(g.params.outputTokens).toBe(10);
    expect(g).toMatchObject({ status: 'succeeded', creditsCharged: credits(chargeForTokens(10, 2000)) });
    expect(g.creditsCharged).toBeGreaterThan(0);
    expect(g.creditsCharged).toBeLessThan(g.creditsQuoted);
    expect(after.balance).toBe(10 - g.creditsCharged);
  });

  it('refuses to cancel a reply while it streams, which would release the tokens already sent; the disconnect still bills them', async () => {
    const { key } = await h.account({ credits: 10 });
    const stream = await sdk(key).chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'a long story sim:tokens=40 sim:pace=200' }],
      stream: true,
      max_tokens: 40,
    });
    let received = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) received++;
      if (received === 3) {
        const res = await h.call('POST', `/api/v1/generations/${chunk.id}/cancel`, { key });
        expect(res.statusCode).toBe(409);
        expect(res.json()).toMatchObject({
          error: {
            type: 'generation_streaming',
            status: 'running',
            message: expect.stringMatching(/closing that connection/),
          },
        });
      }
      if (received === 5) break;
    }
    expect(await settled(key)).toMatchObject({ balance: 10 - credits(chargeForTokens(5, 2000)) });
  });

  it('bills a per-token model run through group A (the activity path) the same way', async () => {
    const { key } = await h.account({ credits: 10 });
    const res = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'chat', model: 'gpt-5.5', prompt: 'hi sim:tokens=9', max_tokens: 50 },
    });
    expect(res.json()).toMatchObject({
      status: 'succeeded',
      creditsQuoted: credits(chargeForTokens(50, 1500)),
      creditsCharged: credits(chargeForTokens(9, 1500)),
      params: { outputTokens: 9 },
    });
    expect(await balanceOf(key)).toMatchObject({ balance: 10 - credits(chargeForTokens(9, 1500)), holdsActive: 0 });
  });

  it('never bills twice when the SDK retries: x-should-retry false after admission, and Idempotency-Key', async () => {
    // A provider failure after admission: 502, released, and the SDK does not send it again.
    const failing = await h.account({ credits: 10 });
    const err = await sdk(failing.key, { maxRetries: 2 })
      .chat.completions.create({ model: 'kimi-k2', messages: [{ role: 'user', content: 'sim:fail' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as APIError).status).toBe(502);
    expect((err as APIError).headers?.get('x-should-retry')).toBe('false');
    expect(await generationCount(failing.accountId)).toBe(1);
    expect(await balanceOf(failing.key)).toMatchObject({ balance: 10, holdsActive: 0 });
    // Resent with an Idempotency-Key, a failed reply fails the same way, without a second generation.
    const keyed = { headers: { 'Idempotency-Key': 'failing-1' } };
    const once = sdk(failing.key, { maxRetries: 0 });
    for (let i = 0; i < 2; i++) {
      const again = await once.chat.completions
        .create({ model: 'kimi-k2', messages: [{ role: 'user', content: 'sim:fail' }] }, keyed)
        .catch((e: unknown) => e);
      expect(again).toMatchObject({ status: 502, type: 'server_error' });
    }
    expect(await generationCount(failing.accountId)).toBe(2);

    // The answer is lost on the way back (the connection drops): the SDK resends, the key answers the repeat.
    const lost = await h.account({ credits: 10 });
    let attempts = 0;
    const dropFirstAnswer: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (attempts++ === 0) {
        await res.text();
        throw new TypeError('fetch failed: connection reset');
      }
      return res;
    };
    const reply = await sdk(lost.key, { fetch: dropFirstAnswer, maxRetries: 2 }).chat.completions.create(
      { model: 'glm-5.1', messages: [{ role: 'user', content: 'once sim:tokens=4' }] },
      { headers: { 'Idempotency-Key': 'chat-once-1' } },
    );
    expect(attempts).toBe(2);
    expect(reply.choices[0]!.message.content?.split(' ')).toHaveLength(4);
    expect(reply.usage?.completion_tokens).toBe(4);
    expect(await generationCount(lost.accountId)).toBe(1);
    expect(await balanceOf(lost.key)).toMatchObject({ balance: 10 - credits(chargeForTokens(4, 400)), holdsActive: 0 });
  });
});

describe('responses (OpenAI’s Responses API, per-token billing)', () => {
  it('client.responses.create: a whole response with usage, instructions and metadata; charged the tokens produced; retrieve and group A read it', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = sdk(key);
    const response = await client.responses.create({
      model: 'claude-haiku',
      instructions: 'Be brief.',
      input: 'hello sim:tokens=7',
      max_output_tokens: 100,
      metadata: { ticket: 't-1' },
    });
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'claude-haiku',
      instructions: 'Be brief.',
      metadata: { ticket: 't-1' },
      max_output_tokens: 100,
      store: true,
      background: false,
      error: null,
      usage: { output_tokens: 7 },
    });
    expect(response.output_text.split(' ')).toHaveLength(7);
    expect(response.output[0]).toMatchObject({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: response.output_text }],
    });
    expect(await balanceOf(key)).toMatchObject({ balance: 10 - credits(chargeForTokens(7, 700)), holdsActive: 0 });
    const stored = await client.responses.retrieve(response.id);
    expect(stored).toMatchObject({
      id: response.id,
      status: 'completed',
      output_text: response.output_text,
      metadata: { ticket: 't-1' },
      usage: { output_tokens: 7 },
    });
    // A generation like every other: group A lists it, with its hold and charge.
    const listed = (await h.call('GET', '/api/v1/generations?kind=chat', { key })).json<{ data: GroupAGeneration[] }>();
    expect(listed.data.map((g) => g.id)).toContain(response.id);
    expect(await generationA(key, response.id)).toMatchObject({
      kind: 'chat',
      status: 'succeeded',
      creditsQuoted: credits(chargeForTokens(100, 700)),
      creditsCharged: credits(chargeForTokens(7, 700)),
      text: response.output_text,
    });
  });

  it('streams the typed events the SDK parses, and client.responses.stream() accumulates them into finalResponse()', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = sdk(key);
    const stream = await client.responses.create({
      model: 'gpt-5.5',
      input: [{ role: 'user', content: 'tell me sim:tokens=12' }],
      stream: true,
    });
    const types: string[] = [];
    const deltas: string[] = [];
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') deltas.push(event.delta);
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(types.filter((t) => t !== 'response.output_text.delta')).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(deltas).toHaveLength(12);
    expect(completed).toMatchObject({
      status: 'completed',
      usage: { output_tokens: 12 },
      output: [{ content: [{ text: deltas.join('') }] }],
    });
    expect(await settled(key)).toMatchObject({ balance: 10 - credits(chargeForTokens(12, 1500)) });

    const helper = client.responses.stream({
      model: 'claude-haiku',
      input: 'again sim:tokens=5',
      max_output_tokens: 5,
    });
    let seen = '';
    helper.on('response.output_text.delta', (e) => (seen = e.snapshot));
    const final = await helper.finalResponse();
    // Stopped at max_output_tokens: incomplete, as OpenAI says it, and charged exactly those.
    expect(final).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      usage: { output_tokens: 5 },
    });
    expect(final.output_text).toBe(seen);
    expect(final.output_text.split(' ')).toHaveLength(5);
  });

  it('a streamed response aborted after a few deltas is charged for those tokens only', async () => {
    const { key } = await h.account({ credits: 10 });
    const stream = await sdk(key).responses.create({
      model: 'claude-sonnet',
      input: 'a long story sim:tokens=40 sim:pace=250',
      stream: true,
      max_output_tokens: 40,
    });
    let received = 0;
    let id = '';
    for await (const event of stream) {
      if (event.type === 'response.created') id = event.response.id;
      if (event.type === 'response.output_text.delta') received++;
      if (received === 4) break; // the SDK aborts the request
    }
    await settled(key);
    const g = await generationA(key, id);
    expect(g).toMatchObject({
      status: 'succeeded',
      params: { outputTokens: 4 },
      creditsCharged: credits(chargeForTokens(4, 2000)),
    });
    expect((await balanceOf(key)).balance).toBe(10 - credits(chargeForTokens(4, 2000)));
  });

  it('background: answers queued at once, is polled with retrieve, and cancel releases the hold; another runs to completion, billed per token', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = sdk(key);
    const slow = await client.responses.create({
      model: 'claude-opus',
      input: 'think long sim:delay=8000 sim:tokens=3',
      background: true,
      max_output_tokens: 1000,
    });
    expect(slow).toMatchObject({ status: 'queued', background: true, output: [] });
    expect(await balanceOf(key)).toMatchObject({ holdsActive: credits(chargeForTokens(1000, 3500)) });
    expect(['queued', 'in_progress']).toContain((await client.responses.retrieve(slow.id)).status);
    const cancelled = await client.responses.cancel(slow.id);
    expect(cancelled).toMatchObject({ id: slow.id, status: 'cancelled', usage: null });
    expect(await client.responses.cancel(slow.id)).toMatchObject({ status: 'cancelled' });
    expect(await balanceOf(key)).toMatchObject({ balance: 10, holdsActive: 0 });

    const quick = await client.responses.create({
      model: 'claude-haiku',
      input: 'sim:delay=200 sim:tokens=6',
      background: true,
    });
    const done = await eventually(async () => {
      const r = await client.responses.retrieve(quick.id);
      return r.status === 'completed' ? r : undefined;
    });
    expect(done.output_text.split(' ')).toHaveLength(6);
    expect(done.usage?.output_tokens).toBe(6);
    expect(await settled(key)).toMatchObject({ balance: 10 - credits(chargeForTokens(6, 700)) });
    // Only a background response can be cancelled; a finished one is 409.
    await expect(client.responses.cancel(quick.id)).rejects.toMatchObject({ status: 409, type: 'generation_finished' });
  });

  it('previous_response_id continues the account’s own stored response; another account’s id is 404, and so is one made with store: false', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const client = sdk(key, { maxRetries: 0 });
    const first = await client.responses.create({
      model: 'claude-haiku',
      instructions: 'Answer in riddles.',
      input: 'my name is Ada',
    });
    const second = await client.responses.create({
      model: 'claude-haiku',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'what is my name? sim:tokens=3' }] }],
      previous_response_id: first.id,
    });
    expect(second).toMatchObject({ status: 'completed', previous_response_id: first.id, instructions: null });
    const prompt = (
      await h.pool.query<{ prompt: string }>('SELECT prompt FROM generations WHERE id = $1 AND account_id = $2', [
        second.id,
        accountId,
      ])
    ).rows[0]!.prompt;
    // The earlier turn and its reply come first; the earlier instructions are not carried over.
    expect(prompt).toBe(`user: my name is Ada\nassistant: ${first.output_text}\nuser: what is my name? sim:tokens=3`);

    const other = sdk((await h.account({ credits: 10 })).key, { maxRetries: 0 });
    await expect(other.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      other.responses.create({ model: 'claude-haiku', input: 'hi', previous_response_id: first.id }),
    ).rejects.toMatchObject({ status: 404, type: 'not_found', param: 'previous_response_id' });
    await expect(other.responses.cancel(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);

    const unstored = await client.responses.create({
      model: 'claude-haiku',
      input: 'forget me sim:tokens=2',
      store: false,
    });
    expect(unstored).toMatchObject({ store: false });
    await expect(client.responses.retrieve(unstored.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      client.responses.create({ model: 'claude-haiku', input: 'hi', previous_response_id: unstored.id }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('an Idempotency-Key repeat answers the same response without a second hold, whole or streamed', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const client = sdk(key);
    const headers = { 'Idempotency-Key': 'response-1' };
    const body = { model: 'glm-5.1', input: 'once sim:tokens=4' };
    const a = await client.responses.create(body, { headers });
    const b = await client.responses.create(body, { headers });
    expect(b).toMatchObject({ id: a.id, output_text: a.output_text, usage: { output_tokens: 4 } });
    const streamed = await client.responses
      .stream({ ...body, stream: true }, { headers: { 'Idempotency-Key': 'response-2' } })
      .finalResponse();
    const again = await client.responses
      .stream({ ...body, stream: true }, { headers: { 'Idempotency-Key': 'response-2' } })
      .finalResponse();
    expect(again).toMatchObject({ id: streamed.id, output_text: streamed.output_text, usage: { output_tokens: 4 } });
    const bg = await client.responses.create(
      { ...body, background: true },
      { headers: { 'Idempotency-Key': 'response-3' } },
    );
    expect(
      (await client.responses.create({ ...body, background: true }, { headers: { 'Idempotency-Key': 'response-3' } }))
        .id,
    ).toBe(bg.id);
    expect(await generationCount(accountId)).toBe(3);
    expect(await settled(key)).toMatchObject({ balance: 10 - 3 * credits(chargeForTokens(4, 400)) });
  });

  it('refuses what the simulator cannot serve with a 400 naming the field; nothing held', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = sdk(key, { maxRetries: 0 });
    const refused = async (call: Promise<unknown>, param: string, message: RegExp) => {
      const err = (await call.catch((e: unknown) => e)) as APIError;
      expect(err, param).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err).toMatchObject({ type: 'invalid_request_error', param });
      expect(err.message).toMatch(message);
    };
    await refused(
      client.responses.create({
        model: 'claude-haiku',
        input: [
          { role: 'user', content: [{ type: 'input_image', image_url: 'https://x.test/a.png', detail: 'auto' }] },
        ],
      }),
      'input.0.content.0.type',
      /only text parts/,
    );
    await refused(
      client.responses.create({ model: 'claude-haiku', input: 'hi', text: { format: { type: 'yaml' } as never } }),
      'text.format.type',
      /text\.format\.type must be text, json_object or json_schema/,
    );
    await refused(
      client.responses.create({ model: 'claude-haiku', input: 'hi', conversation: 'conv_1' }),
      'conversation',
      /previous_response_id/,
    );
    await refused(
      client.responses.create({ model: 'claude-haiku', input: 'hi', max_output_tokens: 1_000_000 }),
      'max_output_tokens',
      /max_output_tokens/,
    );
    await refused(
      client.responses.create({ model: 'claude-haiku', input: 'hi', background: true, stream: true }),
      'stream',
      /background/,
    );
    await refused(client.responses.create({ model: 'claude-haiku', input: 'hi', bogus: 1 } as never), 'bogus', /bogus/);
    const made = await client.responses.create({ model: 'claude-haiku', input: 'sim:tokens=1' });
    await refused(client.responses.cancel(made.id), 'id', /background/);
    expect(await balanceOf(key)).toMatchObject({ holdsActive: 0 });
  });
});

describe('structured output and function tools on the simulator (the embedded default)', () => {
  const recipe = {
    type: 'object',
    properties: {
      title: { type: 'string' },
      minutes: { type: 'integer', minimum: 1, maximum: 240 },
      steps: { type: 'array', items: { type: 'string' }, minItems: 2 },
      diet: { anyOf: [{ type: 'string', enum: ['vegan', 'any'] }, { type: 'null' }] },
    },
    required: ['title', 'minutes', 'steps', 'diet'],
    additionalProperties: false,
  };
  const ajv = new Ajv({ strict: false });

  it('chat completions: json_schema (strict) and json_object answer JSON, valid against the schema; charged the tokens in usage', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = sdk(key);
    const reply = await client.chat.completions.create({
      model: 'claude-haiku',
      messages: [{ role: 'user', content: 'A soup recipe' }],
      response_format: { type: 'json_schema', json_schema: { name: 'recipe', schema: recipe, strict: true } },
    });
    const value: unknown = JSON.parse(reply.choices[0]!.message.content!);
    expect(ajv.validate(recipe, value), ajv.errorsText()).toBe(true);
    const again = await client.chat.completions.create({
      model: 'claude-haiku',
      messages: [{ role: 'user', content: 'A soup recipe' }],
      response_format: { type: 'json_schema', json_schema: { name: 'recipe', schema: recipe, strict: true } },
    });
    expect(again.choices[0]!.message.content).toBe(reply.choices[0]!.message.content);
    const object = await client.chat.completions.create({
      model: 'gpt-5.5',
      messages: [{ role: 'user', content: 'Answer in JSON' }],
      response_format: { type: 'json_object' },
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let completionTokens = 0;
    for await (const chunk of object) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.choices[0]?.delta?.content) chunks++;
      completionTokens = chunk.usage?.completion_tokens ?? completionTokens;
    }
    expect(JSON.parse(text)).toMatchObject({ answer: expect.any(String) });
    expect(completionTokens).toBe(chunks);
    const charged = chargeForTokens(reply.usage!.completion_tokens, 700) * 2 + chargeForTokens(completionTokens, 1500);
    expect((await settled(key)).balance).toBe(10 - credits(charged));
  });

  it('responses: text.format json_schema is answered as JSON and echoed back', async () => {
    const { key } = await h.account({ credits: 10 });
    const response = await sdk(key).responses.create({
      model: 'claude-sonnet',
      input: 'A soup recipe',
      text: { format: { type: 'json_schema', name: 'recipe', schema: recipe, strict: true } },
    });
    expect(ajv.validate(recipe, JSON.parse(response.output_text)), ajv.errorsText()).toBe(true);
    expect(response.text?.format).toMatchObject({ type: 'json_schema', name: 'recipe', strict: true });
    expect((await sdk(key).responses.retrieve(response.id)).text?.format).toMatchObject({ type: 'json_schema' });
  });

  it('tools: required calls one with arguments valid against its schema, streamed in pieces; its result is answered in words', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = sdk(key);
    const weather = {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
          required: ['city', 'unit'],
          additionalProperties: false,
        },
      },
    };
    const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];
    const asked = await client.chat.completions.create({
      model: 'claude-haiku',
      messages,
      tools: [weather],
      tool_choice: 'required',
    });
    expect(asked.choices[0]!.finish_reason).toBe('tool_calls');
    const call = asked.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && call.function.name).toBe('get_weather');
    const args: unknown = JSON.parse(call.type === 'function' ? call.function.arguments : '');
    expect(ajv.validate(weather.function.parameters, args), ajv.errorsText()).toBe(true);

    const stream = await client.chat.completions.create({
      model: 'claude-haiku',
      messages: [{ role: 'user', content: 'weather please sim:tool=get_weather' }],
      tools: [weather],
      stream: true,
    });
    let pieces = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments) pieces++;
    expect(pieces).toBeGreaterThan(2);

    const answer = await client.chat.completions.create({
      model: 'claude-haiku',
      messages: [
        ...messages,
        asked.choices[0]!.message,
        { role: 'tool', tool_call_id: call.id, content: '18 °C and sunny' },
      ],
      tools: [weather],
    });
    expect(answer.choices[0]!.finish_reason).toBe('stop');
    expect(answer.choices[0]!.message.content).toBeTruthy();
    // auto, and a prompt that names no tool: words, not a call.
    const plain = await client.chat.completions.create({
      model: 'claude-haiku',
      messages: [{ role: 'user', content: 'hello' }],
      tools: [weather],
    });
    expect(plain.choices[0]!.message.tool_calls).toBeUndefined();
  });

  it('responses: item_reference to the account’s stored items, input_items lists them, DELETE hides the response but keeps the record', async () => {
    const { key } = await h.account({ credits: 10 });
    const other = await h.account({ credits: 10 });
    const client = sdk(key, { maxRetries: 0 });
    const first = await client.responses.create({ model: 'claude-haiku', input: 'Name a colour sim:tokens=3' });
    const messageItem = first.output[0]!;
    expect(messageItem.type).toBe('message');
    // The AI SDK's default second turn: the previous reply as a reference, reasoning items handed back.
    const second = await client.responses.create({
      model: 'claude-haiku',
      input: [
        { role: 'user', content: 'Name a colour sim:tokens=3' },
        { type: 'item_reference', id: messageItem.id! },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { role: 'user', content: 'And another sim:tokens=4' },
      ],
    });
    expect(second.status).toBe('completed');
    const items = [];
    for await (const item of client.responses.inputItems.list(second.id, { order: 'asc', limit: 2 })) items.push(item);
    expect(items.map((i) => i.type)).toEqual(['message', 'message', 'message']);
    expect(items[1]).toMatchObject({ role: 'assistant', content: [{ type: 'output_text', text: first.output_text }] });
    // An input item is referenced the same way.
    const third = await client.responses.create({
      model: 'claude-haiku',
      input: [{ type: 'item_reference', id: items[2]!.id }],
    });
    expect(third.status).toBe('completed');

    const foreign = (await sdk(other.key, { maxRetries: 0 })
      .responses.create({ model: 'claude-haiku', input: [{ type: 'item_reference', id: messageItem.id! }] })
      .catch((e: unknown) => e)) as APIError;
    expect(foreign).toBeInstanceOf(OpenAI.NotFoundError);
    expect(foreign).toMatchObject({ param: 'input', message: expect.stringContaining(messageItem.id!) });

    await client.responses.delete(first.id);
    await expect(client.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      client.responses.create({ model: 'claude-haiku', input: [{ type: 'item_reference', id: messageItem.id! }] }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.responses.delete(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await generationA(key, first.id)).toMatchObject({
      status: 'succeeded',
      creditsCharged: credits(chargeForTokens(3, 700)),
    });
  });
});

describe('images', () => {
  it('n = 2 as URLs: two generations, each charged, each a PNG', async () => {
    const { key, accountId } = await h.account({ credits: 20 });
    const images = await sdk(key).images.generate({ model: 'flux', prompt: 'a lighthouse', n: 2, size: '1792x1024' });
    expect(images.data).toHaveLength(2);
    for (const image of images.data!) {
      const file = await download(h, image.url!);
      expect(file.status).toBe(200);
      expect(file.body.subarray(1, 4).toString()).toBe('PNG');
    }
    expect(await generationCount(accountId)).toBe(2);
    expect(await balanceOf(key)).toMatchObject({ balance: 14, holdsActive: 0 });
  });

  it('n = 2 as b64_json, hd: the high variant where one is listed, else twice the price', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const hd = await client.images.generate({
      model: 'gpt-image-1',
      prompt: 'a fox',
      n: 2,
      quality: 'hd',
      response_format: 'b64_json',
    });
    expect(hd.data).toHaveLength(2);
    for (const image of hd.data!) expect(Buffer.from(image.b64_json!, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(await balanceOf(key)).toMatchObject({ balance: 100 - 2 * 17 });
    await client.images.generate({ model: 'image-nano-pro', prompt: 'a fox', quality: 'hd' });
    expect(await balanceOf(key)).toMatchObject({ balance: 100 - 2 * 17 - 2 * 17 });
  });

  it('gpt-image models answer base64 when no response_format is asked (others a URL); output_format re-encodes before the charge', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const gpt = await client.images.generate({ model: 'gpt-image-1', prompt: 'a fox' });
    expect(gpt.data![0]!.url).toBeUndefined();
    expect(Buffer.from(gpt.data![0]!.b64_json!, 'base64').subarray(1, 4).toString()).toBe('PNG');
    const flux = await client.images.generate({ model: 'flux', prompt: 'a fox' });
    expect(flux.data![0]!.url).toMatch(/^http/);
    const jpeg = await client.images.generate({ model: 'gpt-image-1', prompt: 'a fox', output_format: 'jpeg' });
    expect((await sharp(Buffer.from(jpeg.data![0]!.b64_json!, 'base64')).metadata()).format).toBe('jpeg');
    const webp = await client.images.generate({
      model: 'flux',
      prompt: 'a fox',
      output_format: 'webp',
      response_format: 'url',
    });
    const file = await download(h, webp.data![0]!.url!);
    expect(file.contentType).toBe('image/webp');
    expect(await balanceOf(key)).toMatchObject({ balance: 100 - 6 - 3 - 6 - 3, holdsActive: 0 });
  });

  it('client.images.edit: a multipart image and mask, edited where the mask is transparent; base64 for gpt-image; JSON by file_id; priced per image', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const size = 64;
    const image = await sharp({ create: { width: size, height: size, channels: 3, background: '#2040a0' } })
      .png()
      .toBuffer();
    // Transparent (to edit) on the left half, opaque on the right.
    const mask = await sharp({
      create: { width: size, height: size, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 1 } },
    })
      .composite([
        {
          input: await sharp({
            create: { width: size / 2, height: size, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 1 } },
          })
            .png()
            .toBuffer(),
          left: 0,
          top: 0,
          blend: 'dest-out',
        },
      ])
      .png()
      .toBuffer();
    const edited = await client.images.edit({
      model: 'gpt-image-1',
      prompt: 'paint the left half',
      image: await toFile(image, 'photo.png', { type: 'image/png' }),
      mask: await toFile(mask, 'mask.png', { type: 'image/png' }),
    });
    const out = await sharp(Buffer.from(edited.data![0]!.b64_json!, 'base64'))
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect(out.info).toMatchObject({ width: size, height: size });
    const pixel = (x: number, y: number) => [
      ...out.data.subarray((y * size + x) * out.info.channels, (y * size + x) * out.info.channels + 3),
    ];
    expect(pixel(size - 4, 10)).toEqual([0x20, 0x40, 0xa0]);
    expect(pixel(4, 10)).not.toEqual([0x20, 0x40, 0xa0]);

    const two = await client.images.edit({
      model: 'image-nano-banana',
      prompt: 'combine them',
      image: [await toFile(image, 'a.png', { type: 'image/png' }), await toFile(image, 'b.png', { type: 'image/png' })],
      response_format: 'url',
      n: 2,
    });
    expect(two.data).toHaveLength(2);
    const byId = await client.post<{ data: { b64_json: string }[] }>('/images/edits', {
      body: {
        model: 'gpt-image-1',
        prompt: 'again',
        images: [{ file_id: (edited.data![0] as { generation_id?: string }).generation_id }],
      },
    });
    expect(byId.data).toHaveLength(1);
    // Another account's image is no file of this one.
    await expect(
      client.post('/images/edits', {
        body: { model: 'gpt-image-1', prompt: 'x', images: [{ file_id: editSource.generation_id }] },
      }),
    ).rejects.toMatchObject({ status: 400, param: 'image' });
    expect(await balanceOf(key)).toMatchObject({ balance: 100 - 6 - 2 * 8 - 6, holdsActive: 0 });

    const refused = (await client.images
      .edit({ model: 'flux', prompt: 'x', image: await toFile(image, 'a.png', { type: 'image/png' }) })
      .catch((e: unknown) => e)) as APIError;
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refused).toMatchObject({ param: 'model', message: expect.stringContaining('does not edit images') });
    const notImage = (await client.images
      .edit({ model: 'gpt-image-1', prompt: 'x', image: await toFile(Buffer.from('not an image'), 'a.png') })
      .catch((e: unknown) => e)) as APIError;
    expect(notImage).toMatchObject({ status: 400, param: 'image' });
    expect(await balanceOf(key)).toMatchObject({ balance: 100 - 6 - 2 * 8 - 6 });
  });

  it('a repeat with the same Idempotency-Key answers the same images without a second hold', async () => {
    const { key, accountId } = await h.account({ credits: 20 });
    const client = sdk(key);
    const opts = { headers: { 'Idempotency-Key': 'images-1' } };
    const first = await client.images.generate({ model: 'kie-z-image', prompt: 'dunes', n: 3 }, opts);
    const again = await client.images.generate({ model: 'kie-z-image', prompt: 'dunes', n: 3 }, opts);
    const ids = (r: typeof first) => r.data!.map((d) => (d as { generation_id?: string }).generation_id);
    expect(ids(again)).toEqual(ids(first));
    expect(await generationCount(accountId)).toBe(3);
    expect(await balanceOf(key)).toMatchObject({ balance: 11 });
  });
});

describe('video, both spellings of one job', () => {
  it('client.videos: create (multipart), retrieve until completed, downloadContent', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = sdk(key);
    const created = await client.videos.create({
      model: 'kling-2.1-pro',
      prompt: 'waves sim:delay=300',
      seconds: '8',
      size: '1280x720',
    });
    expect(created).toMatchObject({ object: 'video', model: 'kling', seconds: '8', size: '1280x720', error: null });
    expect(['queued', 'in_progress']).toContain(created.status);
    const done = await eventually(async () => {
      const v = await client.videos.retrieve(created.id);
      return v.status === 'completed' ? v : undefined;
    });
    expect(done).toMatchObject({ progress: 100, completed_at: expect.any(Number) });
    const content = await client.videos.downloadContent(created.id);
    const bytes = Buffer.from(await content.arrayBuffer());
    expect(bytes.subarray(0, 4)).toEqual(Buffer.from([0x1a, 0x45, 0xdf, 0xa3])); // WebM (EBML)
    // The same generation through group A, charged 8 s × 8.5 credits.
    expect(await generationA(key, created.id)).toMatchObject({
      kind: 'video',
      status: 'succeeded',
      creditsCharged: 68,
    });
  });

  it('the spec’s /v1/video/generations: create and poll; the same id reads as a video of client.videos', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = sdk(key);
    const created = await client.post<{
      id: string;
      status: string;
      model: string;
      duration: number;
      credits_quoted: number;
    }>('/video/generations', {
      body: { model: 'minimax-video-01', prompt: 'a paper boat sim:delay=200', duration: 10 },
    });
    expect(created).toMatchObject({ model: 'hailuo', duration: 10, credits_quoted: 50 });
    const done = await eventually(async () => {
      const g = await client.get<{ status: string; output_url: string | null; credits_charged: number }>(
        `/video/generations/${created.id}`,
      );
      return g.status === 'succeeded' ? g : undefined;
    });
    expect(done).toMatchObject({ credits_charged: 50, output_url: expect.stringContaining('/files/') });
    expect(await client.videos.retrieve(created.id)).toMatchObject({ status: 'completed', seconds: '10' });
  });
});

describe('video variants and remix', () => {
  const JPEG = Buffer.from([0xff, 0xd8, 0xff]);
  const completed = (client: OpenAI, id: string) =>
    eventually(async () => {
      const v = await client.videos.retrieve(id);
      return v.status === 'completed' ? v : undefined;
    });

  it('downloadContent with variant thumbnail and spritesheet: JPEG images of the video’s first frame and of a grid of its frames; an unknown variant is a 400', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = sdk(key);
    const created = await client.videos.create({
      model: 'wan-2.1',
      prompt: 'a kite sim:delay=100',
      seconds: '8',
      size: '1280x720',
    });
    await completed(client, created.id);
    const video = Buffer.from(
      await (await client.videos.downloadContent(created.id, { variant: 'video' })).arrayBuffer(),
    );
    expect(video.subarray(0, 4)).toEqual(Buffer.from([0x1a, 0x45, 0xdf, 0xa3]));

    const thumbnail = await client.videos.downloadContent(created.id, { variant: 'thumbnail' });
    expect(thumbnail.headers.get('content-type')).toBe('image/jpeg');
    const thumb = Buffer.from(await thumbnail.arrayBuffer());
    expect(thumb.subarray(0, 3)).toEqual(JPEG);
    // The simulator renders 16:9 previews 320 × 176 (sides in multiples of 16).
    expect(await sharp(thumb).metadata()).toMatchObject({ format: 'jpeg', width: 320, height: 176 });

    const sheet = Buffer.from(
      await (await client.videos.downloadContent(created.id, { variant: 'spritesheet' })).arrayBuffer(),
    );
    expect(sheet.subarray(0, 3)).toEqual(JPEG);
    // 8 s at 6 fps is 48 frames: 16 of them, 4 by 4, each 160 × 88.
    expect(await sharp(sheet).metadata()).toMatchObject({ format: 'jpeg', width: 640, height: 352 });

    // The spec's spelling and group A show the same previews as signed URLs.
    const spec = await client.get<{ thumbnail_url: string | null; spritesheet_url: string | null }>(
      `/video/generations/${created.id}`,
    );
    expect((await download(h, spec.thumbnail_url!)).body.equals(thumb)).toBe(true);
    expect((await download(h, spec.spritesheet_url!)).body.equals(sheet)).toBe(true);
    const a = (await h.call('GET', `/api/v1/generations/${created.id}`, { key })).json<{ thumbnailUrl: string }>();
    expect((await download(h, a.thumbnailUrl)).body.equals(thumb)).toBe(true);

    const err = (await client.videos
      .downloadContent(created.id, { variant: 'poster' as 'thumbnail' })
      .catch((e: unknown) => e)) as APIError;
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 400 });
    // Another account's video is not found, whichever variant is asked.
    const stranger = sdk((await h.account({ credits: 1 })).key);
    await expect(stranger.videos.downloadContent(created.id, { variant: 'thumbnail' })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
  });

  it('client.videos.remix holds, charges and lists like a new video (same model, seconds and size); Idempotency-Key answers it again; 404 for another account’s id, 409 before it completed', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    // 4 s is clamped to kling's 5 s: 42.5 credits.
    const source = await client.videos.create({
      model: 'kling-2.1-pro',
      prompt: 'waves sim:delay=100',
      seconds: '4',
      size: '720x1280',
    });
    await completed(client, source.id);
    expect(await balanceOf(key)).toMatchObject({ balance: 57.5, holdsActive: 0 });

    const remix = await client.videos.remix(
      source.id,
      { prompt: 'the same waves at night sim:delay=4000' },
      { headers: { 'Idempotency-Key': 'remix-b' } },
    );
    expect(remix).toMatchObject({
      object: 'video',
      model: 'kling',
      seconds: '5',
      size: '720x1280',
      remixed_from_video_id: source.id,
      prompt: 'the same waves at night sim:delay=4000',
    });
    expect(['queued', 'in_progress']).toContain(remix.status);
    expect(await balanceOf(key)).toMatchObject({ balance: 15, holdsActive: 42.5 });
    // A repeat with the same Idempotency-Key: the same video, nothing held twice.
    expect(
      (
        await client.videos.remix(
          source.id,
          { prompt: 'the same waves at night sim:delay=4000' },
          { headers: { 'Idempotency-Key': 'remix-b' } },
        )
      ).id,
    ).toBe(remix.id);
    expect(await balanceOf(key)).toMatchObject({ balance: 15, holdsActive: 42.5 });
    // Not completed yet: it cannot be remixed itself.
    const early = (await client.videos.remix(remix.id, { prompt: 'x' }).catch((e: unknown) => e)) as APIError;
    expect(early).toBeInstanceOf(OpenAI.ConflictError);
    expect(early.error).toMatchObject({ type: 'generation_not_succeeded' });

    const done = await completed(client, remix.id);
    expect(done).toMatchObject({ remixed_from_video_id: source.id });
    expect(await settled(key)).toMatchObject({ balance: 15, holdsActive: 0 });
    expect(await generationA(key, remix.id)).toMatchObject({
      kind: 'video',
      status: 'succeeded',
      creditsCharged: 42.5,
      params: { remixedFrom: source.id, aspect: '9:16' },
    });
    expect((await client.videos.list()).data.map((v) => v.id)).toEqual([remix.id, source.id]);
    const thumb = Buffer.from(
      await (await client.videos.downloadContent(remix.id, { variant: 'thumbnail' })).arrayBuffer(),
    );
    expect(await sharp(thumb).metadata()).toMatchObject({ format: 'jpeg', width: 176, height: 320 });

    // Too little left for a third: 402, as for any video.
    await expect(client.videos.remix(source.id, { prompt: 'once more' })).rejects.toBeInstanceOf(OpenAI.APIError);
    const stranger = sdk((await h.account({ credits: 100 })).key);
    const notFound = (await stranger.videos
      .remix(source.id, { prompt: 'mine now' })
      .catch((e: unknown) => e)) as APIError;
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await balanceOf((await h.account({ credits: 1 })).key)).toMatchObject({ holdsActive: 0 });
  });

  it('the spec’s spelling: POST /v1/video/generations/{id}/remix, priced as the source ran', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = sdk(key);
    const created = await client.post<{ id: string }>('/video/generations', {
      body: { model: 'minimax-video-01', prompt: 'a paper boat sim:delay=100', duration: 10 },
    });
    await completed(client, created.id);
    const remix = await client.post<{
      id: string;
      model: string;
      duration: number;
      credits_quoted: number;
      remixed_from: string;
    }>(`/video/generations/${created.id}/remix`, { body: { prompt: 'a paper plane sim:delay=100' } });
    expect(remix).toMatchObject({ model: 'hailuo', duration: 10, credits_quoted: 50, remixed_from: created.id });
    expect(await balanceOf(key)).toMatchObject({ balance: 100, holdsActive: 50 });
    expect(await settled(key)).toMatchObject({ balance: 100 });
  });
});

describe('video extensions and edits (client.videos.extend, client.videos.edit)', () => {
  const completed = (client: OpenAI, id: string) =>
    eventually(async () => {
      const v = await client.videos.retrieve(id);
      return v.status === 'completed' ? v : undefined;
    });
  const fileOf = async (client: OpenAI, id: string) =>
    Buffer.from(await (await client.videos.downloadContent(id)).arrayBuffer());
  const decoded = (frame: Uint8Array) => sharp(webpOfVp8Keyframe(frame)).removeAlpha().raw().toBuffer();
  const distance = (a: Buffer, b: Buffer) => a.reduce((sum, v, i) => sum + Math.abs(v - b[i]!), 0) / a.length;

  it('extend: one new video priced as the seconds added (clamped), held before it runs, charged on success, released on failure; its file continues the source from its last frame', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = sdk(key);
    // seedance-lite: 3 to 12 s at 3 credits a second in 720p; the source is 4 s (12 credits).
    const source = await client.videos.create({ model: 'seedance-lite', prompt: 'waves sim:delay=100', seconds: '4' });
    await completed(client, source.id);
    expect(await balanceOf(key)).toMatchObject({ balance: 188, holdsActive: 0 });

    const ask = { video: { id: source.id }, prompt: 'the waves calm down sim:delay=3000', seconds: '8' as const };
    const headers = { headers: { 'Idempotency-Key': 'extend-b' } };
    const extension = await client.videos.extend(ask, headers);
    // Its seconds are the whole length, as OpenAI gave an extension's; its source is named.
    expect(extension).toMatchObject({
      object: 'video',
      model: 'seedance-lite',
      seconds: '12',
      remixed_from_video_id: source.id,
    });
    expect(['queued', 'in_progress']).toContain(extension.status);
    expect(await balanceOf(key)).toMatchObject({ balance: 164, holdsActive: 24 });
    expect((await client.videos.extend(ask, headers)).id).toBe(extension.id);
    expect(await balanceOf(key)).toMatchObject({ balance: 164, holdsActive: 24 });
    const early = (await client.videos
      .extend({ ...ask, video: { id: extension.id } })
      .catch((e: unknown) => e)) as APIError;
    expect(early).toBeInstanceOf(OpenAI.ConflictError);
    expect(early.error).toMatchObject({ type: 'generation_not_succeeded' });

    // 20 s (OpenAI's extensions took up to 20; the SDK's type lists fewer) is clamped to the
    // model's 12: 36 held, then released when the run fails.
    const failing = await client.videos.extend({
      video: { id: source.id },
      prompt: 'sim:fail',
      seconds: '20' as VideoSeconds,
    });
    expect(await generationA(key, failing.id)).toMatchObject({
      creditsQuoted: 36,
      params: { seconds: 12, stitchedSeconds: 16 },
    });
    await eventually(async () => ((await client.videos.retrieve(failing.id)).status === 'failed' ? true : undefined));

    expect(await completed(client, extension.id)).toMatchObject({ seconds: '12', remixed_from_video_id: source.id });
    expect(await settled(key)).toMatchObject({ balance: 164, holdsActive: 0 });
    expect(await generationA(key, extension.id)).toMatchObject({
      status: 'succeeded',
      creditsQuoted: 24,
      creditsCharged: 24,
      params: { seconds: 8, stitchedSeconds: 12, extendedFrom: source.id, resolution: '720p' },
    });
    expect(await generationA(key, failing.id)).toMatchObject({ status: 'failed', creditsCharged: 0 });

    // The file: the source's 24 frames as they were, then 48 more that start from its last one.
    const before = vp8Keyframes(await fileOf(client, source.id));
    const after = vp8Keyframes(await fileOf(client, extension.id));
    expect([before.length, after.length]).toEqual([24, 72]);
    before.forEach((f, i) => expect(Buffer.from(after[i]!).equals(Buffer.from(f))).toBe(true));
    const [last, next, end] = await Promise.all([before[23]!, after[24]!, after[71]!].map(decoded));
    expect(distance(next!, last!)).toBeLessThan(3);
    expect(distance(end!, last!)).toBeGreaterThan(15);
    expect((await client.videos.list()).data.map((v) => v.id)).toEqual([failing.id, extension.id, source.id]);
  });

  it('edit: an edited copy at the source’s length, priced as a run of it; every frame changed', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const source = await client.videos.create({ model: 'seedance-lite', prompt: 'a kite sim:delay=100', seconds: '4' });
    await completed(client, source.id);
    const edit = await client.videos.edit({ video: { id: source.id }, prompt: 'a kite in snow sim:delay=100' });
    expect(edit).toMatchObject({ seconds: '4', remixed_from_video_id: source.id, model: 'seedance-lite' });
    expect(await balanceOf(key)).toMatchObject({ balance: 76, holdsActive: 12 });
    await completed(client, edit.id);
    expect(await settled(key)).toMatchObject({ balance: 76 });
    expect(await generationA(key, edit.id)).toMatchObject({
      creditsCharged: 12,
      params: { seconds: 4, editedFrom: source.id },
    });

    const before = vp8Keyframes(await fileOf(client, source.id));
    const after = vp8Keyframes(await fileOf(client, edit.id));
    expect(after).toHaveLength(before.length);
    for (let i = 0; i < before.length; i++)
      expect(
        distance(...((await Promise.all([decoded(before[i]!), decoded(after[i]!)])) as [Buffer, Buffer])),
      ).toBeGreaterThan(5);
  });

  it('refusals hold nothing: 404 for another account’s video, 400 for bad seconds or no video, an uploaded file refused', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const source = await client.videos.create({ model: 'seedance-lite', prompt: 'x sim:delay=100', seconds: '4' });
    await completed(client, source.id);
    const stranger = await h.account({ credits: 100 });
    const notFound = (await sdk(stranger.key)
      .videos.extend({ video: { id: source.id }, prompt: 'mine now', seconds: '4' })
      .catch((e: unknown) => e)) as APIError;
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError);
    await expect(sdk(stranger.key).videos.edit({ video: { id: source.id }, prompt: 'x' })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    expect(await balanceOf(stranger.key)).toMatchObject({ balance: 100, holdsActive: 0 });

    for (const seconds of ['0', '-4', '2.5', 'soon']) {
      const bad = (await client.videos
        .extend({ video: { id: source.id }, prompt: 'x', seconds: seconds as '4' })
        .catch((e: unknown) => e)) as APIError;
      expect(bad, seconds).toBeInstanceOf(OpenAI.BadRequestError);
      expect(bad.error).toMatchObject({ param: 'seconds' });
    }
    const upload = (await client.videos
      .edit({ video: await toFile(Buffer.from('a video'), 'clip.mp4', { type: 'video/mp4' }), prompt: 'x' })
      .catch((e: unknown) => e)) as APIError;
    expect(upload).toBeInstanceOf(OpenAI.BadRequestError);
    expect(upload.error).toMatchObject({ param: 'video' });
    const none = (await client.post('/videos/edits', { body: { prompt: 'x' } }).catch((e: unknown) => e)) as APIError;
    expect(none.error).toMatchObject({ param: 'video' });
    expect(await balanceOf(key)).toMatchObject({ balance: 88, holdsActive: 0 });
  });

  it('the spec’s spelling extends by previous_job_id, as OpenRouter takes it: `duration` more seconds of the same model', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = sdk(key);
    type VideoGeneration = {
      id: string;
      model: string;
      duration: number;
      credits_quoted: number;
      remixed_from: string;
    };
    // minimax-video-01 is hailuo: 6 to 10 s at 5 credits a second in 720p.
    const source = await client.post<VideoGeneration>('/video/generations', {
      body: { model: 'minimax-video-01', prompt: 'a paper boat sim:delay=100', duration: 5 },
    });
    await completed(client, source.id);
    const extension = await client.post<VideoGeneration>('/video/generations', {
      body: {
        model: 'minimax-video-01',
        prompt: 'it sails on sim:delay=100',
        duration: 10,
        previous_job_id: source.id,
      },
    });
    expect(extension).toMatchObject({ model: 'hailuo', duration: 16, credits_quoted: 50, remixed_from: source.id });
    expect(await generationA(key, extension.id)).toMatchObject({ params: { seconds: 10, extendedFrom: source.id } });
    expect(await settled(key)).toMatchObject({ balance: 120 });

    const refusal = async (body: object) =>
      (await client.post('/video/generations', { body }).catch((e: unknown) => e)) as APIError;
    const base = { model: 'minimax-video-01', prompt: 'x', previous_job_id: source.id };
    expect((await refusal({ ...base, model: 'kling-2.1-pro' })).error).toMatchObject({ param: 'model' });
    expect((await refusal({ ...base, image_url: 'https://example.com/a.png' })).error).toMatchObject({
      param: 'image_url',
    });
    const missing = await refusal({ ...base, previous_job_id: MISSING });
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.error).toMatchObject({ param: 'previous_job_id' });
    c.conforms(
      await inject(h.app, 'post', '/v1/video/generations', key, { ...base, previous_job_id: MISSING }),
      'post',
      '/v1/video/generations',
      404,
    );
    expect(await balanceOf(key)).toMatchObject({ balance: 120, holdsActive: 0 });
  });

  it('conform to the document: 200, 400, 402, 403, 404, 409, 413', async () => {
    const { key, accountId } = await h.account({ credits: 40, scopes: ['video'] });
    const v = (
      await inject(h.app, 'post', '/v1/videos', key, { model: 'seedance-lite', prompt: 'x sim:delay=100', seconds: 3 })
    ).json<{ id: string }>();
    await eventually(async () =>
      (await inject(h.app, 'get', `/v1/videos/${v.id}`, key)).json<{ status: string }>().status === 'completed'
        ? true
        : undefined,
    );
    const imageKey = (await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['image'] })).json<{
      key: string;
    }>().key;
    const running = (
      await inject(h.app, 'post', '/v1/videos', key, { model: 'seedance-lite', prompt: 'x sim:delay=5000', seconds: 3 })
    ).json<{ id: string }>();
    for (const [path, extra] of [
      ['/v1/videos/extensions', { seconds: 4 }],
      ['/v1/videos/edits', {}],
    ] as const) {
      const body = (id: string, more: object = {}) => ({ video: { id }, prompt: 'x sim:delay=100', ...extra, ...more });
      c.conforms(await inject(h.app, 'post', path, key, body(v.id)), 'post', path, 200);
      c.conforms(await inject(h.app, 'post', path, key, body(v.id, { size: '1280x720' })), 'post', path, 400);
      c.conforms(
        await inject(h.app, 'post', path, key, body(v.id, { prompt: 'x'.repeat(9 * 1024 * 1024) })),
        'post',
        path,
        413,
      );
      c.conforms(await inject(h.app, 'post', path, key, body(MISSING)), 'post', path, 404);
      c.conforms(await inject(h.app, 'post', path, key, body(running.id)), 'post', path, 409);
      c.conforms(await inject(h.app, 'post', path, imageKey, body(v.id)), 'post', path, 403);
    }
    // 9 + 12 + 9 spent of 40: another 12 s is more than is left.
    c.conforms(
      await inject(h.app, 'post', '/v1/videos/extensions', key, { video: { id: v.id }, prompt: 'x', seconds: 12 }),
      'post',
      '/v1/videos/extensions',
      402,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/videos/edits', key, { video: { id: v.id }, prompt: 'x', max_credits: 1 }),
      'post',
      '/v1/videos/edits',
      402,
    );
  });
});

describe('listing videos (client.videos.list)', () => {
  it('pages through every video of the account, whichever door made it, newest first or oldest first; nothing else', async () => {
    const { key } = await h.account({ credits: 500, scopes: ['video', 'image'] });
    const client = sdk(key);
    const viaSdk = await client.videos.create({ model: 'wan-2.1', prompt: 'one sim:delay=100' });
    const viaSpec = await client.post<{ id: string }>('/video/generations', {
      body: { model: 'wan-2.1', prompt: 'two sim:delay=100' },
    });
    const viaGroupA = (
      await h.call('POST', '/api/v1/generate', {
        key,
        body: { kind: 'video', model: 'wan-2.1', prompt: 'three sim:delay=100' },
      })
    ).json<{ id: string }>();
    await client.images.generate({ model: 'flux', prompt: 'not a video' });
    const other = sdk((await h.account({ credits: 100, scopes: ['video'] })).key);
    await other.videos.create({ model: 'wan-2.1', prompt: 'not ours sim:delay=100' });
    const ours = [viaSdk.id, viaSpec.id, viaGroupA.id];

    // The SDK follows has_more and last_id by itself: pages of 2 visit each video once.
    const newestFirst: string[] = [];
    for await (const v of client.videos.list({ limit: 2 })) {
      expect(v).toMatchObject({ object: 'video', model: 'wan' });
      newestFirst.push(v.id);
    }
    expect(newestFirst).toEqual([...ours].reverse());
    const page = await client.videos.list({ limit: 2, order: 'asc' });
    expect(page.data.map((v) => v.id)).toEqual(ours.slice(0, 2));
    expect(page.has_more).toBe(true);
    const next = await page.getNextPage();
    expect(next.data.map((v) => v.id)).toEqual([viaGroupA.id]);
    expect(next.has_more).toBe(false);
    // Another account lists its own video only.
    expect((await other.videos.list()).data).toHaveLength(1);
  });
});

describe('models', () => {
  it('lists the group B ids in OpenAI’s shape with their prices', async () => {
    const page = await sdk((await h.account({ credits: 1 })).key).models.list();
    const ids = page.data.map((m) => m.id);
    for (const id of [
      'auto',
      'claude-haiku',
      'gpt-5.5',
      'grok-4.3',
      'flux',
      'gpt-image-1',
      'image-nano-pro',
      'kling-2.1-pro',
      'wan-2.1',
      'minimax-video-01',
      'sora-2',
    ]) {
      expect(ids).toContain(id);
    }
    expect(page.data.find((m) => m.id === 'gpt-5.5')).toMatchObject({
      object: 'model',
      owned_by: 'gensvc',
      unit: '1k_output_tokens',
      price: 1.5,
    });
  });
});

describe('errors as the SDK knows them', () => {
  it('400, 401, 402, 403, 404, 409, 429, each with its class, the OpenAI body and x-request-id', async () => {
    const { key } = await h.account({ credits: 10, scopes: ['chat', 'video'], models: ['claude-haiku', 'kling'] });
    const client = sdk(key, { maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const expectError = async (
      call: Promise<unknown>,
      cls: new (...args: never[]) => APIError,
      status: number,
      type: string,
      param?: string,
    ) => {
      const err = (await call.catch((e: unknown) => e)) as APIError;
      expect(err, `${status} ${type}`).toBeInstanceOf(cls);
      expect(err).toMatchObject({ status, type, code: status, ...(param ? { param } : {}) });
      expect(err.requestID).toMatch(/^req_/);
      return err;
    };
    await expectError(
      client.chat.completions.create({ model: 'claude-haiku', messages, temperature: 3 }),
      OpenAI.BadRequestError,
      400,
      'invalid_request_error',
      'temperature',
    );
    await expectError(
      client.chat.completions.create({ model: 'claude-haiku', messages, n: 9 }),
      OpenAI.BadRequestError,
      400,
      'invalid_request_error',
      'n',
    );
    await expectError(
      client.chat.completions.create({ model: 'chat-haiku', messages }),
      OpenAI.BadRequestError,
      400,
      'invalid_request_error',
      'model',
    );
    await expectError(
      client.chat.completions.create({ model: 'claude-haiku', messages, max_tokens: 1_000_000 }),
      OpenAI.BadRequestError,
      400,
      'invalid_request_error',
      'max_tokens',
    );
    await expectError(
      client.chat.completions.create({
        model: 'claude-haiku',
        messages,
        response_format: { type: 'yaml' } as never,
      }),
      OpenAI.BadRequestError,
      400,
      'invalid_request_error',
      'response_format.type',
    );
    await expectError(
      client.chat.completions.create({ model: 'claude-haiku', messages, bogus: 1 } as never),
      OpenAI.BadRequestError,
      400,
      'invalid_request_error',
      'bogus',
    );
    await expectError(
      client.images.generate({ model: 'flux', prompt: 'x', n: 5 }),
      OpenAI.BadRequestError,
      400,
      'invalid_request_error',
      'n',
    );
    await expectError(
      client.videos.create({ model: 'kling', prompt: 'a beheading' }),
      OpenAI.BadRequestError,
      400,
      'content_policy_violation',
      'prompt',
    );
    await expectError(
      sdk('gsk_not_a_key', { maxRetries: 0 }).models.list(),
      OpenAI.AuthenticationError,
      401,
      'authentication_error',
    );
    await expectError(
      client.images.generate({ model: 'flux', prompt: 'x' }),
      OpenAI.PermissionDeniedError,
      403,
      'permission_error',
      'model',
    );
    await expectError(
      client.chat.completions.create({ model: 'gpt-5.5', messages }),
      OpenAI.PermissionDeniedError,
      403,
      'permission_error',
      'model',
    );
    await expectError(client.videos.retrieve(MISSING), OpenAI.NotFoundError, 404, 'not_found', 'id');
    await expectError(client.models.retrieve('dall-e-9'), OpenAI.NotFoundError, 404, 'not_found', 'model');

    const poor = await h.account({ credits: 0.001 });
    const e402 = await expectError(
      sdk(poor.key, { maxRetries: 0 }).chat.completions.create({ model: 'claude-opus', messages }),
      APIError,
      402,
      'insufficient_credits',
    );
    expect(e402.error).toMatchObject({ required: credits(chargeForTokens(4096, 3500)), available: 0.001 });

    const headers = { 'Idempotency-Key': 'conflict-1' };
    await client.chat.completions.create({ model: 'claude-haiku', messages }, { headers });
    let sent = 0;
    const retrying = sdk(key, {
      maxRetries: 2,
      fetch: (url, init) => {
        sent++;
        return fetch(url, init);
      },
    });
    const e409 = await expectError(
      retrying.chat.completions.create(
        { model: 'claude-haiku', messages: [{ role: 'user', content: 'other' }] },
        { headers },
      ),
      OpenAI.ConflictError,
      409,
      'idempotency_conflict',
    );
    expect(e409.headers?.get('x-should-retry')).toBe('false');
    expect(sent).toBe(1); // the SDK took the header's word and did not retry

    const limited = await h.account({ credits: 10, plan: 'free' });
    const free = sdk(limited.key, { maxRetries: 0 });
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) await free.models.list();
    const e429 = await expectError(free.models.list(), OpenAI.RateLimitError, 429, 'rate_limit_error');
    expect(Number(e429.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(e429.headers?.get('retry-after-ms'))).toBe(1000 * Number(e429.headers?.get('retry-after')));
  });
});

/** Every /v1 route with a request that passes authentication and reaches the database. */
function everyRoute(): [Method, string, string, unknown][] {
  return [
    ['get', '/v1/models', '/v1/models', undefined],
    ['get', '/v1/models/{model}', '/v1/models/gpt-5.5', undefined],
    [
      'post',
      '/v1/chat/completions',
      '/v1/chat/completions',
      { model: 'auto', messages: [{ role: 'user', content: 'hi' }] },
    ],
    ['post', '/v1/responses', '/v1/responses', { model: 'auto', input: 'hi' }],
    ['get', '/v1/responses/{id}', `/v1/responses/${MISSING}`, undefined],
    ['post', '/v1/responses/{id}/cancel', `/v1/responses/${MISSING}/cancel`, undefined],
    ['delete', '/v1/responses/{id}', `/v1/responses/${MISSING}`, undefined],
    ['get', '/v1/responses/{id}/input_items', `/v1/responses/${MISSING}/input_items`, undefined],
    ['post', '/v1/images/generations', '/v1/images/generations', { model: 'flux', prompt: 'x' }],
    [
      'post',
      '/v1/images/edits',
      '/v1/images/edits',
      { model: 'gpt-image-1', prompt: 'x', images: [{ image_url: editSource.url }] },
    ],
    ['post', '/v1/video/generations', '/v1/video/generations', { model: 'wan-2.1', prompt: 'x' }],
    ['get', '/v1/video/generations/{id}', `/v1/video/generations/${MISSING}`, undefined],
    ['post', '/v1/videos', '/v1/videos', { model: 'wan-2.1', prompt: 'x' }],
    ['get', '/v1/videos', '/v1/videos', undefined],
    ['get', '/v1/videos/{id}', `/v1/videos/${MISSING}`, undefined],
    ['get', '/v1/videos/{id}/content', `/v1/videos/${MISSING}/content`, undefined],
    ['delete', '/v1/videos/{id}', `/v1/videos/${MISSING}`, undefined],
    ['post', '/v1/videos/{id}/remix', `/v1/videos/${MISSING}/remix`, { prompt: 'x' }],
    ['post', '/v1/video/generations/{id}/remix', `/v1/video/generations/${MISSING}/remix`, { prompt: 'x' }],
    ['post', '/v1/videos/extensions', '/v1/videos/extensions', { video: { id: MISSING }, prompt: 'x', seconds: 4 }],
    ['post', '/v1/videos/edits', '/v1/videos/edits', { video: { id: MISSING }, prompt: 'x' }],
  ];
}

const inject = (
  app: Harness['app'],
  method: Method,
  url: string,
  key?: string,
  body?: unknown,
  headers: Record<string, string> = {},
) =>
  app.inject({
    method: method.toUpperCase() as 'GET',
    url,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    ...(body === undefined ? {} : { payload: body as object }),
  });

describe('the /v1 routes conform to the OpenAPI document', () => {
  it('200s, including the event stream, and the 400s, 402, 403, 404, 409, 413 and 502', async () => {
    const { key } = await h.account({ credits: 1000, scopes: ['chat', 'image', 'video'] });
    c.conforms(await inject(h.app, 'get', '/v1/models', key), 'get', '/v1/models', 200);
    c.conforms(await inject(h.app, 'get', '/v1/models/gpt-5.5', key), 'get', '/v1/models/{model}', 200);
    c.conforms(await inject(h.app, 'get', '/v1/models/nope', key), 'get', '/v1/models/{model}', 404);

    const chat = { model: 'auto', messages: [{ role: 'user', content: 'hi sim:tokens=3' }] };
    c.conforms(await inject(h.app, 'post', '/v1/chat/completions', key, chat), 'post', '/v1/chat/completions', 200);
    const streamed = await inject(h.app, 'post', '/v1/chat/completions', key, { ...chat, stream: true });
    c.conforms(streamed, 'post', '/v1/chat/completions', 200);
    expect(streamed.body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    c.conforms(
      await inject(h.app, 'post', '/v1/chat/completions', key, { ...chat, temperature: -1 }),
      'post',
      '/v1/chat/completions',
      400,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/chat/completions', key, {
        ...chat,
        messages: [{ role: 'user', content: 'sim:fail' }],
      }),
      'post',
      '/v1/chat/completions',
      502,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/chat/completions', key, {
        ...chat,
        messages: [{ role: 'user', content: 'x'.repeat(9 * 1024 * 1024) }],
      }),
      'post',
      '/v1/chat/completions',
      413,
    );

    const images = c.conforms<{ data: { url: string }[] }>(
      await inject(h.app, 'post', '/v1/images/generations', key, { model: 'flux', prompt: 'x', n: 2 }),
      'post',
      '/v1/images/generations',
      200,
    );
    expect(images.data).toHaveLength(2);
    c.conforms(
      await inject(h.app, 'post', '/v1/images/generations', key, { model: 'flux', prompt: 'x', size: '10x10' }),
      'post',
      '/v1/images/generations',
      400,
    );
    const edit = { model: 'gpt-image-1', prompt: 'x', images: [{ image_url: editSource.url }] };
    c.conforms(await inject(h.app, 'post', '/v1/images/edits', key, edit), 'post', '/v1/images/edits', 200);
    c.conforms(
      await inject(h.app, 'post', '/v1/images/edits', key, { ...edit, model: 'flux' }),
      'post',
      '/v1/images/edits',
      400,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/images/edits', key, { ...edit, prompt: 'sim:fail' }),
      'post',
      '/v1/images/edits',
      502,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/images/edits', key, { ...edit, prompt: 'x'.repeat(9 * 1024 * 1024) }),
      'post',
      '/v1/images/edits',
      413,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/images/generations', key, { model: 'flux', prompt: 'sim:fail' }),
      'post',
      '/v1/images/generations',
      502,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/images/generations', key, {
        model: 'flux',
        prompt: 'x'.repeat(9 * 1024 * 1024),
      }),
      'post',
      '/v1/images/generations',
      413,
    );

    const v = c.conforms<{ id: string }>(
      await inject(h.app, 'post', '/v1/video/generations', key, { model: 'wan-2.1', prompt: 'x sim:delay=100' }),
      'post',
      '/v1/video/generations',
      200,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/video/generations', key, { model: 'wan-2.1', prompt: 'x', duration: 7 }),
      'post',
      '/v1/video/generations',
      400,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/video/generations', key, {
        model: 'wan-2.1',
        prompt: 'x'.repeat(9 * 1024 * 1024),
      }),
      'post',
      '/v1/video/generations',
      413,
    );
    c.conforms(
      await inject(h.app, 'get', `/v1/video/generations/${v.id}`, key),
      'get',
      '/v1/video/generations/{id}',
      200,
    );
    c.conforms(
      await inject(h.app, 'get', `/v1/video/generations/${MISSING}`, key),
      'get',
      '/v1/video/generations/{id}',
      404,
    );

    const early = await inject(h.app, 'get', `/v1/videos/${v.id}/content`, key);
    if (early.statusCode === 404) c.conforms(early, 'get', '/v1/videos/{id}/content', 404);
    c.conforms(
      await inject(h.app, 'post', '/v1/videos', key, { model: 'wan-2.1', prompt: 'x', seconds: '5' }),
      'post',
      '/v1/videos',
      200,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/videos', key, { model: 'wan-2.1', prompt: 'x', size: '1x1' }),
      'post',
      '/v1/videos',
      400,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/videos', key, { model: 'wan-2.1', prompt: 'x'.repeat(9 * 1024 * 1024) }),
      'post',
      '/v1/videos',
      413,
    );
    c.conforms(await inject(h.app, 'get', `/v1/videos/${v.id}`, key), 'get', '/v1/videos/{id}', 200);
    c.conforms(await inject(h.app, 'get', '/v1/videos?limit=1&order=asc', key), 'get', '/v1/videos', 200);
    for (const query of ['limit=0', 'limit=101', 'order=up', 'after=not-an-id']) {
      c.conforms(await inject(h.app, 'get', `/v1/videos?${query}`, key), 'get', '/v1/videos', 400);
    }
    c.conforms(await inject(h.app, 'get', `/v1/videos/${MISSING}`, key), 'get', '/v1/videos/{id}', 404);
    await eventually(async () =>
      (await inject(h.app, 'get', `/v1/videos/${v.id}`, key)).json<{ status: string }>().status === 'completed'
        ? true
        : undefined,
    );
    c.conforms(await inject(h.app, 'get', `/v1/videos/${v.id}/content`, key), 'get', '/v1/videos/{id}/content', 200);
    c.conforms(
      await inject(h.app, 'get', `/v1/videos/${v.id}/content?variant=thumbnail`, key),
      'get',
      '/v1/videos/{id}/content',
      200,
    );
    c.conforms(
      await inject(h.app, 'get', `/v1/videos/${v.id}/content?variant=poster`, key),
      'get',
      '/v1/videos/{id}/content',
      400,
    );
    for (const [path, url] of [
      ['/v1/videos/{id}/remix', `/v1/videos/${v.id}/remix`],
      ['/v1/video/generations/{id}/remix', `/v1/video/generations/${v.id}/remix`],
    ] as const) {
      c.conforms(await inject(h.app, 'post', url, key, { prompt: 'x sim:delay=100' }), 'post', path, 200);
      c.conforms(await inject(h.app, 'post', url, key, { prompt: 'x', model: 'sora-2' }), 'post', path, 400);
      c.conforms(await inject(h.app, 'post', url, key, { prompt: 'x'.repeat(9 * 1024 * 1024) }), 'post', path, 413);
      c.conforms(await inject(h.app, 'post', url.replace(v.id, MISSING), key, { prompt: 'x' }), 'post', path, 404);
      const queued = (
        await inject(h.app, 'post', '/v1/videos', key, { model: 'wan-2.1', prompt: 'x sim:delay=3000' })
      ).json<{ id: string }>();
      c.conforms(await inject(h.app, 'post', url.replace(v.id, queued.id), key, { prompt: 'x' }), 'post', path, 409);
      const remixHeaders = { 'idempotency-key': `conform-remix-${path}` };
      await inject(h.app, 'post', url, key, { prompt: 'one sim:delay=100' }, remixHeaders);
      c.conforms(await inject(h.app, 'post', url, key, { prompt: 'two' }, remixHeaders), 'post', path, 409);
      // A key of the account without the video scope; an account that cannot pay for another.
      const { accountId } = (
        await h.pool.query<{ accountId: string }>('SELECT account_id AS "accountId" FROM generations WHERE id = $1', [
          v.id,
        ])
      ).rows[0]!;
      const imageKey = (await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['image'] })).json<{
        key: string;
      }>().key;
      c.conforms(await inject(h.app, 'post', url, imageKey, { prompt: 'x' }), 'post', path, 403);
    }
    {
      // Deleting: a finished video goes and is not found again; one still running is a 409.
      const running = (
        await inject(h.app, 'post', '/v1/videos', key, { model: 'wan-2.1', prompt: 'x sim:delay=3000' })
      ).json<{ id: string }>();
      c.conforms(await inject(h.app, 'delete', `/v1/videos/${running.id}`, key), 'delete', '/v1/videos/{id}', 409);
      const done = (
        await inject(h.app, 'post', '/v1/videos', key, { model: 'wan-2.1', prompt: 'x sim:delay=100' })
      ).json<{ id: string }>();
      await eventually(async () =>
        (await inject(h.app, 'get', `/v1/videos/${done.id}`, key)).json<{ status: string }>().status === 'completed'
          ? true
          : undefined,
      );
      c.conforms(await inject(h.app, 'delete', `/v1/videos/${done.id}`, key), 'delete', '/v1/videos/{id}', 200);
      c.conforms(await inject(h.app, 'delete', `/v1/videos/${done.id}`, key), 'delete', '/v1/videos/{id}', 404);
      c.conforms(await inject(h.app, 'get', `/v1/videos/${done.id}`, key), 'get', '/v1/videos/{id}', 404);
    }
    {
      // wan-2.1 for 5 s costs 50.5: the remix finds 9.5 left.
      const poorish = await h.account({ credits: 60, scopes: ['video'] });
      const own = (
        await inject(h.app, 'post', '/v1/videos', poorish.key, { model: 'wan-2.1', prompt: 'x sim:delay=100' })
      ).json<{ id: string }>();
      await eventually(async () =>
        (await inject(h.app, 'get', `/v1/videos/${own.id}`, poorish.key)).json<{ status: string }>().status ===
        'completed'
          ? true
          : undefined,
      );
      for (const [path, url] of [
        ['/v1/videos/{id}/remix', `/v1/videos/${own.id}/remix`],
        ['/v1/video/generations/{id}/remix', `/v1/video/generations/${own.id}/remix`],
      ] as const) {
        c.conforms(await inject(h.app, 'post', url, poorish.key, { prompt: 'x' }), 'post', path, 402);
      }
    }
    c.conforms(await inject(h.app, 'get', `/v1/videos/${MISSING}/content`, key), 'get', '/v1/videos/{id}/content', 404);

    const resp = { model: 'auto', input: 'hi sim:tokens=3' };
    const made = c.conforms<{ id: string }>(
      await inject(h.app, 'post', '/v1/responses', key, resp),
      'post',
      '/v1/responses',
      200,
    );
    const streamedResponse = await inject(h.app, 'post', '/v1/responses', key, { ...resp, stream: true });
    c.conforms(streamedResponse, 'post', '/v1/responses', 200);
    expect(streamedResponse.body).toMatch(/^event: response\.created\n/);
    c.conforms(
      await inject(h.app, 'post', '/v1/responses', key, { ...resp, temperature: 5 }),
      'post',
      '/v1/responses',
      400,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/responses', key, { ...resp, previous_response_id: MISSING }),
      'post',
      '/v1/responses',
      404,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/responses', key, { ...resp, input: 'sim:fail' }),
      'post',
      '/v1/responses',
      502,
    );
    c.conforms(
      await inject(h.app, 'post', '/v1/responses', key, { ...resp, input: 'x'.repeat(9 * 1024 * 1024) }),
      'post',
      '/v1/responses',
      413,
    );
    c.conforms(await inject(h.app, 'get', `/v1/responses/${made.id}`, key), 'get', '/v1/responses/{id}', 200);
    c.conforms(
      await inject(h.app, 'get', `/v1/responses/${made.id}?stream=true`, key),
      'get',
      '/v1/responses/{id}',
      400,
    );
    c.conforms(await inject(h.app, 'get', `/v1/responses/${MISSING}`, key), 'get', '/v1/responses/{id}', 404);
    c.conforms(
      await inject(h.app, 'get', `/v1/responses/${made.id}/input_items`, key),
      'get',
      '/v1/responses/{id}/input_items',
      200,
    );
    c.conforms(
      await inject(h.app, 'get', `/v1/responses/${made.id}/input_items?limit=0`, key),
      'get',
      '/v1/responses/{id}/input_items',
      400,
    );
    c.conforms(
      await inject(h.app, 'get', `/v1/responses/${MISSING}/input_items`, key),
      'get',
      '/v1/responses/{id}/input_items',
      404,
    );
    const doomed = (await inject(h.app, 'post', '/v1/responses', key, resp)).json<{ id: string }>();
    c.conforms(await inject(h.app, 'delete', `/v1/responses/${doomed.id}`, key), 'delete', '/v1/responses/{id}', 200);
    c.conforms(await inject(h.app, 'delete', `/v1/responses/${doomed.id}`, key), 'delete', '/v1/responses/{id}', 404);
    // No id is longer than 100 characters: the router refuses the path before the route runs.
    c.conforms(
      await inject(h.app, 'delete', `/v1/responses/resp_${'0'.repeat(101)}`, key),
      'delete',
      '/v1/responses/{id}',
      400,
    );
    const queued = c.conforms<{ id: string }>(
      await inject(h.app, 'post', '/v1/responses', key, { ...resp, input: 'sim:delay=5000', background: true }),
      'post',
      '/v1/responses',
      200,
    );
    c.conforms(
      await inject(h.app, 'post', `/v1/responses/${queued.id}/cancel`, key),
      'post',
      '/v1/responses/{id}/cancel',
      200,
    );
    c.conforms(
      await inject(h.app, 'post', `/v1/responses/${made.id}/cancel`, key),
      'post',
      '/v1/responses/{id}/cancel',
      400,
    );
    c.conforms(
      await inject(h.app, 'post', `/v1/responses/${MISSING}/cancel`, key),
      'post',
      '/v1/responses/{id}/cancel',
      404,
    );
    const finished = c.conforms<{ id: string }>(
      await inject(h.app, 'post', '/v1/responses', key, { ...resp, input: 'sim:delay=10', background: true }),
      'post',
      '/v1/responses',
      200,
    );
    await eventually(async () =>
      (await inject(h.app, 'get', `/v1/responses/${finished.id}`, key)).json<{ status: string }>().status ===
      'completed'
        ? true
        : undefined,
    );
    c.conforms(
      await inject(h.app, 'post', `/v1/responses/${finished.id}/cancel`, key),
      'post',
      '/v1/responses/{id}/cancel',
      409,
    );

    const poor = await h.account({ credits: 0, scopes: ['image'] });
    // Made from another video (remix, extension, edit): their refusals need a source, proved above.
    const fromAVideo = (path: string) =>
      path.endsWith('/remix') || path === '/v1/videos/extensions' || path === '/v1/videos/edits';
    const creates = () =>
      everyRoute().filter(([m, path]) => m === 'post' && !path.endsWith('/cancel') && !fromAVideo(path));
    for (const [method, path, url, body] of creates()) {
      const res = await inject(h.app, method, url, poor.key, body);
      c.conforms(res, method, path, path.startsWith('/v1/images/') ? 402 : 403);
      if (path.startsWith('/v1/images/'))
        c.conforms(
          await inject(h.app, method, url, (await h.account({ credits: 0, scopes: ['video'] })).key, body),
          method,
          path,
          403,
        );
      else
        c.conforms(
          await inject(h.app, method, url, (await h.account({ credits: 0, scopes: ['chat', 'video'] })).key, body),
          method,
          path,
          402,
        );
    }
    const headers = { 'idempotency-key': 'conform-409' };
    for (const [method, path, url, body] of creates()) {
      const k = (await h.account({ credits: 100 })).key;
      await inject(h.app, method, url, k, body, headers);
      const other =
        path === '/v1/chat/completions'
          ? { model: 'auto', messages: [{ role: 'user', content: 'other' }] }
          : path === '/v1/responses'
            ? { model: 'auto', input: 'other' }
            : { ...(body as object), prompt: 'other' };
      const res = await inject(h.app, method, url, k, other, headers);
      expect(c.conforms(res, method, path, 409)).toMatchObject({ error: { type: 'idempotency_conflict' } });
    }
  });

  it('401 and 429 on every route', async () => {
    const { key } = await h.account({ credits: 10, plan: 'free' });
    for (const [method, path, url, body] of everyRoute()) {
      for (const auth of [undefined, 'gsk_bogus']) {
        expect(c.conforms(await inject(h.app, method, url, auth, body), method, path, 401)).toMatchObject({
          error: { type: 'authentication_error', code: 401 },
        });
      }
    }
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) await inject(h.app, 'get', '/v1/models', key);
    for (const [method, path, url, body] of everyRoute()) {
      const res = await inject(h.app, method, url, key, body);
      c.conforms(res, method, path, 429);
      expect(res.headers['retry-after-ms']).toBe(String(1000 * Number(res.headers['retry-after'])));
      expect(res.headers['x-request-id']).toMatch(/^req_/);
    }
  });

  it('503 when PostgreSQL cannot be reached and 500 when it is broken, without internals', async () => {
    const { key } = await h.account({ credits: 10 });
    const unreachable = new pg.Pool({
      connectionString: `postgresql://nobody@127.0.0.1:${await freePort()}/nowhere`,
      connectionTimeoutMillis: 2_000,
      max: 1,
    });
    const name = `t_broken_b_${Date.now()}`;
    await createDatabase(name);
    const brokenPool = new pg.Pool({ connectionString: databaseUrlFor(name), max: 2 });
    await brokenPool.query(
      'DROP TABLE ledger_entries, holds, idempotency_keys, generations, api_keys, accounts CASCADE',
    );
    const connection = await Connection.connect({ address: (h.client.connection as Connection).options.address });
    try {
      for (const [pool, status] of [
        [unreachable, 503],
        [brokenPool, 500],
      ] as const) {
        const app = await productionApi(h, {
          pool,
          client: new Client({ connection }),
        });
        try {
          for (const [method, path, url, body] of everyRoute()) {
            const { error } = c.conforms<{ error: { message: string } }>(
              await inject(app, method, url, key, body),
              method,
              path,
              status,
            );
            expect(error.message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|relation/);
          }
        } finally {
          await app.close();
        }
      }
    } finally {
      await connection.close();
      await unreachable.end();
      await brokenPool.end();
      await dropDatabase(name);
    }
  });

  it('Temporal unreachable: images are refused with 503, nothing held; a streamed chat still runs and is settled by the API itself', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, connectTimeout: 500 });
    const app = await productionApi(h, {
      client: new Client({ connection }),
    });
    try {
      const images = await inject(app, 'post', '/v1/images/generations', key, { model: 'flux', prompt: 'x', n: 2 });
      expect(c.conforms(images, 'post', '/v1/images/generations', 503)).toMatchObject({
        error: { type: 'server_error' },
      });
      expect(images.headers['x-should-retry']).toBe('false');
      expect(await balanceOf(key)).toMatchObject({ balance: 10, holdsActive: 0 });

      const streamed = await inject(app, 'post', '/v1/chat/completions', key, {
        model: 'auto',
        messages: [{ role: 'user', content: 'sim:tokens=5' }],
        stream: true,
      });
      expect(streamed.statusCode).toBe(200);
      expect(streamed.body.trimEnd().endsWith('data: [DONE]')).toBe(true);
      const settledHere = await eventually(
        async () => ((await balanceOf(key)).holdsActive === 0 ? balanceOf(key) : undefined),
        30_000,
      );
      expect(settledHere.balance).toBe(10 - credits(chargeForTokens(5, 700)));
      const rows = await h.pool.query<{ status: string; charged_mc: number }>(
        "SELECT status, charged_mc FROM generations WHERE account_id = $1 AND kind = 'chat'",
        [accountId],
      );
      expect(rows.rows).toEqual([{ status: 'succeeded', charged_mc: chargeForTokens(5, 700) }]);
    } finally {
      await app.close();
      await connection.close();
    }
  }, 60_000);

  it('every documented status of the /v1 routes was produced above', () => {
    c.expectCoverage('openai-sdk.test.ts');
  });
});

describe('image-to-video (image_url)', () => {
  it('takes the reference frame by URL (fetched before the hold, as upscale does) or as an uploaded file; a bad one is a 400 naming its field, nothing held', async () => {
    const sharp = (await import('sharp')).default;
    const { createServer } = await import('node:http');
    const png = await sharp({ create: { width: 320, height: 180, channels: 3, background: '#246' } })
      .png()
      .toBuffer();
    const server = createServer((req, res) =>
      req.url === '/frame.png'
        ? res.writeHead(200, { 'content-type': 'image/png' }).end(png)
        : res.writeHead(200).end('<html>'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { key } = await h.account({ credits: 200 });
      const client = sdk(key, { maxRetries: 0 });
      const created = await client.post<{ id: string }>('/video/generations', {
        body: { model: 'wan-2.1', prompt: 'the frame comes alive sim:delay=3000', image_url: `${origin}/frame.png` },
      });
      const g = await generationA(key, created.id);
      expect(g.params).toMatchObject({ inputWidth: 320, inputHeight: 180 });
      expect(g.params.inputKey).toBeUndefined(); // internal, not shown
      const err = (await client.videos
        .create({ model: 'wan-2.1', prompt: 'x', input_reference: { image_url: `${origin}/page.html` } })
        .catch((e: unknown) => e)) as APIError;
      expect(err).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'image_url' });
      expect(err.message).toMatch(/image_url/);
      expect(await balanceOf(key)).toMatchObject({ holdsActive: 50.5 });

      // The SDK's own way: input_reference as an uploaded file (multipart).
      const uploaded = await client.videos.create({
        model: 'wan-2.1',
        prompt: 'from a file sim:delay=3000',
        input_reference: await toFile(png, 'frame.png', { type: 'image/png' }),
      });
      expect((await generationA(key, uploaded.id)).params).toMatchObject({ inputWidth: 320, inputHeight: 180 });
      const notAnImage = (await client.videos
        .create({ model: 'wan-2.1', prompt: 'x', input_reference: await toFile(Buffer.from('<html>'), 'page.png') })
        .catch((e: unknown) => e)) as APIError;
      expect(notAnImage).toMatchObject({ status: 400, param: 'input_reference' });
      expect(await balanceOf(key)).toMatchObject({ holdsActive: 101 });
    } finally {
      server.close();
    }
  });
});
