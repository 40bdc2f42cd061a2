// `npm run cluster`: the production topology on this machine (deploy/cluster/stack.ts): PostgreSQL,
// the Temporal server on PostgreSQL (persistence and visibility) with its UI, Redis, two API
// processes behind HAProxy, two workflow workers, two provider workers. It prints the one URL
// clients use; Ctrl-C stops everything. Its folder goes with it unless --keep.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createShutdown } from '../../runtime/lifecycle';
import { missingForCluster } from './prerequisites';
import { createClusterStack, CLUSTER_TOPOLOGY } from './stack';

const USAGE = `usage: npm run cluster [-- --port=3000] [-- --ui-port=8233] [-- --keep]
  --port=N     the balancer's port (the one URL clients use; default 3000)
  --ui-port=N  the Temporal UI's port (default 8233)
  --keep       keep .test-data/cluster-<pid>/ (logs, PostgreSQL data, outputs) after the stop`;

function parseArgs(argv: string[]): { port: number; uiPort: number; keep: boolean } {
  const args = { port: 3000, uiPort: 8233, keep: false };
  for (const arg of argv) {
    const [name, value] = arg.split('=');
    if (name === '--port' && Number(value) > 0) args.port = Number(value);
    else if (name === '--ui-port' && Number(value) > 0) args.uiPort = Number(value);
    else if (arg === '--keep') args.keep = true;
    else {
      console.error(arg === '--help' || arg === '-h' ? USAGE : `unknown argument ${arg}\n${USAGE}`);
      process.exit(arg === '--help' || arg === '-h' ? 0 : 2);
    }
  }
  return args;
}

const log = (line: string) => console.error(`[cluster] ${line}`);
const args = parseArgs(process.argv.slice(2));
// Before anything starts or builds: what the cluster needs from this machine, one line each.
const missing = await missingForCluster();
for (const line of missing) log(line);
if (missing.length > 0) process.exit(1);
const dataDir = join(process.cwd(), '.test-data', `cluster-${process.pid}`);
const shutdown = createShutdown(log);
const handle = createClusterStack({
  dataDir,
  port: args.port,
  uiPort: args.uiPort,
  serviceEnv: {},
  log,
  onStartFailure: (name, error) => log(`${name} start failed (${error}); starting it again`),
  onUnexpectedExit: (name, how) => log(`${name} exited on its own (${how}); starting it again`),
});
shutdown.add('cluster', () => handle.stop());
const exit = (code: number) =>
  void (args.keep ? Promise.resolve() : rm(dataDir, { recursive: true, force: true })).finally(() =>
    process.exit(code),
  );
shutdown.onSignals(exit);
shutdown.followParent(exit);

log(`data in ${dataDir}`);
handle.start().then(
  (stack) => {
    const processes = Object.entries(stack.processes())
      .map(([name, pid]) => `${name} ${pid}`)
      .join(', ');
    log(`processes: ${processes}`);
    log(
      `${CLUSTER_TOPOLOGY.api} APIs, ${CLUSTER_TOPOLOGY.workflowWorkers} workflow workers, ${CLUSTER_TOPOLOGY.providerWorkers} provider workers on Temporal ${stack.temporalAddress}`,
    );
    log(`Temporal UI  ${stack.uiUrl}`);
    log(`admin token  ${stack.adminToken}`);
    log(`logs         ${dataDir}/*.log`);
    log('Ctrl-C stops everything.');
    // The one line on stdout: scripts can take it (URL=$(npm run -s cluster | head -1)).
    console.log(stack.baseUrl);
  },
  (err: unknown) => {
    if (!shutdown.stopping)
      log(`the cluster did not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    shutdown.begin(() => exit(1));
  },
);
