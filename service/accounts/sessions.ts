import { createHmac, timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import { inTransaction } from '../../core/db/pool';
import {
  deleteSession,
  findSession,
  findUserByEmail,
  insertSession,
  setUserPassword,
  spendPasswordLink,
} from '../../core/db/users';
import type { SessionRow } from '../../core/db/users';
import { InvalidRequestError, UnauthorizedError } from '../../core/errors';
import {
  burnPasswordCheck,
  hashPassword,
  hashToken,
  newToken,
  passwordRefusal,
  verifyPassword,
} from '../../core/accounts/passwords';

/** How long a session lasts from its login (absolute; logging out ends it sooner). */
export const SESSION_TTL_MS = 7 * 86_400_000;

export type Session = SessionRow;

/**
 * Dashboard users' side of authentication: set a password with a one-time link, log in, log out,
 * and find the session behind a cookie. Only hashes are stored: scrypt for passwords, SHA-256 for
 * the link and session tokens.
 */
export function createSessionService(deps: { pool: pg.Pool; now?: () => number }) {
  const { pool } = deps;
  const now = deps.now ?? Date.now;

  return {
    /**
     * Spends a link and sets the password; any other link of the user and every session end. A
     * password the rule refuses (core/accounts/passwords.ts) leaves the link unspent.
     */
    async setPassword(token: string, password: string): Promise<{ email: string }> {
      const refused = passwordRefusal(password);
      if (refused) throw new InvalidRequestError(refused, 'password');
      const passwordHash = await hashPassword(password);
      return inTransaction(pool, async (tx) => {
        const use = await spendPasswordLink(tx, hashToken(token));
        if (use.outcome === 'expired')
          throw new InvalidRequestError('This link has expired; ask your operator for a new one.', 'token');
        if (use.outcome === 'spent')
          throw new InvalidRequestError('This link has already been used; ask your operator for a new one.', 'token');
        if (use.outcome !== 'used') throw new InvalidRequestError('This link is not valid.', 'token');
        // The address is known once the link is read; refusing here rolls the spend back.
        const ownAddress = passwordRefusal(password, use.email);
        if (ownAddress) throw new InvalidRequestError(ownAddress, 'password');
        await setUserPassword(tx, use.userId, passwordHash);
        return { email: use.email };
      });
    },

    /** A new session for the right email and password; the same refusal for every wrong pair. */
    async login(
      email: string,
      password: string,
      userAgent: string | null,
    ): Promise<{ token: string; session: Session }> {
      const user = await findUserByEmail(pool, email.trim().toLowerCase());
      const ok = user?.passwordHash
        ? await verifyPassword(password, user.passwordHash)
        : await burnPasswordCheck(password);
      if (!user || !ok) throw new UnauthorizedError('The email or the password is wrong.');
      const token = newToken();
      await insertSession(pool, {
        tokenHash: hashToken(token),
        userId: user.id,
        expiresAt: new Date(now() + SESSION_TTL_MS),
        userAgent: userAgent?.slice(0, 500) ?? null,
      });
      const session = await findSession(pool, hashToken(token));
      if (!session) throw new UnauthorizedError('The email or the password is wrong.');
      return { token, session };
    },

    async logout(token: string): Promise<void> {
      await deleteSession(pool, hashToken(token));
    },

    /** The live session a cookie's token opens, if any. */
    async authenticate(token: string): Promise<Session | undefined> {
      return /^[\w-]{43}$/.test(token) ? findSession(pool, hashToken(token)) : undefined;
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;

/**
 * The CSRF token of a session: an HMAC keyed by the session token, so it needs no storage, differs
 * per session, and a page of another origin (which cannot read the HttpOnly cookie) cannot make it.
 */
export function csrfTokenOf(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('gensvc dashboard csrf').digest('base64url');
}

export function csrfTokenMatches(sessionToken: string, given: string | undefined): boolean {
  if (!given) return false;
  const expected = Buffer.from(csrfTokenOf(sessionToken));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
