// `npm run build`: the service as plain JavaScript in dist/, what the image, the cluster, the fault
// run and the bench run (docs/decisions/0101-compiled-build.md):
//   dist/<floor>/…/*.js (+ .js.map)   every TypeScript file of the service compiled by esbuild, one
//                                     file each, relative imports ending in .js; packages stay imports
//   dist/workflow-bundle.js           the workflows bundled by the Temporal SDK's bundleWorkflowCode,
//   dist/workflow-bundle-traced.js    and again with tracing's workflow interceptors: workers load
//                                     these and never run webpack
//   dist/db/migrations/, dist/api/dashboard/public/, dist/core/media/*.mjs   files read at run time
//   dist/package.json                 the package's name, version and module type
//   dist/build.json                   what it was built from (BUILD_INPUTS' hash), by which Node
// Options: --out=DIR (default dist), --if-changed (nothing to do when DIR was built from these sources).
import { createHash } from 'node:crypto';
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire, isBuiltin } from 'node:module';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { build as esbuild, version as esbuildVersion } from 'esbuild';
import type { Plugin } from 'esbuild';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** The floors of the running service (runtime/ is its composition root); nothing else is compiled. */
export const SERVICE_FLOORS = ['api', 'service', 'core', 'activities', 'machines', 'workflows', 'runtime', 'cli'];
/** Everything a build reads: a change to any of these makes dist/ out of date. */
const BUILD_INPUTS = [
  ...SERVICE_FLOORS,
  'db',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'scripts/build.ts',
];
export const DEFAULT_OUT = 'dist';
export const WORKFLOW_BUNDLE = 'workflow-bundle.js';
export const TRACED_WORKFLOW_BUNDLE = 'workflow-bundle-traced.js';
/** Node 22 is the oldest Node the service supports (package.json engines). */
const TARGET = 'node22';

export interface BuildStamp {
  /** sha256 over the path and content of every file under BUILD_INPUTS. */
  sources: string;
  node: string;
  esbuild: string;
  /** The packages the compiled files import (the image must have them), with Node's built-ins left out. */
  packages: string[];
}

async function filesUnder(path: string): Promise<string[]> {
  const info = await stat(join(ROOT, path)).catch(() => undefined);
  if (!info) return [];
  if (info.isFile()) return [path];
  const entries = await readdir(join(ROOT, path), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(ROOT, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort();
}

/** The hash build.json records: what the sources are now. */
export async function sourcesHash(): Promise<string> {
  const hash = createHash('sha256');
  for (const input of BUILD_INPUTS)
    for (const file of await filesUnder(input)) hash.update(`${file}\0`).update(await readFile(join(ROOT, file)));
  return hash.digest('hex');
}

/** What `out` was built from, or undefined when there is no finished build there. */
export async function readStamp(out = DEFAULT_OUT): Promise<BuildStamp | undefined> {
  try {
    return JSON.parse(await readFile(join(resolve(ROOT, out), 'build.json'), 'utf8')) as BuildStamp;
  } catch {
    return undefined;
  }
}

const isTypeScript = (file: string) => file.endsWith('.ts') && !file.endsWith('.d.ts');
/** Declaration files describe .mjs files for the type checker; nothing reads them at run time. */
const isRuntimeAsset = (file: string) => !file.endsWith('.ts') && !file.endsWith('.d.mts');

/**
 * Keeps every relative import an import (each source file becomes one output file), pointing at
 * the compiled file: `./ledger` → `./ledger.js`, `../core/db` → `../core/db/index.js`. Node's ESM
 * loader wants the full name; the sources leave the extension out (moduleResolution bundler).
 */
const relativeImportsAsJs: Plugin = {
  name: 'relative-imports-as-js',
  setup(build) {
    build.onResolve({ filter: /^\.\.?(\/|$)/ }, async (args) => {
      if (args.kind === 'entry-point' || args.pluginData === 'inner') return undefined;
      const found = await build.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: 'inner',
      });
      if (found.errors.length > 0) return { errors: found.errors };
      const target = found.path.replace(/\.ts$/, '.js');
      let path = relative(dirname(args.importer), target).split(sep).join('/');
      if (!path.startsWith('.')) path = `./${path}`;
      return { path, external: true };
    });
    // A file inside a package without an `exports` map (`@temporalio/common/lib/time`) needs its
    // extension too; a package with one maps its subpaths itself.
    build.onResolve({ filter: /^(@[^/]+\/)?[^./@][^/]*\/./ }, async (args) => {
      if (args.pluginData === 'inner' || isBuiltin(args.path)) return undefined;
      const name = packageOf(args.path);
      const manifest = await packageManifest(name, args.resolveDir);
      if (manifest.exports !== undefined || extname(args.path) !== '') return { path: args.path, external: true };
      // Without an exports map, require's lookup (extensions, index files) finds the same file.
      const file = createRequire(join(args.resolveDir, 'index.js')).resolve(args.path);
      return { path: `${name}/${relative(manifest.dir, file).split(sep).join('/')}`, external: true };
    });
  },
};

