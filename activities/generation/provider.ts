import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import { recordDuration } from '../../core/db/durations';
import type { Provider, ProviderFile, ProviderJob, ProviderResult, UpstreamWait } from '../../core/providers/types';
import { recordUpstreamJob } from '../../core/db/upstream-jobs';
import { createUpstreamWaitActivities } from './upstream-wait';
import type { OutputStore } from '../../core/storage/output-store';
import type { RouteEntry, RunOutput } from '../../core/vocabulary';
import { ProviderRejectedError } from '../../core/errors';
import { imageInFormat } from '../../core/media/output-format';
import { metrics } from '../../core/metrics';
import { chargedTokens, tokenCharge } from '../../core/catalogue/pricing';
import { tokenUsageOf } from '../../core/providers/token-usage';
import { progressRecorder } from './progress-recorder';
import { earlyThumbnail, storePreviews } from './previews';
import type { ProviderRunPermits } from '../../core/providers/run-permits';

/** The shortest period between two looks at a waiting upstream job (activities/generation/upstream-wait.ts). */
const MIN_WAIT_POLL_MS = 1_000;

/** What a provider run needs: the provider (the router of upstreams), the output store and the database. */
interface ProviderDeps {
  provider: Provider;
  store: OutputStore;
  pool: pg.Pool;
}

/**
 * Runs the provider, stores what it made, and reports where it is: the only step that talks to a
 * model. `permits`: the process's, told whose runs are under way (for the ones kept back, run-permits.ts).
 */
export function createProviderActivities(deps: ProviderDeps & { permits?: ProviderRunPermits }) {
  const counted = async <T>(job: ProviderRun, run: () => Promise<T>): Promise<T> => {
    const done = job.accountId === undefined ? undefined : deps.permits?.running(job.accountId);
    try {
      return await run();
    } finally {
      done?.();
    }
  };
  return {
    async runProvider(job: ProviderRun): Promise<RunOutput> {
      const started = await counted(job, () => perform(deps, job, false));
      if (!('output' in started)) throw new Error('a provider run asked not to detach left its job waiting');
      return started.output;
    },
    /** A run that may leave a long upstream job waiting, for the workflow to wait on without a worker (upstream-wait.ts). */
    async startProviderRun(job: ProviderRun): Promise<ProviderStart> {
      return counted(job, () => perform(deps, job, true));
    },
    ...createUpstreamWaitActivities(deps),
  };
}

/**
 * A provider run in place: a local activity of the workflow's own worker, so that a short run costs
 * no dispatch through the provider task queue (docs/decisions/0143-provider-runs-in-place.md). It
 * runs only if one of the process's provider permits is free at once; `busy` sends the workflow to
 * the queue, where the run waits its turn fairly. Only runs that never detach come here.
 */
export function createInPlaceProviderActivities(
  deps: ProviderDeps & { permits: ProviderRunPermits; inPlaceLimit: number },
) {
  let inPlace = 0;
  return {
    async runProviderInPlace(job: ProviderRun, accountId: string): Promise<InPlaceRun> {
      if (inPlace >= deps.inPlaceLimit || !deps.permits.tryTakeInPlace(accountId)) return { busy: true };
      inPlace += 1;
      try {
        const started = await perform(deps, job, false);
        if (!('output' in started)) throw new Error('a provider run asked not to detach left its job waiting');
        return { output: started.output };
      } finally {
        inPlace -= 1;
        deps.permits.giveInPlace(accountId);
      }
    },
  };
}

/** What a run in place answers: its output, or that no permit was free. */
export type InPlaceRun = { output: RunOutput } | { busy: true };

/**
 * One provider run. `detach`: a long upstream job (a queued video) may be left waiting at its
 * upstream, answered as `waiting` and recorded for its webhook. `job.resume` takes up a job left
 * waiting (what a retried attempt's heartbeat would say, for the run that collects it).
 */
async function perform(deps: ProviderDeps, run: ProviderRun, detach: boolean): Promise<ProviderStart> {
  const { pool, store } = deps;
  const { resume: _resume, accountId: _account, ...job } = run;
  const ctx = Context.current();
  const timer = metrics.providerDuration.startTimer({ kind: job.kind });
  metrics.providerActivitiesRunning.inc();
  let outcome = 'failed';
  const progress = progressRecorder(pool, job, (message, meta) => {
    ctx.log.warn(message, meta);
  });
  const thumbnail = earlyThumbnail(pool, store, job.generationId, (message, meta) => {
    ctx.log.warn(message, meta);
  });
  try {
    const result = await runOnProvider(deps, job, {
      progress: (percent: number) => progress.provider(percent),
      ...(job.kind === 'video' ? { preview: (frame: ProviderFile) => thumbnail.offer(frame) } : {}),
      resume: ctx.info.heartbeatDetails ?? run.resume,
      detach,
    });
    if (result.waiting) {
      const left = await leftWaiting(pool, job, result.waiting, result.route);
      outcome = 'waiting';
      return left;
    }
    const outputKey = result.file ? await storeOutput(deps, job, result.file, thumbnail.made) : null;
    // A per-token model (group B chat run through group A) is charged what it produced.
    const rate = job.internal.ratePer1kMc;
    const charge: Partial<ReturnType<typeof tokenCharge>> =
      rate !== undefined && result.outputTokens !== undefined
        ? tokenCharge(result.outputTokens, job.params.maxTokens, rate)
        : {};
    // A chat's tokens in detail, kept beside what it was charged for (the output within its hold).
    const usage =
      job.kind === 'chat' && result.outputTokens !== undefined
        ? tokenUsageOf(result.usage, {
            prompt: job.prompt,
            charged: charge.outputTokens ?? chargedTokens(result.outputTokens, job.params.maxTokens),
          })
        : undefined;
    outcome = 'succeeded';
    await progress.stop();
    // What this run took, for the next estimates of its model and size; an estimate is not worth failing a run for.
    await recordDuration(pool, job.generationId).catch((err: unknown) => {
      ctx.log.warn('duration could not be recorded', {
        generationId: job.generationId,
        error: (err as Error).message,
      });
    });
    ctx.log.info('provider run finished', { generationId: job.generationId, outputKey });
    return {
      output: {
        outputKey,
        outputText: result.text ?? null,
        ...charge,
        ...(usage ? { usage } : {}),
        ...(result.toolCalls?.length ? { toolCalls: result.toolCalls } : {}),
        ...(result.upstream ? { upstream: result.upstream } : {}),
        ...(result.route ? { routes: [result.route] } : {}),
      },
    };
  } catch (err) {
    if (err instanceof ProviderRejectedError) outcome = 'rejected';
    ctx.log.warn('provider run failed', { generationId: job.generationId, error: (err as Error).message });
    // A refusal is final; Temporal must not retry it, and the workflow reports its code.
    if (err instanceof ProviderRejectedError) {
      throw ApplicationFailure.create({
        type: 'ProviderRejectedError',
        message: err.message,
        nonRetryable: true,
        details: [{ code: err.code }],
      });
    }
    throw err;
  } finally {
    await progress.stop();
    await thumbnail.made();
    timer({ outcome });
    metrics.providerActivitiesRunning.dec();
  }
}

/** How this attempt of a run follows it: where it reports progress and frames, and what it takes up. */
interface RunHooks {
  progress: (percent: number) => void;
  preview?: (frame: ProviderFile) => void;
  /** The upstream job to take up: a retried attempt's heartbeat, else what the workflow gave. */
  resume: unknown;
  detach: boolean;
}

