/**
 * Keeps the generated OpenAPI document (/openapi.json) honest: it is valid OpenAPI 3.1, it
 * describes exactly the routes the app serves, its examples are accepted, and every status it
 * documents is produced for real with a body that matches its schema.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAN_RATE_LIMITS } from '../../../core/plans';
import { PLANS } from '../../../core/plans';
import { freePort } from '../../../runtime/process';
import { ADMIN_TOKEN, eventually, startHarness, withScratchDatabase } from '../../support/harness';
import type { Harness } from '../../support/harness';
import { productionApi } from '../../support/production-api';
import { download } from '../../support/api';
import { vp8Keyframes } from '../../../core/media/webm-frames';
import type { GenerationRecord } from '../../support/api';
import {
  createConformance,
  loadDocument,
  mediaTypeOf,
  normalisePath,
  ownerOf,
  pointerOf,
  servedRoutes,
} from '../../support/openapi';
import type { Method, OpenApiDoc } from '../../support/openapi';

let h: Harness;
let doc: OpenApiDoc;
let c: ReturnType<typeof createConformance>;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
  doc = await loadDocument(h.app);
  c = createConformance(doc);
});
afterAll(async () => {
  await h?.close();
});

const packageVersion = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
const ASYNC = { prefer: 'respond-async' };
const MISSING_GENERATION = `gen_${'0'.repeat(26)}`;
const FILES = '/files/{*}';

interface Generation extends GenerationRecord {
  creditsQuoted: number;
  createdAt: string;
  finishedAt: string | null;
}

const call = (
  app: FastifyInstance,
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

/** Polls group C, checking every answer against the document, until the generation is final. */
async function untilFinal(key: string, id: string): Promise<GenerationRecord> {
  return eventually(
    async () => {
      const { generation } = c.conforms<{ generation: GenerationRecord }>(
        await h.call('GET', `/api/generate/${id}`, { key }),
        'get',
        '/api/generate/{id}',
        200,
      );
      return generation.status === 'succeeded' || generation.status === 'failed' ? generation : undefined;
    },
    20_000,
    100,
  );
}

/** Follows an outputUrl to the file route and checks the answer against the document. */
async function fetchOutput(outputUrl: string): Promise<LightMyRequestResponse> {
  const url = new URL(outputUrl);
  const res = await h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  c.conforms(res, 'get', FILES, 200);
  return res;
}

describe('the document', () => {
  it('validates as OpenAPI 3.1, its references resolve and its schemas are valid JSON Schema', async () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      expect(c.ajv.validateSchema(schema), `components.schemas.${name}: ${c.ajv.errorsText()}`).toBe(true);
      c.validatorAt(pointerOf('components', 'schemas', name));
    }
  });

  it('names each operation once, declares its path parameters and states its security', () => {
    const ids = c.operations().map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, method, op } of c.operations()) {
      const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const declared = (op.parameters ?? []).filter((p) => p.in === 'path');
      expect(declared.map((p) => p.name).sort(), `${method} ${path}`).toEqual(inPath.sort());
      expect(
        declared.every((p) => p.required),
        `${method} ${path}`,
      ).toBe(true);
      expect(op.security, `${method} ${path} states its security`).toBeDefined();
      for (const requirement of op.security ?? []) {
        for (const scheme of Object.keys(requirement))
          expect(Object.keys(doc.components.securitySchemes)).toContain(scheme);
      }
    }
  });

  it('agrees with the code on version and plans', () => {
    expect(doc.info.version).toBe(packageVersion);
    const plan = (doc.components.schemas.Balance as { properties: { plan: { enum: string[] } } }).properties.plan;
    expect(plan.enum).toEqual([...PLANS]);
    const accountBody = doc.paths['/admin/v1/accounts']!.post!.requestBody!.content['application/json']!.schema as {
      properties: { plan: { description: string } };
    };
    for (const p of PLANS) expect(accountBody.properties.plan.description).toContain(`${p} ${PLAN_RATE_LIMITS[p]}`);
  });
});

describe('routes', () => {
  it('the app serves exactly the documented paths and methods (HTML pages, their assets and the dashboard’s event streams aside)', async () => {
    await h.app.ready();
    // Hidden with `schema: { hide: true }`: the /docs page, the dashboard's pages and assets (HTML,
    // scripts, styles) and its Server-Sent Events streams. Every JSON endpoint is documented.
    const hidden = (r: string) =>
      /^\w+ \/docs(\/|$)/.test(r) ||
      /^get \/dashboard(\/(?!api\/)|$)/.test(r) ||
      r === 'get /dashboard/api/events' ||
      /^get \/dashboard\/api\/batches\/[^/]+\/events$/.test(r);
    const served = [...servedRoutes(h.app)]
      .filter((r) => !hidden(r))
      .map(normalisePath)
      .sort();
    const described = c
      .operations()
      .map(({ path, method }) => normalisePath(`${method} ${path}`))
      .sort();
    expect(served.length).toBeGreaterThan(10);
    expect(served).toEqual(described);
    expect((await h.app.inject({ method: 'GET', url: '/docs' })).statusCode).toBe(200);
  });

  it('answers 405 with Allow for a known path asked with another method, 404 for an unknown path', async () => {
    const wrong = await h.app.inject({ method: 'DELETE', url: '/api/v1/balance' });
    expect(wrong.statusCode).toBe(405);
    expect(wrong.headers.allow).toBe('GET, HEAD');
    expect(wrong.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 405 } });
    const put = await h.app.inject({ method: 'PUT', url: `/api/v1/generations/${MISSING_GENERATION}/cancel` });
    expect(put.headers.allow).toBe('POST');
    const none = await h.app.inject({ method: 'GET', url: '/api/v2/nothing' });
    expect(none.statusCode).toBe(404);
    expect(none.json()).toMatchObject({ error: { type: 'not_found', code: 404 } });
  });
});

describe('request examples', () => {
  it('are valid against their own schemas and accepted by the generate endpoints, which run them to succeeded', async () => {
    const { key } = await h.account({ credits: 2_000, chatCap: 1 });
    for (const [path, status] of [
      ['/api/generate', 200],
      ['/api/v1/generate', undefined],
    ] as const) {
      const schema = doc.paths[path]!.post!.requestBody!.content['application/json']!.schema as { $ref: string };
      const examples =
        (doc.components.schemas[schema.$ref.split('/').pop()!] as { examples?: unknown[] }).examples ?? [];
      expect(examples.length, path).toBeGreaterThanOrEqual(3);
      await Promise.all(
        examples.map(async (example, i) => {
          c.assertValid(schema.$ref.slice(1), example, `example ${i} of ${path}`);
          const res = await h.call('POST', path, { key, body: example });
          const code = status ?? ((example as { kind: string }).kind === 'video' ? 202 : 200);
          const body = c.conforms<{ generation?: GenerationRecord } & GenerationRecord>(res, 'post', path, code);
          const g = body.generation ?? body;
          const final = g.status === 'succeeded' || g.status === 'failed' ? g : await untilFinal(key, g.id);
          expect(final.status, `example ${i} of ${path}`).toBe('succeeded');
        }),
      );
    }
  });

  it('the admin API accepts each of its examples', async () => {
    for (const { path, method, op } of c.operations().filter(({ path }) => path.startsWith('/admin/'))) {
      const success = Number(
        Object.keys(op.responses)
          .filter((s) => s.startsWith('2'))
          .sort()[0],
      );
      const examples =
        (op.requestBody?.content['application/json']?.schema as { examples?: unknown[] } | undefined)?.examples ?? [];
      for (const example of examples) {
        const { accountId } = await h.account({ credits: 0 });
        c.conforms(await h.admin('POST', path.replace('{id}', accountId), example), method, path, success);
      }
    }
  });
});

