// The safety net of the bench and the fault run, run as its own detached process: if the harness
// process disappears without stopping what it started (SIGKILL, or tsx escalating a Ctrl-C to
// SIGKILL while the harness's event loop is busy), this stops the API and worker children, LiteLLM, the
// Temporal dev server's process group and PostgreSQL, and removes the harness's data folder.
// Plain JavaScript so it starts at once, without a TypeScript loader.
//
//   node deploy/processes/reaper.mjs <harness pid> <data dir> <keep: 0|1>
// and then, on stdin, lines `temporal <pgid>`, `postgres <pid>` (or `postgres-<name> <pid>` for
// another PostgreSQL, such as the Temporal server's), and `<name> <pid>` for every other
// child (`worker`, `api`, `reference`, `litellm`, the cluster's `api-2`, `haproxy`…) as they start
// (a later line for the same name replaces the earlier one: a restarted child).
import { rm } from 'node:fs/promises';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

const [benchPid, dataDir, keep] = [Number(process.argv[2]), process.argv[3], process.argv[4] === '1'];
const targets = new Map();

process.stdin.setEncoding('utf8').on('data', (chunk) => {
  for (const line of chunk.split('\n')) {
    const [name, pid] = line.trim().split(' ');
    if (/^[a-z][a-z0-9-]*$/.test(name ?? '') && Number(pid) > 0) targets.set(name, Number(pid));
  }
});
// The pipe closes when the bench exits, however it exits; keep polling either way.
process.stdin.on('error', () => undefined);

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
};
const send = (pid, signal) => {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
};
const waitGone = async (pid, ms) => {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) if (!alive(pid)) return true;
  return !alive(pid);
};

while (alive(benchPid)) await sleep(250);

const isPostgres = (name) => name === 'postgres' || name.startsWith('postgres-');
const temporal = targets.get('temporal');
const postgresServers = [...targets].filter(([name]) => isPostgres(name)).map(([, pid]) => pid);
const children = [...targets].filter(([name]) => name !== 'temporal' && !isPostgres(name)).map(([, pid]) => pid);
await Promise.all(
  children.map(async (pid) => {
    if (!pid || !alive(pid)) return;
    send(pid, 'SIGTERM');
    if (!(await waitGone(pid, 10_000))) send(pid, 'SIGKILL');
  }),
);
if (temporal && alive(-temporal)) {
  send(-temporal, 'SIGTERM');
  if (!(await waitGone(-temporal, 10_000))) send(-temporal, 'SIGKILL');
}
await Promise.all(
  postgresServers.map(async (postgres) => {
    if (!postgres || !alive(postgres)) return;
    send(postgres, 'SIGINT'); // fast shutdown
    if (!(await waitGone(postgres, 20_000))) send(postgres, 'SIGQUIT');
    if (!(await waitGone(postgres, 5_000))) send(postgres, 'SIGKILL');
  }),
);
if (!keep && dataDir && /\/(bench|faults|cluster)-\d+$/.test(dataDir))
  await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
process.exit(0);
