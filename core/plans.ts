/**
 * The plans an account can be on and what each allows: one place for both, so that the admin API,
 * the rate limiter, the dashboard and the OpenAPI description say the same. Imports nothing.
 */
export const PLANS = ['free', 'ronin', 'shinobi', 'samurai'] as const;
export type Plan = (typeof PLANS)[number];

/** Requests per sliding 60-second window, per API key (and per dashboard user), by plan (spec, Limits). */
export const PLAN_RATE_LIMITS: Readonly<Record<Plan, number>> = { free: 20, ronin: 60, shinobi: 200, samurai: 600 };

/**
 * An account's share of the Temporal task queues (workflow tasks and provider runs) while others
 * compete for them: its Temporal fairness weight, by plan. Dispatch is weighted round robin across
 * accounts, so a samurai account's backlog gets four tasks through for a free account's one. Kept
 * within 1–4 on purpose: a heavier plan's flood still lets a lone free request through after at
 * most four of its tasks (docs/decisions/0136-fair-dispatch.md).
 */
export const PLAN_FAIRNESS_WEIGHTS: Readonly<Record<Plan, number>> = { free: 1, ronin: 2, shinobi: 3, samurai: 4 };
