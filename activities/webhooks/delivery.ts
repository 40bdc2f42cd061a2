import { performance } from 'node:perf_hooks';
import { metrics } from '../../core/metrics';
import { Context } from '@temporalio/activity';
import type pg from 'pg';
import { getAlert } from '../../core/db/alerts';
import { countsOfBatch, getBatchById } from '../../core/db/batches';
import { getGeneration } from '../../core/db/generations';
import { inTransaction } from '../../core/db/pool';
import { loadDeliveryTarget, recordAttempt, stopDelivery } from '../../core/db/webhook-deliveries';
import type { DeliveryTarget } from '../../core/db/webhook-deliveries';
import { OutboundRequestError } from '../../core/net/errors';
import { WEBHOOK_DELIVERY } from '../../core/net/safe-http';
import type { SafeHttpClient, SafeResponse } from '../../core/net/safe-http';
import { classifyAddress } from '../../core/net/address-policy';
import type { OutputStore } from '../../core/storage/output-store';
import { deliveryPayload } from '../../core/webhooks/payload';
import { DISABLE_AFTER_FAILING_MS } from '../../core/webhooks/schedule';
import type { SecretBox } from '../../core/webhooks/secret-box';
import { deliveryHeaders } from '../../core/webhooks/signing';
import { inSpanFollowing } from '../../core/tracing';

export interface WebhookActivityDeps {
  pool: pg.Pool;
  store: OutputStore;
  secretBox: SecretBox;
  /** The SSRF-safe client (core/net): every address is checked at connect time. */
  http: SafeHttpClient;
  /** Milliseconds since the epoch; injectable so tests can move through a rotation or 3 days. */
  clock?: () => number;
  /** An endpoint whose every attempt failed for this long is disabled (3 days). */
  disableAfterMs?: number;
  /** Attempts to one endpoint in flight at once on this worker; more wait their turn. */
  perEndpointConcurrency?: number;
}

export interface AttemptRequest {
  deliveryId: string;
  /** How long after a failure the workflow will try again; null when this is the last attempt. */
  retryInMs: number | null;
}

export type AttemptOutcome =
  | { outcome: 'delivered' | 'retry' | 'failed'; attempt: number; statusCode: number | null; error: string | null }
  /** Not sent: the delivery or its endpoint is gone, or the endpoint is (now) disabled. */
  | { outcome: 'stopped'; reason: string }
  /** Not sent: this endpoint already has its share of attempts in flight. */
  | { outcome: 'deferred' };

/** Bytes of a receiver's answer kept in the delivery log. */
const EXCERPT_BYTES = 1024;

/**
 * What the delivery log keeps of an answer: its first 1 KiB, only when it came from a public
 * address. Where private targets are allowed (development mode), the log would otherwise let a
 * key holder read services on this host's own network through a webhook aimed at them; the status
 * code and timing are still recorded.
 */
export function excerptOf(res: Pick<SafeResponse, 'body' | 'remoteAddress'>): string | null {
  if (res.remoteAddress === undefined || classifyAddress(res.remoteAddress) !== 'public') return null;
  return res.body.subarray(0, EXCERPT_BYTES).toString('utf8');
}

/**
 * One delivery attempt: sign the payload with every secret valid now, POST it through the safe
 * client (15 s, redirects not followed), and record the attempt, the delivery's state and the
 * endpoint's run of failures in one transaction. HTTP failures are outcomes, not exceptions: the
 * workflow owns the retry schedule. Only an internal failure (the database) throws and is retried
 * by Temporal, which may send the same delivery twice: receivers drop duplicates by its id.
 */
