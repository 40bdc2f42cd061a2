import type pg from 'pg';
import { inTransaction } from '../core/db/pool';
import {
  claimUndispatched,
  markDispatched,
  OUTBOX_CHANNEL,
  pruneFinishedDeliveries,
} from '../core/db/webhook-deliveries';
import { pruneSpentCallbacks } from '../core/db/webhook-endpoints';
import type { WebhookDispatcher } from '../service/webhooks/dispatch';

export interface WebhookRelayOptions {
  pool: pg.Pool;
  dispatcher: Pick<WebhookDispatcher, 'dispatch'>;
  /** How often the outbox is read without a notification (a missed NOTIFY, a relay that restarted). */
  pollMs?: number;
  batchSize?: number;
  /** How long finished deliveries stay in the log; kept for ever when not given. */
  retentionMs?: number;
  /** How often the relay looks for deliveries past their retention. */
  pruneEveryMs?: number;
  onError?: (err: unknown) => void;
}

const PRUNE_BATCH = 1_000;
const PRUNE_BATCHES_PER_TURN = 10;

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
 * It also keeps the delivery log to its retention, in small batches so as not to hold locks long,
 * and then drops the callbacks of jobs whose deliveries have all gone.
 */
export function startWebhookRelay(opts: WebhookRelayOptions): WebhookRelay {
  const { pool, dispatcher } = opts;
  const pollMs = opts.pollMs ?? 5_000;
  const batchSize = opts.batchSize ?? 100;
  const onError = opts.onError ?? (() => undefined);
  const pruneEveryMs = opts.pruneEveryMs ?? 3_600_000;
  let nextPruneAt = 0;
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

  const prune = async (retentionMs: number): Promise<void> => {
    if (Date.now() < nextPruneAt) return;
    nextPruneAt = Date.now() + pruneEveryMs;
    try {
      // A few batches a turn, so that a long backlog never keeps new deliveries waiting; what is
      // left is taken on the next turns.
      const before = new Date(Date.now() - retentionMs);
      for (const pruneSome of [pruneFinishedDeliveries, pruneSpentCallbacks]) {
        let batch = 0;
        while (!stopped && (await pruneSome(pool, before, PRUNE_BATCH)) === PRUNE_BATCH) {
          if (++batch === PRUNE_BATCHES_PER_TURN) {
            nextPruneAt = 0;
            return;
          }
        }
      }
    } catch (err) {
      onError(err);
    }
  };

  const loop = async (): Promise<void> => {
    while (!stopped) {
      if (!listener) await listen();
      if (opts.retentionMs !== undefined) await prune(opts.retentionMs);
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
