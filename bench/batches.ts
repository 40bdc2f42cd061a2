// `npm run bench -- --only=batches [--quick]`: a 10,000-line chat batch, then a 1,000-line image
// batch, through the official openai SDK, on the API and the worker as two processes (as a
// deployment runs them). Another account meanwhile sends single chat and image requests one at a
// time; the same requests are first timed with nothing else running (the reference, same run).
// Reported: time to admit (upload + create), lines per second, the single requests' latency as a
// ratio to the reference, and the RSS of the API and the worker. docs/benchmark.md has the figures.
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI, { toFile } from 'openai';
import { createShutdown } from '../runtime/lifecycle';
import { guardRun } from './harness';
import { createHttp, openAccount } from './http';
import type { BenchAccount, Http } from './http';
import { processRss } from './procfs';
import { writeResults } from './results';
import { createStack } from './stack';
import { mb, round, summarise } from './stats';
import type { LatencyStats } from './stats';

const FULL = { chatLines: 10_000, imageLines: 1_000, referenceSeconds: 30 };
const QUICK = { chatLines: 1_000, imageLines: 200, referenceSeconds: 15 };
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'expired']);

interface Probes {
  chat: number[];
  image: number[];
  failures: number;
}

interface RssSample {
  apiMb: number;
  workerMb: number;
}

interface BatchResult {
  endpoint: string;
  lines: number;
  uploadMs: number;
  createMs: number;
  /** Upload and create: until the whole batch is validated, priced and held. */
  admitMs: number;
  /** From the create's answer to the batch's `completed`. */
  runSeconds: number;
  linesPerSecond: number;
  status: string;
  requestCounts: { total: number; completed: number; failed: number };
  outputLines: number;
  holdsActiveAfter: number;
  chat: LatencyStats;
  image: LatencyStats;
  probeFailures: number;
  rss: { apiMaxMb: number; workerMaxMb: number };
}

/** The single requests of the other account: one chat and one image lane, each one request at a time. */
function startProbes(http: Http, account: BenchAccount, stop: AbortSignal): { done: Promise<Probes> } {
  const probes: Probes = { chat: [], image: [], failures: 0 };
  const lane = async (samples: number[], path: string, body: unknown) => {
    while (!stop.aborted) {
      const r = await http
        .request('POST', path, { token: account.nextKey(), body })
        .catch(() => ({ status: 0, ms: 0 }));
      if (stop.aborted) break;
      if (r.status === 200) samples.push(r.ms);
      else probes.failures++;
      await sleep(200);
    }
  };
  const done = Promise.all([
    lane(probes.chat, '/v1/chat/completions', {
      model: 'claude-haiku',
      messages: [{ role: 'user', content: 'a haiku about the tide' }],
      max_tokens: 50,
    }),
    lane(probes.image, '/v1/images/generations', { model: 'flux', prompt: 'a lighthouse at dusk' }),
  ]).then(() => probes);
  return { done };
}

function startRssSampler(pids: { api: number; worker: number }): { stop: () => Promise<RssSample[]> } {
  const samples: RssSample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const [api, worker] = await Promise.all([processRss(pids.api), processRss(pids.worker)]);
      samples.push({ apiMb: mb(api?.rss ?? 0), workerMb: mb(worker?.rss ?? 0) });
      await sleep(1_000);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return samples;
    },
  };
}

const chatLine = (i: number) => ({
  custom_id: `chat-${i}`,
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model: 'claude-haiku', messages: [{ role: 'user', content: `caption ${i}` }], max_tokens: 50 },
});
const imageLine = (i: number) => ({
  custom_id: `image-${i}`,
  method: 'POST',
  url: '/v1/images/generations',
  body: { model: 'flux', prompt: `catalogue item ${i}` },
});

