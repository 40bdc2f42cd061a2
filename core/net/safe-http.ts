import * as http from 'node:http';
import * as https from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { describeAddressClass } from './address-policy';
import {
  FetchTimeoutError,
  OutboundNetworkError,
  OutboundRequestError,
  ResponseTooLargeError,
  TooManyRedirectsError,
  UnsafeAddressError,
} from './errors';
import { createGuardedAgents, type ConnectionGuard } from './guarded-agent';
import { parseSafeUrl } from './safe-url';

/** Follow up to `follow` redirects, each hop checked like the first; or hand a 3xx back as is. */
export type RedirectPolicy = 'manual' | { follow: number };

export interface SafeRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** For the whole exchange: DNS, connect, every redirect and the body. */
  timeoutMs?: number;
  maxResponseBytes?: number;
  /**
   * A body longer than `maxResponseBytes`: `error` (default) fails with ResponseTooLargeError;
   * `truncate` keeps the first `maxResponseBytes` and closes the connection, for callers that only
   * need the status and a prefix to log (a webhook receiver's 2xx counts, however long its answer).
   */
  overflow?: 'error' | 'truncate';
  redirect?: RedirectPolicy;
  /** The caller's own cancellation, e.g. a Temporal activity's. */
  signal?: AbortSignal;
}

export interface SafeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Where the body came from, after redirects. */
  url: string;
  /** The body was cut at `maxResponseBytes` (only with `overflow: 'truncate'`). */
  truncated?: boolean;
  /** The IP address the answer came from (the last hop's). */
  remoteAddress?: string;
}

export interface SafeHttpClient {
  request(url: string | URL, options?: SafeRequestOptions): Promise<SafeResponse>;
  /** Frees the agents; nothing is pooled, so this only matters to tests that count handles. */
  close(): void;
}

export const DEFAULT_TIMEOUT_MS = 15_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

/** An upscale input or a group B `image_url`: a CDN or a presigned URL may redirect a few times. */
export const IMAGE_DOWNLOAD = {
  method: 'GET',
  redirect: { follow: 3 },
  timeoutMs: 30_000,
  maxResponseBytes: 25 * 1024 * 1024,
} as const satisfies SafeRequestOptions;

/**
 * A webhook POST (DESIGN §6): a redirect is answered, not followed, so a receiver cannot bounce
 * a signed payload elsewhere; any status comes back for the delivery log. Only the status decides
 * the outcome, so an answer of any length counts: its first 64 KiB are read, the rest is dropped.
 */
export const WEBHOOK_DELIVERY = {
  method: 'POST',
  redirect: 'manual',
  timeoutMs: 15_000,
  maxResponseBytes: 64 * 1024,
  overflow: 'truncate',
} as const satisfies SafeRequestOptions;

const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
/** Headers that belong to the origin they were sent to, not to wherever it redirects. */
const ORIGIN_BOUND_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding'];

