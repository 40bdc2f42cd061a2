import type pg from 'pg';
import { getNumbered, latestChange, listChangedAfter, listChangedSince } from '../../core/db/generations';
import type { NumberedGeneration } from '../../core/db/generations';
import { viewOf } from '../../core/generation/view';
import type { GenerationView } from '../../core/generation/view';
import { idFloorAt } from '../../core/ids';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';
import { isFinal } from '../../core/vocabulary';
import type { GenerationStatus } from '../../core/vocabulary';
import { NotFoundError } from '../../core/errors';
import { accountEventId, generationEventId } from './event-ids';
import type { AccountMark, GenerationMark } from './event-ids';
import type { LiveEvents, LiveNotice } from './live-events';
import { readOwn } from '../../core/generation/lookup';

/** One change seen by a live stream. `id` resumes the stream after it (SSE `Last-Event-ID`, service/generation/event-ids.ts). */
export type WatchEvent =
  | { type: 'generation'; id: string; final: boolean; generation: GenerationView }
  /** A running generation's progress rose (its status did not change). */
  | { type: 'progress'; id: string; generation: GenerationView }
  /** A running video's first frame is stored: the record now has its `thumbnailUrl`. */
  | { type: 'preview'; id: string; generation: GenerationView }
  /** The account's money moved without a generation changing (credits added). */
  | { type: 'account' };

/** Streams read what changed again at least this often, whatever they heard (a safety net). */
const REREAD_MS = 30_000;
/** How far back a stream that starts from a time looks for generations that may have changed: past every kind's deadline. */
const LIVE_WINDOW_MS = 3 * 3_600_000;
/** Rows read at once when a stream reads what changed after a number. */
const PAGE = 200;
const RANK: Record<GenerationStatus, 1 | 2 | 3> = { queued: 1, running: 2, succeeded: 3, failed: 3 };

/** A wake-up flag that a listener raises and a stream waits on, bounded in time and by the caller's signal. */
function inbox() {
  let raised = false;
  let wake: (() => void) | undefined;
  return {
    raise(): void {
      raised = true;
      wake?.();
    },
    /** False once `signal` has ended the wait for good; `timedOut` says whether nothing was raised. */
    async wait(signal: AbortSignal, ms: number): Promise<{ go: boolean; timedOut: boolean }> {
      const wasRaised = raised;
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
      const timedOut = !wasRaised && !raised;
      raised = false;
      return { go: !signal.aborted, timedOut };
    },
  };
}
interface WatchDeps {
  pool: pg.Pool;
  store: OutputStore;
  live: LiveEvents;
}

interface GenerationWatchOptions {
  after?: GenerationMark | undefined;
  signal: AbortSignal;
}

interface AccountWatchOptions {
  ids?: readonly string[] | undefined;
  after?: AccountMark | undefined;
  since?: Date | undefined;
  signal: AbortSignal;
}

/**
 * Live streams of generations, on the ledger's change notices (service/generation/live-events.ts): each
 * stream subscribes before it reads, so no change falls between its first look and the next.
 * Events are states, not a log: a stream sends each newer state it reads (a status, a higher
 * progress, the preview), never one the client had, and a resumed stream sends what is newer than
 * its `Last-Event-ID` (service/generation/event-ids.ts) rather than every step it missed.
 */
export function createWatch(deps: WatchDeps) {
  return {
    generation: (principal: Principal, id: string, opts: GenerationWatchOptions) =>
      watchGeneration(deps, principal, id, opts),
    account: (principal: Principal, opts: AccountWatchOptions) => watchAccount(deps, principal, opts),
  };
}

/**
 * The states of one generation after `after` (what the client has seen), ending with the
 * final one: its status as it changes, its progress as it rises, a video's preview once. A
 * generation the account does not own is a NotFoundError before anything streams.
 */
