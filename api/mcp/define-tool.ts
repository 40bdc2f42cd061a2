import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Principal } from '../../core/accounts/principal';
import type { GenerationView } from '../../core/generation/view';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService, SubmitOptions } from '../../service/generation/service';
import { fromZod } from '../shared/errors';
import { generation } from '../shared/schemas';

/** How an MCP tool is made: what its call runs with, its definition, and the hints it gives about its effects. */

/** What a tool call runs with: the one service, the caller, and how to tell the caller how it goes. */
export interface ToolContext {
  service: GenerationService;
  batches: BatchService;
  principal: Principal;
  /** How long a tool that waits for its generation (image, chat) waits, as REST does. */
  syncWaitMs: number;
  /** The request's X-Customer-Id: the customer a generate tool is for, unless its own `customer` argument names one. */
  customer?: string | undefined;
  /** Sends progress as the followed generation moves, when the caller sent a progressToken. */
  onStatus: ((g: GenerationView) => Promise<void>) | undefined;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** The HTTP request's logger: admission lines carry its request id. */
  log: SubmitOptions['log'];
}

export interface McpTool {
  /** The definition tools/list shows: name, schemas (JSON Schema 2020-12), annotations, task support. */
  definition: Tool;
  /** Runs a call; invalid arguments and refusals throw (InvalidRequestError and the other domain errors). */
  call: (args: unknown, ctx: ToolContext) => Promise<CallToolResult>;
  /** For a task-augmented call: submits the generation the task will follow, without waiting for it. */
  submit?: (args: unknown, ctx: ToolContext) => Promise<GenerationView>;
}

/** The longest a get_generation call may wait for its generation to finish. */
export const MAX_WAIT_SECONDS = 60;

/** A `wait_seconds` argument: how long a reading call may wait for what it reads to end. */
export const waitSeconds = (description: string) =>
  z.number().int().min(0).max(MAX_WAIT_SECONDS).default(0).describe(description);

/** Every tool's arguments are a strict object: an argument the tool does not know is refused, naming it. */
export function defineTool<I extends z.ZodObject, P = z.output<I>>(t: {
  name: string;
  title: string;
  description: string;
  input: I;
  output: z.ZodObject;
  annotations: ToolAnnotations;
  /** Validates the arguments (by default with the input schema); a ZodError becomes invalid_request_error. */
  parse?: (args: unknown) => P;
  run: (args: P, ctx: ToolContext) => Promise<CallToolResult>;
  submit?: (args: P, ctx: ToolContext) => Promise<GenerationView>;
}): McpTool {
  const validate = t.parse ?? ((args: unknown) => t.input.parse(args) as P);
  const parse = (args: unknown): P => {
    try {
      return validate(args ?? {});
    } catch (err) {
      throw err instanceof z.ZodError ? fromZod(err) : err;
    }
  };
  const submit = t.submit;
  return {
    definition: {
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: jsonSchemaOf(t.input, 'input'),
      outputSchema: jsonSchemaOf(t.output, 'output'),
      annotations: { title: t.title, ...t.annotations },
      ...(submit ? { execution: { taskSupport: 'optional' as const } } : {}),
    },
    call: (args, ctx) => t.run(parse(args), ctx),
    ...(submit ? { submit: (args: unknown, ctx: ToolContext) => submit(parse(args), ctx) } : {}),
  };
}

/** Tool schemas are objects at the top (MCP requires `type: "object"`); shared parts go to `$defs`. */
function jsonSchemaOf(schema: z.ZodObject, io: 'input' | 'output'): Tool['inputSchema'] {
  return z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Tool['inputSchema'];
}

/** A generation as group A answers it, as a plain object schema (the named one is a `$ref`). */
export const generationOutput = z.object(generation.shape);

/** Media tools spend credits and reach model providers: never destructive, never idempotent. */
export const GENERATES: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};
export const READS: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
/** Cancelling stops work and releases its hold: destructive to that work, the same answer when repeated. */
export const CANCELS: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: true,
  openWorldHint: false,
};
