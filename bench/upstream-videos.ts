// `npm run bench -- --only=upstream-videos [--videos=N] [--quick]`: many upstream videos in flight
// at once, each taking minutes on a local fal-like queue (test/support/upstream-servers.ts), on ONE
// service process (npm start: the API, the workflow worker and one provider worker). Every few
// seconds it samples the provider worker's slots in use (gensvc_provider_activities_running) and
// the process's RSS, first idle (the reference, same run), then while every video waits at the
// upstream, until the upstream's signed webhooks finish them all. docs/benchmark.md has the figures.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createShutdown } from '../runtime/lifecycle';
import { freePort } from '../runtime/process';
import { startQueueVideoUpstream } from '../test/support/upstream-servers';
import { guardRun } from './harness';
import { createHttp, openAccount, runPool } from './http';
import type { BenchAccount } from './http';
import { processRss } from './procfs';
import { writeResults } from './results';
import { createStack } from './stack';

interface Point {
  /** Seconds since the first sample. */
  t: number;
  phase: 'idle' | 'submitting' | 'waiting' | 'collecting';
  slots: number;
  rssMb: number;
  /** Upstream jobs submitted and not yet ended. */
  waiting: number;
  succeeded: number;
  /** Videos still `queued` while their account has a free video slot (the slot-wait convoy). */
  stalled: number;
}

/**
 * Videos per account by default, each account's submitted in order, and the account's video slots
 * (VIDEO_CONCURRENCY). Few per account keeps this scenario about the provider worker;
 * `--per-account=100` makes each account's videos claim their slots first in first out while
 * hundreds wait, the convoy docs/decisions/0016-video-slots.md describes.
 */
const PER_ACCOUNT = 5;

