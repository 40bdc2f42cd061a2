// Test servers built from source with `go install` into the cache beside the Temporal CLI's
// (~/.cache/gensvc), never into the repository: nothing may be downloaded at run time, but the Go
// module proxy is reachable when they are built.
import { spawn } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { isExecutableFile, OutputTail } from '../runtime/process';

/**
 * `go install <module>` into `target` (a static binary named `binary`). Built next door and renamed
 * into place: an interrupted build never leaves a truncated binary, and two builds at once both end
 * with a whole one.
 */
export async function goInstall(o: {
  module: string;
  binary: string;
  target: string;
  env: NodeJS.ProcessEnv;
  progress: (line: string) => void;
  missingGo: string;
  fail: (message: string) => Error;
}): Promise<void> {
  const go = await findGo(o.env);
  if (!go) throw o.fail(o.missingGo);
  const staging = `${dirname(o.target)}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  o.progress(`building ${o.module} with ${go} (a few minutes the first time)`);
  try {
    const { code, output } = await run(go, ['install', o.module], { ...o.env, GOBIN: staging, CGO_ENABLED: '0' });
    if (code !== 0) throw o.fail(`go install ${o.module} failed (exit code ${code}):\n${output}`);
    await mkdir(dirname(o.target), { recursive: true });
    await rename(join(staging, o.binary), o.target);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function findGo(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const candidates = (env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, 'go'));
  candidates.push('/usr/local/go/bin/go');
  for (const candidate of candidates) if (await isExecutableFile(candidate)) return candidate;
  return undefined;
}

async function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  const output = new OutputTail(20_000);
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolvePromise({ code, output: output.toString() }));
  });
}
