// Two OpenAI-compatible image upstreams on loopback for the fault run, both listing the run's
// upstream model: `flaky` (asked first) fails half its submits the ways real upstreams fail (503,
// 429, 500, a connection cut before any answer), `steady` always renders. Whatever the service
// is going through, each such image must end served by one of them, held and charged once, unless
// one of the run's outages failed it (released, nothing charged).
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import sharp from 'sharp';
import { everyRow, failedByOutage } from './ledger-checks';
import type { Check, GenerationFact } from './ledger-checks';
import { UPSTREAM_MODEL, UPSTREAM_PROMPT } from './workload';

export interface UpstreamCounts {
  submits: number;
  failed: number;
  served: number;
}

export interface FaultUpstreams {
  /** UPSTREAMS_JSON for the service: the model on `flaky` first, then `steady`. */
  config: string;
  counts: { flaky: UpstreamCounts; steady: UpstreamCounts };
  close(): Promise<void>;
}

type Failure = (res: ServerResponse) => void;

const FAILURES: Failure[] = [
  (res) =>
    void res
      .writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' })
      .end(JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } })),
  (res) =>
    void res
      .writeHead(429, { 'content-type': 'application/json' })
      .end(JSON.stringify({ error: { message: 'rate limited', type: 'rate_limit_error' } })),
  (res) =>
    void res
      .writeHead(500, { 'content-type': 'application/json' })
      .end(JSON.stringify({ error: { message: 'internal error', type: 'server_error' } })),
  (res) => void res.socket?.destroy(),
];

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** A PNG of the asked size, as a real image API renders one (the output check reads its header). */
const rendered = new Map<string, Promise<Buffer>>();
function png(size: string): Promise<Buffer> {
  const [width, height] = size.split('x').map(Number);
  const w = Number.isInteger(width) && width! > 0 && width! <= 4096 ? width! : 1024;
  const h = Number.isInteger(height) && height! > 0 && height! <= 4096 ? height! : 1024;
  const key = `${w}x${h}`;
  let made = rendered.get(key);
  if (!made)
    rendered.set(
      key,
      (made = sharp({ create: { width: w, height: h, channels: 3, background: '#468' } })
        .png()
        .toBuffer()),
    );
  return made;
}

async function startUpstream(
  failsEvery: (n: number) => boolean,
): Promise<{ baseUrl: string; counts: UpstreamCounts; close(): Promise<void> }> {
  const counts: UpstreamCounts = { submits: 0, failed: 0, served: 0 };
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readJson(req);
      if (req.method !== 'POST' || req.url !== '/v1/images/generations') {
        return res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'not found' } }));
      }
      const n = counts.submits++;
      // Some time at the upstream, so that worker kills and restarts find images in flight.
      await sleep(150 + (n % 7) * 150);
      if (failsEvery(n)) {
        counts.failed++;
        return FAILURES[n % FAILURES.length]!(res);
      }
      const image = await png(typeof body.size === 'string' ? body.size : '');
      counts.served++;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ created: Math.floor(Date.now() / 1000), data: [{ b64_json: image.toString('base64') }] }),
        );
    })().catch(() => res.destroy());
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A small deterministic hash: which submits fail is the same in every run, and streaks of failures happen (the breaker's case). */
function halfFail(n: number): boolean {
  let x = Math.imul(n + 0x9e3779b9, 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return ((x ^ (x >>> 16)) >>> 0) % 2 === 0;
}

export async function startFaultUpstreams(): Promise<FaultUpstreams> {
  const [flaky, steady] = await Promise.all([startUpstream(halfFail), startUpstream(() => false)]);
  const upstream = (name: string, baseUrl: string, priority: number, costEur: number) => ({
    name,
    protocol: 'openai',
    baseUrl,
    apiKey: `faults-${name}`,
    timeoutMs: 20_000,
    models: { [UPSTREAM_MODEL]: { model: `${name}-image`, priority, costEur } },
  });
  return {
    config: JSON.stringify({
      // Three in a row cool `flaky` down for a few seconds: with half its submits failing that
      // happens now and then, so the run also goes through the breaker's skip and probe.
      breaker: { failures: 3, cooldownMs: 5_000 },
      upstreams: [upstream('flaky', flaky.baseUrl, 1, 0.02), upstream('steady', steady.baseUrl, 2, 0.03)],
    }),
    counts: { flaky: flaky.counts, steady: steady.counts },
    close: async () => void (await Promise.all([flaky.close(), steady.close()])),
  };
}

/**
 * Every image of the upstream model either succeeded (the steady upstream always renders) — then
 * it was served by one of the two and its cost recorded — or failed the way one of the run's
 * outages explains, released with nothing charged (the ledger checks' rule); and the half-failing
 * upstream did make the service fall back.
 */
export async function upstreamCheck(db: pg.Pool, facts: GenerationFact[], upstreams: FaultUpstreams): Promise<Check> {
  const routed = facts.filter((g) => g.prompt.includes(UPSTREAM_PROMPT));
  const r = await db.query<RouteRow>(
    'SELECT generation_id, tried, served_by, cost_eur FROM generation_upstreams WHERE generation_id = ANY($1)',
    [routed.map((g) => g.id)],
  );
  return judgeRouted(routed, r.rows, upstreams.counts);
}

/** A generation_upstreams row as the check reads it. */
export interface RouteRow {
  generation_id: string;
  tried: string[];
  served_by: string | null;
  cost_eur: string | null;
}

/** The check itself, over the routed images, their records and what each upstream counted. */
export function judgeRouted(routed: GenerationFact[], rows: RouteRow[], counts: FaultUpstreams['counts']): Check {
  const byId = new Map(rows.map((row) => [row.generation_id, row]));
  const fellBack = rows.filter((row) => row.served_by === 'steady' && row.tried.includes('flaky')).length;
  const outages = routed.filter(failedByOutage);
  const { flaky, steady } = counts;
  const check = everyRow(
    'a half-failing upstream: every image served once, by one upstream, with its cost (or failed by an outage, uncharged)',
    routed,
    (g) => {
      if (failedByOutage(g)) return undefined;
      const row = byId.get(g.id);
      if (g.status !== 'succeeded')
        return `${g.id}: ${g.status} (${g.code ?? 'no code'}, hold ${g.holdState}, ${g.charges} charges)`;
      if (!row || (row.served_by !== 'flaky' && row.served_by !== 'steady'))
        return `${g.id}: served by ${row?.served_by ?? 'nobody recorded'}`;
      if (row.cost_eur === null) return `${g.id}: no cost recorded`;
      return undefined;
    },
    `${routed.length} images (${routed.length - outages.length} served, ${outages.length} failed by an outage: ${codesOf(outages)}); flaky failed ${flaky.failed} of ${flaky.submits} submits, ${fellBack} images fell back to steady (${steady.submits} submits)`,
  );
  if (check.ok && (routed.length === outages.length || flaky.failed === 0 || fellBack === 0))
    return { ...check, ok: false, detail: `${check.detail}: the fallback was never exercised` };
  return check;
}

/** `not_started ×1, settle_failed ×2`, or `none`. */
function codesOf(facts: GenerationFact[]): string {
  const counts = new Map<string, number>();
  for (const g of facts) counts.set(g.code ?? '', (counts.get(g.code ?? '') ?? 0) + 1);
  return counts.size === 0 ? 'none' : [...counts].map(([code, n]) => `${code} ×${n}`).join(', ');
}
