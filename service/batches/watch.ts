import type { Principal } from '../../core/accounts/principal';
import { isFinalBatch } from '../../core/vocabulary';
import type { LiveEvents, LiveNotice } from '../generation/live-events';
import type { BatchView } from './types';

/** One look at a batch, sent when it changed: its status or its counts. */
export interface BatchWatchEvent {
  /** The lines ended so far, and the status's place: a resumed stream is sent only what is newer. */
  id: string;
  final: boolean;
  batch: BatchView;
}

/** A busy batch's lines end many times a second: a stream looks at most this often. */
const MIN_GAP_MS = 500;
/** And at least this often, whatever it heard (a safety net). */
const REREAD_MS = 15_000;
const RANK: Record<string, number> = { in_progress: 1, cancelling: 2 };

/**
 * A batch followed live (SSE): its state now, then each change (status, counts) as the ledger
 * announces its lines ending, at most every half second, until it has ended.
 */
export function createBatchWatch(deps: {
  live: Pick<LiveEvents, 'subscribe'>;
  get: (principal: Principal, id: string) => Promise<BatchView>;
}) {
  return async function watch(
    principal: Principal,
    id: string,
    opts: { signal: AbortSignal; after?: string | undefined },
  ): Promise<AsyncIterable<BatchWatchEvent>> {
    const first = await deps.get(principal, id);
    let heard = true;
    let wake: (() => void) | undefined;
    const unsubscribe = await deps.live.subscribe(principal.accountId, (n: LiveNotice) => {
      if ('resync' in n || ('batchId' in n && n.batchId === first.id)) {
        heard = true;
        wake?.();
      }
    });
    /** Waits `ms`, or (`wakeable`) until the batch is heard of. */
    const pause = (ms: number, wakeable: boolean) =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          opts.signal.removeEventListener('abort', done);
          wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, ms);
        wake = wakeable ? done : undefined;
        opts.signal.addEventListener('abort', done, { once: true });
      });
    let last = opts.after ?? '';
    return (async function* () {
      try {
        for (let b = first; ;) {
          const ended = b.requestCounts.completed + b.requestCounts.failed;
          const at = `${isFinalBatch(b.status) ? 9 : (RANK[b.status] ?? 0)}.${ended}`;
          if (at !== last) {
            last = at;
            yield { id: at, final: isFinalBatch(b.status), batch: b };
          }
          if (isFinalBatch(b.status)) return;
          heard = false;
          await pause(MIN_GAP_MS, false);
          if (!heard) await pause(REREAD_MS, true);
          if (opts.signal.aborted) return;
          b = await deps.get(principal, id);
        }
      } finally {
        unsubscribe();
      }
    })();
  };
}
