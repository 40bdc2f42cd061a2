import type { Queryable } from './pool';

/**
 * The account's callback secret: what signs the deliveries to callback URLs named on its jobs
 * (one secret for every job, since a job's URL is not registered ahead). Sealed like endpoint
 * secrets, with `callbackSecretOwner(accountId)` as the associated data.
 */

export interface CallbackSecretRow {
  accountId: string;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The associated data a callback secret is sealed with: it opens for its own account only. */
export const callbackSecretOwner = (accountId: string): string => `callbacks:${accountId}`;

const COLUMNS = `account_id AS "accountId", secret_sealed AS "secretSealed", previous_secret_sealed AS "previousSecretSealed",
  previous_secret_expires_at AS "previousSecretExpiresAt", created_at AS "createdAt", updated_at AS "updatedAt"`;

export async function getCallbackSecret(q: Queryable, accountId: string): Promise<CallbackSecretRow | undefined> {
  const r = await q.query<CallbackSecretRow>(`SELECT ${COLUMNS} FROM callback_secrets WHERE account_id = $1`, [
    accountId,
  ]);
  return r.rows[0];
}

/**
 * Sets the account's callback secret: the first one, or a rotation whose replaced secret keeps
 * signing until `previousExpiresAt` (an older previous one is dropped).
 */
export async function putCallbackSecret(
  q: Queryable,
  accountId: string,
  secretSealed: string,
  previousExpiresAt: Date,
): Promise<CallbackSecretRow> {
  const r = await q.query<CallbackSecretRow>(
    `INSERT INTO callback_secrets (account_id, secret_sealed) VALUES ($1, $2)
     ON CONFLICT (account_id) DO UPDATE SET previous_secret_sealed = callback_secrets.secret_sealed,
       previous_secret_expires_at = $3, secret_sealed = EXCLUDED.secret_sealed, updated_at = now()
     RETURNING ${COLUMNS}`,
    [accountId, secretSealed, previousExpiresAt],
  );
  return r.rows[0]!;
}
