import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { PATH_PARAM_TOO_LONG } from '../../api/shared/schemas';

/**
 * Holds real responses to the OpenAPI document the app generates from its route schemas
 * (/openapi.json): a documented status, a documented content type, a body that matches its schema.
 */

export interface Ref {
  $ref: string;
}
export interface MediaType {
  schema?: unknown;
}
export interface Response {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, MediaType>;
}
export interface Parameter {
  name: string;
  in: string;
  required?: boolean;
}
export interface Operation {
  operationId: string;
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, Response>;
}
export interface OpenApiDoc {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, unknown>>; securitySchemes: Record<string, unknown> };
}

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'options';

/**
 * Which test file proves the documented statuses of which paths (longest prefix wins). Every
 * documented path must have an owner, and each owner ends with `expectCoverage()` for its paths,
 * so a route added without a test of each of its documented answers fails the suite.
 */
export const COVERAGE_OWNERS: readonly { prefix: string; file: string }[] = [
  { prefix: '/', file: 'openapi.test.ts' },
  { prefix: '/api/mcp', file: 'mcp.test.ts' },
  { prefix: '/metrics', file: 'metrics.test.ts' },
  { prefix: '/api/v1/webhooks', file: 'webhooks.test.ts' },
  { prefix: '/v1/', file: 'openai-sdk.test.ts' },
  { prefix: '/v1/messages', file: 'anthropic-sdk.test.ts' },
  { prefix: '/v1/messages/batches', file: 'anthropic-batches-routes.test.ts' },
  { prefix: '/v1/files', file: 'batches-sdk.test.ts' },
  { prefix: '/v1/batches', file: 'batches-sdk.test.ts' },
  { prefix: '/api/v1/batches', file: 'batches.test.ts' },
  { prefix: '/dashboard/api/batches', file: 'batches.test.ts' },
  { prefix: '/dashboard/', file: 'dashboard-http.test.ts' },
  { prefix: '/admin/v1/users', file: 'dashboard-http.test.ts' },
];

export function ownerOf(path: string): string {
  const match = [...COVERAGE_OWNERS]
    .filter((o) => path.startsWith(o.prefix))
    .sort((a, b) => b.prefix.length - a.prefix.length)[0];
  if (!match) throw new Error(`no test owns ${path}`);
  return match.file;
}
const METHODS: readonly Method[] = ['get', 'post', 'put', 'patch', 'delete', 'options'];

export async function loadDocument(app: FastifyInstance): Promise<OpenApiDoc> {
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  return res.json<OpenApiDoc>();
}

export const escapePointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');
export const pointerOf = (...segments: string[]) => `/${segments.map(escapePointer).join('/')}`;
export const mediaTypeOf = (contentType: string | string[] | number | undefined) =>
  (typeof contentType === 'string' ? contentType : '').split(';')[0]!.trim().toLowerCase();

export function createConformance(doc: OpenApiDoc) {
  const DOC_ID = 'https://gensvc.test/openapi.json';
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, DOC_ID);

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m] !== undefined).map((method) => ({ path, method, op: item[method]! })),
    );

  const validatorAt = (pointer: string) => {
    const fragment = pointer.split('/').map(encodeURIComponent).join('/');
    const validate = ajv.getSchema(`${DOC_ID}#${fragment}`);
    if (!validate) throw new Error(`no schema at ${pointer}`);
    return validate;
  };

  const assertValid = (pointer: string, value: unknown, label: string): void => {
    const validate = validatorAt(pointer);
    if (!validate(value)) {
      expect.fail(
        `${label} does not match ${pointer}: ${ajv.errorsText(validate.errors, { separator: '; ' })}\n${JSON.stringify(value)}`,
      );
    }
  };

  /** `method path status` of every documented response, and of those produced for real. */
  const documented = new Set(
    operations().flatMap(({ path, method, op }) => Object.keys(op.responses).map((s) => `${method} ${path} ${s}`)),
  );
  const produced = new Set<string>();
  /** 400s only the router answers (a path parameter over 100 characters): openapi.test.ts sends one to each. */
  const byRouter = new Set(
    operations()
      .filter(({ op }) => op.responses['400']?.description === PATH_PARAM_TOO_LONG)
      .map(({ path, method }) => `${method} ${path} 400`),
  );

  /**
   * Asserts the status, then that the response is documented for the operation and matches it.
   * Returns the parsed JSON body (undefined for other content types).
   */
  function conforms<T = unknown>(res: LightMyRequestResponse, method: Method, path: string, status: number): T {
    const label = `${method.toUpperCase()} ${path} → ${res.statusCode}`;
    expect(res.statusCode, `${label}: ${res.body.slice(0, 500)}`).toBe(status);
    const op = doc.paths[path]?.[method];
    if (!op) return expect.fail(`${method.toUpperCase()} ${path} is not in the document`);
    const response = op.responses[String(status)];
    if (!response) return expect.fail(`${label} is not documented`);
    produced.add(`${method} ${path} ${status}`);

    const mediaType = mediaTypeOf(res.headers['content-type']);
    const content = response.content ?? {};
    const declared = Object.keys(content);
    if (declared.length === 0) {
      // A response documented without content (e.g. 202 Accepted) has no body.
      expect(res.body, `${label}: documented without a body`).toBe('');
      return undefined as T;
    }
    expect(
      declared.includes(mediaType) || declared.includes('*/*'),
      `${label}: content type ${mediaType} not in ${declared.join(', ')}`,
    ).toBe(true);
    if (mediaType !== 'application/json') return undefined as T;
    const body = res.json<T>();
    assertValid(
      `${pointerOf('paths', path, method, 'responses', String(status))}/content/${escapePointer(mediaType)}/schema`,
      body,
      label,
    );
    return body;
  }

  /** Asserts that every documented status of the paths `file` owns was produced in this run. */
  const expectCoverage = (file: string): void => {
    // 431, and a 400 for an over-long path parameter, are answered before any route, the same for
    // all: openapi.test.ts sends them to every operation.
    const missing = [...documented]
      .filter((d) => ownerOf(d.split(' ')[1]!) === file && !produced.has(d) && !d.endsWith(' 431') && !byRouter.has(d))
      .sort();
    expect(missing).toEqual([]);
  };

  return { ajv, operations, validatorAt, assertValid, conforms, documented, produced, expectCoverage };
}

/** `METHOD path` of every route the app serves (HEAD excepted), from Fastify's route table. */
export function servedRoutes(app: FastifyInstance): Set<string> {
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
export const normalisePath = (path: string) => path.replace(/\{[^}]+\}|:[A-Za-z0-9_]+|\*/g, '{}');