export async function runUpstreamVideos(args: {
  quick: boolean;
  keep: boolean;
  temporalDb: 'file' | 'memory';
  videos?: number | undefined;
  perAccount?: number | undefined;
}): Promise<number> {
  const perAccount = args.perAccount ?? PER_ACCOUNT;
  const log = (line: string) => console.error(`[bench] ${line}`);
  const count = args.videos ?? (args.quick ? 200 : 1_000);
  // "Each taking minutes": long enough for every video to be submitted and parked well before the first ends.
  const renderMs = Math.max(120_000, count * 150);
  const dataDir = join(process.cwd(), '.test-data', `bench-upstream-videos-${process.pid}`);
  const fal = await startQueueVideoUpstream();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const upstreams = {
    upstreams: [
      {
        name: 'bench-fal',
        protocol: 'queue-video',
        baseUrl: fal.baseUrl,
        timeoutMs: 10_000,
        slowPollMs: 120_000,
        jwksUrl: fal.jwksUrl,
        models: { kling: 'fal-ai/kling-video' },
      },
    ],
  };
  const stackHandle = createStack({
    dataDir,
    workerMode: 'process',
    temporalDb: args.temporalDb,
    keepData: args.keep,
    log,
    reference: false,
    env: {
      PORT: String(port),
      UPSTREAM_CALLBACK_BASE_URL: base,
      UPSTREAMS_JSON: JSON.stringify(upstreams),
      VIDEO_CONCURRENCY: String(perAccount),
    },
  });
  const interrupt = new AbortController();
  const shutdown = createShutdown(log);
  shutdown.add('fal-like upstream', () => fal.close());
  shutdown.add('bench stack', () => stackHandle.stop());
  shutdown.add('requests in flight', async () => interrupt.abort());
  guardRun({
    log,
    shutdown,
    interrupt,
    watchdogMinutes: Math.ceil(renderMs / 60_000) + 15,
    stoppedNote: args.keep ? `data kept in ${dataDir}` : 'data folder removed',
  });

  try {
    const stack = await stackHandle.start();
    const pid = stack.workerPid;
    if (pid === undefined) throw new Error('the service process has no pid');
    const http = createHttp(stack.baseUrl, interrupt.signal);
    log(
      `service up at ${stack.baseUrl}; ${count} videos of ${renderMs / 1000} s each on a fal-like queue that calls back`,
    );

    const points: Point[] = [];
    const started = Date.now();
    let phase: Point['phase'] = 'idle';
    const sample = async (): Promise<Point> => {
      const [metrics, rss, jobs] = await Promise.all([
        http.request<string>('GET', '/metrics', { token: stack.adminToken }),
        processRss(pid),
        stack.observer.query<{ waiting: number; succeeded: number; stalled: number }>(
          `SELECT (SELECT count(*)::int FROM upstream_jobs WHERE ended_at IS NULL) AS waiting,
                  (SELECT count(*)::int FROM generations WHERE kind = 'video' AND status = 'succeeded') AS succeeded,
                  (SELECT count(*)::int FROM generations q WHERE q.kind = 'video' AND q.status = 'queued'
                      AND (SELECT count(*) FROM generations r WHERE r.account_id = q.account_id AND r.kind = 'video' AND r.status = 'running') < $1::int) AS stalled`,
          [perAccount],
        ),
      ]);
      const slots = Number(/^gensvc_provider_activities_running (\d+)/m.exec(String(metrics.body))?.[1] ?? NaN);
      const p = {
        t: Math.round((Date.now() - started) / 1000),
        phase,
        slots,
        rssMb: Math.round((rss?.rss ?? 0) / 1048576),
        ...jobs.rows[0]!,
      };
      points.push(p);
      return p;
    };
    let sampling = true;
    let sampleErrors = 0;
    const sampler = (async () => {
      while (sampling) {
        // A sample that fails (the API busy past its time limit) is a gap in the series, not the end of the run.
        await sample().catch((err: unknown) => {
          if (sampleErrors++ === 0)
            log(
              `a sample failed: ${(err as Error).message} ${((err as Error).cause as Error | undefined)?.message ?? ''}`,
            );
        });
        await sleep(2_000);
      }
    })();

    // The reference: the same process idle, before any video.
    await sleep(20_000);
    phase = 'submitting';
    const accounts: BenchAccount[] = [];
    await runPool(Math.ceil(count / perAccount), 10, async (i) => {
      accounts[i] = await openAccount(http, stack.adminToken, {
        credits: perAccount * 100,
        requests: perAccount,
        scopes: ['video'],
      });
    });
    let failedSubmits = 0;
    await runPool(accounts.length, 20, async (a) => {
      for (let j = 0; j < perAccount && a * perAccount + j < count; j++) {
        const i = a * perAccount + j;
        const res = await http.request('POST', '/api/generate', {
          token: accounts[a]!.nextKey(),
          body: { kind: 'video', model: 'kling', prompt: `shot ${i} up:ms=${renderMs}`, seconds: 5 },
        });
        if (res.status !== 200 && res.status !== 202) failedSubmits++;
      }
    });
    log(
      `opened ${accounts.length} accounts and submitted ${count - failedSubmits} videos in ${Math.round((Date.now() - started) / 1000) - 20} s`,
    );
    phase = 'waiting';
    const deadline = Date.now() + renderMs + 10 * 60_000;
    for (;;) {
      const p = points.at(-1);
      if (p && p.waiting === 0 && p.succeeded >= count - failedSubmits) break;
      if (Date.now() > deadline) throw new Error(`not every video finished: ${JSON.stringify(p)}`);
      if (fal.webhooks.length > 0) phase = 'collecting';
      await sleep(1_000);
    }
    await sleep(4_000);
    sampling = false;
    await sampler;

    const of = (ph: Point['phase']) => points.filter((p) => p.phase === ph);
    const range = (xs: number[]) => (xs.length ? `${Math.min(...xs)}–${Math.max(...xs)}` : '–');
    const waitingPoints = of('waiting').filter((p) => p.waiting >= (count - failedSubmits) * 0.99);
    const summary = {
      videos: count,
      renderSeconds: renderMs / 1000,
      failedSubmits,
      idle: { slots: range(of('idle').map((p) => p.slots)), rssMb: range(of('idle').map((p) => p.rssMb)) },
      allWaiting: {
        samples: waitingPoints.length,
        slots: range(waitingPoints.map((p) => p.slots)),
        rssMb: range(waitingPoints.map((p) => p.rssMb)),
      },
      submitting: {
        slots: range(of('submitting').map((p) => p.slots)),
        rssMb: range(of('submitting').map((p) => p.rssMb)),
      },
      collecting: {
        slots: range(of('collecting').map((p) => p.slots)),
        rssMb: range(of('collecting').map((p) => p.rssMb)),
      },
      // Queued with a free slot of their account, once every video was submitted: 0 unless waits convoy.
      stalledAfterSubmitting: range([...of('waiting'), ...of('collecting')].map((p) => p.stalled)),
      sampleErrors,
      webhooks: fal.webhooks.length,
      webhooksAccepted: fal.webhooks.filter((w) => w.status === 200).length,
      statusReads: fal.statusReads(),
      submits: fal.submits(),
      succeeded: points.at(-1)?.succeeded ?? 0,
    };
    console.log('\nt (s)  phase        slots  RSS (MB)  waiting  succeeded  stalled');
    for (const p of points.filter((_, i) => i % 5 === 0 || i === points.length - 1)) {
      console.log(
        `${String(p.t).padStart(5)}  ${p.phase.padEnd(11)}  ${String(p.slots).padStart(5)}  ${String(p.rssMb).padStart(8)}  ${String(p.waiting).padStart(7)}  ${String(p.succeeded).padStart(9)}  ${String(p.stalled).padStart(7)}`,
      );
    }
    console.log(`\n${JSON.stringify(summary, null, 2)}`);
    const file = await writeResults(JSON.stringify({ summary, points }, null, 2), `upstream-videos-${count}`);
    log(`results in ${file}`);
    return summary.succeeded >= count - failedSubmits && failedSubmits === 0 ? 0 : 1;
  } finally {
    await shutdown.stop();
  }
}
