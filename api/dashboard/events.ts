import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Balance, GenerationService } from '../../service/generation/service';
import { principalOf } from '../shared/auth';
import { PLAN_RATE_LIMITS } from '../../core/plans';
import { generationOf } from '../shared/schemas';
import { openEventStream } from '../shared/sse';
import type { StandingMonitor } from '../shared/standing';

export interface LiveEventsDeps {
  service: GenerationService;
  /** Checks the page's session while the stream is open: a logout elsewhere ends it with `logout`. */
  standing: StandingMonitor;
}

/** The overview of the dashboard: the balance with the plan's rate limit. */
export const overviewOf = (b: Balance) => ({ ...b, rateLimitPerMinute: PLAN_RATE_LIMITS[b.plan] });

/**
 * Server-Sent Events for the dashboard, on the same live source as group A's streams
 * (service/generation/watch.ts): `generation` (group A's shape) whenever one of the account's generations
 * changes (created, running, succeeded, failed, by any door), and `overview` whenever the
 * balance, holds or allowance may have moved. Nothing is polled: the ledger's commits say what
 * changed.
 */
export function liveEvents(deps: LiveEventsDeps, request: FastifyRequest, reply: FastifyReply): void {
  const principal = principalOf(request);
  const sse = openEventStream(request, reply, {
    standing: deps.standing.watch(request),
    lastWords: (reason) => ({ event: 'logout', data: { reason } }),
  });
  let lastOverview = '';
  const overview = async (): Promise<boolean> => {
    const next = overviewOf(await deps.service.balance(principal));
    const seen = JSON.stringify(next);
    if (seen === lastOverview) return true;
    lastOverview = seen;
    return sse.deliver('overview', next);
  };

  void (async () => {
    try {
      // What changed in the last seconds too: a page loads its list, then opens this stream.
      const events = await deps.service.watch.account(principal, {
        since: new Date(Date.now() - 5_000),
        signal: sse.signal,
      });
      if (!(await overview())) return;
      for await (const e of events) {
        // Progress redraws the generation's row; only a change of status can move money.
        if (e.type === 'generation' || e.type === 'progress' || e.type === 'preview')
          if (!(await sse.deliver('generation', generationOf(e.generation)))) break;
        if (e.type !== 'progress' && !(await overview())) break;
      }
    } catch (err) {
      request.log.warn({ err }, 'dashboard live events: the stream stopped');
    } finally {
      sse.end();
    }
  })();
}
