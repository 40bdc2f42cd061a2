import type pg from 'pg';
import { classifyDbError } from '../../core/db/errors';
import { keepInternal } from '../../core/db/generations';
import { InvalidRequestError, markAfterAdmission, ServiceUnavailableError } from '../../core/errors';
import { viewOf } from '../../core/generation/view';
import type { GenerationView } from '../../core/generation/view';
import { release } from '../../core/ledger';
import { metrics } from '../../core/metrics';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';
import type { GenerationWorkflowInput } from '../../core/workflow-contract';
import type { GenerationKind } from '../../core/vocabulary';
import type { Admission } from './admission';
import { WAITED_KINDS } from './admission';
import { readOwn } from './lookup';
import { priceRequest } from './requests';
import type { EditInput, GenerationRequest, PricedGeneration, Serves } from './requests';
import type { GenerationGateway } from './temporal-gateway';
import type {
  EditSource,
  EditSources,
  GenerationServiceDeps,
  PreparedInput,
  SubmitOptions,
  SubmittedMany,
} from './types';

export interface SubmitDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  admission: Admission;
  /** What the models' providers can do beyond the basics (function tools). */
  serves: Serves;
  prepareInput?: GenerationServiceDeps['prepareInput'];
}

/**
 * Kinds admitted `running`: nothing waits between their hold and their run (no slot), so the
 * admission records it and the workflow starts with that status, with no step of its own to mark
 * it. Chats through the activity path keep their `queued` (a background response answers so).
 */
const ADMITTED_RUNNING: ReadonlySet<GenerationKind> = new Set(['image', 'upscale']);

/**
 * Submitting: price, fetch an input if the request has one, admit (the ledger holds), start the
 * workflow, and answer — at once with `queued` when nobody waits for the result, else once an
 * image or chat has finished (bounded). Only an admitted generation gets a workflow, which from
 * then on owns the outcome: settle or release, exactly once.
 */
