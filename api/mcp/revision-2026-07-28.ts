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
  const { service } = deps;
  const tasks = taskStoreFor(deps, principal);
  const server = new Server(
    { name: 'generation-service', title: 'Generation service', version },
    { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } }, instructions: INSTRUCTIONS },
  );
  server.onerror = (err) => log.debug({ err }, 'mcp protocol error');

  // The SDK types the lifted envelope as an empty object; the capabilities are under their wire key.
  const capabilitiesOf = (ctx: ServerContext): unknown =>
    (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES];

  const contextOf = (ctx: ServerContext): ToolContext => {
    const token = ctx.mcpReq._meta?.progressToken;
    return {
      service,
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
  };

  const internal = (err: unknown): ProtocolError => {
    log.error({ err }, 'mcp tool failed');
    return new ProtocolError(ProtocolErrorCode.InternalError, 'Internal error; retry shortly.');
  };

  const guarded = guardedBy(internal);

  /** generate_video with the extension declared: the generation is submitted, a task follows it (durably created before the answer). */
  const startTask = async (tool: McpTool, submit: NonNullable<McpTool['submit']>, args: unknown, ctx: ServerContext) =>
    guarded(async () => {
      const g = await submit(args, contextOf(ctx));
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

  // Tasks moved to an extension in 2026-07-28: the tool's execution.taskSupport is 2025-11-25's field.
  const definitions: Tool[] = [...TOOLS.values()].map(
    ({ definition: { execution: _execution, ...rest } }) => rest as Tool,
  );
  server.setRequestHandler('tools/list', () => ({ tools: definitions }));

  server.setRequestHandler('tools/call', async (request, ctx) => {
    const { name, arguments: args } = request.params;
    const tool = TOOLS.get(name);
    if (!tool)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool '${name}'; tools/list names the tools.`);
    if (tool.submit && declaresTasks(capabilitiesOf(ctx))) {
      // A CreateTaskResult is the extension's polymorphic answer; the SDK's typed handler knows only CallToolResult.
      return (await startTask(tool, tool.submit, args, ctx)) as CallToolResult;
    }
    return guarded(() => tool.call(args, contextOf(ctx)));
  });

  const readTask = async (taskId: string) => {
    const row = await tasks.row(taskId);
    if (!row) throw extensionTaskNotFound(taskId);
    return row;
  };

  server.setRequestHandler(
    'tasks/get',
    { params: taskIdParams },
    async (params, ctx): Promise<DetailedTask & Record<string, unknown>> => {
      requireTasksCapability(capabilitiesOf(ctx));
      return { ...(await detailedTask(tasks, await readTask(params.taskId))) };
    },
  );

  // No task of ours ever asks for input; responses to keys never issued are ignored, as the extension says.
  server.setRequestHandler('tasks/update', { params: updateParams }, async (params, ctx) => {
    requireTasksCapability(capabilitiesOf(ctx));
    await readTask(params.taskId);
    return {};
  });

  // Cancels the generation through the service (released hold), then the task stays cancelled.
  server.setRequestHandler('tasks/cancel', { params: taskIdParams }, async (params, ctx) => {
    requireTasksCapability(capabilitiesOf(ctx));
    await readTask(params.taskId);
    try {
      await tasks.updateTaskStatus(params.taskId, 'cancelled');
    } catch (err) {
      if (err instanceof ProtocolError) throw err;
      const refused = refusalOf(err);
      if (refused)
        throw new ProtocolError(ProtocolErrorCode.InternalError, 'The cancel could not be completed; retry shortly.');
      throw internal(err);
    }
    return {};
  });

  return server;
}
