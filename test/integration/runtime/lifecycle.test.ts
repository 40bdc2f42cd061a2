import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from '../../support/harness';
import type { Harness } from '../../support/harness';
import { credits, download, generate, poll, untilFinished } from '../../support/api';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
const EBML_MAGIC = Buffer.from([0x1a, 0x45, 0xdf, 0xa3]);
const ASYNC = { prefer: 'respond-async' };

describe('image', () => {
  it('holds the quote while in flight, then charges it exactly and serves a real PNG', async () => {
    const { key } = await h.account({ credits: 100 });

    const submitted = await generate(
      h,
      key,
      { kind: 'image', model: 'flux', prompt: 'a lighthouse at dusk sim:delay=1500' },
      ASYNC,
    );
    expect(submitted.status).toBe(200);
    const g = submitted.body.generation;
    expect(g).toMatchObject({ kind: 'image', model: 'image-flux', outputUrl: '', creditsCharged: 0, error: null });
    expect(['queued', 'running']).toContain(g.status);
    expect(g.id).toMatch(/^gen_[0-9a-z]{26}$/);
    expect(await credits(h, key)).toMatchObject({ balance: 97, holdsActive: 3 });

    const done = await untilFinished(h, key, g.id);
    expect(done).toMatchObject({ status: 'succeeded', creditsCharged: 3, error: null });
    expect(await credits(h, key)).toMatchObject({ balance: 97, holdsActive: 0 });

    const file = await download(h, done.outputUrl);
    expect(file.status).toBe(200);
    expect(file.contentType).toBe('image/png');
    expect(file.body.subarray(0, 4)).toEqual(PNG_MAGIC);
  });

  it('answers succeeded within the call when the client waits', async () => {
    const { key } = await h.account({ credits: 20 });
    const { status, body } = await generate(h, key, {
      kind: 'image',
      model: 'image-ideogram-v2',
      prompt: 'a red kite',
      aspect: '16:10',
    });
    expect(status).toBe(200);
    expect(body.generation).toMatchObject({ status: 'succeeded', model: 'image-ideogram-v2', creditsCharged: 15 });
    expect(body.generation.outputUrl).toMatch(
      /^http:\/\/files\.test\/files\/gen_.+\/output\.png\?expires=\d+&signature=[0-9a-f]{64}$/,
    );
    expect(await credits(h, key)).toMatchObject({ balance: 5, holdsActive: 0 });
  });

  it('sim:fail releases the hold: failed, nothing charged, an error object', async () => {
    const { key } = await h.account({ credits: 10 });
    const { body } = await generate(h, key, { kind: 'image', model: 'gpt-image-1', prompt: 'sim:fail a cat' });
    expect(body.generation).toMatchObject({
      status: 'failed',
      creditsCharged: 0,
      outputUrl: '',
      error: { code: 'provider_failed', retryable: false },
    });
    // Our words for the code; the provider's own text is for the log and the Temporal UI.
    expect(body.generation.error?.message).toBe(
      'The model provider could not complete this generation; nothing was charged.',
    );
    expect(await credits(h, key)).toMatchObject({ balance: 10, holdsActive: 0 });
  });
});

describe('video', () => {
  it('is queued or running at first, shows its hold, then settles to the exact price with a playable file', async () => {
    const { key } = await h.account({ credits: 100 });
    // kling, default 5 s at 720p: 5 × 8.5 = 42.5 credits.
    const { status, body } = await generate(h, key, {
      kind: 'video',
      model: 'kling',
      prompt: 'waves on a beach sim:delay=1500',
    });
    expect(status).toBe(200);
    const g = body.generation;
    expect(['queued', 'running']).toContain(g.status);
    expect(g).toMatchObject({ kind: 'video', model: 'kling', outputUrl: '', creditsCharged: 0, error: null });
    expect(await credits(h, key)).toMatchObject({ balance: 57.5, holdsActive: 42.5 });

    const inFlight = await poll(h, key, g.id);
    expect(inFlight.creditsCharged).toBe(0);

    const done = await untilFinished(h, key, g.id);
    expect(done).toMatchObject({ status: 'succeeded', creditsCharged: 42.5, error: null });
    expect(await credits(h, key)).toMatchObject({ balance: 57.5, holdsActive: 0 });

    const file = await download(h, done.outputUrl);
    expect(file.status).toBe(200);
    expect(file.contentType).toBe('video/webm');
    expect(file.body.subarray(0, 4)).toEqual(EBML_MAGIC);
    expect(file.body.includes(Buffer.from('V_VP8'))).toBe(true);
  });

  it('clamps seconds, prices the clamped value, ignores resolution and falls back from an unavailable quality', async () => {
    const { key } = await h.account({ credits: 200 });
    // kling range 5-10: 100 s clamps to 10; 1080p rate 13 → 130 credits.
    const clamped = await generate(h, key, {
      kind: 'video',
      model: 'kling',
      prompt: 'a train',
      seconds: 100,
      quality: '1080p',
      resolution: '480p',
    });
    expect(clamped.status).toBe(200);
    expect(await credits(h, key)).toMatchObject({ holdsActive: 130 });
    // ltx has no 720p rate: falls back to its default 1080p (6.1/s), 6 s default → 36.6.
    const fallback = await generate(h, key, { kind: 'video', model: 'ltx', prompt: 'a fox', quality: '720p' });
    expect(fallback.status).toBe(200);
    expect(await credits(h, key)).toMatchObject({ holdsActive: 166.6 });
    const a = await untilFinished(h, key, clamped.body.generation.id);
    const b = await untilFinished(h, key, fallback.body.generation.id);
    expect(a.creditsCharged).toBe(130);
    expect(b.creditsCharged).toBe(36.6);
    expect(await credits(h, key)).toMatchObject({ balance: 33.4, holdsActive: 0 });
  });

  it('sim:fail releases the hold after the job started', async () => {
    const { key } = await h.account({ credits: 50 });
    const { body } = await generate(h, key, {
      kind: 'video',
      model: 'seedance-lite',
      prompt: 'sim:fail sim:delay=300 rain',
    });
    expect(await credits(h, key)).toMatchObject({ balance: 35, holdsActive: 15 });
    const done = await untilFinished(h, key, body.generation.id);
    expect(done).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'provider_failed' } });
    expect(await credits(h, key)).toMatchObject({ balance: 50, holdsActive: 0 });
  });
});

