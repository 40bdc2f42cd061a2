import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as dns from 'node:dns';
import * as http from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import {
  FetchTimeoutError,
  OutboundNetworkError,
  ResponseTooLargeError,
  TooManyRedirectsError,
  UnsafeAddressError,
  UnsafeUrlError,
} from '../../../../core/net/errors';
import { createSafeHttpClient, WEBHOOK_DELIVERY, type SafeHttpClient } from '../../../../core/net/safe-http';

/**
 * Real sockets throughout. Two local servers on one port: the "origin" on 127.0.0.2, which the
 * production-mode client trusts (standing in for a public host, since there is no internet
 * here), and the "internal" one on 127.0.0.1, which it must never reach. Every refusal below is
 * made by the client's connect-time check; the internal server counts what got through.
 */
interface TestServer {
  host: string;
  port: number;
  requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

async function startServer(
  host: string,
  port: number,
  handle: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void,
): Promise<TestServer> {
  const requests: TestServer['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handle(req, res, body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    host,
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function originHandler(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
  const url = new URL(req.url ?? '/', 'http://origin');
  switch (url.pathname) {
    case '/ok':
      res.end('hello from origin');
      return;
    case '/redirect':
      res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('to') ?? '/ok' });
      res.end('moved');
      return;
    case '/chain': {
      const left = Number(url.searchParams.get('left'));
      if (left === 0) res.end('end of chain');
      else res.writeHead(302, { location: `/chain?left=${left - 1}` }).end();
      return;
    }
    case '/bytes': {
      // Chunked, no Content-Length: only counting the bytes can stop it.
      const total = Number(url.searchParams.get('n'));
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      for (let sent = 0; sent < total; sent += chunk.length)
        res.write(chunk.subarray(0, Math.min(chunk.length, total - sent)));
      res.end();
      return;
    }
    case '/announces-huge':
      // Announces 50 MB and then sends nothing: the header alone must be enough to refuse.
      res.writeHead(200, { 'content-length': String(50 * 1024 * 1024) });
      res.flushHeaders();
      return;
    case '/hang':
      return;
    case '/echo':
      res.writeHead(Number(url.searchParams.get('status') ?? 200), { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, body, signature: req.headers['x-service-signature'] ?? null }));
      return;
    default:
      res.writeHead(404).end();
  }
}

let origin: TestServer;
let internal: TestServer;
let port: number;

/** DNS as the tests need it; names it does not know go to the real resolver (`localhost`). */
const names = new Map<string, () => string[]>();
let lookupCalls: string[] = [];
const fakeDns: LookupFunction = (hostname, options, callback) => {
  lookupCalls.push(hostname);
  if (hostname === 'never-answers.test') return;
  const answer = names.get(hostname);
  if (answer === undefined) {
    dns.lookup(hostname, options, callback);
    return;
  }
  const entries = answer().map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  if (options.all) callback(null, entries);
  else callback(null, entries[0]!.address, entries[0]!.family);
};

function resolve(hostname: string, ...addresses: string[]): void {
  names.set(hostname, () => addresses);
}

/** Answers the trusted origin once, then the internal address: DNS rebinding. */
function rebinding(hostname: string): void {
  let calls = 0;
  names.set(hostname, () => [++calls === 1 ? '127.0.0.2' : '127.0.0.1']);
}

let production: SafeHttpClient;
let development: SafeHttpClient;

beforeAll(async () => {
  origin = await startServer('127.0.0.2', 0, originHandler);
  port = origin.port;
  internal = await startServer('127.0.0.1', port, (_req, res) => res.end('internal secret'));
  production = createSafeHttpClient({
    policy: { allowPrivateNetworks: false, trustedAddresses: ['127.0.0.2'] },
    lookup: fakeDns,
  });
  development = createSafeHttpClient({ policy: { allowPrivateNetworks: true }, lookup: fakeDns });
});

afterAll(async () => {
  production.close();
  development.close();
  await Promise.all([origin.close(), internal.close()]);
});

beforeEach(() => {
  internal.requests.length = 0;
  lookupCalls = [];
  names.clear();
  resolve('origin.test', '127.0.0.2');
});

const fast = { timeoutMs: 3000 };

async function refusal(promise: Promise<unknown>): Promise<UnsafeAddressError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the request to be refused');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UnsafeAddressError);
  return error as UnsafeAddressError;
}

describe('the trusted origin (stand-in for a public host)', () => {
  it('is reached by name and by address', async () => {
    const byName = await production.request(`http://origin.test:${port}/ok`, fast);
    expect(byName).toMatchObject({ status: 200, url: `http://origin.test:${port}/ok` });
    expect(byName.body.toString()).toBe('hello from origin');
    const byAddress = await production.request(`http://127.0.0.2:${port}/ok`, fast);
    expect(byAddress.body.toString()).toBe('hello from origin');
  });
});

