/**
 * The MCP endpoint (/api/mcp) through the official v2 client (`@modelcontextprotocol/client`),
 * unmodified, over real HTTP: on 2025-11-25 (its default, the initialize handshake) and on
 * 2026-07-28 (pinned: server/discover, no handshake, the envelope in every request's _meta). The
 * tasks extension (io.modelcontextprotocol/tasks) is not in SDK 2.4.0 (typescript-sdk #2189), so
 * its messages go through the v2 client's own request() and, where the client refuses to decode a
 * `resultType: "task"` answer to tools/call, through its transport as raw JSON-RPC.
 */
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult, JSONRPCMessage, Progress } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { GenerationRecord } from '../../../support/api';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

let h: Harness;
let url: URL;
const clients: Client[] = [];

beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
  url = new URL('/api/mcp', await h.app.listen({ port: 0, host: '127.0.0.1' }));
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await h?.close();
});

const MODERN = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';
const MISSING_GENERATION = `gen_${'0'.repeat(26)}`;
const TOOL_NAMES = [
  'cancel_batch',
  'cancel_generation',
  'enhance_prompt',
  'generate_batch',
  'generate_image',
  'generate_video',
  'get_batch',
  'get_generation',
  'list_models',
];

interface Generation extends Omit<GenerationRecord, 'text'> {
  creditsQuoted: number;
  text: string | null;
}
interface ExtensionTask {
  taskId: string;
  status: string;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs?: number;
  result?: CallToolResult;
}
const extensionTask = z.looseObject({
  taskId: z.string(),
  status: z.string(),
  createdAt: z.string(),
  lastUpdatedAt: z.string(),
  ttlMs: z.number().nullable(),
});
const empty = z.looseObject({});

/** A v2 client as a host would configure it: the URL, the key in a header, and the revision (2025 by default). */
async function connect(key: string, opts: { modern?: boolean; tasks?: boolean } = {}): Promise<Client> {
  const client = new Client(
    { name: 'mcp-v2-test', version: '1.0.0' },
    {
      ...(opts.modern ? { versionNegotiation: { mode: { pin: MODERN } } } : {}),
      ...(opts.tasks ? { capabilities: { extensions: { [TASKS]: {} } } } : {}),
    },
  );
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
  );
  clients.push(client);
  return client;
}

async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  onprogress?: (p: Progress) => void,
): Promise<CallToolResult> {
  return client.callTool({ name, arguments: args }, onprogress ? { onprogress } : {});
}
function structuredOf<T>(result: CallToolResult): T {
  expect(result.structuredContent).toBeDefined();
  const first = result.content[0];
  expect(first?.type).toBe('text');
  expect(JSON.parse((first as { text: string }).text)).toEqual(result.structuredContent);
  return result.structuredContent as T;
}
function refusalOf(result: CallToolResult): { type: string; message: string } {
  expect(result.isError).toBe(true);
  return (JSON.parse((result.content[0] as { text: string }).text) as { error: { type: string; message: string } })
    .error;
}
async function rest<T>(
  method: 'GET' | 'POST',
  path: string,
  key: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await h.call(method, path, { key, ...(body === undefined ? {} : { body }) });
  return { status: res.statusCode, body: res.json<T>() };
}
const balanceOf = async (key: string) =>
  (await rest<{ balance: number; holdsActive: number }>('GET', '/api/v1/balance', key)).body;

let rawId = 1000;
/**
 * A tools/call sent as raw JSON-RPC through the v2 client's transport, with the 2026-07-28 envelope
 * and the tasks extension declared: the client's callTool cannot decode a CreateTaskResult yet.
 */
async function rawCall(key: string, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const message = await rawRequest(key, 'tools/call', { name, arguments: args });
  if (!('result' in message)) throw new Error(`tools/call failed: ${JSON.stringify(message)}`);
  return message.result;
}

/** One request as raw JSON-RPC through the v2 client's transport, with the 2026-07-28 envelope declaring the tasks extension. */
async function rawRequest(key: string, method: string, params: Record<string, unknown>): Promise<JSONRPCMessage> {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  const id = rawId++;
  const answer = new Promise<JSONRPCMessage>((resolve, reject) => {
    transport.onmessage = (m) => {
      if ('id' in m && m.id === id) resolve(m);
    };
    transport.onerror = reject;
  });
  answer.catch(() => undefined); // a failed send is handled below, once
  await transport.start();
  transport.setProtocolVersion(MODERN);
  const sent = transport.send({
    jsonrpc: '2.0',
    id,
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } },
      },
    },
  });
  try {
    await sent;
    return await answer;
  } catch (err) {
    // An error the server answers with an HTTP status (2026-07-28 maps -32601 to 404) comes with its JSON-RPC body.
    const text = (err as { data?: { text?: unknown } }).data?.text;
    if (typeof text !== 'string') throw err;
    return JSON.parse(text) as JSONRPCMessage;
  } finally {
    await transport.close();
  }
}

