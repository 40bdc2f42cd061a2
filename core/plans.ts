/**
 * The plans an account can be on and what each allows: one place for both, so that the admin API,
 * the rate limiter, the dashboard and the OpenAPI description say the same. Imports nothing.
 */
export const PLANS = ['free', 'ronin', 'shinobi', 'samurai'] as const;
export type Plan = (typeof PLANS)[number];

/** Requests per sliding 60-second window, per API key (and per dashboard user), by plan (spec, Limits). */
export const PLAN_RATE_LIMITS: Readonly<Record<Plan, number>> = { free: 20, ronin: 60, shinobi: 200, samurai: 600 };
