import { settlesWithin } from './process';

export interface StepOptions {
  /**
   * How long the step may take before the stop goes on without it (unbounded when omitted). The
   * service bounds every step: the API may hold requests that wait for workflows, and the worker
   * may wait for activities that retry without limit; neither may keep it from stopping.
   */
  timeoutMs?: number;
  /**
   * Ends what the step stands for without waiting for it to wind down (a child process: kill it).
   * Run when the stop is cut short: a second Ctrl-C, or the whole stop running out of time.
   */
  kill?: () => Promise<unknown>;
}

export interface ShutdownOptions {
  log?: (line: string) => void;
  /**
   * Past this, the orderly stop is abandoned: every step's `kill` runs and the process exits.
   * No deadline when omitted.
   */
  deadlineMs?: number;
  /**
   * A signal repeated within this time is the same request: npm passes on the SIGINT/SIGTERM it
   * receives, so a signal sent to the whole process group (Ctrl-C) arrives here twice.
   */
  repeatWindowMs?: number;
}

/**
 * The service's deadline for a stop. Its steps take 5 to 7 s with a video in flight; killing what
 * is left at 13 s keeps the whole within about 15 s.
 */
export const STOP_DEADLINE_MS = 13_000;

/**
 * Stops what was started, last first, once: on SIGINT, SIGTERM or SIGHUP, or when the parent
 * process goes away. Steps may be bounded; a later signal, or the deadline, cuts the stop short by
 * killing the child processes, so that the service never outlives a stop request by much more
 * than `deadlineMs` and never leaves a process behind.
 */
export function createShutdown(optionsOrLog: ShutdownOptions | ((line: string) => void) = {}) {
  const options = typeof optionsOrLog === 'function' ? { log: optionsOrLog } : optionsOrLog;
  const log = options.log ?? ((line: string) => console.error(line));
  const deadlineMs = options.deadlineMs;
  const repeatWindowMs = options.repeatWindowMs ?? 2_000;
  const steps: {
    name: string;
    stop: () => Promise<unknown>;
    timeoutMs: number | undefined;
    kill: (() => Promise<unknown>) | undefined;
  }[] = [];
  let stopping: Promise<boolean> | undefined;
  let halting: Promise<void> | undefined;
  let startedAt = 0;

  /** False if the step failed; one that runs out of time is reported and left behind. */
  const runStep = async (step: (typeof steps)[number]): Promise<boolean> => {
    try {
      const stopped = step.stop();
      // A step left behind may still fail later; that is no news any more.
      stopped.catch(() => undefined);
      if (step.timeoutMs === undefined || (await settlesWithin(stopped, step.timeoutMs))) await stopped;
      else log(`${step.name} did not stop within ${(step.timeoutMs ?? 0) / 1000} s; going on without it`);
      return true;
    } catch (err) {
      log(`stopping ${step.name} failed: ${(err as Error).message}`);
      return false;
    }
  };

  const run = async (): Promise<boolean> => {
    startedAt = Date.now();
    let clean = true;
    for (const step of [...steps].reverse()) {
      if (halting) break;
      clean = (await runStep(step)) && clean;
    }
    return clean;
  };

  /** Kills every child process at once (those that were not stopped already) and gives up on the rest. */
  const halt = (): Promise<void> =>
    (halting ??= (async () => {
      const kills = [...steps]
        .reverse()
        .flatMap((step) =>
          step.kill
            ? [step.kill().catch((err: unknown) => log(`killing ${step.name} failed: ${(err as Error).message}`))]
            : [],
        );
      await settlesWithin(Promise.all(kills), 4_000);
    })());

  const shutdown = {
    /** True once a stop has begun; what is still starting may then fail, as expected. */
    get stopping(): boolean {
      return stopping !== undefined;
    },
    add(name: string, stop: () => Promise<unknown>, stepOptions: StepOptions = {}): void {
      steps.push({ name, stop, timeoutMs: stepOptions.timeoutMs, kill: stepOptions.kill });
    },
    /** Runs the steps; resolves false if one of them failed. */
    stop(): Promise<boolean> {
      stopping ??= run();
      return stopping;
    },
    /** Kills what is left (see StepOptions.kill); for a stop that must not wait. */
    halt,
    /**
     * Stops on SIGINT, SIGTERM and SIGHUP, then calls `exit` (0 unless a step failed). A signal
     * that comes again after `repeatWindowMs`, or a stop that outlasts `deadlineMs`, halts.
     */
    onSignals(exit: (code: number) => void): void {
      // After a terminal hangup, writing to it fails (EIO); an unhandled stream error would end
      // the process in the middle of the stop and leave PostgreSQL and Temporal running.
      for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
      const handler = (signal: NodeJS.Signals) => {
        if (!stopping) {
          log(`${signal}: stopping (press Ctrl-C again to stop at once)…`);
          shutdown.begin(exit);
          return;
        }
        if (halting || Date.now() - startedAt < repeatWindowMs) return;
        log(`${signal} again: stopping at once`);
        void halt().then(() => exit(1));
      };
      process.on('SIGINT', handler);
      process.on('SIGTERM', handler);
      process.on('SIGHUP', handler);
    },
    /** Starts the stop (once) with the deadline armed, then calls `exit`. */
    begin(exit: (code: number) => void): void {
      if (stopping) return;
      const started = Date.now();
      // What is being torn down may still throw: the SDK's worker, forced to give up on a workflow
      // task, fails to dispose of its workflow contexts and leaves a rejection nobody handles.
      // Ending the process on it would skip stopping PostgreSQL and Temporal.
      const report = (err: unknown) =>
        log(`while stopping: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
      process.on('uncaughtException', report);
      process.on('unhandledRejection', report);
      const watchdog =
        deadlineMs === undefined
          ? undefined
          : setTimeout(() => {
              log(`still stopping after ${deadlineMs / 1000} s: stopping at once`);
              void halt().then(() => exit(1));
            }, deadlineMs);
      void shutdown.stop().then((clean) => {
        clearTimeout(watchdog);
        if (halting) return;
        log(`stopped in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        exit(clean ? 0 : 1);
      });
    },
    /**
     * Stops when the parent process goes away: a SIGKILL of `npm start`, or a SIGHUP, which npm
     * does not handle and dies of at once, leaves this process on its own.
     */
    followParent(exit: (code: number) => void, everyMs = 500): void {
      const parent = process.ppid;
      const timer = setInterval(() => {
        if (process.ppid === parent || stopping) return;
        log('parent process exited: stopping…');
        shutdown.begin(exit);
      }, everyMs);
      timer.unref();
    },
  };
  return shutdown;
}
