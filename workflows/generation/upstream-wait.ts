import { CancellationScope, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { GenerationActivities } from '../../activities';
import type { ProviderRun } from '../../activities/generation/provider';
import { providerTaskQueueOf } from '../../core/workflow-contract';
import type { RunOutput } from '../../core/vocabulary';

/**
 * A provider run that holds no worker slot while its upstream works (a queued video): submit, wait
 * for the upstream's webhook or the slow poll (activities/generation/upstream-wait.ts), then collect the
 * output as any run does. A provider that finishes in the one call (the simulator) answers its
 * output at once. A wait that ends in failure or cancellation stops the upstream's job: that step
 * is put in `compensations`, which the workflow awaits before it ends.
 */
export async function runWithoutHoldingSlot(
  provider: GenerationActivities,
  job: ProviderRun,
  compensations: Promise<unknown>[],
): Promise<RunOutput> {
  const started = await provider.startProviderRun(job);
  if ('output' in started) return started.output;
  const { waiting } = started;
  const request = { generationId: job.generationId, waiting };
  const taskQueue = providerTaskQueueOf(workflowInfo().taskQueue);
  // Temporal's pattern for infrequent polling: each attempt looks once and completes
  // asynchronously; its start-to-close timeout is the poll period, and the retry the next look.
  // The generation's own deadline bounds the whole wait.
  const waiter = proxyActivities<GenerationActivities>({
    summary: "wait for the upstream's job, holding no worker slot (the hold stays held)",
    taskQueue,
    startToCloseTimeout: waiting.pollMs,
    retry: { initialInterval: '1 second', backoffCoefficient: 1 },
  });
  const stopper = proxyActivities<GenerationActivities>({
    summary: "stop the upstream's job (the generation failed or was cancelled)",
    taskQueue,
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 3 },
  });
  try {
    await waiter.awaitUpstreamJob(request);
  } catch (err) {
    // Best effort, beside the release the failure leads to; the workflow does not end before it,
    // or the activity would never run. The upstream should stop working for nobody.
    compensations.push(
      CancellationScope.nonCancellable(() => stopper.cancelUpstreamJob(request)).catch(() => undefined),
    );
    throw err;
  }
  const output = await provider.runProvider({ ...job, resume: waiting.resume });
  // The submit's entry (what it asked) is settled with the collect's (who served, at what cost).
  return started.route ? { ...output, routes: [started.route, ...(output.routes ?? [])] } : output;
}
