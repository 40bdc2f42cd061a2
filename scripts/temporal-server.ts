// The Temporal server as production runs it (not the CLI's dev server): the server binary, its
// schema tool, and the Web UI server, each built from the Go module proxy once into the cache
// folder beside the CLI. `npm run cluster` and `npm run faults -- --topology=cluster` use them.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { findGo, goInstallIntoCache } from '../runtime/go-install';
import { isExecutableFile, runCommand } from '../runtime/process';

/**
 * The newest patch of the server line the CLI v1.9.1 embeds (its go.mod requires
 * go.temporal.io/server v1.32.0); its module embeds the PostgreSQL schemas
 * (schema/postgresql/v12: temporal 1.19, visibility 1.14) the schema tool applies with --schema-name.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.32.2';
/** The UI server the same CLI embeds (github.com/temporalio/ui-server/v2 v2.54.1). */
export const TEMPORAL_UI_VERSION = 'v2.54.1';
/**
 * The server's go.mod asks for Go 1.26.10, newer than the Go installed here: `go` fetches this
 * toolchain from the module proxy for the server's build only (GOTOOLCHAIN in that build's env).
 */
export const TEMPORAL_SERVER_GO_TOOLCHAIN = 'go1.27.3';
/** Switching toolchains by GOTOOLCHAIN came with Go 1.21: an older `go` cannot build the server. */
const OLDEST_GO = [1, 21] as const;

export interface TemporalServerBinaries {
  server: string;
  sqlTool: string;
  ui: string;
}

/** `${GENSVC_CACHE_DIR ?? (XDG_CACHE_HOME ?? ~/.cache)/gensvc}`, the folder every built tool lives in. */
const cacheRoot = (env: NodeJS.ProcessEnv) =>
  env.GENSVC_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(env.HOME ?? homedir(), '.cache'), 'gensvc');
const serverDir = (env: NodeJS.ProcessEnv, version = TEMPORAL_SERVER_VERSION) =>
  join(cacheRoot(env), `temporal-server-${version}`);
const uiDir = (env: NodeJS.ProcessEnv) => join(cacheRoot(env), `temporal-ui-server-${TEMPORAL_UI_VERSION}`);
const INSTEAD = 'TEMPORAL_SERVER_BINARY, TEMPORAL_SQL_TOOL and TEMPORAL_UI_SERVER to existing binaries';

async function explicit(env: NodeJS.ProcessEnv, name: string): Promise<string | undefined> {
  const value = env[name];
  if (!value) return undefined;
  const path = resolve(value);
  if (!(await isExecutableFile(path))) throw new Error(`${name} is set to ${value}, which is not an executable file.`);
  return path;
}

/**
 * What stops `ensureTemporalServer` before it starts, as one line saying how to get it; undefined
 * when the binaries are given or built, or a Go that can build them is there.
 */
export async function temporalServerMissing(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const given = async (name: string, cached: string) =>
    env[name] ? isExecutableFile(resolve(env[name])) : isExecutableFile(cached);
  const ready = await Promise.all([
    given('TEMPORAL_SERVER_BINARY', join(serverDir(env), 'temporal-server')),
    given('TEMPORAL_SQL_TOOL', join(serverDir(env), 'temporal-sql-tool')),
    given('TEMPORAL_UI_SERVER', join(uiDir(env), 'temporal-ui-server')),
  ]);
  if (ready.every(Boolean)) return undefined;
  const build = `to build the Temporal server ${TEMPORAL_SERVER_VERSION} into ${cacheRoot(env)} once`;
  const go = await findGo(env);
  if (!go)
    return `Go is missing (needed ${build}): install Go 1.21 or newer (https://go.dev/doc/install), or set ${INSTEAD}.`;
  const { code, output } = await runCommand(
    go,
    ['env', 'GOVERSION'],
    { ...env, GOTOOLCHAIN: 'local' },
    () => undefined,
  );
  const said = output.trim().split('\n')[0] ?? '';
  const [major = 0, minor = 0] = /^go(\d+)\.(\d+)/.exec(said)?.slice(1).map(Number) ?? [];
  const fix = `install Go 1.21 or newer (https://go.dev/doc/install), or set ${INSTEAD}`;
  if (code !== 0) return `${go} does not run (${said}); Go is needed ${build}: ${fix}.`;
  if (major < OLDEST_GO[0] || (major === OLDEST_GO[0] && minor < OLDEST_GO[1]))
    return `${go} is ${said}, too old ${build} (Go 1.21 fetches ${TEMPORAL_SERVER_GO_TOOLCHAIN} itself): ${fix}.`;
  return undefined;
}

/**
 * TEMPORAL_SERVER_BINARY, TEMPORAL_SQL_TOOL and TEMPORAL_UI_SERVER when set, else the cache
 * folder's, built there first when missing (`go install`, several minutes the first time).
 */
export async function ensureTemporalServer(
  env: NodeJS.ProcessEnv = process.env,
  progress: (line: string) => void = () => undefined,
): Promise<TemporalServerBinaries> {
  const [server, sqlTool, ui] = [
    await explicit(env, 'TEMPORAL_SERVER_BINARY'),
    await explicit(env, 'TEMPORAL_SQL_TOOL'),
    await explicit(env, 'TEMPORAL_UI_SERVER'),
  ];
  const built =
    server && sqlTool ? { server, sqlTool } : await buildTemporalServer(TEMPORAL_SERVER_VERSION, env, progress);
  const [uiBuilt] = ui
    ? [ui]
    : await goInstallIntoCache({
        what: `the Temporal UI server ${TEMPORAL_UI_VERSION}`,
        packages: [
          { pkg: `github.com/temporalio/ui-server/v2/cmd/server@${TEMPORAL_UI_VERSION}`, binary: 'temporal-ui-server' },
        ],
        dir: uiDir(env),
        env,
        progress,
        instead: INSTEAD,
      });
  return { server: server ?? built.server, sqlTool: sqlTool ?? built.sqlTool, ui: uiBuilt! };
}

/**
 * The server and its schema tool at `version` (`v1.29.1`), built into the cache folder once with
 * the pinned toolchain (which builds every line from v1.29 on). The upgrade rehearsal builds the
 * versions it steps through with it.
 */
export async function buildTemporalServer(
  version: string,
  env: NodeJS.ProcessEnv = process.env,
  progress: (line: string) => void = () => undefined,
): Promise<{ server: string; sqlTool: string }> {
  const [server, sqlTool] = await goInstallIntoCache({
    what: `the Temporal server ${version}`,
    packages: [
      { pkg: `go.temporal.io/server/cmd/server@${version}`, binary: 'temporal-server' },
      { pkg: `go.temporal.io/server/cmd/tools/sql@${version}`, binary: 'temporal-sql-tool' },
    ],
    dir: serverDir(env, version),
    env: { ...env, GOTOOLCHAIN: TEMPORAL_SERVER_GO_TOOLCHAIN },
    progress,
    instead: INSTEAD,
  });
  return { server: server!, sqlTool: sqlTool! };
}
