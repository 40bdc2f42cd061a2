import type pg from 'pg';
import { defaultExpectedSeconds } from '../../core/catalogue/expected-durations';
import { measuredSeconds } from '../../core/db/durations';
import { recordProgress } from '../../core/ledger/progress';
import type { ProgressSource } from '../../core/ledger/progress';
import type { ProviderJob } from '../../core/providers/types';
import { FLAT_KINDS } from '../../core/webhooks/events';

/** At most one progress write this often, unless it rose by a PROGRESS_STEP or more. */
const PROGRESS_EVERY_MS = 3_000;
const PROGRESS_STEP = 10;
/** An estimate from elapsed time stops here: only the provider (or success) says a run is nearly done. */
const ELAPSED_CAP = 95;
/**
 * Nothing is written before a run has lasted this long: a run done sooner (an image, a chat) would
 * only write figures its success makes 100 a moment later, a cost on the busiest path for nothing
 * anyone reads. The provider's figure meanwhile is kept and written at the first tick after.
 */
const QUIET_START_MS = 1_000;

/**
 * Records a run's progress in its own table (core/ledger/progress.ts), never the ledger's rows: the
 * provider's own figure whenever it reports one, else an estimate from elapsed time against the
 * expected duration (checked every second). Writes at most every PROGRESS_EVERY_MS or every
 * PROGRESS_STEP points, one at a time, never 0 (what a record without progress shows) and nothing
 * in a run's first QUIET_START_MS; a failed write is logged and the run goes on. Progress webhooks
 * are owed only for the kinds that have them, so only those writes are transactions.
 */
export function progressRecorder(pool: pg.Pool, job: ProviderJob, log: (message: string, meta: object) => void) {
  const started = Date.now();
  let written = -1;
  let writtenAt = 0;
  let reported = false;
  let stopped = false;
  let held: number | undefined;
  const events = FLAT_KINDS.includes(job.kind);
  let writing: Promise<void> = Promise.resolve();
  let expectedMs = defaultExpectedSeconds(job.kind, job.params) * 1000;
  // Read once the run has lasted a tick: a run done sooner (most images) never needs the estimate.
  let measured: Promise<void> | undefined;
  const measure = (): Promise<void> =>
    (measured ??= measuredSeconds(pool, job.generationId).then(
      (s) => {
        if (s !== undefined) expectedMs = s * 1000;
      },
      () => undefined,
    ));

  const offer = (percent: number, source: ProgressSource): void => {
    const p = Math.max(0, Math.min(99, Math.floor(percent)));
    const now = Date.now();
    if (now - started < QUIET_START_MS && source === 'provider') {
      held = p;
      return;
    }
    if (p === 0 || p <= written || (p - written < PROGRESS_STEP && now - writtenAt < PROGRESS_EVERY_MS)) return;
    written = p;
    writtenAt = now;
    writing = writing
      .then(() => recordProgress(pool, job.generationId, p, source, { events }))
      .then(
        () => undefined,
        (err: unknown) => {
          log('progress could not be recorded', { generationId: job.generationId, error: (err as Error).message });
        },
      );
  };
  const estimate = setInterval(() => {
    if (held !== undefined) {
      const p = held;
      held = undefined;
      if (!stopped) offer(p, 'provider');
    }
    if (reported) return;
    void measure().then(() => {
      if (!reported && !stopped) offer(Math.min(ELAPSED_CAP, ((Date.now() - started) / expectedMs) * 100), 'elapsed');
    });
  }, 1_000);
  return {
    /** The provider's own figure: from now on the elapsed-time estimate is not used. */
    provider(percent: number): void {
      if (!Number.isFinite(percent)) return;
      reported = true;
      offer(percent, 'provider');
    },
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(estimate);
      await measured;
      await writing;
    },
  };
}
