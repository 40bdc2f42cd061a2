import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PermissionError, UnauthorizedError } from '../../core/errors';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import { bearerToken, principalOf, requireApiKey } from '../shared/auth';
import type { AuthDeps } from '../shared/auth';
import { apiError, errorResponses, serverSentEvent } from '../shared/schemas';
import type { StandingMonitor } from '../shared/standing';
import { CUSTOMER_HEADER, customerHeaders } from '../shared/customers';
import { createModernMcpServer } from './revision-2026-07-28';
import { whileStanding } from './standing';
import { createMcpServer } from './revision-2025-11-25';
import type { McpServerDeps } from './revision-2025-11-25';

export const MCP_PATH = '/api/mcp';
const REALM = 'generation-service';
/** The pollInterval a task suggests: a video takes minutes, a poll a second apart is plenty. */
const DEFAULT_TASK_POLL_MS = 1_000;

export interface McpRouteDeps extends AuthDeps {
  service: GenerationService;
  /** Checks the key of each request while it is answered (api/shared/standing.ts). */
  standing: StandingMonitor;
  batches: BatchService;
  syncWaitMs: number;
  /** Origins whose pages may call the endpoint (the API's own and configured ones); a request without Origin is always let in. */
  allowedOrigins: readonly string[];
  taskPollIntervalMs?: number | undefined;
}

const jsonRpcMessage = z
  .looseObject({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number()]).optional().describe('Present on requests and responses'),
    method: z.string().optional().describe('e.g. initialize, tools/list, tools/call, tasks/get, tasks/result'),
  })
  .describe('A JSON-RPC 2.0 request, notification or response');

const jsonRpcError = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z
      .union([z.string(), z.number()])
      .nullable()
      .describe('The request’s id; null when the request could not be read'),
    error: z.object({
      code: z.number().int().describe('A JSON-RPC error code, e.g. -32700 parse error, -32000 transport error'),
      message: z.string(),
    }),
  })
  .meta({ id: 'JsonRpcError' });

const security = [{ apiKey: [] }];
const tags = ['Group A'];
const description =
  'The Model Context Protocol over Streamable HTTP, revisions 2025-11-25 (initialize handshake) and 2026-07-28 (no handshake: ' +
  "server/discover, the protocol version and capabilities in each request's _meta, the tasks extension io.modelcontextprotocol/tasks), " +
  'stateless: every POST carries one JSON-RPC message ' +
  '(there is no server-to-client stream to GET and no session to DELETE: both are 405 with `Allow: POST, OPTIONS`) ' +
  'and is answered on its own, so any API instance answers any request; a JSON array (a JSON-RPC batch, removed from MCP in ' +
  '2025-06-18) is refused with a JSON-RPC error and nothing runs. Send `Accept: application/json, text/event-stream` ' +
  'and the API key as `Authorization: Bearer <API_KEY>`, with the same scopes, rate limit and balance as REST. A request is answered ' +
  'with a Server-Sent Events stream that carries progress notifications and ends with the JSON-RPC response; notifications alone are ' +
  'answered 202 (on 2026-07-28 a reply may be plain JSON). Tools: generate_image, generate_video (also as an MCP task), enhance_prompt, ' +
  'list_models, get_generation, cancel_generation, generate_batch, get_batch, cancel_batch. ' +
  'Refusals (e.g. insufficient_credits) are tool results with isError, not HTTP errors. Pages of other origins are refused (Origin).';

/** What a page may send (its preflight asks) and read (beyond the CORS-safelisted headers). */
const CORS_ALLOWED =
  'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, X-Customer-Id';
const CORS_EXPOSED = 'WWW-Authenticate, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset';

const BATCH_MESSAGE =
  'JSON-RPC batches are not accepted (MCP 2025-06-18 removed them): send each message in its own POST. Nothing in this batch was run.';
/** What MCP's transports answer (406, JSON-RPC error -32000) to an Accept that lists too little. */
const NOT_ACCEPTABLE = 'Not Acceptable: Client must accept both application/json and text/event-stream';

/** MCP's Streamable HTTP requires both media types in `Accept`; the document says so, and 406 otherwise. */
const acceptHeader = z
  .string()
  .describe('Must list both application/json and text/event-stream, as MCP’s Streamable HTTP requires; otherwise 406');

