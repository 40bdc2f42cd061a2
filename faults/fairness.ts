// `npm run fairness [-- --unfair] [-- --flood=300]`: how long one account's lone image takes while
// another account floods the service with images, against the same image alone. Provider
// concurrency is kept small (PROVIDER_CONCURRENCY=10) so that the flood makes a backlog on the
// provider task queue, where a first-come-first-served queue makes the lone image wait behind it.
// The server's fairness (matching.enableFairness) is on, as everywhere; --unfair turns it off to
// compare. The workflows carry their account as fairness key (service/generation/temporal-gateway.ts), their
// activities inherit it.
import { setTimeout as sleep } from 'node:timers/promises';
import { createHttp, openAccount } from '../bench/http';
import { startWorker } from '../runtime/worker-runner';
import { startInProcessStack } from './in-process-stack';

const args = process.argv.slice(2);
// Fairness is on by default (runtime/temporal-server-config.ts); --unfair measures without it.
const fair = !args.includes('--unfair');
const flood = Number(args.find((a) => a.startsWith('--flood='))?.split('=')[1] ?? 300);
const LONE_RUNS = 5;
const log = (line: string) => console.error(`[fairness] ${line}`);

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
  const flooder = await openAccount(http, stack.adminToken, {
    credits: flood * 10,
    requests: flood * 4,
    scopes: ['image'],
  });
  const lone = await openAccount(http, stack.adminToken, { credits: 500, requests: 40, scopes: ['image'] });

  /** Submit to finished: images usually finish within the call; a long wait answers 202 and is polled. */
  const image = async (key: string, prompt: string): Promise<number> => {
    const started = performance.now();
    const res = await http.request<{ id: string; status: string }>('POST', '/api/v1/generate', {
      token: key,
      body: { kind: 'image', model: 'flux', prompt, width: 512, height: 512 },
    });
    if (res.status !== 200 && res.status !== 202)
      throw new Error(`submit answered ${res.status}: ${JSON.stringify(res.body)}`);
    let status = res.body.status;
    while (status !== 'succeeded' && status !== 'failed') {
      await sleep(100);
      status = (await http.request<{ status: string }>('GET', `/api/v1/generations/${res.body.id}`, { token: key }))
        .body.status;
    }
    return performance.now() - started;
  };
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

  const alone: number[] = [];
  for (let i = 0; i < LONE_RUNS; i++) alone.push(await image(lone.nextKey(), `a lone image ${i}`));
  log(`alone: median ${median(alone).toFixed(0)} ms (${alone.map((x) => x.toFixed(0)).join(', ')})`);

  // The flood: every image at once, each a 2-second provider run, 10 at a time: ~60 s of backlog.
  const flooding = Promise.all(
    Array.from({ length: flood }, (_, i) => image(flooder.nextKey(), `sim:delay=2000 flood ${i}`)),
  );
  await sleep(3_000);
  // One at a time would measure the first in the backlog and the rest after it; a second apart,
  // all of them land while the flood's backlog is there.
  const during = await Promise.all(
    Array.from({ length: LONE_RUNS }, async (_, i) => {
      await sleep(i * 1_000);
      return image(lone.nextKey(), `a lone image during the flood ${i}`);
    }),
  );
  log(
    `during a flood of ${flood}: median ${median(during).toFixed(0)} ms (${during.map((x) => x.toFixed(0)).join(', ')})`,
  );
  const floodTimes = await flooding;
  log(
    `the flood's own images: median ${median(floodTimes).toFixed(0)} ms, last ${Math.max(...floodTimes).toFixed(0)} ms`,
  );
  console.log(
    JSON.stringify({
      fair,
      flood,
      aloneMedianMs: Math.round(median(alone)),
      duringMedianMs: Math.round(median(during)),
      duringMs: during.map(Math.round),
      floodMedianMs: Math.round(median(floodTimes)),
    }),
  );
} catch (err) {
  failed = true;
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  await stack.stop(failed);
}
process.exit(failed ? 1 : 0);
