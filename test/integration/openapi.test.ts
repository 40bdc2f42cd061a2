/**
 * Keeps docs/openapi.yaml honest against the running code: the document and the app serve the
 * same routes, every documented status is produced for real and its body and headers conform to
 * the documented schema, and the request examples are accepted.
 */
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildApp } from '../../api/app';
import { PLAN_LIMITS } from '../../api/rate-limit';
import { CAPABILITIES } from '../../core/api-keys';
import { PLANS } from '../../core/db/accounts';
import { ADMIN_TOKEN, eventually, startHarness } from '../support/harness';
import type { Harness } from '../support/harness';
import type { GenerationRecord } from '../support/api';

// ---------------------------------------------------------------------------------------------
// The document
// ---------------------------------------------------------------------------------------------

interface Ref { $ref: string }
interface MediaType { schema?: unknown; examples?: Record<string, { value: unknown }> }
interface Header { required?: boolean; schema?: { type?: string } }
interface Response { description: string; headers?: Record<string, Header | Ref>; content?: Record<string, MediaType> }
interface Parameter { name: string; in: string; required?: boolean }
interface Operation {
  operationId: string;
  security?: Record<string, string[]>[];
  parameters?: (Parameter | Ref)[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, Response | Ref>;
}
interface OpenApiDoc {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, unknown>>; securitySchemes: Record<string, unknown> };
}

const DOC_URL = new URL('../../docs/openapi.yaml', import.meta.url);
const doc = parse(readFileSync(DOC_URL, 'utf8')) as OpenApiDoc;
const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;
type Method = 'get' | 'post' | 'delete';

const escapePointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');
const pointerOf = (...segments: string[]) => `/${segments.map(escapePointer).join('/')}`;

function atPointer(pointer: string): unknown {
  let node: unknown = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (node === null || typeof node !== 'object' || !(segment in node)) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

const isRef = (node: unknown): node is Ref => node !== null && typeof node === 'object' && typeof (node as Ref).$ref === 'string';

/** Follows `$ref`s of non-schema objects (responses, headers, parameters); returns the object and where it lives. */
function deref<T>(node: T | Ref, pointer: string): { value: T; pointer: string } {
  let current: unknown = node;
  let at = pointer;
  for (let hops = 0; isRef(current); hops++) {
    if (hops > 10 || !current.$ref.startsWith('#/')) throw new Error(`unresolvable $ref ${current.$ref} at ${at}`);
    at = current.$ref.slice(1);
    current = atPointer(at);
    if (current === undefined) throw new Error(`dangling $ref to ${at}`);
  }
  return { value: current as T, pointer: at };
}

function operations(): { path: string; method: Method; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m] !== undefined).map((method) => ({ path, method: method as Method, op: item[method]! })),
  );
}

function operation(method: Method, path: string): Operation {
  const op = doc.paths[path]?.[method];
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
  return op;
}

// ---------------------------------------------------------------------------------------------
// Schema validation (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses it)
// ---------------------------------------------------------------------------------------------

const DOC_ID = 'https://gensvc.test/openapi.yaml';
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, DOC_ID);

function validatorAt(pointer: string) {
  const fragment = pointer.split('/').map(encodeURIComponent).join('/');
  const validate = ajv.getSchema(`${DOC_ID}#${fragment}`);
  if (!validate) throw new Error(`no schema at ${pointer}`);
  return validate;
}

