import type { Queryable } from './pool';

/** Self-service sign-up requests (migration 019). */

export async function insertSignup(
  q: Queryable,
  s: { tokenHash: Buffer; token: string; email: string; passwordHash: string; expiresAt: Date },
): Promise<void> {
  await q.query(
    'INSERT INTO signups (token_hash, email, password_hash, mail_token, expires_at) VALUES ($1, $2, $3, $4, $5)',
    [s.tokenHash, s.email, s.passwordHash, s.token, s.expiresAt],
  );
}

/**
 * Spends a sign-up link once: the email and password it was made with, or why not. Locked by the
 * UPDATE, so two uses at once cannot both succeed. Run it in the transaction that creates the account.
 */
export async function spendSignup(
  tx: Queryable,
  tokenHash: Buffer,
): Promise<{ email: string; passwordHash: string } | 'expired' | 'spent' | 'unknown'> {
  const r = await tx.query<{ email: string; password_hash: string }>(
    'UPDATE signups SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING email, password_hash',
    [tokenHash],
  );
  const row = r.rows[0];
  if (row) return { email: row.email, passwordHash: row.password_hash };
  const found = await tx.query<{ used: boolean }>(
    'SELECT used_at IS NOT NULL AS used FROM signups WHERE token_hash = $1',
    [tokenHash],
  );
  const f = found.rows[0];
  return f ? (f.used ? 'spent' : 'expired') : 'unknown';
}

export interface UnmailedSignup {
  tokenHash: Buffer;
  email: string;
  token: string;
  /** The address already has a dashboard user: it gets a note, not a link. */
  registered: boolean;
}

/** Locks up to `limit` sign-ups whose email is not sent yet (other relays skip them). */
export async function claimUnmailedSignups(tx: Queryable, limit: number): Promise<UnmailedSignup[]> {
  const r = await tx.query<{ token_hash: Buffer; email: string; mail_token: string; registered: boolean }>(
    `SELECT s.token_hash, s.email, s.mail_token, EXISTS (SELECT 1 FROM users u WHERE u.email = s.email) AS registered
       FROM signups s WHERE s.mailed_at IS NULL AND s.mail_token IS NOT NULL AND s.expires_at > now()
      ORDER BY s.created_at LIMIT $1 FOR UPDATE OF s SKIP LOCKED`,
    [limit],
  );
  return r.rows.map((x) => ({
    tokenHash: x.token_hash,
    email: x.email,
    token: x.mail_token,
    registered: x.registered,
  }));
}

export async function markSignupMailed(tx: Queryable, tokenHash: Buffer): Promise<void> {
  await tx.query('UPDATE signups SET mailed_at = now(), mail_token = NULL WHERE token_hash = $1', [tokenHash]);
}
