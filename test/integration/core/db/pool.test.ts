// A connection PostgreSQL drops (a restart, pg_terminate_backend) must never crash the process,
// whoever holds it at that moment: an 'error' event nobody listens to throws.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createPool } from '../../../../core/db/pool';

const pool = createPool(inject('postgresUrl'), 3);
afterAll(() => pool.end());

describe('createPool', () => {
  it('survives a checked-out connection the server terminates, and serves the next query on a new one', async () => {
    const held = await pool.connect();
    const pid = (await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const ended = new Promise((resolve) => held.once('end', resolve));
    // From another connection, as PostgreSQL's shutdown does to every backend: FATAL 57P01.
    const killed = await pool.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [pid]);
    expect(killed.rows[0]!.ok).toBe(true);
    await ended;

    try {
      await expect(held.query('SELECT 1')).rejects.toThrow(/not queryable|terminat/i);
    } finally {
      held.release();
    }
    const again = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    expect(again.rows[0]!.pid).not.toBe(pid);
  });
});
