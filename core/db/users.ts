import type { Queryable } from './pool';
import type { Plan } from '../plans';

/** Dashboard users, their set-password links and their sessions (migration 007). */

export interface UserRow {
  id: string;
  accountId: string;
  email: string;
  passwordHash: string | null;
}

export async function insertUser(q: Queryable, u: { id: string; accountId: string; email: string }): Promise<boolean> {
  const r = await q.query(
    'INSERT INTO users (id, account_id, email) VALUES ($1, $2, $3) ON CONFLICT (email) DO NOTHING',
    [u.id, u.accountId, u.email],
  );
  return (r.rowCount ?? 0) > 0;
}

export async function findUserByEmail(q: Queryable, email: string): Promise<UserRow | undefined> {
  const r = await q.query<{ id: string; account_id: string; email: string; password_hash: string | null }>(
    'SELECT id, account_id, email, password_hash FROM users WHERE email = $1',
    [email],
  );
  const row = r.rows[0];
  return row && { id: row.id, accountId: row.account_id, email: row.email, passwordHash: row.password_hash };
}

export async function insertPasswordLink(
  q: Queryable,
  l: { tokenHash: Buffer; userId: string; expiresAt: Date },
): Promise<void> {
  await q.query('INSERT INTO password_links (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [
    l.tokenHash,
    l.userId,
    l.expiresAt,
  ]);
}

export type LinkUse = { outcome: 'used'; userId: string; email: string } | { outcome: 'expired' | 'spent' | 'unknown' };

/**
 * Spends a link: marks it used in the same statement that checks it is unused and unexpired, so
 * two concurrent uses cannot both succeed. Run it in the transaction that sets the password.
 */
export async function spendPasswordLink(tx: Queryable, tokenHash: Buffer): Promise<LinkUse> {
  const spent = await tx.query<{ user_id: string; email: string }>(
    `UPDATE password_links l SET used_at = now() FROM users u
      WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now() AND u.id = l.user_id
      RETURNING l.user_id, u.email`,
    [tokenHash],
  );
  const row = spent.rows[0];
  if (row) return { outcome: 'used', userId: row.user_id, email: row.email };
  const known = await tx.query<{ used_at: Date | null }>('SELECT used_at FROM password_links WHERE token_hash = $1', [
    tokenHash,
  ]);
  const link = known.rows[0];
  if (!link) return { outcome: 'unknown' };
  return { outcome: link.used_at ? 'spent' : 'expired' };
}

/** Sets the password; every other outstanding link of the user and every session end with it. */
export async function setUserPassword(tx: Queryable, userId: string, passwordHash: string): Promise<void> {
  await tx.query('UPDATE users SET password_hash = $2, password_set_at = now() WHERE id = $1', [userId, passwordHash]);
  await tx.query('UPDATE password_links SET used_at = now() WHERE user_id = $1 AND used_at IS NULL', [userId]);
  await tx.query('DELETE FROM sessions WHERE user_id = $1', [userId]);
}

export async function insertSession(
  q: Queryable,
  s: { tokenHash: Buffer; userId: string; expiresAt: Date; userAgent: string | null },
): Promise<void> {
  await q.query('INSERT INTO sessions (token_hash, user_id, expires_at, user_agent) VALUES ($1, $2, $3, $4)', [
    s.tokenHash,
    s.userId,
    s.expiresAt,
    s.userAgent,
  ]);
}

export interface SessionRow {
  userId: string;
  email: string;
  accountId: string;
  plan: Plan;
  expiresAt: Date;
}

/** Of these session token hashes, those of sessions still live (hex): what an open stream checks again while it runs. */
export async function liveSessions(q: Queryable, tokenHashes: readonly Buffer[]): Promise<Set<string>> {
  if (tokenHashes.length === 0) return new Set();
  const r = await q.query<{ token_hash: Buffer }>(
    `SELECT s.token_hash FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.token_hash = ANY($1::bytea[]) AND s.expires_at > now()`,
    [tokenHashes],
  );
  return new Set(r.rows.map((row) => row.token_hash.toString('hex')));
}

/** The live session with this token hash; an expired or ended one is not found. */
export async function findSession(q: Queryable, tokenHash: Buffer): Promise<SessionRow | undefined> {
  const r = await q.query<{ user_id: string; email: string; account_id: string; plan: Plan; expires_at: Date }>(
    `SELECT s.user_id, u.email, u.account_id, a.plan, s.expires_at
       FROM sessions s JOIN users u ON u.id = s.user_id JOIN accounts a ON a.id = u.account_id
      WHERE s.token_hash = $1 AND s.expires_at > now()`,
    [tokenHash],
  );
  const row = r.rows[0];
  return (
    row && {
      userId: row.user_id,
      email: row.email,
      accountId: row.account_id,
      plan: row.plan,
      expiresAt: row.expires_at,
    }
  );
}

/** Ends a session; expired sessions of the same user are swept along. */
export async function deleteSession(q: Queryable, tokenHash: Buffer): Promise<void> {
  await q.query(
    `DELETE FROM sessions WHERE token_hash = $1
        OR (expires_at <= now() AND user_id = (SELECT user_id FROM sessions WHERE token_hash = $1))`,
    [tokenHash],
  );
}
