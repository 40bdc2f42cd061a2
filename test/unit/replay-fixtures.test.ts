import { readdir, readFile } from 'node:fs/promises';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { WORKFLOWS_PATH } from '../../runtime/worker';

const FIXTURES = new URL('../fixtures/histories/', import.meta.url);

/**
 * Recorded histories, one per path of the workflow, each as the workflow code of its day wrote
 * it, must replay on the current code: a change that would break workflows already in flight
 * fails here, not in production. Refresh them with `RECORD_HISTORIES=1 npx vitest run test/integration/cancel-and-replay.test.ts`
 * only when a change is deliberately incompatible (and versioned with patching).
 */
describe('recorded workflow histories', () => {
  it('replay on the current workflow code without divergence', async () => {
    const files = (await readdir(FIXTURES)).filter((f) => f.endsWith('.json')).sort();
    expect(files.length).toBeGreaterThanOrEqual(4);
    const histories = await Promise.all(files.map(async (f) => ({
      workflowId: f.replace(/\.json$/, ''),
      history: historyFromJSON(JSON.parse(await readFile(new URL(f, FIXTURES), 'utf8'))),
    })));
    const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: silent });
    const results = [];
    for await (const r of Worker.runReplayHistories({ workflowBundle }, histories)) results.push(r);
    expect(results.map((r) => [r.workflowId, r.error?.message])).toEqual(histories.map((h) => [h.workflowId, undefined]));
  });
});

const noop = () => undefined;
const silent = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };
