// Local HTTP servers on loopback that speak the upstream protocols the real adapters call: an
// OpenAI-compatible API (streaming chat, images) and a queue-style video API (submit, poll,
// result). Words in the prompt steer them, like the simulator's: `up:status=<code>` answers that
// status, `up:policy` makes it a content-policy refusal, `up:hang` never answers, `up:tokens=<n>`,
// `up:pace=<ms>` (between tokens), `up:first=<ms>` (before the first token, after the headers; a
// whole reply waits as long as its stream would take), `up:usage=<n>` (the usage it reports),
// `up:nousage`, `up:polls=<n>`, `up:pollfail=<n>` (that many status polls answer 503 first),
// `up:fail` (the video job or prediction fails), `up:leak=<marker>` (an error status's body names an internal
// path and the marker), `up:cut=<n>` (a stream breaks off after n deltas), `up:ms=<n>` (a video job or
// prediction ends n ms after it was submitted, whoever reads it), `up:nohook` (its webhook is never sent),
// `up:cached=<n>`, `up:cache_write=<n>` and `up:reasoning=<n>` (the cache and reasoning figures its usage
// reports, in the upstream's own rules of inclusion), and on the OpenAI-compatible server `up:nth=<k>`
// (`up:status` and `up:cut` hit only the k-th request with the same prompt: one of n choices fails;
// `up:late=<ms>` makes that refusal wait as long, so that the other choices end first).
// The fal and Replicate servers call back as their providers do when asked to (fal_webhook;
// webhook + webhook_events_filter), signed as each documents (ed25519 with keys served as a JWKS;
// Standard Webhooks with a whsec_ secret).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { signFalWebhook, signStandardWebhook } from '../../core/providers/callback-signatures';

export interface Received {
  method: string;
  path: string;
  authorization: string | undefined;
  /** Every header as the request carried it (lower-case names). */
  headers: IncomingHttpHeaders;
  body: Record<string, unknown> | undefined;
  /** Streams only: how many deltas were written before the client went away (undefined: it did not). */
  cutAfter?: number;
  /** How long the request was open before the client closed it unanswered (undefined: it did not). */
  closedAfterMs?: number;
}

export interface UpstreamServer {
  baseUrl: string;
  received: Received[];
  /** Directives this server obeys on every request beside the prompt's (e.g. `up:status=503`): one of two upstreams down. */
  always: { directives: string };
  close(): Promise<void>;
}

const directive = (text: string, name: string): string | undefined =>
  new RegExp(`(?:^|\\s)up:${name}(?:=(\\S+))?(?:\\s|$)`).exec(text)?.[1] ??
  (new RegExp(`(?:^|\\s)up:${name}(?:\\s|$)`).test(text) ? '' : undefined);

/** A request's JSON body; a multipart form as its fields, each file as `{ filename, type, size }`. */
async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  if (req.headers['content-type']?.startsWith('multipart/form-data')) {
    const form = await new Response(raw, { headers: { 'content-type': req.headers['content-type'] } }).formData();
    const fields: Record<string, unknown> = {};
    for (const [name, value] of form.entries()) {
      const field = typeof value === 'string' ? value : { filename: value.name, type: value.type, size: value.size };
      // Repeated names (image[]) gather into a list.
      fields[name] = name in fields ? [fields[name], field].flat() : field;
    }
    return fields;
  }
  const text = raw.toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
}

async function listen(server: Server, path = ''): Promise<{ baseUrl: string; close(): Promise<void> }> {
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface JsonRequest {
  req: IncomingMessage;
  res: ServerResponse;
  body: Record<string, unknown> | undefined;
  path: string;
  json: (status: number, data: unknown) => void;
}

/** A server of a JSON API that records every request it gets before `handle` answers it. */
function jsonServer(received: Received[], handle: (r: JsonRequest) => Promise<unknown>): Server {
  return createServer((req, res) => {
    void (async () => {
      const body = await readJson(req);
      const path = req.url ?? '';
      received.push({
        method: req.method ?? '',
        path,
        authorization: req.headers.authorization,
        headers: req.headers,
        body,
      });
      const json = (status: number, data: unknown) =>
        void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(data));
      await handle({ req, res, body, path, json });
    })();
  });
}

