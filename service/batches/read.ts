import type pg from 'pg';
import { batchCounts, batchLinesPage, getBatch, listBatches, NO_BATCH_COUNTS } from '../../core/db/batches';
import type { BatchCounts, BatchRow } from '../../core/db/batches';
import type { GenerationRow } from '../../core/db/generations';
import { NotFoundError } from '../../core/errors';
import { viewOf } from '../../core/generation/view';
import { BATCH_ID_PATTERN } from '../../core/ids';
import { mcToCredits } from '../../core/money';
import { batchFormatOf } from '../../core/vocabulary';
import type { BatchFormat } from '../../core/vocabulary';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';
import type { BatchView, LineGenerationView, LineResult } from './types';

/** A batch as every door may show it. */
export function batchViewOf(b: BatchRow, c: BatchCounts = NO_BATCH_COUNTS): BatchView {
  return {
    id: b.id,
    format: batchFormatOf(b.endpoint),
    endpoint: b.endpoint,
    kind: b.kind,
    inputFileId: b.inputFileId,
    completionWindow: b.completionWindow,
    status: b.status,
    errors: b.errors,
    outputFileId: b.outputFileId,
    errorFileId: b.errorFileId,
    metadata: b.metadata,
    requestCounts: { total: b.total, completed: c.completed, failed: c.failed },
    stopped: { cancelled: c.cancelled, expired: c.expired },
    running: c.running,
    waiting: c.waiting,
    creditsHeld: mcToCredits(b.quoteMc),
    creditsCharged: mcToCredits(c.chargedMc),
    createdAt: b.createdAt,
    inProgressAt: b.inProgressAt,
    expiresAt: b.expiresAt,
    finalizingAt: b.finalizingAt,
    completedAt: b.completedAt,
    failedAt: b.failedAt,
    expiredAt: b.expiredAt,
    cancellingAt: b.cancellingAt,
    cancelledAt: b.cancelledAt,
  };
}

/** How many lines a page of an output or error file reads at once. */
const LINES_PER_PAGE = 500;

/** Reading an account's batches, and the results of their lines for their output and error files. */
export function createBatchReads({ pool, store }: { pool: pg.Pool; store: OutputStore }) {
  /** The account's batch; with `format`, only one of that format (each vendor's door shows its own). */
  const own = async (principal: Principal, id: string, format?: BatchFormat): Promise<BatchRow> => {
    const b = BATCH_ID_PATTERN.test(id) ? await getBatch(pool, principal.accountId, id) : undefined;
    if (!b || (format !== undefined && batchFormatOf(b.endpoint) !== format))
      throw new NotFoundError(`No batch found with id '${id}'.`, { param: 'id' });
    return b;
  };

  const lineGenerationOf = async (g: GenerationRow): Promise<LineGenerationView> => ({
    ...(await viewOf(g, store)),
    toolCalls: g.internal.outputToolCalls ?? [],
    record: g.internal.response ?? { store: false, background: false },
    sampling: g.internal.sampling ?? {},
    tools: g.internal.tools,
    responseFormat: g.internal.responseFormat,
  });

  return {
    own,

    get: async (principal: Principal, id: string, format?: BatchFormat): Promise<BatchView> => {
      const b = await own(principal, id, format);
      return batchViewOf(b, (await batchCounts(pool, [b.id])).get(b.id));
    },

    /**
     * The account's batches, newest first: those after (older than) `after`, or the newer ones
     * just before `before`; `format` keeps one format's.
     */
    list: async (
      principal: Principal,
      q: {
        limit: number;
        after?: string | undefined;
        before?: string | undefined;
        format?: BatchFormat | undefined;
      },
    ): Promise<{ data: BatchView[]; hasMore: boolean }> => {
      const rows = await listBatches(pool, principal.accountId, { ...q, limit: q.limit + 1 });
      // Newest first either way: going back to newer ones, the one past the page is the newest.
      const page = q.before === undefined ? rows.slice(0, q.limit) : rows.slice(Math.max(0, rows.length - q.limit));
      const counts = await batchCounts(
        pool,
        page.filter((b) => b.total > 0).map((b) => b.id),
      );
      return { data: page.map((b) => batchViewOf(b, counts.get(b.id))), hasMore: rows.length > q.limit };
    },

    /**
     * The lines of a finished batch in file order, page by page: those that `completed` (its output
     * file), those that `failed` (its error file), or `all` (a Message Batch's results), each with
     * the records of its generations.
     */
    lines: async function* (
      this: void,
      batch: BatchRow,
      which: 'completed' | 'failed' | 'all',
    ): AsyncGenerator<LineResult[]> {
      for (let after = 0; ;) {
        const page = await batchLinesPage(pool, batch.id, { after, limit: LINES_PER_PAGE });
        if (page.length === 0) return;
        after = page.at(-1)!.line;
        const results: LineResult[] = [];
        for (const l of page) {
          const state = l.generations.some((g) => g.status === 'succeeded') ? 'completed' : 'failed';
          const ended =
            l.outcome !== null ||
            (l.generations.length > 0 && l.generations.every((g) => g.status === 'succeeded' || g.status === 'failed'));
          if (!ended || (which !== 'all' && state !== which)) continue;
          // Every generation cancelled, or released because another choice of its line was.
          const stoppedInFlight =
            batch.stopping !== null &&
            l.generations.every(
              (g) => g.status === 'failed' && (g.error?.code === 'cancelled' || g.error?.code === 'choice_failed'),
            ) &&
            l.generations.some((g) => g.error?.code === 'cancelled');
          results.push({
            line: l.line,
            customId: l.customId,
            state,
            stopped: l.outcome ?? (stoppedInFlight ? batch.stopping : null),
            answer: l.answer,
            generations: await Promise.all(l.generations.map(lineGenerationOf)),
          });
        }
        if (results.length > 0) yield results;
      }
    },
  };
}