describe('group C responses conform to the document', () => {
  it('200: image succeeded within the call, and its file', async () => {
    const { key } = await h.account({ credits: 100 });
    const res = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'image', model: 'image-flux', prompt: 'a lighthouse' },
    });
    const { generation } = c.conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
    expect(generation).toMatchObject({ kind: 'image', status: 'succeeded', creditsCharged: 3, error: null });
    expect(mediaTypeOf((await fetchOutput(generation.outputUrl)).headers['content-type'])).toBe('image/png');
  });

  it('200: image with Prefer: respond-async answers in flight, then is polled to succeeded', async () => {
    const { key } = await h.account({ credits: 100 });
    const res = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a kite sim:delay=500' },
      headers: ASYNC,
    });
    const { generation } = c.conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
    expect(res.headers['preference-applied']).toBe('respond-async');
    expect(['queued', 'running']).toContain(generation.status);
    expect(generation).toMatchObject({ outputUrl: '', creditsCharged: 0, error: null });
    expect((await untilFinal(key, generation.id)).status).toBe('succeeded');
  });

  it('200: video queued or running, its hold in the credits, then polled to succeeded with a file', async () => {
    const { key } = await h.account({ credits: 100 });
    const res = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'video', model: 'kling', prompt: 'waves', seconds: 5, quality: '720p' },
    });
    const { generation } = c.conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
    expect(['queued', 'running']).toContain(generation.status);
    expect(c.conforms(await h.call('GET', '/api/credits', { key }), 'get', '/api/credits', 200)).toMatchObject({
      balance: 57.5,
      holdsActive: 42.5,
    });
    const done = await untilFinal(key, generation.id);
    expect(done).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });
    expect(mediaTypeOf((await fetchOutput(done.outputUrl)).headers['content-type'])).toBe('video/webm');
  });

  it('200: chat succeeded with its text, free and then paid, and its file', async () => {
    const { key } = await h.account({ credits: 10, chatCap: 1 });
    for (const charged of [0, 2]) {
      const res = await h.call('POST', '/api/generate', {
        key,
        body: { kind: 'chat', model: 'chat-sonnet', prompt: 'hello sim:tokens=5' },
      });
      const { generation } = c.conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
      expect(generation).toMatchObject({ kind: 'chat', status: 'succeeded', creditsCharged: charged });
      expect(generation.text?.split(' ')).toHaveLength(5);
      expect(mediaTypeOf((await fetchOutput(generation.outputUrl)).headers['content-type'])).toBe('text/plain');
    }
    expect(c.conforms(await h.call('GET', '/api/credits', { key }), 'get', '/api/credits', 200)).toEqual({
      balance: 8,
      holdsActive: 0,
      trial: { chatCap: 1, chatUsed: 1, chatLeft: 0 },
    });
  });

  it('200: a failed generation carries its error object and charges nothing', async () => {
    const { key } = await h.account({ credits: 10 });
    const res = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'image', model: 'gpt-image-1', prompt: 'sim:fail a cat' },
    });
    const { generation } = c.conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
    expect(generation).toMatchObject({
      status: 'failed',
      creditsCharged: 0,
      outputUrl: '',
      error: { code: 'provider_failed', retryable: false },
    });
  });

  it('400: invalid_request_error, unknown_cost and content_policy_violation; 413 for an oversized body', async () => {
    const { key } = await h.account({ credits: 100 });
    const cases: [unknown, string, string | undefined][] = [
      [{ kind: 'image', model: 'flux' }, 'invalid_request_error', 'prompt'],
      [{ kind: 'song', prompt: 'x' }, 'invalid_request_error', 'kind'],
      [{ kind: 'image', model: 'flux', prompt: 'a cat\u0000' }, 'invalid_request_error', 'prompt'],
      [{ kind: 'image', model: 'flux', prompt: 'x', aspect: 'wide' }, 'invalid_request_error', 'aspect'],
      [{ kind: 'upscale', imageUrl: 'file:///etc/passwd', scale: 2 }, 'invalid_request_error', 'imageUrl'],
      [{ kind: 'image', model: 'dall-e-9', prompt: 'x' }, 'unknown_cost', 'model'],
      [{ kind: 'chat', model: 'gpt-5.5', prompt: 'x' }, 'unknown_cost', 'model'],
      [{ kind: 'image', model: 'flux', prompt: 'scene of a beheading' }, 'content_policy_violation', 'prompt'],
    ];
    for (const [body, type, param] of cases) {
      const { error } = c.conforms<{ error: Record<string, unknown> }>(
        await h.call('POST', '/api/generate', { key, body }),
        'post',
        '/api/generate',
        400,
      );
      expect(error, JSON.stringify(body)).toMatchObject({ type, code: 400, ...(param ? { param } : {}) });
    }
    const malformed = await call(h.app, 'post', '/api/generate', key, '{"kind":', {
      'content-type': 'application/json',
    });
    expect(c.conforms(malformed, 'post', '/api/generate', 400)).toMatchObject({
      error: { type: 'invalid_request_error' },
    });
    const badKey = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'chat', prompt: 'x' },
      headers: { 'idempotency-key': 'é' },
    });
    expect(c.conforms(badKey, 'post', '/api/generate', 400)).toMatchObject({ error: { param: 'Idempotency-Key' } });
    const oversized = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'chat', prompt: 'x'.repeat(9 * 1024 * 1024) },
    });
    expect(c.conforms(oversized, 'post', '/api/generate', 413)).toMatchObject({
      error: { type: 'invalid_request_error', code: 413 },
    });
  });

  it('402 with required and available credits; 403 for a missing scope or model; 409 for a reused Idempotency-Key', async () => {
    const poor = await h.account({ credits: 2.5 });
    const res = await h.call('POST', '/api/generate', {
      key: poor.key,
      body: { kind: 'image', model: 'image-flux', prompt: 'a boat' },
    });
    expect(c.conforms(res, 'post', '/api/generate', 402)).toMatchObject({
      error: { type: 'insufficient_credits', required: 3, available: 2.5 },
    });

    const chatOnly = await h.account({ credits: 100, scopes: ['chat'] });
    const scope = await h.call('POST', '/api/generate', {
      key: chatOnly.key,
      body: { kind: 'image', model: 'flux', prompt: 'x' },
    });
    expect(c.conforms(scope, 'post', '/api/generate', 403)).toMatchObject({
      error: { type: 'permission_error', param: 'kind' },
    });

    const { key } = await h.account({ credits: 10 });
    const headers = { 'idempotency-key': 'openapi-409' };
    c.conforms(
      await h.call('POST', '/api/generate', { key, headers, body: { kind: 'chat', prompt: 'one' } }),
      'post',
      '/api/generate',
      200,
    );
    const other = await h.call('POST', '/api/generate', { key, headers, body: { kind: 'chat', prompt: 'two' } });
    expect(c.conforms(other, 'post', '/api/generate', 409)).toMatchObject({ error: { type: 'idempotency_conflict' } });
  });

  it('404 for an unknown or malformed generation id, and for a bad file signature', async () => {
    const { key } = await h.account({ credits: 10 });
    for (const id of [MISSING_GENERATION, 'not-an-id']) {
      expect(
        c.conforms(await h.call('GET', `/api/generate/${id}`, { key }), 'get', '/api/generate/{id}', 404),
      ).toMatchObject({ error: { type: 'not_found' } });
    }
    c.conforms(
      await h.app.inject({
        method: 'GET',
        url: `/files/${MISSING_GENERATION}/output.png?expires=9999999999&signature=${'0'.repeat(64)}`,
      }),
      'get',
      FILES,
      404,
    );
    c.conforms(
      await h.app.inject({ method: 'GET', url: `/files/${MISSING_GENERATION}/output.png` }),
      'get',
      FILES,
      404,
    );
  });
});