export function createSubmit(deps: SubmitDeps) {
  const { pool, gateway, store, admission } = deps;

  /** Starts an admitted generation's workflow; if that fails, the hold goes back at once. */
  const startOrRelease = async (input: GenerationWorkflowInput): Promise<void> => {
    try {
      await gateway.start(input);
    } catch (err) {
      // The client is told it failed, so the generation must not charge. Should the start have
      // reached the server after all, that workflow finds the hold released and charges nothing.
      await release(pool, input.generationId, {
        code: 'not_started',
        message: 'The generation could not be started; nothing was charged.',
        retryable: true,
      });
      throw new ServiceUnavailableError(
        'The service could not start the generation; nothing was charged. Retry shortly.',
        { cause: err },
      );
    }
  };

  /** Workflow starts made after the answer (see submitMany), so that a graceful stop waits for them. */
  const starting = new Set<Promise<void>>();
  const startInBackground = (input: GenerationWorkflowInput, opts: SubmitOptions): void => {
    const started: Promise<void> = startOrRelease(input)
      .catch((err: unknown) => {
        // Released already: the generation reads `failed` with code `not_started`, nothing charged.
        opts.log?.warn?.(
          { generationId: input.generationId, err },
          'generation workflow could not be started; hold released',
        );
      })
      .finally(() => starting.delete(started));
    starting.add(started);
  };

  /** An edit's inputs as sources to fetch or bytes; an earlier output of the account is read from the store. */
  const editSources = async (principal: Principal, request: GenerationRequest): Promise<EditSources | undefined> => {
    if (request.kind !== 'image' || !request.edit) return undefined;
    const sourceOf = async (input: EditInput, field: string, which: string): Promise<EditSource> => {
      if (!('generation' in input)) return input;
      const g = await readOwn(pool, principal.accountId, input.generation).catch(() => undefined);
      const data = g?.kind === 'image' && g.outputKey ? await store.get(g.outputKey) : undefined;
      if (!data)
        throw new InvalidRequestError(
          `${field}${which}: '${input.generation}' is not a succeeded image generation of this account.`,
          field,
        );
      return { file: data };
    };
    const { images, mask } = request.edit;
    return {
      images: await Promise.all(images.map((input, i) => sourceOf(input, 'editImages', ` (image ${i + 1})`))),
      ...(mask ? { mask: await sourceOf(mask, 'editMask', '') } : {}),
    };
  };

  /** Fetches and checks an input (upscale image, video reference frame, an edit's images) before anything is held. */
  const prepare = async (
    priced: PricedGeneration,
    uploaded: Buffer | undefined,
    edit: EditSources | undefined,
  ): Promise<PreparedInput | undefined> => {
    const needsInput =
      edit !== undefined ||
      priced.kind === 'upscale' ||
      (priced.kind === 'video' && (priced.params.imageUrl !== undefined || uploaded !== undefined));
    if (!needsInput) return undefined;
    if (!deps.prepareInput)
      throw new ServiceUnavailableError('Fetching input images is not available on this instance.');
    const prepared = await deps.prepareInput(priced, uploaded, edit);
    priced.params = { ...priced.params, ...prepared.params };
    return prepared;
  };

  /**
   * Stores a prepared input under the admitted generation, and where it is with the generation's
   * record (a workflow started again from the record finds it); the hold goes back if that fails.
   */
  const storeInput = async (input: GenerationWorkflowInput, prepared: PreparedInput): Promise<void> => {
    try {
      const kept = await prepared.store(input.generationId);
      await keepInternal(pool, input.generationId, kept);
      input.internal = { ...input.internal, ...kept };
    } catch (err) {
      await release(pool, input.generationId, {
        code: 'input_unavailable',
        message: 'The input could not be stored; nothing was charged.',
        retryable: true,
      });
      throw new ServiceUnavailableError('The input could not be stored; nothing was charged. Retry shortly.', {
        cause: err,
      });
    }
  };

  /** The generation as admission wrote it: queued (or running), nothing charged, no output yet. */
  const queuedView = (input: GenerationWorkflowInput, createdAt: Date, opts: SubmitOptions): Promise<GenerationView> =>
    viewOf(
      {
        id: input.generationId,
        accountId: input.accountId,
        apiKeyId: input.apiKeyId,
        customerId: opts.customer ?? null,
        kind: input.kind,
        model: input.model,
        status: input.admittedRunning ? 'running' : 'queued',
        params: input.params,
        internal: input.internal,
        prompt: input.prompt,
        quoteMc: input.quoteMc,
        chargedMc: 0,
        freeChat: input.admitted.free,
        outputKey: null,
        outputText: null,
        previewKeys: {},
        error: null,
        createdAt,
        startedAt: null,
        finishedAt: null,
        progressPercent: null,
        queuePosition: null,
        measuredSeconds: null,
        provider: null,
        batchId: null,
        batchLine: null,
      },
      store,
    );

  /**
   * The generation just admitted, as the database has it now. Its workflow has started, so it will
   * run and be charged: a read that fails now (PostgreSQL gone for a moment) must not become a 503
   * saying nothing was charged, which a client without a key would answer by paying twice. It is
   * answered as admitted instead, queued, for the client to poll.
   */
  const admittedView = async (
    input: GenerationWorkflowInput,
    createdAt: Date,
    opts: SubmitOptions,
  ): Promise<GenerationView> => {
    try {
      return await viewOf(await readOwn(pool, input.accountId, input.generationId), store);
    } catch (err) {
      if (classifyDbError(err) !== 'transient') throw err;
      return queuedView(input, createdAt, opts);
    }
  };

  /**
   * Prices, admits and starts `count` generations of one request (group B's `n` images; 1
   * elsewhere), all held in one transaction or none. Each is a generation of its own, listed by
   * every door; an Idempotency-Key stands for the whole batch.
   */
  const submitMany = async (
    request: GenerationRequest,
    principal: Principal,
    opts: SubmitOptions & { count?: number },
  ): Promise<SubmittedMany> => {
    await admission.limitCustomer(principal, opts);
    const prior = await admission.priorClaim(principal, opts);
    if (prior !== undefined) return admission.replay(principal.accountId, prior, opts);

    const count = opts.count ?? 1;
    const priced = Array.from({ length: count }, () => priceRequest(request, principal, opts.door, deps.serves));
    for (const p of priced) if (ADMITTED_RUNNING.has(p.kind)) p.admittedRunning = true;
    if (count > 1) {
      const firstId = priced[0]!.generationId;
      priced.forEach((p, index) => (p.internal = { ...p.internal, siblings: { firstId, index } }));
    }
    // Kept with the generation, so that a workflow started again from its record keeps it too.
    if (opts.deadlineMs !== undefined)
      for (const p of priced) p.internal = { ...p.internal, clientDeadlineMs: opts.deadlineMs };
    const prepared = await prepare(priced[0]!, opts.inputFile, await editSources(principal, request));
    for (const p of priced.slice(1)) p.params = { ...p.params, ...prepared?.params };

    const admissionTimer = metrics.admissionDuration.startTimer({ kind: priced[0]!.kind });
    const admitted = await admission.admit(priced, principal, opts);
    if ('replayOf' in admitted) return admission.replay(principal.accountId, admitted.replayOf, opts);
    const only = admitted.inputs.length === 1 ? admitted.inputs[0]! : undefined;
    if (only && !prepared && (opts.respondAsync || !WAITED_KINDS.has(only.kind))) {
      // Nobody waits for the result: answer `queued` as soon as the hold is durable and start the
      // workflow right after. A crash in between leaves a held generation without a workflow,
      // which an Idempotency-Key repeat starts and the reconciler otherwise releases
      // (docs/decisions/0011-workflow-start.md).
      admissionTimer();
      startInBackground(only, opts);
      return { generations: [await queuedView(only, admitted.createdAt, opts)], replayed: false };
    }
    try {
      // Each either starts or gives its hold back at once; none is left held without a workflow.
      const started = await Promise.allSettled(
        admitted.inputs.map(async (input) => {
          if (prepared) await storeInput(input, prepared);
          await startOrRelease(input);
        }),
      );
      const failures = started.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failures.length === started.length) throw failures[0]!.reason;
      if (failures.length > 0) {
        throw new ServiceUnavailableError(
          `${failures.length} of ${started.length} generations could not be started and were not charged; the others run and are listed by GET /api/v1/generations.`,
        );
      }
      admissionTimer();
      await Promise.all(admitted.inputs.map((input) => admission.waitIfSync(input.generationId, input.kind, opts)));
      return {
        generations: await Promise.all(admitted.inputs.map((input) => admittedView(input, admitted.createdAt, opts))),
        replayed: false,
      };
    } catch (err) {
      // Admitted: an error now must not make a client send the request again (and hold again).
      throw markAfterAdmission(err);
    }
  };

  return {
    submitMany,
    /** Resolves once every workflow start still under way has been made (or failed and released): call before closing. */
    drain: async (): Promise<void> => {
      await Promise.allSettled([...starting]);
    },
  };
}
