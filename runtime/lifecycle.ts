/**
 * Stops what was started, last first, once, on SIGINT or SIGTERM; a second signal exits at once.
 */
export function createShutdown(log: (line: string) => void = (l) => console.error(l)) {
  const steps: { name: string; stop: () => Promise<unknown> }[] = [];
  let stopping: Promise<void> | undefined;

  const run = async (): Promise<void> => {
    for (const step of steps.reverse()) {
      try {
        await step.stop();
      } catch (err) {
        log(`stopping ${step.name} failed: ${(err as Error).message}`);
      }
    }
  };

  return {
    add(name: string, stop: () => Promise<unknown>): void {
      steps.push({ name, stop });
    },
    stop(): Promise<void> {
      stopping ??= run();
      return stopping;
    },
    onSignals(exit: (code: number) => void): void {
      const handler = (signal: NodeJS.Signals) => {
        if (stopping) {
          log(`${signal} again: exiting now`);
          exit(1);
        }
        log(`${signal}: shutting down…`);
        void this.stop().then(() => exit(0));
      };
      process.on('SIGINT', handler);
      process.on('SIGTERM', handler);
      process.on('SIGHUP', handler);
    },
    /**
     * Stops when the parent process goes away. `npm start` does not pass SIGTERM on to its
     * child, so without this a `kill <npm pid>` would leave the service (and its PostgreSQL
     * and Temporal) running on its own.
     */
    followParent(exit: (code: number) => void, everyMs = 1000): void {
      const parent = process.ppid;
      const timer = setInterval(() => {
        if (process.ppid === parent || stopping) return;
        log('parent process exited: shutting down…');
        void this.stop().then(() => exit(0));
      }, everyMs);
      timer.unref();
    },
  };
}