describe('group A responses conform to the document', () => {
  it('200 for an image, 202 with Location for a video; poll, list and balance', async () => {
    const { key } = await h.account({ credits: 100 });
    const image = c.conforms<Generation>(
      await h.call('POST', '/api/v1/generate', {
        key,
        body: { kind: 'image', model: 'image-seedream-3', prompt: 'a hill', width: 1200, height: 800 },
      }),
      'post',
      '/api/v1/generate',
      200,
    );
    expect(image).toMatchObject({
      status: 'succeeded',
      creditsCharged: 6,
      creditsQuoted: 6,
      params: { aspect: '3:2', width: 1200, height: 800 },
    });

    const res = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'video', model: 'kling-2.1-pro', prompt: 'rain', seconds: 5 },
    });
    const video = c.conforms<Generation>(res, 'post', '/api/v1/generate', 202);
    expect(res.headers.location).toBe(`/api/v1/generations/${video.id}`);
    expect(video).toMatchObject({ model: 'kling', creditsQuoted: 42.5, creditsCharged: 0 });
    const balance = c.conforms(await h.call('GET', '/api/v1/balance', { key }), 'get', '/api/v1/balance', 200);
    expect(
      c.conforms<{ data: unknown[] }>(await h.call('GET', '/api/v1/ledger', { key }), 'get', '/api/v1/ledger', 200).data
        .length,
    ).toBeGreaterThan(0);
    c.conforms(await h.call('GET', '/api/v1/ledger?format=csv', { key }), 'get', '/api/v1/ledger', 200);
    c.conforms(await h.call('GET', '/api/v1/ledger?cursor=nonsense', { key }), 'get', '/api/v1/ledger', 400);
    expect(
      c.conforms<{ total: { creditsCharged: number } }>(
        await h.call('GET', '/api/v1/usage?group_by=model', { key }),
        'get',
        '/api/v1/usage',
        200,
      ).total.creditsCharged,
    ).toBe(6);
    c.conforms(await h.call('GET', '/api/v1/usage?group_by=week', { key }), 'get', '/api/v1/usage', 400);
    expect(balance).toEqual({
      balance: 51.5,
      holdsActive: 42.5,
      plan: 'samurai',
      trial: { chatCap: 0, chatUsed: 0, chatLeft: 0 },
    });

    const done = await eventually(async () => {
      const g = c.conforms<Generation>(
        await h.call('GET', `/api/v1/generations/${video.id}`, { key }),
        'get',
        '/api/v1/generations/{id}',
        200,
      );
      return g.status === 'succeeded' ? g : undefined;
    });
    expect(done).toMatchObject({ creditsCharged: 42.5, finishedAt: expect.any(String) });
    const list = c.conforms<{ data: Generation[]; next_cursor: string | null }>(
      await h.call('GET', '/api/v1/generations?limit=1', { key }),
      'get',
      '/api/v1/generations',
      200,
    );
    expect(list.data.map((g) => g.id)).toEqual([video.id]);
    const rest = c.conforms<{ data: Generation[]; next_cursor: string | null }>(
      await h.call('GET', `/api/v1/generations?limit=5&cursor=${list.next_cursor ?? ''}`, { key }),
      'get',
      '/api/v1/generations',
      200,
    );
    expect(rest).toMatchObject({ data: [{ id: image.id }], next_cursor: null });
  });

  it('models are public: 200 without a key, filtered by kind; 400 for an unknown kind', async () => {
    const all = c.conforms<{ data: { kind: string }[] }>(
      await h.app.inject({ method: 'GET', url: '/api/v1/models' }),
      'get',
      '/api/v1/models',
      200,
    );
    expect(new Set(all.data.map((m) => m.kind))).toEqual(new Set(['image', 'video', 'chat', 'upscale']));
    const videos = c.conforms<{ data: { kind: string }[] }>(
      await h.app.inject({ method: 'GET', url: '/api/v1/models?kind=video' }),
      'get',
      '/api/v1/models',
      200,
    );
    expect(videos.data.every((m) => m.kind === 'video')).toBe(true);
    c.conforms(await h.app.inject({ method: 'GET', url: '/api/v1/models?kind=song' }), 'get', '/api/v1/models', 400);
  });

  it('live streams: 200 as server-sent events ending with the record, 404 for another account, 400 for an overlong id list', async () => {
    const { key } = await h.account({ credits: 10 });
    const other = await h.account({ credits: 1 });
    const image = c.conforms<Generation>(
      await h.call('POST', '/api/v1/generate', { key, body: { kind: 'image', model: 'flux', prompt: 'a pier' } }),
      'post',
      '/api/v1/generate',
      200,
    );
    const one = await h.call('GET', `/api/v1/generations/${image.id}/events`, { key });
    c.conforms(one, 'get', '/api/v1/generations/{id}/events', 200);
    expect(one.body).toContain(`id: 3\nevent: done\ndata: {"id":"${image.id}"`);
    c.conforms(
      await h.call('GET', `/api/v1/generations/${image.id}/events`, { key: other.key }),
      'get',
      '/api/v1/generations/{id}/events',
      404,
    );
    const listed = await h.call('GET', `/api/v1/events?ids=${image.id}`, { key });
    c.conforms(listed, 'get', '/api/v1/events', 200);
    expect(listed.body).toContain('event: done');
    c.conforms(await h.call('GET', `/api/v1/events?ids=${'x'.repeat(4_001)}`, { key }), 'get', '/api/v1/events', 400);
    // A Last-Event-ID that is none of the stream's ids.
    c.conforms(
      await h.call('GET', `/api/v1/generations/${image.id}/events`, {
        key,
        headers: { 'last-event-id': '9'.repeat(41) },
      }),
      'get',
      '/api/v1/generations/{id}/events',
      400,
    );
  });

  it('cancel: 200 for a running video (hold released), 409 for a finished one, 404 for another account', async () => {
    const { key } = await h.account({ credits: 100 });
    const other = await h.account({ credits: 1 });
    const video = c.conforms<Generation>(
      await h.call('POST', '/api/v1/generate', {
        key,
        body: { kind: 'video', model: 'kling', prompt: 'slow sim:delay=30000' },
      }),
      'post',
      '/api/v1/generate',
      202,
    );
    c.conforms(
      await h.call('POST', `/api/v1/generations/${video.id}/cancel`, { key: other.key }),
      'post',
      '/api/v1/generations/{id}/cancel',
      404,
    );
    c.conforms(
      await h.call('GET', `/api/v1/generations/${video.id}`, { key: other.key }),
      'get',
      '/api/v1/generations/{id}',
      404,
    );
    const cancelled = c.conforms<Generation>(
      await h.call('POST', `/api/v1/generations/${video.id}/cancel`, { key }),
      'post',
      '/api/v1/generations/{id}/cancel',
      200,
    );
    expect(cancelled).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'cancelled' } });
    expect(c.conforms(await h.call('GET', '/api/v1/balance', { key }), 'get', '/api/v1/balance', 200)).toMatchObject({
      balance: 100,
      holdsActive: 0,
    });

    const chat = c.conforms<Generation>(
      await h.call('POST', '/api/v1/generate', { key, body: { kind: 'chat', prompt: 'hi' } }),
      'post',
      '/api/v1/generate',
      200,
    );
    const finished = await h.call('POST', `/api/v1/generations/${chat.id}/cancel`, { key });
    expect(c.conforms(finished, 'post', '/api/v1/generations/{id}/cancel', 409)).toMatchObject({
      error: { type: 'generation_finished', status: 'succeeded' },
    });
  });

  it('400, 402, 403, 409 and 413 on generate; 400 on a bad list query', async () => {
    const { key } = await h.account({ credits: 5, scopes: ['image', 'video', 'chat'] });
    const bad: [unknown, string, string][] = [
      [{ kind: 'chat' }, 'invalid_request_error', 'messages'],
      [{ kind: 'image', model: 'flux', prompt: 'x', width: 1024 }, 'invalid_request_error', 'height'],
      [{ kind: 'video', model: 'wan-9', prompt: 'x' }, 'unknown_cost', 'model'],
      [{ kind: 'video', model: 'kling', prompt: 'gore everywhere' }, 'content_policy_violation', 'prompt'],
    ];
    for (const [body, type, param] of bad) {
      expect(
        c.conforms(await h.call('POST', '/api/v1/generate', { key, body }), 'post', '/api/v1/generate', 400),
      ).toMatchObject({ error: { type, param } });
    }
    c.conforms(
      await h.call('POST', '/api/v1/generate', { key, body: { kind: 'video', model: 'kling', prompt: 'x' } }),
      'post',
      '/api/v1/generate',
      402,
    );
    const noScope = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'upscale', image_url: 'https://example.com/a.png', scale: 2 },
    });
    expect(c.conforms(noScope, 'post', '/api/v1/generate', 403)).toMatchObject({ error: { type: 'permission_error' } });
    const headers = { 'idempotency-key': 'a-409' };
    c.conforms(
      await h.call('POST', '/api/v1/generate', { key, headers, body: { kind: 'chat', prompt: 'one' } }),
      'post',
      '/api/v1/generate',
      200,
    );
    c.conforms(
      await h.call('POST', '/api/v1/generate', { key, headers, body: { kind: 'chat', prompt: 'two' } }),
      'post',
      '/api/v1/generate',
      409,
    );
    c.conforms(
      await h.call('POST', '/api/v1/generate', { key, body: { kind: 'chat', prompt: 'x'.repeat(9 * 1024 * 1024) } }),
      'post',
      '/api/v1/generate',
      413,
    );
    // The quote prices by the same rules and holds nothing: even past the balance it answers.
    expect(
      c.conforms(
        await h.call('POST', '/api/v1/quote', {
          key,
          body: { kind: 'video', model: 'kling', prompt: 'x', seconds: 10 },
        }),
        'post',
        '/api/v1/quote',
        200,
      ),
    ).toMatchObject({
      kind: 'video',
      model: 'kling',
      credits: 85,
      affordable: false,
      params: { seconds: 10, resolution: '720p' },
    });
    for (const [body] of bad)
      c.conforms(await h.call('POST', '/api/v1/quote', { key, body }), 'post', '/api/v1/quote', 400);
    c.conforms(
      await h.call('POST', '/api/v1/quote', {
        key,
        body: { kind: 'upscale', image_url: 'https://example.com/a.png', scale: 2 },
      }),
      'post',
      '/api/v1/quote',
      403,
    );
    for (const query of ['limit=0', 'limit=abc', 'status=done', 'cursor=bm9wZQ']) {
      c.conforms(await h.call('GET', `/api/v1/generations?${query}`, { key }), 'get', '/api/v1/generations', 400);
    }
  });
});

