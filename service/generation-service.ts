import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import { getAccountCredits } from '../core/db/accounts';
import type { Plan } from '../core/db/accounts';
import { classifyDbError } from '../core/db/errors';
import { getGeneration, listBatch, listGenerations } from '../core/db/generations';
import type { GenerationRow } from '../core/db/generations';
import { findIdempotencyClaim } from '../core/db/idempotency';
import { releaseHold } from '../core/db/ledger';
import { inTransaction } from '../core/db/pool';
import {
  GenerationFinishedError, GenerationStreamingError, IdempotencyConflictError, markAfterAdmission, NotFoundError, ServiceUnavailableError,
} from '../core/errors';
import { requestHash } from '../core/idempotency';
import { GENERATION_ID_PATTERN } from '../core/ids';
import { metrics, recordResolution } from '../core/metrics';
import { mcToCredits } from '../core/money';
import type { Principal } from '../core/principal';
import { createSimulator } from '../core/providers/simulator';
import type { Provider } from '../core/providers/types';
import type { OutputStore } from '../core/storage';
import type { GenerationWorkflowInput } from '../workflows/definitions';
import { admit } from './admission';
import type { KeyedRequest } from './admission';
import { createChatRuns } from './chat-runs';
import { decodeCursor, encodeCursor } from './cursor';
import { priceRequest } from './requests';
import type { GenerationRequest, PricedGeneration } from './requests';
import type { GenerationGateway } from './temporal-gateway';
import { viewOf } from './records';
import type { GenerationView } from './records';
import type { Door, GenerationKind, GenerationStatus } from '../core/vocabulary';

export interface GenerationServiceDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  /** How long a submit waits for an image or chat to finish before answering its current state. */
  syncWaitMs: number;
  /** How long a cancel waits for the workflow to release the hold before answering. */
  cancelWaitMs?: number;
  /** Per kind, how long a generation may stay in flight before it fails with `timeout`. */
  deadlines?: Partial<Record<GenerationKind, number>>;
  /** Fetches and checks an input image (upscale, image-to-video) before anything is held; without it those are refused. */
  prepareInput?: (priced: PricedGeneration, uploaded?: Buffer) => Promise<PreparedInput>;
  /** Runs the chats the API streams itself (group B); the simulator when not given. */
  provider?: Provider;
  /** Where trouble that no client hears of is told (e.g. a report Temporal did not take). */
  log?: (message: string, err: unknown) => void;
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
  /** An input image sent with the request itself (group B's `input_reference` file), instead of a URL. */
  inputFile?: Buffer | undefined;
  /** The request's logger: admission lines carry its request id next to the generation id. */
  log?: { info(obj: object, msg: string): void; warn?(obj: object, msg: string): void } | undefined;
}

export interface Submitted {
  generation: GenerationView;
  /** True when an Idempotency-Key repeat returned an earlier generation. */
  replayed: boolean;
}

export interface SubmittedMany {
  /** In request order. */
  generations: GenerationView[];
  replayed: boolean;
}

export interface ListQuery {
  limit: number;
  /** The opaque `next_cursor` of the previous page (group A). */
  cursor?: string | undefined;
  /** The previous page's last generation id, as OpenAI's lists take `after` (group B). */
  after?: string | undefined;
  kind?: GenerationKind | undefined;
  status?: GenerationStatus | undefined;
  order?: 'asc' | 'desc' | undefined;
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
/** How often `follow` re-reads a record while a caller watches its status. */
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
  const deadlineOf = (kind: GenerationKind): number | undefined => deps.deadlines?.[kind];

  const read = async (accountId: string, id: string): Promise<GenerationRow> => {
    const g = GENERATION_ID_PATTERN.test(id) ? await getGeneration(pool, accountId, id) : undefined;
    if (!g) throw new NotFoundError(`Generation '${id}' not found.`, { param: 'id' });
    return g;
  };

  const waitIfSync = async (id: string, kind: GenerationKind, opts: SubmitOptions): Promise<void> => {
    if (!opts.respondAsync && WAITED_KINDS.has(kind)) await gateway.awaitFinish(id, deps.syncWaitMs);
  };

