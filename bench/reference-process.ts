// The bare reference, as its own process so that its CPU and memory are read from /proc apart
// from the service's: a plain node:http server and a Temporal worker on the bench's Temporal
// server and PostgreSQL. Admission is one SQL statement (hold + job row) and a workflow start, no
// worker waited for; an image waits for the workflow's result. Everything the service adds on top
// (Fastify, zod, keys, rate limits, pricing, XState, files) is what the bench's ratios measure.
// Beside it, two more references on the same server: Temporal's floor (`POST /floor`: a workflow
// that completes in its first task, search attributes at start) and the service's own workflow
// shapes with nothing else of the service around them (`POST /shape/chat`, `/shape/image`,
// `/shape/video`: the real `generation` workflow, started by the service's own gateway, its
// activities no-ops, a video's slot free at once), so that what the service's orchestration costs
// Temporal and the SDK reads against the floor (`POST /floor/timer` for a video: the floor with a timer).
//
//   node --import tsx bench/reference-process.ts   (env: DATABASE_URL, TEMPORAL_ADDRESS, PORT, TASK_QUEUE)
// Prints `reference listening on <port>` once the worker polls and the server listens.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { Context } from '@temporalio/activity';
import pg from 'pg';
import { loadConfig } from '../core/config';
import { AccountId, GenerationKind, GenerationModel, GenerationStatus } from '../core/search-attributes';
import { bundleInChildProcess, WORKFLOWS_PATH } from '../runtime/worker';
import { createGenerationGateway } from '../service/generation/temporal-gateway';
import { providerTaskQueueOf } from '../core/workflow-contract';
import type { GenerationWorkflowInput } from '../core/workflow-contract';
import type { BareActivities, BareInput } from './reference-workflows';