export function createWebhookActivities(deps: WebhookActivityDeps) {
  const attempt: AttemptDeps = {
    pool: deps.pool,
    store: deps.store,
    secretBox: deps.secretBox,
    http: deps.http,
    clock: deps.clock ?? Date.now,
    disableAfterMs: deps.disableAfterMs,
  };
  const { pool } = deps;
  const perEndpoint = deps.perEndpointConcurrency ?? 4;
  const inFlight = new Map<string, number>();

  return {
    async attemptWebhookDelivery(req: AttemptRequest): Promise<AttemptOutcome> {
      const target = await loadDeliveryTarget(pool, req.deliveryId);
      if (!target) return { outcome: 'stopped', reason: 'the endpoint was deleted' };
      if (!target.endpoint.enabled) {
        const reason = `Not sent: the endpoint is disabled. ${target.endpoint.disabledReason ?? ''}`.trim();
        await stopDelivery(pool, target.id, reason);
        return { outcome: 'stopped', reason };
      }
      const { secretSealed } = target.endpoint;
      if (secretSealed === null) {
        const reason = 'Not sent: the account has no callback secret.';
        await stopDelivery(pool, target.id, reason);
        return { outcome: 'stopped', reason };
      }
      // A slow receiver may hold a few of this worker's slots, never all of them.
      const busy = inFlight.get(target.endpoint.id) ?? 0;
      if (busy >= perEndpoint) return { outcome: 'deferred' };
      inFlight.set(target.endpoint.id, busy + 1);
      try {
        return await send(attempt, target, secretSealed, req);
      } finally {
        const left = (inFlight.get(target.endpoint.id) ?? 1) - 1;
        if (left > 0) inFlight.set(target.endpoint.id, left);
        else inFlight.delete(target.endpoint.id);
      }
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;

interface AttemptDeps {
  pool: pg.Pool;
  store: OutputStore;
  secretBox: SecretBox;
  http: SafeHttpClient;
  clock: () => number;
  disableAfterMs: number | undefined;
}

/** Sends one attempt and records it: its answer, the delivery's state and the endpoint's run of failures. */
async function send(
  d: AttemptDeps,
  target: DeliveryTarget,
  secretSealed: string,
  req: AttemptRequest,
): Promise<AttemptOutcome> {
  const { endpoint } = target;
  const now = d.clock();
  const secrets = secretsAt(d.secretBox, target, secretSealed, now);
  const body = JSON.stringify(await payloadOf(d, target));
  const headers = deliveryHeaders({
    deliveryId: target.id,
    event: target.event,
    timestamp: Math.floor(now / 1000),
    body,
    secrets,
  });
  const { statusCode, error, excerpt, durationMs } = await post(d.http, target, headers, body);
  const delivered = statusCode !== null && statusCode >= 200 && statusCode < 300;
  const after = d.clock();
  const recorded = await inTransaction(d.pool, (tx) =>
    recordAttempt(tx, {
      deliveryId: target.id,
      endpointId: endpoint.id,
      startedAt: new Date(now),
      durationMs,
      statusCode,
      error,
      responseExcerpt: excerpt,
      delivered,
      gone: statusCode === 410,
      nextRetryAt: req.retryInMs === null ? null : new Date(after + req.retryInMs),
      now: new Date(after),
      disableAfterMs: d.disableAfterMs ?? DISABLE_AFTER_FAILING_MS,
    }),
  );
  if (!recorded) return { outcome: 'stopped', reason: 'the endpoint was deleted' };
  if (recorded.disabledReason !== null) return { outcome: 'stopped', reason: recorded.disabledReason };
  const outcome = delivered ? 'delivered' : req.retryInMs === null ? 'failed' : 'retry';
  metrics.webhookDeliveries.inc({ outcome });
  return { outcome, attempt: recorded.attempt, statusCode, error };
}

/** The secrets that sign now: the current one, and the previous one while its rotation overlap lasts. */
function secretsAt(secretBox: SecretBox, target: DeliveryTarget, secretSealed: string, now: number): string[] {
  const { endpoint, secretOwner } = target;
  const secrets = [secretBox.open(secretSealed, secretOwner)];
  if (
    endpoint.previousSecretSealed &&
    endpoint.previousSecretExpiresAt &&
    endpoint.previousSecretExpiresAt.getTime() > now
  ) {
    secrets.push(secretBox.open(endpoint.previousSecretSealed, secretOwner));
  }
  return secrets;
}

/** The event's payload in the endpoint's format, with the generation, alert or batch it is about as they are now. */
async function payloadOf({ pool, store }: AttemptDeps, target: DeliveryTarget) {
  const { endpoint } = target;
  const generation = target.generationId
    ? await getGeneration(pool, endpoint.accountId, target.generationId)
    : undefined;
  const alert = target.alertId ? await getAlert(pool, target.alertId) : undefined;
  const batchRow = target.batchId ? await getBatchById(pool, target.batchId) : undefined;
  const batch = batchRow && { row: batchRow, counts: await countsOfBatch(pool, batchRow.id) };
  return deliveryPayload(
    {
      deliveryId: target.id,
      event: target.event,
      format: endpoint.format,
      endpointId: endpoint.id,
      createdAt: target.createdAt,
      generation,
      progress: target.progress,
      alert,
      batch,
    },
    store,
  );
}

/** POSTs the signed body through the safe client; a failure to reach the receiver is an answer, not an exception. */
async function post(
  http: SafeHttpClient,
  target: DeliveryTarget,
  headers: ReturnType<typeof deliveryHeaders>,
  body: string,
): Promise<{ statusCode: number | null; error: string | null; excerpt: string | null; durationMs: number }> {
  const { endpoint } = target;
  const started = performance.now();
  let statusCode: number | null = null;
  let error: string | null = null;
  let excerpt: string | null = null;
  try {
    // Linked to the span that wrote the event, not its child: the delivery is retried for days
    // after that trace ended, each attempt on its own (docs/decisions/0057-tracing.md).
    const attributes = {
      'gensvc.delivery_id': target.id,
      'gensvc.endpoint_id': endpoint.id,
      'gensvc.event': target.event,
    };
    const res = await inSpanFollowing('webhook attempt', attributes, target.traceParent, () =>
      http.request(endpoint.url, {
        ...WEBHOOK_DELIVERY,
        headers,
        body,
        signal: Context.current().cancellationSignal,
      }),
    );
    statusCode = res.status;
    excerpt = excerptOf(res);
    if (res.status >= 300 && res.status < 400)
      error = 'The receiver answered with a redirect; redirects are not followed.';
  } catch (err) {
    if (!(err instanceof OutboundRequestError)) throw err;
    error = err.message;
  }
  return { statusCode, error, excerpt, durationMs: Math.round(performance.now() - started) };
}
