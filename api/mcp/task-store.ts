import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, Request, RequestId, Result, Task } from '@modelcontextprotocol/sdk/types.js';
import { getMcpTask, insertMcpTask, listMcpTasks, settleMcpTask } from '../../core/db/mcp-tasks';
import type { McpTaskOutcome, McpTaskRow } from '../../core/db/mcp-tasks';
import type { Queryable } from '../../core/db/pool';
import { newId, TASK_ID_PATTERN } from '../../core/ids';

/** Tasks are kept a day unless the caller asks for less (at least a minute): long enough for any video. */
export const TASK_TTL_MS = { min: 60_000, max: 24 * 60 * 60 * 1000 };
const LIST_PAGE = 50;

/** What a task-augmented call hands the store through `createTask`'s `context`. */
export type TaskContext = { generationId: string } | { refused: CallToolResult };

export interface McpTaskStoreDeps {
  pool: Queryable;
  /** The account of the calling key: every task is bound to it, another account's is not found. */
  accountId: string;
  pollIntervalMs: number;
  /** The tool result of a task's generation as it is now (the generation has finished). */
  resultOf(generationId: string): Promise<CallToolResult>;
  /** Stops a task's generation (tasks/cancel): it fails with code `cancelled`, its hold released. */
  cancelGeneration(generationId: string): Promise<void>;
}

export const taskNotFound = (taskId: string) =>
  new McpError(ErrorCode.InvalidParams, `Failed to retrieve task: Task not found (${taskId})`);

/**
 * The SDK's TaskStore over the `mcp_tasks` table, made per request for the calling key's account.
 * A task follows its generation: its status is derived from the generation's whenever it is read
 * (queued or running → working, succeeded → completed, failed → failed, or cancelled when the
 * generation was cancelled), so any API instance answers for any task, after a restart too, and
 * nothing has to write the task as the generation moves. The SDK passes session ids; stateless
 * HTTP has none, and the account is the binding instead.
 */
export class McpTaskStore implements TaskStore {
  constructor(private readonly deps: McpTaskStoreDeps) {}

  /** The task row (for its generation and progress token); undefined when not found. */
  async row(taskId: string): Promise<McpTaskRow | undefined> {
    return TASK_ID_PATTERN.test(taskId) ? getMcpTask(this.deps.pool, this.deps.accountId, taskId) : undefined;
  }

  async createTask(params: CreateTaskOptions, _requestId: RequestId, request: Request): Promise<Task> {
    const context = params.context as TaskContext | undefined;
    if (!context) throw new Error('a task needs its generation id or its refusal');
    const progressToken = request.params?._meta?.progressToken;
    const refused = 'refused' in context ? context.refused : undefined;
    const row = await insertMcpTask(this.deps.pool, {
      id: newId('task'),
      accountId: this.deps.accountId,
      generationId: 'generationId' in context ? context.generationId : null,
      tool: typeof request.params?.name === 'string' ? request.params.name : request.method,
      progressToken: progressToken ?? null,
      ttlMs: Math.min(TASK_TTL_MS.max, Math.max(TASK_TTL_MS.min, params.ttl ?? TASK_TTL_MS.max)),
      pollIntervalMs: params.pollInterval ?? this.deps.pollIntervalMs,
      ...(refused ? { status: 'failed', statusMessage: messageOf(refused), result: refused } : {}),
    });
    return taskOf(row);
  }

  async getTask(taskId: string): Promise<Task | null> {
    const row = await this.row(taskId);
    return row ? taskOf(row) : null;
  }

  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> {
    await this.settle(taskId, status, status === 'failed' ? messageOf(result as CallToolResult) : undefined, result);
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const row = await this.row(taskId);
    if (!row) throw taskNotFound(taskId);
    if (row.result) return row.result;
    if (!row.generationId) throw new Error(`task ${taskId} has neither a result nor a generation`);
    return this.deps.resultOf(row.generationId);
  }

  /** tasks/cancel cancels the generation through the service first; only then is the task marked, for good. */
  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string): Promise<void> {
    if (status === 'working' || status === 'input_required') return; // a task's progress is its generation's
    const row = await this.row(taskId);
    if (!row) throw taskNotFound(taskId);
    if (status === 'cancelled' && row.generationId) await this.deps.cancelGeneration(row.generationId);
    await this.settle(taskId, status, statusMessage);
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const before = cursor === undefined ? undefined : Buffer.from(cursor, 'base64url').toString('utf8');
    if (before !== undefined && !TASK_ID_PATTERN.test(before)) throw new Error('Invalid cursor');
    const rows = await listMcpTasks(this.deps.pool, this.deps.accountId, { limit: LIST_PAGE + 1, before });
    const page = rows.slice(0, LIST_PAGE);
    const last = page[page.length - 1];
    return {
      tasks: page.map(taskOf),
      ...(rows.length > LIST_PAGE && last ? { nextCursor: Buffer.from(last.id, 'utf8').toString('base64url') } : {}),
    };
  }

  private async settle(taskId: string, status: McpTaskOutcome, statusMessage?: string, result?: Result): Promise<void> {
    const settled = await settleMcpTask(this.deps.pool, this.deps.accountId, taskId, { status, statusMessage, result });
    if (!settled && !(await this.row(taskId))) throw taskNotFound(taskId);
  }
}

const GENERATION_STATUS_MESSAGES = {
  queued: 'The generation is queued.',
  running: 'The generation is running.',
  succeeded: 'The generation succeeded; tasks/result has it.',
} as const;

/** A task as the protocol shows it, its status derived from its generation unless it has its own. */
export function taskOf(row: McpTaskRow): Task {
  const lastUpdated =
    row.generation && row.generation.updatedAt > row.updatedAt ? row.generation.updatedAt : row.updatedAt;
  return {
    taskId: row.id,
    ...statusOf(row),
    createdAt: row.createdAt.toISOString(),
    lastUpdatedAt: lastUpdated.toISOString(),
    ttl: row.ttlMs,
    pollInterval: row.pollIntervalMs,
  };
}

function statusOf(row: McpTaskRow): { status: Task['status']; statusMessage?: string } {
  if (row.status) return { status: row.status, ...(row.statusMessage ? { statusMessage: row.statusMessage } : {}) };
  const g = row.generation;
  if (!g) return { status: 'failed', statusMessage: 'The generation of this task is gone.' };
  if (g.status === 'failed') {
    const message = g.error?.message ?? 'The generation failed.';
    return { status: g.error?.code === 'cancelled' ? 'cancelled' : 'failed', statusMessage: message };
  }
  return {
    status: g.status === 'succeeded' ? 'completed' : 'working',
    statusMessage: GENERATION_STATUS_MESSAGES[g.status],
  };
}

/** The message of a refusal's error body, for the task's statusMessage. */
function messageOf(result: CallToolResult): string {
  const first = result.content[0];
  if (first?.type !== 'text') return 'The call was refused.';
  try {
    const body = JSON.parse(first.text) as { error?: { message?: unknown } };
    return typeof body.error?.message === 'string' ? body.error.message : first.text;
  } catch {
    return first.text;
  }
}
