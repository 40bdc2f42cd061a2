import type pg from 'pg';
import { claimIdempotencyKey } from '../core/db/idempotency';
import { placeHold } from '../core/db/ledger';
import { inTransaction } from '../core/db/pool';
import type { Queryable } from '../core/db/pool';
import { IdempotencyConflictError, InsufficientCreditsError } from '../core/errors';
import { mcToCredits } from '../core/money';
import { anyEventFor } from '../core/webhooks/events';
import type { GenerationWorkflowInput } from '../workflows/definitions';
import type { PricedGeneration } from './requests';

/** An Idempotency-Key with the hash of the request it was sent with. */
export interface KeyedRequest {
  accountId: string;
  key: string;
  requestHash: Buffer;
}

export type Admission =
  /** The key was already claimed by this same request: its (first) generation. */
  | { replayOf: string }
  /** Every generation held and recorded, ready for its workflow; `createdAt` is their rows'. */
  | { inputs: GenerationWorkflowInput[]; createdAt: Date };

/**
 * Admits one request's generations in one PostgreSQL transaction: claims the Idempotency-Key
 * (naming the first generation), places every hold (or claims a free chat reply) and records
 * each generation. All or nothing: a refusal rolls it all back and is a 402 for the whole
 * request, so a refused request leaves no claim, no hold and no generation, and never a workflow.
 */
export async function admit(pool: pg.Pool, priced: readonly PricedGeneration[], keyed: KeyedRequest | undefined): Promise<Admission> {
  const first = priced[0];
  if (!first) throw new Error('admit: nothing to admit');
  // One paid generation without a key is one statement (placeHold's), atomic by itself: no
  // BEGIN and COMMIT round trips around it. It is the hot path of a streamed chat.
  // A video or upscale may also owe webhook endpoints a `queued` delivery, written beside the hold:
  // that needs the transaction.
  const single = !keyed && priced.length === 1 && !first.freeChat && !anyEventFor(first.kind, 'queued');
  const hold = async (tx: Queryable): Promise<Admission> => {
    if (keyed) {
      const claim = await claimIdempotencyKey(tx, { ...keyed, generationId: first.generationId });
      if (claim.outcome === 'conflict') throw new IdempotencyConflictError();
      if (claim.outcome === 'replay') return { replayOf: claim.generationId };
    }
    const inputs: GenerationWorkflowInput[] = [];
    let heldMc = 0;
    let createdAt: Date | undefined;
    for (const p of priced) {
      const outcome = await placeHold(tx, {
        generation: { id: p.generationId, accountId: p.accountId, apiKeyId: p.apiKeyId, kind: p.kind, model: p.model, params: p.params, prompt: p.prompt },
        amountMc: p.quoteMc,
        ...(p.freeChat ? { freeChat: p.freeChat } : {}),
      });
      // Thrown inside the transaction, so a refused request leaves nothing behind. The message
      // speaks of the whole request: what all of it needs against what was available before it.
      if (!outcome.admitted) {
        const requiredMc = priced.reduce((sum, q) => sum + q.quoteMc, 0);
        throw new InsufficientCreditsError(mcToCredits(requiredMc), mcToCredits(outcome.availableMc + heldMc));
      }
      heldMc += outcome.amountMc;
      createdAt ??= outcome.createdAt;
      inputs.push({ ...p, model: outcome.model, admitted: { free: outcome.free, model: outcome.model } });
    }
    return { inputs, createdAt: createdAt! };
  };
  return single ? hold(pool) : inTransaction(pool, hold);
}
