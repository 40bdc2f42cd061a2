import type pg from 'pg';
import { attemptsOf, enqueuePing, getDelivery, listDeliveries, reopenDelivery } from '../../core/db/webhook-deliveries';
import type { AttemptRow, DeliveryRow, DeliveryStatus } from '../../core/db/webhook-deliveries';
import {
  deleteEndpoint,
  getEndpoint,
  insertEndpoint,
  listEndpoints,
  lockAndCountEndpoints,
  rotateEndpointSecret,
  updateEndpoint,
} from '../../core/db/webhook-endpoints';
import type { EndpointPatch, EndpointRow } from '../../core/db/webhook-endpoints';
import { activeTraceparent } from '../../core/tracing';
import { inTransaction } from '../../core/db/pool';
import { InvalidRequestError, NotFoundError, ServiceUnavailableError, WebhookDisabledError } from '../../core/errors';
import { DELIVERY_ID_PATTERN, newId, WEBHOOK_ID_PATTERN } from '../../core/ids';
import { actorOf, assertWebhooksScope } from '../../core/accounts/principal';
import { insertAuditEvent } from '../../core/db/audit';
import { audited } from '../accounts/audit';
import type { Principal } from '../../core/accounts/principal';
import { FORMAT_EVENTS, subscribable, unknownEvents } from '../../core/webhooks/events';
import type { WebhookFormat } from '../../core/webhooks/events';
import { ROTATION_OVERLAP_MS } from '../../core/webhooks/schedule';
import type { SecretBox } from '../../core/webhooks/secret-box';
import { generateSecret } from '../../core/webhooks/signing';
import { checkWebhookUrl } from '../../core/webhooks/url-check';
import type { WebhookUrlRules } from '../../core/webhooks/url-check';
import { decodeCursor, encodeCursor } from '../../core/cursor';
import type { WebhookDispatcher } from './dispatch';
import { createJobCallbacks } from './job-callbacks';

/** The spec's limit (Limits: "Webhook endpoints, 5 per account"). */
export const MAX_WEBHOOK_ENDPOINTS = 5;

export interface WebhookServiceDeps {
  pool: pg.Pool;
  /** Without it (an instance built without WEBHOOK_SECRET_KEY) creating and rotating answer 503. */
  secretBox: SecretBox | undefined;
  dispatcher: Pick<WebhookDispatcher, 'redeliver'>;
  urlRules: WebhookUrlRules;
  clock?: () => number;
}

