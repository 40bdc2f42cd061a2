import type { RouteEntry } from '../vocabulary';

/**
 * What the router keeps beyond one call: each upstream's health (the circuit breaker, shared by
 * every process) and, per generation, which upstreams were asked and which served it at what cost.
 * PostgreSQL implements both (core/db/upstreams.ts); without them the router still falls back,
 * with no breaker and no record.
 */
export interface UpstreamHealth {
  /**
   * Whether the upstream may be asked now: it is not cooled down, or its cooldown is over and this
   * caller claimed the probe (the others keep skipping it until the probe's outcome is known).
   */
  admit(upstream: string): Promise<boolean>;
  /** A failure on the upstream's side: one more in a row, which may cool it down. */
  failed(upstream: string): Promise<void>;
  /** It answered (a success, or a refusal about the request): the count in a row starts again. */
  answered(upstream: string): Promise<void>;
}


export interface RouteLog {
  /** Merges a call's entry into the generation's record, once per `call` (a retried run appends to what was tried). */
  record(generationId: string, entry: RouteEntry): Promise<void>;
}

export type { RouteEntry };
