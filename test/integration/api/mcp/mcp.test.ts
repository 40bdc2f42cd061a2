/**
 * The MCP endpoint (/api/mcp) through the official SDK client, unmodified, over real HTTP: the same
 * key, scopes, rate limit and ledger as REST; tools with schemas and annotations; MCP tasks kept in
 * PostgreSQL, so any API instance follows them, after a restart too. Ends by holding the endpoint's
 * HTTP answers to the OpenAPI document.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ResponseMessage } from '@modelcontextprotocol/sdk/experimental/tasks';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  McpError,
  RELATED_TASK_META_KEY,
} from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, Progress, ResourceLink, Task } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAN_RATE_LIMITS } from '../../../../core/plans';
import { failureMessage } from '../../../../core/vocabulary';
import { freePort } from '../../../../runtime/process';
import { download } from '../../../support/api';
import type { Credits, GenerationRecord } from '../../../support/api';
import { createDatabase, databaseUrlFor, dropDatabase, eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { createConformance, loadDocument } from '../../../support/openapi';

let h: Harness;
let c: ReturnType<typeof createConformance>;
let url: URL;
const clients: Client[] = [];

beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
  c = createConformance(await loadDocument(h.app));
  url = new URL('/api/mcp', await h.app.listen({ port: 0, host: '127.0.0.1' }));
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await h?.close();
});

const MISSING_GENERATION = `gen_${'0'.repeat(26)}`;
const MODEL_IMMEDIATE_RESPONSE = 'io.modelcontextprotocol/model-immediate-response';
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

/** A generation as group A (and so MCP) shows it. */
interface Generation extends Omit<GenerationRecord, 'text'> {
  creditsQuoted: number;
  text: string | null;
}

/** A client of the SDK, as any MCP host would configure it: the URL and the key in a header. */
async function connect(key: string, at: URL = url): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(at, { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
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
  return (await client.callTool(
    { name, arguments: args },
    CallToolResultSchema,
    onprogress ? { onprogress } : {},
  )) as CallToolResult;
}

/** The structured result, after checking that its text mirror says the same. */
function structuredOf<T>(result: CallToolResult): T {
  expect(result.structuredContent).toBeDefined();
  const first = result.content[0];
  expect(first?.type).toBe('text');
  expect(JSON.parse((first as { text: string }).text)).toEqual(result.structuredContent);
  return result.structuredContent as T;
}

/** A refusal: a tool error whose text is the REST error body. */
function refusalOf(result: CallToolResult): { type: string; message: string; code: number; [k: string]: unknown } {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  return (
    JSON.parse((result.content[0] as { text: string }).text) as {
      error: { type: string; message: string; code: number };
    }
  ).error;
}

const linkOf = (result: CallToolResult) => result.content.find((b): b is ResourceLink => b.type === 'resource_link');

async function rest<T>(
  method: 'GET' | 'POST',
  path: string,
  key: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await h.call(method, path, { key, ...(body === undefined ? {} : { body }) });
  return { status: res.statusCode, body: res.json<T>() };
}
const balanceOf = async (key: string) => (await rest<Credits>('GET', '/api/v1/balance', key)).body;

/** Runs a task-augmented call with the SDK's task API and collects what it yields. */
async function callAsTask(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<ResponseMessage<CallToolResult>[]> {
  const messages: ResponseMessage<CallToolResult>[] = [];
  for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, {
    task: { ttl: 600_000 },
  })) {
    messages.push(m);
  }
  return messages;
}
const createdTask = (messages: ResponseMessage<CallToolResult>[]): Task => {
  const created = messages.find((m) => m.type === 'taskCreated');
  if (!created) throw new Error(`no task was created: ${JSON.stringify(messages)}`);
  return created.task;
};

/** A raw POST, for what the SDK client does not show: HTTP statuses and headers. */
function post(
  app: FastifyInstance,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/mcp',
    headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
/** The JSON-RPC messages of an SSE answer. */
const eventsOf = (res: LightMyRequestResponse) =>
  res.body
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l.length > 6)
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);

/** Another API instance on the same database and Temporal, listening on its own port. */
async function secondInstance(
  opts: { mcpAllowedOrigins?: string[] } = {},
): Promise<{ app: FastifyInstance; url: URL }> {
  const app = await productionApi(h, {
    syncWaitMs: 20_000,
    ...opts,
  });
  return { app, url: new URL('/api/mcp', await app.listen({ port: 0, host: '127.0.0.1' })) };
}