describe('video previews and remix (group A)', () => {
  it('a succeeded video shows thumbnailUrl and spritesheetUrl (JPEG); remix: 202 held like a new video, 400, 402, 403, 404, 409, 413', async () => {
    const { key, accountId } = await h.account({ credits: 100, scopes: ['video'] });
    const other = await h.account({ credits: 100, scopes: ['video'] });
    const source = c.conforms<Generation>(
      await h.call('POST', '/api/v1/generate', {
        key,
        body: { kind: 'video', model: 'kling', prompt: 'waves sim:delay=100', aspect: '9:16' },
      }),
      'post',
      '/api/v1/generate',
      202,
    );
    expect(source).toMatchObject({ thumbnailUrl: null, spritesheetUrl: null });
    const failed = c.conforms<Generation>(
      await h.call('POST', '/api/v1/generate', { key, body: { kind: 'video', model: 'kling', prompt: 'sim:fail' } }),
      'post',
      '/api/v1/generate',
      202,
    );
    const done = await eventually(async () => {
      const g = c.conforms<Generation & { thumbnailUrl: string | null; spritesheetUrl: string | null }>(
        await h.call('GET', `/api/v1/generations/${source.id}`, { key }),
        'get',
        '/api/v1/generations/{id}',
        200,
      );
      return g.status === 'succeeded' ? g : undefined;
    });
    for (const url of [done.thumbnailUrl, done.spritesheetUrl]) {
      const file = await download(h, url!);
      expect(file).toMatchObject({ status: 200, contentType: 'image/jpeg' });
      expect(file.body.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    }
    await eventually(async () =>
      (await h.call('GET', `/api/v1/generations/${failed.id}`, { key })).json<Generation>().status === 'failed'
        ? true
        : undefined,
    );
    expect(c.conforms(await h.call('GET', '/api/v1/balance', { key }), 'get', '/api/v1/balance', 200)).toMatchObject({
      balance: 57.5,
      holdsActive: 0,
    });

    const path = '/api/v1/generations/{id}/remix';
    const url = `/api/v1/generations/${source.id}/remix`;
    const headers = { 'idempotency-key': 'remix-a' };
    const remixRes = await h.call('POST', url, {
      key,
      headers,
      body: { prompt: 'the same waves at night sim:delay=100' },
    });
    const remix = c.conforms<Generation>(remixRes, 'post', path, 202);
    expect(remixRes.headers.location).toBe(`/api/v1/generations/${remix.id}`);
    // The source's model, seconds, resolution and aspect; held like any video.
    expect(remix).toMatchObject({
      kind: 'video',
      model: 'kling',
      status: 'queued',
      creditsQuoted: 42.5,
      params: { seconds: 5, resolution: '720p', aspect: '9:16', remixedFrom: source.id },
    });
    expect(c.conforms(await h.call('GET', '/api/v1/balance', { key }), 'get', '/api/v1/balance', 200)).toMatchObject({
      balance: 15,
      holdsActive: 42.5,
    });
    // The same key and body: the same remix, nothing held twice; the same key for another prompt: 409.
    expect(
      c.conforms<Generation>(
        await h.call('POST', url, { key, headers, body: { prompt: 'the same waves at night sim:delay=100' } }),
        'post',
        path,
        202,
      ).id,
    ).toBe(remix.id);
    expect(
      c.conforms(await h.call('POST', url, { key, headers, body: { prompt: 'another' } }), 'post', path, 409),
    ).toMatchObject({ error: { type: 'idempotency_conflict' } });
    expect(c.conforms(await h.call('POST', url, { key, body: { prompt: 'again' } }), 'post', path, 402)).toMatchObject({
      error: { type: 'insufficient_credits' },
    });

    expect(
      c.conforms(
        await h.call('POST', `/api/v1/generations/${failed.id}/remix`, { key, body: { prompt: 'x' } }),
        'post',
        path,
        409,
      ),
    ).toMatchObject({ error: { type: 'generation_not_succeeded', status: 'failed' } });
    c.conforms(await h.call('POST', url, { key: other.key, body: { prompt: 'x' } }), 'post', path, 404);
    c.conforms(
      await h.call('POST', `/api/v1/generations/${MISSING_GENERATION}/remix`, { key, body: { prompt: 'x' } }),
      'post',
      path,
      404,
    );
    const imageKey = (await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['image'] })).json<{
      key: string;
    }>().key;
    expect(
      c.conforms(await h.call('POST', url, { key: imageKey, body: { prompt: 'x' } }), 'post', path, 403),
    ).toMatchObject({ error: { type: 'permission_error' } });
    for (const body of [{}, { prompt: '' }, { prompt: 'a beheading' }])
      c.conforms(await h.call('POST', url, { key, body }), 'post', path, 400);
    c.conforms(await h.call('POST', url, { key, body: { prompt: 'x'.repeat(9 * 1024 * 1024) } }), 'post', path, 413);

    const remixed = await eventually(async () => {
      const g = (await h.call('GET', `/api/v1/generations/${remix.id}`, { key })).json<
        Generation & { thumbnailUrl: string | null }
      >();
      return g.status === 'succeeded' ? g : undefined;
    });
    expect(remixed).toMatchObject({ creditsCharged: 42.5, thumbnailUrl: expect.stringContaining('/files/') });
    expect(c.conforms(await h.call('GET', '/api/v1/balance', { key }), 'get', '/api/v1/balance', 200)).toMatchObject({
      balance: 15,
      holdsActive: 0,
    });
    const list = c.conforms<{ data: Generation[] }>(
      await h.call('GET', '/api/v1/generations?kind=video', { key }),
      'get',
      '/api/v1/generations',
      200,
    );
    expect(list.data.map((g) => g.id)).toEqual([remix.id, failed.id, source.id]);
  });
});

