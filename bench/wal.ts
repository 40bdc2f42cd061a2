// What a PostgreSQL server wrote between two moments, read from its write-ahead log with
// pg_walinspect (a contrib extension the embedded binaries ship): bytes of WAL, rows written
// (heap inserts, updates and deletes) and transactions committed. Exact and at once, unlike the
// statistics views, which a backend flushes up to ten seconds late.
import pg from 'pg';

export interface WalUse {
  /** Bytes of WAL written. */
  bytes: number;
  /** Heap rows inserted, updated or deleted (a multi-insert counts its rows as one record). */
  rows: number;
  /** Transactions committed. */
  commits: number;
}

export interface WalReader {
  /** The server's current flushed position. */
  mark(): Promise<string>;
  /** What the server wrote from `from` up to `to`. */
  between(from: string, to: string): Promise<WalUse>;
  close(): Promise<void>;
}

/**
 * A reader on `urlOfPostgresDb` (the server's `postgres` database; the log is the whole server's).
 * Keeps a gigabyte of WAL so that a checkpoint never recycles a segment still to be read.
 */
export async function openWalReader(urlOfPostgresDb: string): Promise<WalReader> {
  const pool = new pg.Pool({ connectionString: urlOfPostgresDb, max: 1 });
  pool.on('error', () => undefined);
  await pool.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  await pool.query("ALTER SYSTEM SET wal_keep_size = '1GB'");
  await pool.query('SELECT pg_reload_conf()');
  return {
    async mark() {
      return (await pool.query<{ lsn: string }>('SELECT pg_current_wal_flush_lsn()::text AS lsn')).rows[0]!.lsn;
    },
    async between(from, to) {
      // Nothing written: there is no record to read (pg_walinspect would say so with an error).
      if (from === to) return { bytes: 0, rows: 0, commits: 0 };
      // Per record type, named `Heap/INSERT`, `Heap/HOT_UPDATE`, `Transaction/COMMIT`…
      const r = await pool.query<{ bytes: string; rows: string; commits: string }>(
        `SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::bigint AS bytes,
                coalesce(sum(count) FILTER (WHERE type ~ '^Heap2?/(INSERT|UPDATE|HOT_UPDATE|DELETE|MULTI_INSERT)'), 0)::bigint AS rows,
                coalesce(sum(count) FILTER (WHERE type ~ '^Transaction/COMMIT'), 0)::bigint AS commits
           FROM (SELECT "resource_manager/record_type" AS type, count FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true)) s`,
        [from, to],
      );
      const row = r.rows[0]!;
      return { bytes: Number(row.bytes), rows: Number(row.rows), commits: Number(row.commits) };
    },
    close: () => pool.end(),
  };
}