describe('chat', () => {
  it('serves the free allowance with the automatic model, then charges per reply', async () => {
    const { key } = await h.account({ credits: 10, chatCap: 1 });
    expect((await credits(h, key)).trial).toEqual({ chatCap: 1, chatUsed: 0, chatLeft: 1 });

    const free = await generate(h, key, { kind: 'chat', model: 'chat-opus', prompt: 'hello sim:tokens=7' });
    expect(free.body.generation).toMatchObject({ status: 'succeeded', model: 'chat-haiku', creditsCharged: 0 });
    expect(free.body.generation.text?.split(' ')).toHaveLength(7);
    expect(await credits(h, key)).toEqual({
      balance: 10,
      holdsActive: 0,
      trial: { chatCap: 1, chatUsed: 1, chatLeft: 0 },
    });

    const paid = await generate(h, key, { kind: 'chat', model: 'chat-sonnet', prompt: 'and again' });
    expect(paid.body.generation).toMatchObject({ status: 'succeeded', model: 'chat-sonnet', creditsCharged: 2 });
    const auto = await generate(h, key, { kind: 'chat', prompt: 'pick for me' });
    expect(auto.body.generation).toMatchObject({ status: 'succeeded', model: 'chat-haiku', creditsCharged: 1 });
    expect(await credits(h, key)).toMatchObject({ balance: 7, holdsActive: 0 });
  });

  it('a failed free reply gives the allowance back', async () => {
    const { key } = await h.account({ credits: 0, chatCap: 1 });
    const failed = await generate(h, key, { kind: 'chat', prompt: 'sim:fail hi' });
    expect(failed.body.generation).toMatchObject({ status: 'failed', creditsCharged: 0 });
    expect((await credits(h, key)).trial).toEqual({ chatCap: 1, chatUsed: 0, chatLeft: 1 });
  });

  it('caps long input instead of refusing it', async () => {
    const { key } = await h.account({ credits: 5 });
    const { status, body } = await generate(h, key, {
      kind: 'chat',
      model: 'chat-haiku',
      prompt: 'word '.repeat(100_000),
    });
    expect(status).toBe(200);
    expect(body.generation).toMatchObject({ status: 'succeeded', creditsCharged: 1 });
    const stored = await h.pool.query<{ len: number }>('SELECT length(prompt) AS len FROM generations WHERE id = $1', [
      body.generation.id,
    ]);
    expect(stored.rows[0]!.len).toBe(32_000);
  });
});