describe('video extensions and edits (group A)', () => {
  const until = (key: string, id: string, status: string) =>
    eventually(async () => {
      const g = (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<Generation>();
      return g.status === status ? g : undefined;
    });
  const balance = async (key: string) =>
    c.conforms(await h.call('GET', '/api/v1/balance', { key }), 'get', '/api/v1/balance', 200);

  it('extend and edit: 202 held before running, charged on success, released on failure; the source linked; 400, 402, 403, 404, 409, 413', async () => {
    const { key, accountId } = await h.account({ credits: 100, scopes: ['video'] });
    const other = await h.account({ credits: 100, scopes: ['video'] });
    // seedance-lite: 3 to 12 s at 3 credits a second in 720p; 5 s by default (15 credits).
    const source = c.conforms<Generation>(
      await h.call('POST', '/api/v1/generate', {
        key,
        body: { kind: 'video', model: 'seedance-lite', prompt: 'waves sim:delay=100' },
      }),
      'post',
      '/api/v1/generate',
      202,
    );
    const failed = (
      await h.call('POST', '/api/v1/generate', {
        key,
        body: { kind: 'video', model: 'seedance-lite', prompt: 'sim:fail' },
      })
    ).json<Generation>();
    await until(key, source.id, 'succeeded');
    await until(key, failed.id, 'failed');
    expect(await balance(key)).toMatchObject({ balance: 85, holdsActive: 0 });

    const extendPath = '/api/v1/generations/{id}/extend';
    const extendUrl = `/api/v1/generations/${source.id}/extend`;
    const headers = { 'idempotency-key': 'extend-a' };
    const body = { prompt: 'the waves calm down sim:delay=100', seconds: 4 };
    const res = await h.call('POST', extendUrl, { key, headers, body });
    const extension = c.conforms<Generation>(res, 'post', extendPath, 202);
    expect(res.headers.location).toBe(`/api/v1/generations/${extension.id}`);
    expect(extension).toMatchObject({
      kind: 'video',
      model: 'seedance-lite',
      status: 'queued',
      creditsQuoted: 12,
      params: { seconds: 4, stitchedSeconds: 9, resolution: '720p', extendedFrom: source.id },
    });
    expect(await balance(key)).toMatchObject({ balance: 73, holdsActive: 12 });
    expect(
      c.conforms<Generation>(await h.call('POST', extendUrl, { key, headers, body }), 'post', extendPath, 202).id,
    ).toBe(extension.id);
    expect(
      c.conforms(
        await h.call('POST', extendUrl, { key, headers, body: { ...body, seconds: 5 } }),
        'post',
        extendPath,
        409,
      ),
    ).toMatchObject({ error: { type: 'idempotency_conflict' } });
    // 40 s is clamped to the model's 12 (36 credits); the run fails and the hold goes back.
    const clamped = c.conforms<Generation>(
      await h.call('POST', extendUrl, { key, body: { prompt: 'sim:fail', seconds: 40 } }),
      'post',
      extendPath,
      202,
    );
    expect(clamped).toMatchObject({ creditsQuoted: 36, params: { seconds: 12, stitchedSeconds: 17 } });
    expect(await until(key, clamped.id, 'failed')).toMatchObject({ creditsCharged: 0 });
    expect(await until(key, extension.id, 'succeeded')).toMatchObject({ creditsCharged: 12 });
    expect(await balance(key)).toMatchObject({ balance: 73, holdsActive: 0 });

    // An edit of the extension: priced as a run of its whole 9 s (27 credits).
    const editPath = '/api/v1/generations/{id}/edit';
    const edit = c.conforms<Generation>(
      await h.call('POST', `/api/v1/generations/${extension.id}/edit`, {
        key,
        body: { prompt: 'under snow sim:delay=100' },
      }),
      'post',
      editPath,
      202,
    );
    expect(edit).toMatchObject({ creditsQuoted: 27, params: { seconds: 9, editedFrom: extension.id } });
    expect(await until(key, edit.id, 'succeeded')).toMatchObject({ creditsCharged: 27 });
    const file = await download(h, (await until(key, edit.id, 'succeeded')).outputUrl);
    expect(vp8Keyframes(file.body)).toHaveLength(54);
    expect(await balance(key)).toMatchObject({ balance: 46, holdsActive: 0 });
    // An edit that fails: held at the source's length (15 credits), then released.
    const failedEdit = c.conforms<Generation>(
      await h.call('POST', `/api/v1/generations/${source.id}/edit`, {
        key,
        body: { prompt: 'sim:fail sim:delay=500' },
      }),
      'post',
      editPath,
      202,
    );
    expect(await balance(key)).toMatchObject({ balance: 31, holdsActive: 15 });
    expect(await until(key, failedEdit.id, 'failed')).toMatchObject({ creditsQuoted: 15, creditsCharged: 0 });
    expect(await balance(key)).toMatchObject({ balance: 46, holdsActive: 0 });

    const imageKey = (await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['image'] })).json<{
      key: string;
    }>().key;
    for (const [path, url, ok] of [
      [extendPath, extendUrl, { prompt: 'x', seconds: 4 }],
      [editPath, `/api/v1/generations/${source.id}/edit`, { prompt: 'x' }],
    ] as const) {
      expect(
        c.conforms(await h.call('POST', url.replace(source.id, failed.id), { key, body: ok }), 'post', path, 409),
      ).toMatchObject({ error: { type: 'generation_not_succeeded', status: 'failed' } });
      c.conforms(await h.call('POST', url, { key: other.key, body: ok }), 'post', path, 404);
      c.conforms(
        await h.call('POST', url.replace(source.id, MISSING_GENERATION), { key, body: ok }),
        'post',
        path,
        404,
      );
      expect(c.conforms(await h.call('POST', url, { key: imageKey, body: ok }), 'post', path, 403)).toMatchObject({
        error: { type: 'permission_error' },
      });
      for (const bad of [{}, { ...ok, prompt: '' }, { ...ok, prompt: 'a beheading' }, { ...ok, size: 'big' }])
        c.conforms(await h.call('POST', url, { key, body: bad }), 'post', path, 400);
      c.conforms(
        await h.call('POST', url, { key, body: { ...ok, prompt: 'x'.repeat(9 * 1024 * 1024) } }),
        'post',
        path,
        413,
      );
      c.conforms(await h.call('POST', url, { key, body: { ...ok, max_credits: 1 } }), 'post', path, 402);
    }
    for (const seconds of [0, -3, 2.5, '4', null])
      expect(
        c.conforms(await h.call('POST', extendUrl, { key, body: { prompt: 'x', seconds } }), 'post', extendPath, 400),
      ).toMatchObject({ error: { param: 'seconds' } });
    expect(await balance(key)).toMatchObject({ balance: 46, holdsActive: 0 });
    expect(await balance(other.key)).toMatchObject({ balance: 100, holdsActive: 0 });
  });
});

