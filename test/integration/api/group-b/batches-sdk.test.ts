/**
 * Batches through the official `openai` package, unmodified, over real HTTP: files.create,
 * batches.create, retrieve until it ends, files.content of its output and error files; the same
 * batch in group A, its money in the ledger; validation failures and 402s that hold nothing; a
 * cancel part-way; images, Responses and video lines; the completion window's end. Then every
 * documented answer of the batch and file routes, held to the OpenAPI document.
 */
import type { AddressInfo } from 'node:net';
import OpenAI, { APIError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { PLAN_RATE_LIMITS } from '../../../../core/plans';
import { withBrokenDatabases } from '../../../support/broken-apps';
import { eventually, startHarness } from '../../../support/harness';
import { keepHistory } from '../../../support/histories';
import type { Harness } from '../../../support/harness';
import { createConformance, loadDocument } from '../../../support/openapi';
import type { Method } from '../../../support/openapi';

let h: Harness;
let baseURL: string;
let c: ReturnType<typeof createConformance>;
beforeAll(async () => {
  h = await startHarness({
    syncWaitMs: 20_000,
    batchLimits: { perBatch: 3, perAccount: 6 },
    batches: { fileLimits: { maxBytes: 4 * 1024 * 1024, maxLines: 1_000, maxLineBytes: 1024 * 1024 } },
  });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  c = createConformance(await loadDocument(h.app));
});
afterAll(async () => {
  await h?.close();
});

const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL, maxRetries: 0 });
const jsonl = (lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
const balanceOf = async (key: string) =>
  (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();

interface OutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: Record<string, unknown> } | null;
  error: { code: string; message: string } | null;
}
const linesOf = (text: string): OutputLine[] =>
  text
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as OutputLine);

const chatLine = (i: number, content: string, extra: Record<string, unknown> = {}) => ({
  custom_id: `req-${i}`,
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model: 'claude-haiku', messages: [{ role: 'user', content }], max_tokens: 50, ...extra },
});

async function upload(client: OpenAI, lines: unknown[] | string) {
  const text = typeof lines === 'string' ? lines : jsonl(lines);
  return client.files.create({ file: await toFile(Buffer.from(text), 'in.jsonl'), purpose: 'batch' });
}

async function until(client: OpenAI, id: string, statuses: string[]) {
  return eventually(
    async () => {
      const b = await client.batches.retrieve(id);
      return statuses.includes(b.status) ? b : undefined;
    },
    90_000,
    300,
  );
}

async function ledgerOf(accountId: string) {
  const r = await h.pool.query<{
    entry: string;
    amount_mc: number;
    generation_id: string | null;
    batch_id: string | null;
  }>(
    `SELECT e.entry, e.amount_mc, e.generation_id, COALESCE(e.batch_id, g.batch_id) AS batch_id
       FROM ledger_entries e LEFT JOIN generations g ON g.id = e.generation_id
      WHERE e.account_id = $1 AND e.entry <> 'credit' ORDER BY e.id`,
    [accountId],
  );
  return r.rows;
}

/** claude-haiku's rate in group B: 700 mc per 1,000 output tokens; a batch line runs at half. */
const HAIKU_RATE_MC = 700;