describe('tools', () => {
  it('lists six tools, each with input and output schemas and annotations; generate_video may run as a task', async () => {
    const { key } = await h.account({ credits: 0 });
    const client = await connect(key);
    expect(client.getServerCapabilities()).toMatchObject({
      tools: {},
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
    expect(client.getServerVersion()).toMatchObject({ name: 'generation-service' });
    expect(client.getInstructions()).toContain('generate_video');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const tool of tools) {
      expect(tool.description?.length, tool.name).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      expect(tool.annotations?.title).toBe(tool.title);
    }
    for (const name of ['list_models', 'get_generation'])
      expect(byName.get(name)?.annotations).toMatchObject({ readOnlyHint: true });
    for (const name of ['generate_image', 'generate_video', 'enhance_prompt']) {
      expect(byName.get(name)?.annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      });
    }
    expect(byName.get('cancel_generation')?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
    expect(byName.get('generate_video')?.execution).toEqual({ taskSupport: 'optional' });
    expect(tools.filter((t) => t.execution !== undefined).map((t) => t.name)).toEqual(['generate_video']);
    expect(byName.get('generate_image')?.inputSchema).toMatchObject({
      required: ['model', 'prompt'],
      properties: { width: { type: 'integer' } },
    });
    expect(byName.get('generate_video')?.outputSchema).toMatchObject({
      properties: { status: { enum: ['queued', 'running', 'succeeded', 'failed'] } },
    });
  });

  it('generate_image waits for the image: id, signed URL, credits charged, a resource_link, progress; the balance moves as over REST', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key);
    const progress: Progress[] = [];
    const result = await callTool(
      client,
      'generate_image',
      { model: 'flux', prompt: 'a lighthouse at dusk sim:delay=1200', width: 1200, height: 800 },
      (p) => progress.push(p),
    );
    expect(result.isError).toBeFalsy();
    const g = structuredOf<Generation>(result);
    expect(g).toMatchObject({
      kind: 'image',
      model: 'image-flux',
      status: 'succeeded',
      creditsCharged: 3,
      creditsQuoted: 3,
      error: null,
    });
    expect(linkOf(result)).toMatchObject({ type: 'resource_link', uri: g.outputUrl, mimeType: 'image/png' });
    const file = await download(h, g.outputUrl);
    expect(file).toMatchObject({ status: 200, contentType: 'image/png' });

    // Progress went queued (maybe) → running → succeeded, one step each, ending at 3 of 3.
    expect(progress.map((p) => p.message?.split(' ')[1])).toContain('running');
    expect(progress.at(-1)).toMatchObject({ progress: 3, total: 3, message: `${g.id} succeeded` });
    expect(progress.map((p) => p.progress)).toEqual([...new Set(progress.map((p) => p.progress))].sort());

    // One ledger, one store: REST shows the same record and the same charge.
    const { outputUrl: _fresh, ...record } = (await rest<Generation>('GET', `/api/v1/generations/${g.id}`, key)).body;
    const { outputUrl: _signed, ...same } = g;
    expect(record).toEqual(same);
    expect(await balanceOf(key)).toMatchObject({ balance: 97, holdsActive: 0 });
    const viaRest = await rest<Generation>('POST', '/api/v1/generate', key, {
      kind: 'image',
      model: 'flux',
      prompt: 'a lighthouse at dusk',
    });
    expect(viaRest.body.creditsCharged).toBe(g.creditsCharged);
    expect(await balanceOf(key)).toMatchObject({ balance: 94, holdsActive: 0 });
  });

  it('generate_video answers at once with the id and queued or running; get_generation follows it to succeeded', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key);
    const started = await callTool(client, 'generate_video', {
      model: 'kling',
      prompt: 'waves on a beach sim:delay=1500',
      seconds: 5,
      quality: '720p',
    });
    const g = structuredOf<Generation>(started);
    expect(['queued', 'running']).toContain(g.status);
    expect(g).toMatchObject({ kind: 'video', outputUrl: '', creditsCharged: 0, creditsQuoted: 42.5 });
    expect(started.content.some((b) => b.type === 'text' && b.text.includes('get_generation'))).toBe(true);
    expect(await balanceOf(key)).toMatchObject({ balance: 57.5, holdsActive: 42.5 });

    const progress: Progress[] = [];
    const done = await callTool(client, 'get_generation', { id: g.id, wait_seconds: 30 }, (p) => progress.push(p));
    expect(structuredOf<Generation>(done)).toMatchObject({ id: g.id, status: 'succeeded', creditsCharged: 42.5 });
    expect(linkOf(done)).toMatchObject({ mimeType: 'video/webm' });
    expect(progress.at(-1)).toMatchObject({ progress: 3, total: 3 });
    expect(await balanceOf(key)).toMatchObject({ balance: 57.5, holdsActive: 0 });

    // get_generation reads any door's generations, at once without wait_seconds.
    const viaRest = await rest<Generation>('POST', '/api/v1/generate', key, {
      kind: 'chat',
      prompt: 'hello sim:tokens=3',
    });
    const read = structuredOf<Generation>(await callTool(client, 'get_generation', { id: viaRest.body.id }));
    expect(read).toMatchObject({ id: viaRest.body.id, kind: 'chat', status: 'succeeded', text: viaRest.body.text });
  });

  it('enhance_prompt is a chat generation through the same service: free while the allowance lasts, then billed', async () => {
    const { key } = await h.account({ credits: 10, chatCap: 1 });
    const client = await connect(key);
    const first = structuredOf<{ prompt: string; generation: Generation }>(
      await callTool(client, 'enhance_prompt', { prompt: 'a fox in the snow sim:tokens=8', target: 'image' }),
    );
    expect(first.prompt.split(' ')).toHaveLength(8);
    expect(first.generation).toMatchObject({
      kind: 'chat',
      status: 'succeeded',
      creditsCharged: 0,
      text: first.prompt,
    });
    const second = structuredOf<{ prompt: string; generation: Generation }>(
      await callTool(client, 'enhance_prompt', {
        prompt: 'a paper boat sim:tokens=5',
        target: 'video',
        model: 'chat-sonnet',
      }),
    );
    expect(second.generation).toMatchObject({ model: 'chat-sonnet', creditsCharged: 2 });
    expect(await balanceOf(key)).toMatchObject({ balance: 8, trial: { chatCap: 1, chatUsed: 1, chatLeft: 0 } });
  });

  it('list_models answers the catalogue as GET /api/v1/models does, optionally of one kind', async () => {
    const { key } = await h.account({ credits: 0 });
    const client = await connect(key);
    for (const query of [{}, { kind: 'video' }]) {
      const { data } = structuredOf<{ data: unknown[] }>(await callTool(client, 'list_models', query));
      const res = await h.app.inject({
        method: 'GET',
        url: `/api/v1/models${'kind' in query ? `?kind=${query.kind}` : ''}`,
      });
      expect(data).toEqual(res.json<{ data: unknown[] }>().data);
    }
  });
});