describe('authentication and rate limits on every keyed route', () => {
  const keyed = (): [Method, string, string, unknown][] => [
    ['post', '/api/generate', '/api/generate', { kind: 'chat', prompt: 'hi' }],
    ['get', '/api/generate/{id}', `/api/generate/${MISSING_GENERATION}`, undefined],
    ['get', '/api/credits', '/api/credits', undefined],
    ['post', '/api/v1/generate', '/api/v1/generate', { kind: 'chat', prompt: 'hi' }],
    ['post', '/api/v1/quote', '/api/v1/quote', { kind: 'chat', prompt: 'hi' }],
    ['get', '/api/v1/balance', '/api/v1/balance', undefined],
    ['get', '/api/v1/ledger', '/api/v1/ledger', undefined],
    ['get', '/api/v1/usage', '/api/v1/usage', undefined],
    ['get', '/api/v1/generations', '/api/v1/generations', undefined],
    ['get', '/api/v1/generations/{id}', `/api/v1/generations/${MISSING_GENERATION}`, undefined],
    ['post', '/api/v1/generations/{id}/cancel', `/api/v1/generations/${MISSING_GENERATION}/cancel`, undefined],
    ['post', '/api/v1/generations/{id}/remix', `/api/v1/generations/${MISSING_GENERATION}/remix`, { prompt: 'x' }],
    [
      'post',
      '/api/v1/generations/{id}/extend',
      `/api/v1/generations/${MISSING_GENERATION}/extend`,
      { prompt: 'x', seconds: 4 },
    ],
    ['post', '/api/v1/generations/{id}/edit', `/api/v1/generations/${MISSING_GENERATION}/edit`, { prompt: 'x' }],
    ['get', '/api/v1/generations/{id}/events', `/api/v1/generations/${MISSING_GENERATION}/events`, undefined],
    ['get', '/api/v1/events', `/api/v1/events?ids=${MISSING_GENERATION}`, undefined],
    ...customerRoutes().map(([m, p, u, b]): [Method, string, string, unknown] => [m, p, u, b]),
  ];

  it('401 without a key, with a malformed key and with a revoked key, typed per group', async () => {
    const { key, keyId } = await h.account({ credits: 10 });
    c.conforms(await h.admin('DELETE', `/admin/v1/keys/${keyId}`), 'delete', '/admin/v1/keys/{id}', 200);
    for (const [method, path, url, body] of keyed()) {
      for (const auth of [undefined, 'not-a-key', key]) {
        const { error } = c.conforms<{ error: { type: string } }>(
          await call(h.app, method, url, auth, body),
          method,
          path,
          401,
        );
        expect(error.type).toBe(path.startsWith('/api/v1/') ? 'authentication_error' : 'unauthorized');
      }
    }
  });

  it('429 with Retry-After once the plan’s window is used up', async () => {
    const { key } = await h.account({ credits: 10, plan: 'free' });
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) {
      const res = await h.call('GET', '/api/credits', { key });
      c.conforms(res, 'get', '/api/credits', 200);
      expect(res.headers['ratelimit-remaining']).toBe(String(PLAN_RATE_LIMITS.free - i - 1));
    }
    for (const [method, path, url, body] of keyed()) {
      const res = await call(h.app, method, url, key, body);
      expect(c.conforms(res, method, path, 429)).toMatchObject({ error: { type: 'rate_limit_error', code: 429 } });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
  });
});

/** The account's customers and audit log under /api/v1 (a key with the customers and audit scopes). */
function customerRoutes(): [Method, string, string, unknown][] {
  return [
    ['get', '/api/v1/customer-defaults', '/api/v1/customer-defaults', undefined],
    ['put', '/api/v1/customer-defaults', '/api/v1/customer-defaults', { budget: null, rateLimitPerMinute: null }],
    ['get', '/api/v1/customers', '/api/v1/customers', undefined],
    ['get', '/api/v1/customers/{customer}', '/api/v1/customers/c1', undefined],
    ['put', '/api/v1/customers/{customer}/limits', '/api/v1/customers/c1/limits', { rateLimitPerMinute: 5 }],
    ['delete', '/api/v1/customers/{customer}/limits', '/api/v1/customers/c1/limits', undefined],
    ['get', '/api/v1/audit-log', '/api/v1/audit-log', undefined],
  ];
}

describe('customers and the audit log (group A) conform to the document', () => {
  it('200, 400, 403 without the scope, 404 for a customer never named', async () => {
    const { key } = await h.account({ credits: 10, scopes: ['image', 'customers', 'audit'] });
    const { key: plain } = await h.account({ credits: 10, scopes: ['image'] });
    for (const [method, path, url, body] of customerRoutes())
      expect(
        c.conforms<{ error: { type: string } }>(await call(h.app, method, url, plain, body), method, path, 403).error
          .type,
      ).toBe('permission_error');
    c.conforms(await call(h.app, 'get', '/api/v1/customers/c1', key), 'get', '/api/v1/customers/{customer}', 404);
    c.conforms(
      await call(h.app, 'delete', '/api/v1/customers/c1/limits', key),
      'delete',
      '/api/v1/customers/{customer}/limits',
      404,
    );
    const defaults = { budget: { maxCredits: 30, period: 'month' }, rateLimitPerMinute: 20 };
    expect(
      c.conforms(
        await call(h.app, 'put', '/api/v1/customer-defaults', key, defaults),
        'put',
        '/api/v1/customer-defaults',
        200,
      ),
    ).toEqual(defaults);
    c.conforms(await call(h.app, 'get', '/api/v1/customer-defaults', key), 'get', '/api/v1/customer-defaults', 200);
    const own = c.conforms<{ customer: string; budget: { source: string }; rateLimitPerMinute: number }>(
      await call(h.app, 'put', '/api/v1/customers/a%20b%2Fc/limits', key, { rateLimitPerMinute: 5 }),
      'put',
      '/api/v1/customers/{customer}/limits',
      200,
    );
    expect(own).toMatchObject({ customer: 'a b/c', budget: { source: 'default' }, rateLimitPerMinute: 5 });
    c.conforms(
      await call(h.app, 'get', '/api/v1/customers/a%20b%2Fc', key),
      'get',
      '/api/v1/customers/{customer}',
      200,
    );
    const list = c.conforms<{ data: { customer: string }[] }>(
      await call(h.app, 'get', '/api/v1/customers', key),
      'get',
      '/api/v1/customers',
      200,
    );
    expect(list.data.map((x) => x.customer)).toEqual(['a b/c']);
    c.conforms(
      await call(h.app, 'delete', '/api/v1/customers/a%20b%2Fc/limits', key),
      'delete',
      '/api/v1/customers/{customer}/limits',
      200,
    );
    for (const [method, path, url, body] of [
      ['put', '/api/v1/customer-defaults', '/api/v1/customer-defaults', { budget: { maxCredits: -1, period: 'day' } }],
      ['put', '/api/v1/customers/{customer}/limits', '/api/v1/customers/c1/limits', { rateLimitPerMinute: 0 }],
      ['put', '/api/v1/customers/{customer}/limits', `/api/v1/customers/${'x'.repeat(300)}/limits`, {}],
      ['get', '/api/v1/customers/{customer}', `/api/v1/customers/${'x'.repeat(300)}`, undefined],
      ['delete', '/api/v1/customers/{customer}/limits', `/api/v1/customers/${'x'.repeat(300)}/limits`, undefined],
      ['get', '/api/v1/customers', '/api/v1/customers?cursor=nonsense', undefined],
      ['get', '/api/v1/audit-log', '/api/v1/audit-log?cursor=nonsense', undefined],
    ] as [Method, string, string, unknown][])
      c.conforms(await call(h.app, method, url, key, body), method, path, 400);
    const audit = c.conforms<{ data: { action: string; target: string | null }[] }>(
      await call(h.app, 'get', '/api/v1/audit-log', key),
      'get',
      '/api/v1/audit-log',
      200,
    );
    expect(audit.data.slice(0, 3).map((e) => [e.action, e.target])).toEqual([
      ['customer.limits_removed', 'a b/c'],
      ['customer.limits_set', 'a b/c'],
      ['customer_defaults.set', null],
    ]);
  });
});

