import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Balance, GenerationService } from '../../service/generation/service';
import type { SessionService } from '../../service/accounts/sessions';
import { principalOf } from '../shared/auth';
import { PLAN_RATE_LIMITS } from '../../core/plans';
import { generationOf } from '../shared/schemas';
import { openEventStream } from '../shared/sse';

export interface LiveEventsDeps {
  service: GenerationService;
  sessions: SessionService;
}

/** How often an open page's session is checked again (a logout elsewhere ends its stream). */
const SESSION_CHECK_MS = 15_000;

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
  const session = request.session!;
  const sse = openEventStream(request, reply);
  let lastOverview = '';
  const overview = async () => {
    const next = overviewOf(await deps.service.balance(principal));
    const seen = JSON.stringify(next);
    if (seen !== lastOverview) {
      lastOverview = seen;
      sse.send('overview', next);
    }
  };
  const checkSession = setInterval(() => {
    void deps.sessions.authenticate(session.token).then(
      (alive) => {
        if (alive) return;
        sse.send('logout', {});
        sse.end();
      },
      (err: unknown) => request.log.warn({ err }, 'dashboard live events: the session could not be checked'),
    );
  }, SESSION_CHECK_MS);
  sse.signal.addEventListener('abort', () => clearInterval(checkSession), { once: true });

  void (async () => {
    try {
      // What changed in the last seconds too: a page loads its list, then opens this stream.
      const events = await deps.service.watch.account(principal, {
        after: String(Date.now() - 5_000),
        signal: sse.signal,
      });
      await overview();
      for await (const e of events) {
        // Progress redraws the generation's row; only a change of status can move money.
        if (e.type === 'generation' || e.type === 'progress' || e.type === 'preview')
          sse.send('generation', generationOf(e.generation));
        if (e.type !== 'progress') await overview();
      }
    } catch (err) {
      request.log.warn({ err }, 'dashboard live events: the stream stopped');
    } finally {
      sse.end();
    }
  })();
}
