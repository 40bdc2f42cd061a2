import type pg from 'pg';
import { z } from 'zod';
import { accountExists, insertApiKey, keyAccountOf, revokeApiKey } from '../../core/db/accounts';
import { ROLES } from '../../core/roles';
import { audited } from './audit';
import type { Actor } from './audit';
import { PLANS } from '../../core/plans';
import { BUDGET_PERIODS, readKeyBudget, setKeyBudget } from '../../core/db/budgets';
import type { BudgetPeriod, KeyBudget } from '../../core/db/budgets';
import { findUserByEmail, insertPasswordLink, insertUser } from '../../core/db/users';
import { readLowBalance, recentAlerts } from '../../core/db/alerts';
import { credit, openAccount, setLowBalanceThreshold } from '../../core/ledger';
import { ALERT_EVENTS } from '../../core/webhooks/events';
import { inTransaction } from '../../core/db/pool';
import { insertAuditEvent } from '../../core/db/audit';
import { generateApiKey, hashApiKey, normaliseScope } from '../../core/accounts/api-keys';
import {
  findChatModel,
  findImageModel,
  findOpenAiChatModel,
  findOpenAiVideoModel,
  findUpscaleModel,
  findVideoModel,
  AUTO_CHAT_ID,
} from '../../core/catalogue/models';
import { EmailTakenError, InvalidRequestError, NotFoundError } from '../../core/errors';
import { newId } from '../../core/ids';
import { creditsToMc, mcToCredits } from '../../core/money';
import { hashToken, newToken } from '../../core/accounts/passwords';

/** What an operator does: open accounts, issue and revoke keys, add credits, invite dashboard users. */

/** An amount of credits; out of range is refused before anything converts it to millicredits (abort). */
const credits = z.number().finite().min(0, { abort: true }).max(1e12, { abort: true });

export const createAccountBody = z
  .object({
    plan: z.enum(PLANS).describe('Rate limit per key: free 20, ronin 60, shinobi 200, samurai 600 requests a minute'),
    credits,
    chatCap: z.number().int().min(0).max(1_000_000).optional().describe('Free chat replies (default FREE_CHAT_CAP)'),
  })
  .meta({
    examples: [
      { plan: 'samurai', credits: 500 },
      { plan: 'free', credits: 10, chatCap: 5 },
    ],
  });

export const createKeyBody = z
  .object({
    scopes: z
      .array(z.string().max(40))
      .min(1, 'at least one scope is required')
      .describe(
        'Capabilities: image, video, chat, upscale (or generate:image, generate:video, generate:chat, generate:upscale); webhooks (manage the account’s webhook endpoints); customers (read the account’s customers and set their limits); audit (read the audit log)',
      ),
    models: z
      .array(z.string().min(1).max(100))
      .min(1)
      .optional()
      .describe('An allow-list of model ids; omitted: every model'),
  })
  .meta({
    examples: [
      { scopes: ['image', 'video', 'chat', 'upscale', 'webhooks'] },
      { scopes: ['generate:image'], models: ['flux'] },
    ],
  });

export const keyBudgetBody = z
  .strictObject({
    maxCredits: credits.describe(
      'The most the key may hold and spend per period, in credits; a hold past it is refused with 402 budget_exceeded',
    ),
    period: z
      .enum(BUDGET_PERIODS)
      .describe('When the budget starts again: day, week (ISO, from Monday) or month, at 00:00 UTC; none: never'),
  })
  .meta({
    id: 'KeyBudgetRequest',
    examples: [
      { maxCredits: 500, period: 'month' },
      { maxCredits: 20, period: 'day' },
    ],
  });

export const keyBudgetView = z
  .object({
    keyId: z.string(),
    maxCredits: z.number(),
    period: z.enum(BUDGET_PERIODS),
    spentCredits: z.number().describe('Held now and charged since the period started'),
    availableCredits: z.number().describe('What the key may still hold this period'),
    periodStart: z.string().nullable().describe('When the current period started (null for none)'),
    resetsAt: z.string().nullable().describe('When the next period starts (null for none)'),
  })
  .meta({ id: 'KeyBudget' });

