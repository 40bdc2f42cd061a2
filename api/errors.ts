import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { ZodError } from 'zod';
import { DomainError, InvalidRequestError, RateLimitError, ServiceUnavailableError } from '../core/errors';

/** The one error body of every group (DESIGN §6): `{ error: { message, type, code, ...details } }`. */
export function errorBody(type: string, status: number, message: string, details: Record<string, unknown> = {}) {
  return { error: { message, type, code: status, ...details } };
}

export function sendError(reply: FastifyReply, err: DomainError): FastifyReply {
  if (err instanceof RateLimitError || err instanceof ServiceUnavailableError) reply.header('Retry-After', String(err.retryAfterSeconds));
  return reply.code(err.status).send(errorBody(err.type, err.status, err.message, err.details));
}

export function fromZod(err: ZodError): InvalidRequestError {
  const issue = err.issues[0];
  const param = issue && issue.path.length > 0 ? issue.path.join('.') : undefined;
  const message = issue ? (param ? `${param}: ${issue.message}` : issue.message) : 'invalid request';
  return new InvalidRequestError(message, param);
}

/** Maps every failure to the documented body; a 5xx never shows its internal message. */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | Error, request, reply) => {
    if (err instanceof DomainError) return sendError(reply, err);
    if (err instanceof ZodError) return sendError(reply, fromZod(err));
    const status = (err as FastifyError).statusCode;
    if (status === 413) return reply.code(413).send(errorBody('invalid_request_error', 413, 'The request body is too large.'));
    if (status !== undefined && status >= 400 && status < 500) {
      // Fastify's own 4xx (malformed JSON, wrong content type): the client's mistake, say so plainly.
      return reply.code(400).send(errorBody('invalid_request_error', 400, err.message));
    }
    request.log.error({ err }, 'unhandled error');
    return reply.code(500).send(errorBody('server_error', 500, 'Internal error; retry shortly.'));
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody('not_found', 404, `No route for ${request.method} ${request.url.split('?')[0]}.`)),
  );
}
