import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { createInputPreparer } from '../../../../service/generation/inputs';
import { FILES_BASE_URL, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { credits, download, generate, untilFinished } from '../../../support/api';

/** A loopback web server with the inputs the tests upscale, and the ways an input can be wrong. */
async function startImageServer(host: string) {
  const png = await sharp({ create: { width: 300, height: 200, channels: 3, background: { r: 200, g: 80, b: 40 } } })
    .png()
    .toBuffer();
  const jpeg = await sharp({ create: { width: 150, height: 90, channels: 3, background: { r: 20, g: 120, b: 240 } } })
    .jpeg()
    .toBuffer();
  const wideFor4x = await sharp({ create: { width: 2049, height: 16, channels: 3, background: '#888' } })
    .png()
    .toBuffer();
  const routes: Record<string, (res: ServerResponse) => void> = {
    '/photo.png': (res) => res.writeHead(200, { 'content-type': 'image/png' }).end(png),
    // Served with a misleading type: the service judges by decoding, not by the header.
    '/photo.jpg': (res) => res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(jpeg),
    '/wide.png': (res) => res.writeHead(200, { 'content-type': 'image/png' }).end(wideFor4x),
    '/page.html': (res) =>
      res.writeHead(200, { 'content-type': 'image/png' }).end('<!doctype html><title>not an image</title>'),
    '/truncated.png': (res) => res.writeHead(200, { 'content-type': 'image/png' }).end(png.subarray(0, png.length / 2)),
    '/huge.bin': (res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(26 * 1024 * 1024, 1)),
    '/missing.png': (res) => res.writeHead(404).end(),
  };
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (path.startsWith('/redirect?to='))
      return res.writeHead(302, { location: decodeURIComponent(path.slice('/redirect?to='.length)) }).end();
    (routes[path] ?? ((r) => r.writeHead(404).end()))(res);
  });
  server.listen(0, host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://${host}:${port}${path}`,
    port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let h: Harness;
let images: Awaited<ReturnType<typeof startImageServer>>;
beforeAll(async () => {
  h = await startHarness();
  images = await startImageServer('127.0.0.1');
});
afterAll(async () => {
  await images?.close();
  await h?.close();
});

const dimensionsOf = async (outputUrl: string) => {
  const file = await download(h, outputUrl);
  expect(file.status).toBe(200);
  expect(file.contentType).toBe('image/png');
  const meta = await sharp(file.body).metadata();
  return { format: meta.format, width: meta.width, height: meta.height };
};

const generationCount = async (accountId: string) =>
  (await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM generations WHERE account_id = $1', [accountId]))
    .rows[0]!.n;

describe('upscale, end to end', () => {
  it('group C: 2× of a PNG is held while in flight, then charged 2 credits for an image exactly twice the size', async () => {
    const { key } = await h.account({ credits: 10, scopes: ['upscale'] });
    const r = await generate(h, key, { kind: 'upscale', imageUrl: images.url('/photo.png'), scale: 2 });
    expect(r.status).toBe(200);
    expect(['queued', 'running']).toContain(r.body.generation.status);
    expect(r.body.generation).toMatchObject({ kind: 'upscale', model: 'upscale', creditsCharged: 0, outputUrl: '' });
    expect(await credits(h, key)).toMatchObject({ balance: 8, holdsActive: 2 });
    const done = await untilFinished(h, key, r.body.generation.id);
    expect(done).toMatchObject({ status: 'succeeded', creditsCharged: 2 });
    expect(await dimensionsOf(done.outputUrl)).toEqual({ format: 'png', width: 600, height: 400 });
    expect(await credits(h, key)).toMatchObject({ balance: 8, holdsActive: 0 });
  });

  it('group A: 4× with upscale-pro of a JPEG served with a wrong Content-Type', async () => {
    const { key } = await h.account({ credits: 10, scopes: ['generate:upscale'] });
    const res = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'upscale', model: 'upscale-pro', image_url: images.url('/photo.jpg'), scale: 4 },
    });
    expect(res.statusCode).toBe(202);
    const accepted = res.json<{ id: string; creditsQuoted: number; params: Record<string, unknown> }>();
    expect(accepted).toMatchObject({
      creditsQuoted: 8,
      params: { scale: 4, inputWidth: 150, inputHeight: 90, width: 600, height: 360 },
    });
    const done = await untilFinished(h, key, accepted.id);
    expect(done).toMatchObject({ status: 'succeeded', creditsCharged: 8 });
    expect(await dimensionsOf(done.outputUrl)).toEqual({ format: 'png', width: 600, height: 360 });
  });

  it('upscales the output of an earlier generation from its signed URL, read from the store', async () => {
    const { key } = await h.account({ credits: 20, scopes: ['image', 'upscale'] });
    const image = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a red door', aspect: '16:9' });
    expect(image.body.generation.outputUrl.startsWith(`${FILES_BASE_URL}/files/`)).toBe(true);
    const r = await generate(h, key, { kind: 'upscale', imageUrl: image.body.generation.outputUrl, scale: 2 });
    const done = await untilFinished(h, key, r.body.generation.id);
    expect(done.status).toBe('succeeded');
    expect(await dimensionsOf(done.outputUrl)).toEqual({ format: 'png', width: 2048, height: 1152 });
  });

  it('refuses with a clear 400 what is not a usable image, holding and recording nothing', async () => {
    const { key, accountId } = await h.account({ credits: 10, scopes: ['upscale'] });
    const cases: [string, number, RegExp][] = [
      [images.url('/page.html'), 2, /not a PNG, JPEG, WebP, GIF or AVIF image/],
      [images.url('/truncated.png'), 2, /corrupt|truncated|incomplete/i],
      [images.url('/wide.png'), 4, /2048 px/],
      [images.url('/huge.bin'), 2, /larger than 25 MiB/],
      [images.url('/missing.png'), 2, /HTTP 404/],
      [
        `${FILES_BASE_URL}/files/gen_nope/output.png?expires=1&signature=${'0'.repeat(64)}`,
        2,
        /invalid or has expired/,
      ],
    ];
    for (const [url, scale, message] of cases) {
      const r = await generate(h, key, { kind: 'upscale', imageUrl: url, scale });
      expect(r.status, url).toBe(400);
      expect(r.body.error, url).toMatchObject({
        type: 'invalid_request_error',
        param: 'imageUrl',
        message: expect.stringMatching(message),
      });
    }
    const a = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'upscale', image_url: images.url('/page.html'), scale: 2 },
    });
    expect(a.json()).toMatchObject({ error: { param: 'image_url', message: expect.stringMatching(/^image_url/) } });
    for (const body of [
      { kind: 'upscale', imageUrl: 'ftp://example.com/a.png', scale: 2 },
      { kind: 'upscale', imageUrl: images.url('/photo.png'), scale: 3 },
    ]) {
      expect((await generate(h, key, body)).status).toBe(400);
    }
    expect(await credits(h, key)).toMatchObject({ balance: 10, holdsActive: 0 });
    expect(await generationCount(accountId)).toBe(0);
  });
});

