import { ProviderRejectedError } from '../errors';
import type { SafeHttpClient } from '../net/safe-http';
import type { Provider, ProviderContext, ProviderJob, ProviderResult } from './types';
import { callUpstream, cancellingOnAbort, downloadOutput, extensionOf, pause, waitingOn } from './upstream-http';
import type { QueuedJobEndpoint } from './upstream-http';

/**
 * A queue-style video upstream, as fal.ai's queue speaks it: submit the job, poll its status until
 * it is done, fetch the result, download the file it names.
 *
 *   POST {base}/{model}                       { prompt, duration, aspect_ratio, resolution, image_url?, video_url? } → { request_id, status_url?, response_url? }
 *   GET  status_url | {base}/{model}/requests/{id}/status   → { status: IN_QUEUE | IN_PROGRESS | COMPLETED | FAILED, progress?, error? }
 *   GET  response_url | {base}/{model}/requests/{id}        → { video: { url } }
 *   PUT  {base}/{model}/requests/{id}/cancel                 (when the generation is cancelled)
 *
 * A video extension or edit goes to the model's own path for it (`extend`, `edit` in the
 * configuration) with the source as `video_url` (a data URL); a model without one is not offered them.
 * The status's `progress` (0–100), where the upstream gives one, is reported as the run's own
 * progress, and COMPLETED as 100; without it the provider step estimates from elapsed time.
 * The upstream's request id is reported with every heartbeat, so a retried attempt (a worker
 * restart) resumes polling the same job instead of submitting, and paying for, a second one.
 *
 * Asked to detach (a caller that waits without holding a worker), it submits with
 * `?fal_webhook=<webhookUrl>` when one is configured and answers `waiting` at once; fal then POSTs
 * the ed25519-signed outcome there (core/providers/callback-signatures.ts), and `checkJob` is the
 * slow poll in case it never does.
 */
export function createQueueVideoUpstream(
  endpoint: QueuedJobEndpoint & { models: Record<string, string>; derivations?: VideoDerivationPaths },
  http: SafeHttpClient,
): Provider {
  const queue: VideoQueue = {
    endpoint,
    http,
    base: endpoint.baseUrl.replace(/\/+$/, ''),
    derivations: endpoint.derivations ?? { extend: {}, edit: {} },
  };
  return {
    // An extension or edit only where the model has the upstream's path for it.
    serves: (model, feature) =>
      (feature === 'video-extension' && model in queue.derivations.extend) ||
      (feature === 'video-edit' && model in queue.derivations.edit),
    async checkJob(wait, signal) {
      const queued = resumeOf(wait.resume);
      if (!queued) return true;
      const status = await statusOf(queue, queued, signal);
      return status.status !== undefined && ENDED.has(status.status);
    },
    async cancelJob(wait) {
      const queued = resumeOf(wait.resume);
      if (queued) await cancel(queue, queued);
    },
    streamChat() {
      throw new ProviderRejectedError(
        `The upstream ${endpoint.name} is a video queue; it has no chat.`,
        'provider_rejected',
      );
    },
    run: (job, ctx) => runVideo(queue, job, ctx),
  };
}

/** One configured queue upstream and what its calls need. */
interface VideoQueue {
  endpoint: QueuedJobEndpoint & { models: Record<string, string> };
  http: SafeHttpClient;
  /** The base URL without its trailing slashes. */
  base: string;
  derivations: VideoDerivationPaths;
}

/**
 * Submits the job (or takes up the one a previous attempt submitted); leaves it waiting when asked
 * to detach, else follows it to its video.
 */
async function runVideo(queue: VideoQueue, job: ProviderJob, ctx: ProviderContext): Promise<ProviderResult> {
  const jobPath = jobPathOf(queue, job);
  const resumed = resumeOf(ctx.resume, jobPath);
  const queued = resumed ?? (await submit(queue, job, jobPath, ctx));
  ctx.heartbeat(queued);
  if (!resumed && ctx.detach) return waitingOn(queue.endpoint, queued.requestId, queued);
  return cancellingOnAbort(
    ctx.signal,
    () => cancel(queue, queued),
    async () => {
      await untilCompleted(queue, queued, ctx);
      return { file: await completedVideo(queue, queued, ctx.signal) };
    },
  );
}

/** The upstream's path for the job: the model's own, or its path for extending or editing a video. */
function jobPathOf(queue: VideoQueue, job: ProviderJob): string {
  const model = !job.sourceVideo
    ? queue.endpoint.models[job.model]
    : (job.params.extendedFrom !== undefined ? queue.derivations.extend : queue.derivations.edit)[job.model];
  if (job.kind !== 'video' || !model)
    throw new ProviderRejectedError(
      `The upstream ${queue.endpoint.name} is not configured for ${job.kind} ${job.model}${job.sourceVideo ? ' from another video' : ''}.`,
      'provider_rejected',
    );
  return `/${model.replace(/^\/+/, '')}`;
}

