import { isTerminal } from '@modelcontextprotocol/sdk/experimental/tasks';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  ListToolsRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
} from '@modelcontextprotocol/sdk/types.js';
import type {
  CallToolResult,
  CreateTaskResult,
  ProgressToken,
  ServerNotification,
  ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type pg from 'pg';
import { GenerationFinishedError } from '../../core/errors';
import type { Principal } from '../../core/accounts/principal';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import type { GenerationView } from '../../core/generation/view';
import { version } from '../shared/docs';
import { generationResult, guardedBy, refusalOf } from './results';
import { McpTaskStore, taskNotFound, taskOf } from './task-store';
import type { TaskContext } from './task-store';
import { TOOLS } from './tools';
import type { McpTool, ToolContext } from './define-tool';
import type { GenerationStatus } from '../../core/vocabulary';

export interface McpServerDeps {
  pool: pg.Pool;
  service: GenerationService;
  batches: BatchService;
  syncWaitMs: number;
  /** The pollInterval tasks suggest (ms). */
  taskPollIntervalMs: number;
  /** The request's X-Customer-Id: the customer its generate tools are for, unless a tool names its own. */
  customer?: string | undefined;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export const INSTRUCTIONS =
  'Generates images, videos and chat replies against a credit balance (1 credit = 0.01 EUR). list_models gives the prices. ' +
  'An image (generate_image) or an improved prompt (enhance_prompt) comes back within the call. A video (generate_video) takes ' +
  'minutes: call it as an MCP task and follow the task, or follow its id with get_generation; cancel_generation stops it. ' +
  'Credits are held when a generation starts and charged only if it succeeds. A refused call (e.g. insufficient_credits, ' +
  'unknown_cost, permission_error) is a tool error whose text is the REST error body; nothing is charged for it.';

/** One step per status a generation goes through, for progress notifications (done is 3 of 3). */
const PROGRESS_STEP: Readonly<Record<GenerationStatus, number>> = { queued: 1, running: 2, succeeded: 3, failed: 3 };
const MODEL_IMMEDIATE_RESPONSE = 'io.modelcontextprotocol/model-immediate-response';
/** tasks/result follows its generation in slices of this length until the generation ends. */
const TASK_FOLLOW_SLICE_MS = 60_000;

/**
 * The MCP server for one HTTP request of one caller (stateless Streamable HTTP: any API instance
 * answers any request). It speaks protocol 2025-11-25 with the SDK's low-level Server: tools/list
 * and tools/call are ours, so that a generate_video called without a task answers at once (the
 * SDK's McpServer would wait for the task to finish instead); tasks/get, tasks/list and
 * tasks/cancel are the SDK's over our TaskStore (PostgreSQL); tasks/result is ours, to send
 * progress while the caller waits.
 */
export function createMcpServer(deps: McpServerDeps, principal: Principal, log: FastifyBaseLogger): Server {
  const { service } = deps;
  const tasks = taskStoreFor(deps, principal);

  const server = new Server(
    { name: 'generation-service', title: 'Generation service', version },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: tasks,
      instructions: INSTRUCTIONS,
    },
  );
  server.onerror = (err) => log.debug({ err }, 'mcp protocol error');

  const contextOf = (extra: Extra, token: ProgressToken | undefined, taskId?: string): ToolContext => ({
    service,
    batches: deps.batches,
    principal,
    syncWaitMs: deps.syncWaitMs,
    customer: deps.customer,
    onStatus: token === undefined ? undefined : (g) => sendProgress(extra, token, g, taskId),
    signal: extra.signal,
    log,
  });

  /** A failure no REST door would answer with its error body: logged, and an internal error without internals. */
  const internal = (err: unknown): McpError => {
    log.error({ err }, 'mcp tool failed');
    return new McpError(ErrorCode.InternalError, 'Internal error; retry shortly.');
  };

  const guarded = guardedBy(internal);

  /** A task-augmented call answers a task at once; a refused one makes a task that has already failed with the refusal. */
  const startTask = async (
    tool: string,
    submit: NonNullable<McpTool['submit']>,
    args: unknown,
    extra: Extra,
  ): Promise<CreateTaskResult> => {
    let context: TaskContext;
    let immediate: string;
    try {
      const g = await submit(args, contextOf(extra, undefined));
      context = { generationId: g.id };
      immediate = `Generation ${g.id} is ${g.status}; this task follows it to its end (tasks/get, tasks/result).`;
    } catch (err) {
      const refused = refusalOf(err);
      if (!refused) throw internal(err);
      context = { refused };
      immediate = (refused.content[0] as { text: string }).text;
    }
    if (!extra.taskStore) throw internal(new Error('no task store'));
    const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl, context });
    log.info({ taskId: task.taskId, tool, accountId: principal.accountId, status: task.status }, 'mcp task created');
    // What a host may hand the model at once while the task runs (MCP 2025-11-25, Tasks): the generation id, or the refusal.
    return { task, _meta: { [MODEL_IMMEDIATE_RESPONSE]: immediate } };
  };

  const definitions = [...TOOLS.values()].map((t) => t.definition);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: definitions }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args, task } = request.params;
    const tool = TOOLS.get(name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool '${name}'; tools/list names the tools.`);
    if (task) {
      if (!tool.submit)
        throw new McpError(
          ErrorCode.MethodNotFound,
          `Tool '${name}' does not run as a task (its execution.taskSupport is not set).`,
        );
      return startTask(tool.definition.name, tool.submit, args, extra);
    }
    return guarded(() => tool.call(args, contextOf(extra, extra._meta?.progressToken)));
  });

  // tasks/result waits for the task's generation to end (the protocol says it blocks), sending
  // progress meanwhile to a caller that asked for it: with a progressToken on this request, or
  // on the call that made the task (valid for the task's whole life).
  server.setRequestHandler(GetTaskPayloadRequestSchema, async (request, extra) => {
    const { taskId } = request.params;
    let row = await tasks.row(taskId);
    if (!row) throw taskNotFound(taskId);
    const ctx = contextOf(extra, extra._meta?.progressToken ?? row.progressToken ?? undefined, taskId);
    while (!isTerminal(taskOf(row).status)) {
      if (extra.signal.aborted) throw new McpError(ErrorCode.ConnectionClosed, 'The request was cancelled.');
      if (row.generationId) {
        await service.follow(principal, row.generationId, {
          waitMs: TASK_FOLLOW_SLICE_MS,
          onStatus: ctx.onStatus,
          signal: extra.signal,
        });
      }
      row = await tasks.row(taskId);
      if (!row) throw taskNotFound(taskId);
    }
    const result = (await tasks.getTaskResult(taskId)) as CallToolResult;
    return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId } } };
  });

  return server;
}

/** The task store of one caller: tasks bound to its account, results and cancels through the one service. */
export function taskStoreFor(deps: McpServerDeps, principal: Principal): McpTaskStore {
  const { service } = deps;
  return new McpTaskStore({
    pool: deps.pool,
    accountId: principal.accountId,
    pollIntervalMs: deps.taskPollIntervalMs,
    resultOf: async (generationId) =>
      generationResult(await service.get(principal, generationId), { failedIsError: true }),
    async cancelGeneration(generationId) {
      try {
        await service.cancel(principal, generationId);
      } catch (err) {
        // It ended first; the task is cancelled all the same (the protocol says so), its result tells what happened.
        if (!(err instanceof GenerationFinishedError)) throw err;
      }
    },
  });
}

/** The progress step and message of a generation's status (done is 3 of 3). */
export function progressOf(g: GenerationView): { progress: number; total: number; message: string } {
  const message = g.status === 'failed' && g.error ? `${g.id} failed: ${g.error.message}` : `${g.id} ${g.status}`;
  return { progress: PROGRESS_STEP[g.status], total: 3, message };
}

/** notifications/progress for a generation's status; a caller that has gone away is not an error. */
async function sendProgress(
  extra: Extra,
  progressToken: ProgressToken,
  g: GenerationView,
  taskId?: string,
): Promise<void> {
  await extra
    .sendNotification({
      method: 'notifications/progress',
      params: {
        progressToken,
        ...progressOf(g),
        ...(taskId ? { _meta: { [RELATED_TASK_META_KEY]: { taskId } } } : {}),
      },
    })
    .catch(() => undefined);
}
