/**
 * The document and the routes agree where property-based testing (Schemathesis) found them apart:
 * the methods a path serves and the Allow header that names them; a request body the document
 * calls invalid is refused, and one it calls valid is accepted; a body over the size limit is the
 * documented 413 whatever it holds; a header a door requires is documented required.
 */
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, userOf } from '../../support/dashboard';
import { startHarness } from '../../support/harness';
import type { Harness } from '../../support/harness';
import { createConformance, loadDocument, pointerOf } from '../../support/openapi';
import type { Method, OpenApiDoc } from '../../support/openapi';

let h: Harness;
let doc: OpenApiDoc;
let c: ReturnType<typeof createConformance>;
beforeAll(async () => {
  h = await startHarness({});
  doc = await loadDocument(h.app);
  c = createConformance(doc);
});
afterAll(async () => {
  await h?.close();
});

const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** A concrete path for a documented one: any value routes a path parameter. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, 'x');

describe('methods', () => {
  it('a method a path does not document is a 405 whose Allow names exactly the documented ones', async () => {
    const checked: string[] = [];
    const methodsOf = (path: string) =>
      HTTP_METHODS.filter((m) => doc.paths[path]![m.toLowerCase() as Method] !== undefined);
    /** Another documented path that routes this one too (/v1/videos/{id} routes /v1/videos/extensions). */
    const alsoRouting = (path: string) =>
      Object.keys(doc.paths).filter(
        (p) => p !== path && new RegExp(`^${p.replace(/\{\*\}/g, '.*').replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path),
      );
    for (const path of Object.keys(doc.paths)) {
      const documented = methodsOf(path);
      const elsewhere = new Set(alsoRouting(path).flatMap(methodsOf));
      const other = HTTP_METHODS.find((m) => !documented.includes(m) && !elsewhere.has(m));
      if (!other) continue;
      const res = await h.app.inject({ method: other, url: concrete(path) });
      expect(res.statusCode, `${other} ${path}`).toBe(405);
      const allowed = res.headers.allow?.toString().split(', ') ?? [];
      // HEAD is served wherever GET is, and is not an operation of its own; a path another one also
      // routes answers that one's methods too.
      const expected = [...new Set([...documented, ...elsewhere])].sort();
      expect(allowed.filter((m) => m !== 'HEAD').sort(), `${other} ${path}`).toEqual(expected);
      checked.push(path);
    }
    expect(checked).toContain('/api/mcp');
  });

  it('a method no route has at all is a 405 with Allow where the path has routes, a 404 where it has none, in the door’s shape', async () => {
    const groupB = { error: { type: 'invalid_request_error', code: 405, param: null, message: expect.any(String) } };
    const anthropic = {
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.any(String) },
      request_id: expect.any(String),
    };
    const cases = [
      // QUERY has a body to Fastify: without a Content-Type it was refused as a malformed request.
      { method: 'QUERY', url: '/v1/models', status: 405, allow: 'GET, HEAD', body: groupB },
      { method: 'QUERY', url: '/v1/messages', status: 405, allow: 'POST', body: anthropic },
      { method: 'PROPFIND', url: '/v1/chat/completions', payload: '<x/>', status: 405, allow: 'POST', body: groupB },
      { method: 'GET', url: '/v1/messages/count_tokens', status: 405, allow: 'POST', body: anthropic },
      { method: 'QUERY', url: '/v1/nowhere', status: 404, body: { error: { type: 'not_found', code: 404 } } },
    ] as const;
    for (const t of cases) {
      const res = await h.app.inject({
        method: t.method,
        url: t.url,
        ...('payload' in t ? { payload: t.payload, headers: { 'content-type': 'text/xml' } } : {}),
      });
      expect(res.statusCode, `${t.method} ${t.url}`).toBe(t.status);
      expect(res.headers.allow, `${t.method} ${t.url}`).toBe('allow' in t ? t.allow : undefined);
      expect(res.json(), `${t.method} ${t.url}`).toMatchObject(t.body);
    }

    // A method HTTP's parser does not know never reaches a route: answered from the same index.
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = h.app.server.address() as AddressInfo;
    const raw = (requestLine: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.end(`${requestLine}\r\nhost: x\r\n\r\n`));
        let answer = '';
        socket.on('data', (d: Buffer) => (answer += d.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', reject);
      });
    const onModels = await raw('FOO /v1/models?limit=1 HTTP/1.1');
    expect(onModels).toMatch(/^HTTP\/1\.1 405 /);
    expect(onModels).toMatch(/\r\nallow: GET, HEAD\r\n/);
    expect(JSON.parse(onModels.split('\r\n\r\n')[1]!)).toMatchObject({
      error: {
        type: 'invalid_request_error',
        code: 405,
        message: 'FOO is not allowed on /v1/models; use GET or HEAD.',
      },
    });
    expect(await raw('FOO /v1/nowhere HTTP/1.1')).toMatch(/^HTTP\/1\.1 404 /);
  });

  it('MCP’s preflight names in Allow exactly the methods the document lists for /api/mcp', async () => {
    const res = await h.app.inject({ method: 'OPTIONS', url: '/api/mcp' });
    c.conforms(res, 'options', '/api/mcp', 204);
    const documented = Object.keys(doc.paths['/api/mcp']!).map((m) => m.toUpperCase());
    expect(String(res.headers.allow).split(', ').sort()).toEqual(documented.sort());
  });
});

describe('MCP’s Accept', () => {
  it('is documented required on POST /api/mcp; without it, or listing too little, the answer is the documented 406', async () => {
    const accept = doc.paths['/api/mcp']!.post!.parameters?.find((p) => p.in === 'header' && p.name === 'accept');
    expect(accept).toMatchObject({ required: true });
    const { key } = await h.account({ credits: 1 });
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const post = (headers: Record<string, string>) =>
      h.app.inject({
        method: 'POST',
        url: '/api/mcp',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
        payload: initialize,
      });
    const refusals = [await post({}), await post({ accept: 'application/json' })];
    for (const res of refusals)
      expect(c.conforms(res, 'post', '/api/mcp', 406)).toMatchObject({
        jsonrpc: '2.0',
        error: { message: expect.stringMatching(/application\/json and text\/event-stream/) },
      });
    expect(refusals[0]!.json()).toEqual(refusals[1]!.json());
    expect((await post({ accept: 'application/json, text/event-stream' })).statusCode).toBe(200);
  });
});

describe('the dashboard’s invitation', () => {
  it('refuses every address the document refuses and invites every one it accepts', async () => {
    const validInvite = c.validatorAt(pointerOf('components', 'schemas', 'TeamInviteInput'));
    const { accountId } = await h.account({ credits: 1 });
    const session = await login(h, await userOf(h, accountId));
    const headers = { cookie: session.cookie, 'x-csrf-token': session.csrf };
    const addresses = [
      'ada@example.com',
      'a.b+c@mail.example.org',
      '0@0.com',
      "o'neil@example.com",
      'x@a--b.cc',
      `${'a'.repeat(64)}@example.com`,
      `x@${'a'.repeat(63)}.cc`,
      // Refused by both: a label ending in a hyphen, or over 63; a name part over 64; a leading dot.
      'x@a-.cc',
      `x@${'a'.repeat(64)}.cc`,
      `${'a'.repeat(65)}@example.com`,
      '.ada@example.com',
      'ada@example',
      'ada example@example.com',
      ' ada@example.com',
    ];
    for (const email of addresses) {
      const body = { email, role: 'developer' };
      const expected = validInvite(body) ? 201 : 400;
      const res = await h.app.inject({ method: 'POST', url: '/dashboard/api/team', headers, payload: body });
      c.conforms(res, 'post', '/dashboard/api/team', expected);
    }
    expect(validInvite({ email: 'x@a-.cc', role: 'developer' })).toBe(false);
    expect(validInvite({ email: 'ada@example.com', role: 'developer' })).toBe(true);
  });

  it('without the session cookie an invitation is a 401, even with an API key', async () => {
    const { key } = await h.account({ credits: 1 });
    const res = await h.app.inject({
      method: 'POST',
      url: '/dashboard/api/team',
      headers: { authorization: `Bearer ${key}` },
      payload: { email: 'grace@example.com', role: 'admin' },
    });
    c.conforms(res, 'post', '/dashboard/api/team', 401);
  });
});

describe('Anthropic’s Messages', () => {
  const headers = (key: string) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });
  const tooMany = (content: string) => ({
    model: 'claude-haiku',
    max_tokens: 10,
    messages: Array.from({ length: 10_001 }, () => ({ role: 'user', content })),
  });

  it('a body the document calls invalid is a 400 while it is within the size limit', async () => {
    const { key } = await h.account({ credits: 1 });
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/messages',
      headers: headers(key),
      payload: tooMany('hi'),
    });
    expect(c.conforms(res, 'post', '/v1/messages', 400)).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(/messages/) },
    });
  });

  it('every operation of the door documents anthropic-version required; without it the answer is Anthropic’s 400 naming it', async () => {
    const operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/v1/messages'))
      .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method: method as Method, op })));
    expect(operations.length).toBeGreaterThanOrEqual(8);
    for (const { path, method, op } of operations) {
      const version = op.parameters?.find((p) => p.in === 'header' && p.name === 'anthropic-version');
      expect(version, `${method} ${path}`).toMatchObject({ required: true });
    }
    const { key } = await h.account({ credits: 1 });
    for (const { path, method } of operations) {
      const res = await h.app.inject({
        method: method.toUpperCase() as 'GET',
        url: path.replace(/\{[^}]+\}/g, 'msgbatch_x'),
        headers: { 'x-api-key': key },
        ...(method === 'post' ? { payload: {} } : {}),
      });
      expect(c.conforms(res, method, path, 400), `${method} ${path}`).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' },
        request_id: expect.any(String),
      });
    }
  });

  it('a body over the limit is the documented 413 whatever it holds, as Anthropic answers it', async () => {
    const { key } = await h.account({ credits: 1 });
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/messages',
      headers: headers(key),
      payload: tooMany('x'.repeat(900)),
    });
    expect(c.conforms(res, 'post', '/v1/messages', 413)).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(doc.paths['/v1/messages']!.post!.responses['413']!.description).toMatch(/before it is read/);
    expect((await h.call('GET', '/api/v1/balance', { key })).json()).toMatchObject({ balance: 1, holdsActive: 0 });
  });
});
