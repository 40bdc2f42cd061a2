import type pg from 'pg';
import { classifyDbError } from '../../../core/db/errors';
import { readOwn } from '../../../core/generation/lookup';
import { viewOf } from '../../../core/generation/view';
import type { GenerationView } from '../../../core/generation/view';
import type { OutputStore } from '../../../core/storage/output-store';
import type { GenerationWorkflowInput } from '../../../core/workflow-contract';
import type { SubmitOptions } from '../types';

/** How a just admitted generation is answered: as the ledger wrote it, or as the database has it now. */
export function createAdmittedViews({ pool, store }: { pool: pg.Pool; store: OutputStore }) {
  /** The generation as admission wrote it: queued (or running), nothing charged, no output yet. */
  const queued = (input: GenerationWorkflowInput, createdAt: Date, opts: SubmitOptions): Promise<GenerationView> =>
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
        servedBy: null,
        batchId: null,
        batchLine: null,
        tokenUsage: null,
      },
      store,
    );

  return {
    queued,

    /**
     * The generation just admitted, as the database has it now. Its workflow has started, so it will
     * run and be charged: a read that fails now (PostgreSQL gone for a moment) must not become a 503
     * saying nothing was charged, which a client without a key would answer by paying twice. It is
     * answered as admitted instead, queued, for the client to poll.
     */
    async current(input: GenerationWorkflowInput, createdAt: Date, opts: SubmitOptions): Promise<GenerationView> {
      try {
        return await viewOf(await readOwn(pool, input.accountId, input.generationId), store);
      } catch (err) {
        if (classifyDbError(err) !== 'transient') throw err;
        return queued(input, createdAt, opts);
      }
    },
  };
}
