// `--only=live` (and part of the full run): what the bench reports about live jobs. How far the
// ETA a client is shown lands from when its video really ends, on the simulator after warm-up,
// and what the live event stream costs the service per open connection with 1,000 open.
import { get } from 'node:http';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { expectStatus, openAccount, runPool } from './http';
import type { BenchAccount } from './http';
import { processCpuMs, processRss } from './procfs';
import type { Context } from './scenarios';
import { percentile as sortedPercentile } from './stats';

const percentile = (xs: number[], p: number): number =>
  xs.length === 0
    ? Number.NaN
    : sortedPercentile(
        [...xs].sort((a, b) => a - b),
        p,
      );

export interface EtaReport {
  videos: number;
  /** What the runs took (running → succeeded), median, seconds. */
  medianRunSeconds: number;
  /** |expected end − real end| in seconds, as the record says right after submit. */
  atSubmit: { median: number; p90: number };
  /** The same from the first read after half the expected run. */
  midRun: { median: number; p90: number };
}

export interface StreamCostReport {
  streams: number;
  /** Service process RSS added per open stream (KiB). */
  rssPerStreamKiB: number | null;
  /** Service process CPU while the streams sit idle (keep-alive comments only), ms per second. */
  idleCpuMsPerSecond: number | null;
  /** Events the open streams received for the videos run meanwhile. */
  eventsReceived: number;
  /** Extra service CPU per event received: the same videos with and without the streams open, difference ÷ events (µs). */
  cpuPerEventUs: number | null;
}

export interface LiveReport {
  eta: EtaReport;
  streams: StreamCostReport;
}

/** A provider whose runs vary: 3 s ± 25 %, the same sequence on every bench run. */
const RUN_MS = 3_000;
const delayOf = (i: number): number => Math.round(RUN_MS * (0.75 + 0.5 * (((i * 7919) % 101) / 100)));
const VIDEO = { kind: 'video', model: 'seedance-lite', seconds: 3, quality: '480p' } as const;
const WARMUP = 6;
const MEASURED = 30;
/** Five at a time on one account: every video finds a slot, so the queue does not enter the error. */
const AT_ONCE = 5;
const POLL_MS = 200;

interface Record {
  id: string;
  status: string;
  etaSeconds: number | null;
  startedAt: string | null;
  finishedAt: string | null;
}

const round = (v: number, digits = 2): number => Math.round(v * 10 ** digits) / 10 ** digits;

export async function liveScenarios(ctx: Context): Promise<LiveReport> {
  const eta = await etaError(ctx);
  ctx.log(
    `ETA error after warm-up: at submit median ${eta.atSubmit.median} s (p90 ${eta.atSubmit.p90}), mid-run median ${eta.midRun.median} s, runs ${eta.medianRunSeconds} s`,
  );
  const streams = await streamCost(ctx, 1_000);
  ctx.log(
    `1,000 open event streams: ${streams.rssPerStreamKiB ?? '–'} KiB RSS each, idle ${streams.idleCpuMsPerSecond ?? '–'} ms CPU/s, ${streams.cpuPerEventUs ?? '–'} µs CPU per event received (${streams.eventsReceived} events)`,
  );
  return { eta, streams };
}

async function runVideo(
  ctx: Context,
  account: BenchAccount,
  i: number,
  prompt: string,
): Promise<{ submitErr: number; midErr: number | undefined; runSeconds: number } | undefined> {
  const submitted = await ctx.http.request<{ id?: string }>('POST', '/api/v1/generate', {
    token: account.nextKey(),
    body: { ...VIDEO, prompt: `${prompt} ${i} sim:delay=${delayOf(i)}` },
  });
  if (submitted.status !== 202 || !submitted.body.id) {
    ctx.errors.record(
      `live: video submit answered ${submitted.status} ${JSON.stringify(submitted.body).slice(0, 200)}`,
    );
    return undefined;
  }
  const id = submitted.body.id;
  const read = async () =>
    (await ctx.http.request<Record>('GET', `/api/v1/generations/${id}`, { token: account.nextKey() })).body;
  const first = await read();
  const expectedEnd = Date.now() + (first.etaSeconds ?? 0) * 1000;
  let midEnd: number | undefined;
  for (;;) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const g = await read();
    if (g.status === 'failed') {
      ctx.errors.record(`live: video ${id} failed`);
      return undefined;
    }
    if (g.status === 'succeeded' && g.finishedAt && g.startedAt) {
      const end = Date.parse(g.finishedAt);
      return {
        submitErr: Math.abs(expectedEnd - end) / 1000,
        midErr: midEnd === undefined ? undefined : Math.abs(midEnd - end) / 1000,
        runSeconds: (end - Date.parse(g.startedAt)) / 1000,
      };
    }
    if (
      midEnd === undefined &&
      g.status === 'running' &&
      g.startedAt &&
      g.etaSeconds !== null &&
      Date.now() - Date.parse(g.startedAt) >= RUN_MS / 2
    ) {
      midEnd = Date.now() + g.etaSeconds * 1000;
    }
  }
}