describe('cancel_generation', () => {
  it('cancels a video through the service: the hold is released, again answers the same; a finished one and a missing one are REST’s errors', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key);
    const g = structuredOf<Generation>(
      await callTool(client, 'generate_video', { model: 'kling', prompt: 'slow tide sim:delay=30000' }),
    );
    expect(await balanceOf(key)).toMatchObject({ holdsActive: 42.5 });
    const cancelled = await callTool(client, 'cancel_generation', { id: g.id });
    expect(cancelled.isError).toBeFalsy();
    expect(structuredOf<Generation>(cancelled)).toMatchObject({
      id: g.id,
      status: 'failed',
      error: { code: 'cancelled' },
      creditsCharged: 0,
    });
    expect(await balanceOf(key)).toMatchObject({ balance: 100, holdsActive: 0 });
    expect(structuredOf<Generation>(await callTool(client, 'cancel_generation', { id: g.id }))).toMatchObject({
      status: 'failed',
      error: { code: 'cancelled' },
    });

    const image = structuredOf<Generation>(
      await callTool(client, 'generate_image', { model: 'flux', prompt: 'a kite' }),
    );
    for (const id of [image.id, MISSING_GENERATION]) {
      const viaRest = await rest<{ error: unknown }>('POST', `/api/v1/generations/${id}/cancel`, key);
      expect(refusalOf(await callTool(client, 'cancel_generation', { id }))).toEqual(viaRest.body.error);
    }
    expect(refusalOf(await callTool(client, 'cancel_generation', { id: image.id }))).toMatchObject({
      type: 'generation_finished',
    });
  });
});

