/**
 * Outside development mode, webhooks reach public addresses only: an endpoint that is, or
 * resolves to, a private, loopback, link-local, CGNAT, multicast, unspecified or metadata
 * address is refused at registration, and every delivery is checked again at connect time (DNS
 * can change after registration: rebinding). There is no internet here, so 127.0.0.2 stands in
 * for a public host: the production-mode client trusts that one address and nothing else.
 */
import * as dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import type { SafeHttpClient } from '../../../../core/net/safe-http';
import { eventually, startHarness, WEBHOOK_SECRET_KEY } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { startReceiver } from '../../../support/webhook-receiver';
import type { TestReceiver } from '../../../support/webhook-receiver';

const PUBLIC_STAND_IN = '127.0.0.2';
/** What DNS answers at registration (the API's resolver)… */
const atRegistration = new Map<string, string[]>([
  ['public.test', ['93.184.216.34']],
  ['rebind.test', ['93.184.216.34']],
  ['inside.test', ['10.1.2.3']],
  ['sneaky.test', ['93.184.216.34', '192.168.0.7']],
]);
/** …and at delivery (the worker's), where rebind.test has turned into loopback. */
const atDelivery = new Map<string, string>([
  ['public.test', PUBLIC_STAND_IN],
  ['rebind.test', '127.0.0.1'],
]);

const deliveryLookup: LookupFunction = (hostname, options, callback) => {
  const address = atDelivery.get(hostname);
  if (address === undefined) {
    dns.lookup(hostname, options, callback);
    return;
  }
  if (options.all) callback(null, [{ address, family: 4 }]);
  else callback(null, address, 4);
};

let h: Harness;
let production: FastifyInstance;
let http: SafeHttpClient;
let publicHost: TestReceiver;
let internal: TestReceiver;
let internal6: TestReceiver | undefined;
beforeAll(async () => {
  http = createSafeHttpClient({
    policy: { allowPrivateNetworks: false, trustedAddresses: [PUBLIC_STAND_IN] },
    lookup: deliveryLookup,
  });
  h = await startHarness({ webhooks: { http, retryScheduleMs: [60_000] } });
  production = await productionApi(h, {
    webhooks: {
      secretKey: WEBHOOK_SECRET_KEY,
      taskQueue: h.webhookTaskQueue,
      developmentMode: false,
      resolve: async (name) => {
        const known = atRegistration.get(name);
        if (known) return known;
        return (await dns.promises.lookup(name, { all: true })).map((a) => a.address);
      },
    },
  });
  publicHost = await startReceiver({ host: PUBLIC_STAND_IN });
  internal = await startReceiver({ host: '127.0.0.1' });
  internal6 = await startReceiver({ host: '::1' }).catch(() => undefined);
});
afterAll(async () => {
  await Promise.all([publicHost?.close(), internal?.close(), internal6?.close()]);
  await production?.close();
  await h?.close();
  http?.close();
});

const register = (app: FastifyInstance, key: string, url: string) =>
  app.inject({
    method: 'POST',
    url: '/api/v1/webhooks',
    headers: { authorization: `Bearer ${key}` },
    payload: { url },
  });

describe('registration outside development mode', () => {
  it.each([
    ['loopback', 'https://127.0.0.1/hook', /loopback/],
    ['loopback, another one', 'https://127.8.9.10/hook', /loopback/],
    ['RFC 1918 10/8', 'https://10.0.0.1/hook', /private network/],
    ['RFC 1918 172.16/12', 'https://172.16.5.4/hook', /private network/],
    ['RFC 1918 192.168/16', 'https://192.168.1.1/hook', /private network/],
    ['link-local', 'https://169.254.10.20/hook', /link-local/],
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data/', /metadata/],
    ['CGNAT', 'https://100.64.0.1/hook', /carrier-grade NAT/],
    ['multicast', 'https://224.0.0.1/hook', /multicast/],
    ['unspecified', 'https://0.0.0.0/hook', /unspecified/],
    ['IPv6 loopback', 'https://[::1]/hook', /loopback/],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook', /loopback/],
    ['IPv6 link-local', 'https://[fe80::1]/hook', /link-local/],
    ['IPv6 unique-local', 'https://[fd12:3456::1]/hook', /unique-local/],
    ['decimal-encoded loopback', 'https://2130706433/hook', /loopback/],
    ['hex-encoded loopback', 'https://0x7f.1/hook', /loopback/],
    ['a name for loopback', 'https://localhost/hook', /resolves to a loopback/],
    ['a name for a private address', 'https://inside.test/hook', /resolves to a private network/],
    ['a name with one private answer among public ones', 'https://sneaky.test/hook', /resolves to a private network/],
    ['plain http, even to a public host', 'http://public.test/hook', /must be https\./],
    ['plain http to loopback (development mode only)', 'http://127.0.0.1/hook', /must be https\./],
    ['credentials in the URL', 'https://user:pw@public.test/hook', /credentials/],
  ])('refuses %s', async (_label, url, message) => {
    const { key } = await h.account({ credits: 1 });
    const res = await register(production, key, url);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({
      error: { type: 'invalid_request_error', param: 'url', message: expect.stringMatching(message) },
    });
  });

  it('accepts an https URL of a public host', async () => {
    const { key } = await h.account({ credits: 1 });
    expect((await register(production, key, 'https://public.test/hook')).statusCode).toBe(201);
  });
});

