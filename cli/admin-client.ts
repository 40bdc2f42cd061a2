/** The HTTP side of the CLI: DESIGN §8's operator API, with `fetch` passed in so tests need no server. */

export type Fetch = typeof fetch;

/** The API answered with its error body `{ error: { message, type, code } }` (or another failure status). */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** Nothing answered at the URL: refused, unresolvable, or too slow. */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach ${url} (${reason})`);
  }
}

export interface AdminClientOptions {
  baseUrl: string;
  adminToken?: string;
  fetch: Fetch;
  timeoutMs?: number;
}

interface Answer {
  status: number;
  json: unknown;
  text: string;
}

export interface Health {
  status: string;
  checks?: Record<string, string>;
}

export function createAdminClient(o: AdminClientOptions) {
  const timeoutMs = o.timeoutMs ?? 30_000;

  async function request(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (o.adminToken) headers.authorization = `Bearer ${o.adminToken}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await o.fetch(`${o.baseUrl}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new ConnectionError(o.baseUrl, networkReason(err, timeoutMs));
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, json, text };
  }

  /** The documented body on success; an ApiError carrying the documented type and message otherwise. */
  async function call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
    const answer = await request(method, path, body);
    if (answer.status >= 200 && answer.status < 300 && answer.json !== undefined) return answer.json as T;
    throw toApiError(answer);
  }

  const seg = encodeURIComponent;
  return {
    /** 200 `{ status: "ok" }` or 503 `{ status: "unavailable", checks }`; both are answers, not errors. */
    async health(): Promise<Health> {
      const answer = await request('GET', '/health');
      const { status, json } = answer;
      if ((status === 200 || status === 503) && isObject(json) && typeof json.status === 'string')
        return json as unknown as Health;
      throw toApiError(answer);
    },
    createAccount: (input: { plan: string; credits: number; chatCap?: number }) =>
      call<{ id: string }>('POST', '/admin/v1/accounts', input),
    createKey: (accountId: string, input: { scopes: string[]; models?: string[] }) =>
      call<{ id: string; key: string }>('POST', `/admin/v1/accounts/${seg(accountId)}/keys`, input),
    addCredits: (accountId: string, credits: number) =>
      call<{ id: string; balance: number }>('POST', `/admin/v1/accounts/${seg(accountId)}/credits`, { credits }),
    createUser: (input: { accountId: string; email: string }) =>
      call<{ id: string; setPasswordUrl: string; expiresAt: string }>('POST', '/admin/v1/users', input),
    usage: (query: { groupBy: string; from?: string; to?: string }) =>
      call<UsageReport>(
        'GET',
        `/admin/v1/usage?${new URLSearchParams({ group_by: query.groupBy, ...(query.from ? { from: query.from } : {}), ...(query.to ? { to: query.to } : {}) }).toString()}`,
      ),
    revokeKey: (keyId: string) => call<{ id: string; revoked: boolean }>('DELETE', `/admin/v1/keys/${seg(keyId)}`),
  };
}

export type AdminClient = ReturnType<typeof createAdminClient>;

interface UsageTotals {
  generations: number;
  revenueEur: number;
  costEur: number;
  marginEur: number;
  uncosted: number;
}

/** GET /admin/v1/usage's answer. */
export interface UsageReport {
  groupBy: string;
  from: string;
  to: string;
  rows: (UsageTotals & { key: string })[];
  total: UsageTotals;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

function toApiError({ status, json, text }: Answer): ApiError {
  const e = isObject(json) && isObject(json.error) ? json.error : undefined;
  if (e && typeof e.type === 'string' && typeof e.message === 'string') return new ApiError(status, e.type, e.message);
  return new ApiError(status, `http_${status}`, text.trim().slice(0, 200) || `unexpected answer (HTTP ${status})`);
}

/** fetch hides the socket error in `cause` (an AggregateError when several addresses were tried). */
function networkReason(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `no answer within ${timeoutMs / 1000} s`;
  const codes: string[] = [];
  const collect = (e: unknown) => {
    if (!isObject(e)) return;
    if (typeof e.code === 'string') codes.push(e.code);
    if (Array.isArray(e.errors)) e.errors.forEach(collect);
  };
  collect(err instanceof Error ? err.cause : undefined);
  if (codes.includes('ECONNREFUSED')) return 'connection refused';
  if (codes.includes('ENOTFOUND')) return 'host not found';
  return codes[0] ?? (err instanceof Error ? err.message : String(err));
}
