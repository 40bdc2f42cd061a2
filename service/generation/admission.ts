import { createHash } from 'node:crypto';
import type pg from 'pg';
import { customerRateLimit } from '../../core/db/customers';
import { findIdempotencyClaim } from '../../core/db/idempotency';
import {
  BudgetExceededError,
  CustomerBudgetExceededError,
  IdempotencyConflictError,
  InsufficientCreditsError,
  QuoteAboveSpendCapError,
  ServiceUnavailableError,
} from '../../core/errors';
import type { DomainError } from '../../core/errors';
import { createAccountLanes } from '../../core/generation/account-lanes';
import { viewOf } from '../../core/generation/view';
import { requestHash } from '../../core/generation/idempotency';
import { admit } from '../../core/ledger';
import type { KeyedRequest } from '../../core/ledger';
import type { JobCallback } from '../../core/webhooks/job-callbacks';
import { creditsToMc, mcToCredits } from '../../core/money';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';
import type { GenerationWorkflowInput } from '../../core/workflow-contract';
import { isFinal } from '../../core/vocabulary';
import type { GenerationKind } from '../../core/vocabulary';
import { readRequest } from '../../core/generation/lookup';
import type { GenerationGateway } from './temporal-gateway';
import type { RateWindows, SubmitOptions, SubmittedMany } from './types';
import { inputOfAdmitted, inputOfRecord, isRecordedByApi } from '../../core/generation/workflow-input';
import type { Deadlines, PricedGeneration } from '../../core/generation/workflow-input';

export interface AdmissionDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  /** How long a submit waits for an image or chat to finish before answering its current state. */
  syncWaitMs: number;
  deadlines?: Deadlines | undefined;
  /** The shared rate windows (Redis when configured): a customer's requests per minute are counted in them. */
  rateWindows?: RateWindows | undefined;
}

export type Admitted =
  /** The Idempotency-Key was claimed by this same request: its first generation. */
  | { repeatOf: string }
  /** Every generation held and recorded, ready for its workflow; `createdAt` is their rows'. */
  | { inputs: GenerationWorkflowInput[]; createdAt: Date };

/** Kinds that finish within the call: the client waits for their result (DESIGN §5). */
export const WAITED_KINDS: ReadonlySet<GenerationKind> = new Set(['image', 'chat']);

/** How often a repeat looks for the record of a reply the API is still recording. */
const RECORD_POLL_MS = 50;

/**
 * Admission as every submit does it (the streamed chat too): the Idempotency-Key first, then the
 * ledger's admission (hold, generation, outbox in one transaction). A 402 costs one round trip to
 * the database and never a workflow.
 */
