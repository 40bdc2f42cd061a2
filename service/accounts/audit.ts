import type pg from 'pg';
import { z } from 'zod';
import { AUDIT_ACTIONS, insertAuditEvent, listAuditEvents } from '../../core/db/audit';
import type { Actor, AuditEntry } from '../../core/db/audit';
import { inTransaction } from '../../core/db/pool';
import type { Queryable } from '../../core/db/pool';
import { decodeCursor, encodeCursor } from '../../core/cursor';
import { AUDIT_ID_PATTERN } from '../../core/ids';

export type { Actor } from '../../core/db/audit';

/** The operator (admin API, CLI), from the request's address. */
export const operator = (ip: string | null): Actor => ({ type: 'operator', id: null, ip });

/**
 * Runs a change and writes its audit line in one transaction: the line says what the change did
 * (`entry` may read the change's result), and neither exists without the other. A change that
 * answers `undefined` changed nothing (not found, nothing to do) and writes no line.
 */
export async function audited<T>(
  pool: pg.Pool,
  change: (tx: Queryable) => Promise<T>,
  entry: (result: NonNullable<T>) => AuditEntry,
): Promise<T> {
  return inTransaction(pool, async (tx) => {
    const result = await change(tx);
    if (result !== undefined && result !== null) await insertAuditEvent(tx, entry(result));
    return result;
  });
}

const auditActor = z.object({
  type: z.enum(['user', 'key', 'operator']).describe('A dashboard user, an API key, or the operator (admin API, CLI)'),
  id: z.string().nullable().describe('The user’s or key’s id; null for the operator'),
  email: z.string().nullable().describe('A user’s email when the change was made'),
  ip: z.string().nullable().describe('The client address the change came from'),
});

export const auditEntryView = z
  .object({
    id: z.string().describe('aud_…; entries sort by time'),
    action: z.enum(AUDIT_ACTIONS),
    actor: auditActor,
    target: z.string().nullable().describe('What was changed: a user, key, webhook endpoint or customer id'),
    details: z.record(z.string(), z.unknown()).describe('What it was changed to (never a secret)'),
    createdAt: z.string(),
  })
  .meta({ id: 'AuditEntry' });

export const auditPage = z
  .object({ data: z.array(auditEntryView), next_cursor: z.string().nullable() })
  .meta({ id: 'AuditLog' });

export const auditQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size, 1 to 200 (default 50)'),
  cursor: z.string().max(400).optional().describe('next_cursor of the previous page'),
});

/** A page of an account's audit log, newest first. */
export async function auditLog(
  pool: pg.Pool,
  accountId: string,
  q: z.infer<typeof auditQuery>,
): Promise<z.infer<typeof auditPage>> {
  const before = q.cursor === undefined ? undefined : decodeCursor(q.cursor, AUDIT_ID_PATTERN);
  const rows = await listAuditEvents(pool, accountId, { limit: q.limit + 1, before });
  const page = rows.slice(0, q.limit);
  return {
    data: page.map((e) => ({
      id: e.id,
      action: e.action,
      actor: { type: e.actor.type, id: e.actor.id, email: e.actor.email ?? null, ip: e.actor.ip },
      target: e.target,
      details: e.details,
      createdAt: e.createdAt.toISOString(),
    })),
    next_cursor: rows.length > q.limit ? encodeCursor(page.at(-1)!.id) : null,
  };
}
