import type pg from 'pg';
import { inTransaction } from '../../core/db/pool';
import { insertSignup, spendSignup } from '../../core/db/signups';
import { insertUser, setUserPassword } from '../../core/db/users';
import { InvalidRequestError } from '../../core/errors';
import { newId } from '../../core/ids';
import { openAccount } from '../../core/ledger';
import { creditsToMc } from '../../core/money';
import { hashPassword, hashToken, newToken, passwordRefusal } from '../../core/accounts/passwords';

/** How long a sign-up's verification link works. */
export const SIGNUP_LINK_TTL_MS = 24 * 3_600_000;

export interface SignupOptions {
  /** The credits a new account starts with. */
  startingCredits: number;
  /** Its free chat replies. */
  chatCap: number;
}

/**
 * Self-service sign-up (SIGNUP=open): a request records the address and the password's hash with a
 * one-time link, which the mail relay sends; following it creates a `free` account and its user.
 * The request does the same work and answers the same whether or not the address has an account
 * (the relay then sends a note instead of a link), so the answer never tells who is registered.
 */
export function createSignupService(deps: { pool: pg.Pool; options: SignupOptions; now?: () => number }) {
  const { pool, options } = deps;
  const now = deps.now ?? Date.now;

  return {
    async request(email: string, password: string): Promise<void> {
      const refused = passwordRefusal(password, email);
      if (refused) throw new InvalidRequestError(refused, 'password');
      const token = newToken();
      await insertSignup(pool, {
        tokenHash: hashToken(token),
        token,
        email,
        passwordHash: await hashPassword(password),
        expiresAt: new Date(now() + SIGNUP_LINK_TTL_MS),
      });
    },

    /** Spends the link: a new account on the `free` plan with its user; the email to log in with. */
    async verify(token: string): Promise<{ email: string; accountId: string }> {
      return inTransaction(pool, async (tx) => {
        const spent = await spendSignup(tx, hashToken(token));
        if (spent === 'expired') throw new InvalidRequestError('This link has expired; sign up again.', 'token');
        if (spent === 'spent')
          throw new InvalidRequestError('This link has already been used; log in instead.', 'token');
        if (spent === 'unknown') throw new InvalidRequestError('This link is not valid.', 'token');
        const accountId = newId('acct');
        const userId = newId('usr');
        await openAccount(tx, {
          id: accountId,
          plan: 'free',
          creditsMc: creditsToMc(options.startingCredits),
          chatCap: options.chatCap,
        });
        // Taken meanwhile (an operator's invitation, another link): nothing is created.
        if (!(await insertUser(tx, { id: userId, accountId, email: spent.email, role: 'owner' }))) {
          throw new InvalidRequestError('This address already has an account; log in instead.', 'token');
        }
        await setUserPassword(tx, userId, spent.passwordHash);
        return { email: spent.email, accountId };
      });
    },
  };
}

export type SignupService = ReturnType<typeof createSignupService>;
