/**
 * What the service keeps for itself never reaches a customer. After a chat, a streamed chat, a
 * response with tools, a video (with a reference frame and a deadline), an upscale, a remix and n
 * images, every view a customer gets is read (groups A, B and C, MCP tool results and tasks, both
 * webhook formats, the event streams, the ledger in JSON and CSV, the dashboard's API) and walked:
 * no key of `InternalParams` may appear, and every `params` holds only keys of `PublicParams`. The
 * keys come from core/generation/params.ts, so a key added to `InternalParams` is checked at once.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { INTERNAL_PARAM_KEYS, PUBLIC_PARAM_KEYS } from '../../../../core/generation/params';
import type { InternalParams } from '../../../../core/generation/params';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { createProviderRouter } from '../../../../core/providers/router';
import { createSimulator } from '../../../../core/providers/simulator';
import { login, userOf } from '../../../support/dashboard';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startOpenAiUpstream } from '../../../support/upstream-servers';
import { startReceiver } from '../../../support/webhook-receiver';
import type { TestReceiver } from '../../../support/webhook-receiver';

let h: Harness;
let up: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let nested: TestReceiver;
let flat: TestReceiver;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });

beforeAll(async () => {
  up = await startOpenAiUpstream();
  const config = upstreamsSchema.parse({
    upstreams: [
      {
        name: 'local-openai',
        protocol: 'openai',
        baseUrl: up.baseUrl,
        timeoutMs: 2000,
        models: { 'claude-sonnet': 'upstream-sonnet' },
      },
    ],
  });
  h = await startHarness({
    listen: true,
    provider: createProviderRouter(config.upstreams, createSimulator(), http),
    webhooks: { retryScheduleMs: [200] },
  });
  [nested, flat] = await Promise.all([startReceiver(), startReceiver()]);
});
afterAll(async () => {
  await h?.close();
  await Promise.all([up?.close(), nested?.close(), flat?.close()]);
  http.close();
});

/** One thing a customer reads: a JSON body, or text (streams, CSV). */
type View = { name: string; json: unknown } | { name: string; text: string };

/** Every key named anywhere in a JSON value, with the object it sits in. */
function* entries(
  value: unknown,
  path: string,
): Generator<{ key: string; value: unknown; holder: Record<string, unknown>; path: string }> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* entries(item, `${path}[${i}]`);
  } else if (value !== null && typeof value === 'object') {
    const holder = value as Record<string, unknown>;
    for (const [key, child] of Object.entries(holder)) {
      yield { key, value: child, holder, path: `${path}.${key}` };
      yield* entries(child, `${path}.${key}`);
    }
  }
}

/**
 * OpenAI's own shapes (group B) have two fields named like internal keys: a response object's
 * `tools` (what the request offered, answered back as OpenAI does) and a streaming event's
 * `response`. Only there, and only on those objects, is the name not a leak.
 */
const protocolField = (key: string, holder: Record<string, unknown>): boolean =>
  (key === 'tools' && holder.object === 'response') ||
  (key === 'response' && typeof holder.type === 'string' && holder.type.startsWith('response.'));

/** What is wrong with a view: internal keys shown, `params` with keys that are not public. */
function leaksOf(view: View): string[] {
  const problems: string[] = [];
  const internal = new Set<string>(INTERNAL_PARAM_KEYS);
  const publicKeys = new Set<string>(PUBLIC_PARAM_KEYS);
  const jsons = 'json' in view ? [view.json] : jsonInText(view.text);
  for (const json of jsons) {
    for (const { key, value, holder, path } of entries(json, view.name)) {
      if (internal.has(key) && !protocolField(key, holder)) problems.push(`${path}: internal key ${key}`);
      if (key === 'params' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        for (const k of Object.keys(value))
          if (!publicKeys.has(k)) problems.push(`${path}.${k}: not a public parameter`);
      }
    }
  }
  const text = 'json' in view ? JSON.stringify(view.json) : view.text;
  // A stored input's key (gen_…/input.png) is the service's; its signed URL never goes out.
  if (/gen_\w+\/input\./.test(text)) problems.push(`${view.name}: names a stored input`);
  if ('text' in view)
    for (const key of INTERNAL_PARAM_KEYS)
      if (key.length > 8 && text.includes(key)) problems.push(`${view.name}: mentions ${key}`);
  return problems;
}

