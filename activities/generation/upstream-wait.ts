import { CompleteAsyncError, Context } from '@temporalio/activity';
import type pg from 'pg';
import { endUpstreamJob, parkUpstreamJob, upstreamJobEnded } from '../../core/db/upstream-jobs';
import { metrics } from '../../core/metrics';
import type { Provider, UpstreamWait } from '../../core/providers/types';

/** The upstream job a generation's run left waiting. */
export interface UpstreamWaitInput {
  generationId: string;
  waiting: UpstreamWait;
}

/**
 * Waiting for a long upstream job without holding a worker (docs/decisions/0050-long-upstream-jobs.md, "Long upstream jobs
 * hold no worker slot"). Each attempt looks once (the webhook's record, then the upstream itself)
 * and, if the job is still running, leaves its task token in PostgreSQL and returns its slot by
 * completing asynchronously: the verified webhook completes it (service/upstream-callbacks/callbacks.ts), or
 * the attempt times out after the poll period and Temporal's retry is the next look. Nothing of
 * this process is held between two looks, so a worker may die meanwhile and lose nothing.
 */
export function createUpstreamWaitActivities({ provider, pool }: { provider: Provider; pool: pg.Pool }) {
  return {
    async awaitUpstreamJob(request: UpstreamWaitInput): Promise<void> {
      metrics.providerActivitiesRunning.inc();
      try {
        await look(request);
      } finally {
        metrics.providerActivitiesRunning.dec();
      }
    },
    /** Stops a waiting job at its upstream (the generation was cancelled, or gave up waiting). */
    async cancelUpstreamJob({ waiting }: UpstreamWaitInput): Promise<void> {
      await provider.cancelJob?.(waiting);
    },
  };

  /** One look; throws CompleteAsyncError when the job still runs (the slot is returned at once). */
  async function look({ generationId, waiting }: UpstreamWaitInput): Promise<void> {
    const ctx = Context.current();
    const key = { upstream: waiting.upstream, jobId: waiting.jobId };
    if (await upstreamJobEnded(pool, key)) return;
    let ended = false;
    // Half the period at most, so that the attempt parks before its own timeout. A controller the
    // timer holds, not AbortSignal.timeout: AbortSignal.any keeps its sources only weakly.
    const limit = new AbortController();
    const timer = setTimeout(() => limit.abort(new Error('the look took too long')), Math.max(500, waiting.pollMs / 2));
    try {
      ended = (await provider.checkJob?.(waiting, AbortSignal.any([ctx.cancellationSignal, limit.signal]))) ?? true;
    } catch (err) {
      // One failed look is no news: the next one comes after the poll period, holding nothing meanwhile.
      ctx.log.warn('the upstream job could not be checked', {
        generationId,
        upstream: waiting.upstream,
        error: (err as Error).message,
      });
    } finally {
      clearTimeout(timer);
    }
    if (ended) {
      await endUpstreamJob(pool, key);
      return;
    }
    if ((await parkUpstreamJob(pool, key, ctx.info.taskToken)) === 'ended') return;
    metrics.upstreamWaits.inc({ upstream: waiting.upstream });
    throw new CompleteAsyncError();
  }
}