const promptOf = (body: Record<string, unknown> | undefined): string =>
  typeof body?.prompt === 'string' ? body.prompt : '';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `leak`: the error body names an internal path and the marker, as a careless upstream's traceback would. */
function refuse(res: ServerResponse, status: number, policy: boolean, leak?: string): void {
  const detail = leak
    ? `upstream-internal-detail-${leak} at /srv/provider/app.py:42`
    : `simulated upstream status ${status}`;
  const error = policy
    ? {
        message: 'Your request was rejected by the content_policy safety system.',
        type: 'invalid_request_error',
        code: 'content_policy_violation',
      }
    : { message: detail, type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
}

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];

/** An OpenAI-compatible API on loopback: /v1/chat/completions (whole or streamed), /v1/images/generations and /v1/images/edits (multipart). */
export async function startOpenAiUpstream(): Promise<UpstreamServer> {
  const received: Received[] = [];
  const always = { directives: '' };
  /** How many requests each prompt has come with (`up:nth`). */
  const asked = new Map<string, number>();
  const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#3a6' } })
    .png()
    .toBuffer();
  const server = createServer((req, res) => {
    const opened = performance.now();
    void (async () => {
      const body = await readJson(req);
      const record: Received = {
        method: req.method ?? '',
        path: req.url ?? '',
        authorization: req.headers.authorization,
        headers: req.headers,
        body,
      };
      received.push(record);
      res.once('close', () => {
        if (!res.writableEnded) record.closedAfterMs = performance.now() - opened;
      });
      const messages = Array.isArray(body?.messages) ? (body.messages as { content?: unknown }[]) : [];
      const text = `${messages.length > 0 ? messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join(' ') : promptOf(body)} ${always.directives}`;
      if (directive(text, 'hang') !== undefined) return; // never answers
      asked.set(text, (asked.get(text) ?? 0) + 1);
      const nth = directive(text, 'nth');
      const failing = nth === undefined || Number(nth) === asked.get(text);
      const status = failing ? Number(directive(text, 'status') ?? 0) : 0;
      if (status) {
        const late = Number(directive(text, 'late') ?? 0);
        if (late) await sleep(late);
        return refuse(res, status, directive(text, 'policy') !== undefined, directive(text, 'leak'));
      }

      if (req.url === '/v1/images/generations' || req.url === '/v1/images/edits') {
        return res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ created: 1, data: [{ b64_json: png.toString('base64') }] }));
      }
      if (req.url !== '/v1/chat/completions') return refuse(res, 404, false);

      const cap = typeof body?.max_tokens === 'number' ? body.max_tokens : Infinity;
      const count = Math.min(Number(directive(text, 'tokens') ?? 5), cap);
      const pace = Number(directive(text, 'pace') ?? 0);
      const first = Number(directive(text, 'first') ?? 0);
      const usage = directive(text, 'nousage') !== undefined ? undefined : Number(directive(text, 'usage') ?? count);
      const openAiUsage = (completion: number) => openAiUsageFigures(text, completion);
      const pieces = Array.from({ length: count }, (_, i) => `${i === 0 ? '' : ' '}${WORDS[i % WORDS.length]!}`);
      const model = String(body?.model);
      if (body?.stream !== true) {
        // As long as the same reply streamed would take.
        const wait = first + pace * Math.max(0, count - 1);
        if (wait) await sleep(wait);
        return res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'up-1',
            object: 'chat.completion',
            created: 1,
            model,
            choices: [{ index: 0, message: { role: 'assistant', content: pieces.join('') }, finish_reason: 'stop' }],
            ...(usage === undefined ? {} : { usage: openAiUsage(usage) }),
          }),
        );
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const tool = toolCallWanted(body);
      if (tool) {
        // A function call, as OpenAI streams one: the call named first, its arguments in pieces.
        const send = (delta: unknown, finish: string | null = null) =>
          res.write(
            `data: ${JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
          );
        send({
          role: 'assistant',
          content: null,
          tool_calls: [{ index: 0, id: 'call_up1', type: 'function', function: { name: tool, arguments: '' } }],
        });
        for (const piece of ['{"city":', '"Paris"}'])
          send({ tool_calls: [{ index: 0, function: { arguments: piece } }] });
        send({}, 'tool_calls');
        res.write(
          `data: ${JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 1, model, choices: [], usage: openAiUsage(7) })}\n\n`,
        );
        return res.end('data: [DONE]\n\n');
      }
      if (first) {
        res.flushHeaders();
        await sleep(first);
      }
      const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      const cut = failing ? directive(text, 'cut') : undefined;
      for (const [i, piece] of pieces.entries()) {
        if (i > 0 && pace) await sleep(pace);
        if (cut !== undefined && i === Number(cut)) {
          res.destroy();
          return;
        }
        if (res.destroyed) {
          record.cutAfter = i;
          return;
        }
        send({
          id: 'up-1',
          object: 'chat.completion.chunk',
          created: 1,
          model,
          choices: [
            {
              index: 0,
              delta: i === 0 ? { role: 'assistant', content: piece } : { content: piece },
              logprobs: body.logprobs === true ? { content: [logprobOf(piece, Number(body.top_logprobs ?? 0))] } : null,
              finish_reason: null,
            },
          ],
        });
      }
      send({
        id: 'up-1',
        object: 'chat.completion.chunk',
        created: 1,
        model,
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
      });
      const wantsUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      if (wantsUsage && usage !== undefined)
        send({
          id: 'up-1',
          object: 'chat.completion.chunk',
          created: 1,
          model,
          choices: [],
          usage: openAiUsage(usage),
        });
      res.end('data: [DONE]\n\n');
    })();
  });
  const listening = await listen(server, '/v1');
  return { ...listening, received, always };
}

/** OpenAI's log probability of a streamed piece, with `top` likeliest tokens (the piece first). */
function logprobOf(piece: string, top: number) {
  const entry = (token: string, logprob: number) => ({ token, logprob, bytes: [...Buffer.from(token)] });
  return {
    ...entry(piece, -0.25),
    top_logprobs: Array.from({ length: top }, (_, i) => (i === 0 ? entry(piece, -0.25) : entry(` alt${i}`, -2 - i))),
  };
}

/**
 * OpenAI's usage for a reply of `completion` visible tokens: a prompt of 3 tokens besides the
 * cache read and written (`up:cached`, `up:cache_write`), counted in prompt_tokens, and reasoning
 * (`up:reasoning`) counted in completion_tokens, as OpenAI counts them.
 */
function openAiUsageFigures(text: string, completion: number) {
  const cached = Number(directive(text, 'cached') ?? 0);
  const written = Number(directive(text, 'cache_write') ?? 0);
  const reasoning = Number(directive(text, 'reasoning') ?? 0);
  const prompt = 3 + cached + written;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion + reasoning,
    total_tokens: prompt + completion + reasoning,
    prompt_tokens_details: { cached_tokens: cached, ...(written ? { cache_write_tokens: written } : {}) },
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
}

/**
 * The function this upstream calls: the first one offered, unless the choice is none or the last
 * turn already answers a call (then it replies in text, as a model would with the result).
 */
function toolCallWanted(body: Record<string, unknown> | undefined): string | undefined {
  const tools = body?.tools as { function?: { name?: string } }[] | undefined;
  const messages = (body?.messages ?? []) as { role?: string }[];
  if (!tools?.length || body?.tool_choice === 'none' || messages.at(-1)?.role === 'tool') return undefined;
  return tools[0]?.function?.name;
}

/** A webhook a local upstream sent (or would have sent), as it went: to replay it, or a forgery of it. */
export interface SentWebhook {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Our answer. */
  status: number;
}

/** Posts a signed webhook the way an upstream does, and keeps it in `sent`. */
async function callBack(
  sent: SentWebhook[],
  url: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<void> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  }).catch(() => undefined);
  sent.push({ url, headers, body, status: res?.status ?? 0 });
  await res?.text();
}

/**
 * A queue-style video API on loopback, as fal.ai's queue: submit, poll the status, fetch the result
 * and its file; with `?fal_webhook=<url>` on the submit, the outcome is POSTed there when the job
 * ends, signed with this server's ed25519 key, whose public half it serves at /.well-known/jwks.json.
 */
export async function startQueueVideoUpstream(): Promise<
  UpstreamServer & {
    submits: () => number;
    statusReads: () => number;
    jwksUrl: string;
    webhooks: SentWebhook[];
    privateKey: KeyObject;
    cancels: () => string[];
    endJob: (id: string) => void;
  }
> {
  const received: Received[] = [];
  const always = { directives: '' };
  const jobs = new Map<
    string,
    { prompt: string; polls: number; pollFailures: number; endsAt?: number; callBack?: () => void }
  >();
  const webhooks: SentWebhook[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const cancelled: string[] = [];
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwks = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'local', use: 'sig', alg: 'EdDSA' }] };
  let base = '';
  const webm = Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01]);
  const failed = (job: { prompt: string }) => directive(job.prompt, 'fail') !== undefined;
  const server = jsonServer(received, async ({ req, res, body, path, json }) => {
    if (path.startsWith('/files/')) return res.writeHead(200, { 'content-type': 'video/webm' }).end(webm);
    if (path === '/.well-known/jwks.json') return json(200, jwks);
    const request = /^\/(.+)\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(path);
    if (request) {
      const job = jobs.get(request[2]!);
      if (!job) return json(404, { detail: 'no such request' });
      if (request[3] === '/cancel') {
        cancelled.push(request[2]!);
        return json(202, { status: 'CANCELLATION_REQUESTED' });
      }
      if (request[3] === '/status') {
        if (job.pollFailures > 0) {
          job.pollFailures--;
          return json(503, { detail: 'busy' });
        }
        job.polls--;
        const ended = job.endsAt === undefined ? job.polls <= 0 : Date.now() >= job.endsAt;
        if (failed(job) && ended) return json(200, { status: 'FAILED', error: 'the model could not render this' });
        return json(200, { status: ended ? 'COMPLETED' : job.polls === 1 ? 'IN_PROGRESS' : 'IN_QUEUE' });
      }
      return json(200, { video: { url: `${base}/files/${request[2]!}.webm`, content_type: 'video/webm' } });
    }
    if (req.method !== 'POST') return json(404, { detail: 'not found' });
    const prompt = `${promptOf(body)} ${always.directives}`;
    if (directive(prompt, 'hang') !== undefined) return;
    const status = Number(directive(prompt, 'status') ?? 0);
    if (status)
      return json(status, {
        detail:
          directive(prompt, 'policy') !== undefined
            ? 'content policy violation'
            : `simulated upstream status ${status}`,
      });
    const id = `req-${jobs.size + 1}`;
    const ms = directive(prompt, 'ms');
    const job: { prompt: string; polls: number; pollFailures: number; endsAt?: number; callBack?: () => void } = {
      prompt,
      polls: Number(directive(prompt, 'polls') ?? 2),
      pollFailures: Number(directive(prompt, 'pollfail') ?? 0),
      ...(ms === undefined ? {} : { endsAt: Date.now() + Number(ms) }),
    };
    jobs.set(id, job);
    const hook = new URL(path, 'http://x').searchParams.get('fal_webhook');
    if (hook && ms !== undefined && directive(prompt, 'nohook') === undefined) {
      const timer = setTimeout(() => job.callBack?.(), Number(ms));
      timers.add(timer);
      job.callBack = () => {
        job.callBack = undefined;
        clearTimeout(timer);
        timers.delete(timer);
        const outcome = failed(job)
          ? {
              request_id: id,
              gateway_request_id: id,
              status: 'ERROR',
              error: 'the model could not render this',
              payload: { detail: 'the model could not render this' },
            }
          : {
              request_id: id,
              gateway_request_id: id,
              status: 'OK',
              payload: { video: { url: `${base}/files/${id}.webm`, content_type: 'video/webm' } },
            };
        const raw = Buffer.from(JSON.stringify(outcome));
        void callBack(
          webhooks,
          hook,
          signFalWebhook(privateKey, id, 'local-user', Math.floor(Date.now() / 1000), raw),
          raw,
        );
      };
    }
    // Status and result URLs are left out: the adapter builds them from the model path.
    return json(200, { request_id: id, gateway_request_id: id });
  });
  const listening = await listen(server);
  base = listening.baseUrl;
  return {
    ...listening,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      await listening.close();
    },
    received,
    always,
    webhooks,
    privateKey,
    jwksUrl: `${base}/.well-known/jwks.json`,
    submits: () => received.filter((r) => r.method === 'POST' && !r.path.includes('/requests/')).length,
    statusReads: () => received.filter((r) => r.path.endsWith('/status')).length,
    cancels: () => [...cancelled],
    /** Ends a job now, as if it had been rendered, and sends its webhook if it has one to send. */
    endJob: (id: string) => {
      const job = jobs.get(id)!;
      job.endsAt = Date.now();
      job.callBack?.();
    },
  };
}

/**
 * Replicate's predictions API on loopback (base `/v1`), as its HTTP API reference describes it:
 * create by model (`POST /v1/models/{owner}/{name}/predictions`) or by version (`POST
 * /v1/predictions`), `Prefer: wait[=n]` holding the answer until the prediction is final, `GET
 * /v1/predictions/{id}`, `POST /v1/predictions/{id}/cancel`; outputs are URLs of files it serves.
 * `up:polls=<n>`: the prediction is final after that many reads (0 with `Prefer: wait`: final in
 * the create call's answer).
 */
export async function startReplicateUpstream(): Promise<
  UpstreamServer & {
    predictions: Map<string, Record<string, unknown>>;
    cancels: () => string[];
    secret: string;
    webhooks: SentWebhook[];
    reads: () => number;
  }
> {
  const received: Received[] = [];
  const always = { directives: '' };
  const predictions = new Map<string, Record<string, unknown>>();
  const left = new Map<string, number>();
  const endsAt = new Map<string, number>();
  const cancelled: string[] = [];
  const webhooks: SentWebhook[] = [];
  const timers = new Set<NodeJS.Timeout>();
  // What GET /v1/webhooks/default/secret answers on Replicate.
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  let base = '';
  const png = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#a36' } })
    .png()
    .toBuffer();
  const server = jsonServer(received, async ({ req, res, body, path, json }) => {
    if (path.startsWith('/v1/files/')) return res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    /** One read of a prediction: it moves on towards its end. */
    const advance = (id: string): Record<string, unknown> => {
      const p = predictions.get(id)!;
      if (p.status === 'canceled' || p.status === 'succeeded' || p.status === 'failed') return p;
      const n = left.get(id)! - 1;
      left.set(id, n);
      const at = endsAt.get(id);
      if (at === undefined ? n > 0 : Date.now() < at) return Object.assign(p, { status: 'processing' });
      const input = p.input as { prompt?: string };
      if (directive(`${input.prompt ?? ''} ${always.directives}`, 'fail') !== undefined)
        return Object.assign(p, { status: 'failed', error: 'NSFW content detected by the safety checker' });
      return Object.assign(p, {
        status: 'succeeded',
        output: [`${base}/files/${id}.png`],
        completed_at: new Date().toISOString(),
      });
    };
    const one = /^\/v1\/predictions\/([^/]+)(\/cancel)?$/.exec(path);
    if (one) {
      const p = predictions.get(one[1]!);
      if (!p)
        return json(404, { title: 'Not found', detail: 'The requested resource could not be found.', status: 404 });
      if (one[2] && req.method === 'POST') {
        cancelled.push(one[1]!);
        if (p.status === 'starting' || p.status === 'processing') Object.assign(p, { status: 'canceled' });
        return json(200, p);
      }
      return json(200, advance(one[1]!));
    }
    const byModel = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(path);
    if (req.method !== 'POST' || (!byModel && path !== '/v1/predictions'))
      return json(404, { title: 'Not found', detail: 'The requested resource could not be found.', status: 404 });
    if (!byModel && typeof body?.version !== 'string')
      return json(422, { title: 'Input validation failed', detail: '- version: version is required', status: 422 });
    const input = (body?.input ?? {}) as Record<string, unknown>;
    const text = `${typeof input.prompt === 'string' ? input.prompt : ''} ${always.directives}`;
    if (directive(text, 'hang') !== undefined) return;
    const status = Number(directive(text, 'status') ?? 0);
    if (status)
      return json(status, {
        title: 'Error',
        detail:
          directive(text, 'policy') !== undefined ? 'content policy violation' : `simulated upstream status ${status}`,
        status,
      });
    const id = `rp${predictions.size + 1}x${Math.random().toString(36).slice(2, 8)}`;
    const p: Record<string, unknown> = {
      id,
      model: byModel ? `${byModel[1]}/${byModel[2]}` : String(body?.version).split(':')[0],
      version: byModel ? 'hidden' : body?.version,
      input,
      logs: '',
      output: null,
      data_removed: false,
      error: null,
      status: 'starting',
      created_at: new Date().toISOString(),
      urls: {
        get: `${base}/predictions/${id}`,
        cancel: `${base}/predictions/${id}/cancel`,
        web: `https://replicate.com/p/${id}`,
      },
    };
    predictions.set(id, p);
    left.set(id, Number(directive(text, 'polls') ?? 2));
    const ms = directive(text, 'ms');
    if (ms !== undefined) endsAt.set(id, Date.now() + Number(ms));
    const filter = Array.isArray(body?.webhook_events_filter)
      ? body.webhook_events_filter
      : ['start', 'output', 'logs', 'completed'];
    if (
      typeof body?.webhook === 'string' &&
      ms !== undefined &&
      filter.includes('completed') &&
      directive(text, 'nohook') === undefined
    ) {
      const hook = body.webhook;
      const timer = setTimeout(() => {
        timers.delete(timer);
        // Due now: a timer may fire before Date.now() reaches the end set beside it (it counts from
        // the event loop's cached time), and the webhook would then say "processing" and be ignored.
        endsAt.set(id, Date.now());
        const raw = Buffer.from(JSON.stringify(advance(id)));
        void callBack(
          webhooks,
          hook,
          signStandardWebhook(secret, `msg_${randomBytes(12).toString('hex')}`, Math.floor(Date.now() / 1000), raw),
          raw,
        );
      }, Number(ms));
      timers.add(timer);
    }
    // Prefer: wait holds the answer until the prediction is final (here: when it needs no reads).
    const wait = /^wait(=\d+)?$/.exec(String(req.headers.prefer ?? ''));
    if (wait && left.get(id)! <= 0) advance(id);
    return json(201, p);
  });
  const listening = await listen(server, '/v1');
  base = listening.baseUrl;
  return {
    ...listening,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      await listening.close();
    },
    received,
    always,
    predictions,
    secret,
    webhooks,
    cancels: () => [...cancelled],
    reads: () => received.filter((r) => r.method === 'GET' && /^\/v1\/predictions\/[^/]+$/.test(r.path)).length,
  };
}