async function submit(queue: VideoQueue, job: ProviderJob, jobPath: string, ctx: ProviderContext): Promise<QueuedJob> {
  const { endpoint } = queue;
  const imageUrl = job.input ? `data:image/png;base64,${job.input.toString('base64')}` : undefined;
  // The source of an extension or edit travels with the job, as fal takes a file it cannot fetch.
  const videoUrl = job.sourceVideo
    ? `data:${videoTypeOf(job.sourceVideo)};base64,${job.sourceVideo.toString('base64')}`
    : undefined;
  // fal calls this URL back when the job ends; the query names the upstream whose keys verify it.
  const hook = ctx.detach && endpoint.webhookUrl ? `?fal_webhook=${encodeURIComponent(endpoint.webhookUrl)}` : '';
  const res = await callUpstream(endpoint, `${jobPath}${hook}`, {
    signal: ctx.signal,
    body: {
      prompt: job.prompt,
      duration: job.params.seconds,
      aspect_ratio: job.params.aspect,
      resolution: job.params.resolution,
      ...(imageUrl ? { image_url: imageUrl } : {}),
      ...(videoUrl ? { video_url: videoUrl } : {}),
    },
  });
  const body = (await res.json()) as { request_id?: string; status_url?: string; response_url?: string };
  if (!body.request_id)
    throw new ProviderRejectedError(
      `The upstream ${endpoint.name} accepted the video without a request id.`,
      'provider_failed',
    );
  return {
    requestId: body.request_id,
    jobPath,
    ...(body.status_url ? { statusUrl: body.status_url } : {}),
    ...(body.response_url ? { responseUrl: body.response_url } : {}),
  };
}

/** Polls the job's status, reporting its progress, until it is COMPLETED; a failed job is a final failure. */
async function untilCompleted(queue: VideoQueue, queued: QueuedJob, ctx: ProviderContext): Promise<void> {
  for (;;) {
    const status = await statusOf(queue, queued, ctx.signal);
    if (status.status === 'COMPLETED') {
      ctx.progress?.(100);
      return;
    }
    if (typeof status.progress === 'number' && status.progress >= 0 && status.progress <= 100)
      ctx.progress?.(status.progress);
    if (status.status !== undefined && FAILED.has(status.status)) throw jobFailure(queue, status.error);
    ctx.heartbeat(queued);
    await pause(queue.endpoint.pollMs, ctx.signal);
  }
}

/** A failed job's reason as a final failure: a refusal of the content, or the upstream's own failure. */
function jobFailure(queue: VideoQueue, error: unknown): ProviderRejectedError {
  const reason = typeof error === 'string' ? error : JSON.stringify(error ?? 'no reason given');
  return new ProviderRejectedError(
    `The upstream ${queue.endpoint.name} failed the video: ${reason}`,
    /content|policy|safety/i.test(reason) ? 'content_policy' : 'provider_failed',
  );
}

/** The completed job's result, and the video file it names. */
async function completedVideo(queue: VideoQueue, queued: QueuedJob, signal: AbortSignal) {
  const { endpoint } = queue;
  const res = await callUpstream(endpoint, '', {
    url: queued.responseUrl ?? `${queue.base}${queued.jobPath}/requests/${queued.requestId}`,
    signal,
  });
  const result = (await res.json()) as { video?: { url?: string } };
  const url = result.video?.url;
  if (!url)
    throw new ProviderRejectedError(
      `The upstream ${endpoint.name} completed the video without a file.`,
      'provider_failed',
    );
  const file = await downloadOutput(endpoint, url, queue.http, signal);
  return { ...file, extension: extensionOf(file.contentType, 'mp4') };
}

async function statusOf(queue: VideoQueue, queued: QueuedJob, signal: AbortSignal): Promise<QueueStatus> {
  const url = queued.statusUrl ?? `${queue.base}${queued.jobPath}/requests/${queued.requestId}/status`;
  const res = await callUpstream(queue.endpoint, '', { url, signal });
  return (await res.json()) as QueueStatus;
}

function cancel(queue: VideoQueue, queued: QueuedJob): Promise<Response> {
  return callUpstream(queue.endpoint, `${queued.jobPath}/requests/${queued.requestId}/cancel`, {
    method: 'PUT',
    signal: AbortSignal.timeout(5_000),
  });
}

interface QueueStatus {
  status?: string;
  progress?: unknown;
  error?: unknown;
}

/** Per catalogue model, the upstream's path for extending (`extend`) and for editing (`edit`) its videos. */
export interface VideoDerivationPaths {
  extend: Record<string, string>;
  edit: Record<string, string>;
}

/** A video file's type from its first bytes: WebM (EBML) or else MP4, what upstreams hand back. */
const videoTypeOf = (file: Buffer): string =>
  file.length >= 4 && file.readUInt32BE(0) === 0x1a45dfa3 ? 'video/webm' : 'video/mp4';

/** A status of a job that ended without a video. */
const FAILED: ReadonlySet<string> = new Set(['FAILED', 'ERROR', 'CANCELLED']);
/** A status that will not change any more. */
const ENDED: ReadonlySet<string> = new Set(['COMPLETED', ...FAILED]);

interface QueuedJob {
  requestId: string;
  /** The model's path, so that a job can be checked or cancelled from its details alone. */
  jobPath: string;
  statusUrl?: string;
  responseUrl?: string;
}

/** `jobPath`: the model's path, for details reported before they carried it. */
function resumeOf(details: unknown, jobPath?: string): QueuedJob | undefined {
  const d = details as Partial<QueuedJob> | undefined;
  const path = typeof d?.jobPath === 'string' ? d.jobPath : jobPath;
  return typeof d?.requestId === 'string' && path !== undefined ? { ...(d as QueuedJob), jobPath: path } : undefined;
}
