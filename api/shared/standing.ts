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

  /**
   * Which of these holders still stand, in two queries however many ask. A check asked for while
   * one is running waits for the next, so every answer comes from a query begun after it was asked
   * (what a stream confirms is never older than its question); the many streams that confirm the
   * same event together share one.
   */
  const standingOf = async (holders: readonly Entry['holder'][]): Promise<boolean[]> => {
    const keyIds = [...new Set(holders.flatMap((h) => ('keyId' in h ? [h.keyId] : [])))];
    const hashes = holders.flatMap((h) => ('tokenHash' in h ? [h.tokenHash] : []));
    const [keys, sessions] = await Promise.all([liveApiKeys(pool, keyIds), liveSessions(pool, hashes)]);
    return holders.map((h) => ('keyId' in h ? keys.has(h.keyId) : sessions.has(h.tokenHash.toString('hex'))));
  };
  let asked: { holder: Entry['holder']; answer: (stands: boolean) => void; fail: (err: unknown) => void }[] = [];
  let checking = false;
  const checkAsked = (): void => {
    if (checking || asked.length === 0) return;
    checking = true;
    const batch = asked;
    asked = [];
    void standingOf(batch.map((a) => a.holder))
      .then(
        (stands) => batch.forEach((a, i) => a.answer(stands[i]!)),
        (err: unknown) => batch.forEach((a) => a.fail(err)),
      )
      .finally(() => {
        checking = false;
        checkAsked();
      });
  };
  const stands = (holder: Entry['holder']): Promise<boolean> =>
    new Promise((answer, fail) => {
      asked.push({ holder, answer, fail });
      if (asked.length === 1) setImmediate(checkAsked);
    });

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
      const standing = await standingOf(open.map((e) => e.holder));
      open.forEach((e, i) => {
        if (!standing[i]) lose(e);
      });
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
          return (await stands(holder)) ? undefined : lose(entry);
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
