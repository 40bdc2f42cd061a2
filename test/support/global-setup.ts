import { mkdir, rm, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../core/db/migrate';
import { startEmbeddedPostgres } from '../../runtime/embedded-postgres';
import { ensureTemporalCli } from '../../runtime/temporal-cli';
import { startTemporalDevServer } from '../../runtime/temporal-dev-server';
import { WORKFLOWS_PATH } from '../../runtime/worker';
import { registerSearchAttributes } from '../../runtime/temporal-setup';
import { Client, Connection } from '@temporalio/client';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalCliPath: string;
    postgresUrl: string;
    templateDatabase: string;
    workflowBundlePath: string;
    testDataDir: string;
  }
}

export const TEMPLATE_DATABASE = 'gensvc_template';

/**
 * One real Temporal dev server and one real PostgreSQL for the whole run, on free ports and in
 * this run's own folder, so a running `npm start` or another test run never collides with it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dataDir = join(process.cwd(), '.test-data', `run-${process.pid}`);
  await rm(dataDir, { recursive: true, force: true });
  await mkdir(dataDir, { recursive: true });
  await chmod(dataDir, 0o755);

  const stops: (() => Promise<unknown>)[] = [];
  const teardown = async () => {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => console.error('teardown:', err));
    await rm(dataDir, { recursive: true, force: true });
  };

  try {
    const [cliPath, bundle] = await Promise.all([
      ensureTemporalCli({ env: process.env }),
      bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger }),
    ]);
    const [temporal, postgres] = await Promise.all([
      startTemporalDevServer({ cliPath, headless: true, logFile: join(dataDir, 'temporal.log') }),
      startEmbeddedPostgres({ dataDir: join(dataDir, 'postgres') }),
    ]);
    stops.push(
      () => temporal.stop(),
      () => postgres.stop(),
    );

    await postgres.ensureDatabase(TEMPLATE_DATABASE);
    const pool = new pg.Pool({ connectionString: postgres.urlFor(TEMPLATE_DATABASE) });
    await migrate(pool);
    await pool.end();

    const connection = await Connection.connect({ address: temporal.address });
    await registerSearchAttributes(new Client({ connection }), 'default');
    await connection.close();

    const bundlePath = join(dataDir, 'workflow-bundle.js');
    await writeFile(bundlePath, bundle.code);

    project.provide('temporalAddress', temporal.address);
    project.provide('temporalCliPath', cliPath);
    project.provide('postgresUrl', postgres.urlFor('postgres'));
    project.provide('templateDatabase', TEMPLATE_DATABASE);
    project.provide('workflowBundlePath', bundlePath);
    project.provide('testDataDir', dataDir);
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (m: string) => console.warn(m),
  error: (m: string) => console.error(m),
};
