// The Temporal server as production runs it (not the CLI's dev server): the server binary, its
// schema tool, and the Web UI server, each built from the Go module proxy once into the cache
// folder beside the CLI. `npm run cluster` and `npm run faults -- --topology=cluster` use them.
import { dirname, join, resolve } from 'node:path';
import { goInstallIntoCache } from '../runtime/go-install';
import { isExecutableFile } from '../runtime/process';
import { cachedTemporalCliPath } from '../runtime/temporal-cli';

/**
 * The server the CLI v1.5.1 embeds (`go version -m` of it lists go.temporal.io/server v1.29.1),
 * so the dev server and this one behave alike; its module embeds the PostgreSQL schemas
 * (schema/postgresql/v12) the schema tool applies with --schema-name.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
/** The UI server the same CLI embeds (github.com/temporalio/ui-server/v2 v2.42.1). */
export const TEMPORAL_UI_VERSION = 'v2.42.1';

export interface TemporalServerBinaries {
  server: string;
  sqlTool: string;
  ui: string;
}

const cacheRoot = (env: NodeJS.ProcessEnv) => dirname(dirname(cachedTemporalCliPath({ env })));

async function explicit(env: NodeJS.ProcessEnv, name: string): Promise<string | undefined> {
  const value = env[name];
  if (!value) return undefined;
  const path = resolve(value);
  if (!(await isExecutableFile(path))) throw new Error(`${name} is set to ${value}, which is not an executable file.`);
  return path;
}

/**
 * TEMPORAL_SERVER_BINARY, TEMPORAL_SQL_TOOL and TEMPORAL_UI_SERVER when set, else the cache
 * folder's, built there first when missing (`go install`, several minutes the first time).
 */
export async function ensureTemporalServer(
  env: NodeJS.ProcessEnv = process.env,
  progress: (line: string) => void = () => undefined,
): Promise<TemporalServerBinaries> {
  const instead = 'TEMPORAL_SERVER_BINARY, TEMPORAL_SQL_TOOL and TEMPORAL_UI_SERVER to existing binaries';
  const [server, sqlTool, ui] = [
    await explicit(env, 'TEMPORAL_SERVER_BINARY'),
    await explicit(env, 'TEMPORAL_SQL_TOOL'),
    await explicit(env, 'TEMPORAL_UI_SERVER'),
  ];
  const built =
    server && sqlTool
      ? [server, sqlTool]
      : await goInstallIntoCache({
          what: `the Temporal server ${TEMPORAL_SERVER_VERSION}`,
          packages: [
            { pkg: `go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`, binary: 'temporal-server' },
            { pkg: `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`, binary: 'temporal-sql-tool' },
          ],
          dir: join(cacheRoot(env), `temporal-server-${TEMPORAL_SERVER_VERSION}`),
          env,
          progress,
          instead,
        });
  const [uiBuilt] = ui
    ? [ui]
    : await goInstallIntoCache({
        what: `the Temporal UI server ${TEMPORAL_UI_VERSION}`,
        packages: [
          { pkg: `github.com/temporalio/ui-server/v2/cmd/server@${TEMPORAL_UI_VERSION}`, binary: 'temporal-ui-server' },
        ],
        dir: join(cacheRoot(env), `temporal-ui-server-${TEMPORAL_UI_VERSION}`),
        env,
        progress,
        instead,
      });
  return { server: server ?? built[0]!, sqlTool: sqlTool ?? built[1]!, ui: uiBuilt! };
}
