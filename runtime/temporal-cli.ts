// Finds the Temporal CLI, or builds it from source into a cache folder. It cannot be downloaded
// at run time on machines without internet, but the Go module proxy is usually reachable.
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { homedir, hostname } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive, isExecutableFile, runCommand } from './process';

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
  const release = await acquireLock(`${dir}.lock`, options.lockTimeoutMs ?? 30 * 60_000, progress);
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
    options.cacheDir ?? env.GENSVC_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(env.HOME ?? homedir(), '.cache'), 'gensvc');
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

async function findGo(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const candidates = (env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'go'));
  // Go's installer puts it here without necessarily touching PATH of non-login shells.
  candidates.push(...(env.GOROOT ? [join(env.GOROOT, 'bin', 'go')] : []), '/usr/local/go/bin/go');
  for (const candidate of candidates) if (await isExecutableFile(candidate)) return candidate;
  return undefined;
}

interface LockOwner {
  pid: number;
  host: string;
}

/**
 * An exclusive lock file, so that two processes (`npm start` and a test run, say) never build at
 * the same time; the second waits and then finds the first one's binary. A lock whose owner
 * died is taken over. Two waiters that detect the same stale lock at once can both proceed;
 * that costs a second build but no harm, since each build lands by an atomic rename.
 */
async function acquireLock(
  file: string,
  timeoutMs: number,
  progress: (line: string) => void,
): Promise<() => Promise<void>> {
  const deadline = Date.now() + timeoutMs;
  let announced = false;
  for (;;) {
    try {
      const handle = await open(file, 'wx');
      await handle.writeFile(JSON.stringify({ pid: process.pid, host: hostname() } satisfies LockOwner));
      await handle.close();
      return () => rm(file, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = await readOwner(file);
    if (await isStale(file, owner)) {
      progress(`removing stale lock ${file}`);
      await rm(file, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new TemporalCliError(`Timed out waiting for another build of the Temporal CLI (lock ${file}, held by ${JSON.stringify(owner)}).`);
    }
    if (!announced) {
      progress(`waiting for another process (${owner ? `pid ${owner.pid}` : 'unknown'}) that is building the Temporal CLI`);
      announced = true;
    }
    await sleep(1_000);
  }
}

async function readOwner(file: string): Promise<LockOwner | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as LockOwner;
  } catch {
    return undefined;
  }
}

async function isStale(file: string, owner: LockOwner | undefined): Promise<boolean> {
  if (owner && owner.host === hostname()) return !isAlive(owner.pid);
  try {
    // Unreadable (its writer died between creating and writing it) or from another host
    // sharing the cache: judge by age.
    const age = Date.now() - (await stat(file)).mtimeMs;
    return age > (owner ? 60 * 60_000 : 30_000);
  } catch {
    return false; // vanished meanwhile: the next attempt will tell
  }
}