function assertValid(pointer: string, value: unknown, label: string): void {
  const validate = validatorAt(pointer);
  if (!validate(value)) {
    expect.fail(`${label} does not match ${pointer}: ${ajv.errorsText(validate.errors, { separator: '; ' })}\n${JSON.stringify(value)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Responses against the document
// ---------------------------------------------------------------------------------------------

/** `method path status` of every documented response, and of those produced for real. */
const documented = new Set(operations().flatMap(({ path, method, op }) => Object.keys(op.responses).map((s) => `${method} ${path} ${s}`)));
const produced = new Set<string>();

const mediaTypeOf = (contentType: string | string[] | number | undefined) =>
  (typeof contentType === 'string' ? contentType : '').split(';')[0]!.trim().toLowerCase();

/**
 * Asserts the status, then that the response is documented for the operation and matches it:
 * a documented content type, the body against its schema, every required header present and
 * valid. Returns the parsed JSON body (or undefined for other content types).
 */
function conforms<T = unknown>(res: LightMyRequestResponse, method: Method, path: string, status: number): T {
  const label = `${method.toUpperCase()} ${path} → ${res.statusCode}`;
  expect(res.statusCode, `${label}: ${res.body.slice(0, 500)}`).toBe(status);
  const op = operation(method, path);
  const declared = op.responses[String(status)];
  if (!declared) return expect.fail(`${label} is not documented`);
  const { value: response, pointer } = deref(declared, pointerOf('paths', path, method, 'responses', String(status)));
  produced.add(`${method} ${path} ${status}`);

  for (const [name, headerOrRef] of Object.entries(response.headers ?? {})) {
    const { value: header, pointer: headerPointer } = deref(headerOrRef, `${pointer}/headers/${escapePointer(name)}`);
    const raw = res.headers[name.toLowerCase()];
    if (raw === undefined) {
      if (header.required) expect.fail(`${label}: required header ${name} is missing`);
      continue;
    }
    const text = String(raw);
    const value = header.schema?.type === 'integer' || header.schema?.type === 'number' ? Number(text) : text;
    assertValid(`${headerPointer}/schema`, value, `${label} header ${name}`);
  }

  const mediaType = mediaTypeOf(res.headers['content-type']);
  const content = response.content ?? {};
  expect(Object.keys(content), `${label}: content type ${mediaType}`).toContain(mediaType);
  if (mediaType !== 'application/json') return undefined as T;
  const body = res.json<T>();
  assertValid(`${pointer}/content/${escapePointer(mediaType)}/schema`, body, label);
  return body;
}

// ---------------------------------------------------------------------------------------------
// Routes the app serves
// ---------------------------------------------------------------------------------------------

/**
 * `method path` of every route, read from Fastify's radix tree (`printRoutes()`): a route's path
 * is the concatenation of the labels from the root. The `commonPrefix: false` rendering is not
 * used because it prints the wildcard route `/files/*` as a bare `*`.
 */
function servedRoutes(app: FastifyInstance): Set<string> {
  const routes = new Set<string>();
  const labels: string[] = [];
  for (const line of app.printRoutes().split('\n')) {
    const match = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    labels.length = match[1]!.length / 4;
    labels.push(match[2]!);
    for (const method of match[3]?.split(', ') ?? []) {
      if (method !== 'HEAD') routes.add(`${method.toLowerCase()} ${labels.join('')}`);
    }
  }
  return routes;
}

/** Path parameters compared by position: Fastify's `:id` and `*` against the document's `{id}`. */
const normalisePath = (path: string) => path.replace(/\{[^}]+\}|:[A-Za-z0-9_]+|\*/g, '{}');

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
});
afterAll(async () => {
  await h?.close();
});

const ASYNC = { prefer: 'respond-async' };
const MISSING_GENERATION = `gen_${'0'.repeat(26)}`;

/** Polls through the API, checking every answer against the document, until the generation is final. */
async function untilFinal(key: string, id: string): Promise<GenerationRecord> {
  return eventually(async () => {
    const res = await h.call('GET', `/api/generate/${id}`, { key });
    const { generation } = conforms<{ generation: GenerationRecord }>(res, 'get', '/api/generate/{id}', 200);
    return generation.status === 'succeeded' || generation.status === 'failed' ? generation : undefined;
  }, 20_000, 100);
}

/** Follows an outputUrl to the file route and checks the answer against the document. */
async function fetchOutput(outputUrl: string) {
  const url = new URL(outputUrl);
  const res = await h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  conforms(res, 'get', '/files/{key}', 200);
  return res;
}