describe('business failures are tool errors with the REST code and message, and charge nothing', () => {
  it('insufficient credits, unknown model, policy, missing scope, not found and bad arguments', async () => {
    const { key } = await h.account({ credits: 2, scopes: ['image', 'chat'] });
    const client = await connect(key);
    const cases: [string, Record<string, unknown>, Record<string, unknown>, string][] = [
      [
        'generate_image',
        { model: 'flux', prompt: 'a boat' },
        { kind: 'image', model: 'flux', prompt: 'a boat' },
        'insufficient_credits',
      ],
      [
        'generate_image',
        { model: 'dall-e-9', prompt: 'a boat' },
        { kind: 'image', model: 'dall-e-9', prompt: 'a boat' },
        'unknown_cost',
      ],
      [
        'generate_image',
        { model: 'flux', prompt: 'scene of a beheading' },
        { kind: 'image', model: 'flux', prompt: 'scene of a beheading' },
        'content_policy_violation',
      ],
      [
        'generate_video',
        { model: 'kling', prompt: 'rain' },
        { kind: 'video', model: 'kling', prompt: 'rain' },
        'permission_error',
      ],
      ['generate_image', { model: 'flux' }, { kind: 'image', model: 'flux' }, 'invalid_request_error'],
      [
        'generate_image',
        { model: 'flux', prompt: 'x', width: 1024 },
        { kind: 'image', model: 'flux', prompt: 'x', width: 1024 },
        'invalid_request_error',
      ],
    ];
    for (const [tool, args, body, type] of cases) {
      const error = refusalOf(await callTool(client, tool, args));
      const viaRest = await rest<{ error: Record<string, unknown> }>('POST', '/api/v1/generate', key, body);
      expect(error, `${tool} ${JSON.stringify(args)}`).toMatchObject({ type });
      expect(error).toEqual(viaRest.body.error);
    }
    expect(refusalOf(await callTool(client, 'get_generation', { id: MISSING_GENERATION }))).toEqual(
      (await rest<{ error: unknown }>('GET', `/api/v1/generations/${MISSING_GENERATION}`, key)).body.error,
    );
    expect(await balanceOf(key)).toMatchObject({ balance: 2, holdsActive: 0 });
    expect((await rest<{ data: unknown[] }>('GET', '/api/v1/generations', key)).body.data).toEqual([]);
  });

  it('a generation that fails is a tool error carrying the failed record; its hold is released', async () => {
    const { key } = await h.account({ credits: 10 });
    const client = await connect(key);
    const result = await callTool(client, 'generate_image', { model: 'flux', prompt: 'a cat sim:fail' });
    expect(result.isError).toBe(true);
    expect(structuredOf<Generation>(result)).toMatchObject({
      status: 'failed',
      creditsCharged: 0,
      outputUrl: '',
      error: { code: 'provider_failed' },
    });
    expect(linkOf(result)).toBeUndefined();
    expect(await balanceOf(key)).toMatchObject({ balance: 10, holdsActive: 0 });
  });
});

