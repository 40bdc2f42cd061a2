// Finds the Temporal CLI, or builds it from source into a cache folder. It cannot be downloaded
// at run time on machines without internet, but the Go module proxy is usually reachable.
import { mkdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { acquireBuildLock, findGo } from './go-install';
import { isExecutableFile, runCommand } from './process';

/** v1.5.1 is the newest tag whose go.mod has no `replace` directive, which `go install` refuses. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;
const BINARY = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

export interface TemporalCliOptions {
  env?: NodeJS.ProcessEnv;
  /** Replaces `${GENSVC_CACHE_DIR ?? (XDG_CACHE_HOME ?? ~/.cache)/gensvc}`. */
  cacheDir?: string;
}

export interface EnsureTemporalCliOptions extends TemporalCliOptions {
  /** Build progress, one line at a time (default: stderr). */
  onProgress?: (line: string) => void;
  /** How long to wait for another process's build before giving up. */
  lockTimeoutMs?: number;
}

export class TemporalCliError extends Error {
  override name = 'TemporalCliError';
}

/** Where the built CLI lives: `<cache>/temporal-v1.5.1/temporal`. */
export function cachedTemporalCliPath(options: TemporalCliOptions = {}): string {
  return join(versionDir(options), BINARY);
}

/** TEMPORAL_CLI, then `temporal` on PATH, then the cache folder; undefined when none has it. */
export async function findTemporalCli(options: TemporalCliOptions = {}): Promise<string | undefined> {
  const env = options.env ?? process.env;
  const explicit = env.TEMPORAL_CLI;
  if (explicit) {
    const path = resolve(explicit);
    if (!(await isExecutableFile(path))) {
      throw new TemporalCliError(`TEMPORAL_CLI is set to ${explicit}, which is not an executable file.`);
    }
    return path;
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && (await isExecutableFile(join(dir, BINARY)))) return join(dir, BINARY);
  }
  const cached = cachedTemporalCliPath(options);
  return (await isExecutableFile(cached)) ? cached : undefined;
}

/** findTemporalCli, or else build it with `go install` into the cache folder (minutes, once). */
export async function ensureTemporalCli(options: EnsureTemporalCliOptions = {}): Promise<string> {
  const found = await findTemporalCli(options);
  if (found) return found;

  const env = options.env ?? process.env;
  const progress = options.onProgress ?? ((line: string) => process.stderr.write(`[temporal-cli] ${line}\n`));
  const dir = versionDir(options);
  await mkdir(dirname(dir), { recursive: true });
  const release = await acquireBuildLock(
    `${dir}.lock`,
    'the Temporal CLI',
    options.lockTimeoutMs ?? 30 * 60_000,
    progress,
  );
  try {
    // Whoever held the lock before us may have built it.
    const target = cachedTemporalCliPath(options);
    if (await isExecutableFile(target)) return target;
    await build(env, dir, progress);
    return target;
  } finally {
    await release();
  }
}

function versionDir(options: TemporalCliOptions): string {
  const env = options.env ?? process.env;
  const base =
    options.cacheDir ??
    env.GENSVC_CACHE_DIR ??
    join(env.XDG_CACHE_HOME ?? join(env.HOME ?? homedir(), '.cache'), 'gensvc');
  return join(resolve(base), `temporal-${TEMPORAL_CLI_VERSION}`);
}

async function build(env: NodeJS.ProcessEnv, dir: string, progress: (line: string) => void): Promise<void> {
  const go = await findGo(env);
  if (!go) {
    throw new TemporalCliError(
      'The Temporal CLI was not found (TEMPORAL_CLI, PATH, cache) and Go is not installed to build it. ' +
        `Install Go (https://go.dev/dl/) and retry, or set TEMPORAL_CLI to a temporal binary, or put one at ${join(dir, BINARY)}.`,
    );
  }
  // go install may write the binary in place; build next door and rename, so a build that is
  // interrupted never leaves a truncated binary where findTemporalCli would pick it up.
  const staging = `${dir}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  progress(`building ${MODULE} with ${go} (takes a few minutes the first time)`);
  const started = Date.now();
  try {
    const { code, output } = await runCommand(go, ['install', MODULE], { ...env, GOBIN: staging }, progress);
    if (code !== 0) {
      throw new TemporalCliError(
        `go install ${MODULE} failed (exit code ${code}):\n${output}\n` +
          'Hint: the build needs the Go module proxy (or GOPROXY/GOFLAGS pointing at a mirror) and a Go toolchain ' +
          'recent enough for the module; alternatively set TEMPORAL_CLI to a temporal binary.',
      );
    }
    await mkdir(dir, { recursive: true });
    await rename(join(staging, BINARY), join(dir, BINARY));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  progress(`built ${join(dir, BINARY)} in ${Math.round((Date.now() - started) / 1000)} s`);
}
