import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Writes a run's JSON to `.test-data/bench-results/latest.json` and a timestamped copy named
 * after `label` (e.g. `peers-full`) beside it; returns the path of latest.json.
 */
export async function writeResults(json: string, label: string): Promise<string> {
  const resultsDir = join(process.cwd(), '.test-data', 'bench-results');
  await mkdir(resultsDir, { recursive: true });
  const latest = join(resultsDir, 'latest.json');
  await writeFile(latest, json);
  await writeFile(
    join(resultsDir, `${new Date().toISOString().replaceAll(':', '-').slice(0, 19)}-${label}.json`),
    json,
  );
  return latest;
}
