import type { AlertRow } from './alerts';
import type { Queryable } from './pool';

/** The email side of account alerts (migration 019): one row per alert and recipient. */

/** Alerts older than this when the relay first sees them (SMTP was off, or the relay down) are not mailed. */
export const MAIL_ALERTS_WITHIN_MS = 86_400_000;

/**
 * Turns alerts not yet expanded into one pending email per user of the account who has set a
 * password, and marks them expanded; alerts older than `withinMs` are only marked. Other relays
 * skip the alerts this one has locked (data-modifying CTEs run whether read or not). The number of alerts expanded.
 */
export async function expandAlertEmails(
  tx: Queryable,
  limit: number,
  withinMs = MAIL_ALERTS_WITHIN_MS,
): Promise<number> {
  const r = await tx.query<{ n: number }>(
    `WITH due AS (
       SELECT id, account_id, created_at FROM account_alerts WHERE mailed_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
     ), marked AS (
       UPDATE account_alerts a SET mailed_at = now() FROM due WHERE a.id = due.id
     ), ins AS (
       INSERT INTO alert_emails (alert_id, recipient)
       SELECT due.id, u.email FROM due JOIN users u ON u.account_id = due.account_id AND u.password_hash IS NOT NULL
        WHERE due.created_at > now() - make_interval(secs => $2::double precision / 1000)
       ON CONFLICT DO NOTHING
     )
     SELECT count(*)::int AS n FROM due`,
    [limit, withinMs],
  );
  return r.rows[0]?.n ?? 0;
}

export interface DueEmail {
  recipient: string;
  attempts: number;
  alert: AlertRow;
}

/** Locks up to `limit` emails due now (other relays skip them until this transaction ends), oldest first. */
export async function claimDueEmails(tx: Queryable, limit: number): Promise<DueEmail[]> {
  const r = await tx.query<AlertRow & { recipient: string; attempts: number }>(
    `SELECT m.recipient, m.attempts, a.id, a.account_id AS "accountId", a.event, a.key_id AS "keyId", a.customer_id AS "customerId", a.amount_mc AS "amountMc",
            a.limit_mc AS "limitMc", a.period, a.period_start AS "periodStart", a.created_at AS "createdAt"
       FROM alert_emails m JOIN account_alerts a ON a.id = m.alert_id
      WHERE m.status = 'pending' AND m.next_attempt_at <= now()
      ORDER BY m.next_attempt_at LIMIT $1 FOR UPDATE OF m SKIP LOCKED`,
    [limit],
  );
  return r.rows.map(({ recipient, attempts, ...alert }) => ({ recipient, attempts, alert }));
}

/** Records one attempt: sent, or failed with when to try again (null: never, the email ends failed). */
export async function recordEmailAttempt(
  tx: Queryable,
  alertId: string,
  recipient: string,
  outcome: { sent: true } | { sent: false; error: string; retryInMs: number | null },
): Promise<void> {
  if (outcome.sent) {
    await tx.query(
      `UPDATE alert_emails SET status = 'sent', attempts = attempts + 1, sent_at = now(), last_error = NULL WHERE alert_id = $1 AND recipient = $2`,
      [alertId, recipient],
    );
    return;
  }
  await tx.query(
    `UPDATE alert_emails SET attempts = attempts + 1, last_error = $3,
            status = CASE WHEN $4::double precision IS NULL THEN 'failed' ELSE 'pending' END,
            next_attempt_at = now() + make_interval(secs => COALESCE($4::double precision, 0) / 1000)
      WHERE alert_id = $1 AND recipient = $2`,
    [alertId, recipient, outcome.error.slice(0, 1000), outcome.retryInMs],
  );
}
