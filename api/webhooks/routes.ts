import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  ALERT_EVENTS,
  BATCH_EVENTS,
  FLAT_EVENTS,
  FORMAT_EVENTS,
  NESTED_EVENTS,
  PROGRESS_EVENT,
  WEBHOOK_FORMATS,
} from '../../core/webhooks/events';
import { safeText } from '../../core/text';
import type { EndpointView, WebhookService } from '../../service/webhooks/endpoints';
import { MAX_WEBHOOK_ENDPOINTS } from '../../service/webhooks/endpoints';
import { principalOf, requireApiKey } from '../shared/auth';
import type { AuthDeps } from '../shared/auth';
import { doorWords } from '../shared/door';
import { callbackRoutes } from './callback-routes';
import { deliveriesQuery, delivery, deliveryOf, iso } from './delivery-schemas';
import type { ManagementDoor } from '../shared/door';

/** Group A's webhook API (DESIGN §6 "Webhooks API"): a key of the account with the `webhooks` scope manages its endpoints. */

const url = z
  .string()
  .max(2048)
  .describe('https URL that receives the POSTs (plain http only to loopback in development mode)');
const format = z.enum(WEBHOOK_FORMATS);
const eventName = z.string().max(100);
const events = z
  .array(eventName)
  .min(1)
  .max(16)
  .describe(
    `Events to receive, within the format's catalogue: nested ${NESTED_EVENTS.join(', ')}; flat ${FLAT_EVENTS.join(', ')}; openai ${FORMAT_EVENTS.openai.join(', ')}. Default: all of them. ` +
      `Either format may also list ${PROGRESS_EVENT} (never sent without being listed): one delivery per 10 % step of a video or upscale run; ` +
      `the account alerts ${ALERT_EVENTS.join(', ')}; and the batch events ${BATCH_EVENTS.join(', ')} (a batch ended; its lines send no generation events). ` +
      'Those are never sent without being listed',
  );
const description = safeText({ max: 500, label: 'description' });

const createBody = z
  .strictObject({
    url,
    format: format
      .optional()
      .describe(
        'nested (default): catalogue A, the generation record nested; flat: catalogue B, video and upscale state changes; ' +
          'openai: OpenAI’s events and shape ({id, object: "event", type, created_at, data: {id}}), which the openai SDKs’ webhooks.unwrap() verify and parse',
      ),
    events: events.optional(),
    description: description.optional(),
  })
  .meta({
    id: 'WebhookCreateRequest',
    examples: [
      {
        url: 'https://example.com/hooks/gensvc',
        format: 'nested',
        events: ['generation.completed'],
        description: 'production receiver',
      },
    ],
  });

const updateBody = z
  .strictObject({
    url: url.optional(),
    events: events.optional(),
    description: description.nullable().optional(),
    enabled: z
      .boolean()
      .optional()
      .describe('true enables a disabled endpoint again (and forgets why it was disabled)'),
  })
  .meta({ id: 'WebhookUpdateRequest' });

const endpointFields = {
  id: z.string().describe('wh_ followed by 26 characters'),
  url: z.string(),
  format,
  events: z.array(z.string()).describe('The events it receives'),
  description: z.string().nullable(),
  enabled: z.boolean(),
  disabledReason: z
    .string()
    .nullable()
    .describe('Why it was disabled: 410 Gone, 3 days of failures, or through the API'),
  disabledAt: z.string().nullable(),
  previousSecretExpiresAt: z.string().nullable().describe('During a rotation: when the previous secret stops signing'),
  createdAt: z.string(),
  updatedAt: z.string(),
};
const endpoint = z.object(endpointFields).meta({ id: 'WebhookEndpoint' });
const endpointWithSecret = z
  .object({
    ...endpointFields,
    secret: z.string().describe('whsec_ + base64 of 32 bytes: shown this once; keep it to verify signatures'),
  })
  .meta({ id: 'WebhookEndpointWithSecret' });

// Named schemas are made once: the routes are registered for two doors.
const endpointList = z.object({ data: z.array(endpoint) }).meta({ id: 'WebhookEndpointList' });
const deleted = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'WebhookDeleted' });
const deliveryList = z
  .object({ data: z.array(delivery), next_cursor: z.string().nullable() })
  .meta({ id: 'WebhookDeliveryList' });

const idParams = z.object({ id: z.string().describe('A webhook endpoint id (wh_…)') });
const deliveryParams = idParams.extend({ deliveryId: z.string().describe('A delivery id (whd_…)') });

function endpointOf(e: EndpointView): z.infer<typeof endpoint> {
  return {
    ...e,
    disabledAt: iso(e.disabledAt),
    previousSecretExpiresAt: iso(e.previousSecretExpiresAt),
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
  };
}

/** Group A's side of the webhook API: an API key under /api/v1 (the service checks its `webhooks` scope). */
export function keyedWebhookDoor(deps: AuthDeps): ManagementDoor {
  return {
    base: '/api/v1',
    authenticate: requireApiKey(deps, 'authentication_error'),
    security: [{ apiKey: [] }],
    tags: ['Webhooks'],
    // 403: the key lacks the `webhooks` scope.
    errors: [401, 403, 429, 500, 503],
  };
}

interface WebhookDeps {
  door: ManagementDoor;
  webhooks: WebhookService;
}
type WebhookApp = Parameters<FastifyPluginAsyncZod<WebhookDeps>>[0];

/** What each webhook route takes from its door: its path, its documentation and its error answers. */
function wordsOf(door: ManagementDoor) {
  return { ...doorWords(door), prefix: `${door.base}/webhooks`, security: door.security, tags: door.tags };
}
type DoorWords = ReturnType<typeof wordsOf>;

