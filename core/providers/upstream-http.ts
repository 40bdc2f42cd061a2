import { ProviderRejectedError } from '../errors';
import type { SafeHttpClient } from '../net/safe-http';
import type { ProviderJob, ProviderResult } from './types';

/**
 * What the real adapters share: calls to an operator-configured upstream, and how its answers
 * become final or retryable failures (STYLE: a refusal is final, a lost connection may pass).
 *
 * Trust: an upstream's base URL is chosen by the operator (it may be a model server on the private
 * network), so calls to it are not address-filtered; they use Node's fetch, whose connections are
 * kept alive and reused (a stream's first token should not wait for a TCP and TLS handshake), and
 * never follow redirects. A URL an upstream hands back (a generated file on some CDN) is another
 * matter: it is fetched through the SSRF-safe client, unless it is on the upstream's own origin.
 */

/** An upstream that may succeed if asked again: 408, 409, 425, 429, 5xx, a timeout or a lost connection. */
export class UpstreamUnavailableError extends Error {
  override readonly name = 'UpstreamUnavailableError';
}

export interface UpstreamEndpoint {
  /** For messages: which upstream (the configuration's name). */
  name: string;
  baseUrl: string;
  /** The Authorization header value, or undefined for none. */
  authorization: string | undefined;
  /** Headers every call carries besides (Anthropic's `x-api-key` and `anthropic-version`). */
  headers?: Record<string, string> | undefined;
  /** Time allowed to each call until its answer starts, and between two pieces of a stream. */
  timeoutMs: number;
}

const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 409, 425, 429]);

/** An upstream that names each of our models its own way (OpenAI-compatible and Anthropic endpoints). */
export type ModelMappedEndpoint = UpstreamEndpoint & { models: Record<string, string> };

/** The upstream's own name of the job's model; a model it is not configured for is refused. */
export function upstreamModel(endpoint: ModelMappedEndpoint, job: ProviderJob): string {
  const name = endpoint.models[job.model];
  if (!name)
    throw new ProviderRejectedError(
      `The upstream ${endpoint.name} is not configured for ${job.model}.`,
      'provider_rejected',
    );
  return name;
}

/** Calls the upstream: JSON in, the Response out (status already judged), with a time limit to the answer. */
export async function callUpstream(
  endpoint: UpstreamEndpoint,
  path: string,
  init: {
    method?: 'GET' | 'POST' | 'PUT';
    body?: unknown;
    /** A multipart body instead of JSON (OpenAI's image edits). */
    form?: FormData;
    signal: AbortSignal;
    url?: string;
    headers?: Record<string, string>;
  },
): Promise<Response> {
  const url = init.url ?? `${endpoint.baseUrl.replace(/\/+$/, '')}${path}`;
  // The limit runs until the answer starts; a stream's body has its own limit between pieces.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new Error('timeout')), endpoint.timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method ?? (init.body === undefined && init.form === undefined ? 'GET' : 'POST'),
      headers: {
        accept: 'application/json, text/event-stream',
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(endpoint.authorization ? { authorization: endpoint.authorization } : {}),
        ...endpoint.headers,
        ...init.headers,
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      ...(init.form === undefined ? {} : { body: init.form }),
      redirect: 'error',
      signal: AbortSignal.any([init.signal, deadline.signal]),
    });
  } catch (err) {
    if (init.signal.aborted) throw err;
    const what = deadline.signal.aborted
      ? `did not answer within ${endpoint.timeoutMs} ms`
      : `could not be reached (${(err as Error).message})`;
    throw new UpstreamUnavailableError(`The upstream ${endpoint.name} ${what}.`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
  if (res.ok) return res;
  throw await failureOf(endpoint, res);
}

/** An upstream's refusal as a failure: final (ProviderRejectedError) or retryable (UpstreamUnavailableError). */
export async function failureOf(endpoint: UpstreamEndpoint, res: Response): Promise<Error> {
  const text = await res.text().catch(() => '');
  const detail = upstreamMessage(text);
  const message = `The upstream ${endpoint.name} answered ${res.status}${detail ? `: ${detail}` : ''}`;
  if (res.status >= 500 || RETRYABLE_STATUSES.has(res.status)) return new UpstreamUnavailableError(message);
  if (/content[_ ]?policy|safety|moderation/i.test(text)) return new ProviderRejectedError(message, 'content_policy');
  // 400 and 422 are about the request; 401, 403, 404 are about our configuration (key, model).
  if (res.status === 400 || res.status === 422) return new ProviderRejectedError(message, 'invalid_request');
  return new ProviderRejectedError(message, 'provider_rejected');
}

/** The message of an OpenAI-style (`{ error: { message } }`) or fal-style (`{ detail }`) error body, kept short. */
function upstreamMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; detail?: unknown; message?: unknown };
    const m = typeof body.error === 'object' ? body.error.message : (body.error ?? body.detail ?? body.message);
    if (typeof m === 'string') return m.slice(0, 300);
    if (m !== undefined) return JSON.stringify(m).slice(0, 300);
  } catch {
    // not JSON
  }
  return text.slice(0, 300);
}

