import { ProviderRejectedError } from '../errors';
import type { SafeHttpClient } from '../net/safe-http';
import type { Provider, ProviderContext, ProviderJob, ProviderResult } from './types';
import { callUpstream, cancellingOnAbort, downloadOutput, extensionOf, pause, waitingOn } from './upstream-http';
import type { QueuedJobEndpoint } from './upstream-http';

/**
 * Replicate's predictions API (base URL `https://api.replicate.com/v1`) for images, videos and
 * upscales:
 *
 *   POST {base}/models/{owner}/{name}/predictions   { input }             (an official model: `owner/name`)
 *   POST {base}/predictions                         { version, input }    (a version: `owner/name:version` or the bare id)
 *        → { id, status: starting | processing | succeeded | failed | canceled, output, error, urls: { get, cancel } }
 *   GET  urls.get | {base}/predictions/{id}         the same object, until its status is final
 *   POST urls.cancel | {base}/predictions/{id}/cancel   (when the generation is cancelled)
 *
 * Images and upscales ask with `Prefer: wait=N` (N under the call's time limit, at most 60 s), so a
 * short job answers finished in the one call; anything not finished then is polled. The output (a
 * URL, or a list of them: the first is taken) is downloaded into our store. The prediction id is
 * reported with every heartbeat, so a retried attempt resumes polling it instead of paying twice.
 *
 * Asked to detach (a video whose caller waits without holding a worker), it creates the prediction
 * with `webhook` and `webhook_events_filter: ["completed"]` when a webhook URL (and so a signing
 * secret) is configured, and answers `waiting` unless the prediction is already final; Replicate
 * then POSTs the prediction, signed the Standard Webhooks way, and `checkJob` is the slow poll.
 */
export function createReplicateUpstream(
  endpoint: QueuedJobEndpoint & { models: Record<string, string> },
  http: SafeHttpClient,
): Provider {
  const replicate: Replicate = { endpoint, http, base: endpoint.baseUrl.replace(/\/+$/, '') };
  return {
    async checkJob(wait, signal) {
      const id = resumeOf(wait.resume)?.id;
      return id === undefined || PREDICTION_ENDED.has((await read(replicate, id, signal)).status ?? '');
    },
    async cancelJob(wait) {
      const id = resumeOf(wait.resume)?.id;
      if (id !== undefined)
        await callUpstream(endpoint, `/predictions/${id}/cancel`, {
          method: 'POST',
          signal: AbortSignal.timeout(5_000),
        });
    },
    streamChat() {
      throw new ProviderRejectedError(
        `The upstream ${endpoint.name} runs Replicate predictions; it has no chat here.`,
        'provider_rejected',
      );
    },
    run: (job, ctx) => runPrediction(replicate, job, ctx),
  };
}

/** One configured Replicate upstream and what its calls need. */
interface Replicate {
  endpoint: QueuedJobEndpoint & { models: Record<string, string> };
  http: SafeHttpClient;
  /** The base URL without its trailing slashes. */
  base: string;
}

/** A prediction being followed: the latest state the upstream gave, so a cancel takes its latest URL. */
interface Followed {
  prediction: Prediction & { id: string };
}

/**
 * Creates the prediction (or takes up the one a previous attempt created); leaves it waiting when
 * asked to detach and it is not already final, else follows it to its output file.
 */
async function runPrediction(replicate: Replicate, job: ProviderJob, ctx: ProviderContext): Promise<ProviderResult> {
  const { endpoint } = replicate;
  const model = modelOf(replicate, job);
  const resumed = resumeOf(ctx.resume);
  const followed: Followed = { prediction: resumed ?? (await create(replicate, job, model, ctx)) };
  const { id } = followed.prediction;
  ctx.heartbeat({ id });
  if (!resumed && ctx.detach && !PREDICTION_ENDED.has(followed.prediction.status ?? ''))
    return waitingOn(endpoint, id, { id });
  const cancelPrediction = () =>
    callUpstream(endpoint, '', {
      method: 'POST',
      url: followed.prediction.urls?.cancel ?? `${replicate.base}/predictions/${id}/cancel`,
      signal: AbortSignal.timeout(5_000),
    });
  return cancellingOnAbort(ctx.signal, cancelPrediction, async () => {
    await untilEnded(replicate, followed, ctx);
    return { file: await outputOf(replicate, followed.prediction, job, ctx) };
  });
}

/** The Replicate model configured for the job's model; a chat, or a model not configured, is refused. */
function modelOf(replicate: Replicate, job: ProviderJob): string {
  const model = replicate.endpoint.models[job.model];
  if (!model || job.kind === 'chat')
    throw new ProviderRejectedError(
      `The upstream ${replicate.endpoint.name} is not configured for ${job.kind} ${job.model}.`,
      'provider_rejected',
    );
  return model;
}