describe('MCP tasks', () => {
  it('generate_video as a task: the task follows the generation to completed, with tasks/get and tasks/result', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key);
    const messages = await callAsTask(client, 'generate_video', {
      model: 'kling',
      prompt: 'a paper boat sim:delay=1500',
      seconds: 5,
    });
    const task = createdTask(messages);
    expect(task).toMatchObject({ status: 'working', ttl: 600_000, pollInterval: 1000 });
    expect(messages.filter((m) => m.type === 'taskStatus').map((m) => (m as { task: Task }).task.status)).toContain(
      'completed',
    );
    const last = messages.at(-1);
    if (last?.type !== 'result') throw new Error(`the stream ended with ${JSON.stringify(last)}`);
    const g = structuredOf<Generation>(last.result);
    expect(g).toMatchObject({ kind: 'video', status: 'succeeded', creditsCharged: 42.5 });

    expect(await client.experimental.tasks.getTask(task.taskId)).toMatchObject({
      taskId: task.taskId,
      status: 'completed',
      createdAt: task.createdAt,
    });
    const again = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(again._meta?.[RELATED_TASK_META_KEY]).toEqual({ taskId: task.taskId });
    expect(structuredOf<Generation>(again)).toMatchObject({ id: g.id, status: 'succeeded' });
    expect(await balanceOf(key)).toMatchObject({ balance: 57.5, holdsActive: 0 });
    const { tasks } = await client.experimental.tasks.listTasks();
    expect(tasks.map((t) => t.taskId)).toContain(task.taskId);
  });

  it('tasks/result waits for the end and sends progress meanwhile', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key);
    const task = createdTask(
      await collectUntilCreated(client, {
        model: 'seedance-lite',
        prompt: 'clouds sim:delay=2500',
        seconds: 3,
        quality: '480p',
      }),
    );
    const progress: Progress[] = [];
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, {
      onprogress: (p) => progress.push(p),
    });
    expect(structuredOf<Generation>(result)).toMatchObject({ status: 'succeeded', creditsCharged: 6 });
    expect(progress.map((p) => p.message?.split(' ')[1])).toContain('running');
    expect(progress.at(-1)).toMatchObject({ progress: 3, total: 3 });
  });

  it('a failed generation fails its task; a refused call makes a task that has failed with the refusal; nothing is charged', async () => {
    const { key } = await h.account({ credits: 50 });
    const client = await connect(key);
    // The plain request shows what the SDK's task stream leaves out: what a host may tell the model at once.
    const { task: failed, _meta } = await client.request(
      {
        method: 'tools/call',
        params: {
          name: 'generate_video',
          arguments: { model: 'kling', prompt: 'storm sim:fail sim:delay=300' },
          task: {},
        },
      },
      CreateTaskResultSchema,
    );
    expect(_meta?.[MODEL_IMMEDIATE_RESPONSE]).toMatch(
      /^Generation gen_\w{26} is (queued|running); this task follows it/,
    );
    await eventually(async () =>
      (await client.experimental.tasks.getTask(failed.taskId)).status === 'working' ? undefined : true,
    );
    const after = await client.experimental.tasks.getTask(failed.taskId);
    expect(after).toMatchObject({ status: 'failed', statusMessage: failureMessage('provider_failed') });
    const result = await client.experimental.tasks.getTaskResult(failed.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(structuredOf<Generation>(result)).toMatchObject({
      status: 'failed',
      error: { code: 'provider_failed' },
      creditsCharged: 0,
    });

    const refused = createdTask(
      await callAsTask(client, 'generate_video', { model: 'kling', prompt: 'rain', seconds: 10, quality: '1080p' }),
    );
    expect(refused).toMatchObject({ status: 'failed', statusMessage: expect.stringContaining('Insufficient credits') });
    const refusal = refusalOf(await client.experimental.tasks.getTaskResult(refused.taskId, CallToolResultSchema));
    expect(refusal).toMatchObject({ type: 'insufficient_credits', required: 130, available: 50 });
    expect(await balanceOf(key)).toMatchObject({ balance: 50, holdsActive: 0 });
  });

  it('tasks/cancel cancels the generation through the service: the hold is released and the task stays cancelled', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key);
    const task = createdTask(
      await collectUntilCreated(client, { model: 'kling', prompt: 'slow tide sim:delay=30000' }),
    );
    expect(await balanceOf(key)).toMatchObject({ holdsActive: 42.5 });
    expect(await client.experimental.tasks.cancelTask(task.taskId)).toMatchObject({
      taskId: task.taskId,
      status: 'cancelled',
    });
    expect(await client.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'cancelled' });
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(structuredOf<Generation>(result)).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
    expect(await balanceOf(key)).toMatchObject({ balance: 100, holdsActive: 0 });
    await expect(client.experimental.tasks.cancelTask(task.taskId)).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
    });
  });

  it('another account’s task is not found, nor listed; nor is its generation', async () => {
    const owner = await h.account({ credits: 100 });
    const stranger = await h.account({ credits: 100 });
    const mine = await connect(owner.key);
    const theirs = await connect(stranger.key);
    const task = createdTask(await collectUntilCreated(mine, { model: 'kling', prompt: 'dunes sim:delay=500' }));
    const notFound = { code: ErrorCode.InvalidParams, message: expect.stringContaining('not found') };
    await expect(theirs.experimental.tasks.getTask(task.taskId)).rejects.toMatchObject(notFound);
    await expect(theirs.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).rejects.toMatchObject(
      notFound,
    );
    await expect(theirs.experimental.tasks.cancelTask(task.taskId)).rejects.toMatchObject(notFound);
    expect((await theirs.experimental.tasks.listTasks()).tasks).toEqual([]);
    await expect(theirs.experimental.tasks.getTask('not-a-task')).rejects.toBeInstanceOf(McpError);
    const result = await mine.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const { id } = structuredOf<Generation>(result);
    expect(refusalOf(await callTool(theirs, 'get_generation', { id }))).toMatchObject({ type: 'not_found' });
  });

  it('a task is followed from a second API instance, and after the first one is gone (a restart)', async () => {
    const { key } = await h.account({ credits: 100 });
    const first = await secondInstance();
    const second = await secondInstance();
    try {
      const onFirst = await connect(key, first.url);
      const task = createdTask(
        await collectUntilCreated(onFirst, { model: 'kling', prompt: 'a lighthouse sim:delay=2500' }),
      );
      const onSecond = await connect(key, second.url);
      expect(await onSecond.experimental.tasks.getTask(task.taskId)).toMatchObject({
        taskId: task.taskId,
        status: 'working',
      });

      await onFirst.close();
      await first.app.close();
      const afterRestart = await secondInstance();
      try {
        const onThird = await connect(key, afterRestart.url);
        const result = await onThird.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
        expect(structuredOf<Generation>(result)).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });
        expect(await onSecond.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'completed' });
      } finally {
        await afterRestart.app.close();
      }
    } finally {
      await first.app.close();
      await second.app.close();
    }
  });
});