describe('refused destinations (production mode)', () => {
  it('refuses the live loopback server, which development mode reaches', async () => {
    const error = await refusal(production.request(`http://127.0.0.1:${port}/`, fast));
    expect(error.addressClass).toBe('loopback');
    expect(error.message).not.toContain('127.0.0.1');
    expect(internal.requests).toHaveLength(0);

    const reached = await development.request(`http://127.0.0.1:${port}/`, fast);
    expect(reached.body.toString()).toBe('internal secret');
  });

  it.each([
    ['http://10.0.0.1/', 'private'],
    ['http://10.255.255.254/', 'private'],
    ['http://172.16.0.1/', 'private'],
    ['http://172.31.255.255/', 'private'],
    ['http://192.168.1.1/', 'private'],
    ['http://169.254.169.254/latest/meta-data/', 'metadata'],
    ['http://169.254.1.1/', 'linkLocal'],
    ['http://100.64.0.1/', 'carrierGradeNat'],
    ['http://224.0.0.1/', 'multicast'],
    ['http://255.255.255.255/', 'broadcast'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://192.0.2.1/', 'reserved'],
    // Numeric spellings of 127.0.0.1, which the URL parser rewrites before the guard sees them.
    ['http://2130706433/', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://0177.0.0.1/', 'loopback'],
    ['http://127.1/', 'loopback'],
    ['http://0x7f000001/', 'loopback'],
    ['http://[::1]/', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://[::ffff:7f00:1]/', 'loopback'],
    ['http://[::ffff:10.0.0.1]/', 'private'],
    ['http://[::ffff:169.254.169.254]/', 'metadata'],
    ['http://[::127.0.0.1]/', 'ipv4Compatible'],
    ['http://[::]/', 'unspecified'],
    ['http://[fc00::1]/', 'uniqueLocal'],
    ['http://[fd12:3456::1]/', 'uniqueLocal'],
    ['http://[fd00:ec2::254]/', 'metadata'],
    ['http://[fe80::1]/', 'linkLocal'],
    ['http://[ff02::1]/', 'multicast'],
    ['http://[64:ff9b::7f00:1]/', 'loopback'],
    ['http://[64:ff9b::a9fe:a9fe]/', 'metadata'],
    ['http://[2002:7f00:1::1]/', 'reserved'],
  ])('%s is refused as %s', async (url, addressClass) => {
    const error = await refusal(production.request(url, fast));
    expect(error.addressClass).toBe(addressClass);
  });

  it.each([
    ['10.1.2.3', 'private'],
    ['172.20.0.5', 'private'],
    ['192.168.0.10', 'private'],
    ['169.254.169.254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['100.80.0.1', 'carrierGradeNat'],
    ['239.1.1.1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['fd00:ec2::254', 'metadata'],
    ['fc00::5', 'uniqueLocal'],
    ['::', 'unspecified'],
  ])('a host name resolving to %s is refused as %s', async (address, addressClass) => {
    resolve('evil.test', address);
    const error = await refusal(production.request(`http://evil.test:${port}/`, fast));
    expect(error.addressClass).toBe(addressClass);
    expect(error.message).not.toContain(address);
  });

  it('refuses localhost, resolved by the real resolver', async () => {
    const error = await refusal(production.request(`http://localhost:${port}/`, fast));
    expect(error.addressClass).toBe('loopback');
    expect(lookupCalls).toContain('localhost');
    expect(internal.requests).toHaveLength(0);
  });

  it('refuses a name when any one of its answers is refused', async () => {
    resolve('mixed.test', '127.0.0.2', '10.0.0.1');
    await refusal(production.request(`http://mixed.test:${port}/ok`, fast));
  });
});

describe('checks happen at connect time', () => {
  it('resolves once per connection and connects to the answer it checked', async () => {
    await production.request(`http://origin.test:${port}/ok`, fast);
    expect(lookupCalls).toEqual(['origin.test']);
  });

  it('refuses a name that answered with an allowed address before and a private one now', async () => {
    rebinding('rebind.test');
    const first = await production.request(`http://rebind.test:${port}/ok`, fast);
    expect(first.body.toString()).toBe('hello from origin');
    const error = await refusal(production.request(`http://rebind.test:${port}/ok`, fast));
    expect(error.addressClass).toBe('loopback');
    expect(internal.requests).toHaveLength(0);
  });

  it('refuses a redirect back to the same name once it resolves to a private address', async () => {
    rebinding('rebind-redirect.test');
    const error = await refusal(
      production.request(`http://rebind-redirect.test:${port}/redirect?to=/ok`, { ...fast, redirect: { follow: 3 } }),
    );
    expect(error.addressClass).toBe('loopback');
    expect(lookupCalls).toEqual(['rebind-redirect.test', 'rebind-redirect.test']);
    expect(internal.requests).toHaveLength(0);
  });

  // A lookup that never answers would otherwise hang the request for good (the test's timeout
  // then fails it).
  it('counts DNS in the timeout', async () => {
    const error = await production.request('http://never-answers.test/', { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchTimeoutError);
    expect(error).toMatchObject({ timeoutMs: 300 });
  });
});

describe('https', () => {
  it('guards the TLS agent the same way, for addresses and for names', async () => {
    expect((await refusal(production.request(`https://127.0.0.1:${port}/`, fast))).addressClass).toBe('loopback');
    expect((await refusal(production.request('https://[fd00:ec2::254]/', fast))).addressClass).toBe('metadata');
    expect((await refusal(production.request(`https://localhost:${port}/`, fast))).addressClass).toBe('loopback');
    rebinding('rebind-tls.test');
    // The first answer is allowed, so it connects; the origin speaks plain HTTP, so TLS fails.
    await expect(production.request(`https://rebind-tls.test:${port}/`, fast)).rejects.toBeInstanceOf(
      OutboundNetworkError,
    );
    expect((await refusal(production.request(`https://rebind-tls.test:${port}/`, fast))).addressClass).toBe('loopback');
    expect(internal.requests).toHaveLength(0);
  });
});

describe('redirects', () => {
  const follow = { ...fast, redirect: { follow: 3 } } as const;

  it('follows up to the limit and reports the final URL', async () => {
    const response = await production.request(`http://origin.test:${port}/chain?left=3`, follow);
    expect(response.body.toString()).toBe('end of chain');
    expect(response.url).toBe(`http://origin.test:${port}/chain?left=0`);
    await expect(production.request(`http://origin.test:${port}/chain?left=4`, follow)).rejects.toBeInstanceOf(
      TooManyRedirectsError,
    );
  });

  it.each([
    [`http://127.0.0.1:PORT/`, 'loopback'],
    [`http://localhost:PORT/`, 'loopback'],
    [`http://[::ffff:127.0.0.1]:PORT/`, 'loopback'],
    [`http://2130706433:PORT/`, 'loopback'],
    ['http://169.254.169.254/latest/meta-data/iam/', 'metadata'],
    ['http://10.0.0.1/', 'private'],
  ])('refuses a redirect from the allowed origin to %s', async (target, addressClass) => {
    const to = encodeURIComponent(target.replace('PORT', String(port)));
    const error = await refusal(production.request(`http://origin.test:${port}/redirect?to=${to}`, follow));
    expect(error.addressClass).toBe(addressClass);
    expect(internal.requests).toHaveLength(0);
  });

  it('refuses a redirect to another scheme', async () => {
    const to = encodeURIComponent('file:///etc/passwd');
    await expect(production.request(`http://origin.test:${port}/redirect?to=${to}`, follow)).rejects.toBeInstanceOf(
      UnsafeUrlError,
    );
  });

  it('turns a POST into a GET after a 303 and keeps it after a 307', async () => {
    const seeOther = await production.request(`http://origin.test:${port}/redirect?status=303&to=/echo`, {
      ...follow,
      method: 'POST',
      body: 'payload',
    });
    expect(JSON.parse(seeOther.body.toString())).toMatchObject({ method: 'GET', body: '' });
    const temporary = await production.request(`http://origin.test:${port}/redirect?status=307&to=/echo`, {
      ...follow,
      method: 'POST',
      body: 'payload',
    });
    expect(JSON.parse(temporary.body.toString())).toMatchObject({ method: 'POST', body: 'payload' });
  });

  it('does not carry credentials to another origin', async () => {
    const to = encodeURIComponent(`http://127.0.0.2:${port}/echo`);
    await production.request(`http://origin.test:${port}/redirect?to=${to}`, {
      ...follow,
      headers: { Authorization: 'Bearer secret' },
    });
    const hops = origin.requests.slice(-2);
    expect(hops[0]!.headers.authorization).toBe('Bearer secret');
    expect(hops[1]!.headers.authorization).toBeUndefined();
  });
});

describe('webhook delivery mode', () => {
  it('posts the body and hands back any status, a redirect included, without following it', async () => {
    const delivered = await production.request(`http://origin.test:${port}/echo?status=500`, {
      ...WEBHOOK_DELIVERY,
      headers: { 'content-type': 'application/json', 'x-service-signature': 't=1,v1=abc' },
      body: '{"event":"generation.completed"}',
    });
    expect(delivered.status).toBe(500);
    expect(JSON.parse(delivered.body.toString())).toEqual({
      method: 'POST',
      body: '{"event":"generation.completed"}',
      signature: 't=1,v1=abc',
    });

    const to = encodeURIComponent(`http://origin.test:${port}/ok`);
    const redirected = await production.request(`http://origin.test:${port}/redirect?to=${to}`, {
      ...WEBHOOK_DELIVERY,
      body: '{}',
    });
    expect(redirected.status).toBe(302);
    expect(redirected.headers.location).toBe(`http://origin.test:${port}/ok`);
    expect(redirected.body.toString()).toBe('moved');
    expect(origin.requests.at(-1)!.url).toMatch(/^\/redirect/);
  });
});

describe('limits', () => {
  it('accepts a body of exactly the limit and refuses one byte more', async () => {
    const limit = 200_000;
    const exact = await production.request(`http://origin.test:${port}/bytes?n=${limit}`, {
      ...fast,
      maxResponseBytes: limit,
    });
    expect(exact.body.length).toBe(limit);
    await expect(
      production.request(`http://origin.test:${port}/bytes?n=${limit + 1}`, { ...fast, maxResponseBytes: limit }),
    ).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  it('refuses a stream that would go on for megabytes', async () => {
    await expect(
      production.request(`http://origin.test:${port}/bytes?n=${8 * 1024 * 1024}`, {
        ...fast,
        maxResponseBytes: 1024 * 1024,
      }),
    ).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  it('with overflow: truncate, keeps the first bytes of a long answer and its status (a webhook 2xx of any length counts)', async () => {
    const long = await production.request(`http://origin.test:${port}/bytes?n=${8 * 1024 * 1024}`, {
      ...fast,
      maxResponseBytes: 1000,
      overflow: 'truncate',
    });
    expect(long).toMatchObject({ status: 200, truncated: true });
    expect(long.body.length).toBe(1000);
    const short = await production.request(`http://origin.test:${port}/bytes?n=1000`, {
      ...fast,
      maxResponseBytes: 1000,
      overflow: 'truncate',
    });
    expect(short.truncated).toBeUndefined();
    expect(WEBHOOK_DELIVERY).toMatchObject({ overflow: 'truncate', redirect: 'manual', timeoutMs: 15_000 });
  });

  it('refuses on the announced Content-Length before any body arrives', async () => {
    // The server sends nothing after the header: waiting for the body would end in a FetchTimeoutError.
    await expect(
      production.request(`http://origin.test:${port}/announces-huge`, {
        timeoutMs: 5000,
        maxResponseBytes: 1024 * 1024,
      }),
    ).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  it('times out on a server that never answers', async () => {
    const error = await production
      .request(`http://origin.test:${port}/hang`, { timeoutMs: 300 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchTimeoutError);
    expect(error).toMatchObject({ timeoutMs: 300 });
  });

  it('stops when the caller cancels', async () => {
    const controller = new AbortController();
    const cancelled = new Error('activity cancelled');
    setTimeout(() => controller.abort(cancelled), 100);
    await expect(
      production.request(`http://origin.test:${port}/hang`, { timeoutMs: 5000, signal: controller.signal }),
    ).rejects.toBe(cancelled);
  });
});

describe('refused URLs', () => {
  it.each([
    'file:///etc/passwd',
    'ftp://origin.test/file',
    'data:text/plain,hello',
    'gopher://origin.test:70/',
    'javascript:alert(1)',
    'http://user:pass@origin.test/',
    'http://user@origin.test/',
    'not a url',
    'http://',
  ])('%s', async (url) => {
    await expect(production.request(url, fast)).rejects.toBeInstanceOf(UnsafeUrlError);
  });
});

describe('development mode', () => {
  it('reaches loopback servers by name and by IPv4 and IPv6 address', async () => {
    const v6 = await startServer('::1', 0, (_req, res) => res.end('v6 loopback'));
    try {
      expect((await development.request(`http://localhost:${port}/`, fast)).body.toString()).toBe('internal secret');
      expect((await development.request(`http://[::1]:${v6.port}/`, fast)).body.toString()).toBe('v6 loopback');
    } finally {
      await v6.close();
    }
  });

  it('still refuses cloud metadata and other special addresses', async () => {
    expect((await refusal(development.request('http://169.254.169.254/', fast))).addressClass).toBe('metadata');
    expect((await refusal(development.request('http://[fd00:ec2::254]/', fast))).addressClass).toBe('metadata');
    expect((await refusal(development.request('http://0.0.0.0/', fast))).addressClass).toBe('unspecified');
    expect((await refusal(development.request('http://224.0.0.1/', fast))).addressClass).toBe('multicast');
  });
});
