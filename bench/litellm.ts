// LiteLLM's proxy, the peer our chat path is measured against: a pinned
// `litellm[proxy]` in a Python virtual environment cached outside the repository, beside the
// Temporal CLI (GENSVC_CACHE_DIR, else $XDG_CACHE_HOME/gensvc, else ~/.cache/gensvc), installed
// once from PyPI with pip; run with one worker, no database, and nothing that reaches past loopback.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { freePort, isExecutableFile, runCommand } from '../runtime/process';
import { cachedTemporalCliPath } from '../runtime/temporal-cli';
import { startEntryProcess } from '../deploy/processes/children';
import type { EntryProcess } from '../deploy/processes/children';

/** The version the peers bench is measured against (docs/benchmark.md). */
export const LITELLM_VERSION = '1.108.7';
const REQUIREMENT = `litellm[proxy]==${LITELLM_VERSION}`;

export class LitellmSetupError extends Error {
  override name = 'LitellmSetupError';
}

export interface LitellmInstall {
  /** The environment's interpreter; LiteLLM runs as `python -m litellm.proxy.proxy_cli`. */
  python: string;
  dir: string;
  /** `python3 --version` of the interpreter the environment was made from, e.g. `3.11`. */
  pythonVersion: string;
}

const quiet = () => undefined;

async function pythonVersion(python: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  try {
    const { code, output } = await runCommand(
      python,
      ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
      env,
      quiet,
    );
    return code === 0 ? output.trim() : undefined;
  } catch {
    return undefined; // not found
  }
}

/**
 * The cached environment, or else a new one: `python3 -m venv` and `pip install` next door, then
 * renamed into place, so an interrupted install never leaves half an environment where the next
 * run would take it. (Run as `python -m …`, an environment works from wherever it was renamed to.)
 * PYTHON picks another interpreter than `python3` on PATH; pip reads its own settings
 * (PIP_INDEX_URL for a mirror).
 */
export async function ensureLitellm(env: NodeJS.ProcessEnv, progress: (line: string) => void): Promise<LitellmInstall> {
  const base = env.PYTHON ?? 'python3';
  const version = await pythonVersion(base, env);
  if (!version)
    throw new LitellmSetupError(
      `Python 3 is needed to install ${REQUIREMENT} for --only=peers: \`${base}\` did not run. Install python3 (with venv) or set PYTHON.`,
    );
  const dir = join(dirname(dirname(cachedTemporalCliPath({ env }))), `litellm-${LITELLM_VERSION}-py${version}`);
  const python = join(dir, 'bin', 'python');
  if (await isExecutableFile(python)) return { python, dir, pythonVersion: version };

  const staging = `${dir}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(dirname(dir), { recursive: true });
  progress(`installing ${REQUIREMENT} into ${dir} (once; about a minute)`);
  const started = Date.now();
  try {
    const step = async (command: string, args: string[], what: string) => {
      const { code, output } = await runCommand(command, args, env, quiet);
      if (code !== 0) throw new LitellmSetupError(`${what} failed (exit code ${code}):\n${output.slice(-4_000)}`);
      return output;
    };
    await step(base, ['-m', 'venv', staging], `${base} -m venv ${staging}`);
    const pip = join(staging, 'bin', 'python');
    await step(
      pip,
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', REQUIREMENT],
      `pip install ${REQUIREMENT}`,
    );
    // What else it resolved to, for whoever compares two runs.
    await writeFile(
      join(staging, 'freeze.txt'),
      await step(pip, ['-m', 'pip', 'freeze', '--disable-pip-version-check'], 'pip freeze'),
    );
    try {
      await rename(staging, dir);
    } catch (err) {
      // Another run finished the same install first: use that one.
      if (!(await isExecutableFile(python))) throw err;
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  progress(`installed ${REQUIREMENT} in ${Math.round((Date.now() - started) / 1000)} s`);
  return { python, dir, pythonVersion: version };
}

export interface LitellmProxy extends EntryProcess {
  baseUrl: string;
  /** LiteLLM's master key: every request authenticates with it (no database, so no virtual keys). */
  masterKey: string;
}

/** Where nothing listens: any request LiteLLM would make past loopback fails at once. */
const NOWHERE = 'http://127.0.0.1:9';

/**
 * LiteLLM's proxy on a free loopback port, `model` routed to `upstreamModel` at `upstreamBaseUrl`
 * (an OpenAI-compatible API), with one uvicorn worker and no database. Its bundled model cost
 * map instead of the one on GitHub (LITELLM_LOCAL_MODEL_COST_MAP), no telemetry, proxies that
 * lead nowhere for anything but loopback, and no access log (our service logs nothing in the
 * bench either). Its own output goes to `<dir>/litellm.log`.
 */
export async function startLitellm(options: {
  install: LitellmInstall;
  dir: string;
  upstreamBaseUrl: string;
  model: string;
  upstreamModel: string;
  onSpawn: (pid: number) => void;
}): Promise<LitellmProxy> {
  const { dir } = options;
  await mkdir(dir, { recursive: true });
  const masterKey = `sk-bench-${process.pid}`;
  const config = {
    model_list: [
      {
        model_name: options.model,
        litellm_params: {
          model: `openai/${options.upstreamModel}`,
          api_base: options.upstreamBaseUrl,
          api_key: 'sk-bench-upstream',
        },
      },
    ],
    general_settings: { master_key: masterKey },
    litellm_settings: { telemetry: false },
  };
  // JSON is YAML, which is what LiteLLM reads.
  await writeFile(join(dir, 'config.yaml'), JSON.stringify(config, null, 2));
  const logging = {
    version: 1,
    disable_existing_loggers: false,
    formatters: { plain: { format: '%(levelname)s %(name)s: %(message)s' } },
    handlers: { stderr: { class: 'logging.StreamHandler', formatter: 'plain', stream: 'ext://sys.stderr' } },
    loggers: {
      uvicorn: { handlers: ['stderr'], level: 'INFO', propagate: false },
      'uvicorn.access': { handlers: ['stderr'], level: 'WARNING', propagate: false },
    },
  };
  await writeFile(join(dir, 'logging.json'), JSON.stringify(logging));
  const port = await freePort();
  const child = await startEntryProcess({
    entry: `litellm ${LITELLM_VERSION}`,
    command: [
      options.install.python,
      '-m',
      'litellm.proxy.proxy_cli',
      '--config',
      join(dir, 'config.yaml'),
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--num_workers',
      '1',
      '--log_config',
      join(dir, 'logging.json'),
    ],
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      LANG: 'C.UTF-8',
      PYTHONUNBUFFERED: '1',
      LITELLM_LOCAL_MODEL_COST_MAP: 'True',
      ...Object.fromEntries(
        ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY'].map((k) => [k, NOWHERE]),
      ),
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
      // As our service gets it from `npm run bench`.
      ...(process.env.MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX } : {}),
    },
    readyText: 'Uvicorn running on',
    readyTimeoutMs: 90_000,
    logFile: join(dir, 'litellm.log'),
    detached: true,
    onSpawn: options.onSpawn,
  });
  return { ...child, baseUrl: `http://127.0.0.1:${port}`, masterKey };
}