/** The job's stored inputs read, the provider asked, with this attempt's heartbeat and cancellation. */
async function runOnProvider(
  { provider, store }: ProviderDeps,
  job: ProviderJob,
  { progress, preview, resume, detach }: RunHooks,
): Promise<ProviderResult> {
  const ctx = Context.current();
  const input = await storedInput(store, job.internal.inputKey);
  const sourceVideo = await storedInput(store, job.internal.sourceVideoKey);
  const edit = await editInputsOf(job, store);
  ctx.log.info('provider run started', {
    generationId: job.generationId,
    kind: job.kind,
    model: job.model,
    attempt: ctx.info.attempt,
  });
  return provider.run(
    {
      ...job,
      ...(input === undefined ? {} : { input }),
      ...(sourceVideo === undefined ? {} : { sourceVideo }),
      ...edit,
    },
    {
      // A local activity has no heartbeat: its workflow task is what stays open while it runs.
      heartbeat: ctx.info.isLocal ? () => undefined : (details?: unknown) => ctx.heartbeat(details),
      signal: ctx.cancellationSignal,
      progress,
      ...(preview ? { preview } : {}),
      ...(resume === undefined ? {} : { resume }),
      ...(detach ? { detach } : {}),
    },
  );
}

/** An upstream job left waiting: recorded for its webhook, and answered for the workflow to wait on. */
async function leftWaiting(
  pool: pg.Pool,
  job: ProviderJob,
  waiting: UpstreamWait,
  route: RouteEntry | undefined,
): Promise<ProviderStart> {
  await recordUpstreamJob(pool, { upstream: waiting.upstream, jobId: waiting.jobId, generationId: job.generationId });
  Context.current().log.info('provider run waiting for its upstream', {
    generationId: job.generationId,
    upstream: waiting.upstream,
    jobId: waiting.jobId,
  });
  // Each look must fit in its period, however short the upstream's own poll interval.
  return {
    waiting: { ...waiting, pollMs: Math.max(MIN_WAIT_POLL_MS, waiting.pollMs) },
    ...(route ? { route } : {}),
  };
}

/** Stores what the run made, under the generation's id; answers its key. */
async function storeOutput(
  deps: ProviderDeps,
  job: ProviderJob,
  made: ProviderFile,
  thumbnailMade: () => Promise<boolean>,
): Promise<string> {
  const { store } = deps;
  // An image is charged only once it is stored in the encoding asked for, and readable.
  const file = job.kind === 'image' ? await imageInFormat(made, job.params.outputFormat) : made;
  const outputKey = `${job.generationId}/output.${file.extension}`;
  await store.put(outputKey, file.data, file.contentType);
  if (job.kind === 'image' && (await store.get(outputKey))?.length !== file.data.length)
    throw new Error(`the stored output ${outputKey} could not be read back`);
  if (job.kind === 'video') await storePreviews(deps, job.generationId, file, await thumbnailMade());
  return outputKey;
}

/** A provider run as the workflow asks for it: the job, the upstream job it takes up, if any, and whose it is. */
export type ProviderRun = ProviderJob & { resume?: unknown; accountId?: string };

/**
 * What a run that may detach answers: its output, or the upstream job it left waiting (with the
 * router's entry of the submit, which the output of the run that collects it carries on).
 */
export type ProviderStart = { output: RunOutput } | { waiting: UpstreamWait; route?: RouteEntry };

/** An edit's stored input images and mask, read for the run. */
async function editInputsOf(job: ProviderJob, store: OutputStore): Promise<{ inputs?: Buffer[]; mask?: Buffer }> {
  const keys = job.internal.inputKeys;
  if (keys === undefined) return {};
  const read = async (key: string) => {
    const data = await store.get(key);
    if (!data) throw new ProviderRejectedError(`The input ${key} is missing from the store.`, 'input_missing');
    return data;
  };
  const inputs = await Promise.all(keys.map(read));
  return { inputs, ...(job.internal.maskKey ? { mask: await read(job.internal.maskKey) } : {}) };
}

/**
 * The stored input of a job that transforms one (an upscale's image, a video's reference frame, the
 * video an extension or edit starts from); a missing input (a source deleted since) fails the job for good.
 */
async function storedInput(store: OutputStore, key: string | undefined): Promise<Buffer | undefined> {
  if (key === undefined) return undefined;
  const data = await store.get(key);
  if (!data) throw new ProviderRejectedError(`The input ${key} is missing from the store.`, 'input_missing');
  return data;
}