/** Starts generate_video as a task and returns as soon as the task exists (the stream is left to end on its own). */
async function collectUntilCreated(
  client: Client,
  args: Record<string, unknown>,
): Promise<ResponseMessage<CallToolResult>[]> {
  const stream = client.experimental.tasks.callToolStream(
    { name: 'generate_video', arguments: args },
    CallToolResultSchema,
    { task: { ttl: 600_000 } },
  );
  const first = await stream.next();
  await stream.return(undefined);
  return first.done ? [] : [first.value];
}

describe('the endpoint', () => {
  it('two clients at once, each on its own account', async () => {
    const a = await h.account({ credits: 20 });
    const b = await h.account({ credits: 20 });
    const [ca, cb] = await Promise.all([connect(a.key), connect(b.key)]);
    const [ra, rb, models] = await Promise.all([
      callTool(ca, 'generate_image', { model: 'kie-seedream-4', prompt: 'a red kite sim:delay=400' }),
      callTool(cb, 'generate_image', { model: 'image-qwen', prompt: 'a blue kite sim:delay=400' }),
      callTool(cb, 'list_models', { kind: 'image' }),
    ]);
    expect(structuredOf<Generation>(ra)).toMatchObject({ model: 'kie-seedream-4', creditsCharged: 4 });
    expect(structuredOf<Generation>(rb)).toMatchObject({ model: 'image-qwen', creditsCharged: 5 });
    expect(structuredOf<{ data: unknown[] }>(models).data.length).toBeGreaterThan(5);
    expect(await balanceOf(a.key)).toMatchObject({ balance: 16 });
    expect(await balanceOf(b.key)).toMatchObject({ balance: 15 });
  });

  it('a revoked key is refused on its next request: 401 with WWW-Authenticate', async () => {
    const { key, keyId } = await h.account({ credits: 10 });
    const client = await connect(key);
    await client.listTools();
    expect((await h.admin('DELETE', `/admin/v1/keys/${keyId}`)).statusCode).toBe(200);
    const refused = await client.listTools().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect(refused).toMatchObject({ code: 401 });

    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      },
      body: JSON.stringify(INITIALIZE),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="generation-service", error="invalid_token"');
    expect(await res.json()).toMatchObject({ error: { type: 'authentication_error', code: 401 } });
  });

  it('the OAuth discovery documents are 404, so clients send the configured key', async () => {
    for (const path of [
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/api/mcp',
      '/.well-known/oauth-authorization-server',
    ]) {
      const res = await fetch(new URL(path, url));
      expect(res.status, path).toBe(404);
      expect(await res.json()).toMatchObject({ error: { type: 'not_found' } });
    }
  });

  it('a page of a configured origin may call (CORS lets it read the answers, errors too); a foreign origin may not', async () => {
    const { key } = await h.account({ credits: 0 });
    const other = await secondInstance({ mcpAllowedOrigins: ['https://console.example'] });
    try {
      const auth = { authorization: `Bearer ${key}` };
      const page = { origin: 'https://console.example' };
      const preflight = await other.app.inject({
        method: 'OPTIONS',
        url: '/api/mcp',
        headers: {
          ...page,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type',
        },
      });
      c.conforms(preflight, 'options', '/api/mcp', 204);
      expect(preflight.headers).toMatchObject({
        'access-control-allow-origin': 'https://console.example',
        'access-control-allow-methods': 'POST',
        vary: 'Origin',
        'access-control-allow-headers': expect.stringContaining('Authorization'),
      });
      const ok = await post(other.app, INITIALIZE, { ...auth, ...page });
      expect(ok.statusCode).toBe(200);
      expect(ok.headers['access-control-allow-origin']).toBe('https://console.example');
      const unauthorised = await post(other.app, INITIALIZE, page);
      expect(unauthorised.statusCode).toBe(401);
      expect(unauthorised.headers).toMatchObject({
        'access-control-allow-origin': 'https://console.example',
        'access-control-expose-headers': expect.stringContaining('WWW-Authenticate'),
      });

      const foreign = { origin: 'https://evil.example' };
      const refused = await post(other.app, INITIALIZE, { ...auth, ...foreign });
      expect(refused.statusCode).toBe(403);
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
      c.conforms(
        await other.app.inject({ method: 'OPTIONS', url: '/api/mcp', headers: foreign }),
        'options',
        '/api/mcp',
        403,
      );
      const bare = await post(other.app, INITIALIZE, auth);
      expect(bare.statusCode).toBe(200);
      expect(bare.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await other.app.close();
    }
  });
});