describe('deliveries outside development mode', () => {
  const lastAttempt = async (key: string, endpointId: string) =>
    eventually(async () => {
      const res = await h.call('GET', `/api/v1/webhooks/${endpointId}/deliveries`, { key });
      const attempt = res.json<{ data: { attempts: { statusCode: number | null; error: string | null }[] }[] }>()
        .data[0]?.attempts[0];
      return attempt;
    });

  /**
   * An endpoint with a URL registration would refuse here (plain http, a name only the worker's
   * DNS knows): as if it had been registered when it was fine, or by a bug that let it through.
   */
  const planted = async (key: string, url: string): Promise<{ id: string }> => {
    const e = (await register(h.app, key, `http://127.0.0.1:${internal.port}/placeholder`)).json<{ id: string }>();
    await h.pool.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [e.id, url]);
    return e;
  };

  it('reach a public host', async () => {
    const { key } = await h.account({ credits: 1 });
    const e = await planted(key, `http://public.test:${publicHost.port}/hook`);
    await h.call('POST', `/api/v1/webhooks/${e.id}/test`, { key });
    await publicHost.until(1);
    expect(await lastAttempt(key, e.id)).toMatchObject({ statusCode: 200, error: null });
  });

  it.each([
    ['loopback by address', () => `http://127.0.0.1:${internal.port}/hook`, /loopback/],
    ['loopback by name', () => `http://localhost:${internal.port}/hook`, /loopback/],
    ['IPv6 loopback', () => `http://[::1]:${internal6?.port ?? 9}/hook`, /loopback/],
    ['IPv4-mapped loopback', () => `http://[::ffff:127.0.0.1]:${internal.port}/hook`, /loopback/],
    ['decimal-encoded loopback', () => `http://2130706433:${internal.port}/hook`, /loopback/],
  ])('refuse %s at connect time', async (_label, url, message) => {
    const { key } = await h.account({ credits: 1 });
    const created = await register(h.app, key, url());
    expect(created.statusCode, created.body).toBe(201);
    const e = created.json<{ id: string }>();
    const before = internal.received.length + (internal6?.received.length ?? 0);
    await h.call('POST', `/api/v1/webhooks/${e.id}/test`, { key });
    const attempt = await lastAttempt(key, e.id);
    expect(attempt.statusCode).toBeNull();
    expect(attempt.error).toMatch(message);
    expect(internal.received.length + (internal6?.received.length ?? 0)).toBe(before);
  });

  it('refuse a name that resolved to a public address at registration and resolves to loopback now (DNS rebinding)', async () => {
    const { key } = await h.account({ credits: 1 });
    const created = await register(production, key, `https://rebind.test:${internal.port}/hook`);
    expect(created.statusCode, created.body).toBe(201);
    const e = created.json<{ id: string }>();
    const before = internal.received.length;
    await h.call('POST', `/api/v1/webhooks/${e.id}/test`, { key });
    expect(await lastAttempt(key, e.id)).toMatchObject({ statusCode: null, error: expect.stringMatching(/loopback/) });
    expect(internal.received.length).toBe(before);
  });

  it.each([
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data/', /metadata/],
    ['RFC 1918', 'https://10.0.0.1/hook', /private network/],
    ['the unspecified address', 'http://0.0.0.0/hook', /unspecified/],
  ])('refuse %s at connect time, whatever let it into the table', async (_label, url, message) => {
    const { key } = await h.account({ credits: 1 });
    const e = await planted(key, url);
    await h.call('POST', `/api/v1/webhooks/${e.id}/test`, { key });
    const attempt = await lastAttempt(key, e.id);
    expect(attempt).toMatchObject({ statusCode: null, error: expect.stringMatching(message) });
  });

  it('do not follow a redirect, to a private address or anywhere', async () => {
    const { key } = await h.account({ credits: 1 });
    publicHost.behave(() => ({ status: 302, headers: { location: `http://127.0.0.1:${internal.port}/stolen` } }));
    try {
      const e = await planted(key, `http://public.test:${publicHost.port}/hook`);
      const before = internal.received.length;
      await h.call('POST', `/api/v1/webhooks/${e.id}/test`, { key });
      const attempt = await lastAttempt(key, e.id);
      expect(attempt).toMatchObject({ statusCode: 302, error: expect.stringMatching(/redirects are not followed/) });
      expect(internal.received.length).toBe(before);
    } finally {
      publicHost.behave(() => 200);
    }
  });
});
