import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * A secret given in the environment, or else one generated once and kept in DATA_DIR, so a
 * restart on the same data keeps admin tokens and signed URLs valid.
 */
export async function persistentSecret(
  dataDir: string,
  name: string,
  given: string | undefined,
): Promise<{ value: string; generated: boolean }> {
  if (given) return { value: given, generated: false };
  const file = join(dataDir, 'secrets', name);
  try {
    return { value: (await readFile(file, 'utf8')).trim(), generated: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(join(dataDir, 'secrets'), { recursive: true, mode: 0o700 });
  const value = randomBytes(24).toString('base64url');
  await writeFile(file, `${value}\n`, { mode: 0o600, flag: 'wx' }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  return { value: (await readFile(file, 'utf8')).trim(), generated: true };
}
