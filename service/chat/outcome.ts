import type pg from 'pg';
import { release, settle } from '../../core/ledger';
import type { ApiRunResult, GenerationWorkflowInput } from '../../core/workflow-contract';
import type { GenerationGateway } from '../generation/temporal-gateway';

export interface OutcomeDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  log: (message: string, err: unknown) => void;
}

/**
 * Where a chat the API ran ends: the outcome is recorded where the reply was produced — the charge
 * (or the release) is durable in the ledger before the client hears the end — then handed to the
 * workflow, whose own settle or release finds the hold moved and records the outcome in Temporal.
 * Should the ledger be out of reach for now, the workflow settles it (with its retries) from the
 * report; should the report not arrive, the workflow's deadline comes and its release finds the charge.
 */
export function createOutcomeRecorder(deps: OutcomeDeps) {
  /** Outcomes on their way to their workflows, so that a graceful stop waits for them. */
  const reporting = new Set<Promise<void>>();

  return {
    /** Records `result` and reports it once `started` (the workflow's start) has resolved; true when the ledger has it. */
    record: async (
      input: GenerationWorkflowInput,
      started: Promise<unknown>,
      result: ApiRunResult,
    ): Promise<boolean> => {
      let recorded: ApiRunResult['recorded'];
      try {
        const resolution = await (result.ok
          ? settle(deps.pool, { generationId: input.generationId, ...result.output })
          : release(deps.pool, input.generationId, result.error));
        recorded = resolution.outcome === 'already' ? resolution.state : resolution.outcome;
      } catch (err) {
        deps.log(
          `generation ${input.generationId}: the ledger could not record the outcome here; the workflow will`,
          err,
        );
      }
      const durable = recorded !== undefined;
      const reported = started
        .then(() => deps.gateway.reportApiRun(input, { ...result, ...(durable ? { recorded } : {}) }))
        .catch((err: unknown) =>
          deps.log(
            `generation ${input.generationId}: the workflow could not be told the outcome; its deadline will close it`,
            err,
          ),
        )
        .finally(() => reporting.delete(reported));
      reporting.add(reported);
      if (!durable) await reported;
      return durable;
    },

    /** Resolves once every outcome still on its way to a workflow has been handed over: call before closing. */
    drain: async (): Promise<void> => {
      await Promise.allSettled([...reporting]);
    },
  };
}

export type OutcomeRecorder = ReturnType<typeof createOutcomeRecorder>;
