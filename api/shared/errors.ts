import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ZodError } from 'zod';
import { classifyDbError } from '../../core/db/errors';
import {
  DomainError,
  IdempotencyConflictError,
  InvalidRequestError,
  isAfterAdmission,
  markAfterAdmission,
  MethodNotAllowedError,
  NotFoundError,
  RateLimitError,
  ServiceUnavailableError,
} from '../../core/errors';
import type { MethodIndex } from '../methods';

/**
 * The one error body of every group (DESIGN §6): `{ error: { message, type, code, param, ...details } }`.
 * `param` is always there, null when no parameter is at fault: OpenAI's clients require the key.
 */
export function errorBody(type: string, status: number, message: string, details: Record<string, unknown> = {}) {
  const param = typeof details.param === 'string' ? details.param : null;
  return { error: { message, type, code: status, ...details, param } };
}

export function sendError(reply: FastifyReply, err: DomainError): FastifyReply {
  errorHeaders(reply, err);
  return reply.code(err.status).send(errorBody(err.type, err.status, err.message, err.details));
}

/** The headers an error answer carries in every door: when to retry, and whether to at all. */
export function errorHeaders(reply: FastifyReply, err: DomainError): void {
  if (err instanceof RateLimitError || err instanceof ServiceUnavailableError) {
    reply.header('Retry-After', String(err.retryAfterSeconds));
    // OpenAI's and Anthropic's SDKs read the wait in milliseconds first (DESIGN §6, group B).
    reply.header('retry-after-ms', String(err.retryAfterSeconds * 1000));
  }
  // Sending it again cannot help: the same key conflicts again, an admitted request would be held twice.
  if (err instanceof IdempotencyConflictError || isAfterAdmission(err)) reply.header('x-should-retry', 'false');
  if (err instanceof MethodNotAllowedError) reply.header('Allow', err.allowed.join(', '));
}

