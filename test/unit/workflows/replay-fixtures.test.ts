import { readdir, readFile } from 'node:fs/promises';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { WORKFLOWS_PATH } from '../../../runtime/worker';

const FIXTURES = new URL('../../fixtures/histories/', import.meta.url);

/**
 * Recorded histories, one per path of the workflow, must replay on the current code: those the
 * current code recorded (current/) and those of the code deployed before it (previous/), which
 * stand for workflows still open when this code is deployed. A change that would break them fails
 * here, not in production. Record the current code's paths with `RECORD_HISTORIES=1 npx vitest run
 * test/integration/service/generation/cancel-and-replay.test.ts test/integration/service/generation/video-slots.test.ts test/integration/service/upstream-callbacks/upstream-callbacks.test.ts
 * test/integration/api/group-b/batches-sdk.test.ts test/integration/core/providers/upstream-fallback.test.ts`;
 * docs/operations.md ("Retiring replay-only code") says when a folder is retired.
 */
describe('recorded workflow histories', () => {
  it('of the current and the previous workflow code replay on the current code without divergence', async () => {
    const histories = [];
    for (const folder of ['previous', 'current']) {
      const dir = new URL(`${folder}/`, FIXTURES);
      const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
      expect(files.length, folder).toBeGreaterThanOrEqual(4);
      for (const f of files) {
        histories.push({
          workflowId: `${folder}/${f.replace(/\.json$/, '')}`,
          history: historyFromJSON(JSON.parse(await readFile(new URL(f, dir), 'utf8'))),
        });
      }
    }
    const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: silent });
    const results = [];
    for await (const r of Worker.runReplayHistories({ workflowBundle }, histories)) results.push(r);
    expect(results.map((r) => [r.workflowId, r.error?.message])).toEqual(
      histories.map((h) => [h.workflowId, undefined]),
    );
  });
});

const noop = () => undefined;
const silent = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };
