// `npm run rollout`: proves the workflow roll-out procedure of docs/operations.md with Worker
// Versioning. Long videos start on version N; workers of version N+1 start whose generation
// workflow cannot replay N's histories (test/fixtures/workflows-next); N+1 becomes current; N's
// workers stop only once the server reports N drained. Every video must finish, each charged
// once, N's on N and the later ones on N+1, and N's histories must really fail to replay on N+1's
// code (or the proof proves nothing). Exit code 0 when all of that holds.
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { createHttp, openAccount } from '../bench/http';
import type { Services } from '../runtime/services';
import { bundleInChildProcess, WORKFLOWS_PATH } from '../runtime/worker';
import { startWorker } from '../runtime/worker-runner';
import { startInProcessStack } from './in-process-stack';
import { generationFacts, ledgerChecks } from './ledger-checks';

/** gRPC's status code NOT_FOUND. */
const GRPC_NOT_FOUND = 5;

const NEXT_WORKFLOWS = fileURLToPath(new URL('../test/fixtures/workflows-next/index.ts', import.meta.url));
const DEPLOYMENT = 'gensvc';
const [N, NEXT] = ['build-n', 'build-n1'];
const LONG_VIDEOS = 3;
const LATER_VIDEOS = 2;
const DrainageStatus = proto.temporal.api.enums.v1.VersionDrainageStatus;

const log = (line: string) => console.error(`[rollout] ${new Date().toISOString().slice(11, 19)} ${line}`);
const problems: string[] = [];
const check = (ok: boolean, what: string) => {
  log(`${ok ? 'PASS' : 'FAIL'}  ${what}`);
  if (!ok) problems.push(what);
};

