import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { listChangedGenerations, listInFlightIds } from '../../core/db/generations';
import { idFloorAt } from '../../core/ids';
import type { OutputStore } from '../../core/storage';
import type { Balance, GenerationService } from '../../service/generation-service';
import { viewOf } from '../../core/generation-view';
import type { SessionService } from '../../service/session-service';
import { principalOf } from '../auth';
import { PLAN_LIMITS } from '../rate-limit';
import { generationOf } from '../schemas';

export interface LiveEventsDeps {
  pool: pg.Pool;
  store: OutputStore;
  service: GenerationService;
  sessions: SessionService;
  /** How often the account is looked at (default 1 s). */
  tickMs?: number;
}

const KEEPALIVE_MS = 15_000;
/** A stream ends after this long; the browser's EventSource reconnects by itself (and re-authenticates). */
const MAX_STREAM_MS = 10 * 60_000;
/** Changes are looked for this far back as well: a transaction commits a little after its now(). */
const OVERLAP_MS = 5_000;
/** Generations created this long ago are still watched (an admission that fetched an input commits late). */
const RECENT_MS = 10 * 60_000;

/** The overview of the dashboard: the balance with the plan's rate limit. */
export const overviewOf = (b: Balance) => ({ ...b, rateLimitPerMinute: PLAN_LIMITS[b.plan] });

/** Streams that are open, so that the app's close ends them instead of waiting for the browsers. */
const open = new Set<() => void>();
export function endLiveEvents(): void {
  for (const end of open) end();
}

/**
 * Server-Sent Events for the dashboard: `generation` (group A's shape) whenever one of the account's
 * generations changes (created, running, succeeded, failed, by any door), and `overview` whenever
 * the balance, holds or allowance move. One request per open page, instead of a poll per job; the
 * server reads a bounded range of the account's index once a second: generations in flight (a
 * partial index) and those of the last minutes that changed.
 */
export function liveEvents(deps: LiveEventsDeps, request: FastifyRequest, reply: FastifyReply): void {
  const principal = principalOf(request);
  const session = request.session!;
  const tickMs = deps.tickMs ?? 1_000;
  const started = Date.now();
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });

  let ended = false;
  let timer: NodeJS.Timeout | undefined;
  const end = () => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    open.delete(end);
    res.end();
  };
  open.add(end);
  request.raw.on('close', end);

  const send = (event: string, data: unknown) => {
    if (!ended) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  res.write(`retry: 2000\n\n`);

  const sent = new Map<string, string>();
  let inFlight = new Set<string>();
  let since = new Date(started - OVERLAP_MS);
  let lastOverview = '';
  let lastKeepalive = Date.now();
  let lastSessionCheck = Date.now();

  const tick = async () => {
    if (Date.now() - started > MAX_STREAM_MS) return end();
    if (Date.now() - lastSessionCheck > KEEPALIVE_MS) {
      lastSessionCheck = Date.now();
      if (!(await deps.sessions.authenticate(session.token))) {
        send('logout', {});
        return end();
      }
    }
    const overview = overviewOf(await deps.service.balance(principal));
    const seen = JSON.stringify(overview);
    if (seen !== lastOverview) {
      lastOverview = seen;
      send('overview', overview);
    }
    const tickStarted = new Date();
    const recent = idFloorAt('gen', Date.now() - RECENT_MS);
    const oldestInFlight = [...inFlight].sort()[0];
    const fromId = oldestInFlight !== undefined && oldestInFlight < recent ? oldestInFlight : recent;
    for (const row of await listChangedGenerations(deps.pool, principal.accountId, { fromId, since })) {
      const version = `${row.status}:${row.updatedAt.getTime()}`;
      if (row.status === 'queued' || row.status === 'running') inFlight.add(row.id);
      else inFlight.delete(row.id);
      if (sent.get(row.id) === version) continue;
      sent.set(row.id, version);
      send('generation', generationOf(await viewOf(row, deps.store)));
    }
    since = new Date(tickStarted.getTime() - OVERLAP_MS);
    if (Date.now() - lastKeepalive > KEEPALIVE_MS) {
      lastKeepalive = Date.now();
      if (!ended) res.write(': keep-alive\n\n');
    }
  };

  const loop = async () => {
    try {
      await tick();
    } catch (err) {
      request.log.warn({ err }, 'dashboard live events: a look at the account failed');
    }
    if (!ended) timer = setTimeout(() => void loop(), tickMs);
  };
  void (async () => {
    try {
      inFlight = new Set(await listInFlightIds(deps.pool, principal.accountId));
    } catch (err) {
      request.log.warn({ err }, 'dashboard live events: could not read the generations in flight');
    }
    await loop();
  })();
}
