// Where a process's CPU goes while it serves a load (the profile of docs/benchmark.md): per thread from /proc,
// and per code area from a sampling profile — V8's own (`--cpu-prof`, one file per JS thread, cut
// to the load's window on the monotonic clock both processes share) for our Node service, py-spy
// (PyPI, cached like LiteLLM) for LiteLLM's Python.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, sep } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { treeCpuMs } from './procfs';
import { runCommand } from '../runtime/process';

export const PY_SPY_VERSION = '0.4.1';

/** CPU ms of every thread of `pid`, summed by thread name (libuv workers, V8 helpers, tokio…). */
export async function threadCpuMs(pid: number): Promise<Record<string, number>> {
  const tickMs = 1000 / 100; // USER_HZ is 100 on Linux.
  const out: Record<string, number> = {};
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    const close = stat.lastIndexOf(')');
    if (close < 0) continue;
    const name = stat.slice(stat.indexOf('(') + 1, close).replace(/\d+$/, '#');
    const fields = stat.slice(close + 2).split(' ');
    out[name] = (out[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) * tickMs;
  }
  return out;
}

export function minusThreads(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

const DRAIN_STEP_MS = 500;
/** Below this share of one core, the trees are idle (ours burns about 1 % doing nothing). */
const IDLE_SHARE = 0.08;

/**
 * Waits until the process trees are idle again (CPU under 8 % of a core over half a second), at
 * most `limitMs`; answers how long it took. Our answers precede their workflows' last steps, so a
 * load's cost is only all counted once this returns.
 */
export async function waitUntilIdle(pids: readonly number[], limitMs: number): Promise<number> {
  const start = performance.now();
  const cpu = async () => {
    let sum = 0;
    for (const pid of pids) sum += await treeCpuMs(pid);
    return sum;
  };
  for (let last = await cpu(); performance.now() - start < limitMs;) {
    await sleep(DRAIN_STEP_MS);
    const now = await cpu();
    if (now - last < DRAIN_STEP_MS * IDLE_SHARE) break;
    last = now;
  }
  return performance.now() - start;
}

/** The monotonic clock in µs: what V8 stamps its profile samples with (CLOCK_MONOTONIC, as process.hrtime). */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The area a JS function belongs to: one of our folders, a package (family), Node's own JS, or V8's. */
export function areaOfScript(url: string, functionName: string, root: string): string | undefined {
  if (url === '') {
    if (functionName === '(garbage collector)') return 'V8: garbage collection';
    if (functionName === '(program)') return 'V8: compiled code and runtime outside JS';
    return undefined; // (idle), (root)
  }
  if (url.startsWith('node:')) return 'Node core (JS)';
  // The Temporal SDK runs workflows from its webpack bundle under this script name (the worker's
  // bundle is made out of process into a temporary gensvc-workflows-* folder).
  if (/workflow-bundle-[0-9a-f]+\.js$/.test(url) || /gensvc-workflows-[^/]+\/workflows\.js$/.test(url))
    return 'workflow bundle (our workflow and machine, XState, the SDK in its sandbox)';
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf(`${sep}node_modules${sep}`);
  if (nm >= 0) {
    const parts = path.slice(nm + 14).split(sep);
    const pkg = parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
    return packageFamily(pkg);
  }
  if (path.startsWith(root)) {
    const folder = path.slice(root.length + 1).split(sep)[0];
    return `ours: ${folder === 'machines' ? 'workflows' : folder}/`;
  }
  return 'other';
}

const FAMILIES: [RegExp, string][] = [
  [/^@temporalio\//, 'Temporal SDK (JS side of the core bridge)'],
  [
    /^(fastify|@fastify\/|find-my-way|avvio|light-my-request|fast-json-stringify|fast-querystring|fastify-plugin|fast-uri|ajv|secure-json-parse|toad-cache)/,
    'Fastify and its JSON',
  ],
  [/^(pg|pg-protocol|pg-pool|pg-types|postgres-)/, 'PostgreSQL driver (pg)'],
  [/^(zod|fastify-type-provider-zod)$/, 'zod'],
  [/^(pino|pino-|sonic-boom|thread-stream|fast-redact)/, 'logging (pino)'],
  [/^xstate$/, 'XState'],
  [/^(protobufjs|@protobufjs\/|long)$/, 'protobuf'],
  [/^(tsx|esbuild|get-tsconfig)$/, 'tsx loader'],
  [/^prom-client$/, 'metrics (prom-client)'],
];
const packageFamily = (pkg: string): string => FAMILIES.find(([re]) => re.test(pkg))?.[1] ?? `package: ${pkg}`;

/**
 * Self time by area in the V8 profiles of `dir` (written at exit by `--cpu-prof`), counting only
 * samples stamped inside [fromUs, toUs].
 */
export async function v8Breakdown(
  dir: string,
  window: { fromUs: number; toUs: number },
  root: string,
): Promise<{ byArea: Record<string, number>; threads: number }> {
  const byArea: Record<string, number> = {};
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.cpuprofile'));
  let threads = 0;
  for (const file of files) {
    const profile = JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile;
    const area = new Map(
      profile.nodes.map((n) => [n.id, areaOfScript(n.callFrame.url, n.callFrame.functionName, root)]),
    );
    let t = profile.startTime;
    let counted = false;
    for (let i = 0; i < profile.samples.length; i++) {
      t += profile.timeDeltas[i] ?? 0;
      const next = profile.timeDeltas[i + 1] ?? 0;
      if (t < window.fromUs || t > window.toUs) continue;
      const a = area.get(profile.samples[i]!);
      if (a === undefined) continue;
      byArea[a] = (byArea[a] ?? 0) + next / 1000;
      counted = true;
    }
    if (counted) threads++;
  }
  return { byArea, threads };
}

/** py-spy in its own virtual environment beside LiteLLM's, installed once from PyPI. */
export async function ensurePySpy(python: string, progress: (line: string) => void): Promise<string> {
  const dir = join(process.env.GENSVC_CACHE_DIR ?? join(homedir(), '.cache', 'gensvc'), `py-spy-${PY_SPY_VERSION}`);
  const bin = join(dir, 'bin', 'py-spy');
  if (existsSync(bin)) return bin;
  progress(`installing py-spy ${PY_SPY_VERSION} into ${dir}`);
  for (const [command, args] of [
    [python, ['-m', 'venv', dir]],
    [
      join(dir, 'bin', 'python'),
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-q', `py-spy==${PY_SPY_VERSION}`],
    ],
  ] as const) {
    const { code, output } = await runCommand(command, [...args], process.env, () => undefined);
    if (code !== 0) throw new Error(`${command} ${args.join(' ')} failed (${code}): ${output.slice(-2000)}`);
  }
  return bin;
}

/** Samples `pid` for `seconds` (non-blocking, so LiteLLM is not paused); resolves with the raw (collapsed) stacks file. */
export function recordPySpy(pySpy: string, pid: number, seconds: number, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      pySpy,
      [
        'record',
        '--pid',
        String(pid),
        '--duration',
        String(seconds),
        '--rate',
        '200',
        '--nonblocking',
        '--full-filenames',
        '--format',
        'raw',
        '--output',
        file,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`py-spy exited ${code}: ${err.slice(-1000)}`)),
    );
  });
}

