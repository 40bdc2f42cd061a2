import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import { defaultExpectedSeconds } from '../../core/catalogue/models';
import { measuredSeconds, recordDuration } from '../../core/db/durations';
import { recordPreviews, recordThumbnail } from '../../core/db/previews';
import { recordProgress } from '../../core/ledger/progress';
import type { ProgressSource } from '../../core/ledger/progress';
import { previewsOfVideo, thumbnailOfFrame } from '../../core/media/video-previews';
import type { Provider, ProviderFile, ProviderJob, UpstreamWait } from '../../core/providers/types';
import { recordUpstreamJob } from '../../core/db/upstream-jobs';
import { createUpstreamWaitActivities } from './upstream-wait';
import type { OutputStore } from '../../core/storage/output-store';
import { VIDEO_PREVIEWS } from '../../core/vocabulary';
import { FLAT_KINDS } from '../../core/webhooks/events';
import type { RouteEntry, RunOutput } from '../../core/vocabulary';
import { ProviderRejectedError } from '../../core/errors';
import { imageInFormat } from '../../core/media/output-format';
import { metrics } from '../../core/metrics';
import { chargedTokens, tokenCharge } from '../../core/catalogue/pricing';
import { tokenUsageOf } from '../../core/providers/token-usage';
import { INTERNAL_PARAM_KEYS, publicParamsOf } from '../../core/generation/params';
import type { InternalParams } from '../../core/generation/params';

/** The shortest period between two looks at a waiting upstream job (activities/generation/upstream-wait.ts). */
const MIN_WAIT_POLL_MS = 1_000;
/** At most one progress write this often, unless it rose by a PROGRESS_STEP or more. */
const PROGRESS_EVERY_MS = 3_000;
const PROGRESS_STEP = 10;
/** An estimate from elapsed time stops here: only the provider (or success) says a run is nearly done. */
const ELAPSED_CAP = 95;
/**
 * Nothing is written before a run has lasted this long: a run done sooner (an image, a chat) would
 * only write figures its success makes 100 a moment later, a cost on the busiest path for nothing
 * anyone reads. The provider's figure meanwhile is kept and written at the first tick after.
 */
const QUIET_START_MS = 1_000;

/**
 * Records a run's progress in its own table (core/ledger/progress.ts), never the ledger's rows: the
 * provider's own figure whenever it reports one, else an estimate from elapsed time against the
 * expected duration (checked every second). Writes at most every PROGRESS_EVERY_MS or every
 * PROGRESS_STEP points, one at a time, never 0 (what a record without progress shows) and nothing
 * in a run's first QUIET_START_MS; a failed write is logged and the run goes on. Progress webhooks
 * are owed only for the kinds that have them, so only those writes are transactions.
 */
function progressRecorder(pool: pg.Pool, job: ProviderJob, log: (message: string, meta: object) => void) {
  const started = Date.now();
  let written = -1;
  let writtenAt = 0;
  let reported = false;
  let stopped = false;
  let held: number | undefined;
  const events = FLAT_KINDS.includes(job.kind);
  let writing: Promise<void> = Promise.resolve();
  let expectedMs = defaultExpectedSeconds(job.kind, job.params) * 1000;
  // Read once the run has lasted a tick: a run done sooner (most images) never needs the estimate.
  let measured: Promise<void> | undefined;
  const measure = (): Promise<void> =>
    (measured ??= measuredSeconds(pool, job.generationId).then(
      (s) => {
        if (s !== undefined) expectedMs = s * 1000;
      },
      () => undefined,
    ));

  const offer = (percent: number, source: ProgressSource): void => {
    const p = Math.max(0, Math.min(99, Math.floor(percent)));
    const now = Date.now();
    if (now - started < QUIET_START_MS && source === 'provider') {
      held = p;
      return;
    }
    if (p === 0 || p <= written || (p - written < PROGRESS_STEP && now - writtenAt < PROGRESS_EVERY_MS)) return;
    written = p;
    writtenAt = now;
    writing = writing
      .then(() => recordProgress(pool, job.generationId, p, source, { events }))
      .then(
        () => undefined,
        (err: unknown) => {
          log('progress could not be recorded', { generationId: job.generationId, error: (err as Error).message });
        },
      );
  };
  const estimate = setInterval(() => {
    if (held !== undefined) {
      const p = held;
      held = undefined;
      if (!stopped) offer(p, 'provider');
    }
    if (reported) return;
    void measure().then(() => {
      if (!reported && !stopped) offer(Math.min(ELAPSED_CAP, ((Date.now() - started) / expectedMs) * 100), 'elapsed');
    });
  }, 1_000);
  return {
    /** The provider's own figure: from now on the elapsed-time estimate is not used. */
    provider(percent: number): void {
      if (!Number.isFinite(percent)) return;
      reported = true;
      offer(percent, 'provider');
    },
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(estimate);
      await measured;
      await writing;
    },
  };
}

