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
  const steps = createStopSteps(log);
  const stopper: Stopper = {
    steps,
    log,
    deadlineMs: options.deadlineMs,
    repeatWindowMs: options.repeatWindowMs ?? 2_000,
  };
  return {
    /** True once a stop has begun; what is still starting may then fail, as expected. */
    get stopping(): boolean {
      return steps.stopping;
    },
    add: steps.add,
    /** Runs the steps; resolves false if one of them failed. */
    stop: steps.stop,
    /** Kills what is left (see StepOptions.kill); for a stop that must not wait. */
    halt: steps.halt,
    /**
     * Stops on SIGINT, SIGTERM and SIGHUP, then calls `exit` (0 unless a step failed). A signal
     * that comes again after `repeatWindowMs`, or a stop that outlasts `deadlineMs`, halts.
     */
    onSignals: (exit: (code: number) => void): void => stopOnSignals(stopper, exit),
    /** Starts the stop (once) with the deadline armed, then calls `exit`. */
    begin: (exit: (code: number) => void): void => beginStop(stopper, exit),
    /**
     * Stops when the parent process goes away: a SIGKILL of `npm start`, or a SIGHUP, which npm
     * does not handle and dies of at once, leaves this process on its own.
     */
    followParent: (exit: (code: number) => void, everyMs = 500): void => stopWithParent(stopper, exit, everyMs),
  };
}

interface Step {
  name: string;
  stop: () => Promise<unknown>;
  timeoutMs: number | undefined;
  kill: (() => Promise<unknown>) | undefined;
}

type StopSteps = ReturnType<typeof createStopSteps>;

/** What starts a stop needs: the steps, where to say what happens, and its time limits. */
interface Stopper {
  steps: StopSteps;
  log: (line: string) => void;
  deadlineMs: number | undefined;
  repeatWindowMs: number;
}

/**
 * The steps of a stop, run last first and once, and the halt that kills what is left. When to
 * stop (a signal, the parent gone) and how the process ends are the shutdown's to decide.
 */
function createStopSteps(log: (line: string) => void) {
  const steps: Step[] = [];
  let stopping: Promise<boolean> | undefined;
  let halting: Promise<void> | undefined;
  let startedAt = 0;

  const run = async (): Promise<boolean> => {
    startedAt = Date.now();
    let clean = true;
    for (const step of [...steps].reverse()) {
      if (halting) break;
      clean = (await runStep(step, log)) && clean;
    }
    return clean;
  };

  return {
    get stopping(): boolean {
      return stopping !== undefined;
    },
    get halting(): boolean {
      return halting !== undefined;
    },
    /** When the steps began to run (0 before). */
    get startedAt(): number {
      return startedAt;
    },
    add: (name: string, stop: () => Promise<unknown>, stepOptions: StepOptions = {}): void =>
      void steps.push({ name, stop, timeoutMs: stepOptions.timeoutMs, kill: stepOptions.kill }),
    stop: (): Promise<boolean> => (stopping ??= run()),
    halt: (): Promise<void> => (halting ??= killAll(steps, log)),
  };
}

/** False if the step failed; one that runs out of time is reported and left behind. */
async function runStep(step: Step, log: (line: string) => void): Promise<boolean> {
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
}

/** Kills every child process at once (those that were not stopped already) and gives up on the rest. */
async function killAll(steps: readonly Step[], log: (line: string) => void): Promise<void> {
  const kills = [...steps]
    .reverse()
    .flatMap((step) =>
      step.kill
        ? [step.kill().catch((err: unknown) => log(`killing ${step.name} failed: ${(err as Error).message}`))]
        : [],
    );
  await settlesWithin(Promise.all(kills), 4_000);
}

function haltAndExit(stopper: Stopper, exit: (code: number) => void): void {
  void stopper.steps.halt().then(() => exit(1));
}

function beginStop(stopper: Stopper, exit: (code: number) => void): void {
  const { steps, log, deadlineMs } = stopper;
  if (steps.stopping) return;
  const started = Date.now();
  reportErrorsWhileStopping(log);
  const watchdog =
    deadlineMs === undefined
      ? undefined
      : setTimeout(() => {
          log(`still stopping after ${deadlineMs / 1000} s: stopping at once`);
          haltAndExit(stopper, exit);
        }, deadlineMs);
  void steps.stop().then((clean) => {
    clearTimeout(watchdog);
    if (steps.halting) return;
    log(`stopped in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    exit(clean ? 0 : 1);
  });
}

/**
 * What is being torn down may still throw: the SDK's worker, forced to give up on a workflow task,
 * fails to dispose of its workflow contexts and leaves a rejection nobody handles. Ending the
 * process on it would skip stopping PostgreSQL and Temporal.
 */
function reportErrorsWhileStopping(log: (line: string) => void): void {
  const report = (err: unknown) =>
    log(`while stopping: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
  process.on('uncaughtException', report);
  process.on('unhandledRejection', report);
}

function stopOnSignals(stopper: Stopper, exit: (code: number) => void): void {
  const { steps, log, repeatWindowMs } = stopper;
  // After a terminal hangup, writing to it fails (EIO); an unhandled stream error would end
  // the process in the middle of the stop and leave PostgreSQL and Temporal running.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const handler = (signal: NodeJS.Signals) => {
    if (!steps.stopping) {
      log(`${signal}: stopping (press Ctrl-C again to stop at once)…`);
      beginStop(stopper, exit);
      return;
    }
    if (steps.halting || Date.now() - steps.startedAt < repeatWindowMs) return;
    log(`${signal} again: stopping at once`);
    haltAndExit(stopper, exit);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  process.on('SIGHUP', handler);
}

function stopWithParent(stopper: Stopper, exit: (code: number) => void, everyMs: number): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent || stopper.steps.stopping) return;
    stopper.log('parent process exited: stopping…');
    beginStop(stopper, exit);
  }, everyMs);
  timer.unref();
}
