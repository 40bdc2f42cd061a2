import { ActivityNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { UpstreamConfig } from '../../core/config/upstreams';
import { inTransaction } from '../../core/db/pool';
import { receiveUpstreamWebhook } from '../../core/db/upstream-jobs';
import { InvalidRequestError, ServiceUnavailableError } from '../../core/errors';
import { metrics } from '../../core/metrics';
import { PREDICTION_ENDED } from '../../core/providers/replicate-upstream';
import {
  createJwksCache,
  CallbackSignatureError,
  verifyFalWebhook,
  verifyStandardWebhook,
} from '../../core/providers/callback-signatures';
import type { Headers, JwksCache } from '../../core/providers/callback-signatures';

export type CallbackProtocol = 'fal' | 'replicate';
export type UpstreamCallbackOutcome = 'completed' | 'ended' | 'already' | 'replayed' | 'unknown' | 'ignored';

export class UpstreamCallbackRejectedError extends InvalidRequestError {
  constructor() {
    // One answer for every refusal (unknown upstream, bad or stale signature): nothing to probe with.
    super('The webhook does not verify (unknown upstream, forged, altered or too old); nothing changed.', 'signature');
  }
}

export interface UpstreamCallbackDeps {
  pool: pg.Pool;
  client: Client;
  /** The configured upstreams: which may call back, and with what keys. */
  upstreams: readonly Pick<UpstreamConfig, 'name' | 'protocol' | 'jwksUrl' | 'webhookSecret'>[];
  clock?: () => number;
  /** How a JWKS is fetched (tests serve their own keys at the configured URL instead). */
  fetchJson?: (url: string) => Promise<unknown>;
  log?: (message: string, err: unknown) => void;
}

const PROTOCOL_OF: Record<CallbackProtocol, UpstreamConfig['protocol']> = {
  fal: 'queue-video',
  replicate: 'replicate',
};

/**
 * Webhooks from upstreams (fal, Replicate) saying a job we left waiting has ended: verified on the
 * raw bytes, de-duplicated by id, and the attempt waiting for the job (activities/generation/upstream-wait.ts)
 * completed through Temporal. Nothing here touches money: the workflow then collects the output and
 * the ledger settles it, as for any run. The completion happens inside the transaction that records
 * the webhook, so a Temporal that cannot be reached rolls the receipt back and the upstream's own
 * retry of the webhook counts.
 */
export function createUpstreamCallbackService(deps: UpstreamCallbackDeps) {
  const clock = deps.clock ?? Date.now;
  const caches = new Map<string, JwksCache>();
  const jwksOf = (url: string): JwksCache => {
    let cache = caches.get(url);
    if (!cache)
      caches.set(
        url,
        (cache = createJwksCache(url, { ...(deps.fetchJson ? { fetchJson: deps.fetchJson } : {}), now: clock })),
      );
    return cache;
  };

  /** The job the webhook is about, once its signature holds; undefined for an event that ends nothing. */
  async function verified(
    protocol: CallbackProtocol,
    upstream: Pick<UpstreamConfig, 'jwksUrl' | 'webhookSecret'>,
    headers: Headers,
    body: Buffer,
  ): Promise<{ jobId: string; webhookId: string } | undefined> {
    if (protocol === 'fal') {
      const cache = jwksOf(upstream.jwksUrl);
      let requestId: string;
      try {
        requestId = verifyFalWebhook(await cache.keys(), headers, body, clock()).requestId;
      } catch (err) {
        const fresh =
          err instanceof CallbackSignatureError && /does not verify/.test(err.message)
            ? await cache.refreshed()
            : undefined;
        if (!fresh) throw err;
        requestId = verifyFalWebhook(fresh, headers, body, clock()).requestId;
      }
      // fal sends one webhook per request (its retries repeat it): the request id is its id.
      return { jobId: requestId, webhookId: requestId };
    }
    if (!upstream.webhookSecret) throw new CallbackSignatureError('no webhook secret is configured for this upstream');
    const { webhookId } = verifyStandardWebhook(upstream.webhookSecret, headers, body, clock());
    const prediction = parse(body) as { id?: unknown; status?: unknown } | undefined;
    if (typeof prediction?.id !== 'string') return undefined;
    // Only a final prediction ends the wait; another event (start, output, logs) is acknowledged.
    return typeof prediction.status === 'string' && PREDICTION_ENDED.has(prediction.status)
      ? { jobId: prediction.id, webhookId }
      : undefined;
  }

  return {
    async receive(
      protocol: CallbackProtocol,
      upstreamName: string | undefined,
      headers: Headers,
      body: Buffer,
    ): Promise<UpstreamCallbackOutcome> {
      const upstream = deps.upstreams.find((u) => u.name === upstreamName && u.protocol === PROTOCOL_OF[protocol]);
      let job: { jobId: string; webhookId: string } | undefined;
      try {
        if (!upstream) throw new CallbackSignatureError(`no ${protocol} upstream is named ${upstreamName ?? '(none)'}`);
        job = await verified(protocol, upstream, headers, body);
      } catch (err) {
        if (!(err instanceof CallbackSignatureError))
          throw new ServiceUnavailableError('The webhook could not be verified now; retry it.', { cause: err });
        metrics.upstreamCallbacks.inc({ protocol, outcome: 'rejected' });
        deps.log?.('an upstream callback was refused', err);
        throw new UpstreamCallbackRejectedError();
      }
      const outcome = job ? await complete({ upstream: upstream.name, ...job }) : 'ignored';
      metrics.upstreamCallbacks.inc({ protocol, outcome });
      return outcome;
    },
  };

  async function complete(job: {
    upstream: string;
    jobId: string;
    webhookId: string;
  }): Promise<UpstreamCallbackOutcome> {
    try {
      return await inTransaction(deps.pool, async (tx) => {
        const receipt = await receiveUpstreamWebhook(tx, job);
        if (receipt.outcome !== 'ended') return receipt.outcome;
        if (!receipt.taskToken) return 'ended';
        try {
          await deps.client.activity.complete(receipt.taskToken, undefined);
          return 'completed';
        } catch (err) {
          // The attempt it names timed out meanwhile: the next one finds the job ended in its table.
          if (err instanceof ActivityNotFoundError) return 'ended';
          throw err;
        }
      });
    } catch (err) {
      throw new ServiceUnavailableError('The webhook could not be recorded now; retry it.', { cause: err });
    }
  }
}

export type UpstreamCallbackService = ReturnType<typeof createUpstreamCallbackService>;

function parse(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