const getTask = async (client: Client, taskId: string) =>
  (await client.request({ method: 'tasks/get', params: { taskId } }, extensionTask)) as ExtensionTask;
async function untilDone(client: Client, taskId: string): Promise<ExtensionTask> {
  return eventually(async () => {
    const t = await getTask(client, taskId);
    return t.status === 'working' ? undefined : t;
  });
}

describe('the v2 client on 2025-11-25 (its default): the SDK 1.x path, unchanged', () => {
  it('connects with the handshake, lists the six tools and calls each one', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key);
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, tasks: { requests: { tools: { call: {} } } } });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
    await callsEveryTool(client, key);
  });
});

describe('the v2 client on 2026-07-28: no handshake, server/discover', () => {
  it('discovers the revision, tools and the tasks extension; lists the six tools without 2025’s execution field', async () => {
    const { key } = await h.account({ credits: 0 });
    const client = await connect(key, { modern: true });
    expect(client.getNegotiatedProtocolVersion?.() ?? MODERN).toBe(MODERN);
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, extensions: { [TASKS]: {} } });
    expect(client.getServerVersion()).toMatchObject({ name: 'generation-service' });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      expect((tool as { execution?: unknown }).execution).toBeUndefined();
    }
  });

  it('calls every tool; without the tasks extension generate_video answers at once and cancel_generation stops it', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key, { modern: true });
    await callsEveryTool(client, key);
  });

  it('the same key, scopes and ledger as REST: refusals are tool errors with REST’s body, nothing is charged', async () => {
    const { key } = await h.account({ credits: 2, scopes: ['image'] });
    const client = await connect(key, { modern: true });
    const cases: [string, Record<string, unknown>, string][] = [
      ['generate_image', { model: 'flux', prompt: 'a boat' }, '/api/v1/generate'],
      ['generate_video', { model: 'kling', prompt: 'rain' }, '/api/v1/generate'],
    ];
    for (const [tool, args] of cases) {
      const viaRest = await rest<{ error: unknown }>('POST', '/api/v1/generate', key, {
        kind: tool === 'generate_image' ? 'image' : 'video',
        ...args,
      });
      expect(refusalOf(await callTool(client, tool, args))).toEqual(viaRest.body.error);
    }
    expect(await balanceOf(key)).toMatchObject({ balance: 2, holdsActive: 0 });
    const bad = await fetch(url, {
      method: 'POST',
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/list',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } },
      }),
    });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toContain('Bearer');
  });
});

/** Every tool, called once or more, with the outcome REST would give. */
async function callsEveryTool(client: Client, key: string): Promise<void> {
  const models = structuredOf<{ data: unknown[] }>(await callTool(client, 'list_models', { kind: 'video' }));
  expect(models.data.length).toBeGreaterThan(0);

  const progress: Progress[] = [];
  const image = structuredOf<Generation>(
    await callTool(client, 'generate_image', { model: 'flux', prompt: 'a lighthouse sim:delay=600' }, (p) =>
      progress.push(p),
    ),
  );
  expect(image).toMatchObject({ kind: 'image', status: 'succeeded', creditsCharged: 3 });
  expect(progress.at(-1)).toMatchObject({ progress: 3, total: 3, message: `${image.id} succeeded` });

  const enhanced = structuredOf<{ prompt: string; generation: Generation }>(
    await callTool(client, 'enhance_prompt', { prompt: 'a fox sim:tokens=6' }),
  );
  expect(enhanced.prompt.split(' ')).toHaveLength(6);

  const video = structuredOf<Generation>(
    await callTool(client, 'generate_video', {
      model: 'kling',
      prompt: 'waves sim:delay=1500',
      seconds: 5,
      quality: '720p',
    }),
  );
  expect(['queued', 'running']).toContain(video.status);
  const done = structuredOf<Generation>(await callTool(client, 'get_generation', { id: video.id, wait_seconds: 30 }));
  expect(done).toMatchObject({ id: video.id, status: 'succeeded', creditsCharged: 42.5 });

  const slow = structuredOf<Generation>(
    await callTool(client, 'generate_video', { model: 'kling', prompt: 'slow tide sim:delay=30000' }),
  );
  const cancelled = structuredOf<Generation>(await callTool(client, 'cancel_generation', { id: slow.id }));
  expect(cancelled).toMatchObject({ id: slow.id, status: 'failed', error: { code: 'cancelled' }, creditsCharged: 0 });
  const finished = await rest<{ error: unknown }>('POST', `/api/v1/generations/${image.id}/cancel`, key);
  expect(refusalOf(await callTool(client, 'cancel_generation', { id: image.id }))).toEqual(finished.body.error);
  const missing = await rest<{ error: unknown }>('GET', `/api/v1/generations/${MISSING_GENERATION}`, key);
  expect(refusalOf(await callTool(client, 'get_generation', { id: MISSING_GENERATION }))).toEqual(missing.body.error);

  // 3 (image) + the chat reply + 42.5 (video); the cancelled video costs nothing.
  expect(await balanceOf(key)).toMatchObject({
    balance: 100 - 3 - enhanced.generation.creditsCharged - 42.5,
    holdsActive: 0,
  });
}

