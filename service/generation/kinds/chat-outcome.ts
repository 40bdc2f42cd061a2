import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { release, settle } from '../../../core/ledger';
import type { ApiRunResult, GenerationWorkflowInput } from '../../../core/workflow-contract';
import type { GenerationGateway } from '../temporal-gateway';

export interface OutcomeDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  log: (message: string, err: unknown) => void;
  /** Pauses between attempts at starting the workflow while Temporal cannot be reached. */
  retryPausesMs?: readonly number[];
}

/** About half a minute of attempts: a Temporal server restarting is back by then. */
const RETRY_PAUSES_MS = [250, 500, 1_000, 2_000, 4_000, 8_000, 16_000];

/**
 * Where a chat the API ran ends: the outcome is recorded where the reply was produced — the charge
 * (or the release) is durable in the ledger before the client hears the end — then the chat's
 * workflow is started with it, search attributes final, and records it in its first task. Should
 * the ledger be out of reach for now, the workflow settles or releases it (with its retries) from
 * the outcome instead. Should Temporal be out of reach for longer than the retries, the ledger's
 * record stands alone and the log says so.
 */
export function createOutcomeRecorder(deps: OutcomeDeps) {
  /** Workflows still being started, so that a graceful stop waits for them. */
  const reporting = new Set<Promise<void>>();
  const pauses = deps.retryPausesMs ?? RETRY_PAUSES_MS;
  /** Aborted by a graceful stop: the attempt under way is the last. */
  const stopping = new AbortController();

  const startRecord = async (input: GenerationWorkflowInput & { reported: ApiRunResult }): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await deps.gateway.record(input);
      } catch (err) {
        const pause = pauses[attempt];
        if (pause === undefined || stopping.signal.aborted) throw err;
        await sleep(pause, undefined, { signal: stopping.signal }).catch(() => undefined);
        if (stopping.signal.aborted) throw err;
      }
    }
  };

  return {
    /** Records `result` in the ledger, then starts the workflow that records it in Temporal; true when the ledger has it. */
    record: async (input: GenerationWorkflowInput, result: ApiRunResult): Promise<boolean> => {
      let recorded: ApiRunResult['recorded'];
      try {
        const resolution = await (result.ok
          ? settle(deps.pool, { generationId: input.generationId, ...result.output })
          : release(deps.pool, input.generationId, result.error));
        // A reply the API runs is no batch line's: its choices never wait in the ledger.
        if (resolution.outcome !== 'waiting')
          recorded = resolution.outcome === 'already' ? resolution.state : resolution.outcome;
      } catch (err) {
        deps.log(
          `generation ${input.generationId}: the ledger could not record the outcome here; the workflow will`,
          err,
        );
      }
      const durable = recorded !== undefined;
      const reported = startRecord(recordInput(input, result, recorded))
        .catch((err: unknown) =>
          deps.log(
            durable
              ? `generation ${input.generationId}: its workflow could not be started; the ledger has the outcome`
              : `generation ${input.generationId}: neither the ledger nor Temporal could record the outcome; the reconciler releases the hold after its deadline`,
            err,
          ),
        )
        .finally(() => reporting.delete(reported));
      reporting.add(reported);
      if (!durable) await reported;
      return durable;
    },

    /**
     * Resolves once every outcome still on its way to a workflow has been handed over, or its
     * attempt under way has failed (no more are made): call before closing.
     */
    drain: async (): Promise<void> => {
      stopping.abort();
      await Promise.allSettled([...reporting]);
    },
  };
}

/**
 * The workflow input that records a chat: the admitted input with the outcome. What the ledger
 * already keeps (the reply's text, the conversation, the functions) stays out of the history
 * when the ledger has recorded it; the workflow needs all of the output only to settle it itself.
 */
function recordInput(
  input: GenerationWorkflowInput,
  result: ApiRunResult,
  recorded: ApiRunResult['recorded'],
): GenerationWorkflowInput & { reported: ApiRunResult } {
  const { messages: _messages, tools: _tools, response: _response, sampling: _sampling, ...internal } = input.internal;
  if (recorded === undefined) return { ...input, internal, reported: result };
  const reported: ApiRunResult = result.ok
    ? {
        ok: true,
        output: {
          outputKey: result.output.outputKey,
          outputText: null,
          chargeMc: result.output.chargeMc,
          outputTokens: result.output.outputTokens,
        },
        recorded,
      }
    : { ...result, recorded };
  return { ...input, internal, reported };
}