const WORKFLOWS = fileURLToPath(new URL('./reference-workflows.ts', import.meta.url));
const PRICE = { image: 3000, video: 42500 } as const;
const DEADLINE_MS = { image: 10 * 60_000, video: 2 * 3_600_000 } as const;
/** The service's default, so that both cache alike. */
const WORKFLOW_CACHE = loadConfig({}).WORKFLOW_CACHE_SIZE;

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: 20 });
  pool.on('error', () => undefined);
  await pool.query(`
    CREATE TABLE IF NOT EXISTS bench_bare_accounts (id text PRIMARY KEY, balance bigint NOT NULL, held bigint NOT NULL DEFAULT 0,
      CHECK (held >= 0 AND balance - held >= 0));
    CREATE TABLE IF NOT EXISTS bench_bare_jobs (id text PRIMARY KEY, account_id text NOT NULL, kind text NOT NULL,
      status text NOT NULL, amount bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz)`);

  const address = env('TEMPORAL_ADDRESS');
  const taskQueue = env('TASK_QUEUE');
  const connection = await Connection.connect({ address });
  const client = new Client({ connection });
  const native = await NativeConnection.connect({ address });

  const activities: BareActivities = {
    async bareMarkRunning(id) {
      await pool.query(`UPDATE bench_bare_jobs SET status = 'running' WHERE id = $1 AND status = 'queued'`, [id]);
    },
    async bareSettle(id) {
      await pool.query(
        `WITH j AS (UPDATE bench_bare_jobs SET status = 'succeeded', finished_at = now() WHERE id = $1 AND status <> 'succeeded' RETURNING account_id, amount)
         UPDATE bench_bare_accounts a SET balance = a.balance - j.amount, held = a.held - j.amount FROM j WHERE a.id = j.account_id`,
        [id],
      );
    },
    async bareWaitForSlot() {},
    async bareProvider(_id, until) {
      const ctx = Context.current();
      for (let left = until - Date.now(); left > 0; left = until - Date.now()) {
        await ctx.sleep(Math.min(1000, left));
        ctx.heartbeat();
      }
      return { outputKey: 'none' };
    },
  };
  // Bundled out of process, as the service's worker does, so that webpack's memory is in neither.
  const [bundle, shapeBundle] = await Promise.all([
    bundleInChildProcess(WORKFLOWS),
    bundleInChildProcess(WORKFLOWS_PATH),
  ]);
  // The service's worker settings (runtime/worker.ts), so the two differ only in what they run.
  const worker = await Worker.create({
    connection: native,
    taskQueue,
    workflowBundle: { codePath: bundle.codePath },
    activities,
    maxConcurrentActivityTaskExecutions: 200,
    maxCachedWorkflows: WORKFLOW_CACHE,
    shutdownGraceTime: '5 seconds',
  });
  // The service's workflow on a queue of its own, with activities that do nothing: the shape's cost
  // to Temporal and the SDK alone. The provider's queue is beside it, as in the service.
  const shapeQueue = `${taskQueue}-shape`;
  const shapeWorker = await Worker.create({
    connection: native,
    taskQueue: shapeQueue,
    workflowBundle: { codePath: shapeBundle.codePath },
    activities: {
      markRunning: async () => 'running' as const,
      settle: async () => ({ outcome: 'settled', kind: 'image', chargedMc: 0, releasedMc: 0 }) as const,
      release: async () => ({ outcome: 'released', kind: 'image', releasedMc: 0, code: 'failed' }) as const,
      // The run in place, as the service's worker has it when a provider permit is free (decision 0143).
      runProviderInPlace: async () => ({ output: { outputKey: 'none', outputText: null } }),
      // A video's slot, free at once: its first look in place finds it.
      claimVideoSlotInPlace: async () => 'granted' as const,
      claimVideoSlot: async () => 'granted' as const,
    },
    maxConcurrentActivityTaskExecutions: 200,
    maxCachedWorkflows: WORKFLOW_CACHE,
    shutdownGraceTime: '5 seconds',
  });
  const shapeProvider = await Worker.create({
    connection: native,
    taskQueue: providerTaskQueueOf(shapeQueue),
    activities: {
      runProvider: async () => ({ outputKey: 'none', outputText: null }),
      // A video's run: an upstream that answers in the one call (the simulator's way).
      startProviderRun: async () => ({ output: { outputKey: 'none', outputText: null } }),
    },
    maxConcurrentActivityTaskExecutions: 200,
    shutdownGraceTime: '5 seconds',
  });
  await Promise.all([bundle.remove(), shapeBundle.remove()]);
  const running = Promise.all([worker.run(), shapeWorker.run(), shapeProvider.run()]);
  const gateway = createGenerationGateway({ client, taskQueue: shapeQueue });

  const send = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const readJson = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : {};
  };

  const generate = async (body: Record<string, unknown>): Promise<[number, unknown]> => {
    const kind = body.kind === 'video' ? 'video' : 'image';
    const accountId = String(body.account);
    const id = `bare_${randomBytes(12).toString('hex')}`;
    // The hold and the job row: one statement, one round trip.
    const held = await pool.query(
      `WITH a AS (UPDATE bench_bare_accounts SET held = held + $3::bigint WHERE id = $2 AND balance - held >= $3::bigint RETURNING id)
       INSERT INTO bench_bare_jobs (id, account_id, kind, status, amount) SELECT $1, a.id, $4, 'queued', $3::bigint FROM a RETURNING id`,
      [id, accountId, PRICE[kind], kind],
    );
    if (held.rowCount === 0) return [402, { error: { type: 'insufficient_credits' } }];
    const input: BareInput = {
      id,
      kind,
      deadlineMs: DEADLINE_MS[kind],
      providerUntil: Number(body.providerUntil ?? 0),
    };
    const handle = await client.workflow.start('bareGeneration', {
      workflowId: id,
      taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: AccountId, value: accountId },
        { key: GenerationKind, value: kind },
        { key: GenerationModel, value: kind === 'image' ? 'image-flux' : 'kling' },
        { key: GenerationStatus, value: 'queued' },
      ],
    });
    if (kind === 'video') return [200, { generation: { id, status: 'queued' } }];
    await handle.result();
    return [200, { generation: { id, status: 'succeeded' } }];
  };

  /**
   * The floor: started with its search attributes; `wait`: its result awaited, as an image's is.
   * `timer`: the floor with a timer, a video's floor.
   */
  const startFloor = async (accountId: string, wait: boolean, timer = false): Promise<[number, unknown]> => {
    const id = `floor_${randomBytes(12).toString('hex')}`;
    const handle = await client.workflow.start(timer ? 'floorTimer' : 'floor', {
      workflowId: id,
      taskQueue,
      args: ['succeeded'],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: AccountId, value: accountId },
        { key: GenerationKind, value: 'chat' },
        { key: GenerationModel, value: 'chat-haiku' },
        { key: GenerationStatus, value: 'succeeded' },
      ],
    });
    if (wait) await handle.result();
    return [200, { id }];
  };

  /** The service's own workflow for a kind, started as the service starts it, with nothing else around it. */
  const startShape = async (kind: ShapeKind, accountId: string): Promise<[number, unknown]> => {
    const input = shapeInput(kind, accountId, `gen_${randomBytes(13).toString('hex')}`);
    if (kind === 'chat') {
      // What the API does once a reply has ended: the outcome, recorded, at the start.
      await gateway.record({ ...input, reported: chatOutcome });
      return [200, { id: input.generationId }];
    }
    await gateway.start(input);
    await gateway.awaitFinish(input.generationId, 60_000);
    return [200, { id: input.generationId }];
  };

  const server = createServer((req, res) => {
    void (async () => {
      try {
        const body = req.method === 'POST' ? await readJson(req) : {};
        if (req.method === 'POST' && req.url === '/generate') {
          const [status, answer] = await generate(body);
          send(res, status, answer);
        } else if (req.method === 'POST' && (req.url === '/floor' || req.url === '/floor?wait=1')) {
          const [status, answer] = await startFloor(accountOf(body, 'acct_floor'), req.url.endsWith('wait=1'));
          send(res, status, answer);
        } else if (req.method === 'POST' && req.url === '/floor/timer?wait=1') {
          send(res, ...(await startFloor(accountOf(body, 'acct_floor'), true, true)));
        } else if (req.method === 'POST' && SHAPE_PATH.test(req.url ?? '')) {
          const kind = SHAPE_PATH.exec(req.url ?? '')![1] as ShapeKind;
          send(res, ...(await startShape(kind, accountOf(body, 'acct_shape'))));
        } else if (req.method === 'POST' && req.url === '/accounts') {
          const id = `bacct_${randomBytes(8).toString('hex')}`;
          await pool.query('INSERT INTO bench_bare_accounts (id, balance) VALUES ($1, $2::bigint)', [
            id,
            Math.round(Number(body.credits ?? 0) * 1000),
          ]);
          send(res, 201, { id });
        } else {
          send(res, 404, { error: { type: 'not_found' } });
        }
      } catch (err) {
        send(res, 500, { error: { type: 'server_error', message: (err as Error).message } });
      }
    })();
  });
  const port = Number(env('PORT'));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  console.log(`reference listening on ${port}`);

  const stop = async () => {
    server.close();
    server.closeAllConnections();
    worker.shutdown();
    shapeWorker.shutdown();
    shapeProvider.shutdown();
    await running.catch(() => undefined);
    await native.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
    process.exit(0);
  };
  for (const name of ['SIGTERM', 'SIGINT'] as const) process.once(name, () => void stop());
  // The bench is the parent: never outlive it.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void stop();
  }, 1000).unref();
}

