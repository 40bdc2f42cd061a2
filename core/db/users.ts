import type { Queryable } from './pool';
import type { Plan } from '../plans';
import type { Role } from '../roles';

/** Dashboard users, their set-password links and their sessions (migration 007). */

export interface UserRow {
  id: string;
  accountId: string;
  email: string;
  passwordHash: string | null;
  role: Role;
}

export async function insertUser(
  q: Queryable,
  u: { id: string; accountId: string; email: string; role: Role },
): Promise<boolean> {
  const r = await q.query(
    'INSERT INTO users (id, account_id, email, role) VALUES ($1, $2, $3, $4) ON CONFLICT (email) DO NOTHING',
    [u.id, u.accountId, u.email, u.role],
  );
  return (r.rowCount ?? 0) > 0;
}

export async function findUserByEmail(q: Queryable, email: string): Promise<UserRow | undefined> {
  const r = await q.query<{ id: string; account_id: string; email: string; password_hash: string | null; role: Role }>(
    'SELECT id, account_id, email, password_hash, role FROM users WHERE email = $1',
    [email],
  );
  const row = r.rows[0];
  return (
    row && { id: row.id, accountId: row.account_id, email: row.email, passwordHash: row.password_hash, role: row.role }
  );
}

/** A member of an account's team, as the team page lists it. */
export interface MemberRow {
  id: string;
  email: string;
  role: Role;
  /** False until the member has followed the invitation and set a password. */
  active: boolean;
  createdAt: Date;
}

const MEMBER_COLUMNS = 'id, email, role, password_hash IS NOT NULL AS active, created_at AS "createdAt"';

export async function listMembers(q: Queryable, accountId: string): Promise<MemberRow[]> {
  const r = await q.query<MemberRow>(
    `SELECT ${MEMBER_COLUMNS} FROM users WHERE account_id = $1 ORDER BY created_at, id`,
    [accountId],
  );
  return r.rows;
}

/**
 * The account's members, locked until the transaction ends: a change of roles or members takes
 * turns with every other, so that two owners demoting each other cannot leave the account without one.
 */
export async function lockMembers(tx: Queryable, accountId: string): Promise<MemberRow[]> {
  const r = await tx.query<MemberRow>(
    `SELECT ${MEMBER_COLUMNS} FROM users WHERE account_id = $1 ORDER BY id FOR UPDATE`,
    [accountId],
  );
  return r.rows;
}

/** Sets a member's role; their sessions see it from their next request. */
export async function setMemberRole(tx: Queryable, accountId: string, userId: string, role: Role): Promise<void> {
  await tx.query('UPDATE users SET role = $3 WHERE id = $2 AND account_id = $1', [accountId, userId, role]);
}

/** Removes a member: their links and sessions go with them. */
export async function deleteMember(tx: Queryable, accountId: string, userId: string): Promise<void> {
  await tx.query('DELETE FROM users WHERE id = $2 AND account_id = $1', [accountId, userId]);
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
  /** Read with the session on every request: a changed role counts from the member's next request. */
  role: Role;
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
  const r = await q.query<{
    user_id: string;
    email: string;
    account_id: string;
    plan: Plan;
    role: Role;
    expires_at: Date;
  }>(
    `SELECT s.user_id, u.email, u.account_id, a.plan, u.role, s.expires_at
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
      role: row.role,
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
