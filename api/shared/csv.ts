import type { FastifyReply } from 'fastify';

/** CSV answers (the ledger, usage): asked for with `format=csv` or `Accept: text/csv`. */
export function wantsCsv(request: {
  query: { format?: 'json' | 'csv' | undefined };
  headers: { accept?: string | undefined };
}): boolean {
  const format = request.query.format;
  return format === 'csv' || (format === undefined && /\btext\/csv\b/.test(request.headers.accept ?? ''));
}

/** Sends CSV as a download named `filename`. */
export function sendCsv(reply: FastifyReply, filename: string, csv: string): FastifyReply {
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${filename}"`)
    .send(csv);
}