describe('a chat batch through the openai SDK', () => {
  it('holds the whole batch once at half price, runs every line, charges each its own share, and answers each as the endpoint would', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const client = sdk(key);
    const file = await upload(
      client,
      [1, 2, 3].map((i) => chatLine(i, `line ${i} sim:tokens=${i * 2}`)),
    );
    expect(file).toMatchObject({ object: 'file', purpose: 'batch', filename: 'in.jsonl', status: 'processed' });
    expect((await client.files.retrieve(file.id)).bytes).toBe(file.bytes);
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { run: 'nightly' },
    });
    expect(batch).toMatchObject({ object: 'batch', status: 'in_progress', metadata: { run: 'nightly' } });
    expect(batch.request_counts).toEqual({ total: 3, completed: 0, failed: 0 });
    const rate = HAIKU_RATE_MC / 2;
    const heldMc = 3 * chargeForTokens(50, rate);

    const done = await until(client, batch.id, ['completed']);
    expect(done.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    expect(done.error_file_id ?? null).toBeNull();
    const out = linesOf(await (await client.files.content(done.output_file_id!)).text());
    expect(out.map((l) => l.custom_id)).toEqual(['req-1', 'req-2', 'req-3']);
    for (const [i, l] of out.entries()) {
      expect(l.error).toBeNull();
      expect(l.response!.status_code).toBe(200);
      expect(l.response!.body).toMatchObject({
        object: 'chat.completion',
        model: 'claude-haiku',
        choices: [{ index: 0, message: { role: 'assistant' }, finish_reason: 'stop' }],
        usage: { completion_tokens: (i + 1) * 2 },
      });
      // The line's generation is the account's like any other, and carries the batch.
      const g = (await h.call('GET', `/api/v1/generations/${l.response!.body.id as string}`, { key })).json<{
        batchId: string;
        creditsCharged: number;
      }>();
      expect(g).toMatchObject({ batchId: batch.id, creditsCharged: chargeForTokens((i + 1) * 2, rate) / 1000 });
    }
    const charged = [2, 4, 6].reduce((sum, t) => sum + chargeForTokens(t, rate), 0);
    expect(await balanceOf(key)).toMatchObject({ balance: (100_000 - charged) / 1000, holdsActive: 0 });

    // One hold for the whole batch; each line then one charge (and the unused part of its share back).
    const ledger = await ledgerOf(accountId);
    expect(ledger[0]).toMatchObject({ entry: 'hold', amount_mc: heldMc, generation_id: null, batch_id: batch.id });
    expect(ledger.filter((e) => e.entry === 'hold')).toHaveLength(1);
    expect(
      ledger
        .filter((e) => e.entry === 'charge')
        .map((e) => e.amount_mc)
        .sort(),
    ).toEqual([2, 4, 6].map((t) => chargeForTokens(t, rate)).sort());
    expect(ledger.every((e) => e.batch_id === batch.id)).toBe(true);
    const csv = await h.call('GET', '/api/v1/ledger?format=csv', { key });
    const rows = csv.body.trim().split('\r\n');
    expect(rows[0]).toContain('batchId');
    expect(rows.slice(1).filter((r) => r.includes(batch.id))).toHaveLength(ledger.length);

    // The same batch in group A.
    const a = (await h.call('GET', `/api/v1/batches/${batch.id}`, { key })).json<Record<string, unknown>>();
    expect(a).toMatchObject({
      id: batch.id,
      status: 'completed',
      requestCounts: { total: 3, completed: 3, failed: 0 },
      creditsHeld: heldMc / 1000,
      creditsCharged: charged / 1000,
      outputFileId: done.output_file_id,
    });
    const listed = await client.batches.list();
    expect(listed.data.map((b) => b.id)).toContain(batch.id);
    const files = await client.files.list();
    expect(files.data.map((f) => f.id)).toEqual(expect.arrayContaining([file.id, done.output_file_id]));
    const output = await client.files.retrieve(done.output_file_id!);
    expect(output).toMatchObject({ purpose: 'batch_output' });
    expect(output.bytes).toBe(Buffer.byteLength(out.map((l) => JSON.stringify(l) + '\n').join('')));
    // RECORD_HISTORIES=1 adds this path to the fixtures test/unit/workflows/replay-fixtures.test.ts replays.
    if (process.env.RECORD_HISTORIES === '1') await keepHistory(batch.id, 'batch-completed');
  }, 120_000);

  it('writes a line whose run failed to the error file, with the error its endpoint would have answered; nothing charged for it', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const file = await upload(client, [chatLine(1, 'fine sim:tokens=3'), chatLine(2, 'sim:fail')]);
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await until(client, batch.id, ['completed']);
    expect(done.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
    const errors = linesOf(await (await client.files.content(done.error_file_id!)).text());
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      custom_id: 'req-2',
      error: null,
      response: { status_code: 502, body: { error: { type: 'server_error', code: 502 } } },
    });
    expect((errors[0]!.response!.body.error as { message: string }).message).toMatch(
      /^The reply failed \(provider_failed\)/,
    );
    expect(await balanceOf(key)).toMatchObject({
      balance: (100_000 - chargeForTokens(3, HAIKU_RATE_MC / 2)) / 1000,
      holdsActive: 0,
    });
  }, 90_000);
});

