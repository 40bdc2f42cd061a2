import { MissingRequiredClientCapabilityError, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { McpTaskRow } from '../../core/db/mcp-tasks';
import type { McpTaskStore } from './task-store';
import { TASK_TTL_MS, taskOf } from './task-store';

/**
 * The tasks extension of protocol 2026-07-28 (`io.modelcontextprotocol/tasks`, specified in the
 * modelcontextprotocol/ext-tasks repository; SDK 2.4.0 does not ship it, typescript-sdk #2189). It
 * is served over the same `mcp_tasks` table and McpTaskStore as the 2025-11-25 tasks, so a task is
 * followed from any instance, and its status is still derived from its generation. What differs
 * is the shape: `ttlMs`/`pollIntervalMs`, the result inlined in `tasks/get`, `resultType: "task"` on
 * the CreateTaskResult, and no `tasks/result` or `tasks/list`.
 */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

type ExtensionStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** A task as the extension shows it (`DetailedTask`): a completed one carries its tool result. */
export interface DetailedTask {
  taskId: string;
  status: ExtensionStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs?: number;
  result?: CallToolResult;
}

/** Whether the request's per-request capabilities (2026-07-28 envelope) declare the extension. */
export function declaresTasks(clientCapabilities: unknown): boolean {
  const extensions = (clientCapabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  return typeof extensions === 'object' && extensions !== null && TASKS_EXTENSION in extensions;
}

/** -32021 for tasks/* from a client that did not declare the extension on that request (the extension says MUST). */
export function requireTasksCapability(clientCapabilities: unknown): void {
  if (!declaresTasks(clientCapabilities)) {
    throw new MissingRequiredClientCapabilityError(
      { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      `Missing required client capability: tasks/get, tasks/update and tasks/cancel need the ${TASKS_EXTENSION} extension declared.`,
    );
  }
}

export const extensionTaskNotFound = (taskId: string) =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, `Failed to retrieve task: Task not found (${taskId})`);

/**
 * The extension's view of a task row. A generation that failed is a tool result with `isError`,
 * so its task is `completed` with that result (the extension keeps `failed` for JSON-RPC errors,
 * which a generation never is); a cancelled one is `cancelled`; one in flight is `working`.
 */
export async function detailedTask(store: McpTaskStore, row: McpTaskRow): Promise<DetailedTask> {
  const t = taskOf(row);
  const base = {
    taskId: t.taskId,
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttlMs: t.ttl ?? TASK_TTL_MS.max,
    ...(t.pollInterval === undefined ? {} : { pollIntervalMs: t.pollInterval }),
  };
  if (t.status === 'completed' || t.status === 'failed') {
    const result = (await store.getTaskResult(t.taskId)) as CallToolResult;
    return { ...base, status: 'completed', ...(t.statusMessage ? { statusMessage: t.statusMessage } : {}), result };
  }
  const status: ExtensionStatus = t.status === 'cancelled' ? 'cancelled' : 'working';
  return { ...base, status, ...(t.statusMessage ? { statusMessage: t.statusMessage } : {}) };
}
