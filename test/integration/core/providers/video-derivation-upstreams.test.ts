/**
 * Video extensions and edits on real upstream adapters, against a local server that speaks fal's
 * queue protocol: a model whose upstream has paths for them gets the source passed through; a
 * model whose upstream has none is refused with a 400 before anything is held.
 */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { createProviderRouter } from '../../../../core/providers/router';
import { createSimulator } from '../../../../core/providers/simulator';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { credits, generateV1, untilFinishedV1 } from '../../../support/api';
import { startQueueVideoUpstream } from '../../../support/upstream-servers';

let h: Harness;
let videoUp: Awaited<ReturnType<typeof startQueueVideoUpstream>>;
let client: (key: string) => OpenAI;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });

beforeAll(async () => {
  videoUp = await startQueueVideoUpstream();
  const config = upstreamsSchema.parse({
    upstreams: [
      {
        name: 'local-queue',
        protocol: 'queue-video',
        baseUrl: videoUp.baseUrl,
        apiKey: 'fal-key',
        timeoutMs: 2_000,
        pollMs: 20,
        models: {
          kling: 'fal-ai/kling-video/v2.1/pro',
          hailuo: { model: 'fal-ai/hailuo/text-to-video', extend: 'fal-ai/hailuo/extend', edit: 'fal-ai/hailuo/edit' },
        },
      },
    ],
  });
  h = await startHarness({ provider: createProviderRouter(config.upstreams, createSimulator(), http) });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  client = (key) => new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await videoUp?.close();
  http.close();
});

/** A video of `model` made by the upstream, once it has succeeded. */
async function sourceVideo(key: string, model: string): Promise<string> {
  const made = await generateV1(h, key, { kind: 'video', model, prompt: 'waves up:polls=1' });
  expect(await untilFinishedV1(h, key, made.id)).toMatchObject({ status: 'succeeded' });
  return made.id;
}

describe('an upstream without extensions or edits', () => {
  it('answers a clear 400 naming the video on both doors, and nothing is held or sent upstream', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['video'] });
    const id = await sourceVideo(key, 'kling');
    const before = { balance: (await credits(h, key)).balance, submits: videoUp.submits() };

    const extend = (await client(key)
      .videos.extend({ video: { id }, prompt: 'more waves', seconds: '8' })
      .catch((e: unknown) => e)) as APIError;
    expect(extend).toBeInstanceOf(OpenAI.BadRequestError);
    expect(extend.error).toMatchObject({ param: 'video', message: expect.stringContaining('cannot extend videos') });
    const edit = (await client(key)
      .videos.edit({ video: { id }, prompt: 'snow' })
      .catch((e: unknown) => e)) as APIError;
    expect(edit).toBeInstanceOf(OpenAI.BadRequestError);
    expect(edit.error).toMatchObject({ message: expect.stringContaining('cannot edit videos') });
    const groupA = await h.call('POST', `/api/v1/generations/${id}/extend`, {
      key,
      body: { prompt: 'more waves', seconds: 5 },
    });
    expect(groupA.statusCode).toBe(400);
    expect(groupA.json()).toMatchObject({ error: { param: 'id', message: expect.stringContaining('cannot extend') } });

    expect(await credits(h, key)).toMatchObject({ balance: before.balance, holdsActive: 0 });
    expect(videoUp.submits()).toBe(before.submits);
  }, 60_000);
});

describe('an upstream with paths for extending and editing the model', () => {
  it('gets the source as video_url at the model’s extend and edit paths; priced as the added seconds, then at the source’s length', async () => {
    const { key } = await h.account({ credits: 200, scopes: ['video'] });
    // hailuo: 6 s by default at 5 credits a second in 720p.
    const id = await sourceVideo(key, 'hailuo');
    expect(await credits(h, key)).toMatchObject({ balance: 170, holdsActive: 0 });

    const extended = await client(key).videos.extend({ video: { id }, prompt: 'more waves up:polls=1', seconds: '8' });
    expect(extended).toMatchObject({ seconds: '14', remixed_from_video_id: id });
    expect(await credits(h, key)).toMatchObject({ balance: 130, holdsActive: 40 });
    expect(await untilFinishedV1(h, key, extended.id)).toMatchObject({ status: 'succeeded', creditsCharged: 40 });

    const edited = await client(key).videos.edit({ video: { id }, prompt: 'under snow up:polls=1' });
    expect(await untilFinishedV1(h, key, edited.id)).toMatchObject({ status: 'succeeded', creditsCharged: 30 });
    expect(await credits(h, key)).toMatchObject({ balance: 100, holdsActive: 0 });

    const sent = (prompt: string) =>
      videoUp.received.find((r) => r.method === 'POST' && String(r.body?.prompt).startsWith(prompt))!;
    expect(sent('more waves')).toMatchObject({
      path: '/fal-ai/hailuo/extend',
      body: { duration: 8, resolution: '720p', video_url: expect.stringMatching(/^data:video\/webm;base64,/) },
    });
    expect(sent('under snow')).toMatchObject({
      path: '/fal-ai/hailuo/edit',
      body: { duration: 6, video_url: expect.stringMatching(/^data:video\/webm;base64,/) },
    });
    // The source's own file, as the upstream made it, is what travels.
    const source = (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<{ outputUrl: string }>();
    const file = await h.call('GET', new URL(source.outputUrl).pathname + new URL(source.outputUrl).search);
    expect(String(sent('more waves').body?.video_url)).toBe(
      `data:video/webm;base64,${file.rawPayload.toString('base64')}`,
    );
  }, 60_000);
});