async function watchGeneration(
  { pool, store, live }: WatchDeps,
  principal: Principal,
  id: string,
  opts: GenerationWatchOptions,
): Promise<AsyncIterable<WatchEvent>> {
  await readOwn(pool, principal.accountId, id);
  const box = inbox();
  const unsubscribe = await live.subscribe(principal.accountId, (n: LiveNotice) => {
    if ('resync' in n || ('generationId' in n && n.generationId === id)) box.raise();
  });
  let sent: Omit<GenerationMark, 'rank'> & { rank: GenerationMark['rank'] | 0 } = opts.after ?? {
    rank: 0,
    progress: 0,
    preview: false,
  };
  const idOf = (): string => generationEventId(sent as GenerationMark);
  return (async function* () {
    try {
      for (;;) {
        const g = await readOwn(pool, principal.accountId, id);
        let view: GenerationView | undefined;
        const seen = async () => (view ??= await viewOf(g, store));
        const rank = RANK[g.status];
        if (rank > sent.rank) {
          sent = { rank, progress: 0, preview: false };
          yield { type: 'generation', id: idOf(), final: isFinal(g.status), generation: await seen() } as const;
        }
        if (g.status === 'running') {
          const progress = Math.min(99, g.progressPercent ?? 0);
          if (progress > sent.progress) {
            sent = { ...sent, progress };
            yield { type: 'progress', id: idOf(), generation: await seen() } as const;
          }
          if (!sent.preview && g.previewKeys.thumbnail) {
            sent = { ...sent, preview: true };
            yield { type: 'preview', id: idOf(), generation: await seen() } as const;
          }
        }
        if (isFinal(g.status) || !(await box.wait(opts.signal, REREAD_MS)).go) return;
      }
    } finally {
      unsubscribe();
    }
  })();
}

/** What an account stream has heard since it last looked, gathered by its listener. */
interface Heard {
  changed: Set<string>;
  progressed: Set<string>;
  previewed: Set<string>;
  resync: boolean;
  credited: boolean;
}

/** Where an account stream starts: the rows it sends first, its mark, and what it had sent before. */
interface StreamStart {
  rows: NumberedGeneration[];
  mark: AccountMark;
  /** Changes numbered up to this were sent before (the stream resumes after them). */
  floor: number;
  finished: Set<string>;
}

interface AccountStream {
  pool: pg.Pool;
  store: OutputStore;
  accountId: string;
  wanted: Set<string> | undefined;
  heard: Heard;
  box: ReturnType<typeof inbox>;
  signal: AbortSignal;
  unsubscribe: () => void;
}

/**
 * Every change of the account's generations (or of `ids` only) after `after`: a status event's
 * id is its change number, and numbers follow commits, so a resumed stream is sent exactly the
 * generations whose status changed since, each as it is now. Listed ids are first sent as they
 * are now (unless sent before), and their stream ends once each has ended. `since` (without
 * `after`) starts with what changed after that time. Progress and previews of running ones are
 * sent as they are heard, with ids after the last change; a resumed stream does not send them again.
 */
async function watchAccount(
  { pool, store, live }: WatchDeps,
  principal: Principal,
  opts: AccountWatchOptions,
): Promise<AsyncIterable<WatchEvent>> {
  const wanted = opts.ids && new Set(opts.ids);
  const heard: Heard = {
    changed: new Set(),
    progressed: new Set(),
    previewed: new Set(),
    resync: false,
    credited: false,
  };
  const box = inbox();
  const unsubscribe = await live.subscribe(principal.accountId, (n: LiveNotice) => {
    if (hear(heard, wanted, n)) box.raise();
  });
  const accountId = principal.accountId;
  // Read before anything streams, so that a database out of reach is an error answer, not a cut stream.
  let start: StreamStart;
  try {
    start = await readStart(pool, accountId, wanted, opts);
  } catch (err) {
    unsubscribe();
    throw err;
  }
  return accountStream({ pool, store, accountId, wanted, heard, box, signal: opts.signal, unsubscribe }, start);
}

/** Notes a notice in `heard`; false when it is none of the stream's business. */
function hear(heard: Heard, wanted: Set<string> | undefined, n: LiveNotice): boolean {
  if ('resync' in n) heard.resync = true;
  else if ('credited' in n) heard.credited = true;
  // A batch's own change: its lines' generations are announced on their own.
  else if ('batch' in n) return false;
  else if (wanted && !wanted.has(n.generationId)) return false;
  else if ('progress' in n) heard.progressed.add(n.generationId);
  else if ('preview' in n) heard.previewed.add(n.generationId);
  else heard.changed.add(n.generationId);
  return true;
}

/** What changed after `from`, every page of it, the listed ids only when listed. */
async function changesAfter(
  pool: pg.Pool,
  accountId: string,
  wanted: Set<string> | undefined,
  from: number,
): Promise<NumberedGeneration[]> {
  const all: NumberedGeneration[] = [];
  for (let cursor = from; ;) {
    const page = await listChangedAfter(pool, accountId, cursor, PAGE);
    all.push(...(wanted ? page.filter((r) => wanted.has(r.id)) : page));
    if (page.length < PAGE) return all;
    cursor = page.at(-1)!.changeSeq;
  }
}

