import { classifyDbError } from '../db/errors';

/**
 * A ledger step that will fail the same way every time it is tried (invalid input, a constraint,
 * a schema error). Temporal decides retries by an error's name: activities list this one as
 * non-retryable, so a poisoned step fails its generation at once instead of retrying forever;
 * anything else (a lost connection, a deadlock) keeps its own error and is retried, bounded.
 */
export class LedgerPermanentError extends Error {
  override readonly name = 'LedgerPermanentError';
}

/** Runs one ledger step, turning a database failure that cannot heal into LedgerPermanentError. */
export async function classified<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (classifyDbError(err) !== 'permanent') throw err;
    const code = (err as { code?: string }).code;
    throw new LedgerPermanentError(`${(err as Error).message}${code ? ` (SQLSTATE ${code})` : ''}`, { cause: err });
  }
}
