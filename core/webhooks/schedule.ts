/**
 * When a failed delivery is tried again (DESIGN §6): after the first failure 5 s, then 5 min,
 * 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h: ten attempts over about three days. Pure data, so
 * the delivery workflow can import it; tests pass a compressed schedule instead.
 */
const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export const RETRY_SCHEDULE_MS: readonly number[] = [
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  14 * HOUR,
  20 * HOUR,
  24 * HOUR,
];

/** An endpoint whose every attempt failed for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * HOUR;

/** How long the secret replaced by a rotation keeps signing. */
export const ROTATION_OVERLAP_MS = 24 * HOUR;