/** The stream's first rows and mark: the listed ids as they are, what changed after the mark, or since a time. */
async function readStart(
  pool: pg.Pool,
  accountId: string,
  wanted: Set<string> | undefined,
  opts: AccountWatchOptions,
): Promise<StreamStart> {
  const finished = new Set<string>();
  const latest = await latestChange(pool, accountId);
  if (latest === undefined) throw new NotFoundError('The account no longer exists.');
  // A mark past the account's latest change was never issued for it (another format, another
  // database): it counts as none, and the stream starts from now.
  const resumed = opts.after && opts.after.change <= latest ? opts.after : undefined;
  const mark = resumed ?? { change: latest, step: 0 };
  const floor = resumed?.change ?? -1;
  let rows: NumberedGeneration[];
  if (wanted) {
    const found = await getNumbered(pool, accountId, [...wanted]);
    // A listed generation that is not the account's will never change here: nothing to wait for.
    for (const id of wanted) if (!found.some((r) => r.id === id)) finished.add(id);
    for (const r of found) if (isFinal(r.status)) finished.add(r.id);
    rows = found.filter((r) => r.changeSeq > floor);
  } else if (resumed) {
    rows = await changesAfter(pool, accountId, wanted, resumed.change);
  } else if (opts.since) {
    rows = await listChangedSince(pool, accountId, {
      fromId: idFloorAt('gen', opts.since.getTime() - LIVE_WINDOW_MS),
      since: opts.since,
    });
  } else {
    rows = [];
  }
  return { rows, mark, floor, finished };
}

/** Sends what the stream reads and hears until its listed ids have ended or the caller leaves. */
async function* accountStream(s: AccountStream, start: StreamStart): AsyncGenerator<WatchEvent> {
  const { pool, store, accountId, wanted, heard } = s;
  const { floor, finished } = start;
  let { rows, mark } = start;
  const sent = new Map<string, number>();
  const sentProgress = new Map<string, number>();
  /** The next id: the row's own change number when it is newer than the mark, else the next step after it. */
  const nextId = (change?: number): string => {
    mark = change !== undefined && change > mark.change ? { change, step: 0 } : { ...mark, step: mark.step + 1 };
    return accountEventId(mark);
  };
  try {
    for (;;) {
      for (const row of rows) {
        if (isFinal(row.status)) finished.add(row.id);
        if (row.changeSeq <= (sent.get(row.id) ?? floor)) continue;
        sent.set(row.id, row.changeSeq);
        yield {
          type: 'generation',
          id: nextId(row.changeSeq),
          final: isFinal(row.status),
          generation: await viewOf(row, store),
        } as const;
      }
      if (heard.credited) {
        heard.credited = false;
        yield { type: 'account' } as const;
      }
      if (heard.progressed.size > 0) yield* progressEvents(s, sentProgress, nextId);
      if (heard.previewed.size > 0) yield* previewEvents(s, nextId);
      // A stream of listed generations ends once each has ended (and been sent).
      if (wanted && finished.size >= wanted.size) return;
      const woke = await s.box.wait(s.signal, REREAD_MS);
      if (!woke.go) return;
      const ids = [...heard.changed];
      heard.changed.clear();
      // After a lost connection, or when nothing was heard for a while, what changed is read
      // from the table by number: exactly what came after the last change sent.
      const scan = heard.resync || woke.timedOut;
      heard.resync = false;
      rows = scan ? await changesAfter(pool, accountId, wanted, mark.change) : await getNumbered(pool, accountId, ids);
    }
  } finally {
    s.unsubscribe();
  }
}

/** The progress heard of running generations whose status did not change meanwhile, each once per rise. */
async function* progressEvents(
  { pool, store, accountId, heard }: AccountStream,
  sentProgress: Map<string, number>,
  nextId: () => string,
): AsyncGenerator<WatchEvent> {
  const ids = [...heard.progressed].filter((id) => !heard.changed.has(id));
  heard.progressed.clear();
  for (const row of await getNumbered(pool, accountId, ids)) {
    const p = row.progressPercent ?? 0;
    if (row.status !== 'running' || (sentProgress.get(row.id) ?? -1) >= p) continue;
    sentProgress.set(row.id, p);
    yield { type: 'progress', id: nextId(), generation: await viewOf(row, store) } as const;
  }
}

/** The previews heard of generations still running. */
async function* previewEvents(
  { pool, store, accountId, heard }: AccountStream,
  nextId: () => string,
): AsyncGenerator<WatchEvent> {
  const ids = [...heard.previewed];
  heard.previewed.clear();
  for (const row of await getNumbered(pool, accountId, ids)) {
    if (row.status === 'running' && row.previewKeys.thumbnail)
      yield { type: 'preview', id: nextId(), generation: await viewOf(row, store) } as const;
  }
}