/** The JSON documents inside a text view: SSE data lines. */
function jsonInText(text: string): unknown[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .flatMap((l) => {
      try {
        return [JSON.parse(l.slice('data: '.length)) as unknown];
      } catch {
        return [];
      }
    });
}

/** Reads a stream for a while (or until it ends) and returns its text. */
async function readStream(url: string, headers: Record<string, string>, ms = 3_000): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  let text = '';
  try {
    const res = await fetch(url, { headers, signal: controller.signal });
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
      text += decoder.decode(chunk, { stream: true });
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
  }
  return text;
}

describe('internal parameters', () => {
  it('are a set of their own, apart from the public ones', () => {
    expect(INTERNAL_PARAM_KEYS.filter((k) => (PUBLIC_PARAM_KEYS as string[]).includes(k))).toEqual([]);
    expect(INTERNAL_PARAM_KEYS.length).toBeGreaterThan(5);
  });

  it('reach no view a customer gets, after a chat, a streamed chat, a response with tools, a video, an upscale, a remix, an edit, an extension and n images', async () => {
    const { key, accountId } = await h.account({
      credits: 2_000,
      chatCap: 1,
      scopes: ['image', 'video', 'chat', 'upscale', 'webhooks'],
    });
    const auth = { authorization: `Bearer ${key}` };
    const views: View[] = [];
    const json = async (name: string, res: { statusCode: number; body: string }, status = 200): Promise<unknown> => {
      expect(res.statusCode, `${name}: ${res.body}`).toBe(status);
      const body = JSON.parse(res.body) as unknown;
      views.push({ name, json: body });
      return body;
    };
    for (const [receiver, format] of [
      [nested, 'nested'],
      [flat, 'flat'],
    ] as const) {
      await json(
        `register ${format}`,
        await h.call('POST', '/api/v1/webhooks', { key, body: { url: receiver.url, format } }),
        201,
      );
    }

    // An image (its output is the next ones' input), then a video from it with a client deadline
    // (group B), an upscale of it and a remix of the video (group A).
    const image = (await json(
      'A generate image',
      await h.call('POST', '/api/v1/generate', { key, body: { kind: 'image', model: 'flux', prompt: 'a harbour' } }),
    )) as { id: string; outputUrl: string };
    const video = (await json(
      'B video from an image',
      await h.call('POST', '/v1/video/generations', {
        key,
        body: { model: 'kling-2.1-pro', prompt: 'waves sim:delay=400', image_url: image.outputUrl },
        headers: { 'cancel-after': '600' },
      }),
    )) as { id: string };
    const upscale = (await json(
      'A generate upscale',
      await h.call('POST', '/api/v1/generate', {
        key,
        body: { kind: 'upscale', image_url: image.outputUrl, scale: 2 },
      }),
      202,
    )) as { id: string };
    const done = (id: string) =>
      eventually(async () => {
        const g = (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<{ status: string }>();
        return g.status === 'succeeded' || g.status === 'failed' ? g : undefined;
      }, 60_000);
    expect(await done(video.id)).toMatchObject({ status: 'succeeded' });
    const remix = (await json(
      'A remix',
      await h.call('POST', `/api/v1/generations/${video.id}/remix`, {
        key,
        body: { prompt: 'calmer waves sim:delay=200' },
      }),
      202,
    )) as { id: string };
    // An edit of the video (group A) and an extension of it (group B): their source file is kept internally.
    const edit = (await json(
      'A edit',
      await h.call('POST', `/api/v1/generations/${video.id}/edit`, {
        key,
        body: { prompt: 'snowy waves sim:delay=200' },
      }),
      202,
    )) as { id: string };

    // A chat in the workflow (group C, the free reply), a streamed one the API runs (group B), and
    // a response with tools on an upstream that serves them.
    const chat = (await json(
      'C chat',
      await h.call('POST', '/api/generate', { key, body: { kind: 'chat', prompt: 'hello' } }),
    )) as { generation: { id: string } };
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl!}/v1`, maxRetries: 0 });
    const streamed = await fetch(`${h.baseUrl!}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-haiku',
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'sim:tokens=4 hi' },
        ],
        stream: true,
        temperature: 0.3,
      }),
    });
    const streamedText = await streamed.text();
    views.push({ name: 'B chat stream', text: streamedText });
    const streamedId = /"id":"(gen_[^"]+)"/.exec(streamedText)![1]!;
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
        strict: false,
      },
    ];
    const response = await openai.responses.create({
      model: 'claude-sonnet',
      input: 'Weather in Paris?',
      tools,
      instructions: 'answer with the tool',
      metadata: { order: '7' },
    });
    views.push({ name: 'B response', json: response });
    const responseStream = await fetch(`${h.baseUrl!}/v1/responses`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet', input: 'Weather in Oslo?', tools, stream: true }),
    });
    views.push({ name: 'B response stream', text: await responseStream.text() });
    views.push({ name: 'B response read', json: await openai.responses.retrieve(response.id) });
    // Group B's n images: admitted together, each remembering its siblings.
    const images = await openai.images.generate({ model: 'flux', prompt: 'two boats', n: 2 });
    views.push({ name: 'B images', json: images });
    views.push({ name: 'B video', json: await openai.videos.retrieve(video.id) });
    const extension = await openai.videos.extend({ video: { id: video.id }, prompt: 'more waves', seconds: '4' });
    views.push({ name: 'B extension', json: extension });
    views.push({
      name: 'B video generation',
      json: await json('B video generation', await h.call('GET', `/v1/video/generations/${video.id}`, { key })),
    });

    const ids = [
      image.id,
      video.id,
      upscale.id,
      remix.id,
      edit.id,
      extension.id,
      chat.generation.id,
      streamedId,
      response.id,
    ];
    for (const id of ids) await done(id);

    // What the service kept for itself, so that the walk below has something to miss.
    const internals = new Map(
      (
        await h.pool.query<{ id: string; internal: InternalParams }>(
          'SELECT id, internal FROM generations WHERE account_id = $1',
          [accountId],
        )
      ).rows.map((r) => [r.id, r.internal]),
    );
    expect(internals.get(video.id)).toMatchObject({
      inputKey: expect.stringContaining('/input.') as string,
      clientDeadlineMs: 600_000,
    });
    expect(internals.get(upscale.id)).toMatchObject({ inputKey: expect.stringContaining('/input.') as string });
    for (const derived of [edit.id, extension.id])
      expect(internals.get(derived)).toMatchObject({ sourceVideoKey: `${video.id}/output.webm` });
    expect(internals.get(streamedId)).toMatchObject({
      recordedByApi: true,
      ratePer1kMc: expect.any(Number) as number,
      sampling: { temperature: 0.3 },
    });
    expect(internals.get(response.id)).toMatchObject({
      tools: { functions: [{ name: 'get_weather' }] },
      response: { store: true },
      outputToolCalls: [{ name: 'get_weather' }],
    });
    expect([...internals.values()].filter((i) => i.siblings !== undefined)).toHaveLength(2);

    // Group A and C: every generation, the list, the events of each, the account's stream.
    for (const id of ids) {
      await json(`A generation ${id}`, await h.call('GET', `/api/v1/generations/${id}`, { key }));
      await json(`C generation ${id}`, await h.call('GET', `/api/generate/${id}`, { key }));
      views.push({
        name: `A events ${id}`,
        text: await readStream(`${h.baseUrl!}/api/v1/generations/${id}/events`, auth),
      });
    }
    await json('A list', await h.call('GET', '/api/v1/generations?limit=50', { key }));
    views.push({
      name: 'A account events',
      text: await readStream(`${h.baseUrl!}/api/v1/events?ids=${ids.join(',')}`, auth),
    });
    await json('A ledger', await h.call('GET', '/api/v1/ledger?limit=200', { key }));
    const csv = await h.call('GET', '/api/v1/ledger?format=csv', { key });
    expect(csv.statusCode).toBe(200);
    views.push({ name: 'A ledger CSV', text: csv.body });
    await json('A usage', await h.call('GET', '/api/v1/usage?group_by=model', { key }));

    // MCP: each generation read by the tool, and a video run as a task, read by tasks/get and tasks/result.
    const mcp = new Client({ name: 'privacy-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${h.baseUrl!}/api/mcp`), { requestInit: { headers: auth } }),
    );
    try {
      for (const id of ids)
        views.push({
          name: `MCP get_generation ${id}`,
          json: await mcp.callTool({ name: 'get_generation', arguments: { id } }, CallToolResultSchema),
        });
      let taskId: string | undefined;
      for await (const m of mcp.experimental.tasks.callToolStream(
        { name: 'generate_video', arguments: { model: 'kling', prompt: 'a task sim:delay=200' } },
        CallToolResultSchema,
        { task: { ttl: 600_000 } },
      )) {
        views.push({ name: `MCP task message ${m.type}`, json: m });
        if (m.type === 'taskCreated') taskId = m.task.taskId;
      }
      expect(taskId).toBeDefined();
      views.push({ name: 'MCP tasks/get', json: await mcp.experimental.tasks.getTask(taskId!) });
      const result: CallToolResult = await mcp.experimental.tasks.getTaskResult(taskId!, CallToolResultSchema);
      views.push({ name: 'MCP tasks/result', json: result });
    } finally {
      await mcp.close();
    }

    // The dashboard's API and its live stream, as a signed-in user of the account sees them.
    const session = await login(h, await userOf(h, accountId));
    const cookie = { cookie: session.cookie };
    for (const path of ['/dashboard/api/generations?limit=50', '/dashboard/api/overview', '/dashboard/api/usage']) {
      await json(`dashboard ${path}`, await h.call('GET', path, { headers: cookie }));
    }
    views.push({ name: 'dashboard events', text: await readStream(`${h.baseUrl!}/dashboard/api/events`, cookie) });

    // Both webhook formats, once every delivery owed has arrived.
    await nested.until(ids.length + 1, (r) => String(r.json.event).startsWith('generation.'), 60_000);
    await flat.until(4, (r) => r.json.event === 'generation.succeeded', 60_000);
    for (const r of [...nested.received, ...flat.received])
      views.push({ name: `webhook ${String(r.json.event)}`, json: r.json });

    expect(views.length).toBeGreaterThan(60);
    // Each view was walked for something: the generations' parameters are there to be seen.
    expect(
      views.filter((v) => ('json' in v ? JSON.stringify(v.json) : v.text).includes('"params"')).length,
    ).toBeGreaterThan(20);
    expect(views.flatMap(leaksOf)).toEqual([]);
  }, 240_000);

  it('the walk finds an internal key where one is shown, and a params key that is not public', () => {
    expect(leaksOf({ name: 'v', json: { data: [{ params: { seconds: 5, ratePer1kMc: 700 } }] } })).toEqual([
      'v.data[0].params.ratePer1kMc: not a public parameter',
      'v.data[0].params.ratePer1kMc: internal key ratePer1kMc',
    ]);
    expect(leaksOf({ name: 'v', json: { params: { surprise: 1 } } })).toEqual([
      'v.params.surprise: not a public parameter',
    ]);
    expect(leaksOf({ name: 's', text: 'event: done\ndata: {"id":"gen_1","messages":[]}\n\n' })).toEqual([
      's.messages: internal key messages',
    ]);
    expect(leaksOf({ name: 'c', text: 'id,note\n1,clientDeadlineMs\n' })).toEqual(['c: mentions clientDeadlineMs']);
    expect(leaksOf({ name: 'u', json: { outputUrl: 'http://x/files/gen_1/input.png?sig' } })).toEqual([
      'u: names a stored input',
    ]);
    // OpenAI's own fields are not leaks where OpenAI puts them, and are anywhere else.
    expect(leaksOf({ name: 'r', json: { object: 'response', tools: [] } })).toEqual([]);
    expect(leaksOf({ name: 'e', json: { type: 'response.created', response: {} } })).toEqual([]);
    expect(leaksOf({ name: 'g', json: { object: 'video', tools: [] } })).toEqual(['g.tools: internal key tools']);
  });
});
