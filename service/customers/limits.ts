import type pg from 'pg';
import { z } from 'zod';
import { BUDGET_PERIODS } from '../../core/db/budgets';
import {
  getCustomer,
  listCustomers,
  readCustomerDefaults,
  setCustomerDefaults,
  setCustomerOverrides,
} from '../../core/db/customers';
import type { BudgetSetting, CustomerOverrides, CustomerRow } from '../../core/db/customers';
import { decodeCursor, encodeCursor } from '../../core/cursor';
import { NotFoundError } from '../../core/errors';
import { creditsToMc, mcToCredits } from '../../core/money';
import type { Actor } from '../accounts/audit';
import { audited } from '../accounts/audit';
import { budgetFiguresOf } from '../accounts/operations';

/**
 * The limits an account puts on its customers (the platform's own end users): a default budget and
 * rate limit for every customer, and a customer's own in place of either. Budgets are enforced by
 * the ledger when a hold is placed (core/ledger/customer-budgets.ts), rate limits when a request
 * for the customer arrives (service/generation/admission.ts).
 */

const budgetSetting = z
  .strictObject({
    maxCredits: z
      .number()
      .finite()
      .min(0)
      .max(1e12)
      .describe('The most the customer’s generations may hold and spend per period, in credits'),
    period: z
      .enum(BUDGET_PERIODS)
      .describe('When the budget starts again: day, week (ISO, from Monday) or month, at 00:00 UTC; none: never'),
  })
  .meta({ id: 'CustomerBudgetSetting' });
const rateLimit = z.number().int().min(1).max(100_000).describe('Requests per minute (sliding 60 s window)');

export const customerDefaultsBody = z
  .strictObject({
    budget: budgetSetting.nullable().describe('Every customer’s budget unless it has its own; null: none'),
    rateLimitPerMinute: rateLimit.nullable().describe('Every customer’s rate limit unless it has its own; null: none'),
  })
  .meta({
    id: 'CustomerDefaults',
    examples: [{ budget: { maxCredits: 100, period: 'month' }, rateLimitPerMinute: 30 }],
  });

export const customerLimitsBody = z
  .strictObject({
    budget: budgetSetting
      .nullable()
      .optional()
      .describe('This customer’s own budget; null: no budget for it; left out: the account’s default'),
    rateLimitPerMinute: rateLimit
      .nullable()
      .optional()
      .describe('This customer’s own rate limit; null: none for it; left out: the account’s default'),
  })
  .meta({
    id: 'CustomerLimits',
    examples: [{ budget: { maxCredits: 500, period: 'month' } }, { budget: null, rateLimitPerMinute: 120 }],
  });

const budgetView = z
  .object({
    maxCredits: z.number(),
    period: z.enum(BUDGET_PERIODS),
    spentCredits: z.number().describe('Held now and charged since the period started'),
    availableCredits: z.number().describe('What the customer may still hold this period'),
    periodStart: z.string().nullable(),
    resetsAt: z.string().nullable(),
    source: z.enum(['default', 'customer']).describe('The account’s default, or the customer’s own'),
  })
  .meta({ id: 'CustomerBudget' });

export const customerView = z
  .object({
    customer: z.string().describe('Your own id for your end user'),
    budget: budgetView.nullable().describe('The budget that applies, with what it spent this period; null: none'),
    rateLimitPerMinute: z.number().int().nullable().describe('The rate limit that applies; null: none'),
    own: customerLimitsBody.describe('What this customer has of its own (what is left out follows the defaults)'),
    createdAt: z.string().describe('When a paid generation or a limit first named it'),
  })
  .meta({ id: 'Customer' });

export const customerList = z
  .object({ data: z.array(customerView), next_cursor: z.string().nullable() })
  .meta({ id: 'CustomerList' });

export const customerListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size, 1 to 200 (default 50)'),
  cursor: z.string().max(400).optional().describe('next_cursor of the previous page'),
});

const settingOf = (b: z.infer<typeof budgetSetting> | null): BudgetSetting | null =>
  b && { maxMc: creditsToMc(b.maxCredits), period: b.period };
