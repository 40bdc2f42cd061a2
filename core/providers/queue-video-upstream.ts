import { ProviderRejectedError } from '../errors';
import type { SafeHttpClient } from '../net/safe-http';
import type { Provider, ProviderContext, ProviderJob, ProviderResult } from './types';
import { callUpstream, downloadOutput, extensionOf, pause } from './upstream-http';
import type { UpstreamEndpoint } from './upstream-http';

/**
 * A queue-style video upstream, as fal.ai's queue speaks it: submit the job, poll its status until
 * it is done, fetch the result, download the file it names.
 *
 *   POST {base}/{model}                       { prompt, duration, aspect_ratio, resolution, image_url? } → { request_id, status_url?, response_url? }
 *   GET  status_url | {base}/{model}/requests/{id}/status   → { status: IN_QUEUE | IN_PROGRESS | COMPLETED | FAILED, progress?, error? }
 *   GET  response_url | {base}/{model}/requests/{id}        → { video: { url } }
 *   PUT  {base}/{model}/requests/{id}/cancel                 (when the generation is cancelled)
 *
 * The status's `progress` (0–100), where the upstream gives one, is reported as the run's own
 * progress, and COMPLETED as 100; without it the provider step estimates from elapsed time.
 * The upstream's request id is reported with every heartbeat, so a retried attempt (a worker
 * restart) resumes polling the same job instead of submitting, and paying for, a second one.
 */
export function createQueueVideoUpstream(endpoint: UpstreamEndpoint & { models: Record<string, string>; pollMs: number }, http: SafeHttpClient): Provider {
  return {
    streamChat() {
      throw new ProviderRejectedError(`The upstream ${endpoint.name} is a video queue; it has no chat.`, 'provider_rejected');
    },
    async run(job: ProviderJob, ctx: ProviderContext): Promise<ProviderResult> {
      const model = endpoint.models[job.model];
      if (job.kind !== 'video' || !model) throw new ProviderRejectedError(`The upstream ${endpoint.name} is not configured for ${job.kind} ${job.model}.`, 'provider_rejected');
      const jobPath = `/${model.replace(/^\/+/, '')}`;

      const queued = resumeOf(ctx.resume) ?? (await submit(job, jobPath, ctx));
      ctx.heartbeat(queued);
      const onCancel = () => {
        // Best effort: the generation is already failing; the upstream should stop working on it.
        void callUpstream(endpoint, `${jobPath}/requests/${queued.requestId}/cancel`, { method: 'PUT', signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
      };
      ctx.signal.addEventListener('abort', onCancel, { once: true });
      try {
        for (;;) {
          const res = await callUpstream(endpoint, '', { url: queued.statusUrl ?? `${endpoint.baseUrl.replace(/\/+$/, '')}${jobPath}/requests/${queued.requestId}/status`, signal: ctx.signal });
          const status = (await res.json()) as { status?: string; progress?: unknown; error?: unknown };
          if (status.status === 'COMPLETED') {
            ctx.progress?.(100);
            break;
          }
          if (typeof status.progress === 'number' && status.progress >= 0 && status.progress <= 100) ctx.progress?.(status.progress);
          if (status.status === 'FAILED' || status.status === 'ERROR' || status.status === 'CANCELLED') {
            const reason = typeof status.error === 'string' ? status.error : JSON.stringify(status.error ?? 'no reason given');
            throw new ProviderRejectedError(`The upstream ${endpoint.name} failed the video: ${reason}`, /content|policy|safety/i.test(reason) ? 'content_policy' : 'provider_failed');
          }
          ctx.heartbeat(queued);
          await pause(endpoint.pollMs, ctx.signal);
        }
        const res = await callUpstream(endpoint, '', { url: queued.responseUrl ?? `${endpoint.baseUrl.replace(/\/+$/, '')}${jobPath}/requests/${queued.requestId}`, signal: ctx.signal });
        const result = (await res.json()) as { video?: { url?: string } };
        const url = result.video?.url;
        if (!url) throw new ProviderRejectedError(`The upstream ${endpoint.name} completed the video without a file.`, 'provider_failed');
        const file = await downloadOutput(endpoint, url, http, ctx.signal);
        return { file: { ...file, extension: extensionOf(file.contentType, 'mp4') } };
      } finally {
        ctx.signal.removeEventListener('abort', onCancel);
      }
    },
  };

  async function submit(job: ProviderJob, jobPath: string, ctx: ProviderContext): Promise<QueuedJob> {
    const imageUrl = job.input ? `data:image/png;base64,${job.input.toString('base64')}` : undefined;
    const res = await callUpstream(endpoint, jobPath, {
      signal: ctx.signal,
      body: {
        prompt: job.prompt,
        duration: job.params.seconds,
        aspect_ratio: job.params.aspect,
        resolution: job.params.resolution,
        ...(imageUrl ? { image_url: imageUrl } : {}),
      },
    });
    const body = (await res.json()) as { request_id?: string; status_url?: string; response_url?: string };
    if (!body.request_id) throw new ProviderRejectedError(`The upstream ${endpoint.name} accepted the video without a request id.`, 'provider_failed');
    return { requestId: body.request_id, ...(body.status_url ? { statusUrl: body.status_url } : {}), ...(body.response_url ? { responseUrl: body.response_url } : {}) };
  }
}

interface QueuedJob {
  requestId: string;
  statusUrl?: string;
  responseUrl?: string;
}

function resumeOf(details: unknown): QueuedJob | undefined {
  const d = details as Partial<QueuedJob> | undefined;
  return typeof d?.requestId === 'string' ? (d as QueuedJob) : undefined;
}
