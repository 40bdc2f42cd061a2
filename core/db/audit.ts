import { newId } from '../ids';
import type { Queryable } from './pool';

/**
 * An account's audit log (migration 202): every change of a role, a member, a key, a budget, a
 * webhook endpoint, a threshold or a customer's limits, written by the transaction that makes the
 * change, so a change is never without its line nor a line without its change.
 */

/** Who made a change: a dashboard user, an API key, or the operator (the admin API and CLI); and from where. */
export interface Actor {
  type: 'user' | 'key' | 'operator';
  /** The user's or key's id; null for the operator. */
  id: string | null;
  /** A user's email as it is when the change is made. */
  email?: string | null | undefined;
  /** The client address the change came from, as the API saw it. */
  ip: string | null;
}

export const AUDIT_ACTIONS = [
  'member.invited',
  'member.role_changed',
  'member.removed',
  'key.created',
  'key.revoked',
  'key.budget_set',
  'key.budget_removed',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.secret_rotated',
  'webhook.callback_secret_rotated',
  'low_balance.set',
  'customer.limits_set',
  'customer.limits_removed',
  'customer_defaults.set',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  accountId: string;
  actor: Actor;
  action: AuditAction;
  /** What was changed (a user, key, endpoint or customer id); null for the account itself. */
  target: string | null;
  /** What it was changed to, as the request said it (never a secret). */
  details: Record<string, unknown>;
}

export interface AuditRow extends AuditEntry {
  id: string;
  createdAt: Date;
}

export async function insertAuditEvent(q: Queryable, e: AuditEntry): Promise<void> {
  await q.query(
    `INSERT INTO audit_events (id, account_id, actor_type, actor_id, actor_email, ip, action, target, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      newId('aud'),
      e.accountId,
      e.actor.type,
      e.actor.id,
      e.actor.email ?? null,
      e.actor.ip,
      e.action,
      e.target,
      JSON.stringify(e.details),
    ],
  );
}

/** A page of an account's audit log, newest first, strictly before entry `before` when given. */
export async function listAuditEvents(
  q: Queryable,
  accountId: string,
  page: { limit: number; before?: string | undefined },
): Promise<AuditRow[]> {
  const r = await q.query<{
    id: string;
    account_id: string;
    actor_type: Actor['type'];
    actor_id: string | null;
    actor_email: string | null;
    ip: string | null;
    action: AuditAction;
    target: string | null;
    details: Record<string, unknown>;
    created_at: Date;
  }>(
    `SELECT id, account_id, actor_type, actor_id, actor_email, ip, action, target, details, created_at
       FROM audit_events WHERE account_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
    [accountId, page.before ?? null, page.limit],
  );
  return r.rows.map((row) => ({
    id: row.id,
    accountId: row.account_id,
    actor: { type: row.actor_type, id: row.actor_id, email: row.actor_email, ip: row.ip },
    action: row.action,
    target: row.target,
    details: row.details,
    createdAt: row.created_at,
  }));
}