const settingView = (b: BudgetSetting | null) => b && { maxCredits: mcToCredits(b.maxMc), period: b.period };

function viewOf(c: CustomerRow): z.infer<typeof customerView> {
  const own: z.infer<typeof customerLimitsBody> = {};
  if (c.overrides.budget !== undefined) own.budget = settingView(c.overrides.budget);
  if (c.overrides.rateLimit !== undefined) own.rateLimitPerMinute = c.overrides.rateLimit;
  return {
    customer: c.customerId,
    budget: c.budget && { ...budgetFiguresOf(c.budget), source: c.budget.source },
    rateLimitPerMinute: c.rateLimit,
    own,
    createdAt: c.createdAt.toISOString(),
  };
}

/** Customer ids are the platform's own, so a cursor carries one as it is (base64url-wrapped). */
const CURSOR_CUSTOMER = /^[\s\S]{1,256}$/;

export async function customersPage(pool: pg.Pool, accountId: string, q: z.infer<typeof customerListQuery>) {
  const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor, CURSOR_CUSTOMER);
  const rows = await listCustomers(pool, accountId, { limit: q.limit + 1, after });
  const page = rows.slice(0, q.limit);
  return {
    data: page.map(viewOf),
    next_cursor: rows.length > q.limit ? encodeCursor(page.at(-1)!.customerId) : null,
  };
}

export async function customerOf(pool: pg.Pool, accountId: string, customerId: string) {
  const c = await getCustomer(pool, accountId, customerId);
  if (!c) throw new NotFoundError(`Customer '${customerId}' not found.`, { param: 'customer' });
  return viewOf(c);
}

/** Gives a customer its own limits (replacing what it had); it need not have made a generation yet. */
export async function setCustomerLimits(
  pool: pg.Pool,
  accountId: string,
  customerId: string,
  body: z.infer<typeof customerLimitsBody>,
  actor: Actor,
) {
  const overrides: CustomerOverrides = {};
  if (body.budget !== undefined) overrides.budget = settingOf(body.budget);
  if (body.rateLimitPerMinute !== undefined) overrides.rateLimit = body.rateLimitPerMinute;
  await audited(
    pool,
    (tx) => setCustomerOverrides(tx, accountId, customerId, overrides).then(() => true),
    () => ({ accountId, actor, action: 'customer.limits_set', target: customerId, details: { ...body } }),
  );
  return customerOf(pool, accountId, customerId);
}

/** The customer follows the account's defaults again. */
export async function removeCustomerLimits(pool: pg.Pool, accountId: string, customerId: string, actor: Actor) {
  if (!(await getCustomer(pool, accountId, customerId)))
    throw new NotFoundError(`Customer '${customerId}' not found.`, { param: 'customer' });
  await audited(
    pool,
    (tx) => setCustomerOverrides(tx, accountId, customerId, {}).then(() => true),
    () => ({ accountId, actor, action: 'customer.limits_removed', target: customerId, details: {} }),
  );
  return customerOf(pool, accountId, customerId);
}

export async function customerDefaults(
  pool: pg.Pool,
  accountId: string,
): Promise<z.infer<typeof customerDefaultsBody>> {
  const d = await readCustomerDefaults(pool, accountId);
  if (!d) throw new NotFoundError(`Account '${accountId}' not found.`);
  return { budget: settingView(d.budget), rateLimitPerMinute: d.rateLimit };
}

export async function setDefaults(
  pool: pg.Pool,
  accountId: string,
  body: z.infer<typeof customerDefaultsBody>,
  actor: Actor,
) {
  const set = await audited(
    pool,
    async (tx) =>
      (await setCustomerDefaults(tx, accountId, {
        budget: settingOf(body.budget),
        rateLimit: body.rateLimitPerMinute,
      })) || undefined,
    () => ({ accountId, actor, action: 'customer_defaults.set', target: null, details: { ...body } }),
  );
  if (!set) throw new NotFoundError(`Account '${accountId}' not found.`);
  return customerDefaults(pool, accountId);
}