/** Where the period after the one starting at `start` starts. */
function nextPeriod(period: BudgetPeriod, start: Date | null): Date | null {
  if (!start || period === 'none') return null;
  const next = new Date(start);
  if (period === 'day') next.setUTCDate(next.getUTCDate() + 1);
  else if (period === 'week') next.setUTCDate(next.getUTCDate() + 7);
  else next.setUTCMonth(next.getUTCMonth() + 1);
  return next;
}

/** A budget's figures as the API shows them: in credits, with its period's start and end. */
export function budgetFiguresOf(b: KeyBudget) {
  return {
    maxCredits: mcToCredits(b.maxMc),
    period: b.period,
    spentCredits: mcToCredits(b.spentMc),
    availableCredits: mcToCredits(Math.max(0, b.maxMc - b.spentMc)),
    periodStart: b.periodStart?.toISOString() ?? null,
    resetsAt: nextPeriod(b.period, b.periodStart)?.toISOString() ?? null,
  };
}

export function budgetViewOf(keyId: string, b: KeyBudget): z.infer<typeof keyBudgetView> {
  return { keyId, ...budgetFiguresOf(b) };
}

/** Sets a key's budget (it applies from the key's next request); given an account (the dashboard), only a key of that account. */
export async function setBudget(
  pool: pg.Pool,
  keyId: string,
  body: z.infer<typeof keyBudgetBody>,
  actor: Actor,
  accountId?: string,
) {
  const budget = { maxMc: creditsToMc(body.maxCredits), period: body.period };
  const owner = await audited(
    pool,
    async (tx) => ((await setKeyBudget(tx, keyId, accountId, budget)) ? keyAccountOf(tx, keyId) : undefined),
    (account) => ({ accountId: account, actor, action: 'key.budget_set', target: keyId, details: { ...body } }),
  );
  if (!owner) throw new NotFoundError(`Key '${keyId}' not found.`);
  return budgetViewOf(keyId, (await readKeyBudget(pool, keyId, { lock: false }))!);
}

/** Removes a key's budget: the key is limited by the account's balance alone again. */
export async function removeBudget(pool: pg.Pool, keyId: string, actor: Actor, accountId?: string) {
  const owner = await audited(
    pool,
    async (tx) => ((await setKeyBudget(tx, keyId, accountId, null)) ? keyAccountOf(tx, keyId) : undefined),
    (account) => ({ accountId: account, actor, action: 'key.budget_removed', target: keyId, details: {} }),
  );
  if (!owner) throw new NotFoundError(`Key '${keyId}' not found.`);
  return { keyId, removed: true as const };
}

export const topUpBody = z
  .object({ credits: credits.refine((c) => creditsToMc(c) > 0, 'credits must be at least 0.001') })
  .meta({ examples: [{ credits: 250 }] });

export async function createAccount(pool: pg.Pool, body: z.infer<typeof createAccountBody>, defaultChatCap: number) {
  const id = newId('acct');
  await inTransaction(pool, (tx) =>
    openAccount(tx, {
      id,
      plan: body.plan,
      creditsMc: creditsToMc(body.credits),
      chatCap: body.chatCap ?? defaultChatCap,
    }),
  );
  return { id };
}

