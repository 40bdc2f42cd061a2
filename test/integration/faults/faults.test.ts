import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../../core/db/pool';
import { freePort } from '../../../runtime/process';
import { startHarness } from '../../support/harness';
import type { Harness } from '../../support/harness';
import { productionApi } from '../../support/production-api';
import { credits, generate, untilFinished } from '../../support/api';
import { startTcpProxy } from '../../support/tcp-proxy';

/**
 * What `npm run faults` (docs/faults.md) found, each held here at the exact moment the fault
 * struck: the service's own app, with the Temporal server or PostgreSQL taken away just then.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('a Temporal server that cannot be reached', () => {
  it('answers an Idempotency-Key repeat 503 with Retry-After, not 500, while Temporal cannot be reached; the generation is left to run', async () => {
    // Found by `npm run faults`: a client that lost an answer and sent its request again, with its
    // key, while the Temporal server restarted got 500 "Internal error": resuming the generation's
    // workflow failed, and that failure was mapped to nothing.
    const { key } = await h.account({ credits: 100 });
    const body = { kind: 'video', model: 'kling', prompt: 'a ferry sim:delay=600' };
    const first = await generate(h, key, body, { 'idempotency-key': 'ferry-1' });
    expect(first.status).toBe(200);
    const id = first.body.generation.id;
    const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, connectTimeout: 500 });
    const app = await productionApi(h, {
      client: new Client({ connection }),
    });
    try {
      const again = await app.inject({
        method: 'POST',
        url: '/api/generate',
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'ferry-1' },
        payload: body,
      });
      expect(again.statusCode).toBe(503);
      expect(again.headers['retry-after']).toBe('1');
      expect(again.json()).toMatchObject({
        error: { type: 'server_error', code: 503, message: expect.stringMatching(/same Idempotency-Key/) },
      });
    } finally {
      await app.close();
      await connection.close();
    }
    // Nothing was given back behind the client's back: the first request's generation runs and is charged once.
    const late = await generate(h, key, body, { 'idempotency-key': 'ferry-1' });
    expect(late.body.generation.id).toBe(id);
    expect(await untilFinished(h, key, id)).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });
    expect(await credits(h, key)).toMatchObject({ balance: 57.5, holdsActive: 0 });
  });
});

describe('PostgreSQL going away in the middle of a request', () => {
  it('answers the admitted generation, not a 503 saying nothing was charged, when PostgreSQL goes away once its workflow has started', async () => {
    // The hold is placed and the workflow started, so the generation will run and be charged;
    // a 503 "nothing was charged" here would send a client without a key to pay twice.
    const { key } = await h.account({ credits: 100 });
    const database = new URL(h.databaseUrl);
    const proxy = await startTcpProxy({ host: database.hostname, port: Number(database.port) });
    database.port = String(proxy.port);
    const pool = createPool(database.toString(), 4);
    // PostgreSQL "goes down" the moment the start returns, before the answer is read back.
    const client = new Client({
      connection: h.client.connection,
      interceptors: {
        workflow: [
          {
            startWithDetails: async (input, next) => {
              const started = await next(input);
              proxy.cut();
              return started;
            },
          },
        ],
      },
    });
    const app = await productionApi(h, {
      pool,
      client,
    });
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/generate',
        headers: { authorization: `Bearer ${key}` },
        payload: { kind: 'video', model: 'kling', prompt: 'a lock gate sim:delay=300', seconds: 5, quality: '720p' },
      });
      expect(res.statusCode, res.body).toBe(202);
      const answered = res.json<{ id: string; status: string; creditsQuoted: number; creditsCharged: number }>();
      expect(answered).toMatchObject({ status: 'queued', creditsQuoted: 42.5, creditsCharged: 0 });
      expect(res.headers.location).toBe(`/api/v1/generations/${answered.id}`);
      proxy.restore();
      expect(await untilFinished(h, key, answered.id)).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });
      expect(await credits(h, key)).toMatchObject({ balance: 57.5, holdsActive: 0 });
    } finally {
      await app.close();
      await pool.end();
      await proxy.close();
    }
  });
});