describe('refusals charge nothing and run nothing', () => {
  const generationCount = async (accountId: string) =>
    Number(
      (await h.pool.query<{ n: string }>('SELECT count(*) AS n FROM generations WHERE account_id = $1', [accountId]))
        .rows[0]!.n,
    );

  it('402 when the quote exceeds the balance, stating required and available credits', async () => {
    const { key, accountId } = await h.account({ credits: 2.5 });
    const { status, body } = await generate(h, key, { kind: 'image', model: 'image-flux', prompt: 'a boat' });
    expect(status).toBe(402);
    expect(body.error).toMatchObject({ type: 'insufficient_credits', code: 402, required: 3, available: 2.5 });
    expect(body.error!.message).toBe('Insufficient credits: 3 required, 2.5 available.');
    expect(await credits(h, key)).toMatchObject({ balance: 2.5, holdsActive: 0 });
    expect(await generationCount(accountId)).toBe(0);
  });

  it('400 unknown_cost for a model without a price', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    for (const body of [
      { kind: 'image', model: 'dall-e-9', prompt: 'x' },
      { kind: 'video', model: 'kling-2.1-pro', prompt: 'x' },
      { kind: 'chat', model: 'gpt-5.5', prompt: 'x' },
    ]) {
      const r = await generate(h, key, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'unknown_cost', code: 400, param: 'model' });
    }
    expect(await generationCount(accountId)).toBe(0);
    expect(await credits(h, key)).toMatchObject({ balance: 100, holdsActive: 0 });
  });

  it('400 content_policy_violation from the safety guard, before pricing', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const r = await generate(h, key, { kind: 'image', model: 'no-such-model', prompt: 'scene of a Beheading' });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ type: 'content_policy_violation', code: 400 });
    expect(await generationCount(accountId)).toBe(0);
    expect(await credits(h, key)).toMatchObject({ balance: 100, holdsActive: 0 });
  });

  it('400 invalid_request_error for malformed input, naming the parameter', async () => {
    const { key } = await h.account({ credits: 100 });
    const cases: [unknown, string | undefined][] = [
      [{ kind: 'image', model: 'flux' }, 'prompt'],
      [{ kind: 'image', model: 'flux', prompt: '   ' }, 'prompt'],
      [{ kind: 'song', prompt: 'x' }, 'kind'],
      [{ prompt: 'x' }, 'kind'],
      [{ kind: 'video', model: 'kling', prompt: 'x', seconds: 'ten' }, 'seconds'],
      [{ kind: 'image', model: 'flux', prompt: 'x', aspect: 'wide' }, 'aspect'],
      [{ kind: 'image', prompt: 'x' }, 'model'],
    ];
    for (const [body, param] of cases) {
      const r = await generate(h, key, body as Record<string, unknown>);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', code: 400, param });
    }
    for (const [payload, type] of [
      ['[]', 'application/json'],
      ['kind=image', 'text/plain'],
    ]) {
      const r = await h.call('POST', '/api/generate', { key, body: payload, headers: { 'content-type': type! } });
      expect(r.statusCode).toBe(400);
      expect(r.json()).toMatchObject({
        error: { type: 'invalid_request_error', message: expect.stringMatching(/JSON object/) },
      });
    }
    const notJson = await h.call('POST', '/api/generate', {
      key,
      body: '{"kind":',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.statusCode).toBe(400);
    expect(notJson.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 400 } });
    expect(await credits(h, key)).toMatchObject({ balance: 100, holdsActive: 0 });
  });

  it('401 unauthorized without a valid key, including a revoked one', async () => {
    const none = await h.call('GET', '/api/credits');
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({
      error: { type: 'unauthorized', code: 401, message: expect.any(String), param: null },
    });
    const bogus = await h.call('POST', '/api/generate', {
      key: 'gsk_not-a-real-key',
      body: { kind: 'chat', prompt: 'x' },
    });
    expect(bogus.statusCode).toBe(401);

    const { key, keyId } = await h.account({ credits: 1 });
    expect((await h.call('GET', '/api/credits', { key })).statusCode).toBe(200);
    expect((await h.admin('DELETE', `/admin/v1/keys/${keyId}`)).statusCode).toBe(200);
    const revoked = await h.call('GET', '/api/credits', { key });
    expect(revoked.statusCode).toBe(401);
    expect(revoked.json()).toMatchObject({ error: { type: 'unauthorized' } });
  });

  it('403 permission_error for a missing scope or a model outside the key allow-list', async () => {
    const chatOnly = await h.account({ credits: 100, scopes: ['generate:chat'] });
    const scope = await generate(h, chatOnly.key, { kind: 'image', model: 'flux', prompt: 'x' });
    expect(scope.status).toBe(403);
    expect(scope.body.error).toMatchObject({ type: 'permission_error', code: 403 });

    const fluxOnly = await h.account({ credits: 100, models: ['flux'] });
    const other = await generate(h, fluxOnly.key, { kind: 'image', model: 'gpt-image-1', prompt: 'x' });
    expect(other.status).toBe(403);
    expect(other.body.error).toMatchObject({ type: 'permission_error', param: 'model' });
    const allowed = await generate(h, fluxOnly.key, { kind: 'image', model: 'image-flux', prompt: 'x' });
    expect(allowed.body.generation).toMatchObject({ status: 'succeeded', creditsCharged: 3 });
  });

  it("404 not_found for an unknown id and for another account's generation", async () => {
    const a = await h.account({ credits: 10 });
    const b = await h.account({ credits: 10 });
    const mine = await generate(h, a.key, { kind: 'chat', prompt: 'hi' });
    for (const [key, id] of [
      [a.key, 'gen_00000000000000000000000000'],
      [a.key, 'nonsense'],
      [b.key, mine.body.generation.id],
    ] as const) {
      const r = await h.call('GET', `/api/generate/${id}`, { key });
      expect(r.statusCode).toBe(404);
      expect(r.json()).toMatchObject({ error: { type: 'not_found', code: 404 } });
    }
  });
});