export async function createKey(pool: pg.Pool, accountId: string, body: z.infer<typeof createKeyBody>, actor: Actor) {
  const scopes = body.scopes.map((s) => {
    const scope = normaliseScope(s);
    if (!scope)
      throw new InvalidRequestError(
        `unknown scope '${s}'; use image, video, chat, upscale (or generate:<kind>), webhooks, customers or audit`,
        'scopes',
      );
    return scope;
  });
  for (const m of body.models ?? []) {
    if (
      m !== AUTO_CHAT_ID &&
      !findImageModel(m) &&
      !findVideoModel(m) &&
      !findOpenAiVideoModel(m) &&
      !findChatModel(m) &&
      !findOpenAiChatModel(m) &&
      !findUpscaleModel(m)
    ) {
      throw new InvalidRequestError(`unknown model '${m}'`, 'models');
    }
  }
  if (!(await accountExists(pool, accountId))) throw new NotFoundError(`Account '${accountId}' not found.`);
  const key = generateApiKey();
  const id = newId('key');
  const granted = { scopes: [...new Set(scopes)], models: body.models ?? null };
  await audited(
    pool,
    (tx) =>
      insertApiKey(tx, {
        id,
        accountId,
        keyHash: hashApiKey(key),
        keyHint: `${key.slice(0, 8)}…${key.slice(-4)}`,
        ...granted,
      }).then(() => true),
    () => ({ accountId, actor, action: 'key.created', target: id, details: granted }),
  );
  return { id, key };
}

export async function topUp(pool: pg.Pool, accountId: string, body: z.infer<typeof topUpBody>) {
  const after = await inTransaction(pool, (tx) => credit(tx, accountId, creditsToMc(body.credits), 'top-up'));
  if (!after) throw new NotFoundError(`Account '${accountId}' not found.`);
  return { id: accountId, balance: mcToCredits(after.balance_mc - after.held_mc) };
}

/** Revokes a key at once; given an account (the dashboard), only a key of that account. */
export async function revokeKey(pool: pg.Pool, keyId: string, actor: Actor, accountId?: string) {
  const owner = await audited(
    pool,
    async (tx) => ((await revokeApiKey(tx, keyId, accountId)) ? keyAccountOf(tx, keyId) : undefined),
    (account) => ({ accountId: account, actor, action: 'key.revoked', target: keyId, details: {} }),
  );
  if (!owner) throw new NotFoundError(`Key '${keyId}' not found.`);
  return { id: keyId, revoked: true as const };
}

/** How long a link to set a password stays valid. */
export const PASSWORD_LINK_TTL_MS = 24 * 3_600_000;

/**
 * An address mail can reach (RFC 5321 4.5.3.1): a name part of 1 to 64 characters, domain labels
 * of 1 to 63 that neither start nor end with a hyphen, 254 characters in all. One pattern, which
 * the OpenAPI document shows as it is, so that the route and the document refuse the same
 * addresses (a `format: email` is each validator's own idea of an address). No lookaround, so
 * that property-based tools can draw addresses from it.
 */
const EMAIL_PATTERN =
  /^(?:[A-Za-z0-9_'+-][A-Za-z0-9_'+.-]{0,62})?[A-Za-z0-9_+-]@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

export const emailAddress = z
  .string()
  .max(254, { error: 'email: at most 254 characters', abort: true })
  .regex(EMAIL_PATTERN, { error: 'email must be an email address' });

export const createUserBody = z
  .object({
    accountId: z.string().min(1).max(100).describe('The account the user works in (acct_…)'),
    email: emailAddress.transform((e) => e.toLowerCase()).describe('Their login; compared case-insensitively'),
    role: z
      .enum(ROLES)
      .default('owner')
      .describe(
        'What they may do in the dashboard (default owner, for an account’s first user); a user already there keeps theirs',
      ),
  })
  .meta({ examples: [{ accountId: 'acct_01j0000000000000000000000', email: 'ada@example.com', role: 'developer' }] });

/**
 * Creates a dashboard user of an account with a one-time link to set the password (valid
 * PASSWORD_LINK_TTL_MS, single use; only its SHA-256 is stored). Asking again for a user of the same
 * account issues a new link (an invitation resent, or a password reset); `created` says which.
 */
