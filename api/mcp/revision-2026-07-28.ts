import { ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import type { CallToolResult, ServerContext, Tool } from '@modelcontextprotocol/server';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../../core/accounts/principal';
import { version } from '../shared/docs';
import { guardedBy, refusalOf } from './results';
import type { McpServerDeps } from './revision-2025-11-25';
import { INSTRUCTIONS, progressOf, taskStoreFor } from './revision-2025-11-25';
import {
  declaresTasks,
  detailedTask,
  extensionTaskNotFound,
  requireTasksCapability,
  TASKS_EXTENSION,
} from './tasks-extension';
import type { DetailedTask } from './tasks-extension';
import { TOOLS } from './tools';
import type { McpTool, ToolContext } from './define-tool';

const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const taskIdParams = z.looseObject({ taskId: z.string() });
const updateParams = z.looseObject({
  taskId: z.string(),
  inputResponses: z.record(z.string(), z.unknown()).optional(),
});

/**
 * The MCP server for one HTTP request on protocol revision 2026-07-28, with SDK 2.x's low-level
 * Server (`@modelcontextprotocol/server`), which answers `server/discover` and the stateless
 * per-request envelope. The tools are the same as on 2025-11-25 (tools.ts); a caller that
 * declares the tasks extension on a `tools/call` of generate_video gets a task (tasks-extension.ts)
 * kept in the same table as the 2025-11-25 tasks; one that does not gets the generation at once.
 */
export function createModernMcpServer(deps: McpServerDeps, principal: Principal, log: FastifyBaseLogger): Server {
  const request: ModernRequest = {
    deps,
    principal,
    log,
    tasks: taskStoreFor(deps, principal),
    guarded: guardedBy((err) => internalError(log, err)),
  };
  const server = new Server(
    { name: 'generation-service', title: 'Generation service', version },
    { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } }, instructions: INSTRUCTIONS },
  );
  server.onerror = (err) => log.debug({ err }, 'mcp protocol error');
  answerTools(server, request);
  answerTasks(server, request);
  return server;
}

/** What one HTTP request's server answers with: its caller, its task table, and how a tool's failure is reported. */
interface ModernRequest {
  deps: McpServerDeps;
  principal: Principal;
  log: FastifyBaseLogger;
  tasks: ReturnType<typeof taskStoreFor>;
  guarded: ReturnType<typeof guardedBy>;
}

/** The caller's capabilities. The SDK types the lifted envelope as an empty object; they are under their wire key. */
function capabilitiesOf(ctx: ServerContext): unknown {
  return (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES];
}

/** What a tool runs with: the services, the caller, and progress notifications when the caller asked for them. */
function contextOf({ deps, principal, log }: ModernRequest, ctx: ServerContext): ToolContext {
  const token = ctx.mcpReq._meta?.progressToken;
  return {
    service: deps.service,
    batches: deps.batches,
    principal,
    syncWaitMs: deps.syncWaitMs,
    customer: deps.customer,
    onStatus:
      token === undefined
        ? undefined
        : async (g) => {
            await ctx.mcpReq
              .notify({ method: 'notifications/progress', params: { progressToken: token, ...progressOf(g) } })
              .catch(() => undefined);
          },
    signal: ctx.mcpReq.signal,
    log,
  };
}

/** A failure that is not the caller's: logged, and answered without its message. */
function internalError(log: FastifyBaseLogger, err: unknown): ProtocolError {
  log.error({ err }, 'mcp tool failed');
  return new ProtocolError(ProtocolErrorCode.InternalError, 'Internal error; retry shortly.');
}

/** generate_video with the extension declared: the generation is submitted, a task follows it (durably created before the answer). */
async function startTask(
  request: ModernRequest,
  tool: McpTool,
  submit: NonNullable<McpTool['submit']>,
  args: unknown,
  ctx: ServerContext,
) {
  const { tasks, log, principal } = request;
  return request.guarded(async () => {
    const g = await submit(args, contextOf(request, ctx));
    const progressToken = ctx.mcpReq._meta?.progressToken;
    const created = await tasks.createTask({ context: { generationId: g.id } }, ctx.mcpReq.id, {
      method: 'tools/call',
      params: { name: tool.definition.name, ...(progressToken === undefined ? {} : { _meta: { progressToken } }) },
    });
    log.info(
      { taskId: created.taskId, tool: tool.definition.name, accountId: principal.accountId },
      'mcp task created',
    );
    const row = await tasks.row(created.taskId);
    if (!row) throw new Error(`task ${created.taskId} vanished`);
    const task = await detailedTask(tasks, row);
    return {
      resultType: 'task',
      ...task,
      statusMessage: `Generation ${g.id} is ${g.status}; tasks/get follows it to its end.`,
    };
  });
}

/** tools/list and tools/call: a tool answers at once, or (generate_video with the extension declared) with a task. */
function answerTools(server: Server, request: ModernRequest): void {
  // Tasks moved to an extension in 2026-07-28: the tool's execution.taskSupport is 2025-11-25's field.
  const definitions: Tool[] = [...TOOLS.values()].map(
    ({ definition: { execution: _execution, ...rest } }) => rest as Tool,
  );
  server.setRequestHandler('tools/list', () => ({ tools: definitions }));

  server.setRequestHandler('tools/call', async (call, ctx) => {
    const { name, arguments: args } = call.params;
    const tool = TOOLS.get(name);
    if (!tool)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool '${name}'; tools/list names the tools.`);
    if (tool.submit && declaresTasks(capabilitiesOf(ctx))) {
      // A CreateTaskResult is the extension's polymorphic answer; the SDK's typed handler knows only CallToolResult.
      return (await startTask(request, tool, tool.submit, args, ctx)) as CallToolResult;
    }
    return request.guarded(() => tool.call(args, contextOf(request, ctx)));
  });
}

/** A task of the caller's account; another's, or none, is the extension's not-found error. */
async function readTask(tasks: ModernRequest['tasks'], taskId: string) {
  const row = await tasks.row(taskId);
  if (!row) throw extensionTaskNotFound(taskId);
  return row;
}

/** The tasks extension's methods, for a caller that declares it: get, update, cancel. */
function answerTasks(server: Server, { tasks, log }: ModernRequest): void {
  server.setRequestHandler(
    'tasks/get',
    { params: taskIdParams },
    async (params, ctx): Promise<DetailedTask & Record<string, unknown>> => {
      requireTasksCapability(capabilitiesOf(ctx));
      return { ...(await detailedTask(tasks, await readTask(tasks, params.taskId))) };
    },
  );

  // No task of ours ever asks for input; responses to keys never issued are ignored, as the extension says.
  server.setRequestHandler('tasks/update', { params: updateParams }, async (params, ctx) => {
    requireTasksCapability(capabilitiesOf(ctx));
    await readTask(tasks, params.taskId);
    return {};
  });

  // Cancels the generation through the service (released hold), then the task stays cancelled.
  server.setRequestHandler('tasks/cancel', { params: taskIdParams }, async (params, ctx) => {
    requireTasksCapability(capabilitiesOf(ctx));
    await readTask(tasks, params.taskId);
    try {
      await tasks.updateTaskStatus(params.taskId, 'cancelled');
    } catch (err) {
      if (err instanceof ProtocolError) throw err;
      const refused = refusalOf(err);
      if (refused)
        throw new ProtocolError(ProtocolErrorCode.InternalError, 'The cancel could not be completed; retry shortly.');
      throw internalError(log, err);
    }
    return {};
  });
}