describe('operator routes conform to the document', () => {
  it('admin: 201s, 200 top-up, 400, 401 and 404', async () => {
    const { id } = c.conforms<{ id: string }>(
      await h.admin('POST', '/admin/v1/accounts', { plan: 'ronin', credits: 5 }),
      'post',
      '/admin/v1/accounts',
      201,
    );
    const key = c.conforms<{ id: string }>(
      await h.admin('POST', `/admin/v1/accounts/${id}/keys`, { scopes: ['generate:chat', 'image'] }),
      'post',
      '/admin/v1/accounts/{id}/keys',
      201,
    );
    expect(
      c.conforms(
        await call(h.app, 'put', `/admin/v1/keys/${key.id}/budget`, ADMIN_TOKEN, { maxCredits: 4, period: 'week' }),
        'put',
        '/admin/v1/keys/{id}/budget',
        200,
      ),
    ).toMatchObject({ keyId: key.id, maxCredits: 4, period: 'week', spentCredits: 0, availableCredits: 4 });
    c.conforms(
      await call(h.app, 'put', `/admin/v1/keys/${key.id}/budget`, ADMIN_TOKEN, { maxCredits: -1, period: 'week' }),
      'put',
      '/admin/v1/keys/{id}/budget',
      400,
    );
    c.conforms(
      await call(h.app, 'delete', `/admin/v1/keys/${key.id}/budget`, ADMIN_TOKEN),
      'delete',
      '/admin/v1/keys/{id}/budget',
      200,
    );
    expect(
      c.conforms(
        await h.admin('POST', `/admin/v1/accounts/${id}/credits`, { credits: 2.5 }),
        'post',
        '/admin/v1/accounts/{id}/credits',
        200,
      ),
    ).toEqual({ id, balance: 7.5 });
    const lowBalance = '/admin/v1/accounts/{id}/low-balance';
    expect(
      c.conforms(
        await call(h.app, 'put', `/admin/v1/accounts/${id}/low-balance`, ADMIN_TOKEN, { thresholdCredits: 5 }),
        'put',
        lowBalance,
        200,
      ),
    ).toEqual({ thresholdCredits: 5, data: [] });
    c.conforms(
      await call(h.app, 'put', `/admin/v1/accounts/${id}/low-balance`, ADMIN_TOKEN, { thresholdCredits: 'low' }),
      'put',
      lowBalance,
      400,
    );
    expect(
      c.conforms(await h.admin('GET', `/admin/v1/accounts/${id}/alerts`), 'get', '/admin/v1/accounts/{id}/alerts', 200),
    ).toEqual({ thresholdCredits: 5, data: [] });

    const bad: [string, string, unknown][] = [
      ['/admin/v1/accounts', '/admin/v1/accounts', { plan: 'gold', credits: 1 }],
      ['/admin/v1/accounts/{id}/keys', `/admin/v1/accounts/${id}/keys`, { scopes: ['teleport'] }],
      ['/admin/v1/accounts/{id}/credits', `/admin/v1/accounts/${id}/credits`, { credits: 0 }],
    ];
    for (const [path, url, body] of bad) c.conforms(await h.admin('POST', url, body), 'post', path, 400);

    const unknown: [Method, string, string, unknown][] = [
      ['post', '/admin/v1/accounts/{id}/keys', '/admin/v1/accounts/acct_nope/keys', { scopes: ['chat'] }],
      ['post', '/admin/v1/accounts/{id}/credits', '/admin/v1/accounts/acct_nope/credits', { credits: 1 }],
      ['delete', '/admin/v1/keys/{id}', '/admin/v1/keys/key_nope', undefined],
      ['put', '/admin/v1/keys/{id}/budget', '/admin/v1/keys/key_nope/budget', { maxCredits: 1, period: 'day' }],
      ['delete', '/admin/v1/keys/{id}/budget', '/admin/v1/keys/key_nope/budget', undefined],
      [
        'put',
        '/admin/v1/accounts/{id}/low-balance',
        '/admin/v1/accounts/acct_nope/low-balance',
        { thresholdCredits: 1 },
      ],
      ['get', '/admin/v1/accounts/{id}/alerts', '/admin/v1/accounts/acct_nope/alerts', undefined],
    ];
    for (const [method, path, url, body] of unknown)
      c.conforms(await call(h.app, method, url, ADMIN_TOKEN, body), method, path, 404);

    for (const [method, path, url, body] of [
      ...unknown,
      ['post', '/admin/v1/accounts', '/admin/v1/accounts', { plan: 'free', credits: 1 }],
    ] as [Method, string, string, unknown][]) {
      for (const token of [undefined, 'wrong-token']) {
        expect(c.conforms(await call(h.app, method, url, token, body), method, path, 401)).toMatchObject({
          error: { type: 'unauthorized' },
        });
      }
    }
  });

  it('usage report and a generation’s upstreams: 200, 400, 401 and 404', async () => {
    const { key } = await h.account({ credits: 10, scopes: ['image'] });
    const g = c.conforms<Generation>(
      await h.call('POST', '/api/v1/generate', { key, body: { kind: 'image', model: 'flux', prompt: 'x' } }),
      'post',
      '/api/v1/generate',
      200,
    );
    // The simulator records no upstream; this row is what the router writes for a configured one.
    await h.pool.query(
      `INSERT INTO generation_upstreams (generation_id, tried, served_by, cost_eur) VALUES ($1, '{up-a,up-b}', 'up-b', 0.01)`,
      [g.id],
    );
    expect(
      c.conforms(
        await h.admin('GET', `/admin/v1/generations/${g.id}/upstreams`),
        'get',
        '/admin/v1/generations/{id}/upstreams',
        200,
      ),
    ).toEqual({ upstream: 'up-b', tried: ['up-a', 'up-b'], costEur: 0.01 });
    c.conforms(
      await h.admin('GET', `/admin/v1/generations/${MISSING_GENERATION}/upstreams`),
      'get',
      '/admin/v1/generations/{id}/upstreams',
      404,
    );
    const report = c.conforms<{ rows: { key: string; revenueEur: number; costEur: number }[] }>(
      await h.admin('GET', '/admin/v1/usage?group_by=upstream'),
      'get',
      '/admin/v1/usage',
      200,
    );
    expect(report.rows.find((r) => r.key === 'up-b')).toMatchObject({ revenueEur: 0.03, costEur: 0.01 });
    c.conforms(await h.admin('GET', '/admin/v1/usage?group_by=account'), 'get', '/admin/v1/usage', 400);
    c.conforms(await h.admin('GET', '/admin/v1/usage?from=yesterday'), 'get', '/admin/v1/usage', 400);
    for (const [path, url] of [
      ['/admin/v1/usage', '/admin/v1/usage'],
      ['/admin/v1/generations/{id}/upstreams', `/admin/v1/generations/${g.id}/upstreams`],
    ] as const) {
      expect(c.conforms(await call(h.app, 'get', url, 'wrong-token', undefined), 'get', path, 401)).toMatchObject({
        error: { type: 'unauthorized' },
      });
    }
  });

  it('health 200 and the document itself', async () => {
    expect(c.conforms(await h.app.inject({ method: 'GET', url: '/health' }), 'get', '/health', 200)).toEqual({
      status: 'ok',
    });
    c.conforms(await h.app.inject({ method: 'GET', url: '/openapi.json' }), 'get', '/openapi.json', 200);
  });
});

