// The service's entry points as the image runs them: compiled into dist/ by `npm run build`
// (docs/decisions/0101-compiled-build.md). `npm run cluster`, the fault run and the bench start
// these, building first whenever the sources changed since the last build.
import { join } from 'node:path';
import { SERVICE_NODE_FLAGS } from '../../runtime/node-flags';
import { runCommand } from '../../runtime/process';
import { DEFAULT_OUT, readStamp, ROOT, sourcesHash } from '../../scripts/build';

/**
 * `node --max-semi-space-size=8 dist/runtime/api-process.js`: an entry point (`runtime/api-process.ts`)
 * in its compiled form, with the service's V8 flags; `nodeArgs` come after them and so win.
 */
export function compiledCommand(entry: string, nodeArgs: readonly string[] = []): [string, ...string[]] {
  return [process.execPath, ...SERVICE_NODE_FLAGS, ...nodeArgs, join(ROOT, DEFAULT_OUT, entry.replace(/\.ts$/, '.js'))];
}

/**
 * Runs `npm run build` (as its own process, so webpack's memory leaves with it) unless dist/ was
 * built from the sources as they are now.
 */
export async function ensureBuilt(log: (line: string) => void): Promise<void> {
  if ((await readStamp())?.sources === (await sourcesHash())) return;
  log(`compiling the service into ${DEFAULT_OUT}/ (npm run build)…`);
  const { code, output } = await runCommand(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'scripts/build.ts')],
    process.env,
    () => undefined,
    ROOT,
  );
  if (code !== 0) throw new Error(`npm run build failed (exit ${code}):\n${output}`);
}
