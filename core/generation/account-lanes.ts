/**
 * One lane per account through admission: at most `perAccount` of an account's requests are being
 * admitted and started at once, and the rest wait in their own account's lane, first come first
 * served. Past the lane, a request meets queues that know nothing of accounts (the database pool's
 * waiting list, the Temporal frontend's start calls, which one history shard takes one at a time):
 * without lanes, another account's burst of 300 images filled them all, and a lone request waited
 * behind every one. With them it waits behind at most `perAccount` of each other account's.
 *
 * Per process: several API processes each keep their own lanes, so an account has at most
 * `perAccount` admissions in flight per process.
 */
export interface AccountLanes {
  /** Runs `work` once the account's lane has room; the room is handed on when it settles. */
  through<T>(accountId: string, work: () => Promise<T>): Promise<T>;
  /** Requests waiting or inside, per account (for tests and metrics). */
  occupancy(accountId: string): { inside: number; waiting: number };
}

interface Lane {
  inside: number;
  waiting: (() => void)[];
}

/** Admissions of one account in flight at once: enough for a busy account's steady rate (each takes milliseconds). */
export const ADMISSIONS_PER_ACCOUNT = 4;

export function createAccountLanes(perAccount = ADMISSIONS_PER_ACCOUNT): AccountLanes {
  if (!Number.isInteger(perAccount) || perAccount < 1) throw new Error(`perAccount must be a positive integer`);
  const lanes = new Map<string, Lane>();

  const enter = (accountId: string): Lane | Promise<Lane> => {
    let lane = lanes.get(accountId);
    if (!lane) {
      lane = { inside: 0, waiting: [] };
      lanes.set(accountId, lane);
    }
    if (lane.inside < perAccount) {
      lane.inside++;
      return lane;
    }
    const queued = lane;
    // The leaving request hands its place on: `inside` stays as it is.
    return new Promise<Lane>((resolve) => queued.waiting.push(() => resolve(queued)));
  };

  const leave = (accountId: string, lane: Lane): void => {
    const next = lane.waiting.shift();
    if (next) return next();
    lane.inside--;
    if (lane.inside === 0) lanes.delete(accountId);
  };

  return {
    async through(accountId, work) {
      const lane = await enter(accountId);
      try {
        return await work();
      } finally {
        leave(accountId, lane);
      }
    },
    occupancy(accountId) {
      const lane = lanes.get(accountId);
      return { inside: lane?.inside ?? 0, waiting: lane?.waiting.length ?? 0 };
    },
  };
}
