import type { FastifyRequest } from 'fastify';
import type pg from 'pg';
import { hashToken } from '../../core/accounts/passwords';
import { liveApiKeys } from '../../core/db/accounts';
import { liveSessions } from '../../core/db/users';

/**
 * Whether the key or session behind a long-lived answer (an event stream, an MCP request that
 * waits for its generation) still stands. Such an answer was authenticated once, when it began; a
 * key revoked or a session ended since must not go on reading. Every open answer is checked again
 * by one query per process every STANDING_CHECK_MS, and each is confirmed by its own query right
 * before it sends an event, so nothing is sent once the revocation has committed.
 */
export const STANDING_CHECK_MS = 5_000;

export interface Standing {
  /** Aborted once the key or session no longer stands; its reason says why, for people. */
  readonly signal: AbortSignal;
  /** Checks now: why it no longer stands, or undefined while it does (and then it may send). */
  confirm(): Promise<string | undefined>;
  /** The answer is over: nothing to check any more. */
  stop(): void;
}

const REVOKED = 'The API key was revoked (or its account closed); this answer has ended and nothing more is sent.';
const SESSION_ENDED = 'The session has ended (logged out or expired); this answer has ended and nothing more is sent.';

interface Entry {
  holder: { keyId: string } | { tokenHash: Buffer };
  controller: AbortController;
}

export function createStandingMonitor({
  pool,
  intervalMs = STANDING_CHECK_MS,
  log,
}: {
  pool: pg.Pool;
  intervalMs?: number;
  log?: (message: string, err: unknown) => void;
}) {
  const entries = new Set<Entry>();
  let timer: NodeJS.Timeout | undefined;
  let sweeping = false;

  const lose = (entry: Entry): string => {
    const reason = 'keyId' in entry.holder ? REVOKED : SESSION_ENDED;
    entries.delete(entry);
    if (entries.size === 0) stopTimer();
    if (!entry.controller.signal.aborted) entry.controller.abort(reason);
    return reason;
  };

  /** Every open answer of the process in two queries (keys, sessions); a failed check keeps them open. */
  const sweep = async (): Promise<void> => {
    if (sweeping) return;
    sweeping = true;
    try {
      const open = [...entries];
      const keyIds = [...new Set(open.flatMap((e) => ('keyId' in e.holder ? [e.holder.keyId] : [])))];
      const hashes = open.flatMap((e) => ('tokenHash' in e.holder ? [e.holder.tokenHash] : []));
      const [keys, sessions] = await Promise.all([liveApiKeys(pool, keyIds), liveSessions(pool, hashes)]);
      for (const e of open) {
        const stands =
          'keyId' in e.holder ? keys.has(e.holder.keyId) : sessions.has(e.holder.tokenHash.toString('hex'));
        if (!stands) lose(e);
      }
    } catch (err) {
      log?.('standing: open answers could not be checked; they stay open until the next check', err);
    } finally {
      sweeping = false;
    }
  };

  const startTimer = (): void => {
    if (timer) return;
    timer = setInterval(() => void sweep(), intervalMs);
    timer.unref();
  };
  const stopTimer = (): void => {
    clearInterval(timer);
    timer = undefined;
  };

  return {
    /** Watches the key (or dashboard session) that authenticated `request`, until `stop()`. */
    watch(request: FastifyRequest): Standing {
      const keyId = request.principal?.apiKeyId;
      const token = request.session?.token;
      const controller = new AbortController();
      const holder: Entry['holder'] | undefined = keyId
        ? { keyId }
        : token
          ? { tokenHash: hashToken(token) }
          : undefined;
      if (!holder) {
        // Nothing authenticated it (a public answer): nothing can be revoked.
        return { signal: controller.signal, confirm: async () => undefined, stop: () => undefined };
      }
      const entry: Entry = { holder, controller };
      entries.add(entry);
      startTimer();
      return {
        signal: controller.signal,
        async confirm() {
          if (controller.signal.aborted) return String(controller.signal.reason);
          const stands =
            'keyId' in holder
              ? (await liveApiKeys(pool, [holder.keyId])).size > 0
              : (await liveSessions(pool, [holder.tokenHash])).size > 0;
          return stands ? undefined : lose(entry);
        },
        stop() {
          entries.delete(entry);
          if (entries.size === 0) stopTimer();
        },
      };
    },

    close(): void {
      stopTimer();
      entries.clear();
    },
  };
}

export type StandingMonitor = ReturnType<typeof createStandingMonitor>;
