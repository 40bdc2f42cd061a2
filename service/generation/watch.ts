import type pg from 'pg';
import { getVersioned, listChangedGenerations } from '../../core/db/generations';
import { viewOf } from '../../core/generation/view';
import type { GenerationView } from '../../core/generation/view';
import { idFloorAt } from '../../core/ids';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';
import { isFinal } from '../../core/vocabulary';
import type { GenerationStatus } from '../../core/vocabulary';
import type { LiveEvents, LiveNotice } from './live-events';
import { readOwn } from './lookup';

/** One change seen by a live stream. `id` resumes the stream after it (SSE `Last-Event-ID`). */
export type WatchEvent =
  | { type: 'generation'; id: string; final: boolean; generation: GenerationView }
  /** A running generation's progress rose (its status did not change). */
  | { type: 'progress'; id: string; generation: GenerationView }
  /** A running video's first frame is stored: the record now has its `thumbnailUrl`. */
  | { type: 'preview'; id: string; generation: GenerationView }
  /** The account's money moved without a generation changing (credits added). */
  | { type: 'account' };

/** Streams read their generation again at least this often, whatever they heard (a safety net). */
const REREAD_MS = 30_000;
/** How far back an account stream looks for generations that may change: past every kind's deadline. */
const LIVE_WINDOW_MS = 3 * 3_600_000;
const RANK: Record<GenerationStatus, number> = { queued: 1, running: 2, succeeded: 3, failed: 3 };

/** A wake-up flag that a listener raises and a stream waits on, bounded in time and by the caller's signal. */
function inbox() {
  let raised = false;
  let wake: (() => void) | undefined;
  return {
    raise(): void {
      raised = true;
      wake?.();
    },
    /** False once `signal` has ended the wait for good. */
    async wait(signal: AbortSignal, ms: number): Promise<boolean> {
      if (!raised && !signal.aborted) {
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            wake = undefined;
            resolve();
          };
          const timer = setTimeout(done, ms);
          wake = done;
          signal.addEventListener('abort', done, { once: true });
        });
      }
      raised = false;
      return !signal.aborted;
    },
  };
}

/**
 * Live streams of generations, on the ledger's change notices (service/generation/live-events.ts): each
 * stream subscribes before it reads, so no change falls between its first look and the next.
 */
