import type pg from 'pg';
import { actorOf, assertWebhooksScope } from '../../core/accounts/principal';
import type { Principal } from '../../core/accounts/principal';
import { callbackSecretOwner, getCallbackSecret, putCallbackSecret } from '../../core/db/callback-secrets';
import type { CallbackSecretRow } from '../../core/db/callback-secrets';
import {
  attemptsOf,
  getCallbackDelivery,
  listCallbackDeliveries,
  reopenDelivery,
} from '../../core/db/webhook-deliveries';
import type { AttemptRow, CallbackDeliveryRow, DeliveryStatus } from '../../core/db/webhook-deliveries';
import { decodeCursor, encodeCursor } from '../../core/cursor';
import { InvalidRequestError, NotFoundError, ServiceUnavailableError, WebhookDisabledError } from '../../core/errors';
import { DELIVERY_ID_PATTERN } from '../../core/ids';
import { callbackEventFilter } from '../../core/webhooks/job-callbacks';
import type { CallbackJob, JobCallback, RequestedCallback } from '../../core/webhooks/job-callbacks';
import { ROTATION_OVERLAP_MS } from '../../core/webhooks/schedule';
import type { SecretBox } from '../../core/webhooks/secret-box';
import { generateSecret } from '../../core/webhooks/signing';
import { checkWebhookUrl } from '../../core/webhooks/url-check';
import type { WebhookUrlRules } from '../../core/webhooks/url-check';
import { audited } from '../accounts/audit';
import type { WebhookDispatcher } from './dispatch';

/**
 * Callback URLs named on jobs: the check a door's submit makes before anything is held (`prepare`,
 * the one call every door makes with the URL it was given), the account's callback secret, and the
 * callback log with its redeliveries. Deliveries themselves go the endpoints' way (the outbox, the
 * delivery workflow); a job's callback is an endpoint row scoped to the job (core/db/webhook-endpoints.ts).
 */

export interface JobCallbackDeps {
  pool: pg.Pool;
  /** Without it (an instance built without WEBHOOK_SECRET_KEY) callbacks answer 503. */
  secretBox: SecretBox | undefined;
  dispatcher: Pick<WebhookDispatcher, 'redeliver'>;
  urlRules: WebhookUrlRules;
  clock?: () => number;
}

export interface CallbackSecretView {
  createdAt: Date;
  updatedAt: Date;
  /** While a rotation's overlap lasts: when the previous secret stops signing. */
  previousSecretExpiresAt: Date | null;
}

export interface CallbackDeliveryView extends CallbackDeliveryRow {
  attemptLog: AttemptRow[];
}

export function createJobCallbacks(deps: JobCallbackDeps) {
  const { pool, dispatcher, urlRules } = deps;
  const clock = deps.clock ?? Date.now;

  const box = (): SecretBox => {
    if (!deps.secretBox) throw new ServiceUnavailableError('Webhooks are not configured on this instance.');
    return deps.secretBox;
  };

  const secretView = (s: CallbackSecretRow): CallbackSecretView => ({
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    previousSecretExpiresAt:
      s.previousSecretExpiresAt && s.previousSecretExpiresAt.getTime() > clock() ? s.previousSecretExpiresAt : null,
  });

  const views = async (rows: CallbackDeliveryRow[]): Promise<CallbackDeliveryView[]> => {
    const attempts = await attemptsOf(
      pool,
      rows.map((d) => d.id),
    );
    return rows.map((d) => ({ ...d, attemptLog: attempts.filter((a) => a.deliveryId === d.id) }));
  };

  return {
    /**
     * Checks a callback a submit names, before anything is held: the address policy of endpoints
     * (https, no private networks unless allowed), its event filter, and that the account has a
     * callback secret to sign with. A refusal is a 400 naming the door's field.
     */
    prepare: async (principal: Principal, requested: RequestedCallback, job: CallbackJob): Promise<JobCallback> => {
      box();
      const events = callbackEventFilter(requested.events, job, requested.eventsParam);
      if (!(await getCallbackSecret(pool, principal.accountId))) {
        throw new InvalidRequestError(
          `${requested.param}: the account has no callback secret to sign with yet; create it once with POST /api/v1/webhooks/callback-secret/rotate.`,
          requested.param,
        );
      }
      const url = await checkWebhookUrl(requested.url, urlRules, requested.param);
      return { url, events };
    },

    async secret(principal: Principal): Promise<CallbackSecretView> {
      assertWebhooksScope(principal);
      const s = await getCallbackSecret(pool, principal.accountId);
      if (!s) throw new NotFoundError('The account has no callback secret yet.');
      return secretView(s);
    },

    /** The first callback secret, or a new one whose predecessor keeps signing beside it for 24 hours: shown once. */
    async rotateSecret(principal: Principal): Promise<{ view: CallbackSecretView; secret: string }> {
      assertWebhooksScope(principal);
      const secret = generateSecret();
      const sealed = box().seal(secret, callbackSecretOwner(principal.accountId));
      const row = await audited(
        pool,
        (tx) => putCallbackSecret(tx, principal.accountId, sealed, new Date(clock() + ROTATION_OVERLAP_MS)),
        () => ({
          accountId: principal.accountId,
          actor: actorOf(principal),
          action: 'webhook.callback_secret_rotated',
          target: null,
          details: {},
        }),
      );
      return { view: secretView(row), secret };
    },

    /** The account's callback deliveries, newest first; one job's when `job` names it. */
    async deliveries(
      principal: Principal,
      q: { limit: number; cursor?: string | undefined; status?: DeliveryStatus | undefined; job?: string | undefined },
    ): Promise<{ data: CallbackDeliveryView[]; nextCursor: string | null }> {
      assertWebhooksScope(principal);
      const before = q.cursor === undefined ? undefined : decodeCursor(q.cursor, DELIVERY_ID_PATTERN);
      const rows = await listCallbackDeliveries(pool, principal.accountId, { ...q, limit: q.limit + 1, before });
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      return { data: await views(page), nextCursor: rows.length > q.limit && last ? encodeCursor(last.id) : null };
    },

    /** Sends a callback delivery again now, with the same delivery id. */
    async redeliver(principal: Principal, deliveryId: string): Promise<CallbackDeliveryView> {
      assertWebhooksScope(principal);
      const found = DELIVERY_ID_PATTERN.test(deliveryId)
        ? await getCallbackDelivery(pool, principal.accountId, deliveryId)
        : undefined;
      if (!found) throw new NotFoundError(`Delivery '${deliveryId}' not found.`, { param: 'deliveryId' });
      if (!found.endpointEnabled) throw new WebhookDisabledError(found.endpointId, found.endpointDisabledReason);
      await reopenDelivery(pool, deliveryId, new Date(clock()));
      await dispatcher.redeliver(deliveryId);
      const [view] = await views([(await getCallbackDelivery(pool, principal.accountId, deliveryId)) ?? found]);
      return view!;
    },
  };
}

export type JobCallbacks = ReturnType<typeof createJobCallbacks>;