/** Every keyed and admin operation, with a request that reaches the database. */
function everyDatabaseRoute(key: string): [Method, string, string, string, unknown][] {
  return [
    ['post', '/api/generate', '/api/generate', key, { kind: 'chat', prompt: 'hi' }],
    ['get', '/api/generate/{id}', `/api/generate/${MISSING_GENERATION}`, key, undefined],
    ['get', '/api/credits', '/api/credits', key, undefined],
    ['post', '/api/v1/generate', '/api/v1/generate', key, { kind: 'chat', prompt: 'hi' }],
    ['post', '/api/v1/quote', '/api/v1/quote', key, { kind: 'chat', prompt: 'hi' }],
    ['get', '/api/v1/balance', '/api/v1/balance', key, undefined],
    ['get', '/api/v1/ledger', '/api/v1/ledger', key, undefined],
    ['get', '/api/v1/usage', '/api/v1/usage', key, undefined],
    ['get', '/api/v1/generations', '/api/v1/generations', key, undefined],
    ['get', '/api/v1/generations/{id}', `/api/v1/generations/${MISSING_GENERATION}`, key, undefined],
    ['post', '/api/v1/generations/{id}/cancel', `/api/v1/generations/${MISSING_GENERATION}/cancel`, key, undefined],
    ['post', '/api/v1/generations/{id}/remix', `/api/v1/generations/${MISSING_GENERATION}/remix`, key, { prompt: 'x' }],
    [
      'post',
      '/api/v1/generations/{id}/extend',
      `/api/v1/generations/${MISSING_GENERATION}/extend`,
      key,
      { prompt: 'x', seconds: 4 },
    ],
    ['post', '/api/v1/generations/{id}/edit', `/api/v1/generations/${MISSING_GENERATION}/edit`, key, { prompt: 'x' }],
    ['get', '/api/v1/generations/{id}/events', `/api/v1/generations/${MISSING_GENERATION}/events`, key, undefined],
    ['get', '/api/v1/events', `/api/v1/events?ids=${MISSING_GENERATION}`, key, undefined],
    ...customerRoutes().map(([m, p, u, b]): [Method, string, string, string, unknown] => [m, p, u, key, b]),
    ['post', '/admin/v1/accounts', '/admin/v1/accounts', ADMIN_TOKEN, { plan: 'free', credits: 1 }],
    ['post', '/admin/v1/accounts/{id}/keys', '/admin/v1/accounts/acct_x/keys', ADMIN_TOKEN, { scopes: ['chat'] }],
    ['post', '/admin/v1/accounts/{id}/credits', '/admin/v1/accounts/acct_x/credits', ADMIN_TOKEN, { credits: 1 }],
    ['delete', '/admin/v1/keys/{id}', '/admin/v1/keys/key_x', ADMIN_TOKEN, undefined],
    ['get', '/admin/v1/usage', '/admin/v1/usage', ADMIN_TOKEN, undefined],
    [
      'get',
      '/admin/v1/generations/{id}/upstreams',
      `/admin/v1/generations/${MISSING_GENERATION}/upstreams`,
      ADMIN_TOKEN,
      undefined,
    ],
    ['put', '/admin/v1/keys/{id}/budget', '/admin/v1/keys/key_x/budget', ADMIN_TOKEN, { maxCredits: 1, period: 'day' }],
    ['delete', '/admin/v1/keys/{id}/budget', '/admin/v1/keys/key_x/budget', ADMIN_TOKEN, undefined],
    [
      'put',
      '/admin/v1/accounts/{id}/low-balance',
      '/admin/v1/accounts/acct_x/low-balance',
      ADMIN_TOKEN,
      { thresholdCredits: 1 },
    ],
    ['get', '/admin/v1/accounts/{id}/alerts', '/admin/v1/accounts/acct_x/alerts', ADMIN_TOKEN, undefined],
  ];
}

describe('failures of the services behind the API', () => {
  it('503 with Retry-After everywhere when PostgreSQL cannot be reached, without internals', async () => {
    const { key } = await h.account({ credits: 10 });
    const unreachable = new pg.Pool({
      connectionString: `postgresql://nobody@127.0.0.1:${await freePort()}/nowhere`,
      connectionTimeoutMillis: 2_000,
      max: 1,
    });
    const broken = await productionApi(h, {
      pool: unreachable,
    });
    try {
      expect(c.conforms(await broken.inject({ method: 'GET', url: '/health' }), 'get', '/health', 503)).toEqual({
        status: 'unavailable',
        checks: { database: 'unreachable', temporal: 'ok' },
      });
      for (const [method, path, url, token, body] of everyDatabaseRoute(key)) {
        // The key check needs the database too, so every keyed route is unavailable, not unauthorised.
        const res = await call(broken, method, url, token, body);
        const { error } = c.conforms<{ error: { message: string } }>(res, method, path, 503);
        expect(res.headers['retry-after']).toBe('1');
        expect(error.message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|nowhere/);
      }
    } finally {
      await broken.close();
      await unreachable.end();
    }
  });

  it('500 everywhere, without internals, when the database answers but is broken (no schema)', async () => {
    const { key } = await h.account({ credits: 10 });
    await withScratchDatabase(async (pool) => {
      await pool.query('DROP TABLE ledger_entries, holds, idempotency_keys, generations, api_keys, accounts CASCADE');
      const broken = await productionApi(h, {
        pool,
      });
      try {
        for (const [method, path, url, token, body] of everyDatabaseRoute(key)) {
          const { error } = c.conforms<{ error: { message: string } }>(
            await call(broken, method, url, token, body),
            method,
            path,
            500,
          );
          expect(error.message).toBe('Internal error; retry shortly.');
        }
      } finally {
        await broken.close();
      }
    });
  });

  it('503 on generate and cancel when Temporal cannot be reached, nothing charged', async () => {
    const { key } = await h.account({ credits: 100 });
    const pending = c.conforms<Generation>(
      await h.call('POST', '/api/v1/generate', {
        key,
        body: { kind: 'video', model: 'kling', prompt: 'slow sim:delay=30000' },
      }),
      'post',
      '/api/v1/generate',
      202,
    );
    const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, connectTimeout: 500 });
    const app = await productionApi(h, {
      client: new Client({ connection }),
    });
    try {
      const [c1, c2, cancel] = await Promise.all([
        call(app, 'post', '/api/generate', key, { kind: 'image', model: 'flux', prompt: 'x' }),
        call(app, 'post', '/api/v1/generate', key, { kind: 'image', model: 'flux', prompt: 'x' }),
        call(app, 'post', `/api/v1/generations/${pending.id}/cancel`, key),
      ]);
      c.conforms(c1, 'post', '/api/generate', 503);
      c.conforms(c2, 'post', '/api/v1/generate', 503);
      c.conforms(cancel, 'post', '/api/v1/generations/{id}/cancel', 503);
    } finally {
      await app.close();
      await connection.close();
    }
    expect(c.conforms(await h.call('GET', '/api/v1/balance', { key }), 'get', '/api/v1/balance', 200)).toMatchObject({
      balance: 57.5,
      holdsActive: 42.5,
    });
    c.conforms(
      await h.call('POST', `/api/v1/generations/${pending.id}/cancel`, { key }),
      'post',
      '/api/v1/generations/{id}/cancel',
      200,
    );
  });
});

describe('before any route', () => {
  it('every documented operation answers an oversized request line and headers with 431 in the error shape', async () => {
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = h.app.server.address() as AddressInfo;
    for (const { path, method, op } of c.operations()) {
      expect(op.responses['431'], `${method} ${path} documents 431`).toBeDefined();
      const url = path.replace(/\{[^}]+\}/g, 'x').replace('*', 'x');
      const raw = await rawRequest(
        port,
        `${method.toUpperCase()} ${url} HTTP/1.1\r\nx-padding: ${'p'.repeat(20_000)}\r\n\r\n`,
      );
      const [head, body] = raw.split('\r\n\r\n') as [string, string];
      expect(head, `${method} ${path}`).toMatch(/^HTTP\/1\.1 431 /);
      expect(head).toMatch(/content-type: application\/json/i);
      c.assertValid(
        `${pointerOf('paths', path, method, 'responses', '431')}/content/application~1json/schema`,
        JSON.parse(body),
        `${method} ${path} → 431`,
      );
    }
  });
});

describe('before a route with path parameters', () => {
  it('every such operation answers a path parameter over 100 characters with a documented 400', async () => {
    const long = 'x'.repeat(101);
    for (const { path, method, op } of c.operations()) {
      // A wildcard (`{*}`) has no length limit: only named parameters meet the router's.
      if (!/\{[^*}][^}]*\}/.test(path)) continue;
      expect(op.responses['400'], `${method} ${path} documents 400`).toBeDefined();
      const res = await h.app.inject({
        method: method.toUpperCase() as 'GET',
        url: path.replace(/\{[^*}][^}]*\}/g, long).replace('{*}', 'x'),
      });
      const body = c.conforms<{ error: { param?: string } }>(res, method, path, 400);
      expect(body.error.param, `${method} ${path}`).toBe('path');
    }
  });
});

/** One request written on a socket of its own, as is, and everything the server answered until it closed. */
function rawRequest(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`${request.replace('\r\n', '\r\nhost: localhost\r\n')}`),
    );
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}

describe('coverage of the document', () => {
  it('every documented path has a test file that proves its answers', () => {
    for (const { path } of c.operations()) expect(() => ownerOf(path), path).not.toThrow();
  });

  it('every documented status of the operations this file owns was produced above', () => {
    c.expectCoverage('openapi.test.ts');
  });
});
