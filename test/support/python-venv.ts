import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The python of a virtual environment in the gensvc cache holding `packages` (pinned), made on
 * first use (pip from PyPI) and reused after. A missing python3 fails the test that asks.
 */
export async function pythonWith(name: string, packages: readonly string[]): Promise<string> {
  const venv = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'gensvc', name);
  const python = join(venv, 'bin', 'python');
  if (!existsSync(python)) {
    await run('python3', ['-m', 'venv', venv]);
    await run(join(venv, 'bin', 'pip'), ['install', '--quiet', ...packages]);
  }
  return python;
}
