import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator } from '../../../core/providers/simulator';
import { eventually, startHarness } from '../../support/harness';
import type { Harness } from '../../support/harness';

/**
 * Every text and number field of the generate endpoints of groups A, B and C, fed arbitrary JSON values in an otherwise
 * valid request: the answer is never a 5xx, always comes within a second, and whatever it admitted
 * finishes (no workflow is left running, no hold is left held).
 */

// Arbitrary JSON, plus values each layer must refuse or survive: NUL and other control characters
// (PostgreSQL cannot store NUL), lone surrogates, huge and tiny numbers, long strings.
const nasty = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom(
    'a cat\u0000',
    '\ud800',
    'x\udc00y',
    '\u001b[31mred',
    '\u0007',
    '   ',
    '',
    'sim:delay=abc sim:tokens=-1',
    '😀'.repeat(50),
    'x'.repeat(20_000),
  ),
  fc.constantFrom(0, -1, -0.5, 1e308, -1e308, 2 ** 53, Number.MIN_VALUE, 3.7, 1e-9),
);

interface Target {
  url: string;
  base: Record<string, unknown>;
  fields: string[];
}

const C = '/api/generate';
const A = '/api/v1/generate';
const B = {
  chat: '/v1/chat/completions',
  images: '/v1/images/generations',
  video: '/v1/video/generations',
  videos: '/v1/videos',
};
const TARGETS: Target[] = [
  {
    url: C,
    base: { kind: 'image', model: 'flux', prompt: 'a cat' },
    fields: ['prompt', 'model', 'quality', 'aspect', 'resolution'],
  },
  {
    url: C,
    base: { kind: 'video', model: 'seedance-lite', prompt: 'a cat', seconds: 3 },
    fields: ['prompt', 'model', 'quality', 'aspect', 'seconds'],
  },
  { url: C, base: { kind: 'chat', prompt: 'a cat' }, fields: ['prompt', 'model', 'quality', 'aspect'] },
  {
    url: C,
    base: { kind: 'upscale', imageUrl: 'http://127.0.0.1:9/none.png', scale: 2 },
    fields: ['imageUrl', 'scale', 'model', 'prompt'],
  },
  {
    url: A,
    base: { kind: 'image', model: 'flux', prompt: 'a cat' },
    fields: ['prompt', 'model', 'quality', 'aspect', 'width', 'height'],
  },
  {
    url: A,
    base: { kind: 'video', model: 'seedance-lite', prompt: 'a cat', seconds: 3 },
    fields: ['prompt', 'model', 'quality', 'aspect', 'seconds'],
  },
  { url: A, base: { kind: 'chat', prompt: 'a cat' }, fields: ['prompt', 'model', 'max_tokens'] },
  { url: A, base: { kind: 'chat', messages: [{ role: 'user', content: 'a cat' }] }, fields: ['messages', 'model'] },
  {
    url: A,
    base: { kind: 'upscale', image_url: 'http://127.0.0.1:9/none.png', scale: 2 },
    fields: ['image_url', 'scale', 'model', 'prompt'],
  },
  {
    url: B.chat,
    base: { model: 'claude-haiku', messages: [{ role: 'user', content: 'a cat' }], max_tokens: 16 },
    fields: [
      'model',
      'messages',
      'max_tokens',
      'max_completion_tokens',
      'temperature',
      'top_p',
      'stop',
      'user',
      'seed',
      'stream',
    ],
  },
  {
    url: B.images,
    base: { model: 'flux', prompt: 'a cat' },
    fields: ['model', 'prompt', 'n', 'size', 'quality', 'response_format', 'user'],
  },
  {
    url: B.video,
    base: { model: 'kling-2.1-pro', prompt: 'a cat', duration: 5 },
    fields: ['model', 'prompt', 'duration', 'image_url'],
  },
  {
    url: B.videos,
    base: { model: 'sora-2', prompt: 'a cat', seconds: '4' },
    fields: ['model', 'prompt', 'seconds', 'size'],
  },
];

let h: Harness;
beforeAll(async () => {
  // The provider answers at once: the bound of a second is on the service's own handling.
  h = await startHarness({ syncWaitMs: 20_000, provider: createSimulator({ latencyMs: 0 }) });
});
afterAll(async () => {
  await h?.close();
});

describe('fuzzing the generate endpoints', () => {
  it('never answers 5xx or hangs, and leaves nothing in flight', { timeout: 300_000 }, async () => {
    const accounts: string[] = [];
    let admitted = 0;
    for (const target of TARGETS) {
      for (const field of target.fields) {
        // One key per field keeps each well inside the plan's rate limit.
        const { key, accountId } = await h.account({
          credits: 1_000_000,
          scopes: ['image', 'video', 'chat', 'upscale'],
        });
        accounts.push(accountId);
        await fc.assert(
          fc.asyncProperty(nasty, fc.boolean(), async (value, nested) => {
            const body = { ...target.base, [field]: value };
            // For arrays of messages, also fuzz inside a message.
            if (field === 'messages' && nested) body.messages = [{ role: 'user', content: value }];
            const started = performance.now();
            const res = await h.call('POST', target.url, { key, body, headers: { prefer: 'respond-async' } });
            const ms = performance.now() - started;
            expect(
              res.statusCode,
              `${target.url} ${field}=${JSON.stringify(value)?.slice(0, 80)}: ${res.body.slice(0, 200)}`,
            ).toBeLessThan(500);
            // No value makes a request hang (how fast an answer comes is the bench's business).
            expect(ms, `${target.url} ${field} took ${ms} ms`).toBeLessThan(30_000);
            if (String(res.headers['content-type']).startsWith('text/event-stream')) {
              // A fuzzed `stream: true` asks for server-sent events: a well-formed stream, ended by [DONE].
              expect(res.statusCode).toBe(200);
              expect(res.body.trimEnd().endsWith('data: [DONE]')).toBe(true);
              admitted++;
              return;
            }
            const json = res.json<{ error?: { type: string; code: number; message: string } }>();
            if (res.statusCode >= 400)
              expect(json.error).toMatchObject({
                type: expect.any(String),
                code: res.statusCode,
                message: expect.any(String),
              });
            else admitted++;
          }),
          { numRuns: 25 },
        );
      }
    }
    expect(admitted).toBeGreaterThan(0);

    // Whatever was admitted finishes: every generation terminal, no hold held, no workflow running.
    await eventually(
      async () => {
        const r = await h.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM generations WHERE account_id = ANY($1::text[]) AND status NOT IN ('succeeded', 'failed')`,
          [accounts],
        );
        return r.rows[0]!.n === 0 ? true : undefined;
      },
      120_000,
      250,
    );
    const held = await h.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM holds WHERE account_id = ANY($1::text[]) AND state = 'held'`,
      [accounts],
    );
    expect(held.rows[0]!.n).toBe(0);
    await eventually(
      async () => {
        let running = 0;
        for await (const _ of h.client.workflow.list({
          query: `TaskQueue = "${h.taskQueue}" AND ExecutionStatus = "Running"`,
        }))
          running++;
        return running === 0 ? true : undefined;
      },
      30_000,
      250,
    );
  });
});
