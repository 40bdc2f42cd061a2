// The docker-compose topology run as plain processes: one API process and two worker processes
// (runtime/api-process.ts, runtime/worker-process.ts, exactly what the containers run), sharing a
// fresh database, the run's Temporal server, a task queue and an output folder. Everything a
// client does goes over real HTTP; the processes must stop cleanly on SIGTERM.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort, isAlive, OutputTail } from '../../runtime/process';
import { createDatabase, databaseUrlFor, dropDatabase, eventually } from '../support/harness';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ADMIN_TOKEN = 'topology-admin-token-0123456789';
const URL_SIGNING_SECRET = 'topology-url-signing-secret-0123456789';
const STARTUP_MS = 90_000; // each worker bundles workflows/ with webpack as it starts
const STOP_MS = 15_000;

const { TaskQueueType } = proto.temporal.api.enums.v1;
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const EBML_MAGIC = Buffer.from([0x1a, 0x45, 0xdf, 0xa3]);

// --- the child processes ---

interface Child {
  label: string;
  proc: ChildProcess;
  pid: number;
  output: OutputTail;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

const children: Child[] = [];

function startProcess(label: string, entry: string, env: Record<string, string>): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (proc.pid === undefined) throw new Error(`${label}: could not start ${entry}`);
  const output = new OutputTail(8_000);
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  const child: Child = {
    label,
    proc,
    pid: proc.pid,
    output,
    exited: new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        child.exit = { code, signal };
        resolve({ code, signal });
      });
    }),
  };
  children.push(child);
  return child;
}

function diagnostics(): string {
  return children
    .map((c) => `--- ${c.label} (pid ${c.pid}, ${c.exit ? `exited ${JSON.stringify(c.exit)}` : 'running'}) ---\n${c.output.toString() || '(no output)'}`)
    .join('\n');
}

/** Runs `work`; on failure prints what the children said, then fails as `work` did. */
async function explained<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    console.error(`topology test failed; output of the processes:\n${diagnostics()}`);
    throw err;
  }
}

function failIfAnyExited(): void {
  const gone = children.find((c) => c.exit);
  if (gone) throw new Error(`${gone.label} exited early: ${JSON.stringify(gone.exit)}`);
}

/** Pids of live processes whose environment carries `marker` (this run's task queue): ours, and anything they started. */
async function processesMarkedWith(marker: string): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((e) => /^\d+$/.test(e)).map(Number);
  const marked = await Promise.all(
    pids.map(async (pid) => {
      if (pid === process.pid) return undefined;
      const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
      return environ.split('\0').includes(marker) && isAlive(pid) ? pid : undefined;
    }),
  );
  return marked.filter((pid): pid is number => pid !== undefined);
}

// --- the topology ---

