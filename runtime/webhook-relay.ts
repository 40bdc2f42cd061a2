import type pg from 'pg';
import { inTransaction } from '../core/db/pool';
import { claimUndispatched, markDispatched, OUTBOX_CHANNEL } from '../core/db/webhooks';
import type { WebhookDispatcher } from '../service/webhook-dispatch';

export interface WebhookRelayOptions {
  pool: pg.Pool;
  dispatcher: Pick<WebhookDispatcher, 'dispatch'>;
  /** How often the outbox is read without a notification (a missed NOTIFY, a relay that restarted). */
  pollMs?: number;
  batchSize?: number;
  onError?: (err: unknown) => void;
}

export interface WebhookRelay {
  stop(): Promise<void>;
}

/**
 * The outbox relay: starts a delivery workflow for every delivery row that has none yet. Rows are
 * written by the transactions that record generation states, which also NOTIFY; the relay
 * LISTENs, so a delivery starts within milliseconds of its commit, and it also polls, so a
 * notification lost while it was down costs a few seconds, not the delivery. Several relays (one
 * per worker) share the work with `FOR UPDATE SKIP LOCKED`; starting a workflow is idempotent by
 * its id, so a relay that dies between the start and the mark only makes the next one find it.
 */
export function startWebhookRelay(opts: WebhookRelayOptions): WebhookRelay {
  const { pool, dispatcher } = opts;
  const pollMs = opts.pollMs ?? 5_000;
  const batchSize = opts.batchSize ?? 100;
  const onError = opts.onError ?? (() => undefined);
  let stopped = false;
  let signalled = true;
  let wake: (() => void) | undefined;
  let listener: pg.PoolClient | undefined;

  const nudge = (): void => {
    signalled = true;
    wake?.();
  };

  const listen = async (): Promise<void> => {
    try {
      const client = await pool.connect();
      client.on('notification', nudge);
      client.on('error', () => {
        // The connection is gone: drop it and listen again on the next turn; polling carries on.
        if (listener === client) listener = undefined;
        client.release(true);
      });
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
      listener = client;
    } catch (err) {
      onError(err);
    }
  };

  /** Dispatches one batch; true when there may be more. */
  const relayBatch = (): Promise<boolean> =>
    inTransaction(pool, async (tx) => {
      const ids = await claimUndispatched(tx, batchSize);
      const results = await Promise.allSettled(ids.map((id) => dispatcher.dispatch(id)));
      const started = ids.filter((_, i) => results[i]?.status === 'fulfilled');
      await markDispatched(tx, started);
      const failure = results.find((r) => r.status === 'rejected');
      if (failure) onError(failure.reason);
      return ids.length === batchSize && started.length === ids.length;
    });

  const loop = async (): Promise<void> => {
    while (!stopped) {
      if (!listener) await listen();
      if (signalled) {
        signalled = false;
        try {
          while (!stopped && (await relayBatch()));
        } catch (err) {
          onError(err);
        }
      }
      if (stopped || signalled) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          signalled = true;
          resolve();
        }, pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  };
  const running = loop();

  return {
    async stop() {
      stopped = true;
      nudge();
      await running;
      const client = listener;
      listener = undefined;
      if (client) {
        await client.query(`UNLISTEN ${OUTBOX_CHANNEL}`).catch(() => undefined);
        // Closed rather than pooled: it carries this relay's notification listener.
        client.release(true);
      }
    },
  };
}
