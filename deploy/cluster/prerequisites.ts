// What the production topology needs from this machine, checked before anything starts or builds:
// a missing piece is one line saying how to get it, not a failure minutes into the start-up
// (`spawn haproxy ENOENT` once the server was built and PostgreSQL was up).
import { delimiter, join } from 'node:path';
import { isExecutableFile } from '../../runtime/process';
import { temporalServerMissing } from '../../scripts/temporal-server';

/** The programs the stack runs from PATH (deploy/cluster/stack.ts), and how to install each. */
const ON_PATH = [
  { program: 'haproxy', install: 'apt-get install -y haproxy' },
  { program: 'redis-server', install: 'apt-get install -y redis-server' },
] as const;

async function onPath(env: NodeJS.ProcessEnv, program: string): Promise<boolean> {
  const dirs = (env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const dir of dirs) if (await isExecutableFile(join(dir, program))) return true;
  return false;
}

/** One line per missing piece, each saying how to get it; empty when the cluster can start. */
export async function missingForCluster(env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const missing: string[] = [];
  for (const { program, install } of ON_PATH)
    if (!(await onPath(env, program))) missing.push(`${program} is not on PATH: ${install}`);
  const temporal = await temporalServerMissing(env);
  if (temporal) missing.push(temporal);
  return missing;
}