/** MCP at /api/mcp (DESIGN §6): the same key, scopes, rate limit and ledger as the REST doors. */
export const mcpRoutes: FastifyPluginAsyncZod<McpRouteDeps> = async (app, deps) => {
  const checkOrigin = originCheck(deps.allowedOrigins);
  const serverDeps = {
    pool: deps.pool,
    service: deps.service,
    batches: deps.batches,
    syncWaitMs: deps.syncWaitMs,
    taskPollIntervalMs: deps.taskPollIntervalMs ?? DEFAULT_TASK_POLL_MS,
  };
  app.post(
    MCP_PATH,
    {
      onRequest: [checkOrigin, authenticateWithChallenge(deps)],
      preValidation: [refuseWithoutAccept, refuseBatch],
      schema: postSchema(),
    },
    // X-Customer-Id names the customer every generate tool of this request is for (or a tool's own `customer`).
    async (request, reply) =>
      answer(request, reply, { ...serverDeps, customer: request.headers[CUSTOMER_HEADER] }, deps.standing),
  );
  // The CORS preflight of a page of an allowed origin (its POST carries Authorization and JSON).
  app.options(MCP_PATH, { onRequest: checkOrigin, schema: preflightSchema() }, async (_request, reply) =>
    reply
      .code(204)
      .header('Allow', 'POST, OPTIONS')
      .header('Access-Control-Allow-Methods', 'POST')
      .header('Access-Control-Allow-Headers', CORS_ALLOWED)
      .header('Access-Control-Max-Age', '600')
      .send(null),
  );
};

/** POST /api/mcp as the OpenAPI document describes it; made anew for each app, as Fastify marks the schemas it is given. */
const postSchema = () => ({
  operationId: 'mcp',
  tags,
  summary: 'MCP (Model Context Protocol) over Streamable HTTP',
  description,
  security,
  body: jsonRpcMessage,
  headers: z.looseObject({ accept: acceptHeader, ...customerHeaders }),
  response: {
    200: {
      description:
        'The JSON-RPC response: on 2025-11-25 a Server-Sent Events stream (notifications such as notifications/progress, then the response); ' +
        'on 2026-07-28 a JSON body, or a stream when the request asks for progress. A JSON-RPC error of a request handler is answered 200 too.',
      content: {
        'text/event-stream': {
          schema: serverSentEvent.describe('`event: message` events whose data is a JSON-RPC message'),
        },
        'application/json': {
          schema: z.looseObject({ jsonrpc: z.literal('2.0') }).describe('A JSON-RPC response (2026-07-28)'),
        },
      },
    },
    202: z.null().describe('Notifications or responses only: accepted, no body'),
    400: z
      .union([apiError, jsonRpcError])
      .describe(
        'The body is not JSON (error body), or a batch, or not a JSON-RPC message the server takes, ' +
          'or (2026-07-28) headers that disagree with the body, an unsupported protocol version, a capability the client must declare (JSON-RPC error)',
      ),
    404: jsonRpcError.describe(
      '2026-07-28 only: the method does not exist on that revision (-32601), e.g. initialize or tasks/list',
    ),
    401: apiError.describe(
      'authentication_error: missing, invalid or revoked key; `WWW-Authenticate: Bearer realm="…"`',
    ),
    403: apiError.describe('permission_error: the Origin header names a page of another origin'),
    406: jsonRpcError.describe('The Accept header must list both application/json and text/event-stream'),
    ...errorResponses(413, 429, 500, 503),
  },
});

/** OPTIONS /api/mcp as the OpenAPI document describes it. */
const preflightSchema = () => ({
  operationId: 'mcpPreflight',
  tags,
  summary: 'CORS preflight for pages of the allowed origins',
  description:
    'Pages of the API’s own origin and of MCP_ALLOWED_ORIGINS may call POST /api/mcp from a browser; other origins get 403.',
  security: [],
  response: {
    204: z.null().describe('Allowed: Access-Control-Allow-Origin/-Methods/-Headers name what the page may send'),
    403: apiError.describe('permission_error: the Origin header names a page of another origin'),
  },
});

/**
 * Browsers send Origin; a page of another origin must not reach a local or internal endpoint (DNS
 * rebinding). Clients that are not browsers send none and are let in. A page of an allowed origin
 * gets the CORS headers that let it read every answer, errors included.
 */
function originCheck(origins: readonly string[]) {
  const allowed = new Set(origins.map((o) => new URL(o).origin));
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const origin = request.headers.origin;
    if (origin === undefined) return;
    if (!allowed.has(origin)) {
      throw new PermissionError(`Requests from pages of origin '${origin}' are not allowed on ${MCP_PATH}.`, {
        param: 'Origin',
      });
    }
    reply
      .header('Access-Control-Allow-Origin', origin)
      .header('Vary', 'Origin')
      .header('Access-Control-Expose-Headers', CORS_EXPOSED);
  };
}