export interface EndpointView {
  id: string;
  url: string;
  format: WebhookFormat;
  events: string[];
  description: string | null;
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: Date | null;
  /** While a rotation's overlap lasts: when the previous secret stops signing. */
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface DeliveryView extends DeliveryRow {
  attemptLog: AttemptRow[];
}

export interface NewEndpointRequest {
  url: string;
  format?: WebhookFormat | undefined;
  events?: string[] | undefined;
  description?: string | undefined;
}

export interface EndpointUpdate {
  url?: string | undefined;
  events?: string[] | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
}

/** What the service's pieces share: the dependencies, with the clock defaulted. */
interface WebhookContext {
  pool: pg.Pool;
  dispatcher: Pick<WebhookDispatcher, 'redeliver'>;
  urlRules: WebhookUrlRules;
  secretBox: SecretBox | undefined;
  clock: () => number;
}

/** Registration, secrets, the delivery log and redeliveries of an account's webhook endpoints, and of its jobs' callbacks. */
export function createWebhookService(deps: WebhookServiceDeps) {
  const ctx: WebhookContext = {
    pool: deps.pool,
    dispatcher: deps.dispatcher,
    urlRules: deps.urlRules,
    secretBox: deps.secretBox,
    clock: deps.clock ?? Date.now,
  };
  return {
    /** Callback URLs named on jobs: the check each submit makes, the account's callback secret, their log (job-callbacks.ts). */
    callbacks: createJobCallbacks(deps),
    ...endpointRegistration(ctx),
    ...endpointSecrets(ctx),
    ...deliveryLog(ctx),
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;

const box = (secretBox: SecretBox | undefined): SecretBox => {
  if (!secretBox) throw new ServiceUnavailableError('Webhooks are not configured on this instance.');
  return secretBox;
};

const viewOf = (e: EndpointRow, clock: () => number): EndpointView => ({
  id: e.id,
  url: e.url,
  format: e.format,
  events: e.events ?? [...FORMAT_EVENTS[e.format]],
  description: e.description,
  enabled: e.enabled,
  disabledReason: e.disabledReason,
  disabledAt: e.disabledAt,
  previousSecretExpiresAt:
    e.previousSecretExpiresAt && e.previousSecretExpiresAt.getTime() > clock() ? e.previousSecretExpiresAt : null,
  createdAt: e.createdAt,
  updatedAt: e.updatedAt,
});

const notFound = (id: string) => new NotFoundError(`Webhook endpoint '${id}' not found.`, { param: 'id' });

async function find(pool: pg.Pool, principal: Principal, id: string): Promise<EndpointRow> {
  const e = WEBHOOK_ID_PATTERN.test(id) ? await getEndpoint(pool, principal.accountId, id) : undefined;
  if (!e) throw notFound(id);
  return e;
}

/** The filter as stored: null for exactly the format's events (the opt-in progress is never in it). Unknown names are a 400 that lists the valid ones. */
function eventFilter(format: WebhookFormat, events: string[] | undefined): string[] | null {
  if (events === undefined) return null;
  const unknown = unknownEvents(format, events);
  if (unknown.length > 0) {
    throw new InvalidRequestError(
      `events: ${unknown.map((e) => `'${e}'`).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not in the ${format} catalogue; use ${subscribable(format).join(', ')}.`,
      'events',
    );
  }
  const unique = [...new Set(events)];
  const all = unique.length === FORMAT_EVENTS[format].length && FORMAT_EVENTS[format].every((e) => unique.includes(e));
  return all ? null : unique;
}

async function deliveryViews(pool: pg.Pool, rows: DeliveryRow[]): Promise<DeliveryView[]> {
  const attempts = await attemptsOf(
    pool,
    rows.map((d) => d.id),
  );
  return rows.map((d) => ({ ...d, attemptLog: attempts.filter((a) => a.deliveryId === d.id) }));
}

const sendable = (e: EndpointRow): void => {
  if (!e.enabled) throw new WebhookDisabledError(e.id, e.disabledReason);
};

/** Creating, reading, changing and deleting an account's endpoints. */
function endpointRegistration({ pool, urlRules, secretBox, clock }: WebhookContext) {
  return {
    async create(principal: Principal, req: NewEndpointRequest): Promise<{ endpoint: EndpointView; secret: string }> {
      assertWebhooksScope(principal);
      const sealer = box(secretBox);
      const format = req.format ?? 'nested';
      const events = eventFilter(format, req.events);
      const url = await checkWebhookUrl(req.url, urlRules);
      const id = newId('wh');
      const secret = generateSecret();
      const endpoint = await inTransaction(pool, async (tx) => {
        if ((await lockAndCountEndpoints(tx, principal.accountId)) >= MAX_WEBHOOK_ENDPOINTS) {
          throw new InvalidRequestError(
            `An account can register at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one (DELETE /api/v1/webhooks/{id}) before adding another.`,
          );
        }
        const created = await insertEndpoint(tx, {
          id,
          accountId: principal.accountId,
          url,
          format,
          events,
          description: req.description ?? null,
          secretSealed: sealer.seal(secret, id),
        });
        await insertAuditEvent(tx, {
          accountId: principal.accountId,
          actor: actorOf(principal),
          action: 'webhook.created',
          target: id,
          details: { url, format, events, description: req.description ?? null },
        });
        return created;
      });
      return { endpoint: viewOf(endpoint, clock), secret };
    },

    async list(principal: Principal): Promise<EndpointView[]> {
      assertWebhooksScope(principal);
      return (await listEndpoints(pool, principal.accountId)).map((e) => viewOf(e, clock));
    },

    async get(principal: Principal, id: string): Promise<EndpointView> {
      assertWebhooksScope(principal);
      return viewOf(await find(pool, principal, id), clock);
    },

    async update(principal: Principal, id: string, req: EndpointUpdate): Promise<EndpointView> {
      assertWebhooksScope(principal);
      const current = await find(pool, principal, id);
      const patch: EndpointPatch = {
        url: req.url === undefined ? undefined : await checkWebhookUrl(req.url, urlRules),
        events: req.events === undefined ? undefined : eventFilter(current.format, req.events),
        description: req.description,
        enabled: req.enabled,
      };
      const updated = await audited(
        pool,
        (tx) => updateEndpoint(tx, principal.accountId, id, patch),
        () => ({
          accountId: principal.accountId,
          actor: actorOf(principal),
          action: 'webhook.updated',
          target: id,
          details: Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)),
        }),
      );
      if (!updated) throw notFound(id);
      return viewOf(updated, clock);
    },

    async remove(principal: Principal, id: string): Promise<void> {
      assertWebhooksScope(principal);
      const deleted =
        WEBHOOK_ID_PATTERN.test(id) &&
        (await audited(
          pool,
          async (tx) => (await deleteEndpoint(tx, principal.accountId, id)) || undefined,
          () => ({
            accountId: principal.accountId,
            actor: actorOf(principal),
            action: 'webhook.deleted',
            target: id,
            details: {},
          }),
        ));
      if (!deleted) {
        throw notFound(id);
      }
    },
  };
}

/** Rotating an endpoint's signing secret. */
function endpointSecrets({ pool, secretBox, clock }: WebhookContext) {
  return {
    /** A new secret; the one it replaces keeps signing (beside it) for 24 hours. */
    async rotate(principal: Principal, id: string): Promise<{ endpoint: EndpointView; secret: string }> {
      assertWebhooksScope(principal);
      const sealer = box(secretBox);
      await find(pool, principal, id);
      const secret = generateSecret();
      const rotated = await audited(
        pool,
        (tx) =>
          rotateEndpointSecret(
            tx,
            principal.accountId,
            id,
            sealer.seal(secret, id),
            new Date(clock() + ROTATION_OVERLAP_MS),
          ),
        () => ({
          accountId: principal.accountId,
          actor: actorOf(principal),
          action: 'webhook.secret_rotated',
          target: id,
          details: {},
        }),
      );
      if (!rotated) throw notFound(id);
      return { endpoint: viewOf(rotated, clock), secret };
    },
  };
}

/** An endpoint's delivery log: reading it, sending a delivery again, sending a test ping. */
function deliveryLog({ pool, dispatcher, clock }: WebhookContext) {
  return {
    async deliveries(
      principal: Principal,
      id: string,
      q: { limit: number; cursor?: string | undefined; status?: DeliveryStatus | undefined },
    ): Promise<{ data: DeliveryView[]; nextCursor: string | null }> {
      assertWebhooksScope(principal);
      await find(pool, principal, id);
      const before = q.cursor === undefined ? undefined : decodeCursor(q.cursor, DELIVERY_ID_PATTERN);
      const rows = await listDeliveries(pool, id, { limit: q.limit + 1, before, status: q.status });
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      return {
        data: await deliveryViews(pool, page),
        nextCursor: rows.length > q.limit && last ? encodeCursor(last.id) : null,
      };
    },

    /** Sends a delivery again now, with the same delivery id; its attempts go on in the same log. */
    async redeliver(principal: Principal, id: string, deliveryId: string): Promise<DeliveryView> {
      assertWebhooksScope(principal);
      const endpoint = await find(pool, principal, id);
      const delivery = DELIVERY_ID_PATTERN.test(deliveryId) ? await getDelivery(pool, id, deliveryId) : undefined;
      if (!delivery) throw new NotFoundError(`Delivery '${deliveryId}' not found.`, { param: 'deliveryId' });
      sendable(endpoint);
      await reopenDelivery(pool, deliveryId, new Date(clock()));
      await dispatcher.redeliver(deliveryId);
      const [view] = await deliveryViews(pool, [(await getDelivery(pool, id, deliveryId)) ?? delivery]);
      return view!;
    },

    /** Sends a signed `ping` to the endpoint through the same path as every event. */
    async test(principal: Principal, id: string): Promise<DeliveryView> {
      assertWebhooksScope(principal);
      const endpoint = await find(pool, principal, id);
      sendable(endpoint);
      const deliveryId = await inTransaction(pool, (tx) => enqueuePing(tx, endpoint, activeTraceparent()));
      const delivery = await getDelivery(pool, id, deliveryId);
      const [view] = await deliveryViews(pool, [delivery!]);
      return view!;
    },
  };
}