/** A failure that is not a domain error of ours but has an answer of its own (Fastify's 413, a malformed body). */
class RequestError extends DomainError {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** What every door answers while PostgreSQL cannot be reached: nothing was charged. */
export function databaseUnavailable(): ServiceUnavailableError {
  return new ServiceUnavailableError('The service is briefly unavailable; nothing was charged. Retry shortly.');
}

/**
 * Runs a door's call to the service and renames the parameters its errors name into the door's
 * own words (group A's and B's snake_case), message included; `translate` may replace an error.
 */
export async function inDoorWords<T>(
  renames: Record<string, string>,
  work: () => Promise<T>,
  translate?: (err: DomainError) => DomainError | undefined,
): Promise<T> {
  try {
    return await work();
  } catch (caught) {
    if (!(caught instanceof DomainError)) throw caught;
    const err = translate?.(caught) ?? caught;
    if (err !== caught && isAfterAdmission(caught)) markAfterAdmission(err);
    const param = err.details.param;
    const renamed = typeof param === 'string' ? renames[param] : undefined;
    if (renamed !== undefined) {
      (err.details as { param?: string }).param = renamed;
      err.message = err.message.replaceAll(param as string, renamed);
    }
    throw err;
  }
}

const BODY_NOT_OBJECT = 'The request body must be a JSON object (Content-Type: application/json).';
// Fastify lower-cases header names; errors name them as clients write them.
const HEADER_NAMES: Record<string, string> = {
  'idempotency-key': 'Idempotency-Key',
  prefer: 'Prefer',
  'last-event-id': 'Last-Event-ID',
};

export function fromZod(err: ZodError): InvalidRequestError {
  const unknown = err.issues.find((i) => i.code === 'unrecognized_keys');
  if (unknown) return unknownFields(unknown.path.map(String), unknown.keys);
  const issue = err.issues[0];
  const inner = issue?.code === 'invalid_union' ? alternativeTaken(issue.errors) : undefined;
  const path = [...(issue?.path.map(String) ?? []), ...(inner?.path ?? [])];
  return invalid(path, inner?.message ?? issue?.message ?? 'invalid request', 'body');
}

interface UnionIssue {
  code?: string;
  path?: PropertyKey[];
  message: string;
  errors?: unknown;
}

/**
 * A value that fits none of a union's alternatives (text or a list of parts, say) is told what is
 * wrong inside the alternative whose shape it had, rather than zod's bare "Invalid input": the
 * alternative whose first issue is not "wrong type here", followed into nested unions.
 */
function alternativeTaken(errors: unknown): { path: string[]; message: string } | undefined {
  if (!Array.isArray(errors)) return undefined;
  for (const issues of errors as UnionIssue[][]) {
    const first = issues[0];
    if (!first || (first.code === 'invalid_type' && (first.path ?? []).length === 0)) continue;
    const here = (first.path ?? []).map(String);
    const inner = first.code === 'invalid_union' ? alternativeTaken(first.errors) : undefined;
    return inner ? { path: [...here, ...inner.path], message: inner.message } : { path: here, message: first.message };
  }
  return undefined;
}

/**
 * Fields a strict body does not know, named in a 400: a door of ours refuses them rather than drop
 * them, so that a misspelled `max_credits` can never run a request uncapped.
 */
function unknownFields(path: string[], keys: readonly string[]): InvalidRequestError {
  const names = keys.map((k) => [...path, k].join('.'));
  const listed = names.map((n) => `'${n}'`).join(', ');
  return new InvalidRequestError(
    `Unknown field${names.length === 1 ? '' : 's'} ${listed}: this request does not take ${names.length === 1 ? 'it' : 'them'}, ` +
      'and refuses fields it does not know rather than ignore them (check the spelling against the documented fields).',
    names[0],
  );
}

function invalid(path: string[], message: string, context: string | undefined): InvalidRequestError {
  // A body that names fields a strict schema does not know says which, rather than "not an object".
  if (path.length === 0 && context === 'body' && !/^Unrecognized key/.test(message))
    return new InvalidRequestError(BODY_NOT_OBJECT);
  const raw = path.join('.');
  const param = context === 'headers' ? (HEADER_NAMES[raw] ?? raw) : raw || undefined;
  // A message that already names its parameter (e.g. the Idempotency-Key one) is kept as it is.
  const text = param === undefined || message.includes(param) ? message : `${param}: ${message}`;
  return new InvalidRequestError(text, param);
}

/**
 * The errors Fastify's router answers before any route, hook or error handler runs (Fastify's
 * `frameworkErrors` option): a malformed URL and a path parameter over the router's 100
 * characters. Answered in the one body shape like everything else, never Fastify's own.
 */
export function answerFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // onRequest hooks never ran, so the id every answer carries is set here.
  reply.header('x-request-id', request.id);
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.code(400).send(
      errorBody('invalid_request_error', 400, 'A path parameter is longer than 100 characters; no id is that long.', {
        param: 'path',
      }),
    );
    return;
  }
  if (err.code === 'FST_ERR_BAD_URL') {
    void reply.code(400).send(
      errorBody('invalid_request_error', 400, 'The URL path is not valid (malformed percent-encoding).', {
        param: 'path',
      }),
    );
    return;
  }
  request.log.error({ err }, 'framework error');
  void reply.code(500).send(errorBody('server_error', 500, 'Internal error; retry shortly.'));
}

/**
 * Any failure as the domain error its answer is made from (validation, Fastify's own 4xx, a
 * database that cannot be reached), logged as it deserves; undefined for an internal error, which
 * every door answers as its own 500 without its message. Each door's error mapper starts here.
 */
export function domainErrorOf(err: FastifyError | Error, request: FastifyRequest): DomainError | undefined {
  if (err instanceof DomainError) {
    if (err.status >= 500) request.log.warn({ err, cause: err.cause }, err.message);
    return err;
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const unknown = err.validation.find((v) => v.keyword === 'unrecognized_keys');
    if (unknown && err.validationContext === 'body')
      return unknownFields(
        unknown.instancePath.split('/').filter((s) => s !== ''),
        (unknown.params as { keys: string[] }).keys,
      );
    const first = err.validation[0];
    const inner =
      first?.keyword === 'invalid_union' ? alternativeTaken((first.params as { errors?: unknown }).errors) : undefined;
    const path = [...(first?.instancePath ?? '').split('/').filter((s) => s !== ''), ...(inner?.path ?? [])];
    return invalid(path, inner?.message ?? first?.message ?? 'invalid request', err.validationContext);
  }
  if (err instanceof ZodError) return fromZod(err);
  const status = (err as FastifyError).statusCode;
  if (status === 413) return new RequestError(413, 'invalid_request_error', 'The request body is too large.');
  if (status === 415) return new InvalidRequestError(BODY_NOT_OBJECT);
  // Fastify's own 4xx (malformed JSON): the client's mistake, say so plainly.
  if (status !== undefined && status >= 400 && status < 500) return new InvalidRequestError(err.message);
  if (classifyDbError(err) === 'transient') {
    request.log.warn({ err }, 'database unavailable');
    return databaseUnavailable();
  }
  request.log.error({ err }, 'unhandled error');
  return undefined;
}

