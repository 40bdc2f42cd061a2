// MinIO, the S3-compatible server the tests run the S3 output store against. Nothing may be
// downloaded at run time, but the Go module proxy is reachable: MinIO is built from source once
// into the same cache folder as the Temporal CLI (runtime/temporal-cli.ts), never into the repository.
import { dirname, join } from 'node:path';
import { cachedTemporalCliPath } from '../runtime/temporal-cli';
import { findBuiltBinary } from '../runtime/go-install';
import { goInstall } from './go-install';

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
export function findMinio(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  return findBuiltBinary(env, 'MINIO_BINARY', cachedMinioPath(env), (m) => new MinioBinaryError(m));
}

/** findMinio, or else `go install` it into the cache folder (a few minutes, once). */
export async function ensureMinio(
  env: NodeJS.ProcessEnv = process.env,
  progress: (line: string) => void = () => undefined,
): Promise<string> {
  const found = await findMinio(env);
  if (found) return found;
  const target = cachedMinioPath(env);
  await goInstall({
    module: MODULE,
    binary: 'minio',
    target,
    env,
    progress,
    missingGo: `Go is needed to build MinIO (${MODULE}) into ${target}, or set MINIO_BINARY to a minio binary.`,
    fail: (m) => new MinioBinaryError(m),
  });
  progress(`built ${target}`);
  return target;
}