describe('upscale inputs outside development mode (SSRF)', () => {
  it('refuses loopback, private, link-local, metadata and IPv6 loopback addresses, names that resolve to them, and redirects to them', async () => {
    // 127.0.0.2 stands for a public origin: trusted by the policy, so only the redirect is refused.
    const origin = await startImageServer('127.0.0.2');
    const http = createSafeHttpClient({ policy: { allowPrivateNetworks: false, trustedAddresses: ['127.0.0.2'] } });
    const app = await productionApi(h, {
      prepareInput: createInputPreparer({ http, store: h.store, publicBaseUrl: FILES_BASE_URL }),
    });
    try {
      const { key, accountId } = await h.account({ credits: 10, scopes: ['upscale'] });
      // The trusted origin works, so the refusals below are about where the URL leads.
      const ok = await app.inject({
        method: 'POST',
        url: '/api/generate',
        headers: { authorization: `Bearer ${key}` },
        payload: { kind: 'upscale', imageUrl: origin.url('/photo.png'), scale: 2 },
      });
      expect(ok.statusCode, ok.body).toBe(200);
      const refused = [
        images.url('/photo.png'),
        `http://localhost:${images.port}/photo.png`,
        'http://10.0.0.1/photo.png',
        'http://192.168.1.10/photo.png',
        'http://169.254.169.254/latest/meta-data/',
        `http://[::1]:${images.port}/photo.png`,
        `http://[::ffff:127.0.0.1]:${images.port}/photo.png`,
        `http://2130706433:${images.port}/photo.png`,
        `http://0.0.0.0:${images.port}/photo.png`,
        origin.url(`/redirect?to=${encodeURIComponent(images.url('/photo.png'))}`),
        origin.url(`/redirect?to=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`),
      ];
      for (const url of refused) {
        const res = await app.inject({
          method: 'POST',
          url: '/api/generate',
          headers: { authorization: `Bearer ${key}` },
          payload: { kind: 'upscale', imageUrl: url, scale: 2 },
        });
        expect(res.statusCode, url).toBe(400);
        expect(res.json(), url).toMatchObject({
          error: { type: 'invalid_request_error', param: 'imageUrl', message: expect.stringMatching(/only public/) },
        });
        expect(res.body, url).not.toMatch(/127\.0\.0\.1|::1/);
      }
      expect(await generationCount(accountId)).toBe(1);
      expect(await credits(h, key)).toMatchObject({ holdsActive: 2 });
    } finally {
      await app.close();
      http.close();
      await origin.close();
    }
  });
});