export function createAdmission(deps: AdmissionDeps) {
  const { pool, gateway, store } = deps;
  // An account's holds all lock its own row: a burst of them would otherwise wait on that lock
  // holding every connection of the pool, with other accounts' holds queued behind.
  const lanes = createAccountLanes();

  /** The claim on an Idempotency-Key, or undefined without one. */
  const keyedOf = (principal: Principal, opts: SubmitOptions): KeyedRequest | undefined =>
    opts.idempotency && {
      accountId: principal.accountId,
      key: opts.idempotency.key,
      requestHash: requestHash(opts.idempotency.route, opts.idempotency.body),
    };

  const waitIfSync = async (id: string, kind: GenerationKind, opts: SubmitOptions): Promise<void> => {
    if (!opts.respondAsync && WAITED_KINDS.has(kind)) await gateway.awaitFinish(id, deps.syncWaitMs);
  };

  /** An Idempotency-Key repeat: the first request's generations, whose workflows are made sure of. */
  const firstGenerations = async (accountId: string, firstId: string, opts: SubmitOptions): Promise<SubmittedMany> => {
    const rows = await readRequest(pool, accountId, firstId);
    // The first request may have died between its hold and its start; starting again is harmless.
    // If Temporal cannot be reached, the hold stays: the workflow may well be running already, and
    // the client's next repeat (or the reconciler, if it never started) settles what happens.
    // A chat the API records at its end has no workflow until then, and its hold a deadline.
    const resumable = rows.filter((g) => !isFinal(g.status) && !isRecordedByApi(g));
    await Promise.all(resumable.map((g) => gateway.start(inputOfRecord(g, deps.deadlines)))).catch((err: unknown) => {
      throw new ServiceUnavailableError(
        'The generation could not be resumed just now; retry shortly with the same Idempotency-Key.',
        { cause: err },
      );
    });
    await Promise.all(rows.map((g) => waitIfSync(g.id, g.kind, opts)));
    let after = await readRequest(pool, accountId, firstId);
    // A reply the API records at its end may have reached its client just before its record: the
    // repeat answers the record once written (or, past the wait, as it stands).
    const until = Date.now() + deps.syncWaitMs;
    while (after.some((g) => !isFinal(g.status) && isRecordedByApi(g)) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, RECORD_POLL_MS));
      after = await readRequest(pool, accountId, firstId);
    }
    return { generations: await Promise.all(after.map((g) => viewOf(g, store))), repeated: true };
  };

  return {
    waitIfSync,
    firstGenerations,

    /**
     * Counts a request for a customer in the customer's rate limit (the account's default or the
     * customer's own, per minute, shared by every API instance), refusing it with 429 when full.
     * Before anything is priced or held; nothing to do for a request without a customer.
     */
    async limitCustomer(principal: Principal, opts: SubmitOptions): Promise<void> {
      if (opts.customer === undefined || !deps.rateWindows) return;
      const limit = await customerRateLimit(pool, principal.accountId, opts.customer);
      if (limit === null) return;
      const bucket = `customer:${principal.accountId}:${createHash('sha256').update(opts.customer).digest('base64url')}`;
      const decision = await deps.rateWindows.check(bucket, limit);
      if (decision.refused) throw decision.refused;
    },

    /** A live claim on the key: a true repeat is answered without pricing (or fetching) anything again. */
    async priorClaim(principal: Principal, opts: SubmitOptions): Promise<string | undefined> {
      const keyed = keyedOf(principal, opts);
      if (!keyed) return undefined;
      const prior = await findIdempotencyClaim(pool, keyed, 'generation');
      if (prior?.outcome === 'conflict') throw new IdempotencyConflictError();
      return prior?.outcome === 'repeat' ? prior.id : undefined;
    },

    /** Admits a request's priced generations, all or none; a refusal is a 402 for the whole request. */
    async admit(
      priced: readonly PricedGeneration[],
      principal: Principal,
      opts: SubmitOptions,
      callback?: JobCallback,
    ): Promise<Admitted> {
      assertWithinSpendCap(priced, opts);
      const budgeted = principal.budgeted === true;
      const admission = await lanes.through(principal.accountId, () =>
        admit(
          pool,
          priced.map((p) => ({
            ...p,
            id: p.generationId,
            budgeted,
            customerId: opts.customer,
            startsRunning: p.admittedRunning === true,
            callback,
          })),
          keyedOf(principal, opts),
        ),
      );
      if (admission.outcome === 'repeat') return { repeatOf: admission.firstId };
      if (admission.outcome !== 'admitted') throw refusalOf(admission);
      const inputs = admission.generations.map((a, i) => inputOfAdmitted(priced[i]!, a, deps.deadlines));
      for (const input of inputs) {
        opts.log?.info(
          {
            generationId: input.generationId,
            kind: input.kind,
            model: input.model,
            heldCredits: input.admitted.free ? 0 : mcToCredits(input.quoteMc),
            free: input.admitted.free,
          },
          'generation admitted',
        );
      }
      return { inputs, createdAt: admission.createdAt };
    },
  };
}

/** The request's own spending cap (`max_credits`): the whole request's quote above it is refused before any hold. */
function assertWithinSpendCap(priced: readonly PricedGeneration[], opts: SubmitOptions): void {
  if (opts.spendCap === undefined) return;
  const quoteMc = priced.reduce((sum, p) => sum + p.quoteMc, 0);
  if (quoteMc > creditsToMc(opts.spendCap.credits))
    throw new QuoteAboveSpendCapError(mcToCredits(quoteMc), opts.spendCap.credits, opts.spendCap.param);
}

export type Admission = ReturnType<typeof createAdmission>;

/** What the ledger answers an admission. */
type LedgerAdmission = Awaited<ReturnType<typeof admit>>;

/** The error a refused admission answers: 402 for the whole request, naming what fell short. */
function refusalOf(admission: Exclude<LedgerAdmission, { outcome: 'admitted' | 'repeat' }>): DomainError {
  if (admission.outcome === 'refused')
    return new InsufficientCreditsError(mcToCredits(admission.requiredMc), mcToCredits(admission.availableMc));
  if (admission.outcome === 'over_budget') {
    return new BudgetExceededError({
      keyId: admission.keyId,
      requiredCredits: mcToCredits(admission.requiredMc),
      availableCredits: mcToCredits(admission.availableMc),
      budgetCredits: mcToCredits(admission.maxMc),
      period: admission.period,
    });
  }
  return new CustomerBudgetExceededError({
    customer: admission.customerId,
    requiredCredits: mcToCredits(admission.requiredMc),
    availableCredits: mcToCredits(admission.availableMc),
    budgetCredits: mcToCredits(admission.maxMc),
    period: admission.period,
  });
}
