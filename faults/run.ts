// `npm run faults`: the service as separate processes, a steady stream of generations of every kind
// from careful clients and two batches, and meanwhile the worker SIGKILLed every 30 s, PostgreSQL restarted once
// and the Temporal dev server restarted once. Then, once everything has settled, the ledger, the
// answers and the files are checked, a summary is printed, and the exit code says whether every
// invariant held. docs/faults.md explains it.
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { createHttp, openAccount } from '../bench/http';
import { createPool } from '../core/db/pool';
import { createShutdown } from '../runtime/lifecycle';
import {
  billingEnv,
  budgetCheck,
  capCustomer,
  customerBudgetCheck,
  openBudgetedKey,
  runTopUps,
  topUpChecks,
} from './accounts';
import { answerChecks } from './answer-checks';
import { createTimeline, runFaults } from './chaos';
import { createClient } from './client';
import type { Outcome } from './client';
import { startInputServer } from './inputs';
import { batchAnswerCheck, liveBatches, runBatches } from './batches';
import { batchLedgerChecks, generationFacts, idempotencyClaims, ledgerChecks } from './ledger-checks';
import type { Check } from './ledger-checks';
import { leftoverProcesses } from './leftovers';
import { outputChecks } from './output-checks';
import { duration, renderReport } from './report';
import { missingForCluster } from '../deploy/cluster/prerequisites';
import { createClusterStack } from '../deploy/cluster/stack';
import type { ClusterStack } from '../deploy/cluster/stack';
import { createFaultStack } from './stack';
import type { ProcessStack } from '../deploy/processes/stack';
import { startFaultUpstreams, upstreamCheck } from './upstreams';
import { startWebhookReceiver, registerEndpoint, webhookCheck } from './webhooks';
import { ACCOUNTS, BUDGETED, CAPPED_CUSTOMER, CUSTOMER_ACCOUNT, POOR, planRequests } from './workload';

const USAGE = `usage: npm run faults [-- --count=1000] [-- --rate=3.3] [-- --topology=dev|cluster] [-- --keep]
  --count=N          generations to ask for (default 1000)
  --rate=R           requests started per second (default 3.3: 1000 in about 5 minutes)
  --topology=cluster the production topology of \`npm run cluster\` (Temporal server on PostgreSQL,
                     two APIs behind HAProxy, two workflow and two provider workers), with an API and
                     a provider worker SIGKILLed too; default dev: one API, one worker, the dev server
  --keep             keep .test-data/faults-<pid>/ (logs, PostgreSQL data, Temporal data, outputs) even when all is well`;

/**
 * The reconciler's pace for the run: every 15 s, holds older than 45 s (defaults: 1 min and 2 min).
 * A chat's deadline of a minute (default 10) bounds how long the hold of a reply cut off by a
 * killed API waits for it within the run.
 */
const RUN_ENV = { RECONCILE_EVERY_MS: '15000', RECONCILE_GRACE_MS: '45000', DEADLINE_CHAT_MS: '60000' };
const WORKER_EVERY_MS = 30_000;
const OUTAGE_MS = 8_000;
/** How long the service gets to finish what the faults left in flight. */
const SETTLE_LIMIT_MS = 8 * 60_000;
/** How long the last webhook events get to arrive once everything has settled (a failed attempt is retried after 5 s). */
const WEBHOOK_WAIT_MS = 120_000;
/** The poor account is topped up this often while requests are sent. */
const TOP_UP_EVERY_MS = 25_000;

function parseArgs(argv: string[]): { count: number; rate: number; keep: boolean; topology: 'dev' | 'cluster' } {
  const args = { count: 1000, rate: 3.3, keep: false, topology: 'dev' as 'dev' | 'cluster' };
  for (const arg of argv) {
    const [name, value] = arg.split('=');
    if (name === '--count' && Number(value) > 0) args.count = Math.floor(Number(value));
    else if (name === '--topology' && (value === 'dev' || value === 'cluster')) args.topology = value;
    else if (name === '--rate' && Number(value) > 0) args.rate = Number(value);
    else if (arg === '--keep') args.keep = true;
    else {
      console.error(arg === '--help' || arg === '-h' ? USAGE : `unknown argument ${arg}\n${USAGE}`);
      process.exit(arg === '--help' || arg === '-h' ? 0 : 2);
    }
  }
  return args;
}