export async function runBatches(args: { quick: boolean; keep: boolean; temporalDb: 'file' | 'memory' }) {
  const sizes = args.quick ? QUICK : FULL;
  const log = (line: string) => console.error(`[bench] ${line}`);
  const dataDir = join(process.cwd(), '.test-data', `bench-batches-${process.pid}`);
  const stackHandle = createStack({
    dataDir,
    workerMode: 'processes',
    temporalDb: args.temporalDb,
    keepData: args.keep,
    log,
    reference: false,
  });
  const interrupt = new AbortController();
  const shutdown = createShutdown(log);
  shutdown.add('bench stack', () => stackHandle.stop());
  shutdown.add('requests in flight', async () => interrupt.abort());
  guardRun({
    log,
    shutdown,
    interrupt,
    watchdogMinutes: args.quick ? 10 : 45,
    stoppedNote: args.keep ? `data kept in ${dataDir}` : 'data folder removed',
  });

  try {
    const stack = await stackHandle.start();
    if (stack.apiPid === undefined || stack.workerPid === undefined) throw new Error('API or worker pid unknown');
    const pids = { api: stack.apiPid, worker: stack.workerPid };
    const http = createHttp(stack.baseUrl, interrupt.signal);
    const batchAccount = await openAccount(http, stack.adminToken, { credits: 10_000_000, requests: 1 });
    // Two lanes of one request every ~0.3 s for the whole run: about 400 a minute, over several keys.
    const single = await openAccount(http, stack.adminToken, { credits: 10_000_000, requests: 4_000 });
    const client = new OpenAI({ apiKey: batchAccount.nextKey(), baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
    log(`service up at ${stack.baseUrl}; API pid ${pids.api}, worker pid ${pids.worker}`);

    // Warm both paths, then the reference: the single requests with nothing else running.
    const warm = new AbortController();
    const warmup = startProbes(http, single, AbortSignal.any([warm.signal, interrupt.signal]));
    await sleep(5_000);
    warm.abort();
    await warmup.done;
    const refStop = new AbortController();
    const refRss = startRssSampler(pids);
    const ref = startProbes(http, single, AbortSignal.any([refStop.signal, interrupt.signal]));
    await sleep(sizes.referenceSeconds * 1_000);
    refStop.abort();
    const refProbes = await ref.done;
    const refSamples = await refRss.stop();
    const reference = {
      chat: summarise(refProbes.chat),
      image: summarise(refProbes.image),
      probeFailures: refProbes.failures,
      rss: {
        apiMaxMb: Math.max(...refSamples.map((s) => s.apiMb)),
        workerMaxMb: Math.max(...refSamples.map((s) => s.workerMb)),
      },
    };
    log(`reference: chat p50 ${round(reference.chat.p50)} ms, image p50 ${round(reference.image.p50)} ms`);

    const runOne = async (
      endpoint: '/v1/chat/completions' | '/v1/images/generations',
      lines: unknown[],
    ): Promise<BatchResult> => {
      const stopProbes = new AbortController();
      const rss = startRssSampler(pids);
      const probes = startProbes(http, single, AbortSignal.any([stopProbes.signal, interrupt.signal]));
      const text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
      const t0 = performance.now();
      const file = await client.files.create({ file: await toFile(Buffer.from(text), 'in.jsonl'), purpose: 'batch' });
      const t1 = performance.now();
      const created = await client.batches.create({ input_file_id: file.id, endpoint, completion_window: '24h' });
      const t2 = performance.now();
      log(`${endpoint}: ${lines.length} lines admitted in ${round(t2 - t0)} ms (${created.status})`);
      let batch = created;
      let lastLog = 0;
      while (!TERMINAL.has(batch.status)) {
        await sleep(1_000);
        if (interrupt.signal.aborted) throw new Error('interrupted');
        batch = await client.batches.retrieve(created.id);
        if (performance.now() - lastLog > 15_000) {
          lastLog = performance.now();
          log(`  ${batch.status}: ${JSON.stringify(batch.request_counts)}`);
        }
      }
      const t3 = performance.now();
      stopProbes.abort();
      const during = await probes.done;
      const samples = await rss.stop();
      const output = batch.output_file_id ? await (await client.files.content(batch.output_file_id)).text() : '';
      const balance = await http.request<{ holdsActive: number }>('GET', '/api/v1/balance', {
        token: batchAccount.nextKey(),
      });
      const runSeconds = (t3 - t2) / 1000;
      const counts = batch.request_counts ?? { total: 0, completed: 0, failed: 0 };
      return {
        endpoint,
        lines: lines.length,
        uploadMs: round(t1 - t0),
        createMs: round(t2 - t1),
        admitMs: round(t2 - t0),
        runSeconds: round(runSeconds),
        linesPerSecond: round(counts.completed / runSeconds),
        status: batch.status,
        requestCounts: counts,
        outputLines: output.split('\n').filter((l) => l !== '').length,
        holdsActiveAfter: balance.body.holdsActive,
        chat: summarise(during.chat),
        image: summarise(during.image),
        probeFailures: during.failures,
        rss: {
          apiMaxMb: Math.max(...samples.map((s) => s.apiMb)),
          workerMaxMb: Math.max(...samples.map((s) => s.workerMb)),
        },
      };
    };

    const chat = await runOne(
      '/v1/chat/completions',
      Array.from({ length: sizes.chatLines }, (_, i) => chatLine(i)),
    );
    const image = await runOne(
      '/v1/images/generations',
      Array.from({ length: sizes.imageLines }, (_, i) => imageLine(i)),
    );

    const ratio = (a: number, b: number) => round(a / b, 2);
    const rows = [chat, image].map((b) => ({
      batch: `${b.lines} ${b.endpoint === '/v1/chat/completions' ? 'chat' : 'image'} lines`,
      status: b.status,
      counts: `${b.requestCounts.completed}/${b.requestCounts.total} (${b.requestCounts.failed} failed)`,
      admitMs: b.admitMs,
      runSeconds: b.runSeconds,
      linesPerSecond: b.linesPerSecond,
      singleChatP50Ratio: ratio(b.chat.p50, reference.chat.p50),
      singleChatP95Ratio: ratio(b.chat.p95, reference.chat.p95),
      singleImageP50Ratio: ratio(b.image.p50, reference.image.p50),
      singleImageP95Ratio: ratio(b.image.p95, reference.image.p95),
      apiRssMb: b.rss.apiMaxMb,
      workerRssMb: b.rss.workerMaxMb,
    }));
    console.log(`\nBatches (${args.quick ? 'quick' : 'full'}), API and worker as two processes`);
    console.log(
      `reference, no batch: chat p50 ${round(reference.chat.p50)} ms p95 ${round(reference.chat.p95)} ms; image p50 ${round(reference.image.p50)} ms p95 ${round(reference.image.p95)} ms; RSS API ${reference.rss.apiMaxMb} MB, worker ${reference.rss.workerMaxMb} MB`,
    );
    console.table(rows);
    const summary = { sizes, reference, batches: [chat, image], rows };
    const file = await writeResults(JSON.stringify(summary, null, 2), `batches-${args.quick ? 'quick' : 'full'}`);
    log(`results in ${file}`);
    const whole = (b: BatchResult) =>
      b.status === 'completed' &&
      b.requestCounts.completed === b.lines &&
      b.outputLines === b.lines &&
      b.holdsActiveAfter === 0 &&
      b.probeFailures === 0;
    if (!whole(chat) || !whole(image) || reference.probeFailures > 0) {
      log('a batch did not complete whole, a hold was left, or a single request failed');
      return 1;
    }
    return 0;
  } finally {
    await shutdown.stop();
  }
}
