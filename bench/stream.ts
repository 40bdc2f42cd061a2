import { performance } from 'node:perf_hooks';
import type { BenchAccount } from './http';
import type { UpstreamServer } from '../test/support/upstream-servers';
import { findOpenAiChatModel } from '../core/catalogue/models';
import { chargeForTokens } from '../core/catalogue/pricing';
import { openAccount, runPool } from './http';
import type { Context } from './scenarios';
import { round, summarise } from './stats';
import type { LatencyStats } from './stats';

/**
 * Streamed chat through the service against the same streams taken directly from the upstream:
 * an OpenAI-compatible server on loopback, configured as the chat model's upstream
 * (UPSTREAMS_JSON). What the service adds before the first token (key, rate limit, the hold
 * transaction, the upstream call; never a workflow task) and to the whole reply.
 */
export const STREAM_MODEL = 'claude-haiku';
export const UPSTREAM_MODEL = 'bench-chat';

export interface StreamSide {
  /** Time to the first byte of the body (the first token's event). */
  ttfb: LatencyStats;
  /** Time to the end of the stream (`data: [DONE]`). */
  full: LatencyStats;
}

export interface StreamRun {
  mode: 'sequential' | 'concurrent';
  concurrency: number;
  n: number;
  errors: number;
  service: StreamSide;
  direct: StreamSide;
  /** Sequential: percentiles of the per-pair differences; concurrent: differences of the percentiles. */
  overhead: { ttfb: { p50: number; p99: number }; full: { p50: number; p99: number } };
  /**
   * Sequential only: GET /api/credits measured in the same rounds, the floor of any keyed request
   * (HTTP, key lookup, rate limit, one SELECT) on this machine at that moment.
   */
  floor?: LatencyStats;
}

export interface Timed {
  ttfb: number;
  /** Time to the first event whose delta carries text (a role-only first event does not count). */
  content: number;
  full: number;
}

/** A delta with text in it: `"delta":{…"content":"<at least one character>`. */
const CONTENT = /"delta":\{[^}]*"content":"[^"]/;

