import pg from 'pg';

/** A pool or a client inside a transaction: SQL functions take either, the caller owns the transaction. */
export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

// BIGINT millicredits fit comfortably in a JS number; read them as numbers, not strings.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new RangeError(`bigint out of safe range: ${v}`);
  return n;
});

export function createPool(connectionString: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Nor may one that is checked out: between the pool's listener and its holder's there are moments
  // with none (a PostgreSQL restart's "terminating connection" arriving then killed a worker), and an
  // 'error' event nobody listens to throws. What held the client learns of the loss from its next
  // query, which fails, and the pool drops a client that is no longer queryable when it comes back.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A checked-out client has no error listener of the pool's: without this, PostgreSQL dropping
  // the connection mid-transaction would crash the process instead of failing this call.
  let lost: Error | undefined;
  const onError = (err: Error) => {
    lost = err;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.off('error', onError);
    // A broken connection must not go back into the pool.
    client.release(lost);
  }
}
