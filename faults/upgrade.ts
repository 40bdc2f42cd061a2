// `npm run upgrade`: rehearses the in-place upgrade of the cluster's Temporal server that
// docs/operations.md describes, one minor at a time with each minor's schema step, while work is
// in flight: the cluster starts on the old server, a webhook endpoint is registered, long videos
// and an image batch of long lines start, and each step stops the server, runs the next version's
// schema tool, and starts the next binary on the same databases. Every video, those started before
// and those started between the steps, must finish, charged once; the batch must complete with its
// counts, files and money right; every finished generation and the batch's end must reach the
// endpoint, signed; the server must report each version and the schemas each step's version.
// Exit code 0 when all of that holds.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import { createHttp, openAccount } from '../bench/http';
import { createPool } from '../core/db/pool';
import { missingForCluster } from '../deploy/cluster/prerequisites';
import { createClusterStack } from '../deploy/cluster/stack';
import { BATCH_EVENTS } from '../core/webhooks/events';
import { createShutdown } from '../runtime/lifecycle';
import { buildTemporalServer, ensureTemporalServer, TEMPORAL_SERVER_VERSION } from '../scripts/temporal-server';
import { batchAnswerCheck, makeBatch } from './batches';
import type { FaultBatch } from './batches';
import { batchLedgerChecks, generationFacts, ledgerChecks } from './ledger-checks';
import { registerEndpoint, startWebhookReceiver, webhookCheck } from './webhooks';

/**
 * From the version the cluster ran before to the current one, through the newest patch of each
 * minor in between that the module proxy can build (v1.30.0 is retracted; v1.31.3 to v1.31.5
 * require go.temporal.io/auto-scaled-workers versions whose source the proxy refuses, 403), with
 * the schema versions each one's tool brings (schema/postgresql/v12 of it: temporal, visibility).
 */
const STEPS = [
  { version: 'v1.29.1', schemas: ['1.18', '1.9'] },
  { version: 'v1.30.9', schemas: ['1.18', '1.13'] },
  { version: 'v1.31.2', schemas: ['1.19', '1.14'] },
  { version: TEMPORAL_SERVER_VERSION, schemas: ['1.19', '1.14'] },
] as const;
const VIDEO = { kind: 'video', model: 'kling', seconds: 10, quality: '1080p' } as const;
/** Long enough to be in flight across every step (each takes some 20 s here). */
const LONG_DELAY_MS = 150_000;
const LONG_VIDEOS = 3;
/**
 * The batch's image lines, 20 s to 152 s long, 12 s apart: every line runs across every step
 * (each takes a few seconds here) and they end one by one after it; one fails, one asks for two images.
 */
const BATCH_LINES = Array.from({ length: 12 }, (_, i) => ({
  model: 'flux',
  prompt: `[upgrade batch] image ${i + 1}${i === 3 ? ' sim:fail' : ''} sim:delay=${20_000 + i * 12_000}`,
  ...(i === 5 ? { n: 2 } : {}),
}));
/** How long the last webhook events get to arrive once everything ended (as the fault run gives them). */
const WEBHOOK_WAIT_MS = 120_000;

const log = (line: string) => console.error(`[upgrade] ${new Date().toISOString().slice(11, 19)} ${line}`);
const problems: string[] = [];
const check = (ok: boolean, what: string) => {
  log(`${ok ? 'PASS' : 'FAIL'}  ${what}`);
  if (!ok) problems.push(what);
};
const shutdown = createShutdown(log);
const dataDir = join(process.cwd(), '.test-data', `upgrade-${process.pid}`);

async function serverVersion(address: string): Promise<string> {
  const connection = await Connection.connect({ address });
  try {
    return (await connection.workflowService.getSystemInfo({})).serverVersion ?? '?';
  } finally {
    await connection.close();
  }
}

async function schemaVersions(databaseUrl: string): Promise<string[]> {
  const versions: string[] = [];
  for (const db of ['temporal', 'temporal_visibility']) {
    const url = new URL(databaseUrl);
    url.pathname = `/${db}`;
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      const r = await client.query<{ curr_version: string }>('SELECT curr_version FROM schema_version');
      versions.push(r.rows[0]?.curr_version ?? '?');
    } finally {
      await client.end();
    }
  }
  return versions;
}

