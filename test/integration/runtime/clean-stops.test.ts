// `npm start` stopped the ways people and machines stop it, each time with a video generation in
// flight: Ctrl-C (SIGINT to the foreground process group), SIGTERM to npm alone and to its process
// group, SIGHUP (a closed terminal), and SIGKILL. Every process of the tree (npm, node, PostgreSQL
// and its children, the Temporal dev server) must be gone within 15 s, npm must return only once
// they are, and the next `npm start` on the same DATA_DIR must come up and find the account.
//
// The starts are expensive (5-10 s each), so the scenarios run as one sequence on one DATA_DIR:
// each start is the restart that proves the previous stop clean.
//
// A stuck workflow: a trigger (installed by the test, in the service's own database) makes marking
// one image generation `running` fail with a serialization failure, an error worth retrying, so its
// `markRunning` ledger step fails on every attempt and, being a local activity that retries a
// transient error for up to 10 minutes, holds its workflow task open. That is what a database in
// trouble does; the stop must not wait for it, and once the fault is gone the job must carry on
// and be charged exactly once.
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../runtime/process';
import { eventually } from '../../support/harness';
import { killNpmStarts, npmStart, processTree, stillRunning, untilGone } from '../../support/processes';
import type { NpmStart, TreeProcess } from '../../support/processes';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const ADMIN_TOKEN = 'clean-stops-admin-token-0123456789';
const STOP_LIMIT_MS = 15_000;
const START_LIMIT_MS = 90_000;
const STUCK_MARK = 'test:stuck-ledger';

let dataDir: string;
let env: Record<string, string>;
let base: string;
let pgUrl: string;
let key: string;
let accountId: string;
const videos: string[] = [];

beforeAll(async () => {
  // Searchable by everyone: as root, PostgreSQL runs as user postgres and must reach its folder.
  dataDir = await mkdtemp(join(tmpdir(), 'gensvc-stops-'));
  await chmod(dataDir, 0o755);
  const [port, pgPort] = [await freePort(), await freePort()];
  env = {
    DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDED_PG_PORT: String(pgPort),
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
  };
  base = `http://127.0.0.1:${port}`;
  // The embedded default's superuser (runtime/embedded-postgres.ts).
  pgUrl = `postgres://postgres:postgres@127.0.0.1:${pgPort}/gensvc`;
});

// A failed test leaves its service running; the next one starts from a killed instance then.
afterEach(async () => {
  await killNpmStarts();
});

afterAll(async () => {
  await killNpmStarts();
  await rm(dataDir, { recursive: true, force: true });
});

// --- talking to the service ---

async function http<T>(
  method: string,
  path: string,
  opts: { token?: string; body?: unknown } = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
  });
  return { status: res.status, body: (await res.json()) as T };
}

interface Generation {
  id: string;
  status: string;
}

async function submitVideo(
  prompt = 'x sim:delay=60000',
): Promise<{ status: number; body: { generation?: Generation } }> {
  return http<{ generation?: Generation }>('POST', '/api/generate', {
    token: key,
    body: { kind: 'video', model: 'kling', prompt },
  });
}

async function withDatabase<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

// --- starting and stopping ---

interface Service {
  npm: NpmStart;
  tree: TreeProcess[];
}

function describeProcesses(tree: TreeProcess[], pids: number[]): string {
  return pids
    .map(
      (pid) =>
        `${pid} ${
          tree
            .find((p) => p.pid === pid)
            ?.args.join(' ')
            .slice(0, 120) ?? '?'
        }`,
    )
    .join('\n');
}

async function start(extra: Record<string, string> = {}): Promise<Service> {
  // Else the health check below could be answered by an instance a failed test left running.
  expect(
    await fetch(`${base}/health`).then(
      () => 'answered',
      () => 'nothing listens',
    ),
  ).toBe('nothing listens');
  // Temporal's ports are taken afresh for each start: a port picked once and held unbound for
  // minutes can meanwhile be taken by another test's server (the dev server binds random ports of
  // its own for its HTTP API and metrics). The API's and PostgreSQL's stay, the tests read them.
  const temporalPorts = { TEMPORAL_PORT: String(await freePort()), TEMPORAL_UI_PORT: String(await freePort()) };
  const npm = npmStart(ROOT, { ...env, ...temporalPorts, ...extra });
  await eventually(
    async () => {
      if (npm.hasExited()) throw new Error(`npm start exited during start-up:\n${npm.output()}`);
      const ok = await fetch(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      );
      return ok ? true : undefined;
    },
    START_LIMIT_MS,
    200,
  );
  const tree = await processTree(npm.pid);
  // The test means something only if the whole tree is there to be stopped.
  expect(
    tree.some((p) => p.args.some((a) => a.endsWith('runtime/main.ts'))),
    describeProcesses(
      tree,
      tree.map((p) => p.pid),
    ),
  ).toBe(true);
  expect(tree.some((p) => p.comm === 'postgres')).toBe(true);
  expect(tree.some((p) => p.comm === 'temporal')).toBe(true);
  return { npm, tree };
}

