import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import { recordPreviews } from '../core/db/previews';
import { previewsOfVideo } from '../core/media/video-previews';
import type { Provider, ProviderFile, ProviderJob } from '../core/providers/types';
import type { OutputStore } from '../core/storage';
import { VIDEO_PREVIEWS } from '../core/vocabulary';
import type { RunOutput } from '../core/vocabulary';
import { ProviderRejectedError } from '../core/errors';
import { metrics } from '../core/metrics';
import { chargeForTokens } from '../core/pricing';

/** Runs the provider, stores what it made, and reports where it is: the only step that talks to a model. */
export function createProviderActivities({ provider, store, pool }: { provider: Provider; store: OutputStore; pool: pg.Pool }) {
  /**
   * A video's thumbnail and spritesheet, stored beside it and recorded before the run reports
   * success, so a succeeded video has them from its first read. A file they cannot be made from
   * (not VP8 WebM, or unreadable) has none: the video itself is what was paid for.
   */
  const storePreviews = async (generationId: string, file: ProviderFile): Promise<void> => {
    const ctx = Context.current();
    const previews = await previewsOfVideo(file).catch((err: unknown) => {
      ctx.log.warn('video previews could not be made', { generationId, error: (err as Error).message });
      return undefined;
    });
    if (!previews) {
      ctx.log.info('no video previews', { generationId, contentType: file.contentType });
      return;
    }
    const stored = await Promise.all(VIDEO_PREVIEWS.map(async (name) => {
      const image = previews[name];
      const key = `${generationId}/${name}.${image.extension}`;
      await store.put(key, image.data, image.contentType);
      return { name, key };
    }));
    await recordPreviews(pool, generationId, stored);
  };

  return {
    async runProvider(job: ProviderJob): Promise<RunOutput> {
      const ctx = Context.current();
      const timer = metrics.providerDuration.startTimer({ kind: job.kind });
      let outcome = 'failed';
      try {
        const input = await inputOf(job, store);
        ctx.log.info('provider run started', { generationId: job.generationId, kind: job.kind, model: job.model, attempt: ctx.info.attempt });
        const resume: unknown = ctx.info.heartbeatDetails;
        const result = await provider.run(input === undefined ? job : { ...job, input }, {
          heartbeat: (details?: unknown) => ctx.heartbeat(details),
          signal: ctx.cancellationSignal,
          ...(resume === undefined ? {} : { resume }),
        });
        let outputKey: string | null = null;
        if (result.file) {
          outputKey = `${job.generationId}/output.${result.file.extension}`;
          await store.put(outputKey, result.file.data, result.file.contentType);
          if (job.kind === 'video') await storePreviews(job.generationId, result.file);
        }
        // A per-token model (group B chat run through group A) is charged what it produced.
        const rate = job.params.ratePer1kMc;
        const tokens = result.outputTokens === undefined ? undefined : Math.min(result.outputTokens, Number(job.params.maxTokens ?? Infinity));
        const charge = typeof rate === 'number' && tokens !== undefined ? { chargeMc: chargeForTokens(tokens, rate), outputTokens: tokens } : {};
        outcome = 'succeeded';
        ctx.log.info('provider run finished', { generationId: job.generationId, outputKey });
        return { outputKey, outputText: result.text ?? null, ...charge };
      } catch (err) {
        if (err instanceof ProviderRejectedError) outcome = 'rejected';
        ctx.log.warn('provider run failed', { generationId: job.generationId, error: (err as Error).message });
        // A refusal is final; Temporal must not retry it, and the workflow reports its code.
        if (err instanceof ProviderRejectedError) {
          throw ApplicationFailure.create({ type: 'ProviderRejectedError', message: err.message, nonRetryable: true, details: [{ code: err.code }] });
        }
        throw err;
      } finally {
        timer({ outcome });
      }
    },
  };
}

/** The stored input of a job that transforms one; a missing input fails the job for good. */
async function inputOf(job: ProviderJob, store: OutputStore): Promise<Buffer | undefined> {
  const key = job.params.inputKey;
  if (typeof key !== 'string') return undefined;
  const data = await store.get(key);
  if (!data) throw new ProviderRejectedError(`The input ${key} is missing from the store.`, 'input_missing');
  return data;
}
