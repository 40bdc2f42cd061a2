import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { freePort } from '../../runtime/process';
import { withScratchDatabase } from './harness';
import type { Harness } from './harness';
import { productionApi } from './production-api';

/**
 * The app on a PostgreSQL that cannot be reached (every keyed or session call answers 503), then on
 * one whose tables are gone (500): `each` runs its calls against both, told which status to expect.
 */
export async function withBrokenDatabases(
  h: Harness,
  each: (app: FastifyInstance, status: 503 | 500) => Promise<void>,
): Promise<void> {
  const build = (pool: pg.Pool) => productionApi(h, { pool });
  const unreachable = new pg.Pool({
    connectionString: `postgresql://nobody@127.0.0.1:${await freePort()}/nowhere`,
    connectionTimeoutMillis: 2_000,
    max: 1,
  });
  const down = await build(unreachable);
  try {
    await each(down, 503);
  } finally {
    await down.close();
    await unreachable.end();
  }
  await withScratchDatabase(async (pool) => {
    await pool.query(
      'DROP TABLE sessions, password_links, users, ledger_entries, holds, idempotency_keys, batch_lines, generations, batches, files, api_keys, accounts CASCADE',
    );
    const broken = await build(pool);
    try {
      await each(broken, 500);
    } finally {
      await broken.close();
    }
  });
}
