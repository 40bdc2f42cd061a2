import { performance } from 'node:perf_hooks';

/** Anything the service answered that a well-behaved service would not: the bench exits non-zero. */
export class ServiceError extends Error {
  override name = 'ServiceError';
}

export interface Timed<T> {
  status: number;
  body: T;
  ms: number;
}

export interface ErrorLog {
  record(message: string): void;
  readonly count: number;
  readonly messages: readonly string[];
}

/** Keeps every service error counted and the first few described. */
export function createErrorLog(keep = 20): ErrorLog {
  const messages: string[] = [];
  let count = 0;
  return {
    record(message) {
      count++;
      if (messages.length < keep) messages.push(message);
    },
    get count() {
      return count;
    },
    get messages() {
      return messages;
    },
  };
}

const REQUEST_TIMEOUT_MS = 120_000;

/** Real HTTP against the listening API; the time covers the whole exchange, body included. `stop` aborts every request in flight (Ctrl-C). */
export function createHttp(baseUrl: string, stop: AbortSignal) {
  const request = async <T>(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    opts: { token?: string; body?: unknown } = {},
  ): Promise<Timed<T>> => {
    const headers: Record<string, string> = {};
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const started = performance.now();
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
      signal: AbortSignal.any([stop, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
    });
    const text = await res.text();
    const ms = performance.now() - started;
    let body: unknown = text;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      // Not JSON: keep the text for the error message.
    }
    return { status: res.status, body: body as T, ms };
  };
  return { request, baseUrl, stop };
}

export type Http = ReturnType<typeof createHttp>;

/** Admin calls during set-up must succeed; anything else stops the bench. */
export async function expectStatus<T>(call: Promise<Timed<T>>, status: number, what: string): Promise<T> {
  const r = await call;
  if (r.status !== status)
    throw new ServiceError(`${what}: expected ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export interface BenchAccount {
  id: string;
  /** Round-robin over several keys so no key reaches its plan's per-minute rate limit. */
  nextKey(): string;
}

/** Requests one key may make per minute before the samurai limit (600/min) gets close. */
const REQUESTS_PER_KEY = 450;

/**
 * Opens an account and enough keys for `requests` calls through the admin API. Rate limits are
 * per key, so spreading a scenario over keys keeps 429s (which would be a bench artefact) away.
 */
export async function openAccount(
  http: Http,
  adminToken: string,
  a: { credits: number; requests: number; plan?: string; chatCap?: number; scopes?: string[] },
): Promise<BenchAccount> {
  const { id } = await expectStatus<{ id: string }>(
    http.request('POST', '/admin/v1/accounts', {
      token: adminToken,
      body: { plan: a.plan ?? 'samurai', credits: a.credits, chatCap: a.chatCap ?? 0 },
    }),
    201,
    'create account',
  );
  const keyCount = Math.max(1, Math.ceil(a.requests / REQUESTS_PER_KEY));
  const keys: string[] = [];
  for (let i = 0; i < keyCount; i++) {
    const k = await expectStatus<{ key: string }>(
      http.request('POST', `/admin/v1/accounts/${id}/keys`, {
        token: adminToken,
        body: { scopes: a.scopes ?? ['image', 'video', 'chat'] },
      }),
      201,
      'create key',
    );
    keys.push(k.key);
  }
  let next = 0;
  return { id, nextKey: () => keys[next++ % keys.length]! };
}

/** Runs `total` tasks with at most `concurrency` in flight; resolves when all are done. */
export async function runPool(
  total: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, total) }, async () => {
    while (next < total) {
      const index = next++;
      await task(index);
    }
  });
  await Promise.all(lanes);
}
