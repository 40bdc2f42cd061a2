import type pg from 'pg';
import type { Door } from '../core/catalogue';
import { getAccountCredits } from '../core/db/accounts';
import type { Plan } from '../core/db/accounts';
import { getGeneration, listGenerations } from '../core/db/generations';
import type { GenerationKind, GenerationRow, GenerationStatus } from '../core/db/generations';
import { claimIdempotencyKey, findIdempotencyClaim } from '../core/db/idempotency';
import { admitGeneration, placeHold, releaseHold } from '../core/db/ledger';
import type { HoldOutcome } from '../core/db/ledger';
import { inTransaction } from '../core/db/pool';
import {
  GenerationFinishedError, IdempotencyConflictError, InsufficientCreditsError, NotFoundError, ServiceUnavailableError,
} from '../core/errors';
import { requestHash } from '../core/idempotency';
import { GENERATION_ID_PATTERN } from '../core/ids';
import { metrics, recordResolution } from '../core/metrics';
import { mcToCredits } from '../core/money';
import type { Principal } from '../core/principal';
import type { OutputStore } from '../core/storage';
import type { GenerationWorkflowInput } from '../workflows/definitions';
import { decodeCursor, encodeCursor } from './cursor';
import { priceRequest } from './requests';
import type { GenerationRequest, PricedGeneration } from './requests';
import type { GenerationGateway } from './temporal-gateway';
import { viewOf } from './records';
import type { GenerationView } from './records';

export interface GenerationServiceDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  /** How long a submit waits for an image or chat to finish before answering its current state. */
  syncWaitMs: number;
  /** Per kind, how long a generation may stay in flight before it fails with `timeout`. */
  deadlines?: Partial<Record<GenerationKind, number>>;
  /** How long a cancel waits for the workflow to release the hold before answering. */
  cancelWaitMs?: number;
  /** Fetches and checks an upscale input before anything is held; without it upscale is refused. */
  prepareInput?: (priced: PricedGeneration) => Promise<PreparedInput>;
}

/** An input fetched and checked before the hold: stored once the generation exists. */
export interface PreparedInput {
  params: Record<string, unknown>;
  store: (generationId: string) => Promise<Record<string, unknown>>;
}

export interface SubmitOptions {
  door: Door;
  /** The Idempotency-Key header, with the door's route and body so that a true repeat is recognised. */
  idempotency?: { key: string; route: string; body: unknown } | undefined;
  /** Answer at once (RFC 7240 `Prefer: respond-async`) instead of waiting for an image or chat. */
  respondAsync?: boolean | undefined;
  /** The request's logger: admission lines carry its request id next to the generation id. */
  log?: { info(obj: object, msg: string): void; warn?(obj: object, msg: string): void } | undefined;
}

export interface Submitted {
  generation: GenerationView;
  /** True when an Idempotency-Key repeat returned an earlier generation. */
  replayed: boolean;
}

export interface ListQuery {
  limit: number;
  cursor?: string | undefined;
  kind?: GenerationKind | undefined;
  status?: GenerationStatus | undefined;
}

export interface Balance {
  balance: number;
  holdsActive: number;
  plan: Plan;
  trial: { chatCap: number; chatUsed: number; chatLeft: number };
}

/** Kinds that finish within the call: the client waits for their result (DESIGN §5). */
const WAITED_KINDS: ReadonlySet<GenerationKind> = new Set(['image', 'chat']);
const TERMINAL: ReadonlySet<GenerationStatus> = new Set(['succeeded', 'failed']);

/**
 * The one generation service behind every door (groups A, B, C and MCP): prices a request,
 * places its hold and starts its workflow, reads, lists and cancels. Doors only translate their
 * own shapes to and from it.
 *
 * Admission happens here, in PostgreSQL: one transaction claims the Idempotency-Key, places the
 * hold and records the generation, so a 402 costs one round trip to the database and never a
 * workflow. Only an admitted generation gets a workflow, which from then on owns the outcome:
 * settle or release, exactly once.
 */