describe('a JSON-RPC batch cannot multiply the rate limit', () => {
  // flux costs 3 credits an image; a free-plan key has 20 requests a minute.
  const imageCall = (id: number) => ({
    jsonrpc: '2.0' as const,
    id,
    method: 'tools/call',
    params: { name: 'generate_image', arguments: { model: 'flux', prompt: `batch ${id}` } },
  });
  const batchOf25 = () => Array.from({ length: 25 }, (_, i) => imageCall(i + 1));

  /** What the account was charged and made, read with another key (the tested key's window may be full). */
  async function ledgerOf(accountId: string): Promise<{ balance: number; holdsActive: number; generations: number }> {
    const other = (await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['image'] })).json<{
      key: string;
    }>().key;
    const balance = (await rest<Credits>('GET', '/api/v1/balance', other)).body;
    const list = (await rest<{ data: unknown[] }>('GET', '/api/v1/generations?limit=100', other)).body;
    return { balance: balance.balance, holdsActive: balance.holdsActive, generations: list.data.length };
  }

  it('a raw POST of 25 tools/call with a free-plan key is refused whole with a JSON-RPC error: nothing runs, nothing is charged', async () => {
    const { key, accountId } = await h.account({ credits: 100, plan: 'free', scopes: ['image'] });
    const res = await post(h.app, batchOf25(), { authorization: `Bearer ${key}` });
    expect(c.conforms(res, 'post', '/api/mcp', 400)).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: ErrorCode.InvalidRequest, message: expect.stringMatching(/batches are not accepted/) },
    });
    // The refused batch counted once, like any request.
    expect(res.headers['ratelimit-remaining']).toBe(String(PLAN_RATE_LIMITS.free - 1));
    expect(await ledgerOf(accountId)).toEqual({ balance: 100, holdsActive: 0, generations: 0 });
  });

  it('the SDK’s own transport can send that batch: refused the same way', async () => {
    const { key, accountId } = await h.account({ credits: 100, plan: 'free', scopes: ['image'] });
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
    await transport.start();
    try {
      await expect(transport.send(batchOf25())).rejects.toThrow(/batches are not accepted/);
    } finally {
      await transport.close();
    }
    expect(await ledgerOf(accountId)).toEqual({ balance: 100, holdsActive: 0, generations: 0 });
  });

  it('the same 25 calls one per POST: the plan’s 20 run and are charged, the other 5 are 429 and run nothing', async () => {
    const { key, accountId } = await h.account({ credits: 100, plan: 'free', scopes: ['image'] });
    const statuses: number[] = [];
    for (const call of batchOf25())
      statuses.push((await post(h.app, call, { authorization: `Bearer ${key}` })).statusCode);
    expect(statuses).toEqual([
      ...Array<number>(PLAN_RATE_LIMITS.free).fill(200),
      ...Array<number>(25 - PLAN_RATE_LIMITS.free).fill(429),
    ]);
    expect(await ledgerOf(accountId)).toEqual({
      balance: 100 - 3 * PLAN_RATE_LIMITS.free,
      holdsActive: 0,
      generations: PLAN_RATE_LIMITS.free,
    });
  });

  it('through the SDK client, every call counts: no more than the plan runs', async () => {
    const { key, accountId } = await h.account({ credits: 100, plan: 'free', scopes: ['image'] });
    const client = await connect(key);
    let ran = 0;
    let refused = 0;
    for (let i = 1; i <= 25; i++) {
      try {
        const result = await callTool(client, 'generate_image', { model: 'flux', prompt: `sdk ${i}` });
        if (!result.isError) ran++;
      } catch (err) {
        expect(String(err)).toMatch(/429|rate/i);
        refused++;
      }
    }
    // initialize and notifications/initialized took their places in the window too.
    expect(ran).toBeLessThanOrEqual(PLAN_RATE_LIMITS.free - 2);
    expect(ran + refused).toBe(25);
    expect(await ledgerOf(accountId)).toEqual({ balance: 100 - 3 * ran, holdsActive: 0, generations: ran });
  });
});