  /** The generations of an admitted request, in request order: one, or a batch (group B's `n`). */
  const readAll = async (accountId: string, firstId: string): Promise<GenerationRow[]> => {
    const batch = await listBatch(pool, accountId, firstId);
    return batch.length > 0 ? batch : [await read(accountId, firstId)];
  };

  /** An Idempotency-Key repeat: the first request's generations, whose workflows are made sure of. */
  const replay = async (accountId: string, firstId: string, opts: SubmitOptions): Promise<SubmittedMany> => {
    const rows = await readAll(accountId, firstId);
    // The first request may have died between its hold and its start; starting again is harmless.
    // If Temporal cannot be reached, the hold stays: the workflow may well be running already, and
    // the client's next repeat (or the reconciler, if it never started) settles what happens.
    await Promise.all(rows.filter((g) => !TERMINAL.has(g.status)).map((g) => gateway.start(workflowInputOf(g, deadlineOf(g.kind)))))
      .catch((err: unknown) => {
        throw new ServiceUnavailableError('The generation could not be resumed just now; retry shortly with the same Idempotency-Key.', { cause: err });
      });
    await Promise.all(rows.map((g) => waitIfSync(g.id, g.kind, opts)));
    const after = await readAll(accountId, firstId);
    return { generations: await Promise.all(after.map((g) => viewOf(g, store))), replayed: true };
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

  /** The claim on an Idempotency-Key, or undefined without one. */
  const keyedOf = (principal: Principal, opts: SubmitOptions): KeyedRequest | undefined =>
    opts.idempotency && {
      accountId: principal.accountId,
      key: opts.idempotency.key,
      requestHash: requestHash(opts.idempotency.route, opts.idempotency.body),
    };

  /** A live claim on the key: a true repeat is answered without pricing (or fetching) anything again. */
  const priorClaim = async (keyed: KeyedRequest | undefined): Promise<string | undefined> => {
    if (!keyed) return undefined;
    const prior = await findIdempotencyClaim(pool, keyed);
    if (prior?.outcome === 'conflict') throw new IdempotencyConflictError();
    return prior?.outcome === 'replay' ? prior.generationId : undefined;
  };

  /** Fetches and checks an input (upscale image, video reference frame) before anything is held. */
  const prepare = async (priced: PricedGeneration, uploaded: Buffer | undefined): Promise<PreparedInput | undefined> => {
    const needsInput = priced.kind === 'upscale' || (priced.kind === 'video' && (typeof priced.params.imageUrl === 'string' || uploaded !== undefined));
    if (!needsInput) return undefined;
    if (!deps.prepareInput) throw new ServiceUnavailableError('Fetching input images is not available on this instance.');
    const prepared = await deps.prepareInput(priced, uploaded);
    priced.params = { ...priced.params, ...prepared.params };
    return prepared;
  };

  /** Stores a prepared input under the admitted generation; the hold goes back if that fails. */
  const storeInput = async (input: GenerationWorkflowInput, prepared: PreparedInput): Promise<void> => {
    try {
      input.params = { ...input.params, ...(await prepared.store(input.generationId)) };
    } catch (err) {
      recordResolution(await inTransaction(pool, (tx) =>
        releaseHold(tx, input.generationId, { code: 'input_unavailable', message: 'The input could not be stored; nothing was charged.', retryable: true }),
      ));
      throw new ServiceUnavailableError('The input could not be stored; nothing was charged. Retry shortly.', { cause: err });
    }
  };

  /** Every generation carries its kind's deadline (DESIGN §5: nothing in flight forever). */
  const withDeadline = (input: GenerationWorkflowInput): GenerationWorkflowInput => {
    const deadlineMs = deadlineOf(input.kind);
    if (deadlineMs !== undefined) input.deadlineMs = deadlineMs;
    return input;
  };

  /** Counts and logs an admitted generation (its workflow started). */
  const admitted_ = (input: GenerationWorkflowInput, opts: SubmitOptions): void => {
    const free = input.admitted?.free ?? false;
    metrics.admissions.inc({ kind: input.kind });
    if (!free) metrics.creditsHeld.inc(mcToCredits(input.quoteMc));
    opts.log?.info({ generationId: input.generationId, kind: input.kind, model: input.model, heldCredits: free ? 0 : mcToCredits(input.quoteMc), free }, 'generation admitted');
  };

  /**
   * The generation just admitted, as the database has it now. Its workflow has started, so it will
   * run and be charged: a read that fails now (PostgreSQL gone for a moment) must not become a 503
   * saying nothing was charged, which a client without a key would answer by paying twice. It is
   * answered as admitted instead, queued, for the client to poll.
   */
  const admittedView = async (input: GenerationWorkflowInput, createdAt: Date): Promise<GenerationView> => {
    try {
      return await viewOf(await read(input.accountId, input.generationId), store);
    } catch (err) {
      if (classifyDbError(err) !== 'transient') throw err;
      return queuedView(input, createdAt);
    }
  };

  /** The generation as admission wrote it: queued, nothing charged, no output yet. */
  const queuedView = (input: GenerationWorkflowInput, createdAt: Date): Promise<GenerationView> => viewOf({
    id: input.generationId, accountId: input.accountId, apiKeyId: input.apiKeyId, kind: input.kind, model: input.model,
    status: 'queued', params: input.params, prompt: input.prompt, quoteMc: input.quoteMc, chargedMc: 0, freeChat: input.admitted?.free ?? false,
    outputKey: null, outputText: null, error: null, createdAt, startedAt: null, finishedAt: null,
  }, store);

  /**
   * Prices, admits and starts `count` generations of one request (group B's `n` images; 1
   * elsewhere), all held in one transaction or none. Each is a generation of its own, listed by
   * every door; an Idempotency-Key stands for the whole batch.
   */
  const submitMany = async (request: GenerationRequest, principal: Principal, opts: SubmitOptions & { count?: number }): Promise<SubmittedMany> => {
    const keyed = keyedOf(principal, opts);
    const prior = await priorClaim(keyed);
    if (prior !== undefined) return replay(principal.accountId, prior, opts);

    const count = opts.count ?? 1;
    const priced = Array.from({ length: count }, () => priceRequest(request, principal, opts.door));
    if (count > 1) {
      const batch = priced[0]!.generationId;
      priced.forEach((p, index) => (p.params = { ...p.params, batch, batchIndex: index }));
    }
    const prepared = await prepare(priced[0]!, opts.inputFile);
    for (const p of priced.slice(1)) p.params = { ...p.params, ...prepared?.params };

    const admissionTimer = metrics.admissionDuration.startTimer({ kind: priced[0]!.kind });
    const admitted = await admit(pool, priced, keyed);
    if ('replayOf' in admitted) return replay(principal.accountId, admitted.replayOf, opts);
    for (const input of admitted.inputs) withDeadline(input);
    const only = admitted.inputs.length === 1 ? admitted.inputs[0]! : undefined;
    if (only && !prepared && (opts.respondAsync || !WAITED_KINDS.has(only.kind))) {
      // Nobody waits for the result: answer `queued` as soon as the hold is durable and start the
      // workflow right after. A crash in between leaves a held generation without a workflow,
      // which an Idempotency-Key repeat starts and the reconciler otherwise releases
      // (docs/decisions.md, "A queued answer does not wait for the workflow start").
      admissionTimer();
      admitted_(only, opts);
      startInBackground(only, opts);
      return { generations: [await queuedView(only, admitted.createdAt)], replayed: false };
    }
    try {
      // Each either starts or gives its hold back at once; none is left held without a workflow.
      const started = await Promise.allSettled(admitted.inputs.map(async (input) => {
        if (prepared) await storeInput(input, prepared);
        await startOrRelease(input);
      }));
      const failures = started.filter((r) => r.status === 'rejected');
      if (failures.length === started.length) throw (failures[0] as PromiseRejectedResult).reason;
      if (failures.length > 0) {
        throw new ServiceUnavailableError(`${failures.length} of ${started.length} generations could not be started and were not charged; the others run and are listed by GET /api/v1/generations.`);
      }
      admissionTimer();
      for (const input of admitted.inputs) admitted_(input, opts);
      await Promise.all(admitted.inputs.map((input) => waitIfSync(input.generationId, input.kind, opts)));
      return { generations: await Promise.all(admitted.inputs.map((input) => admittedView(input, admitted.createdAt))), replayed: false };
    } catch (err) {
      // Admitted: an error now must not make a client send the request again (and hold again).
      throw markAfterAdmission(err);
    }
  };

  const chat = createChatRuns({
    pool, gateway, store, provider: deps.provider ?? createSimulator(),
    ...(deps.log ? { log: deps.log } : {}),
    async replayOf(principal, opts) {
      const prior = await priorClaim(keyedOf(principal, opts));
      return prior === undefined ? undefined : (await replay(principal.accountId, prior, opts)).generations[0]!;
    },
    async admit(priced, principal, opts) {
      const admitted = await admit(pool, [priced], keyedOf(principal, opts));
      if ('replayOf' in admitted) return { replay: (await replay(principal.accountId, admitted.replayOf, opts)).generations[0]! };
      const input = withDeadline(admitted.inputs[0]!);
      admitted_(input, opts);
      return { input };
    },
  });

  return {
    async submit(request: GenerationRequest, principal: Principal, opts: SubmitOptions): Promise<Submitted> {
      const { generations, replayed } = await submitMany(request, principal, opts);
      return { generation: generations[0]!, replayed };
    },

    submitMany,

    /** A chat the API runs itself, its reply streamed as it comes (group B); see service/chat-runs.ts. */
    runChat: chat.run,
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

    /** Resolves once every workflow start still under way has been made (or failed and released): call before closing. */
    async drain(): Promise<void> {
      await Promise.allSettled([...starting]);
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
    /** A generation with its output file's bytes (once it has succeeded), for doors that serve the file itself. */
    async output(principal: Principal, id: string): Promise<{ generation: GenerationView; file?: { data: Buffer; contentType: string } }> {
      const g = await read(principal.accountId, id);
      const generation = await viewOf(g, store);
      if (g.status !== 'succeeded' || !g.outputKey) return { generation };
      const data = await store.get(g.outputKey);
      return data ? { generation, file: { data, contentType: contentTypeOf(g.outputKey) } } : { generation };
    },

    async list(principal: Principal, q: ListQuery): Promise<{ data: GenerationView[]; nextCursor: string | null }> {
      const before = q.cursor === undefined ? q.after : decodeCursor(q.cursor);
      const rows = await listGenerations(pool, principal.accountId, { limit: q.limit + 1, before, kind: q.kind, status: q.status, order: q.order });
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      return { data: await Promise.all(page.map((g) => viewOf(g, store))), nextCursor: rows.length > q.limit && last ? encodeCursor(last.id) : null };
    },

    /**
     * Cancels a queued or running generation: it fails with code `cancelled` and its hold is
     * released. Cancelling one that is already cancelled answers it again; any other finished
     * generation is a 409 that names its state, and so is a reply the API is streaming (its
     * client stops it by closing the connection, and pays for the tokens it was sent).
     */
    async cancel(principal: Principal, id: string): Promise<GenerationView> {
      const g = await read(principal.accountId, id);
      if (!TERMINAL.has(g.status) && isApiRun(g)) throw new GenerationStreamingError(g.id);
      if (!TERMINAL.has(g.status)) {
        await gateway.cancel(workflowInputOf(g, deadlineOf(g.kind)), 'cancelled by the client');
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

const CONTENT_TYPES: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp', webm: 'video/webm', mp4: 'video/mp4', txt: 'text/plain; charset=utf-8' };

function contentTypeOf(key: string): string {
  return CONTENT_TYPES[key.slice(key.lastIndexOf('.') + 1)] ?? 'application/octet-stream';
}

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
    // A chat the API runs itself stays one: its workflow waits for the API's report.
    ...(isApiRun(g) ? { apiRun: { deadlineMs: g.params.apiRunDeadlineMs } } : {}),
  };
}

/** A chat the API runs itself (a group B reply): its workflow waits for the API's report. */
function isApiRun(g: GenerationRow): g is GenerationRow & { params: { apiRunDeadlineMs: number } } {
  return typeof g.params.apiRunDeadlineMs === 'number';
}