describe('the tasks extension (io.modelcontextprotocol/tasks) on 2026-07-28', () => {
  it('generate_video with the extension declared answers a task; tasks/get follows it to completed with the tool result inlined', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key, { modern: true, tasks: true });
    const created = await rawCall(key, 'generate_video', {
      model: 'kling',
      prompt: 'a paper boat sim:delay=1500',
      seconds: 5,
    });
    expect(created).toMatchObject({
      resultType: 'task',
      status: 'working',
      ttlMs: 24 * 60 * 60 * 1000,
      pollIntervalMs: 1000,
    });
    expect(created.taskId).toMatch(/^task_/);
    expect(await balanceOf(key)).toMatchObject({ holdsActive: 42.5 });

    const done = await untilDone(client, created.taskId as string);
    expect(done).toMatchObject({ taskId: created.taskId, status: 'completed', createdAt: created.createdAt });
    const g = structuredOf<Generation>(done.result as CallToolResult);
    expect(g).toMatchObject({ kind: 'video', status: 'succeeded', creditsCharged: 42.5 });
    expect(await balanceOf(key)).toMatchObject({ balance: 57.5, holdsActive: 0 });
    // The same generation through REST: one store.
    expect((await rest<Generation>('GET', `/api/v1/generations/${g.id}`, key)).body).toMatchObject({
      id: g.id,
      status: 'succeeded',
    });
  });

  it('a failed generation completes its task with the isError result; a refused call is a tool error, no task; tasks/update acknowledges', async () => {
    const { key } = await h.account({ credits: 50 });
    const client = await connect(key, { modern: true, tasks: true });
    const created = await rawCall(key, 'generate_video', { model: 'kling', prompt: 'storm sim:fail sim:delay=300' });
    const done = await untilDone(client, created.taskId as string);
    expect(done.status).toBe('completed');
    expect(done.result?.isError).toBe(true);
    expect(structuredOf<Generation>(done.result as CallToolResult)).toMatchObject({
      status: 'failed',
      error: { code: 'provider_failed' },
      creditsCharged: 0,
    });

    const refused = await rawCall(key, 'generate_video', {
      model: 'kling',
      prompt: 'rain',
      seconds: 10,
      quality: '1080p',
    });
    expect(refused.resultType).toBe('complete');
    expect(refusalOf(refused as unknown as CallToolResult)).toMatchObject({ type: 'insufficient_credits' });
    expect(
      await client.request(
        { method: 'tasks/update', params: { taskId: created.taskId, inputResponses: { never: { action: 'accept' } } } },
        empty,
      ),
    ).toBeDefined();
    expect(await balanceOf(key)).toMatchObject({ balance: 50, holdsActive: 0 });
  });

  it('tasks/cancel cancels the generation through the service: the hold is released and the task is cancelled', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key, { modern: true, tasks: true });
    const created = await rawCall(key, 'generate_video', { model: 'kling', prompt: 'slow tide sim:delay=30000' });
    expect(await balanceOf(key)).toMatchObject({ holdsActive: 42.5 });
    expect(await client.request({ method: 'tasks/cancel', params: { taskId: created.taskId } }, empty)).toBeDefined();
    expect(await getTask(client, created.taskId as string)).toMatchObject({ status: 'cancelled' });
    expect(await balanceOf(key)).toMatchObject({ balance: 100, holdsActive: 0 });
  });

  it('errors: unknown or another account’s task -32602; tasks/* without the extension -32021; tasks/result and tasks/list are gone', async () => {
    const owner = await h.account({ credits: 100 });
    const other = await h.account({ credits: 100 });
    const created = await rawCall(owner.key, 'generate_video', { model: 'kling', prompt: 'a kite sim:delay=300' });
    const intruder = await connect(other.key, { modern: true, tasks: true });
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      await expect(
        intruder.request({ method, params: { taskId: created.taskId, inputResponses: {} } }, empty),
      ).rejects.toMatchObject({ code: -32602 });
    }
    await expect(
      intruder.request({ method: 'tasks/get', params: { taskId: 'task_nope' } }, empty),
    ).rejects.toMatchObject({ code: -32602 });
    const undeclared = await connect(owner.key, { modern: true });
    const missing = await undeclared
      .request({ method: 'tasks/get', params: { taskId: created.taskId } }, empty)
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ProtocolError);
    expect(missing).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } });
    // The v2 client refuses to send them on 2026-07-28 at all; sent raw, the server does not know them.
    for (const method of ['tasks/result', 'tasks/list']) {
      expect(await rawRequest(owner.key, method, { taskId: created.taskId })).toMatchObject({
        error: { code: -32601 },
      });
    }
    // Without the extension declared, generate_video answers the generation, never a task.
    const plain = structuredOf<Generation>(
      await callTool(undeclared, 'generate_video', { model: 'kling', prompt: 'a kite sim:delay=300' }),
    );
    expect(plain.id).toMatch(/^gen_/);
  });
});
