import { GENERATION_STATUSES } from '../vocabulary';
import type { GenerationStatus } from '../vocabulary';

/**
 * Every status change (and every credit) is announced on this channel by the transaction that
 * made it, delivered when it commits: `<accountId>:<generationId>:<status>`, or
 * `<accountId>::credited`. The provider step announces a running generation's progress on it
 * too, `<accountId>:<generationId>:progress:<percent>` (core/ledger/progress.ts), and that a running
 * video's first frame is stored, `<accountId>:<generationId>:preview` (core/db/previews.ts), which a listener
 * that does not know the kind ignores. Live views (service/generation/live-events.ts) listen, one connection
 * per API process, so a change made by any process reaches every stream.
 */
export const STATUS_CHANNEL = 'gensvc_generation_status';

export type StatusNotice =
  | { accountId: string; generationId: string; status: GenerationStatus }
  | { accountId: string; credited: true }
  /** A running generation's recorded progress rose (not a status change; written outside the ledger). */
  | { accountId: string; generationId: string; progress: number }
  /** A running video's first frame is stored: its record now has a thumbnail (core/db/previews.ts). */
  | { accountId: string; generationId: string; preview: true }
  /** A batch changed: its status, or one of its lines ended (`<accountId>:<batchId>:batch`). */
  | { accountId: string; batchId: string; batch: true };

/**
 * A common table expression named `change` that takes the account's next change number (a
 * generation's status statement sets `change_seq = (SELECT n FROM change)`). It updates the account
 * row, so it waits for and holds that row's lock until commit: an account's numbers are taken in
 * the order their transactions commit, and a reader that sees number N sees every number below
 * it. The ledger's money moves lock the same row, in the same order (account, then generation).
 */
export const takeChange = (accountExpr: string): string =>
  `change AS (UPDATE accounts SET change_seq = change_seq + 1 WHERE id = ${accountExpr} RETURNING change_seq AS n)`;

/** The SQL expression that announces a change, for the RETURNING or SELECT list of the statement that makes it. */
export const notifyExpr = (
  accountExpr: string,
  generationExpr: string,
  status: GenerationStatus | 'credited',
): string => `pg_notify('${STATUS_CHANNEL}', ${accountExpr} || ':' || ${generationExpr} || ':${status}')`;

export function parseNotice(payload: string): StatusNotice | undefined {
  const [accountId, generationId, status, value] = payload.split(':');
  if (!accountId || status === undefined) return undefined;
  if (status === 'credited') return { accountId, credited: true };
  if (status === 'preview') return generationId ? { accountId, generationId, preview: true } : undefined;
  if (status === 'batch') return generationId ? { accountId, batchId: generationId, batch: true } : undefined;
  if (status === 'progress') {
    const progress = Number(value);
    return generationId && value !== undefined && /^\d{1,3}$/.test(value) && progress <= 100
      ? { accountId, generationId, progress }
      : undefined;
  }
  if (!generationId || !isStatus(status)) return undefined;
  return { accountId, generationId, status };
}

const isStatus = (s: string): s is GenerationStatus => (GENERATION_STATUSES as readonly string[]).includes(s);