/** Creates the prediction: of an official model by its name, or of a version by its id. */
async function create(
  replicate: Replicate,
  job: ProviderJob,
  model: string,
  ctx: ProviderContext,
): Promise<Prediction & { id: string }> {
  const { endpoint } = replicate;
  const [owned, version] = model.includes(':')
    ? (model.split(':', 2) as [string, string])
    : /^[0-9a-f]{64}$/.test(model)
      ? [undefined, model]
      : [model, undefined];
  const input = inputOf(job);
  // A short job waits for its answer in the call; Replicate holds a request at most 60 s.
  const wait = job.kind === 'video' ? undefined : Math.max(1, Math.min(60, Math.floor(endpoint.timeoutMs / 1000) - 1));
  // Replicate POSTs the final prediction there; the other events (start, output, logs) are not asked for.
  const hook =
    ctx.detach && endpoint.webhookUrl ? { webhook: endpoint.webhookUrl, webhook_events_filter: ['completed'] } : {};
  const res = await callUpstream(endpoint, version ? '/predictions' : `/models/${owned}/predictions`, {
    signal: ctx.signal,
    body: version ? { version, input, ...hook } : { input, ...hook },
    ...(wait === undefined ? {} : { headers: { prefer: `wait=${wait}` } }),
  });
  const body = (await res.json()) as Prediction;
  if (typeof body.id !== 'string')
    throw new ProviderRejectedError(
      `The upstream ${endpoint.name} accepted the prediction without an id.`,
      'provider_failed',
    );
  return body as Prediction & { id: string };
}

/** Polls the prediction (at the URL it names) until its status is final, heartbeating its id. */
async function untilEnded(replicate: Replicate, followed: Followed, ctx: ProviderContext): Promise<void> {
  const { id } = followed.prediction;
  while (!PREDICTION_ENDED.has(followed.prediction.status ?? '')) {
    await pause(replicate.endpoint.pollMs, ctx.signal);
    const res = await callUpstream(replicate.endpoint, '', {
      url: followed.prediction.urls?.get ?? `${replicate.base}/predictions/${id}`,
      signal: ctx.signal,
    });
    followed.prediction = { ...((await res.json()) as Prediction), id };
    ctx.heartbeat({ id });
  }
}

/** The ended prediction's output file, downloaded; a prediction that did not succeed is a final failure. */
async function outputOf(replicate: Replicate, prediction: Prediction, job: ProviderJob, ctx: ProviderContext) {
  const { endpoint } = replicate;
  if (prediction.status !== 'succeeded') throw predictionFailure(replicate, prediction);
  ctx.progress?.(100);
  const url = firstUrl(prediction.output);
  if (!url)
    throw new ProviderRejectedError(
      `The upstream ${endpoint.name} succeeded without an output file.`,
      'provider_failed',
    );
  const file = await downloadOutput(endpoint, url, replicate.http, ctx.signal);
  return { ...file, extension: extensionOf(file.contentType, job.kind === 'video' ? 'mp4' : 'png') };
}

/** A failed or cancelled prediction's reason: a refusal of the content, or the upstream's own failure. */
function predictionFailure(replicate: Replicate, prediction: Prediction): ProviderRejectedError {
  const reason =
    typeof prediction.error === 'string' ? prediction.error : JSON.stringify(prediction.error ?? prediction.status);
  return new ProviderRejectedError(
    `The upstream ${replicate.endpoint.name} ended the prediction ${prediction.status}: ${reason}`,
    /content|policy|safety|nsfw/i.test(reason) ? 'content_policy' : 'provider_failed',
  );
}

async function read(replicate: Replicate, id: string, signal: AbortSignal): Promise<Prediction> {
  const res = await callUpstream(replicate.endpoint, '', { url: `${replicate.base}/predictions/${id}`, signal });
  return (await res.json()) as Prediction;
}

export const PREDICTION_ENDED: ReadonlySet<string> = new Set(['succeeded', 'failed', 'canceled']);

interface Prediction {
  id?: string;
  status?: string;
  output?: unknown;
  error?: unknown;
  urls?: { get?: string; cancel?: string };
}

/** The job's input as Replicate's common image and video models name it. */
function inputOf(job: ProviderJob): Record<string, unknown> {
  const image = job.input ? `data:image/png;base64,${job.input.toString('base64')}` : undefined;
  if (job.kind === 'upscale') return { image, scale: job.params.scale };
  if (job.kind === 'video')
    return {
      prompt: job.prompt,
      duration: job.params.seconds,
      aspect_ratio: job.params.aspect,
      resolution: job.params.resolution,
      ...(image ? { image } : {}),
    };
  // An edit: the image to edit as `image` (more as `image_input`), its mask as `mask`, as Replicate's edit models name them.
  const dataUrl = (b: Buffer) => `data:${b[0] === 0xff ? 'image/jpeg' : 'image/png'};base64,${b.toString('base64')}`;
  const edit = job.inputs?.length
    ? {
        image: dataUrl(job.inputs[0]!),
        ...(job.inputs.length > 1 ? { image_input: job.inputs.map(dataUrl) } : {}),
        ...(job.mask ? { mask: dataUrl(job.mask) } : {}),
      }
    : {};
  return {
    prompt: job.prompt,
    width: job.params.width,
    height: job.params.height,
    aspect_ratio: job.params.aspect,
    ...edit,
  };
}

function firstUrl(output: unknown): string | undefined {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.find((o): o is string => typeof o === 'string');
  return undefined;
}

function resumeOf(details: unknown): (Prediction & { id: string }) | undefined {
  const d = details as { id?: unknown } | undefined;
  return typeof d?.id === 'string' ? { id: d.id, status: 'processing' } : undefined;
}
