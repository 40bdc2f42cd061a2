import { expect } from 'vitest';
import type { Harness } from './harness';
import { ADMIN_TOKEN, eventually } from './harness';

export interface GenerationRecord {
  id: string;
  kind: string;
  model: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  outputUrl: string;
  creditsCharged: number;
  error: null | { code: string; message: string; retryable: boolean };
  text?: string;
}

export interface ApiError {
  type: string;
  message: string;
  code: number;
  [extra: string]: unknown;
}

export interface Credits {
  balance: number;
  holdsActive: number;
  trial: { chatCap: number; chatUsed: number; chatLeft: number };
}

export async function generate(
  h: Harness,
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const res = await h.call('POST', '/api/generate', { key, body, headers });
  return { status: res.statusCode, body: res.json<{ generation: GenerationRecord; error?: ApiError }>() };
}

export async function credits(h: Harness, key: string): Promise<Credits> {
  const res = await h.call('GET', '/api/credits', { key });
  expect(res.statusCode).toBe(200);
  return res.json<Credits>();
}

export async function poll(h: Harness, key: string, id: string): Promise<GenerationRecord> {
  const res = await h.call('GET', `/api/generate/${id}`, { key });
  expect(res.statusCode).toBe(200);
  return res.json<{ generation: GenerationRecord }>().generation;
}

export async function untilFinished(
  h: Harness,
  key: string,
  id: string,
  timeoutMs = 60_000,
): Promise<GenerationRecord> {
  return eventually(async () => {
    const g = await poll(h, key, id);
    return g.status === 'succeeded' || g.status === 'failed' ? g : undefined;
  }, timeoutMs);
}

/** A generation as group A (`/api/v1`) shows it, with the upstream that served it. */
export interface GroupAGeneration {
  id: string;
  status: string;
  creditsCharged: number;
  provider: string | null;
  error: { code: string } | null;
  outputUrl: string;
}

export async function generateV1(h: Harness, key: string, body: Record<string, unknown>): Promise<GroupAGeneration> {
  const res = await h.call('POST', '/api/v1/generate', { key, body });
  expect([200, 202], res.body).toContain(res.statusCode);
  return res.json<GroupAGeneration>();
}

export function untilFinishedV1(h: Harness, key: string, id: string, timeoutMs = 60_000): Promise<GroupAGeneration> {
  return eventually(async () => {
    const g = (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<GroupAGeneration>();
    return g.status === 'succeeded' || g.status === 'failed' ? g : undefined;
  }, timeoutMs);
}

/** A generation's routing record, as the operator reads it. */
export async function routingOf(
  h: Harness,
  id: string,
): Promise<{ upstream: string | null; tried: string[]; costEur: number | null }> {
  return (await h.call('GET', `/admin/v1/generations/${id}/upstreams`, { key: ADMIN_TOKEN })).json();
}

/** Downloads an output through the API's own file route, as a client following outputUrl would. */
export async function download(
  h: Harness,
  outputUrl: string,
): Promise<{ status: number; contentType: string | undefined; body: Buffer }> {
  const url = new URL(outputUrl);
  const res = await h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  return {
    status: res.statusCode,
    contentType: res.headers['content-type'],
    body: res.rawPayload,
  };
}

/**
 * Waits in the database for many generations to finish, then reads each through the API once:
 * polling hundreds of jobs over HTTP would (rightly) run into the plan's rate limit.
 */
export async function allFinished(
  h: Harness,
  key: string,
  ids: string[],
  timeoutMs = 120_000,
): Promise<GenerationRecord[]> {
  await eventually(
    async () => {
      const r = await h.pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM generations WHERE id = ANY($1::text[]) AND status IN ('succeeded', 'failed')`,
        [ids],
      );
      return Number(r.rows[0]!.n) === ids.length ? true : undefined;
    },
    timeoutMs,
    200,
  );
  return Promise.all(ids.map((id) => poll(h, key, id)));
}

/**
 * Waits until a generation's workflow exists. A `queued` answer comes before its workflow is
 * started (docs/decisions/0011-workflow-start.md); a test that talks to Temporal about it directly waits for this.
 */
export async function untilStarted(h: Harness, id: string): Promise<void> {
  await eventually(async () =>
    h.client.workflow
      .getHandle(id)
      .describe()
      .then(
        () => true,
        () => undefined,
      ),
  );
}