/**
 * Anthropic's Messages API on loopback, written from Anthropic's public API reference:
 * `POST /v1/messages` needs `x-api-key` and an `anthropic-version` date (401 and 400 otherwise), a model,
 * `max_tokens` and messages that start with a user turn and alternate; every error is Anthropic's
 * `{ type: "error", error: { type, message } }` (overloaded is 529). A streamed reply is its event
 * sequence: message_start with the input usage, ping, a content block per text or tool_use
 * (input_json_delta pieces), message_delta with the stop reason and output usage, message_stop.
 * With tools it calls one when tool_choice is any or names it, or the last user turn names it;
 * after a tool_result it answers in words. Directives as the OpenAI server's: `up:status=<code>`,
 * `up:tokens=<n>`, `up:hang`; and `up:overload_after=<n>`, a stream's `error` event (overloaded)
 * after n text deltas; `always` applies to every request.
 */
export async function startAnthropicUpstream(): Promise<UpstreamServer> {
  const received: Received[] = [];
  const always = { directives: '' };
  const error = (res: ServerResponse, status: number, type: string, message: string) =>
    void res
      .writeHead(status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ type: 'error', error: { type, message } }));
  const server = jsonServer(received, async ({ req, res, body, path }) => {
    if (path !== '/v1/messages' || req.method !== 'POST') return error(res, 404, 'not_found_error', 'Not found');
    if (typeof req.headers['x-api-key'] !== 'string')
      return error(res, 401, 'authentication_error', 'x-api-key header is required');
    if (!/^\d{4}-\d{2}-\d{2}$/.test(String(req.headers['anthropic-version'])))
      return error(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    type Block = { type: string; text?: string; name?: string; content?: unknown };
    const messages = (Array.isArray(body?.messages) ? body.messages : []) as {
      role: string;
      content: string | Block[];
    }[];
    if (typeof body?.model !== 'string') return error(res, 400, 'invalid_request_error', 'model: Field required');
    if (typeof body.max_tokens !== 'number')
      return error(res, 400, 'invalid_request_error', 'max_tokens: Field required');
    if (messages.length === 0 || messages[0]!.role !== 'user')
      return error(res, 400, 'invalid_request_error', 'messages: first message must use the "user" role');
    for (let i = 1; i < messages.length; i++)
      if (messages[i]!.role === messages[i - 1]!.role)
        return error(
          res,
          400,
          'invalid_request_error',
          'messages: roles must alternate between "user" and "assistant"',
        );
    const blocks = (m: { content: string | Block[] }): Block[] =>
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    const text = `${messages.flatMap((m) => blocks(m).map((b) => b.text ?? '')).join(' ')} ${typeof body.system === 'string' ? body.system : ''} ${always.directives}`;
    if (directive(text, 'hang') !== undefined) return;
    const status = Number(directive(text, 'status') ?? 0);
    if (status)
      return error(res, status, status === 529 ? 'overloaded_error' : 'api_error', `simulated status ${status}`);

    const last = messages.at(-1)!;
    const answeringTool = blocks(last).some((b) => b.type === 'tool_result');
    const tools = (Array.isArray(body.tools) ? body.tools : []) as { name: string }[];
    const choice = body.tool_choice as { type?: string; name?: string } | undefined;
    const lastText = blocks(last)
      .map((b) => b.text ?? '')
      .join(' ');
    const tool =
      tools.length === 0 || answeringTool || choice?.type === 'none'
        ? undefined
        : choice?.type === 'tool'
          ? choice.name
          : choice?.type === 'any'
            ? tools[0]!.name
            : tools.find((t) => new RegExp(`\\b${t.name}\\b`).test(lastText))?.name;
    const count = Math.min(Number(directive(text, 'tokens') ?? 5), body.max_tokens);
    const words = Array.from({ length: count }, (_, i) => `${i === 0 ? '' : ' '}${WORDS[i % WORDS.length]!}`);
    const format = (body.output_config as { format?: unknown } | undefined)?.format;
    const pieces = format ? ['{"answer":', '"alpha"}'] : words;
    const input = Math.ceil(JSON.stringify(messages).length / 4);
    // Anthropic's input_tokens leaves out the cache read and written; its output counts the thinking.
    const cache = {
      cache_read_input_tokens: Number(directive(text, 'cached') ?? 0),
      cache_creation_input_tokens: Number(directive(text, 'cache_write') ?? 0),
    };
    const thinking = Number(directive(text, 'reasoning') ?? 0);
    const output = (tool ? 6 : pieces.length) + thinking;
    const stop = tool ? 'tool_use' : count >= body.max_tokens ? 'max_tokens' : 'end_turn';
    const id = 'msg_up1';
    if (body.stream !== true) {
      const content = tool
        ? [{ type: 'tool_use', id: 'toolu_up1', name: tool, input: { city: 'Paris' } }]
        : [{ type: 'text', text: pieces.join('') }];
      return res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id,
          type: 'message',
          role: 'assistant',
          model: body.model,
          content,
          stop_reason: stop,
          stop_sequence: null,
          usage: { input_tokens: input, output_tokens: output, ...cache },
        }),
      );
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (type: string, data: Record<string, unknown>) =>
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    send('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: input, output_tokens: 1, ...cache },
      },
    });
    send('ping', {});
    // Extended thinking comes first, in a block of its own that the client sees as thinking.
    const at = thinking ? 1 : 0;
    if (thinking) {
      send('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } });
      send('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Considering it.' } });
      send('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'c2lnbmF0dXJl' } });
      send('content_block_stop', { index: 0 });
    }
    if (tool) {
      send('content_block_start', {
        index: at,
        content_block: { type: 'tool_use', id: 'toolu_up1', name: tool, input: {} },
      });
      for (const piece of ['{"city":', ' "Paris"}'])
        send('content_block_delta', { index: at, delta: { type: 'input_json_delta', partial_json: piece } });
    } else {
      send('content_block_start', { index: at, content_block: { type: 'text', text: '' } });
      const overloadAfter = Number(directive(text, 'overload_after') ?? Infinity);
      for (const [i, piece] of pieces.entries()) {
        if (i === overloadAfter) {
          send('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
          return void res.end();
        }
        send('content_block_delta', { index: at, delta: { type: 'text_delta', text: piece } });
      }
    }
    send('content_block_stop', { index: at });
    send('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: output } });
    send('message_stop', {});
    res.end();
  });
  const listening = await listen(server);
  return { ...listening, received, always };
}
