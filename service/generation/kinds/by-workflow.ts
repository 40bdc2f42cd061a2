import type pg from 'pg';
import { markAfterAdmission, ServiceUnavailableError } from '../../../core/errors';
import type { PricedGeneration } from '../../../core/generation/workflow-input';
import { release } from '../../../core/ledger';
import { metrics } from '../../../core/metrics';
import type { OutputStore } from '../../../core/storage/output-store';
import type { GenerationWorkflowInput } from '../../../core/workflow-contract';
import type { GenerationKind } from '../../../core/vocabulary';
import type { Admission } from '../admission';
import { WAITED_KINDS } from '../admission';
import type { Held, SubmitKind } from '../pipeline';
import type { GenerationGateway } from '../temporal-gateway';
import type { GenerationServiceDeps, PreparedInput, SubmitOptions, SubmittedMany } from '../types';
import { createAdmittedViews } from './admitted-view';
import { createInputFiles } from './input-files';

export interface ByWorkflowDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  admission: Admission;
  prepareInput?: GenerationServiceDeps['prepareInput'];
}

/** Options of a submit run by its workflow: `count` generations of one request (group B's `n` images). */
export type ByWorkflowOptions = SubmitOptions & { count?: number };

/**
 * Kinds admitted `running`: nothing waits between their hold and their run (no slot), so the
 * admission records it and the workflow starts with that status, with no step of its own to mark
 * it. Chats through the activity path keep their `queued` (a background response answers so).
 */
const ADMITTED_RUNNING: ReadonlySet<GenerationKind> = new Set(['image', 'upscale']);

/** What the work before the hold hands to the start. */
interface Ready {
  /** The request's input image, fetched and checked, to store under each generation. */
  prepared: PreparedInput | undefined;
  /** Ends the admission's measure (from the hold to the workflow's start). */
  admitted: () => void;
}

/**
 * Images, videos, upscales and the chats a workflow runs (group A's, a background response): held,
 * then their workflow started, which from then on owns the outcome — settle or release, exactly
 * once. Answered at once with `queued` when nobody waits for the result, else once an image or
 * chat has finished (bounded).
 */
export function createByWorkflow(deps: ByWorkflowDeps) {
  const { pool, gateway, admission } = deps;
  const inputs = createInputFiles(deps);
  const views = createAdmittedViews(deps);

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

  /** Workflow starts made after the answer (see `start`), so that a graceful stop waits for them. */
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

  /** Starts every held generation, each either started or given back at once, and answers once they are. */
  const startAll = async (held: Held, ready: Ready, opts: SubmitOptions): Promise<SubmittedMany> => {
    const started = await Promise.allSettled(
      held.inputs.map(async (input) => {
        if (ready.prepared) await inputs.store(input, ready.prepared);
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
    ready.admitted();
    await Promise.all(held.inputs.map((input) => admission.waitIfSync(input.generationId, input.kind, opts)));
    return {
      generations: await Promise.all(held.inputs.map((input) => views.current(input, held.createdAt, opts))),
      repeated: false,
    };
  };

  const kind: SubmitKind<ByWorkflowOptions, Ready, SubmittedMany> = {
    async beforeHold(priced: PricedGeneration[], request, principal, opts) {
      for (const p of priced) if (ADMITTED_RUNNING.has(p.kind)) p.admittedRunning = true;
      if (priced.length > 1) {
        const firstId = priced[0]!.generationId;
        priced.forEach((p, index) => (p.internal = { ...p.internal, siblings: { firstId, index } }));
      }
      // Kept with the generation, so that a workflow started again from its record keeps it too.
      if (opts.deadlineMs !== undefined)
        for (const p of priced) p.internal = { ...p.internal, clientDeadlineMs: opts.deadlineMs };
      const prepared = await inputs.prepare(priced[0]!, request, principal, opts.inputFile);
      for (const p of priced.slice(1)) p.params = { ...p.params, ...prepared?.params };
      return { prepared, admitted: metrics.admissionDuration.startTimer({ kind: priced[0]!.kind }) };
    },

    async start(held, ready, opts) {
      const only = held.inputs.length === 1 ? held.inputs[0]! : undefined;
      if (only && !ready.prepared && (opts.respondAsync || !WAITED_KINDS.has(only.kind))) {
        // Nobody waits for the result: answer `queued` as soon as the hold is durable and start the
        // workflow right after. A crash in between leaves a held generation without a workflow,
        // which an Idempotency-Key repeat starts and the reconciler otherwise releases
        // (docs/decisions/0011-workflow-start.md).
        ready.admitted();
        startInBackground(only, opts);
        return { generations: [await views.queued(only, held.createdAt, opts)], repeated: false };
      }
      // Admitted: an error now must not make a client send the request again (and hold again).
      return startAll(held, ready, opts).catch((err: unknown) => {
        throw markAfterAdmission(err);
      });
    },

    answerRepeat: (first) => first,
  };

  return {
    kind,
    /** Resolves once every workflow start still under way has been made (or failed and released): call before closing. */
    drain: async (): Promise<void> => {
      await Promise.allSettled([...starting]);
    },
  };
}