const log = (line: string) => console.error(`[faults] ${line}`);
/** Stops what the run started: at the end, on Ctrl-C, SIGTERM or SIGHUP, and after a failure. */
const shutdown = createShutdown(log);
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' / ');

async function settle(db: pg.Pool, limitMs: number): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  let said = 0;
  for (;;) {
    const r = await db
      .query<{ live: number; held: number }>(
        `SELECT (SELECT count(*) FROM generations WHERE status IN ('queued', 'running'))::int AS live,
              (SELECT count(*) FROM holds WHERE state = 'held')::int AS held`,
      )
      .catch(() => ({ rows: [{ live: -1, held: -1 }] }));
    const { live, held } = r.rows[0]!;
    const batches = await liveBatches(db).catch(() => -1);
    if (live === 0 && held === 0 && batches === 0) return true;
    if (Date.now() >= deadline) return false;
    if (Date.now() - said > 15_000) {
      log(
        `waiting for ${live} generations still queued or running, ${held} holds still held and ${batches} batches running…`,
      );
      said = Date.now();
    }
    await sleep(2_000);
  }
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (args.topology === 'cluster') {
    // Before anything starts or builds: what the cluster needs from this machine.
    const missing = await missingForCluster();
    for (const line of missing) log(line);
    if (missing.length > 0) return 1;
  }
  const began = Date.now();
  const loadBefore = load();
  const dataDir = join(process.cwd(), '.test-data', `faults-${process.pid}`);
  const interrupt = new AbortController();
  // Every request in flight and every wait listens to it: a thousand listeners are the design.
  setMaxListeners(0, interrupt.signal);
  const phases: [string, number][] = [];
  const processProblems: string[] = [];
  const timeline = createTimeline(began, log);

  const upstreams = await startFaultUpstreams();
  shutdown.add('upstreams', () => upstreams.close());
  const stripeWebhookSecret = `whsec_${randomBytes(24).toString('base64url')}`;
  const handle = (args.topology === 'cluster' ? createClusterStack : createFaultStack)({
    dataDir,
    serviceEnv: { ...RUN_ENV, ...billingEnv(stripeWebhookSecret), UPSTREAMS_JSON: upstreams.config },
    log,
    onStartFailure: (what, error) => timeline.add(`${what} start failed (${error}); starting it again`),
    onUnexpectedExit: (what, how) => {
      processProblems.push(`${what} exited on its own (${how})`);
      timeline.add(`${what} EXITED ON ITS OWN (${how}); starting it again`);
    },
  });
  /** What the steps below stop, once it exists. */
  const opened: {
    db?: pg.Pool;
    inputs?: Awaited<ReturnType<typeof startInputServer>>;
    receiver?: Awaited<ReturnType<typeof startWebhookReceiver>>;
  } = {};
  shutdown.add('stack', () => handle.stop());
  shutdown.add('input server', async () => opened.inputs?.close());
  shutdown.add('webhook receiver', async () => opened.receiver?.close());
  shutdown.add('database observer', async () => opened.db?.end());
  shutdown.add('requests in flight', async () => interrupt.abort());
  // Interrupted, the run has nothing to show: its folder goes unless asked to keep it.
  const interrupted = () =>
    void (args.keep ? Promise.resolve() : rm(dataDir, { recursive: true, force: true })).finally(() =>
      process.exit(130),
    );
  shutdown.onSignals(interrupted);
  shutdown.followParent(interrupted);

  log(`data in ${dataDir}; load average ${loadBefore} on ${availableParallelism()} cores`);
  const stack: ProcessStack = await handle.start();
  const cluster = args.topology === 'cluster' ? (stack as ClusterStack) : undefined;
  const inputs = (opened.inputs = await startInputServer());
  phases.push(['start-up', Date.now() - began]);

  const admin = createHttp(stack.baseUrl, interrupt.signal);
  // Keys enough that no key reaches the plan's rate limit (a 429 would be the harness's doing):
  // each request is followed by polls every 2 s while it runs.
  const perAccount = Math.ceil(args.count / (ACCOUNTS.length - 1)) * 8;
  const accounts = [];
  for (const a of ACCOUNTS) {
    accounts.push(
      await openAccount(admin, stack.adminToken, {
        ...a,
        requests: perAccount,
        scopes: ['image', 'video', 'chat', 'upscale', 'webhooks'],
      }),
    );
  }
  // The first account's finished generations are also sent to a webhook receiver.
  const budgetedKey = await openBudgetedKey(admin, stack.adminToken, accounts[BUDGETED]!.id);
  await capCustomer(admin, stack.adminToken, accounts[CUSTOMER_ACCOUNT]!.id, CAPPED_CUSTOMER);
  const receiver = (opened.receiver = await startWebhookReceiver());
  const webhookSecret = await registerEndpoint(stack.baseUrl, accounts[0]!.nextKey(), receiver.url);
  const plans = planRequests(args.count, inputs.images, randomBytes(4).toString('hex'));
  const spanMs = (args.count / args.rate) * 1000;
  const origin = Date.now();
  timeline.startAt(origin);
  log(
    `sending ${args.count} requests over ${duration(spanMs)}; faults: worker every ${WORKER_EVERY_MS / 1000} s, PostgreSQL and Temporal once each${cluster ? ', an API and a provider worker once each' : ''}; an upstream failing half its submits; a top-up every ${TOP_UP_EVERY_MS / 1000} s`,
  );
  const faults = runFaults(
    stack,
    {
      workerEveryMs: WORKER_EVERY_MS,
      // Between worker kills, at about a quarter and a half of the submissions.
      postgresAtMs: Math.max(15_000, Math.round((spanMs * 0.25) / WORKER_EVERY_MS) * WORKER_EVERY_MS + 15_000),
      temporalAtMs: Math.max(45_000, Math.round((spanMs * 0.55) / WORKER_EVERY_MS) * WORKER_EVERY_MS + 15_000),
      outageMs: OUTAGE_MS,
      untilMs: spanMs,
      kills: cluster
        ? [
            // Between the other faults: at about a tenth and three quarters of the submissions.
            {
              atMs: Math.max(10_000, Math.round(spanMs * 0.1)),
              name: 'API process api-2 (behind the balancer)',
              kill: () => cluster.killApi(),
              start: () => cluster.startApi(),
            },
            {
              atMs: Math.max(20_000, Math.round(spanMs * 0.75)),
              name: 'provider worker provider-1',
              kill: () => cluster.killProvider(),
              start: () => cluster.startProvider(),
            },
          ]
        : [],
    },
    origin,
    timeline,
    interrupt.signal,
  );

  const topUps = runTopUps({
    baseUrl: stack.baseUrl,
    webhookSecret: stripeWebhookSecret,
    accountId: accounts[POOR]!.id,
    everyMs: TOP_UP_EVERY_MS,
    untilMs: spanMs,
    signal: interrupt.signal,
  });
  // Batches beside the requests: one runs through the faults, another is cancelled part-way (faults/batches.ts).
  const batches = runBatches(
    stack.baseUrl,
    { chat: accounts[0]!.nextKey(), images: accounts[2]!.nextKey() },
    spanMs,
    interrupt.signal,
    log,
  );
  const send = createClient(stack.baseUrl, origin, interrupt.signal);
  const outcomes: Outcome[] = [];
  const progress = setInterval(() => {
    const fives = outcomes.reduce(
      (n, o) => n + o.attempts.filter((a) => typeof a.status === 'number' && a.status >= 500).length,
      0,
    );
    log(
      `t+${Math.round((Date.now() - origin) / 1000)} s: ${outcomes.length} of ${args.count} answered, ${fives} 5xx so far`,
    );
  }, 30_000);
  const sent: Promise<void>[] = [];
  for (const plan of plans) {
    const wait = origin + (plan.index * 1000) / args.rate - Date.now();
    if (wait > 0) await sleep(wait, undefined, { signal: interrupt.signal });
    sent.push(
      send(plan, plan.budgeted ? budgetedKey.key : accounts[plan.account]!.nextKey()).then(
        (o) => void outcomes.push(o),
        (err: unknown) => {
          // Cut short by Ctrl-C: the stop is under way, and there is nothing to report.
          if (!interrupt.signal.aborted) throw err;
        },
      ),
    );
  }
  await Promise.all(sent);
  clearInterval(progress);
  const madeBatches = await batches;
  await faults;
  await topUps.done;
  phases.push([`requests (sent over ${duration(spanMs)}, answered, followed to their end)`, Date.now() - origin]);

  const settling = Date.now();
  const db = (opened.db = createPool(stack.databaseUrl, 2));
  const settled = await settle(db, SETTLE_LIMIT_MS);
  phases.push(['settling', Date.now() - settling]);
  timeline.add(settled ? 'everything settled' : `NOT SETTLED after ${duration(SETTLE_LIMIT_MS)}`);

  const checking = Date.now();
  const allFacts = await generationFacts(db);
  // The requests' own generations; a batch's lines are checked with their batch.
  const facts = allFacts.filter((g) => g.batchId === null);
  const checks: Check[] = [
    ...(await ledgerChecks(db, allFacts)),
    ...(await batchLedgerChecks(db)),
    await batchAnswerCheck(db, stack.baseUrl, madeBatches),
    ...answerChecks(outcomes, facts, await idempotencyClaims(db)),
  ];
  const files = await outputChecks(
    stack.baseUrl,
    accounts.map((a) => a.nextKey()),
    facts,
    plans,
  );
  checks.push(files.check);
  checks.push(await upstreamCheck(db, facts, upstreams));
  checks.push(...(await topUpChecks(db, topUps)));
  checks.push(await budgetCheck(db, budgetedKey.id, outcomes));
  checks.push(await customerBudgetCheck(db, accounts[CUSTOMER_ACCOUNT]!.id, CAPPED_CUSTOMER, outcomes));
  checks.push(await webhookCheck(db, accounts[0]!.id, facts, receiver.received, WEBHOOK_WAIT_MS, webhookSecret));
  checks.push({
    name: 'no service process died on its own',
    ok: processProblems.length === 0,
    detail: processProblems.length === 0 ? 'only the kills of the schedule' : processProblems.join('; '),
  });
  phases.push(['checks', Date.now() - checking]);

  await shutdown.stop();
  const left = await leftoverProcesses(dataDir);
  checks.push({
    name: 'nothing left running',
    ok: left.length === 0,
    detail: left.length === 0 ? 'every process of the run is gone' : `still running: ${left.join(', ')}`,
  });
  phases.push(['total', Date.now() - began]);

  const report = renderReport({
    settings: `${args.topology === 'cluster' ? 'cluster topology (Temporal server on PostgreSQL, 2 APIs behind HAProxy, 2 workflow + 2 provider workers)' : 'dev topology (dev server, 1 API, 1 worker)'}; ${args.count} requests at ${args.rate}/s from ${ACCOUNTS.length} accounts; reconciler every ${Number(RUN_ENV.RECONCILE_EVERY_MS) / 1000} s, grace ${Number(RUN_ENV.RECONCILE_GRACE_MS) / 1000} s; outputs ${(files.bytes / 1e6).toFixed(1)} MB`,
    machine: `${availableParallelism()} cores, load average (1/5/15 min) ${loadBefore} at the start, ${load()} at the end`,
    phases,
    facts,
    outcomes,
    timeline: timeline.events,
    checks,
  });
  console.log(report);
  const ok = checks.every((c) => c.ok);
  const resultsDir = join(process.cwd(), '.test-data', 'faults-results');
  await mkdir(resultsDir, { recursive: true });
  const stamp = new Date().toISOString().replaceAll(':', '-').slice(0, 19);
  await writeFile(join(resultsDir, `${stamp}.txt`), `${report}\n`);
  if (ok && !args.keep) await rm(dataDir, { recursive: true, force: true });
  else log(`data kept in ${dataDir} (a .log per process: api, worker, postgres, temporal…)`);
  log(`summary written to ${join(resultsDir, `${stamp}.txt`)}`);
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (!shutdown.stopping)
      log(`the fault run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    void shutdown.stop().then(() => process.exit(1));
  },
);
