import type { InternalParams, PublicParams } from '../generation/params';
import type { Queryable } from './pool';
import type { Millicredits } from '../money';
import type { GenerationFailure, GenerationKind, GenerationStatus, TokenUsage, VideoPreviewName } from '../vocabulary';
import { tokenUsageOfColumn } from './token-usage';
import { withEstimates } from './estimates';
import { PREVIEW_KEYS_COLUMN } from './previews';
import { SERVED_BY_COLUMN } from './upstreams';

export interface GenerationRow {
  id: string;
  accountId: string;
  apiKeyId: string | null;
  /** The platform's own end user it was made for (its id as the platform sent it); null when none was named. */
  customerId: string | null;
  kind: GenerationKind;
  model: string;
  status: GenerationStatus;
  /** What the client asked for and may see. */
  params: PublicParams;
  /** What the service keeps for itself (core/generation/params.ts): no view reads it. */
  internal: InternalParams;
  prompt: string;
  quoteMc: Millicredits;
  chargedMc: Millicredits;
  freeChat: boolean;
  outputKey: string | null;
  outputText: string | null;
  /** Where a video's previews are stored (core/db/previews.ts); empty for anything else. */
  previewKeys: Partial<Record<VideoPreviewName, string>>;
  error: GenerationFailure | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /**
   * What the provider step last recorded (core/ledger/progress.ts), 0–99; null before its first
   * report, and for a succeeded generation (whose progress is 100 without a read).
   */
  progressPercent: number | null;
  /** A queued video's place in its account's queue for a slot (1 = next); null otherwise. */
  queuePosition: number | null;
  /** The median of measured durations of this model and size, in seconds; null until enough samples, or once finished. */
  measuredSeconds: number | null;
  /** The configured upstream that served it (core/db/upstreams.ts); null for the simulator or before. */
  servedBy: string | null;
  /** The batch whose line it runs (and the line), or null. */
  batchId: string | null;
  batchLine: number | null;
  /** A settled chat's tokens in detail (core/db/token-usage.ts); null otherwise. */
  tokenUsage: TokenUsage | null;
}

export const GENERATION_COLUMNS = `id, account_id, api_key_id, customer_id, kind, model, status, params, internal, prompt, quote_mc, charged_mc, free_chat,
  output_key, output_text, error, created_at, started_at, finished_at, batch_id, batch_line, token_usage, ${PREVIEW_KEYS_COLUMN}, ${SERVED_BY_COLUMN}`;

export interface GenerationDbRow {
  id: string;
  account_id: string;
  api_key_id: string | null;
  customer_id: string | null;
  kind: GenerationKind;
  model: string;
  status: GenerationStatus;
  params: PublicParams;
  internal: InternalParams;
  prompt: string;
  quote_mc: number;
  charged_mc: number;
  free_chat: boolean;
  output_key: string | null;
  output_text: string | null;
  preview_keys: Partial<Record<VideoPreviewName, string>> | null;
  error: GenerationFailure | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  batch_id: string | null;
  batch_line: number | null;
  token_usage: unknown;
  served_by: string | null;
}

export function fromRow(r: GenerationDbRow): GenerationRow {
  return {
    id: r.id,
    accountId: r.account_id,
    apiKeyId: r.api_key_id,
    customerId: r.customer_id,
    kind: r.kind,
    model: r.model,
    status: r.status,
    params: r.params,
    internal: r.internal,
    prompt: r.prompt,
    quoteMc: r.quote_mc,
    chargedMc: r.charged_mc,
    freeChat: r.free_chat,
    outputKey: r.output_key,
    outputText: r.output_text,
    previewKeys: r.preview_keys ?? {},
    error: r.error,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    progressPercent: null,
    queuePosition: null,
    measuredSeconds: null,
    servedBy: r.served_by,
    batchId: r.batch_id,
    batchLine: r.batch_line,
    tokenUsage: tokenUsageOfColumn(r.token_usage),
  };
}

/** An account only ever sees its own generations: another account's id reads as not found. */
export async function getGeneration(q: Queryable, accountId: string, id: string): Promise<GenerationRow | undefined> {
  // Named: prepared once per connection, as the most frequent read (every answer ends with it).
  const r = await q.query<GenerationDbRow>({
    name: 'get-generation',
    text: `SELECT ${GENERATION_COLUMNS} FROM generations WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`,
    values: [id, accountId],
  });
  return r.rows[0] && (await withEstimates(q, [fromRow(r.rows[0])]))[0];
}

export interface ListFilter {
  limit: number;
  /**
   * The previous page's last id (a keyset cursor): the page goes on past it in `order`, to older
   * generations when newest first, to newer ones when oldest first.
   */
  before?: string | undefined;
  kind?: GenerationKind | undefined;
  status?: GenerationStatus | undefined;
  /** Only the generations made for this customer of the account. */
  customerId?: string | undefined;
  /** Newest first (`desc`, the default) or oldest first (`asc`); ids are time-ordered. */
  order?: 'asc' | 'desc' | undefined;
}

/**
 * An account's generations, newest first. Ids are time-ordered, so paging by id is stable: a
 * generation inserted while a client pages through is newer than every cursor it holds and is
 * never shown twice or skipped among the older ones.
 */
