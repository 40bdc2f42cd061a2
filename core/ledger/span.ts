import { inSpan } from '../tracing';
import type { SpanAttributes } from '../tracing';

/**
 * A ledger operation's span when tracing is on: one per operation (its transaction, waiting for a
 * connection included), not one per statement, named by what it does (`ledger settle`) and tagged
 * with what came of it (`gensvc.ledger.outcome`: settled, already, refused…), so a trace shows
 * whether money moved. With tracing off it is the operation itself.
 */
export function ledgerSpan<T extends string | { outcome: string }>(
  operation: string,
  attributes: SpanAttributes,
  work: () => Promise<T>,
): Promise<T> {
  return inSpan(`ledger ${operation}`, { 'db.system': 'postgresql', ...attributes }, async (span) => {
    const result = await work();
    span.set('gensvc.ledger.outcome', typeof result === 'string' ? result : result.outcome);
    return result;
  });
}
