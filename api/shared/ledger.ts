import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { z } from 'zod';
import { InvalidRequestError } from '../../core/errors';
import { LEDGER_ENTRY_TYPES, ledgerCsv, ledgerPage } from '../../service/usage/ledger';
import { principalOf } from './auth';
import { sendCsv, wantsCsv } from './csv';
import { customerId } from './customers';

/** The account's ledger as group A (a key) and the dashboard (a session) read it: JSON pages or CSV. */

export const MAX_JSON_ROWS = 500;
export const MAX_CSV_ROWS = 10_000;
export const ledgerQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_CSV_ROWS)
    .optional()
    .describe(`Page size: 1 to ${MAX_JSON_ROWS} (default 50) in JSON, up to ${MAX_CSV_ROWS} (default) in CSV`),
  cursor: z.string().max(400).optional().describe('next_cursor of the previous page'),
  format: z.enum(['json', 'csv']).optional().describe('csv: the same entries as CSV (or send Accept: text/csv)'),
  customer: customerId('customer')
    .optional()
    .describe('Only the entries of generations made for this customer of yours'),
});
const ledgerEntry = z
  .object({
    id: z.string(),
    type: z.enum(LEDGER_ENTRY_TYPES),
    amount: z
      .number()
      .describe(
        'The change of the available balance: negative for a hold or refund, positive for a top-up, adjustment or release, 0 for a charge',
      ),
    credits: z.number().describe('The size of the movement: what was held, charged, released or added'),
    balanceAfter: z.number().describe('The available balance after it'),
    heldAfter: z.number().describe('What was held after it'),
    generationId: z.string().nullable(),
    batchId: z
      .string()
      .nullable()
      .describe(
        'The batch it belongs to: its one hold, the release of what its lines did not take, or a line’s charge',
      ),
    keyId: z.string().nullable().describe('The key whose generation (or batch) it was'),
    customer: z.string().nullable().describe('The customer (your own end user) whose generation it was'),
    note: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'LedgerEntry' });
export const ledgerList = z
  .object({ data: z.array(ledgerEntry), next_cursor: z.string().nullable() })
  .meta({ id: 'LedgerPage' });

/** A page of the principal's ledger, as JSON or (asked for) CSV with the next cursor in `x-next-cursor`. */
export async function ledgerAnswer(
  pool: pg.Pool,
  request: FastifyRequest & { query: z.infer<typeof ledgerQuery> },
  reply: FastifyReply,
) {
  const csv = wantsCsv(request);
  const limit = request.query.limit ?? (csv ? MAX_CSV_ROWS : 50);
  if (!csv && limit > MAX_JSON_ROWS)
    throw new InvalidRequestError(
      `limit: at most ${MAX_JSON_ROWS} entries a page in JSON (${MAX_CSV_ROWS} in CSV)`,
      'limit',
    );
  const page = await ledgerPage(pool, principalOf(request), {
    limit,
    cursor: request.query.cursor,
    customer: request.query.customer,
  });
  if (!csv) return page;
  if (page.next_cursor) reply.header('x-next-cursor', page.next_cursor);
  return sendCsv(reply, 'ledger.csv', ledgerCsv(page.data));
}