const manifests = new Map<string, { dir: string; exports: unknown }>();
/** A package's folder and its `exports` field, as Node would find them from `fromDir`. */
async function packageManifest(name: string, fromDir: string): Promise<{ dir: string; exports: unknown }> {
  let manifest = manifests.get(name);
  if (!manifest) {
    const file = createRequire(join(fromDir, 'index.js')).resolve(`${name}/package.json`);
    const { exports } = JSON.parse(await readFile(file, 'utf8')) as { exports?: unknown };
    manifest = { dir: dirname(file), exports };
    manifests.set(name, manifest);
  }
  return manifest;
}

/** Compiles the service into `out` (replaced only once the new build is complete). */
export async function build(options: { out?: string; log?: (line: string) => void } = {}): Promise<BuildStamp> {
  const log = options.log ?? ((line: string) => console.error(`[build] ${line}`));
  const out = resolve(ROOT, options.out ?? DEFAULT_OUT);
  const staging = `${out}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  const started = performance.now();
  const sources = await sourcesHash();
  try {
    const files = (await Promise.all(SERVICE_FLOORS.map(filesUnder))).flat();
    const result = await esbuild({
      absWorkingDir: ROOT,
      entryPoints: files.filter(isTypeScript),
      outdir: staging,
      outbase: '.',
      bundle: true,
      packages: 'external',
      plugins: [relativeImportsAsJs],
      platform: 'node',
      format: 'esm',
      target: TARGET,
      sourcemap: true,
      sourcesContent: false,
      metafile: true,
      logLevel: 'warning',
    });
    const packages = new Set<string>();
    for (const output of Object.values(result.metafile.outputs))
      for (const i of output.imports)
        if (i.external && !i.path.startsWith('.') && !i.path.startsWith('node:')) packages.add(packageOf(i.path));
    for (const file of [...files.filter(isRuntimeAsset), ...(await filesUnder('db/migrations'))]) {
      await mkdir(dirname(join(staging, file)), { recursive: true });
      await cp(join(ROOT, file), join(staging, file));
    }
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
    await writeFile(
      join(staging, 'package.json'),
      `${JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: 'module' }, null, 2)}\n`,
    );
    log(`compiled ${Object.keys(result.metafile.inputs).length} files in ${ms(started)}`);

    const bundled = performance.now();
    await writeWorkflowBundles(staging);
    log(`workflow bundles in ${ms(bundled)}`);

    const stamp: BuildStamp = {
      sources,
      node: process.version,
      esbuild: esbuildVersion,
      packages: [...packages].sort(),
    };
    await writeFile(join(staging, 'build.json'), `${JSON.stringify(stamp, null, 2)}\n`);
    await rm(out, { recursive: true, force: true });
    await rename(staging, out);
    log(`${relative(ROOT, out) || '.'}/ built in ${ms(started)}`);
    return stamp;
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}

/** The same bundles a worker would otherwise make at start (runtime/bundle-workflows.ts), with source maps inline. */
async function writeWorkflowBundles(out: string): Promise<void> {
  // Imported here: only the traced bundle needs it, and it loads OpenTelemetry's SDK.
  const { WORKFLOW_INTERCEPTORS } = await import('../runtime/tracing');
  const workflowsPath = join(ROOT, 'workflows', 'index.ts');
  const logger = new DefaultLogger('WARN');
  const bundles: [string, string[]][] = [
    [WORKFLOW_BUNDLE, []],
    [TRACED_WORKFLOW_BUNDLE, [WORKFLOW_INTERCEPTORS]],
  ];
  for (const [file, workflowInterceptorModules] of bundles) {
    const { code } = await bundleWorkflowCode({ workflowsPath, workflowInterceptorModules, logger });
    await writeFile(join(out, file), code);
  }
}

/** `@scope/name/sub/path` → `@scope/name`; `name/sub` → `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

const ms = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const outArg = args.find((a) => a.startsWith('--out='))?.slice('--out='.length);
  const unknown = args.filter((a) => a !== '--if-changed' && !a.startsWith('--out='));
  if (unknown.length > 0 || outArg === '') {
    console.error(`unknown argument ${unknown[0] ?? '--out='}\nusage: npm run build [-- --out=DIR] [-- --if-changed]`);
    process.exit(2);
  }
  const out = outArg ?? DEFAULT_OUT;
  if (args.includes('--if-changed') && (await readStamp(out))?.sources === (await sourcesHash())) {
    console.error(`[build] ${out}/ is up to date`);
  } else {
    await build({ out });
  }
}