const name = `t_topology_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const taskQueue = `q-${name}`;
const marker = `TEMPORAL_TASK_QUEUE=${taskQueue}`;
let base: string;
let api: Child;
let workers: Child[] = [];
let connection: Connection | undefined;
let databaseCreated = false;

async function http<T>(method: 'GET' | 'POST', path: string, opts: { token?: string; body?: unknown } = {}): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text for the assertion message
  }
  return { status: res.status, body: body as T };
}

/** Identities (`pid@host`) polling the task queue, per kind of task. */
async function pollers(type: (typeof TaskQueueType)[keyof typeof TaskQueueType]): Promise<string[]> {
  const res = await connection!.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, taskQueueType: type });
  return (res.pollers ?? []).map((p) => p.identity ?? '');
}

beforeAll(async () => {
  await explained(async () => {
    await createDatabase(name);
    const databaseUrl = databaseUrlFor(name);
    databaseCreated = true;
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // The environment docker-compose.yml gives the api and worker services, with this run's values.
    const env: Record<string, string> = {
      ...(process.env.PATH ? { PATH: process.env.PATH } : {}),
      ...(process.env.HOME ? { HOME: process.env.HOME } : {}),
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      ADMIN_TOKEN,
      URL_SIGNING_SECRET,
      PUBLIC_BASE_URL: base,
      DATA_DIR: join(inject('testDataDir'), name),
      LOG_LEVEL: 'warn',
    };
    workers = [startProcess('worker 1', 'runtime/worker-process.ts', env), startProcess('worker 2', 'runtime/worker-process.ts', env)];
    api = startProcess('api', 'runtime/api-process.ts', env);

    await eventually(async () => {
      failIfAnyExited();
      const res = await fetch(`${base}/health`).catch(() => undefined);
      return res?.status === 200 ? true : undefined;
    }, STARTUP_MS, 250);

    // /health speaks for the API; the workers are ready once both poll the task queue.
    connection = await Connection.connect({ address: inject('temporalAddress') });
    await eventually(async () => {
      failIfAnyExited();
      const [wf, act] = await Promise.all([pollers(TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW), pollers(TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)]);
      const ready = (ids: string[]) => workers.every((w) => ids.some((id) => id.startsWith(`${w.pid}@`)));
      return ready(wf) && ready(act) ? true : undefined;
    }, STARTUP_MS, 250);
  });
}, 2 * STARTUP_MS + 30_000);

afterAll(async () => {
  for (const c of children) {
    if (!c.exit && isAlive(c.pid)) c.proc.kill('SIGKILL');
  }
  await Promise.all(children.map((c) => Promise.race([c.exited, sleep(5_000)])));
  await connection?.close();
  if (databaseCreated) await dropDatabase(name);
});

describe('the docker-compose topology as plain processes (one api, two workers)', () => {
  interface Generation {
    id: string;
    status: string;
    outputUrl: string;
    creditsCharged: number;
  }

  it('serves the admin API and generations over HTTP, the workers writing the files the API serves', async () => {
    await explained(async () => {
      expect((await http<{ status: string }>('GET', '/health')).body).toEqual({ status: 'ok' });

      const account = await http<{ id: string }>('POST', '/admin/v1/accounts', { token: ADMIN_TOKEN, body: { plan: 'samurai', credits: 100, chatCap: 0 } });
      expect(account.status).toBe(201);
      const key = await http<{ id: string; key: string }>('POST', `/admin/v1/accounts/${account.body.id}/keys`, { token: ADMIN_TOKEN, body: { scopes: ['image', 'video', 'chat'] } });
      expect(key.status).toBe(201);
      const token = key.body.key;

      const image = await http<{ generation: Generation }>('POST', '/api/generate', { token, body: { kind: 'image', model: 'flux', prompt: 'a harbour' } });
      expect(image.status, JSON.stringify(image.body)).toBe(200);
      expect(image.body.generation).toMatchObject({ status: 'succeeded', creditsCharged: 3 });

      const submitted = await http<{ generation: Generation }>('POST', '/api/generate', { token, body: { kind: 'video', model: 'kling', prompt: 'sim:delay=500 waves' } });
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
      const videoId = submitted.body.generation.id;
      const video = await eventually(async () => {
        const res = await http<{ generation: Generation }>('GET', `/api/generate/${videoId}`, { token });
        expect(res.status).toBe(200);
        return ['succeeded', 'failed'].includes(res.body.generation.status) ? res.body.generation : undefined;
      }, 60_000, 200);
      expect(video).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });

      for (const [g, magic] of [[image.body.generation, PNG_MAGIC], [video, EBML_MAGIC]] as const) {
        expect(g.outputUrl.startsWith(`${base}/`), g.outputUrl).toBe(true);
        const file = await fetch(g.outputUrl);
        expect(file.status).toBe(200);
        const bytes = Buffer.from(await file.arrayBuffer());
        expect(bytes.subarray(0, magic.length).equals(magic), `${g.outputUrl} starts with ${bytes.subarray(0, 8).toString('hex')}`).toBe(true);
      }

      const credits = await http<{ balance: number; holdsActive: number }>('GET', '/api/credits', { token });
      expect(credits.status).toBe(200);
      expect(credits.body).toMatchObject({ balance: 54.5, holdsActive: 0 });
    });
  });

  it('stops every process on SIGTERM with exit code 0 and leaves nothing running', async () => {
    await explained(async () => {
      failIfAnyExited();
      expect(await processesMarkedWith(marker)).toEqual(expect.arrayContaining([api.pid, ...workers.map((w) => w.pid)]));

      for (const c of children) c.proc.kill('SIGTERM');
      const exits = await Promise.all(children.map((c) => Promise.race([c.exited, sleep(STOP_MS).then(() => 'still running' as const)])));
      expect(Object.fromEntries(children.map((c, i) => [c.label, exits[i]]))).toEqual({
        api: { code: 0, signal: null },
        'worker 1': { code: 0, signal: null },
        'worker 2': { code: 0, signal: null },
      });
      expect(children.filter((c) => isAlive(c.pid)).map((c) => c.label)).toEqual([]);
      expect(await processesMarkedWith(marker)).toEqual([]);
    });
  });
});
