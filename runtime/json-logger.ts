import { DefaultLogger } from '@temporalio/worker';
import type { LogEntry, LogLevel } from '@temporalio/worker';
import { redactSecrets } from '../core/log-redaction';

/** pino's level numbers, so the worker's lines read like the API's (Fastify logs with pino). */
const PINO_LEVELS: Record<LogLevel, number> = { TRACE: 10, DEBUG: 20, INFO: 30, WARN: 40, ERROR: 50 };

/**
 * The Temporal runtime's logger (worker, workflows, activities) writing one JSON object per line,
 * like the API. Workflow and activity lines carry their workflow id, which for a generation is
 * its id: it is repeated as `generationId` so one query finds every line about a job.
 */
export function jsonLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stdout.write(line),
): DefaultLogger {
  return new DefaultLogger(level, (entry: LogEntry) => {
    const meta = (entry.meta ?? {}) as Record<string, unknown>;
    // The worker's own info lines (state changes, bundle size) are noise at start-up; lines about
    // jobs (workflow and activity components) are what an operator reads. From debug, all of them.
    if (entry.level === 'INFO' && level === 'INFO' && meta.sdkComponent === 'worker') return;
    const workflowId = typeof meta.workflowId === 'string' ? meta.workflowId : undefined;
    const line = {
      level: PINO_LEVELS[entry.level],
      time: Math.floor(Number(entry.timestampNanos / 1_000_000n)),
      msg: entry.message,
      ...(workflowId?.startsWith('gen_') ? { generationId: workflowId } : {}),
      ...meta,
    };
    // Activity and workflow lines may quote a URL or an error that carries a secret (core/log-redaction).
    write(
      `${JSON.stringify(line, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : typeof value === 'string' ? redactSecrets(value) : value))}\n`,
    );
  });
}
