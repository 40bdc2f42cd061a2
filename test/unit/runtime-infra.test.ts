// The embedded runtime's infrastructure: finding/building the Temporal CLI, a real Temporal dev
// server and a real embedded PostgreSQL. No project global setup is needed.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../runtime/embedded-postgres';
import {
  cachedTemporalCliPath,
  ensureTemporalCli,
  findTemporalCli,
  TemporalCliError,
} from '../../runtime/temporal-cli';
import { startTemporalDevServer } from '../../runtime/temporal-dev-server';

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gensvc-infra-'));
  tempDirs.push(dir);
  return dir;
}

afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function script(path: string, body: string): Promise<string> {
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

describe('findTemporalCli / ensureTemporalCli', () => {
  it('honours TEMPORAL_CLI when it is an executable file', async () => {
    const dir = await tempDir();
    const fake = await script(join(dir, 'my-temporal'), 'echo fake');
    await expect(findTemporalCli({ env: { TEMPORAL_CLI: fake, PATH: '' }, cacheDir: dir })).resolves.toBe(fake);
  });

  it('names TEMPORAL_CLI when it points at nothing usable', async () => {
    const dir = await tempDir();
    const find = findTemporalCli({ env: { TEMPORAL_CLI: join(dir, 'missing'), PATH: '' }, cacheDir: dir });
    await expect(find).rejects.toThrow(TemporalCliError);
    await expect(find).rejects.toThrow(/TEMPORAL_CLI/);
    await writeFile(join(dir, 'not-executable'), '');
    await expect(findTemporalCli({ env: { TEMPORAL_CLI: join(dir, 'not-executable') } })).rejects.toThrow(
      /TEMPORAL_CLI/,
    );
  });

  it('finds it on PATH, then in the cache folder (GENSVC_CACHE_DIR)', async () => {
    const dir = await tempDir();
    await expect(findTemporalCli({ env: { PATH: '', GENSVC_CACHE_DIR: dir } })).resolves.toBeUndefined();

    const binary = cachedTemporalCliPath({ env: { GENSVC_CACHE_DIR: dir } });
    await mkdir(dirname(binary), { recursive: true });
    await script(binary, 'echo cached');
    await expect(findTemporalCli({ env: { PATH: '', GENSVC_CACHE_DIR: dir } })).resolves.toBe(binary);

    const onPath = await tempDir();
    await script(join(onPath, 'temporal'), 'echo on-path');
    await expect(findTemporalCli({ env: { PATH: onPath, GENSVC_CACHE_DIR: dir } })).resolves.toBe(
      join(onPath, 'temporal'),
    );
  });

  it('builds once with go install into the cache, even when asked twice at the same time', async () => {
    const cache = await tempDir();
    const bin = await tempDir();
    const calls = join(bin, 'calls');
    // A stand-in for go: records the call, takes a moment, drops a binary into $GOBIN.
    await script(
      join(bin, 'go'),
      `echo "$@" >> ${calls}; echo "go: downloading something"; sleep 0.5; printf '#!/bin/sh\\n' > "$GOBIN/temporal"; chmod +x "$GOBIN/temporal"`,
    );
    const lines: string[] = [];
    const options = {
      env: { PATH: `${bin}:/usr/bin:/bin` },
      cacheDir: cache,
      onProgress: (line: string) => lines.push(line),
    };
    const [first, second] = await Promise.all([ensureTemporalCli(options), ensureTemporalCli(options)]);
    expect(first).toBe(cachedTemporalCliPath({ cacheDir: cache }));
    expect(second).toBe(first);
    expect((await readFile(calls, 'utf8')).trim().split('\n')).toEqual([
      'install github.com/temporalio/cli/cmd/temporal@v1.5.1',
    ]);
    expect(lines).toContain('go: downloading something');
  });

  it("reports go's own output when the build fails", async () => {
    const bin = await tempDir();
    await script(join(bin, 'go'), 'echo "go: module lookup disabled by GOPROXY=off" >&2; exit 1');
    const build = ensureTemporalCli({ env: { PATH: bin }, cacheDir: await tempDir(), onProgress: () => {} });
    await expect(build).rejects.toThrow(/GOPROXY=off[\s\S]*Hint/);
  });
});

describe('Temporal dev server', () => {
  let cliPath: string;
  beforeAll(async () => {
    cliPath = await ensureTemporalCli({ env: process.env });
  });

  it('starts on free ports with a SQLite file, answers, and stops without leaving a process', async () => {
    const dir = await tempDir();
    const server = await startTemporalDevServer({
      cliPath,
      dbFile: join(dir, 'temporal.sqlite'),
      searchAttributes: { AccountId: 'Keyword', GenerationStatus: 'Keyword' },
      logFile: join(dir, 'temporal.log'),
    });
    try {
      expect(server.uiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const connection = await Connection.connect({ address: server.address });
      try {
        const info = await connection.workflowService.getSystemInfo({});
        expect(info.serverVersion).toBeTruthy();
      } finally {
        await connection.close();
      }
    } finally {
      await server.stop();
    }
    expect(gone(server.pid)).toBe(true);
    expect(gone(-server.pid)).toBe(true); // nothing left in its process group either
  });

  it('rejects with the server output when it cannot start', async () => {
    const dir = await tempDir();
    const failing = await script(join(dir, 'temporal'), 'echo "bind: address already in use" >&2; exit 3');
    await expect(startTemporalDevServer({ cliPath: failing })).rejects.toThrow(
      /exited early[\s\S]*address already in use/,
    );
    await expect(startTemporalDevServer({ cliPath: join(dir, 'missing') })).rejects.toThrow(/could not run .*ENOENT/);
  });
});

describe('embedded PostgreSQL', () => {
  it('starts, creates a database, and keeps data across a restart', async () => {
    // Its own temp dir as data dir: as root it gets handed to the postgres user, and /tmp
    // itself is searchable by everyone.
    const dataDir = await tempDir();
    const first = await startEmbeddedPostgres({ dataDir });
    try {
      await first.ensureDatabase('x');
      await first.ensureDatabase('x'); // idempotent
      const client = new pg.Client({ connectionString: first.urlFor('x') });
      await client.connect();
      try {
        expect((await client.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
        await client.query("create table kept (v text); insert into kept values ('before restart')");
      } finally {
        await client.end();
      }
    } finally {
      await first.stop();
    }
    expect(gone(first.pid)).toBe(true);

    const second = await startEmbeddedPostgres({ dataDir });
    try {
      const client = new pg.Client({ connectionString: second.urlFor('x') });
      await client.connect();
      try {
        expect((await client.query('select v from kept')).rows).toEqual([{ v: 'before restart' }]);
      } finally {
        await client.end();
      }
    } finally {
      await second.stop();
    }
    expect(gone(second.pid)).toBe(true);
  });
});
