// After the stop: any process still running that belongs to this run, found by its data folder
// (the API and worker carry it in DATA_DIR, PostgreSQL and Temporal in their arguments).
import { readdir, readFile } from 'node:fs/promises';
import { processInfo } from '../runtime/process';

export async function leftoverProcesses(dataDir: string): Promise<string[]> {
  const pids = (await readdir('/proc'))
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .filter((pid) => pid !== process.pid);
  const found = await Promise.all(
    pids.map(async (pid) => {
      const info = await processInfo(pid);
      if (!info || info.zombie) return undefined;
      const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
      const ours =
        environ.split('\0').includes(`DATA_DIR=${dataDir}`) || info.args.some((arg) => arg.startsWith(dataDir));
      return ours ? `${info.comm} (pid ${pid})` : undefined;
    }),
  );
  return found.filter((p): p is string => p !== undefined);
}
