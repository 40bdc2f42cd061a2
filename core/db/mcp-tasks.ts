import type { Queryable } from './pool';
import type { GenerationFailure, GenerationStatus } from '../vocabulary';

/** A status the task itself decided; otherwise its status follows its generation's. */
export type McpTaskOutcome = 'completed' | 'failed' | 'cancelled';

export interface McpTaskRow {
  id: string;
  accountId: string;
  generationId: string | null;
  tool: string;
  progressToken: string | number | null;
  ttlMs: number;
  pollIntervalMs: number;
  status: McpTaskOutcome | null;
  statusMessage: string | null;
  /** A tool result stored with the task (a call refused before any generation existed). */
  result: Record<string, unknown> | null;
  createdAt: Date;
  updatedAt: Date;
  /** The generation the task follows, as it is now. */
  generation: { status: GenerationStatus; error: GenerationFailure | null; updatedAt: Date } | null;
}

interface Row {
  id: string;
  account_id: string;
  generation_id: string | null;
  tool: string;
  progress_token: string | number | null;
  ttl_ms: number;
  poll_interval_ms: number;
  status: McpTaskOutcome | null;
  status_message: string | null;
  result: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  generation_status: GenerationStatus | null;
  generation_error: GenerationFailure | null;
  generation_updated_at: Date | null;
}

const SELECT = `SELECT t.id, t.account_id, t.generation_id, t.tool, t.progress_token, t.ttl_ms, t.poll_interval_ms,
         t.status, t.status_message, t.result, t.created_at, t.updated_at,
         g.status AS generation_status, g.error AS generation_error, g.updated_at AS generation_updated_at
    FROM mcp_tasks t LEFT JOIN generations g ON g.id = t.generation_id`;

function fromRow(r: Row): McpTaskRow {
  return {
    id: r.id,
    accountId: r.account_id,
    generationId: r.generation_id,
    tool: r.tool,
    progressToken: r.progress_token,
    ttlMs: r.ttl_ms,
    pollIntervalMs: r.poll_interval_ms,
    status: r.status,
    statusMessage: r.status_message,
    result: r.result,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    generation:
      r.generation_status === null || r.generation_updated_at === null
        ? null
        : { status: r.generation_status, error: r.generation_error, updatedAt: r.generation_updated_at },
  };
}

export type NewMcpTask = Pick<
  McpTaskRow,
  'id' | 'accountId' | 'generationId' | 'tool' | 'progressToken' | 'ttlMs' | 'pollIntervalMs'
> & {
  /** Given with `result` for a task that is over as soon as it is made. */
  status?: McpTaskOutcome | undefined;
  statusMessage?: string | undefined;
  result?: Record<string, unknown> | undefined;
};

/** Records a task; the account's expired tasks go in the same breath, so the table stays small. */
export async function insertMcpTask(q: Queryable, t: NewMcpTask): Promise<McpTaskRow> {
  await q.query('DELETE FROM mcp_tasks WHERE account_id = $1 AND expires_at <= now()', [t.accountId]);
  await q.query(
    `INSERT INTO mcp_tasks (id, account_id, generation_id, tool, progress_token, ttl_ms, poll_interval_ms, status, status_message, result, expires_at)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6::bigint, $7::int, $8, $9, $10::jsonb, now() + $6::bigint * interval '1 millisecond')`,
    [
      t.id,
      t.accountId,
      t.generationId,
      t.tool,
      t.progressToken === null ? null : JSON.stringify(t.progressToken),
      t.ttlMs,
      t.pollIntervalMs,
      t.status ?? null,
      t.statusMessage ?? null,
      t.result === undefined ? null : JSON.stringify(t.result),
    ],
  );
  const row = await getMcpTask(q, t.accountId, t.id);
  if (!row) throw new Error(`task ${t.id} vanished right after it was made`);
  return row;
}

/** An account's live task; another account's, or an expired one, reads as not found. */
export async function getMcpTask(q: Queryable, accountId: string, id: string): Promise<McpTaskRow | undefined> {
  const r = await q.query<Row>(`${SELECT} WHERE t.id = $1 AND t.account_id = $2 AND t.expires_at > now()`, [
    id,
    accountId,
  ]);
  return r.rows[0] && fromRow(r.rows[0]);
}

/** An account's live tasks, newest first, older than `before` (the previous page's last id). */
export async function listMcpTasks(
  q: Queryable,
  accountId: string,
  f: { limit: number; before?: string | undefined },
): Promise<McpTaskRow[]> {
  const r = await q.query<Row>(
    `${SELECT} WHERE t.account_id = $1 AND t.expires_at > now() AND ($2::text IS NULL OR t.id < $2)
      ORDER BY t.id DESC LIMIT $3`,
    [accountId, f.before ?? null, f.limit],
  );
  return r.rows.map(fromRow);
}

/**
 * Ends a task with the given status (and result, if any). A task that already has its own
 * outcome keeps it: a cancelled task stays cancelled. False when nothing changed.
 */
export async function settleMcpTask(
  q: Queryable,
  accountId: string,
  id: string,
  s: { status: McpTaskOutcome; statusMessage?: string | undefined; result?: Record<string, unknown> | undefined },
): Promise<boolean> {
  const r = await q.query(
    `UPDATE mcp_tasks SET status = $3, status_message = $4, result = COALESCE($5::jsonb, result), updated_at = now()
      WHERE id = $1 AND account_id = $2 AND status IS NULL AND expires_at > now()`,
    [id, accountId, s.status, s.statusMessage ?? null, s.result === undefined ? null : JSON.stringify(s.result)],
  );
  return (r.rowCount ?? 0) > 0;
}