async function main(): Promise<void> {
  // The server's drainage bookkeeping runs every 3 minutes by default; faster here so the proof
  // takes a couple of minutes. The procedure is the same at any pace.
  const stack = await startInProcessStack('rollout', {
    dynamicConfig: {
      'matching.wv.VersionDrainageStatusVisibilityGracePeriod': '5s',
      'matching.wv.VersionDrainageStatusRefreshInterval': '5s',
    },
  });
  const { services, config, adminToken } = stack;
  try {
    const { client } = services;
    const version = (buildId: string): Services => ({
      ...services,
      config: { ...config, WORKER_BUILD_ID: buildId, WORKER_DEPLOYMENT_NAME: DEPLOYMENT },
    });
    const setCurrent = async (buildId: string) => {
      // The version exists once one of its workers has polled.
      for (let attempt = 0; ; attempt++) {
        try {
          await client.workflowService.setWorkerDeploymentCurrentVersion({
            namespace: config.TEMPORAL_NAMESPACE,
            deploymentName: DEPLOYMENT,
            buildId,
          });
          return;
        } catch (err) {
          if (attempt > 60) throw err;
          await sleep(1_000);
        }
      }
    };

    log(`version ${N}: starting its workers (workflows/index.ts) and making it current`);
    const workersN = await startWorker(version(N), 'all', log);
    let workersNStopped = false;
    stack.onStop(async () => void (workersNStopped || (await workersN.stop())));
    await setCurrent(N);
    await stack.startApi();

    const http = createHttp(stack.baseUrl, new AbortController().signal);
    const account = await openAccount(http, adminToken, { credits: 5_000, requests: 50, scopes: ['video'] });
    const submit = async (prompt: string) => {
      const res = await http.request<{ id: string; creditsQuoted: number }>('POST', '/api/v1/generate', {
        token: account.nextKey(),
        body: { kind: 'video', model: 'kling', prompt, seconds: 10, quality: '1080p' },
      });
      if (res.status !== 202) throw new Error(`submit answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const statusOf = async (id: string) =>
      (await http.request<{ status: string }>('GET', `/api/v1/generations/${id}`, { token: account.nextKey() })).body
        .status;
    /** The version a workflow is pinned to: known once a worker has completed its first task. */
    const pinnedTo = async (id: string) => {
      for (const deadline = Date.now() + 60_000; ; await sleep(500)) {
        const info = (await client.workflow.getHandle(id).describe()).raw.workflowExecutionInfo?.versioningInfo;
        if (info?.behavior === proto.temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED)
          return info.deploymentVersion?.buildId ?? undefined;
        if (Date.now() > deadline) return undefined;
      }
    };

    const long: { id: string; creditsQuoted: number }[] = [];
    for (let i = 0; i < LONG_VIDEOS; i++) long.push(await submit(`sim:delay=60000 a long video ${i} on version N`));
    for (const v of long) while ((await statusOf(v.id)) !== 'running') await sleep(500);
    log(`${LONG_VIDEOS} long videos running on ${N}: ${long.map((v) => v.id).join(', ')}`);

    log(`version ${NEXT}: starting its workers (test/fixtures/workflows-next: a timer first) and making it current`);
    const workersNext = await startWorker(version(NEXT), 'all', log, NEXT_WORKFLOWS);
    stack.onStop(() => workersNext.stop());
    await setCurrent(NEXT);
    const later: { id: string; creditsQuoted: number }[] = [];
    for (let i = 0; i < LATER_VIDEOS; i++) later.push(await submit(`sim:delay=5000 a video ${i} after the roll-out`));

    for (const v of long) check((await pinnedTo(v.id)) === N, `${v.id} (started before) is pinned to ${N}`);
    for (const v of later) check((await pinnedTo(v.id)) === NEXT, `${v.id} (started after) is pinned to ${NEXT}`);

    // The moment the procedure names: N reported drained, then (not before) its workers stop.
    log(`waiting for the server to report ${N} drained…`);
    const drainedAt = Date.now();
    for (;;) {
      // A version's record is a workflow of the server's own: while it continues as new, describing
      // it can answer NOT_FOUND for a moment (a version that really went fails the 10-minute bound).
      const info = await client.workflowService
        .describeWorkerDeploymentVersion({
          namespace: config.TEMPORAL_NAMESPACE,
          deploymentVersion: { deploymentName: DEPLOYMENT, buildId: N },
        })
        .then(
          (r) => r.workerDeploymentVersionInfo,
          (err: unknown) => {
            if ((err as { code?: number }).code !== GRPC_NOT_FOUND) throw err;
            log(`${N} not found just now; asking again`);
            return undefined;
          },
        );
      const status = info?.drainageInfo?.status;
      if (status === DrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED) break;
      if (Date.now() - drainedAt > 10 * 60_000) throw new Error(`${N} not drained after 10 minutes (status ${status})`);
      await sleep(2_000);
    }
    const longStates = await Promise.all(long.map((v) => statusOf(v.id)));
    check(
      longStates.every((s) => s === 'succeeded'),
      `when ${N} was reported drained its videos had finished (${longStates.join(', ')})`,
    );
    log(`stopping ${N}'s workers`);
    await workersN.stop();
    workersNStopped = true;

    for (const v of later) while (!['succeeded', 'failed'].includes(await statusOf(v.id))) await sleep(1_000);
    const laterStates = await Promise.all(later.map((v) => statusOf(v.id)));
    check(
      laterStates.every((s) => s === 'succeeded'),
      `the videos started after the roll-out finished on ${NEXT} (${laterStates.join(', ')})`,
    );

    const facts = await generationFacts(services.pool);
    for (const c of await ledgerChecks(services.pool, facts)) check(c.ok, `${c.name}: ${c.detail}`);
    for (const v of [...long, ...later]) {
      const g = facts.find((f) => f.id === v.id);
      check(
        g?.chargedMc === v.creditsQuoted * 1000,
        `${v.id} charged once, its quote (${v.creditsQuoted} credits; ledger ${g ? g.chargedMc / 1000 : '?'})`,
      );
    }

    // The control: N+1's code really is incompatible with N's histories, and N's is not.
    const history = await client.workflow.getHandle(long[0]!.id).fetchHistory();
    const replay = async (workflowsPath: string) => {
      const bundle = await bundleInChildProcess(workflowsPath);
      try {
        await Worker.runReplayHistory({ workflowBundle: { codePath: bundle.codePath } }, history, long[0]!.id);
        return 'ok';
      } catch (err) {
        return (err as Error).name === 'DeterminismViolationError'
          ? 'nondeterministic'
          : `error: ${(err as Error).message}`;
      } finally {
        await bundle.remove();
      }
    };
    check((await replay(WORKFLOWS_PATH)) === 'ok', `${long[0]!.id}'s history replays on ${N}'s code`);
    const onNext = await replay(NEXT_WORKFLOWS);
    check(
      onNext === 'nondeterministic',
      `${long[0]!.id}'s history does NOT replay on ${NEXT}'s code (${onNext}): without pinning it would have broken`,
    );
  } finally {
    await stack.stop(problems.length > 0);
  }
}

main().then(
  () => {
    log(problems.length === 0 ? 'the roll-out held: every check passed' : `${problems.length} check(s) failed`);
    process.exit(problems.length === 0 ? 0 : 1);
  },
  (err: unknown) => {
    log(`the roll-out proof failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
