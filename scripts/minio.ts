// MinIO, the S3-compatible server the tests run the S3 output store against. Nothing may be
// downloaded at run time, but the Go module proxy is reachable: MinIO is built from source once
// into the same cache folder as the Temporal CLI (runtime/temporal-cli.ts), never into the repository.
import { spawn } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { cachedTemporalCliPath } from '../runtime/temporal-cli';
import { isExecutableFile, OutputTail } from '../runtime/process';

/**
 * The release the docker-compose `minio` image runs. MinIO tags releases as `RELEASE.<date>`,
 * which Go does not read as versions, so the module is pinned by the pseudo-version of that
 * tag's commit; its go.mod has no `replace` directive, so `go install` accepts it.
 */
export const MINIO_RELEASE = 'RELEASE.2025-09-07T16-13-09Z';
const MODULE = 'github.com/minio/minio@v0.0.0-20250907161309-07c3a429bfed';

export class MinioBinaryError extends Error {
  override readonly name = 'MinioBinaryError';
}

/** `<cache>/minio-RELEASE.…/minio`, beside the Temporal CLI's `<cache>/temporal-v…/temporal`. */
export function cachedMinioPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(dirname(dirname(cachedTemporalCliPath({ env }))), `minio-${MINIO_RELEASE}`, 'minio');
}

/** MINIO_BINARY, then the cache folder; undefined when neither has it. */
export async function findMinio(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (env.MINIO_BINARY) {
    const path = resolve(env.MINIO_BINARY);
    if (!(await isExecutableFile(path))) throw new MinioBinaryError(`MINIO_BINARY is set to ${env.MINIO_BINARY}, which is not an executable file.`);
    return path;
  }
  const cached = cachedMinioPath(env);
  return (await isExecutableFile(cached)) ? cached : undefined;
}

/** findMinio, or else `go install` it into the cache folder (a few minutes, once). */
export async function ensureMinio(env: NodeJS.ProcessEnv = process.env, progress: (line: string) => void = () => undefined): Promise<string> {
  const found = await findMinio(env);
  if (found) return found;
  const target = cachedMinioPath(env);
  const go = await findGo(env);
  if (!go) throw new MinioBinaryError(`Go is needed to build MinIO (${MODULE}) into ${target}, or set MINIO_BINARY to a minio binary.`);
  // Built next door and renamed into place: an interrupted build never leaves a truncated binary,
  // and two builds at once both end with a whole one.
  const staging = `${dirname(target)}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  progress(`building ${MODULE} with ${go} (a few minutes the first time)`);
  try {
    // A static binary, as MinIO's own releases are.
    const { code, output } = await run(go, ['install', MODULE], { ...env, GOBIN: staging, CGO_ENABLED: '0' });
    if (code !== 0) throw new MinioBinaryError(`go install ${MODULE} failed (exit code ${code}):\n${output}`);
    await mkdir(dirname(target), { recursive: true });
    await rename(join(staging, 'minio'), target);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  progress(`built ${target}`);
  return target;
}

async function findGo(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const candidates = (env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'go'));
  candidates.push('/usr/local/go/bin/go');
  for (const candidate of candidates) if (await isExecutableFile(candidate)) return candidate;
  return undefined;
}

async function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const output = new OutputTail(20_000);
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolvePromise({ code, output: output.toString() }));
  });
}
