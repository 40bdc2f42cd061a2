import type pg from 'pg';
import { parseNotice, STATUS_CHANNEL } from '../../core/ledger';
import type { StatusNotice } from '../../core/ledger';

/** What a subscriber hears: a change of its account, or that changes may have been missed (read again). */
export type LiveNotice = StatusNotice | { resync: true };

const RETRY_MS = 1_000;

/**
 * One LISTEN connection per API process on the ledger's status channel, fanned out to the
 * process's open streams by account. Every process hears every commit, so a generation changed
 * through any process (or a worker) reaches a stream open on any other. After a lost connection
 * every subscriber is told to read again: what changed meanwhile was not heard.
 */
export function createLiveEvents({ pool, log }: { pool: pg.Pool; log?: (message: string, err: unknown) => void }) {
  const byAccount = new Map<string, Set<(notice: LiveNotice) => void>>();
  /** Listeners to every account's changes (the start pace). */
  const anyAccount = new Set<(notice: LiveNotice) => void>();
  let client: pg.PoolClient | undefined;
  let connecting: Promise<void> | undefined;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;

  const everyone = (notice: LiveNotice): void => {
    for (const set of byAccount.values()) for (const listener of set) listener(notice);
    for (const listener of anyAccount) listener(notice);
  };

  const connect = (): Promise<void> =>
    (connecting ??= (async () => {
      try {
        const c = await pool.connect();
        c.on('notification', (message) => {
          const notice =
            message.channel === STATUS_CHANNEL && message.payload ? parseNotice(message.payload) : undefined;
          if (!notice) return;
          for (const listener of byAccount.get(notice.accountId) ?? []) listener(notice);
          for (const listener of anyAccount) listener(notice);
        });
        c.on('error', (err) => {
          if (client !== c) return;
          client = undefined;
          c.release(true);
          log?.('live events: the LISTEN connection was lost; listening again', err);
          reconnectLater();
        });
        await c.query(`LISTEN ${STATUS_CHANNEL}`);
        if (closed) {
          c.release();
          return;
        }
        client = c;
        everyone({ resync: true });
      } catch (err) {
        log?.('live events: could not LISTEN; trying again', err);
        reconnectLater();
      } finally {
        connecting = undefined;
      }
    })());

  const reconnectLater = (): void => {
    if (closed || retry || (byAccount.size === 0 && anyAccount.size === 0)) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, RETRY_MS);
    retry.unref();
  };

  return {
    /**
     * Calls `listener` for every change of the account from now on; resolves once this process is
     * listening (or has failed to, and will say `resync` when it is). Returns the unsubscribe.
     */
    async subscribe(accountId: string, listener: (notice: LiveNotice) => void): Promise<() => void> {
      const set = byAccount.get(accountId) ?? new Set();
      set.add(listener);
      byAccount.set(accountId, set);
      if (!client && !closed) await connect();
      return () => {
        set.delete(listener);
        if (set.size === 0) byAccount.delete(accountId);
      };
    },

    /** Calls `listener` for every account's changes from now on; resolves once listening, like `subscribe`. */
    async subscribeAll(listener: (notice: LiveNotice) => void): Promise<() => void> {
      anyAccount.add(listener);
      if (!client && !closed) await connect();
      return () => void anyAccount.delete(listener);
    },

    async close(): Promise<void> {
      closed = true;
      clearTimeout(retry);
      await connecting;
      client?.release();
      client = undefined;
    },
  };
}

export type LiveEvents = ReturnType<typeof createLiveEvents>;