/**
 * Sends the stop, then checks that every process of the tree is gone within STOP_LIMIT_MS and,
 * unless npm itself dies of the signal, that npm returned only after all of them.
 */
async function stopAndCheck(service: Service, how: string, send: (npmPid: number) => void, npmWaits: boolean) {
  // Again right before the signal: PostgreSQL starts a process per connection.
  const tree = await processTree(service.npm.pid);
  const pids = tree.map((p) => p.pid);
  const sentAt = Date.now();
  send(service.npm.pid);
  const exit = await Promise.race([service.npm.exited, sleep(STOP_LIMIT_MS, 'npm still running' as const)]);
  const npmReturnedAfter = Date.now() - sentAt;
  const leftWhenNpmReturned = await stillRunning(pids);
  const left = await untilGone(pids, Math.max(0, STOP_LIMIT_MS - (Date.now() - sentAt)));
  const allGoneAfter = Date.now() - sentAt;
  const story = `npm: ${String(exit)} after ${npmReturnedAfter} ms\n--- output ---\n${service.npm.output().slice(-6_000)}`;
  expect(describeProcesses(tree, left), story).toBe('');
  expect(allGoneAfter, story).toBeLessThan(STOP_LIMIT_MS);
  if (npmWaits) expect(describeProcesses(tree, leftWhenNpmReturned), `running when npm returned\n${story}`).toBe('');
  // One line per stop in the report: how close to the limit it came.
  console.log(
    `${how}: npm returned after ${(npmReturnedAfter / 1000).toFixed(1)} s (${String(exit)}), all ${pids.length} processes gone after ${(allGoneAfter / 1000).toFixed(1)} s`,
  );
  return { exit, npmReturnedAfter, allGoneAfter };
}

/** The restarted service still knows the account, its key and the generations in flight. */
async function expectAccountKept(): Promise<void> {
  const credits = await http<{ balance: number; holdsActive: number }>('GET', '/api/credits', { token: key });
  expect(credits.status).toBe(200);
  expect(credits.body.holdsActive).toBeGreaterThan(0);
  for (const id of videos) {
    const video = await http<{ generation: Generation }>('GET', `/api/generate/${id}`, { token: key });
    expect(video.status).toBe(200);
  }
}

async function videoInFlight(): Promise<void> {
  const submitted = await submitVideo();
  expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
  expect(['queued', 'running']).toContain(submitted.body.generation?.status);
  videos.push(submitted.body.generation!.id);
}

