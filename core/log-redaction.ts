/**
 * Secrets that reach the log inside text: a signed file URL's signature, an API key a client put in
 * a query string, a bearer token. Whatever logs a URL, headers or an error message passes it
 * through here, so a log shipped to a third party or read over a shoulder carries none of them.
 */

/** Query parameters whose values are credentials (ours, S3's presigned ones, common client habits). */
const SECRET_QUERY =
  /([?&;](?:signature|key|api_key|apikey|access_token|token|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&#\s"'<>]*/gi;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/g;

export const REDACTED = '[redacted]';

export function redactSecrets(text: string): string {
  return text.replace(SECRET_QUERY, `$1${REDACTED}`).replace(BEARER, `$1 ${REDACTED}`);
}

/** Header names whose values are credentials, lower-cased as Node gives them. */
export const SECRET_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'api-key',
];

/** A copy of headers with the credentials' values replaced. */
export function redactHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = SECRET_HEADERS.includes(name.toLowerCase())
      ? REDACTED
      : typeof value === 'string'
        ? redactSecrets(value)
        : value;
  }
  return out;
}

/** Strings anywhere in a log line's fields (a few levels deep), redacted; other values as they are. */
export function redactFields<T>(value: T, depth = 4): T {
  if (typeof value === 'string') return redactSecrets(value) as T;
  if (depth === 0 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return value;
  if (Array.isArray(value)) return value.map((v: unknown) => redactFields(v, depth - 1)) as T;
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] =
      k.toLowerCase() === 'headers' && v !== null && typeof v === 'object'
        ? redactHeaders(v as Record<string, unknown>)
        : redactFields(v, depth - 1);
  }
  return out as T;
}

/** An error as a log field: its type, message, stack and own fields, every string redacted. */
export function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return redactFields(err);
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err)) fields[k] = k === 'cause' ? serializeError(v) : redactFields(v);
  const cause = (err as { cause?: unknown }).cause;
  return {
    type: err.constructor.name,
    message: redactSecrets(err.message),
    stack: redactSecrets(err.stack ?? ''),
    ...fields,
    ...(cause === undefined ? {} : { cause: serializeError(cause) }),
  };
}
