/**
 * Money is kept as integer millicredits (1 credit = 1000 mc = 0.01 EUR) so that rates such as
 * 10.1 credits per second stay exact. Credits appear only at the API edge.
 */
export type Millicredits = number;

export const MC_PER_CREDIT = 1000;

/** Converts a credit amount written in a table or a request (e.g. 10.1) to exact millicredits. */
export function creditsToMc(credits: number): Millicredits {
  const mc = Math.round(credits * MC_PER_CREDIT);
  if (!Number.isSafeInteger(mc)) throw new RangeError(`credit amount out of range: ${credits}`);
  return mc;
}

/** 1 credit = 0.01 EUR: what the margin report (revenue against upstream cost) counts in. */
export const EUR_PER_MC = 0.01 / MC_PER_CREDIT;

/** Converts millicredits to the credit number shown by the API (at most three decimals). */
export function mcToCredits(mc: Millicredits): number {
  return mc / MC_PER_CREDIT;
}

/** An amount as people read it: "1 credit", "0.5 credits", "130 credits". */
export function creditsText(mc: Millicredits): string {
  const credits = mcToCredits(mc);
  return `${credits} ${credits === 1 ? 'credit' : 'credits'}`;
}