/**
 * The key check, whose 401 names the scheme (RFC 9110, RFC 6750) and points at no authorization
 * server: with no OAuth metadata either, MCP clients send the configured key rather than start an
 * OAuth flow.
 */
function authenticateWithChallenge(deps: AuthDeps) {
  const authenticate = requireApiKey(deps, 'authentication_error');
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    try {
      await authenticate(request, reply);
    } catch (err) {
      if (err instanceof UnauthorizedError) {
        reply.header(
          'WWW-Authenticate',
          `Bearer realm="${REALM}"${bearerToken(request) ? ', error="invalid_token"' : ''}`,
        );
      }
      throw err;
    }
  };
}

/**
 * No Accept at all is refused as the transports refuse one that lists too little, not left for the
 * header schema (which requires it, for the document) to call a 400.
 */
async function refuseWithoutAccept(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.headers.accept !== undefined) return;
  await reply.code(406).send({ jsonrpc: '2.0', id: null, error: { code: -32000, message: NOT_ACCEPTABLE } });
}

/**
 * The rate limit counts HTTP requests, one message each. A batch would carry up to 100 tool calls
 * for one count; protocol 2025-11-25 has no batches, so one is refused whole, before anything runs.
 */
async function refuseBatch(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (!Array.isArray(request.body)) return;
  await reply
    .code(400)
    .send({ jsonrpc: '2.0', id: null, error: { code: ErrorCode.InvalidRequest, message: BATCH_MESSAGE } });
}

/**
 * Answers one JSON-RPC message with the revision it speaks. A 2026-07-28 request carries its
 * protocol version in `_meta` (and the MCP-Protocol-Version header); anything else is 2025-era and
 * keeps the SDK 1.x path it always had, a message without a method included (the 1.x transport
 * answers it as before).
 */
async function answer(
  request: FastifyRequest,
  reply: FastifyReply,
  perRequest: McpServerDeps,
  monitor: StandingMonitor,
): Promise<FastifyReply> {
  const principal = principalOf(request);
  const webRequest = webRequestOf(request);
  // A request that waits for its generation holds its key for a while: revoked meanwhile, it ends.
  const standing = monitor.watch(request);
  reply.raw.once('close', () => standing.stop());
  const rpcId = (request.body as { id?: string | number }).id ?? null;
  const parsed = { parsedBody: request.body };
  let response: Response;
  if (!hasMethod(request.body) || (await isLegacyRequest(webRequest, request.body))) {
    const transport = await connectedTransport(request, reply, createMcpServer(perRequest, principal, request.log));
    response = await whileStanding(standing, rpcId, transport.handleRequest(webRequest, parsed));
  } else {
    const handler = statelessHandler(request, reply, () => createModernMcpServer(perRequest, principal, request.log));
    response = await whileStanding(standing, rpcId, handler.fetch(webRequest, parsed));
  }
  // Fastify sends a web Response as it is (status, headers, streamed body).
  return reply.send(response);
}

/**
 * 2025-11-25: the SDK 1.x server connected to a transport of its own. One server and transport per
 * request: when the answer is over or the caller has gone, so are they (a handler still waiting on
 * a generation is aborted).
 */
async function connectedTransport(
  request: FastifyRequest,
  reply: FastifyReply,
  server: ReturnType<typeof createMcpServer>,
): Promise<WebStandardStreamableHTTPServerTransport> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  await server.connect(transport);
  reply.raw.once('close', () => {
    server.close().catch((err: unknown) => request.log.debug({ err }, 'mcp close'));
  });
  return transport;
}

/** 2026-07-28: the SDK's stateless handler, closed with the answer as the 2025 server is. */
function statelessHandler(
  request: FastifyRequest,
  reply: FastifyReply,
  server: () => ReturnType<typeof createModernMcpServer>,
) {
  const handler = createMcpHandler(server, {
    legacy: 'reject',
    onerror: (err) => request.log.debug({ err }, 'mcp protocol error'),
  });
  reply.raw.once('close', () => {
    handler.close().catch((err: unknown) => request.log.debug({ err }, 'mcp close'));
  });
  return handler;
}

const hasMethod = (body: unknown): boolean => typeof (body as { method?: unknown } | null)?.method === 'string';

/**
 * The request as the SDK's web-standard transport reads it: method and headers (Fastify has
 * already parsed the body). The transport uses the URL only to describe the request to handlers,
 * so a fixed origin spares parsing a client's Host header.
 */
function webRequestOf(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new Request(new URL(request.url, 'http://localhost'), { method: request.method, headers });
}
