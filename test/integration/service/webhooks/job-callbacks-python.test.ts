/**
 * A callback named on a video through the official openai Python package (`extra_body`, as its
 * users pass a field the package does not type), and its deliveries verified by the package's own
 * Standard Webhooks check with the account's callback secret: test/support/openai-callback.py.
 */
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { pythonWith } from '../../../support/python-venv';
import { startReceiver } from '../../../support/webhook-receiver';
import type { TestReceiver } from '../../../support/webhook-receiver';

const run = promisify(execFile);
const VERSION = '3.57.0';
const script = join(import.meta.dirname, '..', '..', '..', 'support', 'openai-callback.py');

let h: Harness;
let python: string;
let receiver: TestReceiver;
let baseURL: string;
beforeAll(async () => {
  python = await pythonWith(`openai-py-${VERSION}`, [`openai==${VERSION}`]);
  h = await startHarness({ syncWaitMs: 20_000, webhooks: { retryScheduleMs: [300, 600, 1000] } });
  baseURL = `${await h.app.listen({ port: 0, host: '127.0.0.1' })}/v1`;
  receiver = await startReceiver();
}, 240_000);
afterAll(async () => {
  await receiver?.close();
  await h?.close();
});

describe('a callback through the openai Python package', () => {
  it('a video created with extra_body callback_url delivers queued, running and succeeded, each verified by the package', async () => {
    const { key } = await h.account({ credits: 100 });
    const made = await h.call('POST', '/api/v1/webhooks/callback-secret/rotate', { key });
    const { secret } = made.json<{ secret: string }>();

    const created = await run(python, [script, 'create', baseURL, key, receiver.url]);
    const { id } = JSON.parse(created.stdout) as { id: string };
    const got = await receiver.until(3, (r) => r.json.generation_id === id, 60_000);

    const file = join(tmpdir(), `callback-deliveries-${process.pid}.json`);
    await writeFile(
      file,
      JSON.stringify({ secret, deliveries: got.map((r) => ({ body: r.body, headers: r.headers })) }),
    );
    let verified: { stdout: string };
    try {
      verified = await run(python, [script, 'verify', file]);
    } finally {
      await rm(file, { force: true });
    }
    const seen = JSON.parse(verified.stdout) as { event: string; tampered_refused: boolean }[];
    expect(seen.map((s) => s.event).sort()).toEqual([
      'generation.queued',
      'generation.running',
      'generation.succeeded',
    ]);
    expect(seen.every((s) => s.tampered_refused)).toBe(true);
  });
});
