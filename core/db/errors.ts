/**
 * Whether a database failure is worth retrying. PostgreSQL names its errors by SQLSTATE class:
 * connection loss (08), a server going down (57P01-57P03), resource pressure (53) and
 * serialization failures and deadlocks (40001, 40P01) pass; invalid input (22), constraint
 * violations (23) and schema errors (42) will fail the same way every time. A socket that never
 * connected has no SQLSTATE, only a Node error code.
 */
export type DbFailure = 'transient' | 'permanent';

const TRANSIENT_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '55P03', '57P01', '57P02', '57P03', '57014']);

export function classifyDbError(err: unknown): DbFailure | undefined {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (code !== undefined) {
    if (
      TRANSIENT_NODE_CODES.has(code) ||
      TRANSIENT_SQLSTATES.has(code) ||
      code.startsWith('08') ||
      code.startsWith('53')
    )
      return 'transient';
    if (/^[0-9A-Z]{5}$/.test(code)) return 'permanent';
  }
  const message = typeof e?.message === 'string' ? e.message : '';
  // pg's own words for a pool that could not get a connection in time, or lost it.
  if (
    /timeout exceeded when trying to connect|Connection terminated|connection timeout|Client has encountered a connection error/i.test(
      message,
    )
  )
    return 'transient';
  return undefined;
}