describe('chat lines with several choices and usage details', () => {
  it('answers a line of n choices, each a generation charged its own tokens; details as the endpoint gives them', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const file = await upload(client, [
      chatLine(1, 'two takes sim:tokens=3 sim:cached=20 sim:reasoning=2', { n: 2 }),
      chatLine(2, 'with logprobs', { logprobs: true }),
    ]);
    const failed = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    // A line runs whole in a worker, which keeps no log probabilities: the batch is refused by that line.
    expect((await until(client, failed.id, ['failed'])).errors?.data?.[0]).toMatchObject({
      line: 2,
      param: 'logprobs',
    });

    const ok = await upload(client, [chatLine(1, 'two takes sim:tokens=3 sim:cached=20 sim:reasoning=2', { n: 2 })]);
    const batch = await client.batches.create({
      input_file_id: ok.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await until(client, batch.id, ['completed']);
    const [line] = linesOf(await (await client.files.content(done.output_file_id!)).text());
    expect(line!.response!.body).toMatchObject({
      choices: [{ index: 0 }, { index: 1 }],
      usage: {
        completion_tokens: 2 * 5,
        prompt_tokens_details: { cached_tokens: 20 },
        completion_tokens_details: { reasoning_tokens: 2 * 2 },
      },
    });
    const charged = 2 * chargeForTokens(5, HAIKU_RATE_MC / 2);
    expect(await balanceOf(key)).toMatchObject({ balance: (100_000 - charged) / 1000, holdsActive: 0 });
  });
});

describe('validated before anything is held', () => {
  it('a malformed line, an unknown model, a duplicate custom_id, a line too long and another endpoint make the batch failed with their line numbers', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const client = sdk(key);
    const text = [
      JSON.stringify(chatLine(1, 'ok')),
      '{"custom_id": "broken", ',
      JSON.stringify({
        ...chatLine(3, 'x'),
        body: { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] },
      }),
      JSON.stringify(chatLine(1, 'again')),
      JSON.stringify(chatLine(5, 'x'.repeat(2 * 1024 * 1024))),
      JSON.stringify({ ...chatLine(6, 'x'), url: '/v1/images/generations' }),
      JSON.stringify({ ...chatLine(7, 'x'), body: { model: 'claude-haiku', messages: [] } }),
    ].join('\n');
    const file = await upload(client, text);
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    expect(batch.status).toBe('failed');
    expect(batch.failed_at).toEqual(expect.any(Number));
    const errors = batch.errors!.data!;
    expect(errors.map((e) => [e.line, e.code])).toEqual([
      [2, 'invalid_json_line'],
      [3, 'invalid_request_error'],
      [4, 'duplicate_custom_id'],
      [5, 'line_too_large'],
      [6, 'mismatched_endpoint'],
      [7, 'invalid_request_error'],
    ]);
    expect(errors[1]).toMatchObject({ param: 'model' });
    expect(errors[1]!.message).toMatch(/^Line 3: Group B has no chat model 'no-such-model'/);
    expect(errors[5]).toMatchObject({ param: 'messages' });
    expect(await balanceOf(key)).toMatchObject({ balance: 100, holdsActive: 0 });
    expect(await ledgerOf(accountId)).toEqual([]);
    expect((await client.batches.retrieve(batch.id)).status).toBe('failed');
  });

  it('402 when the account cannot cover the whole batch: required and available, nothing held or recorded', async () => {
    const { key, accountId } = await h.account({ credits: 0.02 });
    const client = sdk(key);
    const file = await upload(
      client,
      [1, 2].map((i) => chatLine(i, 'x')),
    );
    const err = await client.batches
      .create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(402);
    expect((err as APIError).error).toMatchObject({
      type: 'insufficient_credits',
      required: (2 * chargeForTokens(50, HAIKU_RATE_MC / 2)) / 1000,
      available: 0.02,
    });
    expect(await balanceOf(key)).toMatchObject({ balance: 0.02, holdsActive: 0 });
    expect(await ledgerOf(accountId)).toEqual([]);
    expect((await client.batches.list()).data).toEqual([]);
  });

  it('max_credits caps the whole batch (402, nothing held); a line’s own max_credits caps that line (validation)', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const file = await upload(
      client,
      [1, 2].map((i) => chatLine(i, 'x')),
    );
    const err = (await client.batches
      .create(
        { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' },
        {
          body: {
            input_file_id: file.id,
            endpoint: '/v1/chat/completions',
            completion_window: '24h',
            max_credits: 0.01,
          },
        },
      )
      .catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(402);
    expect(err.error).toMatchObject({ type: 'max_credits_exceeded', max_credits: 0.01 });
    const capped = await upload(client, [chatLine(1, 'x', { max_credits: 0.001 })]);
    const b = await client.batches.create({
      input_file_id: capped.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    expect(b.status).toBe('failed');
    expect(b.errors!.data![0]).toMatchObject({ line: 1, code: 'max_credits_exceeded', param: 'max_credits' });
    expect(await balanceOf(key)).toMatchObject({ balance: 100, holdsActive: 0 });
  });
});

describe('cancelling a batch', () => {
  it('charges the lines that finished, releases the rest (running or never started), and is cancelled within seconds', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const client = sdk(key);
    // Three at a time (the harness's limit): the first three finish fast, the next ones take long.
    const lines = [
      ...[1, 2, 3].map((i) => chatLine(i, 'quick sim:tokens=4')),
      ...[4, 5, 6, 7, 8, 9].map((i) => chatLine(i, 'slow sim:delay=30000 sim:tokens=4')),
    ];
    const file = await upload(client, lines);
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await eventually(
      async () => {
        const b = await client.batches.retrieve(batch.id);
        const running = await h.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM generations WHERE batch_id = $1 AND status = 'running'",
          [batch.id],
        );
        return b.request_counts!.completed === 3 && running.rows[0]!.n === 3 ? true : undefined;
      },
      60_000,
      300,
    );
    const cancelling = await client.batches.cancel(batch.id);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    expect(cancelling.cancelling_at).toEqual(expect.any(Number));
    // The slow lines would take 30 s; the cancel stops them.
    const done = await eventually(
      async () => {
        const b = await client.batches.retrieve(batch.id);
        return b.status === 'cancelled' ? b : undefined;
      },
      15_000,
      200,
    );
    expect(done.request_counts).toEqual({ total: 9, completed: 3, failed: 6 });
    expect(done.cancelled_at).toEqual(expect.any(Number));
    const errors = linesOf(await (await client.files.content(done.error_file_id!)).text());
    expect(errors.map((l) => l.custom_id)).toEqual(['req-4', 'req-5', 'req-6', 'req-7', 'req-8', 'req-9']);
    for (const l of errors) expect(l).toMatchObject({ response: null, error: { code: 'batch_cancelled' } });
    const charged = 3 * chargeForTokens(4, HAIKU_RATE_MC / 2);
    expect(await balanceOf(key)).toMatchObject({ balance: (100_000 - charged) / 1000, holdsActive: 0 });
    const ledger = await ledgerOf(accountId);
    expect(ledger.filter((e) => e.entry === 'charge')).toHaveLength(3);
    // The three in flight were released one by one; the three never started with the batch's rest.
    const releases = ledger.filter((e) => e.entry === 'release');
    expect(releases.filter((e) => e.generation_id === null)).toEqual([
      {
        entry: 'release',
        amount_mc: 3 * chargeForTokens(50, HAIKU_RATE_MC / 2),
        generation_id: null,
        batch_id: batch.id,
      },
    ]);
    if (process.env.RECORD_HISTORIES === '1') {
      await h.client.workflow.getHandle(batch.id).result();
      await keepHistory(batch.id, 'batch-cancelled');
    }
    // A second cancel answers it again; a completed batch is 409.
    expect((await client.batches.cancel(batch.id)).status).toBe('cancelled');
    const other = await client.batches.create({
      input_file_id: (await upload(client, [chatLine(1, 'x sim:tokens=1')])).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await until(client, other.id, ['completed']);
    const err = (await client.batches.cancel(other.id).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(409);
    expect(err.error).toMatchObject({ type: 'batch_finished' });
  }, 120_000);
});

describe('image, Responses and video lines', () => {
  it('an image batch: n images per line, URLs or base64, each line answered as /v1/images/generations would', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const file = await upload(client, [
      {
        custom_id: 'two',
        method: 'POST',
        url: '/v1/images/generations',
        body: { model: 'flux', prompt: 'a fox', n: 2 },
      },
      {
        custom_id: 'b64',
        method: 'POST',
        url: '/v1/images/generations',
        body: { model: 'flux', prompt: 'a hen', response_format: 'b64_json' },
      },
      { custom_id: 'bad', method: 'POST', url: '/v1/images/generations', body: { model: 'flux', prompt: 'sim:fail' } },
    ]);
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/images/generations',
      completion_window: '24h',
    });
    // flux is 3 credits an image; at half price 1.5; four images held.
    expect(batch).toMatchObject({ credits_held: 6 });
    const done = await until(client, batch.id, ['completed']);
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    const out = linesOf(await (await client.files.content(done.output_file_id!)).text());
    expect(out.map((l) => l.custom_id)).toEqual(['two', 'b64']);
    const two = out[0]!.response!.body as { data: { url: string }[]; credits_charged: number };
    expect(two.data).toHaveLength(2);
    expect(two.credits_charged).toBe(3);
    expect(two.data[0]!.url).toMatch(/^http:\/\/files\.test\/files\/gen_/);
    const b64 = out[1]!.response!.body as { data: { b64_json: string }[] };
    expect(Buffer.from(b64.data[0]!.b64_json, 'base64').subarray(1, 4).toString()).toBe('PNG');
    const errors = linesOf(await (await client.files.content(done.error_file_id!)).text());
    expect(errors[0]).toMatchObject({ custom_id: 'bad', response: { status_code: 502 } });
    expect(await balanceOf(key)).toMatchObject({ balance: 100 - 4.5, holdsActive: 0 });
  }, 90_000);

  it('a Responses batch and a video batch', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = sdk(key);
    const responses = await client.batches.create({
      input_file_id: (
        await upload(client, [
          {
            custom_id: 'r',
            method: 'POST',
            url: '/v1/responses',
            body: { model: 'claude-haiku', input: 'hi sim:tokens=5', instructions: 'Be brief.' },
          },
        ])
      ).id,
      endpoint: '/v1/responses',
      completion_window: '24h',
    });
    const videos = await client.batches.create({
      input_file_id: (
        await upload(client, [
          {
            custom_id: 'v1',
            method: 'POST',
            url: '/v1/videos',
            body: { model: 'wan-2.1', prompt: 'waves', seconds: 5 },
          },
          {
            custom_id: 'v2',
            method: 'POST',
            url: '/v1/videos',
            body: { model: 'wan-2.1', prompt: 'dunes', seconds: 5 },
          },
        ])
      ).id,
      endpoint: '/v1/videos',
      completion_window: '24h',
    });
    const r = await until(client, responses.id, ['completed']);
    const [resp] = linesOf(await (await client.files.content(r.output_file_id!)).text());
    expect(resp!.response!.body).toMatchObject({
      object: 'response',
      status: 'completed',
      instructions: 'Be brief.',
      usage: { output_tokens: 5 },
    });
    const v = await until(client, videos.id, ['completed']);
    const out = linesOf(await (await client.files.content(v.output_file_id!)).text());
    expect(out.map((l) => l.response!.body)).toEqual([
      expect.objectContaining({ object: 'video', status: 'completed', progress: 100, seconds: '5' }),
      expect.objectContaining({ object: 'video', status: 'completed', progress: 100, seconds: '5' }),
    ]);
    expect(await balanceOf(key)).toMatchObject({ holdsActive: 0 });
  }, 120_000);
});