type ShapeKind = 'chat' | 'image' | 'video';
const SHAPE_PATH = /^\/shape\/(chat|image|video)$/;

const accountOf = (body: Record<string, unknown>, otherwise: string): string =>
  typeof body.account === 'string' ? body.account : otherwise;

/** A chat's outcome as the API reports it at the end of a reply the ledger has settled. */
const chatOutcome = {
  ok: true,
  output: { outputKey: 'gen/output.txt', outputText: null, chargeMc: 23, outputTokens: 32 },
  recorded: 'settled',
} as const;

/** The workflow input the service gives a chat (group B, per token), an image or a video, as admitted. */
function shapeInput(kind: ShapeKind, accountId: string, generationId: string): GenerationWorkflowInput {
  const common = {
    generationId,
    accountId,
    apiKeyId: 'key_shape',
    admittedRunning: true,
    deadlineMs: DEADLINE_MS.image,
  };
  // A video is admitted queued for one of its account's slots, with its deadline's timer.
  if (kind === 'video')
    return {
      ...common,
      admittedRunning: false,
      deadlineMs: DEADLINE_MS.video,
      kind,
      model: 'kling',
      prompt: 'a lighthouse at dusk',
      params: { width: 320, height: 180, seconds: 5 },
      internal: {},
      quoteMc: PRICE.video,
      admitted: { free: false, model: 'kling' },
    };
  return kind === 'chat'
    ? {
        ...common,
        kind,
        model: 'chat-haiku',
        prompt: 'say something',
        params: { requestedModel: 'chat-haiku', promptTruncated: false, maxTokens: 64 },
        internal: { ratePer1kMc: 700, recordedByApi: true },
        quoteMc: 45,
        admitted: { free: false, model: 'chat-haiku' },
      }
    : {
        ...common,
        kind,
        model: 'image-flux',
        prompt: 'a lighthouse at dusk',
        params: { width: 1024, height: 1024, aspect: '1:1' },
        internal: {},
        quoteMc: PRICE.image,
        admitted: { free: false, model: 'image-flux' },
      };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
