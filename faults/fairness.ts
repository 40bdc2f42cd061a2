// `npm run fairness [-- --unfair] [-- --flood=300] [-- --batch=1000] [-- --arrive=3000] [-- --poll=100]`:
// how long one account's lone image takes while another account floods the service, against the
// same image alone, and where the wait sits (the stages of its Temporal history, the process's
// event-loop lag, the share of both cores busy while it ran). The flood is `--flood` single images
// at once over group A, or with `--batch=N` one N-line image batch over group B; the lone images
// start `--arrive` ms after it (by default while its arrival is still being taken in; later, they
// meet only its backlog), and the flood's clients poll an answered 202 every `--poll` ms. Provider
// concurrency is kept small (PROVIDER_CONCURRENCY=10) so that the flood makes a backlog on the
// provider task queue. The server's fairness (matching.enableFairness) is on, as everywhere;
// --unfair turns it off to compare. The flood is also run alone first, so that what fairness costs
// the flood is measured too.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import OpenAI, { toFile } from 'openai';
import { createHttp, openAccount } from '../bench/http';
import type { BenchAccount, Http } from '../bench/http';
import { profileHistory } from '../bench/profile';
import { machineCpuMs } from '../bench/procfs';
import { startWorker } from '../runtime/worker-runner';
import { startInProcessStack } from './in-process-stack';

const args = process.argv.slice(2);
const arg = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const fair = !args.includes('--unfair');
const batchLines = arg('batch') === undefined ? undefined : Number(arg('batch'));
const flood = Number(arg('flood') ?? 300);
const LONE_RUNS = 5;
const FLOOD_RUN_MS = 2_000;
const POLL_MS = Number(arg('poll') ?? 100);
/** When the first lone image is sent after the flood's: by default while the flood's own arrival is still being taken in. */
const ARRIVE_MS = Number(arg('arrive') ?? 3_000);
/** The answers to the status polls, by HTTP status: what the flood's clients cost the door. */
const pollAnswers = new Map<number, number>();
const log = (line: string) => console.error(`[fairness] ${line}`);
const PROVIDER_ACTIVITY = /^(runProvider|startProviderRun)$/;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Lone {
  id: string;
  /** Epoch ms of the submit, for the stage before the workflow starts. */
  at: number;
  ms: number;
}

/** Submit to finished: images usually finish within the call; a long wait answers 202 and is polled. */
async function image(http: Http, key: string, prompt: string): Promise<Lone> {
  const at = Date.now();
  const started = performance.now();
  const res = await http.request<{ id: string; status: string }>('POST', '/api/v1/generate', {
    token: key,
    body: { kind: 'image', model: 'flux', prompt, width: 512, height: 512 },
  });
  if (res.status !== 200 && res.status !== 202)
    throw new Error(`submit answered ${res.status}: ${JSON.stringify(res.body)}`);
  let status = res.body.status;
  while (status !== 'succeeded' && status !== 'failed') {
    await sleep(POLL_MS);
    const polled = await http.request<{ status: string }>('GET', `/api/v1/generations/${res.body.id}`, { token: key });
    pollAnswers.set(polled.status, (pollAnswers.get(polled.status) ?? 0) + 1);
    status = polled.body.status;
  }
  return { id: res.body.id, at, ms: performance.now() - started };
}

/** The flood of single images: every one at once; resolves with each one's time and the whole's. */
async function singlesFlood(
  http: Http,
  account: BenchAccount,
  tag: string,
): Promise<{ ms: number[]; totalMs: number }> {
  const t0 = performance.now();
  const ms = await Promise.all(
    Array.from({ length: flood }, async (_, i) => {
      const r = await image(http, account.nextKey(), `sim:delay=${FLOOD_RUN_MS} ${tag} ${i}`);
      return r.ms;
    }),
  );
  return { ms, totalMs: performance.now() - t0 };
}

/** The flood as one image batch over group B, run to its end. */
async function batchFlood(baseUrl: string, account: BenchAccount, lines: number, tag: string) {
  const client = new OpenAI({ apiKey: account.nextKey(), baseURL: `${baseUrl}/v1`, maxRetries: 0 });
  const text = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({
      custom_id: `${tag}-${i}`,
      method: 'POST',
      url: '/v1/images/generations',
      body: { model: 'flux', prompt: `sim:delay=${FLOOD_RUN_MS} ${tag} ${i}` },
    }),
  ).join('\n');
  const t0 = performance.now();
  const file = await client.files.create({
    file: await toFile(Buffer.from(`${text}\n`), 'in.jsonl'),
    purpose: 'batch',
  });
  let batch = await client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/images/generations',
    completion_window: '24h',
  });
  while (!['completed', 'failed', 'cancelled', 'expired'].includes(batch.status)) {
    await sleep(500);
    batch = await client.batches.retrieve(batch.id);
  }
  if (batch.request_counts?.completed !== lines)
    throw new Error(`the batch ended ${batch.status} with ${JSON.stringify(batch.request_counts)}`);
  return { ms: [] as number[], totalMs: performance.now() - t0 };
}

/** The machine's CPU use sampled every 250 ms, to say what share of both cores a span found busy. */
function machineBusy() {
  const samples: { at: number; busy: number; total: number }[] = [];
  const sample = async () => samples.push({ at: Date.now(), ...(await machineCpuMs()) });
  void sample();
  const timer = setInterval(() => void sample(), 250);
  return {
    between(from: number, to: number): number | null {
      const a = samples.findLast((s) => s.at <= from) ?? samples[0];
      const b = samples.find((s) => s.at >= to) ?? samples.at(-1);
      if (!a || !b || b.total <= a.total) return null;
      return Math.round(((b.busy - a.busy) / (b.total - a.total)) * 100) / 100;
    },
    stop: () => clearInterval(timer),
  };
}