interface Hop {
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

type Exchange =
  | {
      kind: 'response';
      status: number;
      headers: IncomingHttpHeaders;
      body: Buffer;
      truncated?: boolean;
      remoteAddress?: string;
    }
  | { kind: 'redirect'; status: number; location: string };

export function createSafeHttpClient(guard: ConnectionGuard): SafeHttpClient {
  const agents = createGuardedAgents(guard);

  async function request(input: string | URL, options: SafeRequestOptions = {}): Promise<SafeResponse> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const redirect = options.redirect ?? 'manual';
    let url = parseSafeUrl(input);
    let hop = firstHop(options);

    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new FetchTimeoutError(timeoutMs)), timeoutMs);
    const signal = options.signal ? AbortSignal.any([deadline.signal, options.signal]) : deadline.signal;
    try {
      for (let redirects = 0; ; redirects++) {
        const result = await exchange(agents, url, hop, {
          signal,
          maxBytes,
          truncate: options.overflow === 'truncate',
          followRedirects: redirect !== 'manual',
        });
        if (result.kind === 'response') {
          return {
            status: result.status,
            headers: result.headers,
            body: result.body,
            url: url.href,
            ...(result.truncated ? { truncated: true } : {}),
            ...(result.remoteAddress ? { remoteAddress: result.remoteAddress } : {}),
          };
        }
        const maxRedirects = redirect === 'manual' ? 0 : redirect.follow;
        if (redirects >= maxRedirects) throw new TooManyRedirectsError(maxRedirects);
        const next = parseSafeUrl(result.location, url);
        hop = redirectedHop(hop, result.status, url, next);
        url = next;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    request,
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** One request and its answer on the guarded agents: the response read within its limits, or the redirect it asks for. */
function exchange(
  agents: ReturnType<typeof createGuardedAgents>,
  url: URL,
  hop: Hop,
  limits: { signal: AbortSignal; maxBytes: number; truncate: boolean; followRedirects: boolean },
): Promise<Exchange> {
  const { signal, maxBytes, truncate, followRedirects } = limits;
  return new Promise<Exchange>((resolve, reject) => {
    if (signal.aborted) {
      reject(asError(signal.reason));
      return;
    }
    const secure = url.protocol === 'https:';
    const req = (secure ? https : http).request(url, {
      method: hop.method,
      headers: hop.headers,
      agent: secure ? agents.https : agents.http,
    });
    let response: IncomingMessage | undefined;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      outcome();
    };
    const fail = (error: Error) =>
      settle(() => {
        req.destroy();
        response?.destroy();
        reject(error);
      });
    const onAbort = () => fail(asError(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });

    req.on('error', (error) => fail(signal.aborted ? asError(signal.reason) : toOutboundError(error, url)));
    req.on('response', (res) => {
      response = res;
      const remote = res.socket?.remoteAddress;
      const from = remote ? { remoteAddress: remote } : {};
      res.on('error', (error) => fail(toOutboundError(error, url)));
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (followRedirects && REDIRECT_STATUSES.has(status) && location !== undefined) {
        // The body of a redirect is never read: the connection closes with it.
        settle(() => {
          res.destroy();
          resolve({ kind: 'redirect', status, location });
        });
        return;
      }
      const announced = Number(res.headers['content-length']);
      if (!truncate && Number.isFinite(announced) && announced > maxBytes) {
        fail(new ResponseTooLargeError(maxBytes));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size + chunk.length <= maxBytes) {
          size += chunk.length;
          chunks.push(chunk);
          return;
        }
        if (!truncate) {
          fail(new ResponseTooLargeError(maxBytes));
          return;
        }
        // Enough read: keep the prefix and close the connection instead of reading the rest.
        chunks.push(chunk.subarray(0, maxBytes - size));
        size = maxBytes;
        settle(() => {
          res.destroy();
          req.destroy();
          resolve({
            kind: 'response',
            status,
            headers: res.headers,
            body: Buffer.concat(chunks, size),
            truncated: true,
            ...from,
          });
        });
      });
      res.on('end', () =>
        settle(() =>
          resolve({ kind: 'response', status, headers: res.headers, body: Buffer.concat(chunks, size), ...from }),
        ),
      );
      res.on('close', () => {
        if (!res.complete) fail(new OutboundNetworkError(`The response from ${url.host} was cut short.`));
      });
    });
    req.end(hop.body);
  });
}

function firstHop(options: SafeRequestOptions): Hop {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
  const body = typeof options.body === 'string' ? Buffer.from(options.body) : options.body;
  if (body !== undefined) headers['content-length'] = String(body.length);
  return { method: (options.method ?? 'GET').toUpperCase(), headers, body };
}

/** What browsers do: 303, and 301/302 after a POST, continue as a GET without the body. */
function redirectedHop(hop: Hop, status: number, from: URL, to: URL): Hop {
  const headers = { ...hop.headers };
  if (to.origin !== from.origin) for (const name of ORIGIN_BOUND_HEADERS) delete headers[name];
  const becomesGet =
    (status === 303 && hop.method !== 'HEAD') || ((status === 301 || status === 302) && hop.method === 'POST');
  if (!becomesGet) return { ...hop, headers };
  for (const name of BODY_HEADERS) delete headers[name];
  return { method: 'GET', headers, body: undefined };
}

function toOutboundError(error: Error, url: URL): Error {
  if (error instanceof OutboundRequestError) return error;
  // request-filtering-agent's own refusal, reached only if it is stricter than our policy.
  if (/is not allowed\. Because/.test(error.message))
    return new UnsafeAddressError('reserved', describeAddressClass('reserved'));
  const code = (error as NodeJS.ErrnoException).code;
  return new OutboundNetworkError(`Could not complete the request to ${url.host}${code ? ` (${code})` : ''}.`, {
    cause: error,
  });
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new OutboundNetworkError('The request was aborted.');
}
