// What every bench run needs around its measurements, whichever scenarios it runs: Ctrl-C,
// SIGTERM or the parent (npm) going away abort the requests in flight and stop what was started;
// an exception nobody caught stops it too; a watchdog gives up well past the expected duration.
import type { createShutdown } from '../runtime/lifecycle';

type Shutdown = ReturnType<typeof createShutdown>;

/**
 * Ctrl-C reaches the bench twice: from the terminal (the whole foreground process group) and
 * relayed by tsx. Signals within a few seconds of the first are that echo; a later one means
 * "stop now" and exits at once (the stack's exit hooks and the reaper still stop the children).
 */
function onSignals(log: (line: string) => void, stop: () => void): void {
  let first: number | undefined;
  const handler = (name: NodeJS.Signals) => {
    if (first === undefined) {
      first = Date.now();
      log(`${name}: stopping (press Ctrl-C again after a few seconds to exit at once)…`);
      stop();
    } else if (Date.now() - first > 3_000) {
      log(`${name} again: exiting now`);
      process.exit(130);
    }
  };
  for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(name, handler);
}

/**
 * Arms the guards around a run whose steps are already in `shutdown`. An interruption aborts
 * `interrupt`, stops, says `stoppedNote` and exits 130. (A second Ctrl-C exits at once; the
 * stack's exit hooks then still take the Temporal dev server and the worker child down.)
 */
export function guardRun(options: {
  log: (line: string) => void;
  shutdown: Shutdown;
  interrupt: AbortController;
  watchdogMinutes: number;
  stoppedNote: string;
}): void {
  const { log, shutdown, interrupt } = options;
  onSignals(log, () => {
    interrupt.abort();
    void shutdown.stop().then(() => {
      log(`stopped after the interruption; ${options.stoppedNote}`);
      process.exit(130);
    });
  });
  shutdown.followParent(() => {
    interrupt.abort();
    process.exit(130);
  });
  // An exception nobody caught (in the service or here) must still stop what was started. One
  // known source: when Ctrl-C also reaches PostgreSQL, pg clients checked out of a pool have no
  // 'error' listener and throw "Connection terminated unexpectedly".
  const afterInterrupt = new Set<string>();
  const onUncaught = (err: unknown) => {
    const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
    if (interrupt.signal.aborted) {
      // Requests cut off mid-way fail in the service as its connections close; say so once each.
      const first = text.split('\n')[0] ?? '';
      if (!afterInterrupt.has(first)) log(`after the interruption (expected while stopping): ${first}`);
      afterInterrupt.add(first);
    } else {
      console.error(`[bench] uncaught: ${text}`);
      void shutdown.stop().then(() => process.exit(1));
    }
  };
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  // A service that hangs must not hang the bench. BENCH_WATCHDOG_MINUTES lengthens the bound on a
  // machine so loaded that a healthy run takes longer.
  const minutes = Math.max(options.watchdogMinutes, Number(process.env.BENCH_WATCHDOG_MINUTES) || 0);
  const watchdog = setTimeout(() => {
    log(`the bench did not finish within ${minutes} minutes; stopping`);
    void shutdown.stop().then(() => process.exit(1));
  }, minutes * 60_000);
  watchdog.unref();
}