/** Where one lone image's time went, stage by stage, from its Temporal history. */
async function stagesOf(client: Client, pool: pg.Pool, r: Lone) {
  const p = profileHistory((await client.workflow.getHandle(r.id).fetchHistory()).events ?? []);
  const { rows } = await pool.query<{ created_at: Date }>('SELECT created_at FROM generations WHERE id = $1', [r.id]);
  const admittedAt = rows[0]?.created_at.getTime();
  const provider = p.activities.find((a) => PROVIDER_ACTIVITY.test(a.name));
  const round = (ms: number | undefined) => (ms === undefined || !Number.isFinite(ms) ? null : Math.round(ms));
  return {
    totalMs: round(r.ms),
    // The door (auth, pricing) until the hold's statement; then the hold and the start RPC.
    toAdmissionMs: round(admittedAt === undefined ? undefined : admittedAt - r.at),
    admissionToStartMs: round(admittedAt === undefined ? undefined : p.startedAt - admittedAt),
    workflowTaskQueueMs: p.workflowTasks.map((w) => round(w.queueMs)),
    // A workflow task runs its ledger steps (local activities) inside it.
    workflowTaskRunMs: p.workflowTasks.map((w) => round(w.runMs)),
    providerQueueMs: round(provider?.queueMs),
    providerRunMs: round(provider?.runMs),
    afterCloseMs: round(r.at + r.ms - p.closedAt),
  };
}

const stack = await startInProcessStack('fairness', {
  dynamicConfig: fair ? {} : { 'matching.enableFairness': false },
  env: { PROVIDER_CONCURRENCY: '10' },
});
let failed = false;
try {
  const worker = await startWorker(stack.services, 'all', log);
  stack.onStop(() => worker.stop());
  await stack.startApi();
  const http = createHttp(stack.baseUrl, new AbortController().signal);
  const size = batchLines ?? flood;
  const flooder = await openAccount(http, stack.adminToken, {
    credits: size * 30,
    requests: flood * 8,
    scopes: ['image'],
  });
  const lone = await openAccount(http, stack.adminToken, { credits: 500, requests: 40, scopes: ['image'] });
  const runFlood = (tag: string) =>
    batchLines === undefined ? singlesFlood(http, flooder, tag) : batchFlood(stack.baseUrl, flooder, batchLines, tag);
  const what = batchLines === undefined ? `${flood} single images` : `a ${batchLines}-line image batch`;

  // The process runs the API, the worker and the bench's clients: its event loop's lag is a stage
  // every request shares, whatever its account.
  const lag = monitorEventLoopDelay({ resolution: 10 });
  const lagOf = () => {
    const ms = (ns: number) => Math.round(ns / 1e5) / 10;
    const r = { p50Ms: ms(lag.percentile(50)), p99Ms: ms(lag.percentile(99)), maxMs: ms(lag.max) };
    lag.reset();
    return r;
  };
  lag.enable();
  const alone: Lone[] = [];
  for (let i = 0; i < LONE_RUNS; i++) alone.push(await image(http, lone.nextKey(), `a lone image ${i}`));
  log(`lone image alone: median ${median(alone.map((r) => r.ms)).toFixed(0)} ms`);
  const lagAlone = lagOf();

  const floodAlone = await runFlood('alone');
  log(`${what} alone: ${floodAlone.totalMs.toFixed(0)} ms to the last`);

  lag.reset();
  const floodStartedAt = Date.now();
  const flooding = runFlood('beside');
  const busy = machineBusy();
  await sleep(ARRIVE_MS);
  // One at a time would measure the first in the backlog and the rest after it; a second apart,
  // all of them land while the flood's backlog is there.
  const during = await Promise.all(
    Array.from({ length: LONE_RUNS }, async (_, i) => {
      await sleep(i * 1_000);
      return image(http, lone.nextKey(), `a lone image during the flood ${i}`);
    }),
  );
  const lagDuring = lagOf();
  const busyDuring = during.map((r) => busy.between(r.at, r.at + r.ms));
  busy.stop();
  const floodBeside = await flooding;
  const duringMs = during.map((r) => r.ms);
  log(`lone image during ${what}: median ${median(duringMs).toFixed(0)} ms (${duringMs.map(Math.round).join(', ')})`);
  log(`${what} beside it: ${floodBeside.totalMs.toFixed(0)} ms to the last`);

  const client = stack.services.client;
  console.log(
    JSON.stringify(
      {
        fair,
        flood: what,
        lone: {
          aloneMedianMs: Math.round(median(alone.map((r) => r.ms))),
          duringMedianMs: Math.round(median(duringMs)),
          duringMs: duringMs.map(Math.round),
          arrivedAfterFloodMs: during.map((r) => r.at - floodStartedAt),
          // The share of both cores in use while each lone image was under way.
          machineBusyDuring: busyDuring,
          ratio: Math.round((median(duringMs) / median(alone.map((r) => r.ms))) * 100) / 100,
        },
        floodThroughput: {
          aloneMs: Math.round(floodAlone.totalMs),
          besideMs: Math.round(floodBeside.totalMs),
          ratio: Math.round((floodAlone.totalMs / floodBeside.totalMs) * 100) / 100,
        },
        pollAnswers: Object.fromEntries(pollAnswers),
        eventLoopLag: { alone: lagAlone, during: lagDuring },
        stagesAlone: await Promise.all(alone.map((r) => stagesOf(client, stack.services.pool, r))),
        stagesDuring: await Promise.all(during.map((r) => stagesOf(client, stack.services.pool, r))),
      },
      null,
      2,
    ),
  );
} catch (err) {
  failed = true;
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  await stack.stop(failed);
}
process.exit(failed ? 1 : 0);
