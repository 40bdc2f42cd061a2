import type { Principal } from '../../core/accounts/principal';
import { createSimulator } from '../../core/providers/simulator';
import { createResponses } from '../chat/responses';
import { createAdmission } from './admission';
import { createCancel } from './cancel';
import { createDelete } from './delete';
import { createByWorkflow } from './kinds/by-workflow';
import type { ByWorkflowOptions } from './kinds/by-workflow';
import { createStreamedChat } from './kinds/streamed-chat';
import { createLiveEvents } from './live-events';
import type { LiveEvents } from './live-events';
import { createStartPace } from './start-pace';
import type { StartPaceOptions } from './start-pace';
import type { GenerationGateway } from './temporal-gateway';
import { createPipeline } from './pipeline';
import { createReads } from './read';
import { createRemix } from './remix';
import { createVideoDerivations } from './video-derivations';
import type { GenerationRequest, Serves } from './requests';
import { createWatch } from './watch';
import type { GenerationServiceDeps, SubmitOptions, Submitted, SubmittedMany } from './types';

export type {
  Balance,
  EditSource,
  EditSources,
  GenerationServiceDeps,
  PreparedInput,
  SubmitOptions,
  Submitted,
} from './types';

/**
 * The one generation service behind every door (groups A, B, C, MCP and the dashboard): each
 * door translates its own shapes to and from these calls. Its parts have one job each —
 * pipeline.ts (every submit: rate limit and Idempotency-Key, price, hold, start) with a step object
 * per kind in kinds/ (run by a workflow, or the chat the API streams itself), remix.ts,
 * video-derivations.ts (extensions and edits), read.ts
 * (read and follow), cancel.ts, delete.ts — and money moves only through core/ledger.
 */
export function createGenerationService(deps: GenerationServiceDeps) {
  const { pool, store } = deps;
  const live = createLiveEvents({ pool, ...(deps.log ? { log: deps.log } : {}) });
  const gateway = deps.startPace === undefined ? deps.gateway : pacedGateway(deps.gateway, live, deps.startPace);
  const admission = createAdmission({
    pool,
    gateway,
    store,
    syncWaitMs: deps.syncWaitMs,
    deadlines: deps.deadlines,
    rateWindows: deps.rateWindows,
  });
  const provider = deps.provider ?? createSimulator();
  const serves: Serves = (model, feature) => provider.serves?.(model, feature) ?? false;
  const pipeline = createPipeline({ admission, serves, prepareCallback: deps.prepareCallback });
  const byWorkflow = createByWorkflow({
    pool,
    gateway,
    store,
    admission,
    ...(deps.prepareInput ? { prepareInput: deps.prepareInput } : {}),
  });
  const chat = createStreamedChat({
    pool,
    gateway,
    store,
    submit: pipeline,
    provider,
    deadlineMs: deps.deadlines?.chat,
    ...(deps.log ? { log: deps.log } : {}),
  });
  const reads = createReads({ pool, gateway, store, serves });
  const cancel = createCancel({ pool, gateway, store, cancelWaitMs: deps.cancelWaitMs, deadlines: deps.deadlines });

  /**
   * Prices, admits and starts `count` generations of one request (group B's `n` images; 1
   * elsewhere), all held in one transaction or none. Each is a generation of its own, listed by
   * every door; an Idempotency-Key stands for the whole batch.
   */
  const submitMany = (
    request: GenerationRequest,
    principal: Principal,
    opts: ByWorkflowOptions,
  ): Promise<SubmittedMany> => pipeline(byWorkflow.kind, request, principal, opts);
  const submitOne = async (
    request: GenerationRequest,
    principal: Principal,
    opts: SubmitOptions,
  ): Promise<Submitted> => {
    const { generations, repeated } = await submitMany(request, principal, opts);
    return { generation: generations[0]!, repeated };
  };

  return {
    submit: submitOne,
    /** A new video from a succeeded one with a new prompt (service/generation/remix.ts), submitted like any video. */
    remix: createRemix({ pool, submit: submitOne }),
    /** A succeeded video continued by N seconds, or edited at its length (service/generation/video-derivations.ts). */
    ...createVideoDerivations({ pool, submit: submitOne }),
    submitMany,
    /** Resolves once every workflow start still under way has been made (or failed and released): call before closing. */
    drain: async (): Promise<void> => {
      await Promise.all([byWorkflow.drain(), chat.drain()]);
    },
    /** A chat the API runs itself, its reply streamed as it comes (group B); see service/generation/kinds/streamed-chat.ts. */
    runChat: chat.run,
    runChatChoices: chat.runChoices,
    /** Live streams of one generation's or the account's changes (service/generation/watch.ts). */
    watch: createWatch({ pool, store, live }),
    /** Stops listening for changes: call when closing, after `drain`. */
    close: (): Promise<void> => live.close(),
    /** This process's one LISTEN on the ledger's changes, for other live views (a batch's). */
    live: { subscribe: (...args: Parameters<typeof live.subscribe>) => live.subscribe(...args) },
    /** What the models' providers can do beyond the basics (function tools), as pricing asks. */
    serves,
    cancel,
    /** Deletes a finished generation's files and hides it from every read; its charge stays (service/generation/delete.ts). */
    delete: createDelete({ pool, store }),
    /** Stored responses of group B's Responses API: read, continue, cancel (service/chat/responses.ts). */
    responses: createResponses({ pool, store, cancel }),
    ...reads,
  };
}

export type GenerationService = ReturnType<typeof createGenerationService>;

/** The gateway whose starts are paced per account (service/generation/start-pace.ts). */
function pacedGateway(
  gateway: GenerationGateway,
  live: LiveEvents,
  options: Omit<StartPaceOptions, 'now'>,
): GenerationGateway {
  const pace = createStartPace(live, options);
  return {
    ...gateway,
    async start(input) {
      try {
        await gateway.start(input, pace.delayFor(input.accountId, input.generationId));
      } catch (err) {
        pace.dropped(input.accountId, input.generationId);
        throw err;
      }
    },
  };
}