async function etaError(ctx: Context): Promise<EtaReport> {
  ctx.memory.phase('live.eta');
  const account = await openAccount(ctx.http, ctx.stack.adminToken, {
    credits: 100_000,
    requests: 4_000,
    scopes: ['video'],
  });
  // Warm-up: enough runs of this model and size for the measured median to replace the catalogue's default.
  await runPool(WARMUP, AT_ONCE, async (i) => {
    await runVideo(ctx, account, i, 'eta warm-up');
  });
  const results: { submitErr: number; midErr: number | undefined; runSeconds: number }[] = [];
  await runPool(MEASURED, AT_ONCE, async (i) => {
    const r = await runVideo(ctx, account, WARMUP + i, 'eta measured');
    if (r) results.push(r);
  });
  const stat = (xs: number[]) => ({ median: round(percentile(xs, 50)), p90: round(percentile(xs, 90)) });
  return {
    videos: results.length,
    medianRunSeconds: round(
      percentile(
        results.map((r) => r.runSeconds),
        50,
      ),
    ),
    atSubmit: stat(results.map((r) => r.submitErr)),
    midRun: stat(results.flatMap((r) => (r.midErr === undefined ? [] : [r.midErr]))),
  };
}

/** Opens an account event stream; resolves once its headers arrived, counting the events it then receives. */
function openStream(
  baseUrl: string,
  key: string,
  counter: { events: number },
): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = get(
      `${baseUrl}/api/v1/events`,
      { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, agent: false },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET /api/v1/events answered ${res.statusCode}`));
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          counter.events += chunk.split('\nevent: ').length - 1 + (chunk.startsWith('event: ') ? 1 : 0);
        });
        res.on('error', () => undefined);
        resolve({ req, res });
      },
    );
    req.on('error', reject);
  });
}

async function streamCost(ctx: Context, total: number): Promise<StreamCostReport> {
  ctx.memory.phase('live.streams');
  const pid = ctx.stack.serviceInBench ? undefined : ctx.stack.workerPid;
  const accountCount = 20;
  const accounts: BenchAccount[] = [];
  for (let i = 0; i < accountCount; i++)
    accounts.push(
      await openAccount(ctx.http, ctx.stack.adminToken, { credits: 10_000, requests: 600, scopes: ['video'] }),
    );
  // The same batch of quick videos with and without the streams open: the difference is the fan-out.
  const batch = async (label: string) => {
    await runPool(accounts.length * 2, 10, async (i) => {
      const account = accounts[i % accounts.length]!;
      await expectStatus(
        ctx.http.request('POST', '/api/v1/generate', {
          token: account.nextKey(),
          body: { ...VIDEO, prompt: `${label} ${i} sim:delay=0` },
        }),
        202,
        'live: video submit',
      );
    });
    // Settled: every video of the batch ended (observed from PostgreSQL, not the service).
    for (;;) {
      const r = await ctx.stack.observer.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM generations WHERE prompt LIKE $1 AND status IN ('queued', 'running')`,
        [`${label} %`],
      );
      if (r.rows[0]!.n === 0) return;
      await new Promise((res) => setTimeout(res, 100));
    }
  };
  const cpu = async () => (pid === undefined ? 0 : processCpuMs(pid));
  const c0 = await cpu();
  await batch('streams-off');
  const withoutStreams = (await cpu()) - c0;

  const rss0 = pid === undefined ? undefined : (await processRss(pid))?.rss;
  const counter = { events: 0 };
  const open: { req: ClientRequest; res: IncomingMessage }[] = [];
  await runPool(total, 50, async (i) => {
    open.push(await openStream(ctx.http.baseUrl, accounts[i % accounts.length]!.nextKey(), counter));
  });
  await new Promise((r) => setTimeout(r, 2_000));
  const rss1 = pid === undefined ? undefined : (await processRss(pid))?.rss;
  const idleFrom = await cpu();
  const idleMs = 10_000;
  await new Promise((r) => setTimeout(r, idleMs));
  const idle = (await cpu()) - idleFrom;

  const before = counter.events;
  const c1 = await cpu();
  await batch('streams-on');
  await new Promise((r) => setTimeout(r, 500));
  const withStreams = (await cpu()) - c1;
  const events = counter.events - before;
  for (const s of open) s.req.destroy();

  return {
    streams: open.length,
    rssPerStreamKiB: rss0 === undefined || rss1 === undefined ? null : round((rss1 - rss0) / 1024 / open.length, 1),
    idleCpuMsPerSecond: pid === undefined ? null : round(idle / (idleMs / 1000), 1),
    eventsReceived: events,
    cpuPerEventUs:
      pid === undefined || events === 0 ? null : round(((withStreams - withoutStreams) * 1000) / events, 0),
  };
}

export function renderLive(r: LiveReport): string {
  const v = (x: number | null, unit: string) => (x === null ? '–' : `${x} ${unit}`);
  return [
    'Live jobs',
    `ETA on the simulator after ${WARMUP} warm-up runs (${r.eta.videos} videos of 3 s ± 25 %, median run ${r.eta.medianRunSeconds} s): |expected end − real end|`,
    `  read right after submit: median ${r.eta.atSubmit.median} s, p90 ${r.eta.atSubmit.p90} s`,
    `  read after half the run: median ${r.eta.midRun.median} s, p90 ${r.eta.midRun.p90} s`,
    `Event streams (GET /api/v1/events), ${r.streams.streams} open at once over 20 accounts, service process:`,
    `  RSS per open stream: ${v(r.streams.rssPerStreamKiB, 'KiB')}; CPU while idle: ${v(r.streams.idleCpuMsPerSecond, 'ms/s')} for all of them`,
    `  CPU per event received (40 videos with the streams open less the same without): ${v(r.streams.cpuPerEventUs, 'µs')} (${r.streams.eventsReceived} events)`,
  ].join('\n');
}
