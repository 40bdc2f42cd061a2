// The docker-compose services run as plain processes (runtime/api-process.ts,
// runtime/worker-process.ts, from the sources or compiled as the containers run them), with the
// environment a test gives them and nothing else inherited, so only what the test sets configures them.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { freePort, isAlive, OutputTail } from '../../runtime/process';
import { eventually } from './harness';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const { TaskQueueType } = proto.temporal.api.enums.v1;

export interface AppProcess {
  label: string;
  proc: ChildProcess;
  pid: number;
  output: OutputTail;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

/** What a process needs from the test's own environment to run at all. */
export function minimalEnv(): Record<string, string> {
  return {
    ...(process.env.PATH ? { PATH: process.env.PATH } : {}),
    ...(process.env.HOME ? { HOME: process.env.HOME } : {}),
  };
}

/** The processes one test file starts: started, explained when something fails, and all stopped. */
export function createProcessGroup() {
  const children: AppProcess[] = [];

  const diagnostics = (): string =>
    children
      .map(
        (c) =>
          `--- ${c.label} (pid ${c.pid}, ${c.exit ? `exited ${JSON.stringify(c.exit)}` : 'running'}) ---\n${c.output.toString() || '(no output)'}`,
      )
      .join('\n');

  return {
    children,

    /**
     * Starts an entry point (`runtime/api-process.ts`) from the TypeScript sources, or with
     * `compiledIn` its compiled form from that `npm run build` output (`<dir>/runtime/api-process.js`).
     */
    start(label: string, entry: string, env: Record<string, string>, compiledIn?: string): AppProcess {
      const args = compiledIn ? [join(compiledIn, entry.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', entry];
      const proc = spawn(process.execPath, args, {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      if (proc.pid === undefined) throw new Error(`${label}: could not start ${entry}`);
      const output = new OutputTail(8_000);
      proc.stdout.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
      proc.stderr.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
      const child: AppProcess = {
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
    },

    /** Runs `work`; on failure prints what the processes said, then fails as `work` did. */
    async explained<T>(what: string, work: () => Promise<T>): Promise<T> {
      try {
        return await work();
      } catch (err) {
        console.error(`${what} failed; output of the processes:\n${diagnostics()}`);
        throw err;
      }
    },

    failIfAnyExited(): void {
      const gone = children.find((c) => c.exit);
      if (gone) throw new Error(`${gone.label} exited early: ${JSON.stringify(gone.exit)}`);
    },

    /** Kills whatever is still running (the tests stop them with SIGTERM when that is what they test). */
    async killAll(): Promise<void> {
      for (const c of children) {
        if (!c.exit && isAlive(c.pid)) c.proc.kill('SIGKILL');
      }
      await Promise.all(children.map((c) => Promise.race([c.exited, sleep(5_000)])));
    },
  };
}

export type ProcessGroup = ReturnType<typeof createProcessGroup>;

/** Waits until `base`/health answers 200, failing early if a process of the group died. */
export async function waitForHealth(group: ProcessGroup, base: string, timeoutMs: number): Promise<void> {
  await eventually(
    async () => {
      group.failIfAnyExited();
      const res = await fetch(`${base}/health`).catch(() => undefined);
      return res?.status === 200 ? true : undefined;
    },
    timeoutMs,
    250,
  );
}

/**
 * Waits until every one of `workers` polls the task queue for workflow and activity tasks (or, with
 * `activitiesOnly`, for activity tasks: provider workers poll their own queue for those alone).
 */
export async function waitForWorkers(
  group: ProcessGroup,
  connection: Connection,
  taskQueue: string,
  workers: AppProcess[],
  timeoutMs: number,
  activitiesOnly = false,
): Promise<void> {
  const pollers = async (type: (typeof TaskQueueType)[keyof typeof TaskQueueType]): Promise<string[]> => {
    const res = await connection.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: taskQueue },
      taskQueueType: type,
    });
    return (res.pollers ?? []).map((p) => p.identity ?? '');
  };
  await eventually(
    async () => {
      group.failIfAnyExited();
      const [wf, act] = await Promise.all([
        activitiesOnly ? [] : pollers(TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW),
        pollers(TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY),
      ]);
      const ready = (ids: string[]) => workers.every((w) => ids.some((id) => id.startsWith(`${w.pid}@`)));
      return (activitiesOnly || ready(wf)) && ready(act) ? true : undefined;
    },
    timeoutMs,
    250,
  );
}

export interface HttpAnswer<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** One JSON call over real HTTP; a body that is not JSON is kept as text for the assertion message. */
export async function http<T>(
  base: string,
  method: 'GET' | 'POST',
  path: string,
  opts: { token?: string; body?: unknown } = {},
): Promise<HttpAnswer<T>> {
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
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body: body as T };
}

/**
 * Two API processes (runtime/api-process.ts) on one database and task queue, no worker: what a
 * test of limits shared across instances needs. `env` adds to (or overrides) their environment.
 */
export async function twoApiProcesses(
  group: ProcessGroup,
  o: {
    name: string;
    databaseUrl: string;
    temporalAddress: string;
    adminToken: string;
    dataRoot: string;
    startupMs: number;
    env?: Record<string, string>;
  },
): Promise<[string, string]> {
  const shared: Record<string, string> = {
    ...minimalEnv(),
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    DATABASE_URL: o.databaseUrl,
    TEMPORAL_ADDRESS: o.temporalAddress,
    TEMPORAL_TASK_QUEUE: `q-${o.name}`,
    ADMIN_TOKEN: o.adminToken,
    URL_SIGNING_SECRET: `${o.name}-signing-secret-0123456789`,
    WEBHOOK_SECRET_KEY: `${o.name}-webhook-key-0123456789`,
    LOG_LEVEL: 'warn',
    ...o.env,
  };
  const ports = [await freePort(), await freePort()] as const;
  const bases: [string, string] = [`http://127.0.0.1:${ports[0]}`, `http://127.0.0.1:${ports[1]}`];
  ports.forEach((port, i) => {
    group.start(`api ${i + 1}`, 'runtime/api-process.ts', {
      ...shared,
      PORT: String(port),
      PUBLIC_BASE_URL: bases[i]!,
      DATA_DIR: join(o.dataRoot, `api-${i + 1}`),
    });
  });
  await Promise.all(bases.map((base) => waitForHealth(group, base, o.startupMs)));
  return bases;
}