/**
 * A video's thumbnail from the provider's first frame, before the run ends: made, stored and
 * announced once per attempt, off the run's path (the run never waits for it, and a failure is
 * only logged: the end of the run makes it from the file instead). `made()` says whether it is
 * stored, once whatever was started has finished.
 */
function earlyThumbnail(
  pool: pg.Pool,
  store: OutputStore,
  generationId: string,
  log: (message: string, meta: object) => void,
) {
  let making: Promise<boolean> | undefined;
  return {
    offer(frame: ProviderFile): void {
      making ??= (async () => {
        const image = await thumbnailOfFrame(frame.data);
        const key = `${generationId}/thumbnail.${image.extension}`;
        await store.put(key, image.data, image.contentType);
        await recordThumbnail(pool, generationId, key);
        return true;
      })().catch((err: unknown) => {
        log('the early thumbnail could not be made', { generationId, error: (err as Error).message });
        return false;
      });
    },
    made: (): Promise<boolean> => making ?? Promise.resolve(false),
  };
}

/** Runs the provider, stores what it made, and reports where it is: the only step that talks to a model. */
export function createProviderActivities({
  provider,
  store,
  pool,
}: {
  provider: Provider;
  store: OutputStore;
  pool: pg.Pool;
}) {
  /**
   * A video's thumbnail and spritesheet, stored beside it and recorded before the run reports
   * success, so a succeeded video has them from its first read. A file they cannot be made from
   * (not VP8 WebM, or unreadable) has none: the video itself is what was paid for. A thumbnail
   * stored while the run went on (its first frame) stands and is not made again.
   */
  const storePreviews = async (generationId: string, file: ProviderFile, haveThumbnail: boolean): Promise<void> => {
    const ctx = Context.current();
    // Making them may wait for one of the few image slots behind other videos' previews: the run
    // keeps saying it is alive meanwhile, or its heartbeat timeout would retry a finished render.
    const alive = setInterval(() => ctx.heartbeat(), 2_000);
    const previews = await previewsOfVideo(file, { thumbnail: !haveThumbnail })
      .catch((err: unknown) => {
        ctx.log.warn('video previews could not be made', { generationId, error: (err as Error).message });
        return undefined;
      })
      .finally(() => clearInterval(alive));
    if (!previews) {
      ctx.log.info('no video previews', { generationId, contentType: file.contentType });
      return;
    }
    const stored = await Promise.all(
      VIDEO_PREVIEWS.flatMap((name) => {
        const image = previews[name];
        return image ? [{ name, image }] : [];
      }).map(async ({ name, image }) => {
        const key = `${generationId}/${name}.${image.extension}`;
        await store.put(key, image.data, image.contentType);
        return { name, key };
      }),
    );
    await recordPreviews(pool, generationId, stored);
  };

  /**
   * One provider run. `detach`: a long upstream job (a queued video) may be left waiting at its
   * upstream, answered as `waiting` and recorded for its webhook. `job.resume` takes up a job left
   * waiting (what a retried attempt's heartbeat would say, for the run that collects it).
   */
  const perform = async (run: ProviderRun, detach: boolean): Promise<ProviderStart> => {
    const { resume: given } = run;
    const job = jobOf(run);
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
      const input = await inputOf(job, store);
      const edit = await editInputsOf(job, store);
      ctx.log.info('provider run started', {
        generationId: job.generationId,
        kind: job.kind,
        model: job.model,
        attempt: ctx.info.attempt,
      });
      const resume: unknown = ctx.info.heartbeatDetails ?? given;
      const result = await provider.run(
        { ...job, ...(input === undefined ? {} : { input }), ...edit },
        {
          heartbeat: (details?: unknown) => ctx.heartbeat(details),
          signal: ctx.cancellationSignal,
          progress: (percent: number) => progress.provider(percent),
          ...(job.kind === 'video' ? { preview: (frame: ProviderFile) => thumbnail.offer(frame) } : {}),
          ...(resume === undefined ? {} : { resume }),
          ...(detach ? { detach } : {}),
        },
      );
      if (result.waiting) {
        await recordUpstreamJob(pool, {
          upstream: result.waiting.upstream,
          jobId: result.waiting.jobId,
          generationId: job.generationId,
        });
        outcome = 'waiting';
        ctx.log.info('provider run waiting for its upstream', {
          generationId: job.generationId,
          upstream: result.waiting.upstream,
          jobId: result.waiting.jobId,
        });
        // Each look must fit in its period, however short the upstream's own poll interval.
        return {
          waiting: { ...result.waiting, pollMs: Math.max(MIN_WAIT_POLL_MS, result.waiting.pollMs) },
          ...(result.route ? { route: result.route } : {}),
        };
      }
      let outputKey: string | null = null;
      if (result.file) {
        // An image is charged only once it is stored in the encoding asked for, and readable.
        const file = job.kind === 'image' ? await imageInFormat(result.file, job.params.outputFormat) : result.file;
        outputKey = `${job.generationId}/output.${file.extension}`;
        await store.put(outputKey, file.data, file.contentType);
        if (job.kind === 'image' && (await store.get(outputKey))?.length !== file.data.length)
          throw new Error(`the stored output ${outputKey} could not be read back`);
        if (job.kind === 'video') await storePreviews(job.generationId, file, await thumbnail.made());
      }
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
  };

  return {
    async runProvider(job: ProviderRun): Promise<RunOutput> {
      const started = await perform(job, false);
      if (!('output' in started)) throw new Error('a provider run asked not to detach left its job waiting');
      return started.output;
    },
    /** A run that may leave a long upstream job waiting, for the workflow to wait on without a worker (upstream-wait.ts). */
    async startProviderRun(job: ProviderRun): Promise<ProviderStart> {
      return perform(job, true);
    },
    ...createUpstreamWaitActivities({ provider, pool }),
  };
}