/**
 * The lines of a Server-Sent Events body, each `data:` payload in turn, with a time limit between
 * two pieces: an upstream that stalls mid-stream fails like one that does not answer.
 */
export async function* sseData(endpoint: UpstreamEndpoint, res: Response, signal: AbortSignal): AsyncGenerator<string> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const next = await withIdleLimit(reader.read(), endpoint, signal);
      if (next.done) break;
      buffer += decoder.decode(next.value as Uint8Array, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, '');
        buffer = buffer.slice(newline + 1);
        if (line.startsWith('data:')) yield line.slice(5).trimStart();
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

function withIdleLimit<T>(read: Promise<T>, endpoint: UpstreamEndpoint, signal: AbortSignal): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new UpstreamUnavailableError(`The upstream ${endpoint.name} sent nothing for ${endpoint.timeoutMs} ms.`),
        ),
      endpoint.timeoutMs,
    );
  });
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason as Error);
    signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
  return Promise.race([read, idle, aborted]).finally(() => clearTimeout(timer));
}

/** A file an upstream produced, by URL: from its own origin directly, from anywhere else SSRF-safely. */
export async function downloadOutput(
  endpoint: UpstreamEndpoint,
  url: string,
  http: SafeHttpClient,
  signal: AbortSignal,
): Promise<{ data: Buffer; contentType: string }> {
  if (url.startsWith('data:')) {
    const match = /^data:([^;,]+)?(;base64)?,(.*)$/s.exec(url);
    if (!match) throw new ProviderRejectedError('The upstream returned a malformed data URL.', 'provider_rejected');
    return {
      data: Buffer.from(match[3]!, match[2] ? 'base64' : 'utf8'),
      contentType: match[1] ?? 'application/octet-stream',
    };
  }
  if (new URL(url).origin === new URL(endpoint.baseUrl).origin) {
    const res = await callUpstream(endpoint, '', { url, signal });
    return {
      data: Buffer.from(await res.arrayBuffer()),
      contentType: res.headers.get('content-type') ?? 'application/octet-stream',
    };
  }
  try {
    const res = await http.request(url, {
      method: 'GET',
      redirect: { follow: 3 },
      timeoutMs: Math.max(endpoint.timeoutMs, 60_000),
      maxResponseBytes: 512 * 1024 * 1024,
      signal,
    });
    if (res.status !== 200)
      throw new UpstreamUnavailableError(`The output of ${endpoint.name} answered ${res.status}.`);
    const type = res.headers['content-type'];
    return { data: res.body, contentType: typeof type === 'string' ? type : 'application/octet-stream' };
  } catch (err) {
    const retryable = (err as { retryable?: boolean }).retryable;
    if (retryable === false)
      throw new ProviderRejectedError(
        `The output of ${endpoint.name} could not be fetched: ${(err as Error).message}`,
        'provider_rejected',
      );
    throw err;
  }
}

/** The file extension for a content type of an output. */
export function extensionOf(contentType: string, fallback: string): string {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const known: Record<string, string> = {
    'image/png': 'png',
    'image/jpeg': 'jpg',
    'image/webp': 'webp',
    'video/mp4': 'mp4',
    'video/webm': 'webm',
    'video/quicktime': 'mov',
  };
  return known[type] ?? fallback;
}

/** Waits between two polls of an upstream job; a cancelled run stops waiting at once. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

/** An upstream that runs a job in its own queue, polled, or calling back when one is configured. */
export interface QueuedJobEndpoint extends UpstreamEndpoint {
  pollMs: number;
  slowPollMs: number;
  webhookUrl?: string | undefined;
}

/** A run's answer that leaves the upstream's job running, to be taken up again (as `resume`) when it ends. */
export function waitingOn(endpoint: QueuedJobEndpoint, jobId: string, resume: unknown): ProviderResult {
  // With a webhook the upstream tells when the job ends; the slow poll is for a call that never comes.
  const pollMs = endpoint.webhookUrl ? endpoint.slowPollMs : endpoint.pollMs;
  return { waiting: { upstream: endpoint.name, jobId, resume, pollMs } };
}

/** Runs `work`; a run cancelled meanwhile asks the upstream to stop its job too. */
export async function cancellingOnAbort<T>(
  signal: AbortSignal,
  cancelJob: () => Promise<unknown>,
  work: () => Promise<T>,
): Promise<T> {
  const onAbort = () => {
    // Best effort: the generation is already failing; the upstream should stop working on it.
    void cancelJob().catch(() => undefined);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await work();
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
