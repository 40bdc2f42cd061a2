// What every `go install` into the cache folder needs: a Go toolchain, and a lock so that two
// processes (`npm start` and a test run, say) never build the same thing at once.
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive, isExecutableFile, runCommand } from './process';

/**
 * A binary built into the cache folder, or the one `env[variable]` names instead (which must then be
 * an executable file); undefined when neither is there.
 */
export async function findBuiltBinary(
  env: NodeJS.ProcessEnv,
  variable: string,
  cached: string,
  fail: (message: string) => Error = (message) => new Error(message),
): Promise<string | undefined> {
  const given = env[variable];
  if (given) {
    const path = resolve(given);
    if (!(await isExecutableFile(path))) throw fail(`${variable} is set to ${given}, which is not an executable file.`);
    return path;
  }
  return (await isExecutableFile(cached)) ? cached : undefined;
}

export async function findGo(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const candidates = (env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, 'go'));
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
 * An exclusive lock file: the second builder waits and then finds the first one's binary. A lock
 * whose owner died is taken over. Two waiters that detect the same stale lock at once can both
 * proceed; that costs a second build but no harm, since each build lands by an atomic rename.
 */
export async function acquireBuildLock(
  file: string,
  what: string,
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
      throw new Error(
        `Timed out waiting for another build of ${what} (lock ${file}, held by ${JSON.stringify(owner)}).`,
      );
    }
    if (!announced) {
      progress(`waiting for another process (${owner ? `pid ${owner.pid}` : 'unknown'}) that is building ${what}`);
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

export interface GoInstallSpec {
  /** What the build makes, for messages ("the Temporal server"). */
  what: string;
  /** `module/path/cmd/x@version` → the name its binary gets in `dir` (go names it after the last path element). */
  packages: { pkg: string; binary: string }[];
  /** The cache folder the binaries land in, whole or not at all. */
  dir: string;
  env: NodeJS.ProcessEnv;
  progress: (line: string) => void;
  /** Told in the error: the variables that point at existing binaries instead. */
  instead: string;
  /**
   * The module the packages (named without `@version`) come from, when its go.mod has `replace`
   * directives: `go install pkg@version` refuses those, so they are built inside a throwaway main
   * module holding that go.mod (the same requirements and replacements) and its go.sum.
   */
  replacingModule?: { path: string; version: string };
}

/**
 * `go install` of one or more packages into `dir`, once: under a lock, into a staging folder next
 * door, then renamed into place, so an interrupted build never leaves a truncated binary where a
 * finder would pick it up. Resolves the binaries' paths in the order asked.
 */
export async function goInstallIntoCache(spec: GoInstallSpec): Promise<string[]> {
  const targets = spec.packages.map((p) => join(spec.dir, p.binary));
  const ready = async () => (await Promise.all(targets.map((t) => isExecutableFile(t)))).every(Boolean);
  if (await ready()) return targets;
  await mkdir(dirname(spec.dir), { recursive: true });
  const release = await acquireBuildLock(`${spec.dir}.lock`, spec.what, 30 * 60_000, spec.progress);
  try {
    if (await ready()) return targets;
    const go = await findGo(spec.env);
    if (!go) throw new Error(`Go is needed to build ${spec.what} into ${spec.dir}; or set ${spec.instead}.`);
    const staging = `${spec.dir}.partial-${process.pid}`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    const started = Date.now();
    try {
      const within = spec.replacingModule
        ? await mainModuleOf(go, spec.replacingModule, join(staging, 'main-module'), spec.env, spec.progress)
        : undefined;
      const env = {
        ...spec.env,
        GOBIN: staging,
        ...(within ? { GOFLAGS: `${spec.env.GOFLAGS ?? ''} -mod=mod`.trim() } : {}),
      };
      for (const { pkg, binary } of spec.packages) {
        spec.progress(`building ${pkg} with ${go} (minutes the first time)`);
        const { code, output } = await runCommand(go, ['install', pkg], env, spec.progress, within);
        if (code !== 0)
          throw new Error(`go install ${pkg} failed (exit code ${code}):\n${output}\nOr set ${spec.instead}.`);
        const built = pkg.split('@')[0]!.split('/').at(-1)!;
        await rename(join(staging, built), join(staging, binary));
      }
      await mkdir(spec.dir, { recursive: true });
      for (const { binary } of spec.packages) await rename(join(staging, binary), join(spec.dir, binary));
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    spec.progress(`built ${spec.what} into ${spec.dir} in ${Math.round((Date.now() - started) / 1000)} s`);
    return targets;
  } finally {
    await release();
  }
}

/** A main module in `dir` that builds `module@version`'s packages as its own go.mod says. */
async function mainModuleOf(
  go: string,
  module: { path: string; version: string },
  dir: string,
  env: NodeJS.ProcessEnv,
  progress: (line: string) => void,
): Promise<string> {
  const at = `${module.path}@${module.version}`;
  const { code, output } = await runCommand(go, ['mod', 'download', '-json', at], env, () => undefined);
  if (code !== 0) throw new Error(`go mod download ${at} failed (exit code ${code}):\n${output}`);
  const { GoMod, Dir } = JSON.parse(output) as { GoMod: string; Dir: string };
  const goMod = (await readFile(GoMod, 'utf8')).replace(/^module .*$/m, 'module gensvc.local/go-install');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'go.mod'), `${goMod}\nrequire ${module.path} ${module.version}\n`);
  await writeFile(join(dir, 'go.sum'), await readFile(join(Dir, 'go.sum'), 'utf8'));
  progress(`building inside ${dir}: ${at}'s go.mod has replace directives, which go install refuses`);
  return dir;
}