export function createGenerationService(deps: GenerationServiceDeps) {
  const { pool, gateway, store } = deps;

  const read = async (accountId: string, id: string): Promise<GenerationRow> => {
    const g = GENERATION_ID_PATTERN.test(id) ? await getGeneration(pool, accountId, id) : undefined;
    if (!g) throw new NotFoundError(`Generation '${id}' not found.`, { param: 'id' });
    return g;
  };

  const waitIfSync = async (id: string, kind: GenerationKind, opts: SubmitOptions): Promise<void> => {
    if (!opts.respondAsync && WAITED_KINDS.has(kind)) await gateway.awaitFinish(id, deps.syncWaitMs);
  };

  /** An Idempotency-Key repeat: the first request's generation, whose workflow is made sure of. */
  const replay = async (accountId: string, id: string, opts: SubmitOptions): Promise<Submitted> => {
    const g = await read(accountId, id);
    // The first request may have died between its hold and its start; starting again is harmless.
    if (!TERMINAL.has(g.status)) await gateway.start(workflowInputOf(g, deps.deadlines?.[g.kind]));
    await waitIfSync(id, g.kind, opts);
    return { generation: await viewOf(await read(accountId, id), store), replayed: true };
  };

  /** Workflow starts made after the answer (see submit), so that a graceful stop waits for them. */
  const starting = new Set<Promise<void>>();
  const startInBackground = (input: GenerationWorkflowInput, opts: SubmitOptions): void => {
    const started: Promise<void> = startOrRelease(input).catch((err: unknown) => {
      // Released already: the generation reads `failed` with code `not_started`, nothing charged.
      opts.log?.warn?.({ generationId: input.generationId, err }, 'generation workflow could not be started; hold released');
    }).finally(() => starting.delete(started));
    starting.add(started);
  };

  /** Starts the admitted generation's workflow; if that fails, the hold goes back at once. */
  const startOrRelease = async (input: GenerationWorkflowInput): Promise<void> => {
    try {
      await gateway.start(input);
    } catch (err) {
      // The client is told it failed, so the generation must not charge. Should the start have
      // reached the server after all, that workflow finds the hold released and charges nothing.
      recordResolution(await inTransaction(pool, (tx) =>
        releaseHold(tx, input.generationId, { code: 'not_started', message: 'The generation could not be started; nothing was charged.', retryable: true }),
      ));
      throw new ServiceUnavailableError('The service could not start the generation; nothing was charged. Retry shortly.', { cause: err });
    }
  };

  return {
    async submit(request: GenerationRequest, principal: Principal, opts: SubmitOptions): Promise<Submitted> {
      const keyed = opts.idempotency && {
        accountId: principal.accountId,
        key: opts.idempotency.key,
        requestHash: requestHash(opts.idempotency.route, opts.idempotency.body),
      };
      if (keyed) {
        // A true repeat is answered without pricing (or fetching) anything again.
        const prior = await findIdempotencyClaim(pool, keyed);
        if (prior?.outcome === 'conflict') throw new IdempotencyConflictError();
        if (prior?.outcome === 'replay') return replay(principal.accountId, prior.generationId, opts);
      }

      const priced = priceRequest(request, principal, opts.door);
      let prepared: PreparedInput | undefined;
      if (priced.kind === 'upscale') {
        if (!deps.prepareInput) throw new ServiceUnavailableError('Upscaling is not available on this instance.');
        prepared = await deps.prepareInput(priced);
        priced.params = { ...priced.params, ...prepared.params };
      }

      const admissionTimer = metrics.admissionDuration.startTimer({ kind: priced.kind });
      const newGeneration = {
        id: priced.generationId, accountId: priced.accountId, apiKeyId: priced.apiKeyId,
        kind: priced.kind, model: priced.model, params: priced.params, prompt: priced.prompt,
      };
      let outcome: HoldOutcome & { admitted: true };
      /** The row as admitted, when the admission returned it (no read needed to answer `queued`). */
      let admittedRow: GenerationRow | undefined;
      if (!keyed && !priced.freeChat) {
        // The common case: one statement, one round trip, its own transaction.
        const a = await admitGeneration(pool, { generation: newGeneration, amountMc: priced.quoteMc });
        if (!a.admitted) throw new InsufficientCreditsError(mcToCredits(a.requiredMc), mcToCredits(a.availableMc));
        outcome = { admitted: true, free: false, model: priced.model, amountMc: priced.quoteMc };
        admittedRow = a.generation;
      } else {
        const admitted = await inTransaction(pool, async (tx): Promise<{ replayOf: string } | { outcome: HoldOutcome & { admitted: true } }> => {
          if (keyed) {
            const claim = await claimIdempotencyKey(tx, { ...keyed, generationId: priced.generationId });
            if (claim.outcome === 'conflict') throw new IdempotencyConflictError();
            if (claim.outcome === 'replay') return { replayOf: claim.generationId };
          }
          const held = await placeHold(tx, {
            generation: newGeneration,
            amountMc: priced.quoteMc,
            ...(priced.freeChat ? { freeChat: priced.freeChat } : {}),
          });
          // Thrown inside the transaction, so a refused request leaves no claim and no generation.
          if (!held.admitted) throw new InsufficientCreditsError(mcToCredits(held.requiredMc), mcToCredits(held.availableMc));
          return { outcome: held };
        });
        if ('replayOf' in admitted) return replay(principal.accountId, admitted.replayOf, opts);
        outcome = admitted.outcome;
      }

      const deadlineMs = deps.deadlines?.[priced.kind];
      const input: GenerationWorkflowInput = {
        ...priced, model: outcome.model, admitted: { free: outcome.free, model: outcome.model }, ...(deadlineMs === undefined ? {} : { deadlineMs }),
      };
      if (prepared) {
        try {
          input.params = { ...input.params, ...(await prepared.store(input.generationId)) };
        } catch (err) {
          recordResolution(await inTransaction(pool, (tx) =>
            releaseHold(tx, input.generationId, { code: 'input_unavailable', message: 'The input could not be stored; nothing was charged.', retryable: true }),
          ));
          throw new ServiceUnavailableError('The input could not be stored; nothing was charged. Retry shortly.', { cause: err });
        }
      }
      const countAdmission = () => {
        metrics.admissions.inc({ kind: input.kind });
        if (!outcome.free) metrics.creditsHeld.inc(mcToCredits(outcome.amountMc));
        opts.log?.info({ generationId: input.generationId, kind: input.kind, model: input.model, heldCredits: mcToCredits(outcome.amountMc), free: outcome.free }, 'generation admitted');
      };
      const waits = !opts.respondAsync && WAITED_KINDS.has(input.kind);
      if (!waits && admittedRow && !prepared) {
        // Nobody waits for the result: answer `queued` as soon as the hold is durable and start the
        // workflow right after. A crash in between leaves a held generation without a workflow,
        // which an Idempotency-Key repeat starts and the reconciler otherwise releases
        // (docs/decisions.md, "A queued answer does not wait for the workflow start").
        admissionTimer();
        countAdmission();
        startInBackground(input, opts);
        return { generation: await viewOf(admittedRow, store), replayed: false };
      }
      await startOrRelease(input);
      admissionTimer();
      countAdmission();
      await waitIfSync(input.generationId, input.kind, opts);
      return { generation: await viewOf(await read(principal.accountId, input.generationId), store), replayed: false };
    },

    /** Resolves once every workflow start still under way has been made (or failed and released): call before closing. */
    async drain(): Promise<void> {
      await Promise.allSettled([...starting]);
    },

    async get(principal: Principal, id: string): Promise<GenerationView> {
      return viewOf(await read(principal.accountId, id), store);
    },

    async list(principal: Principal, q: ListQuery): Promise<{ data: GenerationView[]; nextCursor: string | null }> {
      const before = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
      const rows = await listGenerations(pool, principal.accountId, { limit: q.limit + 1, before, kind: q.kind, status: q.status });
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      return { data: await Promise.all(page.map((g) => viewOf(g, store))), nextCursor: rows.length > q.limit && last ? encodeCursor(last.id) : null };
    },

    /**
     * Cancels a queued or running generation: it fails with code `cancelled` and its hold is
     * released. Cancelling one that is already cancelled answers it again; any other finished
     * generation is a 409 that names its state.
     */
    async cancel(principal: Principal, id: string): Promise<GenerationView> {
      const g = await read(principal.accountId, id);
      if (!TERMINAL.has(g.status)) {
        await gateway.cancel(workflowInputOf(g, deps.deadlines?.[g.kind]), 'cancelled by the client');
        await gateway.awaitFinish(id, deps.cancelWaitMs ?? 10_000);
      }
      const after = await read(principal.accountId, id);
      const cancelled = after.status === 'failed' && after.error?.code === 'cancelled';
      if (TERMINAL.has(after.status) && !cancelled) throw new GenerationFinishedError(after.id, after.status);
      return viewOf(after, store);
    },

    async balance(principal: Principal): Promise<Balance> {
      const c = await getAccountCredits(pool, principal.accountId);
      if (!c) throw new NotFoundError('Account not found.');
      return {
        // What can be spent now: the ledger balance less active holds (DESIGN §4).
        balance: mcToCredits(c.balanceMc - c.heldMc),
        holdsActive: mcToCredits(c.heldMc),
        plan: c.plan,
        trial: { chatCap: c.chatCap, chatUsed: c.chatUsed, chatLeft: Math.max(0, c.chatCap - c.chatUsed) },
      };
    },
  };
}

export type GenerationService = ReturnType<typeof createGenerationService>;

/** Everything a generation's workflow needs, rebuilt from its record (replays, cancels, the reconciler). */
export function workflowInputOf(g: GenerationRow, deadlineMs?: number): GenerationWorkflowInput {
  return {
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    generationId: g.id,
    accountId: g.accountId,
    apiKeyId: g.apiKeyId,
    kind: g.kind,
    model: g.model,
    prompt: g.prompt,
    params: g.params,
    quoteMc: g.quoteMc,
    admitted: { free: g.freeChat, model: g.model },
  };
}