describe('the file and batch routes conform to the OpenAPI document', () => {
  const MISSING_FILE = `file_${'0'.repeat(26)}`;
  const MISSING_BATCH = `batch_${'0'.repeat(26)}`;
  const boundary = 'xYz0boundary';
  const multipart = (text: string, purpose = 'batch') =>
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n${purpose}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n${text}\r\n--${boundary}--\r\n`;
  const inject = (method: Method, url: string, key?: string, body?: unknown, raw?: string) =>
    h.app.inject({
      method: method.toUpperCase() as 'GET',
      url,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(raw === undefined ? {} : { 'content-type': `multipart/form-data; boundary=${boundary}` }),
      },
      ...(raw !== undefined ? { payload: raw } : body === undefined ? {} : { payload: body as object }),
    });
  const line = JSON.stringify(chatLine(1, 'sim:tokens=1'));

  /** Every route with a request that reaches its handler: method, documented path, URL, body, multipart. */
  const everyRoute = (): [Method, string, string, unknown, string | undefined][] => [
    ['post', '/v1/files', '/v1/files', undefined, multipart(line)],
    ['get', '/v1/files', '/v1/files', undefined, undefined],
    ['get', '/v1/files/{id}', `/v1/files/${MISSING_FILE}`, undefined, undefined],
    ['get', '/v1/files/{id}/content', `/v1/files/${MISSING_FILE}/content`, undefined, undefined],
    ['delete', '/v1/files/{id}', `/v1/files/${MISSING_FILE}`, undefined, undefined],
    [
      'post',
      '/v1/batches',
      '/v1/batches',
      { input_file_id: MISSING_FILE, endpoint: '/v1/chat/completions', completion_window: '24h' },
      undefined,
    ],
    ['get', '/v1/batches', '/v1/batches', undefined, undefined],
    ['get', '/v1/batches/{id}', `/v1/batches/${MISSING_BATCH}`, undefined, undefined],
    ['post', '/v1/batches/{id}/cancel', `/v1/batches/${MISSING_BATCH}/cancel`, undefined, undefined],
  ];

  it('200s, 400s, 402, 403, 404, 409 and 413', async () => {
    const { key } = await h.account({ credits: 100 });
    const file = c.conforms<{ id: string }>(
      await inject('post', '/v1/files', key, undefined, multipart(line)),
      'post',
      '/v1/files',
      200,
    );
    c.conforms(
      await inject('post', '/v1/files', key, undefined, multipart(line, 'fine-tune')),
      'post',
      '/v1/files',
      400,
    );
    c.conforms(await inject('post', '/v1/files', key, { file: 'x', purpose: 'batch' }), 'post', '/v1/files', 400);
    c.conforms(
      await inject('post', '/v1/files', key, undefined, multipart('x'.repeat(5 * 1024 * 1024))),
      'post',
      '/v1/files',
      413,
    );
    c.conforms(await inject('get', '/v1/files?limit=2', key), 'get', '/v1/files', 200);
    c.conforms(await inject('get', '/v1/files?after=nope', key), 'get', '/v1/files', 400);
    c.conforms(await inject('get', `/v1/files/${file.id}`, key), 'get', '/v1/files/{id}', 200);
    c.conforms(await inject('get', `/v1/files/${file.id}/content`, key), 'get', '/v1/files/{id}/content', 200);
    const body = { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' };
    const made = c.conforms<{ id: string }>(await inject('post', '/v1/batches', key, body), 'post', '/v1/batches', 200);
    c.conforms(
      await inject('post', '/v1/batches', key, { ...body, completion_window: '1h' }),
      'post',
      '/v1/batches',
      400,
    );
    c.conforms(await inject('post', '/v1/batches', key, { ...body, surprise: 1 }), 'post', '/v1/batches', 400);
    c.conforms(
      await inject('post', '/v1/batches', key, { ...body, input_file_id: MISSING_FILE }),
      'post',
      '/v1/batches',
      404,
    );
    const poor = await h.account({ credits: 0 });
    const poorFile = (await inject('post', '/v1/files', poor.key, undefined, multipart(line))).json<{ id: string }>();
    c.conforms(
      await inject('post', '/v1/batches', poor.key, { ...body, input_file_id: poorFile.id }),
      'post',
      '/v1/batches',
      402,
    );
    const imagesOnly = await h.account({ credits: 10, scopes: ['image'] });
    const theirs = (await inject('post', '/v1/files', imagesOnly.key, undefined, multipart(line))).json<{
      id: string;
    }>();
    c.conforms(
      await inject('post', '/v1/batches', imagesOnly.key, { ...body, input_file_id: theirs.id }),
      'post',
      '/v1/batches',
      403,
    );
    c.conforms(await inject('get', `/v1/batches/${made.id}`, key), 'get', '/v1/batches/{id}', 200);
    c.conforms(await inject('get', '/v1/batches?limit=1', key), 'get', '/v1/batches', 200);
    c.conforms(await inject('get', '/v1/batches?limit=0', key), 'get', '/v1/batches', 400);
    await eventually(
      async () =>
        (await inject('get', `/v1/batches/${made.id}`, key)).json<{ status: string }>().status === 'completed'
          ? true
          : undefined,
      30_000,
      250,
    );
    c.conforms(await inject('post', `/v1/batches/${made.id}/cancel`, key), 'post', '/v1/batches/{id}/cancel', 409);
    const slowFile = (
      await inject('post', '/v1/files', key, undefined, multipart(JSON.stringify(chatLine(1, 'sim:delay=20000'))))
    ).json<{ id: string }>();
    const slow = (await inject('post', '/v1/batches', key, { ...body, input_file_id: slowFile.id })).json<{
      id: string;
    }>();
    c.conforms(await inject('post', `/v1/batches/${slow.id}/cancel`, key), 'post', '/v1/batches/{id}/cancel', 200);
    c.conforms(await inject('delete', `/v1/files/${file.id}`, key), 'delete', '/v1/files/{id}', 200);
    for (const [method, path, url] of everyRoute().slice(2)) {
      if (method === 'get' && !path.includes('{id}')) continue;
      const res = await inject(method, url, key, method === 'post' && path === '/v1/batches' ? body : undefined);
      if (path === '/v1/batches') continue;
      c.conforms(res, method, path, 404);
    }
  });

  it('401 and 429 on every route', async () => {
    const { key } = await h.account({ credits: 10, plan: 'free' });
    for (const [method, path, url, body, raw] of everyRoute()) {
      for (const auth of [undefined, 'gsk_bogus'])
        c.conforms(await inject(method, url, auth, body, raw), method, path, 401);
    }
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) await inject('get', '/v1/batches', key);
    for (const [method, path, url, body, raw] of everyRoute())
      c.conforms(await inject(method, url, key, body, raw), method, path, 429);
  });

  it('503 when PostgreSQL cannot be reached and 500 when it is broken, without internals', async () => {
    const { key } = await h.account({ credits: 10 });
    await withBrokenDatabases(h, async (app, status) => {
      for (const [method, path, url, body, raw] of everyRoute()) {
        const res = await app.inject({
          method: method.toUpperCase() as 'GET',
          url,
          headers: {
            authorization: `Bearer ${key}`,
            ...(raw === undefined ? {} : { 'content-type': `multipart/form-data; boundary=${boundary}` }),
          },
          ...(raw !== undefined ? { payload: raw } : body === undefined ? {} : { payload: body as object }),
        });
        const { error } = c.conforms<{ error: { message: string } }>(res, method, path, status);
        expect(error.message).not.toMatch(/ECONNREFUSED|relation|nowhere/);
      }
    });
  });

  it('every documented status of the file and batch routes was produced above', () => {
    c.expectCoverage('batches-sdk.test.ts');
  });
});