/**
 * A provider run as the workflow asks for it: the job, and the upstream job it takes up, if any.
 * `internal` is absent only in runs of workflows started before the parameters were split (jobOf).
 */
export type ProviderRun = Omit<ProviderJob, 'internal'> & { internal?: InternalParams; resume?: unknown };

/**
 * The job of a run. Replay path: a workflow started before a generation's parameters were split in
 * two (db/migrations/024_internal_params.sql) carries one bag as `params`, its internal keys
 * included, and no `internal`; they are taken apart here. Delete this once no workflow started
 * before that deploy is open (the longest deadline after it; docs/operations.md says how to check).
 */
function jobOf({ resume: _resume, ...run }: ProviderRun): ProviderJob {
  if (run.internal !== undefined) return { ...run, internal: run.internal };
  const bag: Record<string, unknown> = { ...run.params };
  const internal = Object.fromEntries(
    INTERNAL_PARAM_KEYS.filter((key) => bag[key] !== undefined).map((key) => [key, bag[key]]),
  );
  return { ...run, params: publicParamsOf(run.params), internal };
}

/**
 * What a run that may detach answers: its output, or the upstream job it left waiting (with the
 * router's entry of the submit, which the output of the run that collects it carries on).
 */
export type ProviderStart = { output: RunOutput } | { waiting: UpstreamWait; route?: RouteEntry };

/** The stored input of a job that transforms one; a missing input fails the job for good. */
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

async function inputOf(job: ProviderJob, store: OutputStore): Promise<Buffer | undefined> {
  const key = job.internal.inputKey;
  if (key === undefined) return undefined;
  const data = await store.get(key);
  if (!data) throw new ProviderRejectedError(`The input ${key} is missing from the store.`, 'input_missing');
  return data;
}
