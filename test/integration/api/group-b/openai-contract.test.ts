/**
 * Group B held to OpenAI's published OpenAPI document (test/fixtures/openai-openapi, pinned), the
 * contract its clients' types are generated from. Every answer the tests below receive — JSON
 * bodies, each event of chat and Responses streams, the lines of batch output files, error bodies —
 * is validated against the schema the document declares for its operation and status (for an error
 * the document does not list per operation, its ErrorResponse). Only the divergences listed here
 * are excused, each once and with its reason.
 */
import type { AddressInfo } from 'node:net';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { loadOpenAiContract, recordingFetch } from '../../../support/openai-contract';
import type { Divergence, Exchange, Violation } from '../../../support/openai-contract';

/** Where we answer otherwise than OpenAI's document, on purpose. Nothing else is excused. */
const DIVERGENCES: readonly Divergence[] = [
  {
    what: 'error.code is the HTTP status as a number',
    why: "Our API's contract (DESIGN §6) gives every door one error body whose code is the status; OpenAI's SDKs read the status from the response, never from code.",
    normalise: (body, exchange) => {
      const error = (body as { error?: { code?: unknown } } | null)?.error;
      if (exchange.status < 400 || typeof error !== 'object' || error === null) return body;
      if (error.code !== exchange.status)
        throw new Error(`error.code is ${JSON.stringify(error.code)}, not the status ${exchange.status}`);
      return { ...body!, error: { ...error, code: String(error.code) } };
    },
  },
  {
    what: 'files are served with their real media types',
    why: 'The document says a video is video/mp4 (or a webp preview) and a file’s content is a JSON string; a video is sent as what it is (WebM from the simulator, JPEG previews) and a batch file as JSONL, which is what the SDK’s binary responses read.',
    mediaTypes: {
      'get /videos/{video_id}/content': ['video/webm', 'image/jpeg'],
      'get /files/{file_id}/content': ['application/jsonl'],
    },
  },
  {
    what: 'a Response has usage: null until it has ended',
    why: 'The document makes usage optional but never null; OpenAI’s own API sends null in response.created and response.in_progress, and the Open Responses specification (test/integration/api/group-b/open-responses-compliance.test.ts) requires the field. The usage of an ended response is checked in full.',
    normalise: (body) => withoutNullUsage(body),
  },
];

/** A Response (or a stream event carrying one) without a null `usage`; an ended one's usage is kept and checked. */
function withoutNullUsage(body: unknown): unknown {
  if (typeof body !== 'object' || body === null) return body;
  const o = body as Record<string, unknown>;
  if (o.object === 'response' && o.usage === null) {
    const { usage: _null, ...rest } = o;
    return rest;
  }
  if (typeof o.response === 'object' && o.response !== null) return { ...o, response: withoutNullUsage(o.response) };
  return body;
}

let h: Harness;
let base: string;
let recorder: ReturnType<typeof recordingFetch>;
let contract: Awaited<ReturnType<typeof loadOpenAiContract>>;
const batchFiles: { endpoint: string; text: string }[] = [];

beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000, batchLimits: { perBatch: 3, perAccount: 6 } });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  recorder = recordingFetch(base);
  contract = await loadOpenAiContract(DIVERGENCES);
});
afterAll(async () => {
  await h?.close();
});

const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: base, maxRetries: 0, fetch: recorder.fetch });
/** A request the SDK would not send (a broken body, a method the path does not take), recorded all the same. */
const raw = (path: string, init: RequestInit & { key?: string }) =>
  recorder.fetch(`${base}${path}`, {
    ...init,
    headers: { ...(init.key ? { authorization: `Bearer ${init.key}` } : {}), ...(init.headers ?? {}) },
  });
const png = (side: number) =>
  sharp({ create: { width: side, height: side, channels: 3, background: '#3060c0' } })
    .png()
    .toBuffer();
const tools: OpenAI.Responses.FunctionTool[] = [
  {
    type: 'function',
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    strict: true,
  },
];