/** Share of py-spy's samples by the area of the innermost frame (its package, or Python's own library). */
export async function pySpyBreakdown(file: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  let total = 0;
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    const space = line.lastIndexOf(' ');
    if (space < 0) continue;
    const n = Number(line.slice(space + 1));
    const leaf = line.slice(0, space).split(';').at(-1) ?? '';
    const path = /\(([^():]+):\d+\)$/.exec(leaf)?.[1] ?? '';
    const area = areaOfPython(path);
    counts[area] = (counts[area] ?? 0) + n;
    total += n;
  }
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / total]));
}

function areaOfPython(path: string): string {
  const site = path.indexOf('site-packages/');
  if (site >= 0) {
    const pkg = path
      .slice(site + 14)
      .split('/')[0]!
      .replace(/\.py$/, '');
    if (pkg === 'litellm') {
      const sub = path.slice(site + 14).split('/')[1] ?? '';
      return sub === 'proxy' ? 'LiteLLM: proxy' : 'LiteLLM: core';
    }
    if (['fastapi', 'starlette'].includes(pkg)) return 'FastAPI / Starlette';
    if (['uvicorn', 'httptools', 'uvloop', 'h11'].includes(pkg)) return 'uvicorn (HTTP server)';
    if (['httpx', 'httpcore', 'aiohttp', 'anyio', 'openai'].includes(pkg))
      return 'HTTP client (openai, httpx, aiohttp)';
    if (['pydantic', 'pydantic_core'].includes(pkg)) return 'pydantic';
    return `package: ${pkg}`;
  }
  if (path.includes('/asyncio/')) return 'asyncio';
  if (path === '') return 'native / unknown';
  return 'Python standard library';
}