describe('the document', () => {
  it('is OpenAPI 3.1 whose references all resolve and whose schemas are valid JSON Schema', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}/${i}`));
      if (node === null || typeof node !== 'object') return;
      if (isRef(node)) expect(atPointer(node.$ref.replace(/^#/, '')), `$ref ${node.$ref} at ${at}`).toBeDefined();
      for (const [k, v] of Object.entries(node)) walk(v, `${at}/${escapePointer(k)}`);
    };
    walk(doc, '');
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      expect(ajv.validateSchema(schema), `components.schemas.${name}: ${ajv.errorsText()}`).toBe(true);
      validatorAt(pointerOf('components', 'schemas', name));
    }
  });

  it('names each operation once, declares its path parameters and its security', () => {
    const ids = operations().map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, method, op } of operations()) {
      const declared = (op.parameters ?? []).map((p, i) => deref(p, pointerOf('paths', path, method, 'parameters', String(i))).value);
      const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      expect(declared.filter((p) => p.in === 'path').map((p) => p.name).sort(), `${method} ${path}`).toEqual(inPath.sort());
      expect(declared.filter((p) => p.in === 'path').every((p) => p.required), `${method} ${path}`).toBe(true);
      expect(op.security, `${method} ${path} states its security`).toBeDefined();
      for (const requirement of op.security ?? []) {
        for (const scheme of Object.keys(requirement)) expect(Object.keys(doc.components.securitySchemes)).toContain(scheme);
      }
    }
  });

  it('agrees with the code on version, plans and scopes', () => {
    expect(doc.info.version).toBe(packageVersion);
    const plan = doc.components.schemas.Plan as { enum: string[]; description: string };
    expect(plan.enum).toEqual([...PLANS]);
    for (const p of PLANS) expect(plan.description).toContain(`${p} ${PLAN_LIMITS[p]}`);
    const scope = doc.components.schemas.Scope as { enum: string[] };
    expect(scope.enum.sort()).toEqual([...CAPABILITIES, ...CAPABILITIES.map((c) => `generate:${c}`)].sort());
  });

  it('has examples that match their own schemas', () => {
    for (const { path, method, op } of operations()) {
      const bodies: [string, Record<string, MediaType>][] = [['requestBody', op.requestBody?.content ?? {}]];
      for (const status of Object.keys(op.responses)) {
        const { value, pointer } = deref(op.responses[status]!, pointerOf('paths', path, method, 'responses', status));
        bodies.push([pointer, value.content ?? {}]);
      }
      for (const [where, content] of bodies) {
        for (const [mediaType, media] of Object.entries(content)) {
          const base = where === 'requestBody' ? pointerOf('paths', path, method, 'requestBody') : where;
          for (const [name, example] of Object.entries(media.examples ?? {})) {
            assertValid(`${base}/content/${escapePointer(mediaType)}/schema`, example.value, `example ${name} of ${method} ${path} ${where}`);
          }
        }
      }
    }
  });
});

describe('routes', () => {
  it('the app serves exactly the documented paths and methods', async () => {
    await h.app.ready();
    const served = [...servedRoutes(h.app)].map((r) => normalisePath(r)).sort();
    const described = operations().map(({ path, method }) => normalisePath(`${method} ${path}`)).sort();
    expect(served.length).toBeGreaterThan(0);
    expect(served).toEqual(described);
  });
});

describe('request examples', () => {
  it('POST /api/generate accepts each example and answers a documented 200', async () => {
    const { key } = await h.account({ credits: 1_000, chatCap: 1 });
    const examples = operation('post', '/api/generate').requestBody!.content['application/json']!.examples!;
    expect(Object.keys(examples).length).toBeGreaterThanOrEqual(3);
    // Submitted together: the videos render while the images and chats answer.
    const finals = await Promise.all(Object.entries(examples).map(async ([name, { value }]) => {
      const res = await h.call('POST', '/api/generate', { key, body: value });
      expect(res.statusCode, `example ${name}: ${res.body}`).toBe(200);
      const { generation } = conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
      if (generation.kind === 'video') expect(['queued', 'running']).toContain(generation.status);
      const final = generation.status === 'succeeded' || generation.status === 'failed' ? generation : await untilFinal(key, generation.id);
      expect(final.status, `example ${name}`).toBe('succeeded');
      return final;
    }));
    expect([...new Set(finals.map((g) => g.kind))].sort()).toEqual(['chat', 'image', 'video']);
  });

  it('the admin API accepts each of its examples', async () => {
    for (const { path, method, op } of operations().filter(({ path }) => path.startsWith('/admin/'))) {
      const success = Object.keys(op.responses).filter((s) => s.startsWith('2')).sort()[0]!;
      for (const [name, { value }] of Object.entries(op.requestBody?.content['application/json']?.examples ?? {})) {
        const { accountId } = await h.account({ credits: 0 });
        const url = path.replace('{id}', accountId);
        const res = await h.admin(method === 'delete' ? 'DELETE' : 'POST', url, value);
        expect(res.statusCode, `example ${name} of ${path}: ${res.body}`).toBe(Number(success));
        conforms(res, method, path, Number(success));
      }
    }
  });
});

describe('responses conform to the document', () => {
  it('200: image succeeded within the call, and its file', async () => {
    const { key } = await h.account({ credits: 100 });
    const res = await h.call('POST', '/api/generate', { key, body: { kind: 'image', model: 'image-flux', prompt: 'a lighthouse' } });
    const { generation } = conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
    expect(generation).toMatchObject({ kind: 'image', status: 'succeeded', creditsCharged: 3, error: null });
    const file = await fetchOutput(generation.outputUrl);
    expect(mediaTypeOf(file.headers['content-type'])).toBe('image/png');
  });

  it('200: image with Prefer: respond-async answers in flight, then is polled to succeeded', async () => {
    const { key } = await h.account({ credits: 100 });
    const res = await h.call('POST', '/api/generate', { key, body: { kind: 'image', model: 'flux', prompt: 'a kite sim:delay=500' }, headers: ASYNC });
    const { generation } = conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
    expect(['queued', 'running']).toContain(generation.status);
    expect(generation).toMatchObject({ outputUrl: '', creditsCharged: 0, error: null });
    expect((await untilFinal(key, generation.id)).status).toBe('succeeded');
  });

  it('200: video queued or running, its hold in the credits, then polled to succeeded with a file', async () => {
    const { key } = await h.account({ credits: 100 });
    const res = await h.call('POST', '/api/generate', { key, body: { kind: 'video', model: 'kling', prompt: 'waves', seconds: 5, quality: '720p' } });
    const { generation } = conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
    expect(['queued', 'running']).toContain(generation.status);
    const held = conforms(await h.call('GET', '/api/credits', { key }), 'get', '/api/credits', 200);
    expect(held).toMatchObject({ balance: 57.5, holdsActive: 42.5 });
    const done = await untilFinal(key, generation.id);
    expect(done).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });
    const file = await fetchOutput(done.outputUrl);
    expect(mediaTypeOf(file.headers['content-type'])).toBe('video/webm');
  });

  it('200: chat succeeded with its text, free and then paid, and its file', async () => {
    const { key } = await h.account({ credits: 10, chatCap: 1 });
    for (const charged of [0, 2]) {
      const res = await h.call('POST', '/api/generate', { key, body: { kind: 'chat', model: 'chat-sonnet', prompt: 'hello sim:tokens=5' } });
      const { generation } = conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
      expect(generation).toMatchObject({ kind: 'chat', status: 'succeeded', creditsCharged: charged });
      expect(generation.text?.split(' ')).toHaveLength(5);
      const file = await fetchOutput(generation.outputUrl);
      expect(mediaTypeOf(file.headers['content-type'])).toBe('text/plain');
    }
    const credits = conforms(await h.call('GET', '/api/credits', { key }), 'get', '/api/credits', 200);
    expect(credits).toEqual({ balance: 8, holdsActive: 0, trial: { chatCap: 1, chatUsed: 1, chatLeft: 0 } });
  });

  it('200: a failed generation carries its error object and charges nothing', async () => {
    const { key } = await h.account({ credits: 10 });
    const res = await h.call('POST', '/api/generate', { key, body: { kind: 'image', model: 'gpt-image-1', prompt: 'sim:fail a cat' } });
    const { generation } = conforms<{ generation: GenerationRecord }>(res, 'post', '/api/generate', 200);
    expect(generation).toMatchObject({ status: 'failed', creditsCharged: 0, outputUrl: '', error: { code: 'provider_failed', retryable: false } });
    expect(conforms(await h.call('GET', '/api/credits', { key }), 'get', '/api/credits', 200)).toMatchObject({ balance: 10, holdsActive: 0 });
  });

  it('400: invalid_request_error, unknown_cost and content_policy_violation; 413 for an oversized body', async () => {
    const { key } = await h.account({ credits: 100 });
    const cases: [unknown, string, string | undefined][] = [
      [{ kind: 'image', model: 'flux' }, 'invalid_request_error', 'prompt'],
      [{ kind: 'song', prompt: 'x' }, 'invalid_request_error', 'kind'],
      [{ kind: 'image', model: 'flux', prompt: 'x', aspect: 'wide' }, 'invalid_request_error', 'aspect'],
      [{ kind: 'image', model: 'dall-e-9', prompt: 'x' }, 'unknown_cost', 'model'],
      [{ kind: 'chat', model: 'gpt-5.5', prompt: 'x' }, 'unknown_cost', 'model'],
      [{ kind: 'image', model: 'flux', prompt: 'scene of a beheading' }, 'content_policy_violation', 'prompt'],
    ];
    for (const [body, type, param] of cases) {
      const res = await h.call('POST', '/api/generate', { key, body });
      const { error } = conforms<{ error: Record<string, unknown> }>(res, 'post', '/api/generate', 400);
      expect(error, JSON.stringify(body)).toMatchObject({ type, code: 400, ...(param ? { param } : {}) });
    }
    const malformed = await h.app.inject({
      method: 'POST', url: '/api/generate', payload: '{"kind":', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    expect(conforms(malformed, 'post', '/api/generate', 400)).toMatchObject({ error: { type: 'invalid_request_error' } });

    const oversized = await h.call('POST', '/api/generate', { key, body: { kind: 'chat', prompt: 'x'.repeat(9 * 1024 * 1024) } });
    expect(conforms(oversized, 'post', '/api/generate', 413)).toMatchObject({ error: { type: 'invalid_request_error', code: 413 } });
  });

  it('401 without a key, with a malformed key and with a revoked key', async () => {
    const { key, keyId } = await h.account({ credits: 10 });
    const revoke = await h.admin('DELETE', `/admin/v1/keys/${keyId}`);
    expect(conforms(revoke, 'delete', '/admin/v1/keys/{id}', 200)).toEqual({ id: keyId, revoked: true });
    const requests: [Method, string, string][] = [
      ['post', '/api/generate', '/api/generate'],
      ['get', '/api/generate/{id}', `/api/generate/${MISSING_GENERATION}`],
      ['get', '/api/credits', '/api/credits'],
    ];
    for (const [method, path, url] of requests) {
      for (const auth of [undefined, 'not-a-key', key]) {
        const res = await h.call(method === 'post' ? 'POST' : 'GET', url, { ...(auth ? { key: auth } : {}), ...(method === 'post' ? { body: { kind: 'chat', prompt: 'hi' } } : {}) });
        expect(conforms(res, method, path, 401)).toMatchObject({ error: { type: 'unauthorized', code: 401 } });
      }
    }
  });

  it('402 with required and available credits', async () => {
    const { key } = await h.account({ credits: 2.5 });
    const res = await h.call('POST', '/api/generate', { key, body: { kind: 'image', model: 'image-flux', prompt: 'a boat' } });
    expect(conforms(res, 'post', '/api/generate', 402)).toMatchObject({ error: { type: 'insufficient_credits', required: 3, available: 2.5 } });
  });

  it('409 when an Idempotency-Key is reused for another request', async () => {
    const { key } = await h.account({ credits: 10 });
    const headers = { 'idempotency-key': 'openapi-409' };
    const first = await h.call('POST', '/api/generate', { key, headers, body: { kind: 'chat', prompt: 'one' } });
    conforms(first, 'post', '/api/generate', 200);
    const other = await h.call('POST', '/api/generate', { key, headers, body: { kind: 'chat', prompt: 'two' } });
    expect(conforms(other, 'post', '/api/generate', 409)).toMatchObject({ error: { type: 'idempotency_conflict' } });
  });

  it('403 for a kind outside the key\'s scopes and for a model outside its allow-list', async () => {
    const chatOnly = await h.account({ credits: 100, scopes: ['chat'] });
    const scopeRes = await h.call('POST', '/api/generate', { key: chatOnly.key, body: { kind: 'image', model: 'flux', prompt: 'x' } });
    expect(conforms(scopeRes, 'post', '/api/generate', 403)).toMatchObject({ error: { type: 'permission_error', param: 'kind' } });
    const fluxOnly = await h.account({ credits: 100, scopes: ['image'], models: ['flux'] });
    const modelRes = await h.call('POST', '/api/generate', { key: fluxOnly.key, body: { kind: 'image', model: 'gpt-image-1', prompt: 'x' } });
    expect(conforms(modelRes, 'post', '/api/generate', 403)).toMatchObject({ error: { type: 'permission_error', param: 'model' } });
  });

  it('404 for an unknown or malformed generation id, and for a bad file signature', async () => {
    const { key } = await h.account({ credits: 10 });
    for (const id of [MISSING_GENERATION, 'not-an-id']) {
      const res = await h.call('GET', `/api/generate/${id}`, { key });
      expect(conforms(res, 'get', '/api/generate/{id}', 404)).toMatchObject({ error: { type: 'not_found', code: 404 } });
    }
    const file = await h.app.inject({ method: 'GET', url: `/files/${MISSING_GENERATION}/output.png?expires=9999999999&signature=${'0'.repeat(64)}` });
    conforms(file, 'get', '/files/{key}', 404);
    const unsigned = await h.app.inject({ method: 'GET', url: `/files/${MISSING_GENERATION}/output.png` });
    conforms(unsigned, 'get', '/files/{key}', 404);
  });

  it('429 with Retry-After once the plan\'s window is used up, on every keyed endpoint', async () => {
    const { key } = await h.account({ credits: 10, plan: 'free' });
    for (let i = 0; i < PLAN_LIMITS.free; i++) {
      const res = await h.call('GET', '/api/credits', { key });
      conforms(res, 'get', '/api/credits', 200);
      expect(res.headers['ratelimit-remaining']).toBe(String(PLAN_LIMITS.free - i - 1));
    }
    const requests: [Method, string, string][] = [
      ['post', '/api/generate', '/api/generate'],
      ['get', '/api/generate/{id}', `/api/generate/${MISSING_GENERATION}`],
      ['get', '/api/credits', '/api/credits'],
    ];
    for (const [method, path, url] of requests) {
      const res = await h.call(method === 'post' ? 'POST' : 'GET', url, { key, ...(method === 'post' ? { body: { kind: 'chat', prompt: 'hi' } } : {}) });
      expect(conforms(res, method, path, 429)).toMatchObject({ error: { type: 'rate_limit_error', code: 429 } });
    }
  });

  it('admin: 201s, 200 top-up, 400, 401 and 404', async () => {
    const created = await h.admin('POST', '/admin/v1/accounts', { plan: 'ronin', credits: 5 });
    const { id } = conforms<{ id: string }>(created, 'post', '/admin/v1/accounts', 201);
    const key = await h.admin('POST', `/admin/v1/accounts/${id}/keys`, { scopes: ['generate:chat', 'image'] });
    conforms(key, 'post', '/admin/v1/accounts/{id}/keys', 201);
    const topUp = await h.admin('POST', `/admin/v1/accounts/${id}/credits`, { credits: 2.5 });
    expect(conforms(topUp, 'post', '/admin/v1/accounts/{id}/credits', 200)).toEqual({ id, balance: 7.5 });

    const bad: [string, string, unknown][] = [
      ['/admin/v1/accounts', '/admin/v1/accounts', { plan: 'gold', credits: 1 }],
      ['/admin/v1/accounts/{id}/keys', `/admin/v1/accounts/${id}/keys`, { scopes: ['teleport'] }],
      ['/admin/v1/accounts/{id}/credits', `/admin/v1/accounts/${id}/credits`, { credits: 0 }],
    ];
    for (const [path, url, body] of bad) {
      expect(conforms(await h.admin('POST', url, body), 'post', path, 400)).toMatchObject({ error: { type: 'invalid_request_error' } });
    }

    const unknown: [Method, string, string, unknown][] = [
      ['post', '/admin/v1/accounts/{id}/keys', '/admin/v1/accounts/acct_nope/keys', { scopes: ['chat'] }],
      ['post', '/admin/v1/accounts/{id}/credits', '/admin/v1/accounts/acct_nope/credits', { credits: 1 }],
      ['delete', '/admin/v1/keys/{id}', '/admin/v1/keys/key_nope', undefined],
    ];
    for (const [method, path, url, body] of unknown) {
      expect(conforms(await h.admin(method === 'post' ? 'POST' : 'DELETE', url, body), method, path, 404)).toMatchObject({ error: { type: 'not_found' } });
    }

    const adminOps: [Method, string, string, unknown][] = [
      ['post', '/admin/v1/accounts', '/admin/v1/accounts', { plan: 'free', credits: 1 }],
      ['post', '/admin/v1/accounts/{id}/keys', `/admin/v1/accounts/${id}/keys`, { scopes: ['chat'] }],
      ['post', '/admin/v1/accounts/{id}/credits', `/admin/v1/accounts/${id}/credits`, { credits: 1 }],
      ['delete', '/admin/v1/keys/{id}', '/admin/v1/keys/key_nope', undefined],
    ];
    for (const [method, path, url, body] of adminOps) {
      for (const token of [undefined, 'wrong-token']) {
        const res = await h.call(method === 'post' ? 'POST' : 'DELETE', url, { ...(token ? { key: token } : {}), ...(body === undefined ? {} : { body }) });
        expect(conforms(res, method, path, 401)).toMatchObject({ error: { type: 'unauthorized', code: 401 } });
      }
    }
  });

  it('health 200', async () => {
    expect(conforms(await h.app.inject({ method: 'GET', url: '/health' }), 'get', '/health', 200)).toEqual({ status: 'ok' });
  });

  it('500 and 503 when PostgreSQL cannot be reached (the same app, built on an unreachable database)', async () => {
    const { key } = await h.account({ credits: 10 });
    const unreachable = new pg.Pool({ connectionString: 'postgresql://nobody@127.0.0.1:1/nowhere', connectionTimeoutMillis: 2_000, max: 1 });
    const broken = await buildApp({
      pool: unreachable, client: h.client, taskQueue: h.taskQueue, store: h.store, adminToken: ADMIN_TOKEN, syncWaitMs: 1_000, defaultChatCap: 0,
    });
    try {
      const health = await broken.inject({ method: 'GET', url: '/health' });
      expect(conforms(health, 'get', '/health', 503)).toEqual({ status: 'unavailable', checks: { database: 'unreachable', temporal: 'ok' } });

      const requests: [Method, string, string, string, unknown][] = [
        ['post', '/api/generate', '/api/generate', key, { kind: 'chat', prompt: 'hi' }],
        ['get', '/api/generate/{id}', `/api/generate/${MISSING_GENERATION}`, key, undefined],
        ['get', '/api/credits', '/api/credits', key, undefined],
        ['post', '/admin/v1/accounts', '/admin/v1/accounts', ADMIN_TOKEN, { plan: 'free', credits: 1 }],
        ['post', '/admin/v1/accounts/{id}/keys', '/admin/v1/accounts/acct_x/keys', ADMIN_TOKEN, { scopes: ['chat'] }],
        ['post', '/admin/v1/accounts/{id}/credits', '/admin/v1/accounts/acct_x/credits', ADMIN_TOKEN, { credits: 1 }],
        ['delete', '/admin/v1/keys/{id}', '/admin/v1/keys/key_x', ADMIN_TOKEN, undefined],
      ];
      for (const [method, path, url, token, body] of requests) {
        const res = await broken.inject({
          method: method.toUpperCase() as 'GET' | 'POST' | 'DELETE',
          url,
          headers: { authorization: `Bearer ${token}` },
          ...(body === undefined ? {} : { payload: body as object }),
        });
        const parsed = conforms<{ error: { message: string } }>(res, method, path, 500);
        expect(parsed.error.message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|nowhere/);
      }
    } finally {
      await broken.close();
      await unreachable.end();
    }
  });

  it('503 when no worker can decide the hold in time (the same app, on a task queue nobody polls)', async () => {
    const { key } = await h.account({ credits: 10 });
    const stranded = await buildApp({
      pool: h.pool, client: h.client, taskQueue: `${h.taskQueue}-unpolled`, store: h.store, adminToken: ADMIN_TOKEN,
      syncWaitMs: 1_000, admissionTimeoutMs: 500, defaultChatCap: 0,
    });
    try {
      const res = await stranded.inject({ method: 'POST', url: '/api/generate', headers: { authorization: `Bearer ${key}` }, payload: { kind: 'chat', prompt: 'hi' } });
      expect(conforms<{ error: { type: string } }>(res, 'post', '/api/generate', 503).error.type).toBe('server_error');
    } finally {
      await stranded.close();
    }
  });

  it('every documented status of every operation was produced above', () => {
    expect([...documented].filter((d) => !produced.has(d)).sort()).toEqual([]);
  });
});