describe('chat completions and Responses', () => {
  it('answers whole and streamed chats', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = sdk(key);
    await client.chat.completions.create({ model: 'claude-haiku', messages: [{ role: 'user', content: 'hi' }] });
    const stream = await client.chat.completions.create({
      model: 'claude-haiku',
      messages: [{ role: 'user', content: 'hi sim:tokens=4' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) expect(chunk.object).toBe('chat.completion.chunk');
  });

  it('answers plain, tool-calling and streamed responses, and retrieves one', async () => {
    const { key } = await h.account({ credits: 50 });
    const client = sdk(key);
    const plain = await client.responses.create({ model: 'claude-haiku', input: 'hello sim:tokens=3' });
    const called = await client.responses.create({
      model: 'claude-sonnet',
      input: 'Weather in Paris? sim:tool=get_weather',
      tools,
    });
    expect(called.output.some((o) => o.type === 'function_call')).toBe(true);
    const stream = await client.responses.create({ model: 'claude-haiku', input: 'hi sim:tokens=3', stream: true });
    for await (const event of stream) expect(event.type).toMatch(/^response\./);
    const toolStream = await client.responses.create({
      model: 'claude-sonnet',
      input: 'Weather in Paris? sim:tool=get_weather',
      tools,
      stream: true,
    });
    for await (const event of toolStream) expect(event.type).toMatch(/^response\./);
    expect((await client.responses.retrieve(plain.id)).id).toBe(plain.id);
  });
});

describe('images and videos', () => {
  it('generates images, and edits one to the size asked', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    await client.images.generate({ model: 'flux', prompt: 'a lighthouse', size: '1024x1024' });
    await client.images.generate({ model: 'gpt-image-1', prompt: 'a lighthouse' });
    const edited = await client.images.edit({
      model: 'gpt-image-1',
      prompt: 'paint it',
      image: await toFile(await png(256), 'photo.png', { type: 'image/png' }),
      size: '1024x1024',
    });
    const out = await sharp(Buffer.from(edited.data![0]!.b64_json!, 'base64')).metadata();
    expect(out).toMatchObject({ width: 1024, height: 1024 });
    // No size asked: the edit keeps the input's.
    const kept = await client.images.edit({
      model: 'gpt-image-1',
      prompt: 'paint it',
      image: await toFile(await png(256), 'photo.png', { type: 'image/png' }),
    });
    expect(await sharp(Buffer.from(kept.data![0]!.b64_json!, 'base64')).metadata()).toMatchObject({
      width: 256,
      height: 256,
    });
  });

  it('creates, retrieves, lists, downloads and deletes a video', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = sdk(key);
    const created = await client.videos.create({ model: 'sora-2', prompt: 'waves sim:delay=100', seconds: '4' });
    await eventually(async () =>
      (await client.videos.retrieve(created.id)).status === 'completed' ? true : undefined,
    );
    await client.videos.list({ limit: 5 });
    await (await client.videos.downloadContent(created.id)).arrayBuffer();
    const deleted = await client.videos.delete(created.id);
    expect(deleted).toMatchObject({ id: created.id, object: 'video.deleted', deleted: true });
    await expect(client.videos.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('extends and edits a completed video', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = sdk(key);
    const source = await client.videos.create({ model: 'sora-2', prompt: 'waves sim:delay=100', seconds: '4' });
    await eventually(async () => ((await client.videos.retrieve(source.id)).status === 'completed' ? true : undefined));
    const extended = await client.videos.extend({ video: { id: source.id }, prompt: 'more waves', seconds: '4' });
    expect(extended).toMatchObject({ seconds: '8', remixed_from_video_id: source.id });
    const edited = await client.videos.edit({ video: { id: source.id }, prompt: 'waves in snow' });
    expect(edited).toMatchObject({ seconds: '4', remixed_from_video_id: source.id });
  });
});

describe('files and batches', () => {
  it('uploads, lists and deletes files; runs a batch and reads its output and error files', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = sdk(key);
    const lines = [
      { custom_id: 'ok', method: 'POST', url: '/v1/chat/completions', body: chatBody('fine sim:tokens=3') },
      { custom_id: 'fails', method: 'POST', url: '/v1/chat/completions', body: chatBody('broken sim:fail') },
    ];
    const file = await client.files.create({
      file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n') + '\n'), 'in.jsonl'),
      purpose: 'batch',
    });
    await client.files.retrieve(file.id);
    await client.files.list();
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await eventually(
      async () => {
        const b = await client.batches.retrieve(batch.id);
        return b.status === 'completed' ? b : undefined;
      },
      90_000,
      300,
    );
    await client.batches.list({ limit: 5 });
    for (const id of [done.output_file_id, done.error_file_id]) {
      expect(id).toBeTruthy();
      batchFiles.push({ endpoint: batch.endpoint, text: await (await client.files.content(id!)).text() });
    }
    await client.batches.create({
      input_file_id: (
        await client.files.create({
          file: await toFile(Buffer.from(JSON.stringify(responsesLine) + '\n'), 'responses.jsonl'),
          purpose: 'batch',
        })
      ).id,
      endpoint: '/v1/responses',
      completion_window: '24h',
    });
    const responsesBatch = await eventually(
      async () => {
        const list = await client.batches.list({ limit: 1 });
        const b = list.data[0];
        return b?.status === 'completed' ? b : undefined;
      },
      90_000,
      300,
    );
    batchFiles.push({
      endpoint: '/v1/responses',
      text: await (await client.files.content(responsesBatch.output_file_id!)).text(),
    });
    await client.files.delete(file.id);
  });
});

const chatBody = (content: string) => ({
  model: 'claude-haiku',
  messages: [{ role: 'user', content }],
  max_tokens: 20,
});
const responsesLine = {
  custom_id: 'r',
  method: 'POST',
  url: '/v1/responses',
  body: { model: 'claude-haiku', input: 'hi sim:tokens=2' },
};

describe('models and errors', () => {
  it('lists and retrieves models', async () => {
    const { key } = await h.account({ credits: 1 });
    const client = sdk(key);
    const models = await client.models.list();
    await client.models.retrieve(models.data[0]!.id);
  });

  it('answers 401, invalid JSON, 405 and 404 in OpenAI’s error shape', async () => {
    const { key } = await h.account({ credits: 1 });
    await expect(sdk('sk-not-a-key').models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    expect(
      (
        await raw('/chat/completions', {
          key,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"model": ',
        })
      ).status,
    ).toBe(400);
    expect((await raw('/models', { key, method: 'DELETE' })).status).toBe(405);
    await expect(sdk(key).models.retrieve('no-such-model')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(sdk(key).videos.retrieve(`gen_${'0'.repeat(26)}`)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('refuses a form field it does not know, by name, holding nothing', async () => {
    const { key } = await h.account({ credits: 100 });
    const refusedVideo = await formPost(key, '/videos', { prompt: 'waves', callback_url: 'https://example.com/hook' });
    expect(refusedVideo.status).toBe(400);
    expect(await refusedVideo.json()).toMatchObject({ error: { param: 'callback_url' } });
    const edit = new FormData();
    edit.append('model', 'gpt-image-1');
    edit.append('prompt', 'paint it');
    edit.append('image', new Blob([new Uint8Array(await png(64))], { type: 'image/png' }), 'a.png');
    edit.append('colour', 'red');
    const refusedEdit = await raw('/images/edits', { key, method: 'POST', body: edit });
    expect(refusedEdit.status).toBe(400);
    expect(await refusedEdit.json()).toMatchObject({ error: { param: 'colour' } });
    const balance = await h.call('GET', '/api/v1/balance', { key });
    expect(balance.json()).toMatchObject({ balance: 100, holdsActive: 0 });
  });
});

async function formPost(key: string, path: string, fields: Record<string, string>) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return raw(path, { key, method: 'POST', body: form });
}

describe(`every answer above, against OpenAI's OpenAPI document`, () => {
  it('matches the schema declared for its operation, status and media type', async () => {
    const exchanges: Exchange[] = await recorder.exchanges();
    const violations: Violation[] = [
      ...exchanges.flatMap((e) => contract.judge(e)),
      ...batchFiles.flatMap((f) => contract.judgeBatchLines(f.endpoint, f.text)),
    ];
    expect(violations).toEqual([]);
    // What was judged: every operation the brief of this file names, with its answer kinds.
    expect([...contract.judged].sort()).toEqual(
      expect.arrayContaining([
        'post /chat/completions 200 application/json',
        'post /chat/completions 200 text/event-stream',
        'post /chat/completions 400 application/json',
        'post /responses 200 application/json',
        'post /responses 200 text/event-stream',
        'get /responses/{response_id} 200 application/json',
        'post /images/generations 200 application/json',
        'post /images/edits 200 application/json',
        'post /images/edits 400 application/json',
        'post /videos 200 application/json',
        'post /videos 400 application/json',
        'get /videos 200 application/json',
        'get /videos/{video_id} 200 application/json',
        'get /videos/{video_id} 404 application/json',
        'get /videos/{video_id}/content 200 video/webm',
        'delete /videos/{video_id} 200 application/json',
        'post /videos/extensions 200 application/json',
        'post /videos/edits 200 application/json',
        'post /files 200 application/json',
        'get /files 200 application/json',
        'get /files/{file_id} 200 application/json',
        'get /files/{file_id}/content 200 application/jsonl',
        'delete /files/{file_id} 200 application/json',
        'post /batches 200 application/json',
        'get /batches 200 application/json',
        'get /batches/{batch_id} 200 application/json',
        'get /models 200 application/json',
        'get /models 401 application/json',
        'delete /models 405 application/json',
        'get /models/{model} 200 application/json',
        'get /models/{model} 404 application/json',
      ]),
    );
    expect(batchFiles.map((f) => f.text.trim().split('\n').length)).toEqual([1, 1, 1]);
  });
});
