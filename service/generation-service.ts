import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import type { Door } from '../core/catalogue';
import { getAccountCredits } from '../core/db/accounts';
import type { Plan } from '../core/db/accounts';
import { getGeneration, listGenerations } from '../core/db/generations';
import type { GenerationKind, GenerationRow, GenerationStatus } from '../core/db/generations';
import { claimIdempotencyKey, findIdempotencyClaim } from '../core/db/idempotency';
import { placeHold, releaseHold } from '../core/db/ledger';
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
  log?: { info(obj: object, msg: string): void } | undefined;
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

export interface FollowOptions {
  /** How long to wait at most; past it the generation is answered as it is then. */
  waitMs: number;
  /** Called with the generation in each status it is seen in, the first one included. */
  onStatus?: ((g: GenerationView) => Promise<void> | void) | undefined;
  /** Ends the wait early (the caller went away). */
  signal?: AbortSignal | undefined;
}

/** What a request would cost now, priced exactly as `submit` prices it, with nothing held. */
export interface Quote {
  kind: GenerationKind;
  /** The model that would run (canonical id; the free model while the chat allowance lasts). */
  model: string;
  credits: number;
  /** A chat reply the free allowance would cover. */
  free: boolean;
  /** What would be run after pricing: clamped seconds, resolution, snapped aspect, size… */
  params: Record<string, unknown>;
  /** Credits that can be spent now, and whether they cover the quote. */
  balance: number;
  affordable: boolean;
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
/** How often a followed generation is read while a caller watches it move (queued → running). */
const FOLLOW_POLL_MS = 250;

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
      const admitted = await inTransaction(pool, async (tx): Promise<{ replayOf: string } | { outcome: HoldOutcome & { admitted: true } }> => {
        if (keyed) {
          const claim = await claimIdempotencyKey(tx, { ...keyed, generationId: priced.generationId });
          if (claim.outcome === 'conflict') throw new IdempotencyConflictError();
          if (claim.outcome === 'replay') return { replayOf: claim.generationId };
        }
        const outcome = await placeHold(tx, {
          generation: {
            id: priced.generationId, accountId: priced.accountId, apiKeyId: priced.apiKeyId,
            kind: priced.kind, model: priced.model, params: priced.params, prompt: priced.prompt,
          },
          amountMc: priced.quoteMc,
          ...(priced.freeChat ? { freeChat: priced.freeChat } : {}),
        });
        // Thrown inside the transaction, so a refused request leaves no claim and no generation.
        if (!outcome.admitted) throw new InsufficientCreditsError(mcToCredits(outcome.requiredMc), mcToCredits(outcome.availableMc));
        return { outcome };
      });
      if ('replayOf' in admitted) return replay(principal.accountId, admitted.replayOf, opts);

      const { outcome } = admitted;
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
      await startOrRelease(input);
      admissionTimer();
      metrics.admissions.inc({ kind: input.kind });
      if (!outcome.free) metrics.creditsHeld.inc(mcToCredits(outcome.amountMc));
      opts.log?.info({ generationId: input.generationId, kind: input.kind, model: input.model, heldCredits: mcToCredits(outcome.amountMc), free: outcome.free }, 'generation admitted');
      await waitIfSync(input.generationId, input.kind, opts);
      return { generation: await viewOf(await read(principal.accountId, input.generationId), store), replayed: false };
    },

    /**
     * Prices a request without admitting it: the same `priceRequest` as submit (scope, safety
     * guard, price, model allow-list), then the balance and the free allowance as they are now.
     * Nothing is held, claimed or recorded; an upscale's input is not fetched.
     */
    async quote(request: GenerationRequest, principal: Principal, door: Door): Promise<Quote> {
      const priced = priceRequest(request, principal, door);
      const c = await getAccountCredits(pool, principal.accountId);
      if (!c) throw new NotFoundError('Account not found.');
      const free = priced.freeChat !== undefined && c.chatUsed < c.chatCap;
      const credits = free ? 0 : mcToCredits(priced.quoteMc);
      const balance = mcToCredits(c.balanceMc - c.heldMc);
      const { messages: _messages, imageUrl: _imageUrl, ...params } = priced.params;
      return { kind: priced.kind, model: free ? priced.freeChat!.model : priced.model, credits, free, params, balance, affordable: free || balance >= credits };
    },

    async get(principal: Principal, id: string): Promise<GenerationView> {
      return viewOf(await read(principal.accountId, id), store);
    },

    /**
     * Waits for a generation to finish, up to `waitMs`, and answers it as it then is. The end is
     * pushed by Temporal (the workflow's result), so a plain wait costs no polling. The record is
     * also read every FOLLOW_POLL_MS while a caller watches the status (`onStatus`, e.g. to send
     * progress as it starts running), and once Temporal has nothing to say (a workflow it does not
     * know, such as one whose start was lost) until the deadline.
     */
    async follow(principal: Principal, id: string, opts: FollowOptions): Promise<GenerationView> {
      let g = await read(principal.accountId, id);
      let seen = g.status;
      await opts.onStatus?.(await viewOf(g, store));
      if (TERMINAL.has(g.status)) return viewOf(g, store);
      const watch = new AbortController();
      const forward = () => watch.abort();
      opts.signal?.addEventListener('abort', forward, { once: true });
      let pushed = false;
      const finished = gateway.awaitFinish(id, opts.waitMs, watch.signal).finally(() => {
        pushed = true;
      });
      const deadline = Date.now() + opts.waitMs;
      const tick = () => delay(Math.max(0, Math.min(FOLLOW_POLL_MS, deadline - Date.now())));
      try {
        while (!TERMINAL.has(g.status) && Date.now() < deadline && !watch.signal.aborted) {
          if (pushed) await tick();
          else await (opts.onStatus ? Promise.race([finished, tick()]) : finished);
          g = await read(principal.accountId, id);
          if (g.status !== seen) {
            seen = g.status;
            await opts.onStatus?.(await viewOf(g, store));
          }
        }
        return await viewOf(g, store);
      } finally {
        watch.abort();
        opts.signal?.removeEventListener('abort', forward);
        await finished;
      }
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