export async function createUser(pool: pg.Pool, body: z.infer<typeof createUserBody>, actor: Actor, now = Date.now()) {
  if (!(await accountExists(pool, body.accountId)))
    throw new NotFoundError(`Account '${body.accountId}' not found.`, { param: 'accountId' });
  const token = newToken();
  return inTransaction(pool, async (tx) => {
    const created = await insertUser(tx, {
      id: newId('usr'),
      accountId: body.accountId,
      email: body.email,
      role: body.role,
    });
    const user = await findUserByEmail(tx, body.email);
    if (!user || user.accountId !== body.accountId) throw new EmailTakenError();
    const expiresAt = new Date(now + PASSWORD_LINK_TTL_MS);
    await insertPasswordLink(tx, { tokenHash: hashToken(token), userId: user.id, expiresAt });
    if (created)
      await insertAuditEvent(tx, {
        accountId: body.accountId,
        actor,
        action: 'member.invited',
        target: user.id,
        details: { email: user.email, role: user.role },
      });
    return { id: user.id, token, expiresAt, created, role: user.role };
  });
}

export const lowBalanceBody = z
  .strictObject({
    thresholdCredits: credits
      .nullable()
      .describe('Announce balance.low when the available credits (balance − held) fall below this; null: never'),
  })
  .meta({ id: 'LowBalanceRequest', examples: [{ thresholdCredits: 100 }, { thresholdCredits: null }] });

const alertView = z.object({
  id: z.string().describe('alrt_…; the same id is in the webhook payload'),
  event: z.enum(ALERT_EVENTS),
  keyId: z.string().nullable().describe('key.budget_reached: the key'),
  customer: z.string().nullable().describe('customer.budget_reached: the customer'),
  amountCredits: z
    .number()
    .describe(
      'balance.low: the available credits after the crossing; key.budget_reached, customer.budget_reached: what the key or customer had spent',
    ),
  limitCredits: z.number().describe('balance.low: the threshold; otherwise the key’s or customer’s budget'),
  period: z.enum(BUDGET_PERIODS).nullable(),
  periodStart: z.string().nullable(),
  createdAt: z.string(),
});

export const alertsView = z
  .object({
    thresholdCredits: z.number().nullable().describe('The account’s low-balance threshold; null: no balance.low'),
    data: z.array(alertView).describe('The latest alerts, newest first'),
  })
  .meta({ id: 'AccountAlerts' });

const RECENT_ALERTS = 20;

/** The account's low-balance threshold and its latest alerts. */
export async function accountAlerts(pool: pg.Pool, accountId: string): Promise<z.infer<typeof alertsView>> {
  const low = await readLowBalance(pool, accountId);
  if (!low) throw new NotFoundError(`Account '${accountId}' not found.`);
  const alerts = await recentAlerts(pool, accountId, RECENT_ALERTS);
  return {
    thresholdCredits: low.thresholdMc === null ? null : mcToCredits(low.thresholdMc),
    data: alerts.map((a) => ({
      id: a.id,
      event: a.event,
      keyId: a.keyId,
      customer: a.customerId,
      amountCredits: mcToCredits(a.amountMc),
      limitCredits: mcToCredits(a.limitMc),
      period: a.period,
      periodStart: a.periodStart?.toISOString() ?? null,
      createdAt: a.createdAt.toISOString(),
    })),
  };
}

/** Sets (or removes) the account's low-balance threshold; answers it with the latest alerts. */
export async function setLowBalance(
  pool: pg.Pool,
  accountId: string,
  body: z.infer<typeof lowBalanceBody>,
  actor: Actor,
) {
  const thresholdMc = body.thresholdCredits === null ? null : creditsToMc(body.thresholdCredits);
  const set = await audited(
    pool,
    (tx) => setLowBalanceThreshold(tx, accountId, thresholdMc),
    () => ({ accountId, actor, action: 'low_balance.set', target: null, details: { ...body } }),
  );
  if (!set) throw new NotFoundError(`Account '${accountId}' not found.`);
  return accountAlerts(pool, accountId);
}
