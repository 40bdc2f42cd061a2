import type { GenerationStatus } from '../../core/vocabulary';
import type { LiveEvents } from './live-events';

/**
 * An account's workflow starts beyond what it can run are spread in time (decision 0149).
 *
 * A burst of one account's requests used to start every workflow at once; their first workflow
 * tasks took both cores for seconds, and another account's lone request, arriving then, waited in
 * every stage (the server's queues are fair between accounts, the CPU is not). A generation the
 * account cannot run yet gains nothing from an early first task: it would only wait for a
 * provider permit that its own earlier runs hold. So each one past the account's `room` in flight
 * is started with a start delay (Temporal's `startDelay`): its workflow exists at once (held,
 * listed, cancellable: a cancel's signal-with-start ends the delay), and takes its first task at
 * its turn, one every `gap` after the last, where the gap follows how fast the account's runs end.
 *
 * In flight is what this API process started and has not yet heard end (succeeded or failed, on
 * the ledger's status channel, which it listens to from its creation). After that channel was
 * down the counts start again from nothing rather than guessed: a count too low only paces less.
 */
export interface StartPace {
  /** The start delay of a generation about to start, in ms (0: at once); counts it in flight. */
  delayFor(accountId: string, generationId: string): number;
  /** A generation whose start failed: no longer in flight. */
  dropped(accountId: string, generationId: string): void;
  /** Generations in flight per account (for tests). */
  inFlight(accountId: string): number;
}

export interface StartPaceOptions {
  /** Generations in flight an account starts without delay: what one worker's provider permits run at once. */
  room: number;
  /** The slowest pace past the room, in starts per second; faster when the account's runs end faster. */
  minPerSecond?: number;
  /** No start waits longer than this. */
  maxDelayMs?: number;
  now?: () => number;
}

/** Starts per second past the room when nothing has ended yet: faster than a provider's image runs end. */
const MIN_PER_SECOND = 20;
const MAX_DELAY_MS = 5 * 60_000;
/** How much the newest gap between two ends weighs in the account's pace. */
const GAP_WEIGHT = 0.2;
/**
 * A start not heard of for this long is no longer counted (one whose workflow had already closed, a
 * long video): counting too few only paces less.
 */
const FORGET_AFTER_MS = 10 * 60_000;

interface Account {
  /** Each generation in flight, with when it started. */
  open: Map<string, number>;
  /** When starts older than FORGET_AFTER_MS were last dropped. */
  prunedAt: number;
  /** When the last delayed start takes its first task. */
  nextAt: number;
  lastEndAt?: number;
  /** The account's mean time between two runs ending, in ms. */
  endGapMs?: number;
}

export function createStartPace(
  live: Pick<LiveEvents, 'subscribeAll'>,
  { room, minPerSecond = MIN_PER_SECOND, maxDelayMs = MAX_DELAY_MS, now = Date.now }: StartPaceOptions,
): StartPace {
  if (!Number.isInteger(room) || room < 1) throw new Error('room must be a positive integer');
  const accounts = new Map<string, Account>();
  const slowestGapMs = 1000 / minPerSecond;

  const leave = (accountId: string, account: Account): void => {
    if (account.open.size === 0) accounts.delete(accountId);
  };

  const ended = (accountId: string, generationId: string, status: GenerationStatus): void => {
    const account = accounts.get(accountId);
    if (!account || (status !== 'succeeded' && status !== 'failed') || !account.open.delete(generationId)) return;
    const at = now();
    if (account.lastEndAt !== undefined) {
      const gap = at - account.lastEndAt;
      account.endGapMs =
        account.endGapMs === undefined ? gap : account.endGapMs + GAP_WEIGHT * (gap - account.endGapMs);
    }
    account.lastEndAt = at;
    leave(accountId, account);
  };

  // Listening from the start (the process's one LISTEN, closed with the service), so that no end
  // is missed. The resync that says it now listens is not a loss; any later one is.
  let listening = false;
  void live
    .subscribeAll((notice) => {
      if ('resync' in notice) {
        if (listening) accounts.clear();
      } else if ('status' in notice) {
        ended(notice.accountId, notice.generationId, notice.status);
      }
    })
    .finally(() => (listening = true));

  const track = (accountId: string): Account => {
    let account = accounts.get(accountId);
    if (!account) {
      account = { open: new Map(), prunedAt: now(), nextAt: 0 };
      accounts.set(accountId, account);
    }
    return account;
  };

  return {
    delayFor(accountId, generationId) {
      const account = track(accountId);
      const at = now();
      account.open.set(generationId, at);
      if (account.open.size > room && at - account.prunedAt > FORGET_AFTER_MS / 10) {
        account.prunedAt = at;
        for (const [id, started] of account.open) if (at - started > FORGET_AFTER_MS) account.open.delete(id);
      }
      if (account.open.size <= room) return 0;
      // Twice as fast as the account's runs end, so that its next start is always ready for a free permit.
      const gap = Math.min(slowestGapMs, (account.endGapMs ?? Infinity) / 2);
      account.nextAt = Math.max(account.nextAt, at) + gap;
      return Math.min(Math.round(account.nextAt - at), maxDelayMs);
    },
    dropped(accountId, generationId) {
      const account = accounts.get(accountId);
      if (!account) return;
      account.open.delete(generationId);
      leave(accountId, account);
    },
    inFlight: (accountId) => accounts.get(accountId)?.open.size ?? 0,
  };
}