async function main(): Promise<void> {
  const missing = await missingForCluster();
  for (const line of missing) log(line);
  if (missing.length > 0) {
    problems.push('the machine lacks what the cluster needs');
    return;
  }
  const progress = (line: string) => line.startsWith('go: downloading') || log(`[build] ${line}`);
  log(`building (or finding) the servers ${STEPS.map((s) => s.version).join(', ')} (minutes each the first time)`);
  const current = await ensureTemporalServer(process.env, progress);
  const builds = [];
  for (const step of STEPS.slice(0, -1)) builds.push(await buildTemporalServer(step.version, process.env, progress));
  builds.push({ server: current.server, sqlTool: current.sqlTool });

  const handle = createClusterStack({
    dataDir,
    serviceEnv: {},
    log,
    temporalBinaries: { ...builds[0]!, ui: current.ui },
    onStartFailure: (name, error) => log(`${name} start failed (${error}); starting it again`),
    onUnexpectedExit: (name, how) => {
      log(`${name} EXITED ON ITS OWN (${how})`);
      problems.push(`${name} exited on its own (${how})`);
    },
  });
  shutdown.add('cluster', () => handle.stop());
  shutdown.onSignals((code) => process.exit(code));
  const stack = await handle.start();
  log(`cluster up on ${STEPS[0].version}; data in ${dataDir}`);

  const interrupt = new AbortController();
  shutdown.add('requests in flight', async () => interrupt.abort());
  const http = createHttp(stack.baseUrl, interrupt.signal);
  const account = await openAccount(http, stack.adminToken, {
    credits: 5_000,
    requests: 100,
    scopes: ['video', 'image', 'webhooks'],
  });
  // The outbox, the relay and the delivery workflows live through the steps too; the batch events are opt-in.
  const receiver = await startWebhookReceiver();
  shutdown.add('webhook receiver', () => receiver.close());
  const webhookSecret = await registerEndpoint(stack.baseUrl, account.nextKey(), receiver.url, BATCH_EVENTS);
  const submit = async (prompt: string) => {
    for (let attempt = 0; ; attempt++) {
      const res = await http.request<{ id: string; creditsQuoted: number }>('POST', '/api/v1/generate', {
        token: account.nextKey(),
        body: { ...VIDEO, prompt },
      });
      if (res.status === 202) return res.body;
      if (attempt > 30) throw new Error(`submit answered ${res.status}: ${JSON.stringify(res.body)}`);
      await sleep(1_000);
    }
  };
  const statusOf = async (id: string) =>
    (await http.request<{ status?: string }>('GET', `/api/v1/generations/${id}`, { token: account.nextKey() })).body
      .status ?? 'unanswered';

  const videos: { id: string; creditsQuoted: number; startedOn: string }[] = [];
  for (let i = 0; i < LONG_VIDEOS; i++)
    videos.push({
      ...(await submit(`sim:delay=${LONG_DELAY_MS} a long video ${i} started on ${STEPS[0].version}`)),
      startedOn: STEPS[0].version,
    });
  const batch: FaultBatch = {
    id: await makeBatch(stack.baseUrl, account.nextKey(), '/v1/images/generations', BATCH_LINES, interrupt.signal),
    key: account.nextKey(),
    endpoint: '/v1/images/generations',
    lines: BATCH_LINES.length,
    cancelled: false,
  };
  const batchNow = async () => {
    const res = await http.request<{ status?: string; request_counts?: { completed: number; failed: number } }>(
      'GET',
      `/v1/batches/${batch.id}`,
      { token: account.nextKey() },
    );
    const counts = res.body.request_counts;
    // A 503 while the server restarts: /health asks Temporal too, so the balancer takes every API out meanwhile.
    return {
      status: res.body.status ?? 'unanswered',
      said: counts
        ? `batch ${res.body.status}, ${counts.completed + counts.failed} of ${batch.lines} lines ended`
        : `batch unread (${res.status})`,
    };
  };
  for (const v of videos) while ((await statusOf(v.id)) !== 'running') await sleep(500);
  // `validating` while its file is read, a moment; anything else but `in_progress` is a failure to report.
  let started = await batchNow();
  for (const until = Date.now() + 60_000; started.status === 'validating' && Date.now() < until;) {
    await sleep(500);
    started = await batchNow();
  }
  check(started.status === 'in_progress', `${batch.id} started on ${STEPS[0].version}: ${started.said}`);
  log(`${LONG_VIDEOS} long videos running: ${videos.map((v) => v.id).join(', ')}`);

  for (const [i, step] of STEPS.entries()) {
    if (i > 0) {
      if (i === STEPS.length - 1) {
        const { status, said } = await batchNow();
        check(status === 'in_progress', `the batch still runs as the last step begins (${said})`);
      }
      const began = Date.now();
      log(`upgrading to ${step.version}: stop the server, its schema tool, start it`);
      await stack.upgradeTemporal(builds[i]!);
      log(`on ${step.version} after ${((Date.now() - began) / 1000).toFixed(1)} s; ${(await batchNow()).said}`);
      // Running before the next step stops the server: a video whose workflow start that stop cuts
      // off is released as `not_started` (the runbook's step 2), and was never in flight on this version.
      const video = await submit(`sim:delay=20000 a video started on ${step.version}`);
      for (const until = Date.now() + 60_000; Date.now() < until && (await statusOf(video.id)) === 'queued';)
        await sleep(500);
      videos.push({ ...video, startedOn: step.version });
    }
    const reported = await serverVersion(stack.temporalAddress);
    check(`v${reported}` === step.version, `the server reports ${reported} (expected ${step.version})`);
    const schemas = await schemaVersions(stack.databaseUrl);
    check(
      schemas.join('/') === step.schemas.join('/'),
      `schemas temporal/visibility at ${schemas.join('/')} (expected ${step.schemas.join('/')})`,
    );
  }

  log('waiting for every video to end…');
  const deadline = Date.now() + LONG_DELAY_MS + 5 * 60_000;
  for (const v of videos) {
    while (!['succeeded', 'failed', 'cancelled'].includes(await statusOf(v.id)) && Date.now() < deadline)
      await sleep(2_000);
    const status = await statusOf(v.id);
    check(status === 'succeeded', `${v.id} (started on ${v.startedOn}) ${status}`);
  }
  let ended = await batchNow();
  while (!['completed', 'failed', 'expired', 'cancelled'].includes(ended.status) && Date.now() < deadline) {
    await sleep(2_000);
    ended = await batchNow();
  }
  check(ended.status === 'completed', `${batch.id} (started on ${STEPS[0].version}): ${ended.said}`);
  const db = createPool(stack.databaseUrl, 2);
  try {
    const facts = await generationFacts(db);
    for (const c of [
      ...(await ledgerChecks(db, facts)),
      ...(await batchLedgerChecks(db)),
      await batchAnswerCheck(db, stack.baseUrl, [batch]),
      // A batch's lines send no generation events: its end is one event of its own.
      await webhookCheck(
        db,
        account.id,
        facts.filter((g) => g.batchId === null),
        receiver.received,
        WEBHOOK_WAIT_MS,
        webhookSecret,
        [{ id: batch.id, status: ended.status }],
      ),
    ])
      check(c.ok, `${c.name}: ${c.detail}`);
    for (const v of videos) {
      const g = facts.find((f) => f.id === v.id);
      check(
        g?.chargedMc === v.creditsQuoted * 1000,
        `${v.id} charged once, its quote (${v.creditsQuoted} credits; ledger ${g ? g.chargedMc / 1000 : '?'})`,
      );
    }
  } finally {
    await db.end();
  }
}

main()
  .catch((err: unknown) => {
    problems.push('the rehearsal did not finish');
    log(`the rehearsal failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  })
  .finally(() => {
    const ok = problems.length === 0;
    log(ok ? 'the upgrade held: every check passed' : `${problems.length} check(s) failed; data kept in ${dataDir}`);
    void shutdown
      .stop()
      .then(() => (ok ? rm(dataDir, { recursive: true, force: true }) : undefined))
      .then(() => process.exit(ok ? 0 : 1));
  });
