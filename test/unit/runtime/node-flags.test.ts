// The V8 flags the service's processes start with: that they cap the young generation of the main
// thread and of a worker thread (the SDK's workflow threads), and that every way of starting the
// service carries them.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compiledCommand } from '../../../deploy/processes/compiled';
import { MAX_SEMI_SPACE_MB, SERVICE_NODE_FLAGS } from '../../../runtime/node-flags';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Allocates short-lived objects fast enough for V8 to grow its young generation as far as allowed, then prints its size. */
const CHURN = `
const v8 = require('node:v8');
let keep = [];
for (let i = 0; i < 2e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 20000) keep = []; }
const s = v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space');
return s.space_size;`;
const SCRIPT = `
const churn = () => {${CHURN}};
const { Worker } = require('node:worker_threads');
const main = churn();
new Worker(${JSON.stringify(`require('node:worker_threads').parentPort.postMessage((() => {${CHURN}})())`)}, { eval: true })
  .once('message', (worker) => console.log(JSON.stringify({ main, worker })));`;

describe('the service processes V8 flags', () => {
  it('cap the new space of the main thread and of a worker thread at two semi-spaces', () => {
    const run = spawnSync(process.execPath, [...SERVICE_NODE_FLAGS, '-e', SCRIPT], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    const sizes = JSON.parse(run.stdout) as { main: number; worker: number };
    const cap = 2 * MAX_SEMI_SPACE_MB * 2 ** 20;
    expect(sizes.main).toBeGreaterThan(0);
    expect(sizes.main).toBeLessThanOrEqual(cap);
    expect(sizes.worker).toBeLessThanOrEqual(cap);
  });

  it('are given to the compiled entry points, the image and npm start alike', () => {
    const flags = SERVICE_NODE_FLAGS.join(' ');
    expect(compiledCommand('runtime/api-process.ts').slice(1, -1)).toEqual(SERVICE_NODE_FLAGS);
    expect(read('Dockerfile')).toContain(`ENV NODE_OPTIONS="${flags}"`);
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toContain(`exec node ${flags} --import tsx runtime/main.ts`);
  });
});