export async function listGenerations(q: Queryable, accountId: string, f: ListFilter): Promise<GenerationRow[]> {
  // Two texts rather than a CASE in ORDER BY, so that each walks the (account_id, id) index.
  const asc = f.order === 'asc';
  const r = await q.query<GenerationDbRow>(
    `SELECT ${GENERATION_COLUMNS} FROM generations
      WHERE account_id = $1 AND deleted_at IS NULL
        AND ($2::text IS NULL OR id ${asc ? '>' : '<'} $2)
        AND ($3::text IS NULL OR kind = $3)
        AND ($4::text IS NULL OR status = $4)
        AND ($6::text IS NULL OR customer_id = $6)
      ORDER BY id ${asc ? 'ASC' : 'DESC'}
      LIMIT $5`,
    [accountId, f.before ?? null, f.kind ?? null, f.status ?? null, f.limit, f.customerId ?? null],
  );
  return withEstimates(q, r.rows.map(fromRow));
}

/**
 * Marks a finished generation of the account deleted, so that no read shows it again; the row
 * stays for the ledger entries that name it. False when there is no such generation to delete
 * (not the account's, already deleted, or not finished).
 */
export async function markDeleted(q: Queryable, accountId: string, id: string): Promise<boolean> {
  const r = await q.query(
    `UPDATE generations SET deleted_at = now(), output_key = NULL
      WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL AND status IN ('succeeded', 'failed')`,
    [id, accountId],
  );
  return r.rowCount === 1;
}

/** A generation with the number of its latest status change (0 for one not changed since numbers came). */
export type NumberedGeneration = GenerationRow & { changeSeq: number };

const numbered = (row: GenerationDbRow & { change_seq: string | null }): NumberedGeneration => ({
  ...fromRow(row),
  changeSeq: Number(row.change_seq ?? 0),
});

/** The number of the account's latest change (core/db/notify.ts, takeChange); 0 before its first. */
export async function latestChange(q: Queryable, accountId: string): Promise<number | undefined> {
  const r = await q.query<{ change_seq: string }>('SELECT change_seq FROM accounts WHERE id = $1', [accountId]);
  const row = r.rows[0];
  return row && Number(row.change_seq);
}

/**
 * The account's generations whose latest status change is numbered after `afterSeq`, in the order
 * of their numbers, at most `limit`: exactly what changed after it, since numbers follow commits.
 */
export async function listChangedAfter(
  q: Queryable,
  accountId: string,
  afterSeq: number,
  limit = 200,
): Promise<NumberedGeneration[]> {
  const r = await q.query<GenerationDbRow & { change_seq: string | null }>(
    `SELECT ${GENERATION_COLUMNS}, change_seq FROM generations
      WHERE account_id = $1 AND change_seq > $2 ORDER BY change_seq LIMIT $3`,
    [accountId, afterSeq, limit],
  );
  return withEstimates(q, r.rows.map(numbered));
}

/** The account's generations created or changed after `since` (from `fromId` on: a bounded range of its index). */
export async function listChangedSince(
  q: Queryable,
  accountId: string,
  f: { fromId: string; since: Date },
): Promise<NumberedGeneration[]> {
  const r = await q.query<GenerationDbRow & { change_seq: string | null }>(
    `SELECT ${GENERATION_COLUMNS}, change_seq FROM generations
      WHERE account_id = $1 AND id >= $2 AND updated_at > $3
      ORDER BY change_seq NULLS FIRST LIMIT 200`,
    [accountId, f.fromId, f.since],
  );
  return withEstimates(q, r.rows.map(numbered));
}

/**
 * The generations admitted together by one request (group B's `n` images), in request order;
 * empty when `firstId` names none. Each carries `internal.siblings`: the first one's id and its place.
 */
export async function listSiblings(q: Queryable, accountId: string, firstId: string): Promise<GenerationRow[]> {
  const r = await q.query<GenerationDbRow>(
    `SELECT ${GENERATION_COLUMNS} FROM generations
      WHERE account_id = $1 AND internal->'siblings'->>'firstId' = $2
      ORDER BY (internal->'siblings'->>'index')::int`,
    [accountId, firstId],
  );
  return withEstimates(q, r.rows.map(fromRow));
}

/** Some of an account's generations with the number of each one's latest change, in the order of those numbers. */
export async function getNumbered(
  q: Queryable,
  accountId: string,
  ids: readonly string[],
): Promise<NumberedGeneration[]> {
  if (ids.length === 0) return [];
  const r = await q.query<GenerationDbRow & { change_seq: string | null }>(
    `SELECT ${GENERATION_COLUMNS}, change_seq FROM generations
      WHERE account_id = $1 AND id = ANY($2::text[]) ORDER BY change_seq NULLS FIRST, id`,
    [accountId, ids],
  );
  return withEstimates(q, r.rows.map(numbered));
}

/** Adds to a generation's internal parameters (where a stored input is, once it is stored). */
export async function keepInternal(q: Queryable, id: string, internal: InternalParams): Promise<void> {
  await q.query('UPDATE generations SET internal = internal || $2::jsonb WHERE id = $1', [
    id,
    JSON.stringify(internal),
  ]);
}
