import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { registry } from '../core/metrics';

/**
 * A worker on its own has no API to serve its metrics (provider latency, settles, releases), so it
 * answers GET /metrics on its own port, with the same operator token as the API's.
 */
export async function startMetricsServer(opts: { port: number; host: string; adminToken: string }): Promise<Server> {
  const expected = createHash('sha256').update(`Bearer ${opts.adminToken}`).digest();
  const server = createServer((req, res) => {
    const given = createHash('sha256')
      .update(req.headers.authorization ?? '')
      .digest();
    if (req.url !== '/metrics' || req.method !== 'GET') return void res.writeHead(404).end();
    if (!timingSafeEqual(given, expected)) return void res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(opts.port, opts.host, resolve));
  return server;
}
