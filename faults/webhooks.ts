// Webhooks under the faults: one account has an endpoint on a loopback receiver, so the outbox,
// the relay and the delivery workflows live through the same kills and restarts as generations.
// Delivery is at least once: what must hold is that every finished generation's event arrives,
// signed with the endpoint's secret, and that repeats carry the same delivery id (receivers drop
// duplicates by it).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { verifyServiceSignature } from '../core/webhooks/signing';
import type { Check, GenerationFact } from './ledger-checks';

export interface Delivery {
  deliveryId: string;
  event: string;
  /** The generation's id, or the batch's for a batch event. */
  subject: string;
  /** Kept as it arrived, with its X-Service-Signature and the second it came, to verify once the secret is known. */
  body: string;
  signature: string;
  receivedAt: number;
}

/** A batch the endpoint was subscribed to, and the status it ended in (its event is `batch.<status>`). */
export interface WatchedBatch {
  id: string;
  status: string;
}

export async function startWebhookReceiver(): Promise<{ url: string; received: Delivery[]; close(): Promise<void> }> {
  const received: Delivery[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const raw = Buffer.concat(chunks).toString('utf8');
        const body = JSON.parse(raw) as { event?: string; generation?: { id?: string }; batch?: { id?: string } };
        received.push({
          deliveryId: String(req.headers['webhook-id'] ?? ''),
          event: body.event ?? '',
          subject: body.generation?.id ?? body.batch?.id ?? '',
          body: raw,
          signature: String(req.headers['x-service-signature'] ?? ''),
          receivedAt: Math.floor(Date.now() / 1000),
        });
      } catch {
        // Not JSON: counted as nothing; the check finds the event missing.
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Registers the receiver for the account of `token` (development mode allows plain http to
 * loopback), for the finished generations and any `extraEvents` (the batch events are opt-in).
 * Resolves with the endpoint's secret, shown this once.
 */
export async function registerEndpoint(
  baseUrl: string,
  token: string,
  url: string,
  extraEvents: readonly string[] = [],
): Promise<string> {
  const res = await fetch(`${baseUrl}/api/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      url,
      format: 'nested',
      events: ['generation.completed', 'generation.failed', ...extraEvents],
    }),
  });
  if (res.status !== 201 && res.status !== 200)
    throw new Error(`registering the webhook endpoint answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { secret: string }).secret;
}

const EVENT_OF: Record<string, string> = { succeeded: 'generation.completed', failed: 'generation.failed' };

/**
 * What the receiver's deliveries lack against `expected` (`<generation or batch id> <event>`
 * each), how many repeat a delivery id, and which do not verify with `secret` (with the default
 * tolerance, at the second each arrived).
 */
export function judgeDeliveries(
  expected: readonly string[],
  received: readonly Delivery[],
  secret: string,
): { missing: string[]; repeats: number; unsigned: Delivery[] } {
  const got = new Set(received.map((d) => `${d.subject} ${d.event}`));
  const ids = received.map((d) => d.deliveryId);
  return {
    missing: expected.filter((e) => !got.has(e)),
    repeats: ids.length - new Set(ids).size,
    unsigned: received.filter(
      (d) => !verifyServiceSignature(d.signature, d.body, secret, { nowSeconds: d.receivedAt }),
    ),
  };
}

/**
 * Waits (up to `waitMs`) until every finished generation of the account (and each of `batches`)
 * has had its event delivered, then says what arrived and whether each delivery is signed with
 * `secret` (judgeDeliveries). A delivery whose attempt failed waits for its next one (5 s, then
 * 5 min): the wait ends early only when nothing is missing.
 */
export async function webhookCheck(
  db: pg.Pool,
  accountId: string,
  facts: GenerationFact[],
  received: Delivery[],
  waitMs: number,
  secret: string,
  batches: readonly WatchedBatch[] = [],
): Promise<Check> {
  const expected = [
    ...facts.filter((g) => g.accountId === accountId && EVENT_OF[g.status]).map((g) => `${g.id} ${EVENT_OF[g.status]}`),
    ...batches.map((b) => `${b.id} batch.${b.status}`),
  ];
  const deadline = Date.now() + waitMs;
  while (judgeDeliveries(expected, received, secret).missing.length > 0 && Date.now() < deadline) await sleep(1_000);
  const { missing: left, repeats, unsigned } = judgeDeliveries(expected, received, secret);
  const states = await db.query<{ status: string; n: number }>(
    `SELECT d.status, count(*)::int AS n FROM webhook_deliveries d WHERE d.account_id = $1 GROUP BY d.status ORDER BY d.status`,
    [accountId],
  );
  const rows = states.rows.map((r) => `${r.n} ${r.status}`).join(', ');
  return {
    name: 'every finished generation of the webhook account had its event delivered, validly signed',
    ok: left.length === 0 && unsigned.length === 0,
    detail: `${expected.length} expected, ${received.length} received (${repeats} repeats of a delivery id, dropped by it); deliveries ${rows || 'none'}${
      left.length ? `; MISSING ${left.length}: ${left.slice(0, 5).join(', ')}` : ''
    }${
      unsigned.length
        ? `; BAD SIGNATURE on ${unsigned.length}: ${unsigned
            .slice(0, 5)
            .map((d) => `${d.deliveryId} ${d.event}`)
            .join(', ')}`
        : ''
    }`,
  };
}
