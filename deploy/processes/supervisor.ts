// Process supervision shared by the fault run's stacks (faults/stack.ts, deploy/cluster/stack.ts)
// and `npm run cluster`: what compose's `restart: unless-stopped` does for a container, for a
// service process started from the repository.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EntryStartError, startEntryProcess } from './children';
import type { EntryProcess, Reaper } from './children';

/** Start-up (the Temporal core, migrations, the first connections) is slow on a busy machine. */
const START_TIMEOUT_MS = 180_000;
const MAX_STARTS = 10;

export interface ServiceSpec {
  /** Unique in the stack (`api`, `api-2`, `provider-1`…); names its log file and the reaper's entry. */
  name: string;
  /** A service entry point (`runtime/api-process.ts`), or only a name when `command` is given. */
  entry: string;
  command?: [string, ...string[]];
  env: NodeJS.ProcessEnv;
  readyText: string;
}

export interface SupervisorSettings {
  dataDir: string;
  reaper: Reaper | undefined;
  /** True once the stack is stopping: nothing is started again past that. */
  stopping(): boolean;
  /** Told of every start that ended before it was ready (it is started again). */
  onStartFailure: (name: string, error: string) => void;
  /** Told when a running process ended without being asked to (it is started again). */
  onUnexpectedExit: (name: string, how: string) => void;
}

export interface Supervisor {
  /** Starts `spec` (again, when it ran before) and resolves once it is ready. */
  launch(spec: ServiceSpec): Promise<EntryProcess>;
  /** What runs as `name` now. */
  current(name: string): EntryProcess | undefined;
  /** SIGKILLs what runs as `name` (after any restart under way) without it being reported or replaced. */
  kill(name: string): Promise<number>;
  /** SIGTERM (SIGKILL past `graceMs`), likewise not replaced. */
  stop(name: string, graceMs?: number): Promise<void>;
  names(): string[];
}

export function createSupervisor(settings: SupervisorSettings): Supervisor {
  const running = new Map<string, EntryProcess>();
  const specs = new Map<string, ServiceSpec>();
  const restarts = new Map<string, Promise<unknown>>();
  const dismissed = new Set<number>();

  /**
   * A process that exits during start-up, because PostgreSQL or Temporal is down just then, is
   * started again until it is ready.
   */
  const startReady = async (spec: ServiceSpec): Promise<EntryProcess> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await startEntryProcess({
          entry: spec.entry,
          ...(spec.command ? { command: spec.command } : {}),
          env: spec.env,
          readyText: spec.readyText,
          readyTimeoutMs: START_TIMEOUT_MS,
          logFile: join(settings.dataDir, `${spec.name}.log`),
          detached: true,
          onSpawn: (pid) => settings.reaper?.tell(spec.name, pid),
        });
      } catch (err) {
        // A few failed starts are an outage that has not ended yet; more is a service that cannot start.
        if (!(err instanceof EntryStartError) || settings.stopping() || attempt >= MAX_STARTS) throw err;
        settings.onStartFailure(spec.name, err.message.split('\n')[0] ?? err.message);
        await sleep(1_000);
      }
    }
  };

  const launch = async (spec: ServiceSpec): Promise<EntryProcess> => {
    specs.set(spec.name, spec);
    const child = await startReady(spec);
    running.set(spec.name, child);
    void child.exited.then((how) => {
      if (settings.stopping() || dismissed.has(child.pid)) return;
      settings.onUnexpectedExit(spec.name, how.signal ?? `exit code ${how.code}`);
      // Past a stop, the supervisor gives up; nothing is left to report.
      restarts.set(
        spec.name,
        launch(spec).catch(() => undefined),
      );
    });
    return child;
  };

  const take = async (name: string): Promise<EntryProcess> => {
    await restarts.get(name);
    const victim = running.get(name);
    if (!victim) throw new Error(`no process runs as ${name}`);
    dismissed.add(victim.pid);
    return victim;
  };

  return {
    launch,
    current: (name) => running.get(name),
    async kill(name) {
      const victim = await take(name);
      await victim.kill();
      return victim.pid;
    },
    async stop(name, graceMs) {
      await (await take(name)).stop(graceMs);
    },
    names: () => [...specs.keys()],
  };
}

/**
 * A stop step that may not hold up the rest: `bounded(name, work, ms)` waits for `work` at most
 * `ms`, and says so when it took longer or failed, then lets the stop go on.
 */
export function boundedStop(log: (line: string) => void) {
  return async (name: string, work: Promise<unknown> | undefined, ms: number): Promise<void> => {
    if (!work) return;
    const late = sleep(ms, 'late' as const, { ref: false });
    const outcome = await Promise.race([
      work.then(
        () => 'done' as const,
        (err: unknown) => err,
      ),
      late,
    ]);
    if (outcome === 'late') log(`stopping ${name} took over ${ms / 1000} s; moving on`);
    else if (outcome !== 'done') log(`stopping ${name} failed: ${(outcome as Error).message}`);
  };
}