describe('HTTP answers conform to the OpenAPI document', () => {
  it('200 (an SSE stream), 202, 400, 401, 403, 406 and 413 on POST; 405 with Allow on GET and DELETE, which are no operations', async () => {
    const { key } = await h.account({ credits: 0 });
    const auth = { authorization: `Bearer ${key}` };
    const ok = await post(h.app, INITIALIZE, auth);
    c.conforms(ok, 'post', '/api/mcp', 200);
    expect(eventsOf(ok)).toEqual([
      expect.objectContaining({ id: 1, result: expect.objectContaining({ protocolVersion: LATEST_PROTOCOL_VERSION }) }),
    ]);
    expect(ok.headers['ratelimit-limit']).toBe(String(PLAN_RATE_LIMITS.samurai));
    expect(ok.headers['mcp-session-id']).toBeUndefined();
    c.conforms(
      await post(h.app, { jsonrpc: '2.0', method: 'notifications/initialized' }, auth),
      'post',
      '/api/mcp',
      202,
    );

    expect(c.conforms(await post(h.app, '{"jsonrpc":', auth), 'post', '/api/mcp', 400)).toMatchObject({
      error: { type: 'invalid_request_error' },
    });
    expect(c.conforms(await post(h.app, { jsonrpc: '2.0', id: 2 }, auth), 'post', '/api/mcp', 400)).toMatchObject({
      jsonrpc: '2.0',
      error: { code: -32700 },
    });

    for (const [headers, challenge] of [
      [{}, 'Bearer realm="generation-service"'],
      [{ authorization: 'Bearer gsk_nope' }, 'Bearer realm="generation-service", error="invalid_token"'],
    ] as const) {
      const res = await post(h.app, INITIALIZE, headers);
      expect(c.conforms(res, 'post', '/api/mcp', 401)).toMatchObject({ error: { type: 'authentication_error' } });
      expect(res.headers['www-authenticate']).toBe(challenge);
    }
    const foreign = await post(h.app, INITIALIZE, { ...auth, origin: 'http://attacker.example' });
    expect(c.conforms(foreign, 'post', '/api/mcp', 403)).toMatchObject({
      error: { type: 'permission_error', param: 'Origin' },
    });
    expect(
      c.conforms(await post(h.app, INITIALIZE, { ...auth, accept: 'application/json' }), 'post', '/api/mcp', 406),
    ).toMatchObject({ error: { code: -32000 } });
    // The 2026-07-28 revision has no tasks/list (the tasks extension dropped it): method not found, as HTTP 404.
    const modernMeta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const missing = await post(
      h.app,
      { jsonrpc: '2.0', id: 9, method: 'tasks/list', params: { _meta: modernMeta } },
      { ...auth, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tasks/list' },
    );
    expect(c.conforms(missing, 'post', '/api/mcp', 404)).toMatchObject({ error: { code: -32601 } });
    const huge = { jsonrpc: '2.0', id: 3, method: 'ping', params: { pad: 'x'.repeat(9 * 1024 * 1024) } };
    c.conforms(await post(h.app, huge, auth), 'post', '/api/mcp', 413);

    // No stream to GET and no session to DELETE: neither is an operation, and Allow names the ones there are.
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await h.app.inject({ method, url: '/api/mcp', headers: { ...auth, accept: 'text/event-stream' } });
      expect(res.statusCode).toBe(405);
      expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 405 } });
      expect(res.headers.allow).toBe('POST, OPTIONS');
    }
  });

  it('429 with Retry-After once the plan’s window is used up, as over REST', async () => {
    const { key } = await h.account({ credits: 0, plan: 'free' });
    const auth = { authorization: `Bearer ${key}` };
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) expect((await post(h.app, INITIALIZE, auth)).statusCode).toBe(200);
    const res = await post(h.app, INITIALIZE, auth);
    expect(c.conforms(res, 'post', '/api/mcp', 429)).toMatchObject({ error: { type: 'rate_limit_error' } });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect((await h.call('GET', '/api/v1/balance', { key })).statusCode).toBe(429);
  });

  it('503 when PostgreSQL cannot be reached, 500 when it answers but is broken, without internals', async () => {
    const { key } = await h.account({ credits: 0 });
    const auth = { authorization: `Bearer ${key}` };
    const unreachable = new pg.Pool({
      connectionString: `postgresql://nobody@127.0.0.1:${await freePort()}/nowhere`,
      connectionTimeoutMillis: 2_000,
      max: 1,
    });
    const name = `t_broken_${Date.now()}`;
    await createDatabase(name);
    const broken = new pg.Pool({ connectionString: databaseUrlFor(name), max: 1 });
    await broken.query('DROP TABLE api_keys CASCADE');
    const apps = await Promise.all(
      [unreachable, broken].map((pool) =>
        productionApi(h, {
          pool,
        }),
      ),
    );
    try {
      const down = await post(apps[0]!, INITIALIZE, auth);
      expect(c.conforms(down, 'post', '/api/mcp', 503)).toMatchObject({ error: { type: 'server_error' } });
      expect(down.headers['retry-after']).toBe('1');
      const failed = await post(apps[1]!, INITIALIZE, auth);
      expect(c.conforms(failed, 'post', '/api/mcp', 500)).toEqual({
        error: { type: 'server_error', code: 500, message: 'Internal error; retry shortly.', param: null },
      });
    } finally {
      await Promise.all(apps.map((app) => app.close()));
      await Promise.all([unreachable.end(), broken.end()]);
      await dropDatabase(name);
    }
  });

  it('every documented answer of /api/mcp was produced above', () => {
    c.expectCoverage('mcp.test.ts');
  });
});
