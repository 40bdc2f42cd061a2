import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import { redactFields, redactHeaders, redactSecrets, serializeError } from '../core/log-redaction';

/**
 * The API's logger settings, whatever the caller asked for, with its secrets kept out: a request's
 * URL loses the values of `signature=`, `key=`, `api_key=` (a signed file link, a key a client put
 * in a query string), headers lose `Authorization` and cookies, errors and other fields the same.
 */
export function loggerOptions(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger) return false;
  const base = logger === true ? {} : logger;
  return {
    ...base,
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: redactSecrets(request.url),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
      err: (err: Error) => serializeError(err) as { type: string; message: string; stack: string },
      headers: (headers: Record<string, unknown>) => redactHeaders(headers),
      ...base.serializers,
    },
    formatters: {
      ...base.formatters,
      log: (fields: Record<string, unknown>) =>
        redactFields(base.formatters?.log ? base.formatters.log(fields) : fields),
    },
  };
}