export function createWatch({ pool, store, live }: { pool: pg.Pool; store: OutputStore; live: LiveEvents }) {
  return {
    /**
     * The statuses of one generation from `after` on (an event id it sent before), ending with the
     * final one, and its progress while it runs. An event id is its status's rank with the
     * progress as hundredths (`2.40`: running at 40 %), so a resumed stream is sent only what is
     * newer. A generation the account does not own is a NotFoundError before anything streams.
     */
    async generation(
      principal: Principal,
      id: string,
      opts: { after?: string | undefined; signal: AbortSignal },
    ): Promise<AsyncIterable<WatchEvent>> {
      await readOwn(pool, principal.accountId, id);
      const box = inbox();
      const unsubscribe = await live.subscribe(principal.accountId, (n: LiveNotice) => {
        if ('resync' in n || ('generationId' in n && n.generationId === id)) box.raise();
      });
      let last = Number(opts.after ?? 0) || 0;
      // Sent once per stream, with the id of the last event (a preview has no place of its own
      // in the order of statuses); a resumed stream that sees the thumbnail already sends it again.
      let previewSent = false;
      return (async function* () {
        try {
          for (;;) {
            const g = await readOwn(pool, principal.accountId, id);
            const rank = RANK[g.status];
            const at = g.status === 'running' ? rank + Math.min(99, g.progressPercent ?? 0) / 100 : rank;
            if (rank > Math.floor(last)) {
              last = at;
              yield {
                type: 'generation',
                id: eventIdOf(at),
                final: isFinal(g.status),
                generation: await viewOf(g, store),
              } as const;
            } else if (at > last) {
              last = at;
              yield { type: 'progress', id: eventIdOf(at), generation: await viewOf(g, store) } as const;
            }
            if (!previewSent && g.status === 'running' && g.previewKeys.thumbnail) {
              previewSent = true;
              yield { type: 'preview', id: eventIdOf(last), generation: await viewOf(g, store) } as const;
            }
            if (isFinal(g.status) || !(await box.wait(opts.signal, REREAD_MS))) return;
          }
        } finally {
          unsubscribe();
        }
      })();
    },

    /**
     * Every change of the account's generations (or of `ids` only), from `after` on: an event id
     * is the time of the change, so a resumed stream is sent what changed since. Listed ids are
     * sent as they are now first (unless sent before), and their stream ends once each has ended.
     * Progress of a running one is sent as it is heard (its id the last change's time: progress is
     * not replayed on resume, the record has it).
     */
    async account(
      principal: Principal,
      opts: { ids?: readonly string[] | undefined; after?: string | undefined; signal: AbortSignal },
    ): Promise<AsyncIterable<WatchEvent>> {
      const wanted = opts.ids && new Set(opts.ids);
      const changed = new Set<string>();
      const progressed = new Set<string>();
      const previewed = new Set<string>();
      let resync = false;
      let credited = false;
      const box = inbox();
      const unsubscribe = await live.subscribe(principal.accountId, (n: LiveNotice) => {
        if ('resync' in n) resync = true;
        else if ('credited' in n) credited = true;
        // A batch's own change: its lines' generations are announced on their own.
        else if ('batch' in n) return;
        else if (wanted && !wanted.has(n.generationId)) return;
        else if ('progress' in n) progressed.add(n.generationId);
        else if ('preview' in n) previewed.add(n.generationId);
        else changed.add(n.generationId);
        box.raise();
      });
      const accountId = principal.accountId;
      const sent = new Map<string, number>();
      const sentProgress = new Map<string, number>();
      const resumedAt = Number(opts.after ?? NaN);
      /** Changes up to this time were sent before (the stream resumes after them). */
      const after = Number.isFinite(resumedAt) ? resumedAt : -1;
      let since = Number.isFinite(resumedAt) ? resumedAt : Date.now();
      const changesSince = async (from: number) => {
        const rows = await listChangedGenerations(pool, accountId, {
          fromId: idFloorAt('gen', from - LIVE_WINDOW_MS),
          since: new Date(from),
        });
        return wanted ? rows.filter((r) => wanted.has(r.id)) : rows;
      };
      // Read before anything streams, so that a database out of reach is an error answer, not a cut stream.
      let rows: Awaited<ReturnType<typeof getVersioned>>;
      try {
        rows = wanted
          ? await getVersioned(pool, accountId, [...wanted])
          : Number.isFinite(resumedAt)
            ? await changesSince(resumedAt)
            : [];
      } catch (err) {
        unsubscribe();
        throw err;
      }
      // A listed generation that is not the account's will never change here: nothing to wait for.
      const finished = new Set(wanted ? [...wanted].filter((id) => !rows.some((r) => r.id === id)) : []);
      return (async function* () {
        try {
          for (;;) {
            for (const row of rows) {
              const version = row.updatedAt.getTime();
              if (isFinal(row.status)) finished.add(row.id);
              if ((sent.get(row.id) ?? after) >= version) continue;
              sent.set(row.id, version);
              since = Math.max(since, version);
              yield {
                type: 'generation',
                id: String(version),
                final: isFinal(row.status),
                generation: await viewOf(row, store),
              } as const;
            }
            if (credited) {
              credited = false;
              yield { type: 'account' } as const;
            }
            if (progressed.size > 0) {
              const ids = [...progressed].filter((id) => !changed.has(id));
              progressed.clear();
              for (const row of await getVersioned(pool, accountId, ids)) {
                const p = row.progressPercent ?? 0;
                if (row.status !== 'running' || (sentProgress.get(row.id) ?? -1) >= p) continue;
                sentProgress.set(row.id, p);
                yield { type: 'progress', id: String(since), generation: await viewOf(row, store) } as const;
              }
            }
            if (previewed.size > 0) {
              const ids = [...previewed];
              previewed.clear();
              for (const row of await getVersioned(pool, accountId, ids)) {
                if (row.status === 'running' && row.previewKeys.thumbnail)
                  yield { type: 'preview', id: String(since), generation: await viewOf(row, store) } as const;
              }
            }
            // A stream of listed generations ends once each has ended (and been sent).
            if (wanted && finished.size >= wanted.size) return;
            if (!(await box.wait(opts.signal, REREAD_MS))) return;
            const ids = [...changed];
            changed.clear();
            // After a lost connection, what changed meanwhile is read from the table; a second's
            // overlap covers commits dated a little before they became visible.
            rows = resync ? await changesSince(since - 1_000) : await getVersioned(pool, accountId, ids);
            resync = false;
          }
        } finally {
          unsubscribe();
        }
      })();
    },
  };
}

export type Watch = ReturnType<typeof createWatch>;

/** A single generation's event id: its status's rank, and while running its progress in hundredths. */
const eventIdOf = (at: number): string => (Number.isInteger(at) ? String(at) : at.toFixed(2));