/** The webhook API of a door; the groups register in the document's order. */
export const webhookRoutes: FastifyPluginAsyncZod<WebhookDeps> = async (app, deps) => {
  app.addHook('onRequest', deps.door.authenticate);
  // The account's callback secret and the log of its jobs' callbacks, before `/:id` reads them as an endpoint id.
  await app.register(callbackRoutes, { door: deps.door, callbacks: deps.webhooks.callbacks });
  const words = wordsOf(deps.door);
  registrationRoutes(app, deps, words);
  changeRoutes(app, deps, words);
  deliveryRoutes(app, deps, words);
};

/** Registering an endpoint, and reading the account's endpoints. */
function registrationRoutes(app: WebhookApp, deps: WebhookDeps, words: DoorWords): void {
  const { prefix, security, tags, operationId, errors, changeErrors } = words;
  app.post(
    prefix,
    {
      schema: {
        operationId: operationId('createWebhook'),
        tags,
        security,
        summary: 'Register an endpoint; the answer shows its signing secret, once',
        description: `At most ${MAX_WEBHOOK_ENDPOINTS} endpoints per account. The URL must be https and must not be, or resolve to, a private, loopback, link-local or metadata address.`,
        body: createBody,
        response: { 201: endpointWithSecret, ...changeErrors(400) },
      },
    },
    async (request, reply) => {
      const { endpoint: e, secret } = await deps.webhooks.create(principalOf(request), request.body);
      reply.code(201).header('Location', `${prefix}/${e.id}`);
      return { ...endpointOf(e), secret };
    },
  );

  app.get(
    prefix,
    {
      schema: {
        operationId: operationId('listWebhooks'),
        tags,
        security,
        summary: 'The account’s endpoints (without secrets)',
        response: { 200: endpointList, ...errors() },
      },
    },
    async (request) => ({ data: (await deps.webhooks.list(principalOf(request))).map(endpointOf) }),
  );

  app.get(
    `${prefix}/:id`,
    {
      schema: {
        operationId: operationId('getWebhook'),
        tags,
        security,
        summary: 'One endpoint (without its secret)',
        params: idParams,
        response: { 200: endpoint, ...errors(404) },
      },
    },
    async (request) => endpointOf(await deps.webhooks.get(principalOf(request), request.params.id)),
  );
}

/** Changing an endpoint: its settings, its removal, a new secret. */
function changeRoutes(app: WebhookApp, deps: WebhookDeps, words: DoorWords): void {
  const { prefix, security, tags, operationId, changeErrors } = words;
  app.patch(
    `${prefix}/:id`,
    {
      schema: {
        operationId: operationId('updateWebhook'),
        tags,
        security,
        summary: 'Change the URL, the events, the description, or enable or disable it',
        params: idParams,
        body: updateBody,
        response: { 200: endpoint, ...changeErrors(400, 404) },
      },
    },
    async (request) => endpointOf(await deps.webhooks.update(principalOf(request), request.params.id, request.body)),
  );

  app.delete(
    `${prefix}/:id`,
    {
      schema: {
        operationId: operationId('deleteWebhook'),
        tags,
        security,
        summary: 'Delete an endpoint with its delivery log; pending deliveries stop',
        params: idParams,
        response: { 200: deleted, ...changeErrors(404) },
      },
    },
    async (request) => {
      await deps.webhooks.remove(principalOf(request), request.params.id);
      return { id: request.params.id, deleted: true as const };
    },
  );

  app.post(
    `${prefix}/:id/rotate-secret`,
    {
      schema: {
        operationId: operationId('rotateWebhookSecret'),
        tags,
        security,
        summary: 'A new secret, shown once; the previous one keeps signing beside it for 24 hours',
        params: idParams,
        response: { 200: endpointWithSecret, ...changeErrors(404) },
      },
    },
    async (request) => {
      const { endpoint: e, secret } = await deps.webhooks.rotate(principalOf(request), request.params.id);
      return { ...endpointOf(e), secret };
    },
  );
}

/** An endpoint's deliveries: the log, a delivery sent again, a test ping. */
function deliveryRoutes(app: WebhookApp, deps: WebhookDeps, words: DoorWords): void {
  const { prefix, security, tags, operationId, errors, changeErrors } = words;
  app.get(
    `${prefix}/:id/deliveries`,
    {
      schema: {
        operationId: operationId('listWebhookDeliveries'),
        tags,
        security,
        summary: 'The delivery log, newest first: every attempt with its status code, duration, error and next retry',
        params: idParams,
        querystring: deliveriesQuery,
        response: {
          200: deliveryList,
          ...errors(400, 404),
        },
      },
    },
    async (request) => {
      const page = await deps.webhooks.deliveries(principalOf(request), request.params.id, request.query);
      return { data: page.data.map(deliveryOf), next_cursor: page.nextCursor };
    },
  );

  app.post(
    `${prefix}/:id/deliveries/:deliveryId/redeliver`,
    {
      schema: {
        operationId: operationId('redeliverWebhook'),
        tags,
        security,
        summary: 'Send a delivery again now, with the same delivery id (a failed one gets a new retry schedule)',
        params: deliveryParams,
        response: { 202: delivery, ...changeErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const d = await deps.webhooks.redeliver(principalOf(request), request.params.id, request.params.deliveryId);
      reply.code(202);
      return deliveryOf(d);
    },
  );

  app.post(
    `${prefix}/:id/test`,
    {
      schema: {
        operationId: operationId('testWebhook'),
        tags,
        security,
        summary: 'Send a signed ping event to the endpoint',
        params: idParams,
        response: { 202: delivery, ...changeErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const d = await deps.webhooks.test(principalOf(request), request.params.id);
      reply.code(202);
      return deliveryOf(d);
    },
  );
}
