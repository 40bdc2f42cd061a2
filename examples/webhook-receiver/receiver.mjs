// A webhook receiver for the generation service: verifies each delivery's signature before
// trusting it, drops duplicates, answers fast. No dependencies: copy it and adapt handle().
//
//   WEBHOOK_SECRET=whsec_... PORT=4000 node receiver.mjs
//
// Every delivery is a POST with a JSON body and these headers:
//   X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]   (two v1 during a secret rotation)
//   X-Service-Event:     generation.completed, generation.failed, generation.queued, ... or ping
//   X-Service-Delivery:  whd_...   (the same on every retry of one delivery: drop duplicates by it)
// v1 is HMAC-SHA256, keyed with the secret string exactly as shown (whsec_ prefix included),
// over "<t>.<raw body>". Verify it over the raw bytes, before parsing the JSON.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const SECRET = process.env.WEBHOOK_SECRET;
const PORT = Number(process.env.PORT ?? 4000);
const HOST = process.env.HOST ?? '127.0.0.1';
const TOLERANCE_SECONDS = 300;
if (!SECRET?.startsWith('whsec_')) {
  console.error('Set WEBHOOK_SECRET to the whsec_... secret shown when the endpoint was created.');
  process.exit(1);
}

/** True when one of the header's v1 signatures is ours and its timestamp is recent. */
export function verify(header, rawBody, secret, nowSeconds = Math.floor(Date.now() / 1000)) {
  const parts = String(header ?? '')
    .split(',')
    .map((p) => p.trim());
  const t = Number(parts.find((p) => p.startsWith('t='))?.slice(2));
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > TOLERANCE_SECONDS) return false;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest();
  return parts
    .filter((p) => p.startsWith('v1='))
    .some((p) => {
      const given = Buffer.from(p.slice(3), 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}

// Deliveries already handled (a real receiver keeps these in its database).
const seen = new Set();

function handle(event, payload) {
  // Your logic here: e.g. on generation.completed, fetch payload.generation.outputUrl (valid 24 h).
  return { event, id: payload.generation?.id ?? payload.generation_id ?? null };
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    if (req.method !== 'POST' || !verify(req.headers['x-service-signature'], raw, SECRET)) {
      console.log(JSON.stringify({ verified: false }));
      res.writeHead(400).end('bad signature');
      return;
    }
    const delivery = String(req.headers['x-service-delivery']);
    const duplicate = seen.has(delivery);
    seen.add(delivery);
    const result = duplicate ? null : handle(String(req.headers['x-service-event']), JSON.parse(raw.toString('utf8')));
    console.log(JSON.stringify({ verified: true, delivery, duplicate, ...result }));
    // Answer 2xx quickly; slow work belongs in a queue of your own (the service waits 15 s at most).
    res.writeHead(204).end();
  });
});

server.listen(PORT, HOST, () => console.log(`listening on http://${HOST}:${server.address().port}`));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