/** What Node's HTTP parser refuses before Fastify sees a request, by its error code. */
const CLIENT_ERRORS: Record<string, { status: number; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    message:
      'The request line and headers are larger than the server accepts (16 KiB); send less in the URL or headers.',
  },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, message: 'The request took too long to arrive.' },
};

/**
 * Answers what the HTTP parser refuses before any route runs (Fastify's `clientErrorHandler`): an
 * oversized request line or headers (431), a request that took too long (408), a method the parser
 * does not know (405 with `Allow` on a path that has routes, else 404, as Fastify would have
 * answered a method it knows), anything else that is not HTTP (400), each in the one error body
 * with an `x-request-id`, then closes the connection. `methods` is the app's route index, once built.
 */
export function answerClientError(
  err: NodeJS.ErrnoException & { rawPacket?: unknown },
  socket: Socket,
  methods?: MethodIndex,
): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const unrouted = err.code === 'HPE_INVALID_METHOD' && methods ? noRouteError(err.rawPacket, methods) : undefined;
  const known = CLIENT_ERRORS[err.code ?? ''];
  const status = unrouted?.status ?? known?.status ?? 400;
  const body = JSON.stringify(
    errorBody(
      unrouted?.type ?? 'invalid_request_error',
      status,
      unrouted?.message ?? known?.message ?? 'The request is not valid HTTP.',
    ),
  );
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'content-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: req_${randomBytes(12).toString('hex')}\r\n` +
        (unrouted instanceof MethodNotAllowedError ? `allow: ${unrouted.allowed.join(', ')}\r\n` : '') +
        'connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy();
}

/** A request line whose method the parser does not know (so no route has it): its 405, or its 404. */
function noRouteError(raw: unknown, methods: MethodIndex): DomainError | undefined {
  const line = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) (\S{1,8192}) HTTP\/1\.[01]\r?\n/.exec(
    Buffer.isBuffer(raw) ? raw.toString('latin1') : '',
  );
  if (!line) return undefined;
  const [, method, target] = line as unknown as [string, string, string];
  // The origin form (`/path?query`) or the absolute form (`http://host/path?query`).
  const path = (/^https?:\/\/[^/]*(\/[^?]*)/i.exec(target)?.[1] ?? target).split('?')[0]!;
  if (!path.startsWith('/')) return undefined;
  const { allowed } = methods.lookup(path);
  return allowed.length > 0
    ? new MethodNotAllowedError(method, path, allowed)
    : new NotFoundError(`No route for ${method} ${path}.`);
}

/** Maps every failure to the documented body; a 5xx never shows its internal message. */
export function installErrorHandler(app: FastifyInstance, methods: MethodIndex): void {
  const mapError = (err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => {
    const known = domainErrorOf(err, request);
    if (known) return sendError(reply, known);
    if (isAfterAdmission(err)) reply.header('x-should-retry', 'false');
    return reply.code(500).send(errorBody('server_error', 500, 'Internal error; retry shortly.'));
  };
  /**
   * A request no route takes: 405 with `Allow` when its path has routes for other methods, else
   * 404, each answered by the error mapper of the door whose routes the path is nearest.
   */
  const answerNoRoute = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    const { allowed, mapper } = methods.lookup(path);
    const err =
      allowed.length > 0
        ? new MethodNotAllowedError(request.method, path, allowed)
        : new NotFoundError(`No route for ${request.method} ${path}.`);
    return (mapper ?? mapError)(err, request, reply);
  };
  // A request no route takes may fail before the not-found handler (a body Fastify cannot parse for
  // a method such as QUERY): it is still answered as a request no route takes. (The 405 or 404
  // itself, a domain error, may come back here when this is its door's mapper.)
  app.setErrorHandler((err: FastifyError | Error, request, reply) =>
    request.is404 && !(err instanceof DomainError) ? answerNoRoute(request, reply) : mapError(err, request, reply),
  );
  app.setNotFoundHandler(answerNoRoute);
}