describe.sequential('stopping npm start', () => {
  it('Ctrl-C (SIGINT to the process group) stops everything, even with a stuck workflow', async () => {
    const service = await start();
    const account = await http<{ id: string }>('POST', '/admin/v1/accounts', {
      token: ADMIN_TOKEN,
      body: { plan: 'samurai', credits: 1000, chatCap: 0 },
    });
    expect(account.status).toBe(201);
    accountId = account.body.id;
    const created = await http<{ key: string }>('POST', `/admin/v1/accounts/${accountId}/keys`, {
      token: ADMIN_TOKEN,
      body: { scopes: ['video', 'image'] },
    });
    expect(created.status).toBe(201);
    key = created.body.key;
    await videoInFlight();

    await withDatabase((c) =>
      c.query(`
        CREATE FUNCTION test_fault() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.status IN ('running', 'succeeded') AND NEW.prompt LIKE '%${STUCK_MARK}%' THEN
            RAISE EXCEPTION 'injected fault' USING ERRCODE = '40001';
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER test_fault BEFORE UPDATE ON generations FOR EACH ROW EXECUTE FUNCTION test_fault();`),
    );
    const stuck = await fetch(`${base}/api/generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'respond-async' },
      body: JSON.stringify({ kind: 'image', model: 'flux', prompt: `${STUCK_MARK} a stuck image` }),
    });
    expect(stuck.status).toBe(200);
    // An image is admitted running, so the step that fails is its settle. The ledger step has failed
    // and is retrying: the workflow is stuck, right now. PostgreSQL's own
    // log records each failed attempt.
    await eventually(
      async () =>
        (await readFile(join(dataDir, 'postgres.log'), 'utf8').catch(() => '')).split('injected fault').length > 2
          ? true
          : undefined,
      20_000,
    );

    const { exit } = await stopAndCheck(
      service,
      'SIGINT to the group, stuck workflow',
      (pid) => process.kill(-pid, 'SIGINT'),
      true,
    );
    expect(exit).toBe(0);
  });

  it('SIGTERM to npm alone stops everything; the restart finds the account, and the stuck job carries on, charged once', async () => {
    const service = await start();
    await expectAccountKept();
    await withDatabase((c) => c.query('DROP TRIGGER test_fault ON generations; DROP FUNCTION test_fault()'));
    // The client was told its image was accepted: once the database is well again it runs and is
    // charged, once.
    const outcome = await eventually(
      async () => {
        const r = await withDatabase((c) =>
          c.query<{ status: string; code: string | null; charged: number; hold: string | null }>(
            `SELECT g.status, g.error->>'code' AS code, g.charged_mc AS charged, h.state AS hold
             FROM generations g LEFT JOIN holds h ON h.generation_id = g.id WHERE g.prompt LIKE $1`,
            [`%${STUCK_MARK}%`],
          ),
        );
        return r.rows[0]?.status === 'succeeded' ? r.rows[0] : undefined;
      },
      60_000,
      500,
    );
    expect(outcome).toEqual({ status: 'succeeded', code: null, charged: 3000, hold: 'settled' });
    await videoInFlight();

    const { exit } = await stopAndCheck(service, 'SIGTERM to npm', (pid) => process.kill(pid, 'SIGTERM'), true);
    expect(exit).toBe(0);
  });

  it('SIGTERM to the process group stops everything (and a start at the default log level is quiet)', async () => {
    const service = await start({ LOG_LEVEL: 'info' });
    // The few lines of our own, not webpack's bundle statistics or the SDK's worker chatter.
    expect(service.npm.output()).toContain('Generation service is running.');
    expect(service.npm.output()).not.toMatch(
      /modules by path|compiled successfully|Workflow bundle created|Worker state changed/,
    );
    await expectAccountKept();
    // A second instance on the same DATA_DIR is refused before it touches anything.
    const second = npmStart(ROOT, env);
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(/Another instance of the service \(pid \d+\) is using/);
    await expectAccountKept();
    await videoInFlight();
    const { exit } = await stopAndCheck(service, 'SIGTERM to the group', (pid) => process.kill(-pid, 'SIGTERM'), true);
    expect(exit).toBe(0);
  });

  it('SIGHUP (the terminal closed) stops everything; npm itself dies of it at once', async () => {
    const service = await start();
    await expectAccountKept();
    await videoInFlight();
    const { exit } = await stopAndCheck(service, 'SIGHUP to the group', (pid) => process.kill(-pid, 'SIGHUP'), false);
    expect(exit).toBe('SIGHUP');
  });

  it('after a SIGKILL, the next start stops the servers left running and starts cleanly', async () => {
    const killed = await start();
    await expectAccountKept();
    await videoInFlight();
    const tree = await processTree(killed.npm.pid);
    process.kill(-killed.npm.pid, 'SIGKILL');
    await killed.npm.exited;
    // PostgreSQL and the Temporal dev server run in their own process groups: they survive it,
    // holding their ports, postmaster.pid and the Temporal SQLite file.
    await sleep(500);
    const orphans = tree.filter((p) => p.comm === 'postgres' || p.comm === 'temporal').map((p) => p.pid);
    expect((await stillRunning(orphans)).length).toBeGreaterThan(0);

    const service = await start();
    expect(describeProcesses(tree, await stillRunning(orphans))).toBe('');
    await expectAccountKept();
    expect(service.npm.output()).toMatch(/left running by an instance that was killed/);

    const { exit } = await stopAndCheck(
      service,
      'SIGTERM to the group after a restart from SIGKILL',
      (pid) => process.kill(-pid, 'SIGTERM'),
      true,
    );
    expect(exit).toBe(0);
  });
});