/** One streamed chat, timed at the client: first byte, first content, `data: [DONE]`. */
export async function timedStream(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
): Promise<Timed> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok || !res.body) throw new Error(`${url}: ${res.status} ${(await res.text()).slice(0, 200)}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let ttfb: number | undefined;
  let content: number | undefined;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    ttfb ??= performance.now() - t0;
    text += decoder.decode(value, { stream: true });
    if (content === undefined && CONTENT.test(text)) content = performance.now() - t0;
  }
  const full = performance.now() - t0;
  if (!text.trimEnd().endsWith('data: [DONE]'))
    throw new Error(`${url}: the stream did not end with [DONE]: ${text.slice(-200)}`);
  if (content === undefined) throw new Error(`${url}: the stream carried no text: ${text.slice(0, 200)}`);
  return { ttfb: ttfb ?? full, content, full };
}

const side = (samples: Timed[]): StreamSide => ({
  ttfb: summarise(samples.map((s) => s.ttfb)),
  full: summarise(samples.map((s) => s.full)),
});

export async function streamOverhead(
  ctx: Context,
  upstreamBaseUrl: string,
  sizes: { n: number; total: number; concurrency: number; tokens: number },
): Promise<StreamRun[]> {
  const account = await openAccount(ctx.http, ctx.stack.adminToken, {
    credits: 1_000_000_000,
    requests: 3 * sizes.n + sizes.total + 40,
  });
  const messages = [{ role: 'user', content: `say something up:tokens=${sizes.tokens}` }];
  const service = (a: BenchAccount) =>
    timedStream(
      `${ctx.stack.baseUrl}/v1/chat/completions`,
      { authorization: `Bearer ${a.nextKey()}` },
      { model: STREAM_MODEL, messages, stream: true, max_tokens: 2 * sizes.tokens },
      ctx.http.stop,
    );
  // What the service's adapter sends upstream for the same request.
  const direct = () =>
    timedStream(
      `${upstreamBaseUrl}/chat/completions`,
      {},
      {
        model: UPSTREAM_MODEL,
        messages,
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 2 * sizes.tokens,
      },
      ctx.http.stop,
    );

  let errors = 0;
  const attempt = async (what: string, call: () => Promise<Timed>): Promise<Timed | undefined> => {
    try {
      return await call();
    } catch (err) {
      if (ctx.http.stop.aborted) throw err;
      errors++;
      ctx.errors.record(`stream ${what}: ${(err as Error).message}`);
      return undefined;
    }
  };

  // Warm-up: connections, JIT, the first workflow starts.
  for (let i = 0; i < 20; i++) {
    await attempt('warm-up direct', direct);
    await attempt('warm-up service', () => service(account));
  }

  // Sequential: direct and service one after another, pair by pair, so both meet the same moment.
  const pairs: { s: Timed; d: Timed }[] = [];
  const floor: number[] = [];
  const errorsBefore = errors;
  await ctx.measure(async () => {
    for (let i = 0; i < sizes.n; i++) {
      const d = await attempt('direct', direct);
      const s = await attempt('service', () => service(account));
      if (d && s) pairs.push({ s, d });
      floor.push((await ctx.http.request('GET', '/api/credits', { token: account.nextKey() })).ms);
    }
  });
  const diff = (pick: (t: Timed) => number) => summarise(pairs.map((p) => pick(p.s) - pick(p.d)));
  const ttfbDiff = diff((t) => t.ttfb);
  const fullDiff = diff((t) => t.full);
  const sequential: StreamRun = {
    mode: 'sequential',
    concurrency: 1,
    n: pairs.length,
    errors: errors - errorsBefore,
    service: side(pairs.map((p) => p.s)),
    direct: side(pairs.map((p) => p.d)),
    overhead: {
      ttfb: { p50: round(ttfbDiff.p50, 2), p99: round(ttfbDiff.p99, 2) },
      full: { p50: round(fullDiff.p50, 2), p99: round(fullDiff.p99, 2) },
    },
    floor: summarise(floor),
  };

  // Concurrent: the same number of streams at once, through the service, then directly. Each of
  // the concurrent clients has its own account: one account's holds and settles all update its
  // one balance row, so they take turns on its lock (that is the ledger's design, DESIGN §4), and
  // 32 streams of one account measure that queue rather than the streaming path.
  const clients: BenchAccount[] = [];
  for (let i = 0; i < sizes.concurrency; i++) {
    clients.push(
      await openAccount(ctx.http, ctx.stack.adminToken, {
        credits: 1_000_000_000,
        requests: Math.ceil(sizes.total / sizes.concurrency) + 2,
      }),
    );
  }
  const concurrentErrorsBefore = errors;
  const viaService: Timed[] = [];
  const viaDirect: Timed[] = [];
  await runPool(sizes.total, sizes.concurrency, async () => {
    const t = await attempt('direct c', direct);
    if (t) viaDirect.push(t);
  });
  await runPool(sizes.total, sizes.concurrency, async (i) => {
    const t = await attempt('service c', () => service(clients[i % clients.length]!));
    if (t) viaService.push(t);
  });
  const s = side(viaService);
  const d = side(viaDirect);
  const concurrent: StreamRun = {
    mode: 'concurrent',
    concurrency: sizes.concurrency,
    n: viaService.length,
    errors: errors - concurrentErrorsBefore,
    service: s,
    direct: d,
    overhead: {
      ttfb: { p50: round(s.ttfb.p50 - d.ttfb.p50, 2), p99: round(s.ttfb.p99 - d.ttfb.p99, 2) },
      full: { p50: round(s.full.p50 - d.full.p50, 2), p99: round(s.full.p99 - d.full.p99, 2) },
    },
  };
  return [sequential, concurrent];
}

/**
 * Two streamed chats raced on an account whose money covers one hold: the service asks the upstream
 * for both while the holds are placed, and must stop the refused one's call. How long the refused
 * call stayed open at the upstream, against the admitted one's first byte through the service in the
 * same round (the reference): the tests assert only that nothing of it reaches its client.
 */
export interface RefusedCut {
  rounds: number;
  /** Rounds whose refused call never reached the upstream (stopped before it left). */
  neverSent: number;
  /** How long each refused call was open at the upstream before the service closed it, ms. */
  cutMs: LatencyStats;
  /** The admitted call's first byte through the service, ms. */
  servedTtfb: LatencyStats;
  /** p50 of the cut against p50 of the admitted first byte. */
  ratio: number;
}

export async function refusedCut(ctx: Context, upstream: UpstreamServer, rounds: number): Promise<RefusedCut> {
  const MAX_TOKENS = 1_000;
  const holdMc = chargeForTokens(MAX_TOKENS, findOpenAiChatModel(STREAM_MODEL)!.priceMc);
  const cuts: number[] = [];
  const served: number[] = [];
  let neverSent = 0;
  for (let r = 0; r < rounds; r++) {
    const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: (1.5 * holdMc) / 1000, requests: 2 });
    const tag = `cut-${r}-${Math.random().toString(36).slice(2, 8)}`;
    const call = async (i: number) => {
      const t0 = performance.now();
      const res = await fetch(`${ctx.stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${account.nextKey()}` },
        body: JSON.stringify({
          model: STREAM_MODEL,
          messages: [{ role: 'user', content: `${tag}-${i} up:tokens=20 up:pace=50` }],
          stream: true,
          max_tokens: MAX_TOKENS,
        }),
        signal: ctx.http.stop,
      });
      const reader = res.body!.getReader();
      let done = (await reader.read()).done;
      const ttfb = performance.now() - t0;
      while (!done) done = (await reader.read()).done;
      return { status: res.status, ttfb };
    };
    const [a, b] = await Promise.all([call(0), call(1)]);
    const refused = a.status === 200 ? 1 : 0;
    served.push((refused === 1 ? a : b).ttfb);
    const record = upstream.received.find((r) => JSON.stringify(r.body).includes(`${tag}-${refused} `));
    if (!record) neverSent++;
    else cuts.push(record.closedAfterMs ?? Number.POSITIVE_INFINITY);
  }
  const cutMs = summarise(cuts.length > 0 ? cuts : [0]);
  const servedTtfb = summarise(served);
  return { rounds, neverSent, cutMs, servedTtfb, ratio: round(cutMs.p50 / servedTtfb.p50, 2) };
}

/** A whole (non-streamed) reply, the same model and upstream: the API path (group B) against the activity path (group A). */
export interface WholeReply {
  n: number;
  apiPath: LatencyStats;
  activityPath: LatencyStats;
}

export async function wholeReply(ctx: Context, n: number, tokens: number): Promise<WholeReply> {
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: 1_000_000_000, requests: 2 * n + 20 });
  const prompt = `say something up:tokens=${tokens}`;
  const viaApi = async () => {
    const r = await ctx.http.request<{ choices?: unknown[] }>('POST', '/v1/chat/completions', {
      token: account.nextKey(),
      body: { model: STREAM_MODEL, messages: [{ role: 'user', content: prompt }], max_tokens: 2 * tokens },
    });
    if (r.status !== 200 || !r.body.choices)
      ctx.errors.record(`whole reply (group B): ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    return r.ms;
  };
  const viaActivity = async () => {
    const r = await ctx.http.request<{ status?: string }>('POST', '/api/v1/generate', {
      token: account.nextKey(),
      body: { kind: 'chat', model: STREAM_MODEL, prompt, max_tokens: 2 * tokens },
    });
    if (r.status !== 200 || r.body.status !== 'succeeded')
      ctx.errors.record(`whole reply (group A): ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    return r.ms;
  };
  for (let i = 0; i < 5; i++) {
    await viaApi();
    await viaActivity();
  }
  const api: number[] = [];
  const activity: number[] = [];
  for (let i = 0; i < n; i++) {
    api.push(await viaApi());
    activity.push(await viaActivity());
  }
  return { n, apiPath: summarise(api), activityPath: summarise(activity) };
}

/** The flat metrics targets refer to, e.g. `stream.sequential.ttfbOverhead.p50`. */
export function streamMetrics(runs: StreamRun[]): Record<string, number> {
  const m: Record<string, number> = {};
  for (const r of runs) {
    const key = r.mode === 'sequential' ? 'stream.sequential' : `stream.c${r.concurrency}`;
    m[`${key}.ttfbOverhead.p50`] = r.overhead.ttfb.p50;
    m[`${key}.ttfbOverhead.p99`] = r.overhead.ttfb.p99;
    m[`${key}.fullOverhead.p50`] = r.overhead.full.p50;
    m[`${key}.fullOverhead.p99`] = r.overhead.full.p99;
  }
  return m;
}

export function renderStream(runs: StreamRun[], whole?: WholeReply): string {
  const f = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '–');
  const rows = runs.flatMap((r) => [
    [
      `${r.mode === 'sequential' ? 'sequential' : `c${r.concurrency}`} service`,
      String(r.n),
      String(r.errors),
      f(r.service.ttfb.p50),
      f(r.service.ttfb.p99),
      f(r.service.full.p50),
      f(r.service.full.p99),
      '',
      '',
    ],
    [
      `${r.mode === 'sequential' ? 'sequential' : `c${r.concurrency}`} direct`,
      String(r.n),
      '',
      f(r.direct.ttfb.p50),
      f(r.direct.ttfb.p99),
      f(r.direct.full.p50),
      f(r.direct.full.p99),
      '',
      '',
    ],
    [
      `${r.mode === 'sequential' ? 'sequential' : `c${r.concurrency}`} overhead`,
      '',
      '',
      f(r.overhead.ttfb.p50),
      f(r.overhead.ttfb.p99),
      f(r.overhead.full.p50),
      f(r.overhead.full.p99),
      r.mode === 'sequential' ? 'per-pair differences' : 'differences of percentiles',
      '',
    ],
  ]);
  const headers = ['streamed chat', 'n', 'err', 'first byte p50', 'p99', 'full p50', 'p99', 'overhead is', ''];
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i >= 1 && i <= 6 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const out = [
    'Streamed chat: service against the same upstream directly (ms)',
    line(headers),
    widths.map((w) => '─'.repeat(w)).join('  '),
    ...rows.map(line),
  ];
  const floor = runs.find((r) => r.floor)?.floor;
  if (floor)
    out.push(
      '',
      `Floor of any keyed request in the same rounds (GET /api/credits): p50 ${f(floor.p50)} p99 ${f(floor.p99)} ms`,
    );
  if (whole) {
    out.push(
      '',
      `Whole reply, sequential (n=${whole.n}): API path (POST /v1/chat/completions) p50 ${f(whole.apiPath.p50)} p99 ${f(whole.apiPath.p99)} ms; ` +
        `activity path (POST /api/v1/generate, same model and upstream) p50 ${f(whole.activityPath.p50)} p99 ${f(whole.activityPath.p99)} ms`,
    );
  }
  return out.join('\n');
}
