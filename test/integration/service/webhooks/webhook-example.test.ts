/**
 * The example receiver people copy (examples/webhook-receiver/receiver.mjs), run as they would
 * run it (plain node, no dependencies) and delivered to by the service.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../../runtime/process';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

let h: Harness;
let receiver: ChildProcess | undefined;
let output = '';
beforeAll(async () => {
  h = await startHarness({ webhooks: { retryScheduleMs: [200, 500, 1000] } });
});
afterAll(async () => {
  if (receiver && receiver.exitCode === null) {
    const gone = new Promise((resolve) => receiver!.once('exit', resolve));
    receiver.kill('SIGTERM');
    await gone;
  }
  await h?.close();
});

const lines = () =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('examples/webhook-receiver', () => {
  it('verifies real deliveries, drops a duplicate, refuses a tampered one', async () => {
    const { key } = await h.account({ credits: 20 });
    const port = await freePort();
    const created = await h.call('POST', '/api/v1/webhooks', { key, body: { url: `http://127.0.0.1:${port}/` } });
    const { id, secret } = created.json<{ id: string; secret: string }>();

    receiver = spawn(process.execPath, ['examples/webhook-receiver/receiver.mjs'], {
      env: { PATH: process.env.PATH, WEBHOOK_SECRET: secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    receiver.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    receiver.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(async () => (output.includes('listening on') ? true : undefined), 10_000);

    const gen = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'for the example' },
    });
    const generationId = gen.json<{ id: string }>().id;
    const first = await eventually(async () => lines().find((l) => l.event === 'generation.completed'));
    expect(first).toMatchObject({ verified: true, duplicate: false, id: generationId });

    // A replay arrives with the same delivery id: the receiver drops it and still answers 2xx.
    await h.call('POST', `/api/v1/webhooks/${id}/deliveries/${String(first.delivery)}/redeliver`, { key });
    expect(await eventually(async () => lines().find((l) => l.duplicate === true))).toMatchObject({
      verified: true,
      delivery: first.delivery,
    });
    const attempts = await eventually(async () => {
      const [d] = (await h.call('GET', `/api/v1/webhooks/${id}/deliveries`, { key })).json<{
        data: { attempts: { statusCode: number }[] }[];
      }>().data;
      return d && d.attempts.length >= 2 ? d.attempts : undefined;
    });
    expect(attempts.map((a) => a.statusCode)).toEqual([204, 204]);

    // Someone else's request (a forged or altered body) is refused.
    const t = Math.floor(Date.now() / 1000);
    const forged = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-service-signature': `t=${t},v1=${'0'.repeat(64)}`,
        'x-service-delivery': 'whd_forged',
      },
      body: JSON.stringify({ event: 'generation.completed', generation: { id: generationId, creditsCharged: 0 } }),
    });
    expect(forged.status).toBe(400);
    expect(await eventually(async () => lines().find((l) => l.verified === false))).toEqual({ verified: false });
  });
});
