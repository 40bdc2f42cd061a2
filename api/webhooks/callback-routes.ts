import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CallbackDeliveryView, CallbackSecretView, JobCallbacks } from '../../service/webhooks/job-callbacks';
import { principalOf } from '../shared/auth';
import { doorWords } from '../shared/door';
import type { ManagementDoor } from '../shared/door';
import { deliveriesQuery, delivery, deliveryOf, iso } from './delivery-schemas';

/**
 * The webhook API's side for callback URLs named on jobs (`webhook`, `callback_url`, `callbackUrl`):
 * the account's callback secret that signs them, and their delivery log with redelivery. Mounted
 * by the webhook routes, so both doors (a key, the dashboard's session) have it.
 */

const secretFields = {
  createdAt: z.string(),
  updatedAt: z.string(),
  previousSecretExpiresAt: z.string().nullable().describe('During a rotation: when the previous secret stops signing'),
};
const callbackSecret = z.object(secretFields).meta({ id: 'CallbackSecret' });
const callbackSecretWithSecret = z
  .object({
    ...secretFields,
    secret: z.string().describe('whsec_ + base64 of 32 bytes: shown this once; keep it to verify callbacks'),
  })
  .meta({ id: 'CallbackSecretWithSecret' });

const callbackDelivery = delivery
  .extend({
    url: z.string().describe('The callback URL the job named'),
    batchId: z.string().nullable().describe('The batch whose callback it is; null for a generation’s'),
  })
  .meta({ id: 'CallbackDelivery' });
const callbackDeliveryList = z
  .object({ data: z.array(callbackDelivery), next_cursor: z.string().nullable() })
  .meta({ id: 'CallbackDeliveryList' });
const callbackQuery = deliveriesQuery.extend({
  job: z
    .string()
    .regex(/^[\x21-\x7e]{1,64}$/, 'job is a generation id (gen_…) or a batch id (batch_…).')
    .optional()
    .describe('Only the callback of this generation (gen_…) or batch (batch_…)'),
});
const redeliverParams = z.object({ deliveryId: z.string().describe('A callback delivery id (whd_…)') });

const secretOf = (s: CallbackSecretView): z.infer<typeof callbackSecret> => ({
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
  previousSecretExpiresAt: iso(s.previousSecretExpiresAt),
});
const callbackDeliveryOf = (d: CallbackDeliveryView): z.infer<typeof callbackDelivery> => ({
  ...deliveryOf(d),
  url: d.url,
  batchId: d.batchId,
});

export const callbackRoutes: FastifyPluginAsyncZod<{ door: ManagementDoor; callbacks: JobCallbacks }> = async (
  app,
  { door, callbacks },
) => {
  const route = app.withTypeProvider<ZodTypeProvider>();
  const { security, tags } = door;
  const prefix = `${door.base}/webhooks`;
  const { operationId, errors, changeErrors } = doorWords(door);

  route.get(
    `${prefix}/callback-secret`,
    {
      schema: {
        operationId: operationId('getCallbackSecret'),
        tags,
        security,
        summary: 'The account’s callback secret, without the secret: when it was made and rotated',
        response: { 200: callbackSecret, ...errors(404) },
      },
    },
    async (request) => secretOf(await callbacks.secret(principalOf(request))),
  );

  route.post(
    `${prefix}/callback-secret/rotate`,
    {
      schema: {
        operationId: operationId('rotateCallbackSecret'),
        tags,
        security,
        summary:
          'Make the callback secret, or a new one: shown once; a replaced one keeps signing beside it for 24 hours',
        description:
          'Callback URLs named on jobs are signed with it, in both signature formats of webhook endpoints. A job may name a callback only once the account has one.',
        response: { 200: callbackSecretWithSecret, ...changeErrors() },
      },
    },
    async (request) => {
      const { view, secret } = await callbacks.rotateSecret(principalOf(request));
      return { ...secretOf(view), secret };
    },
  );

  route.get(
    `${prefix}/callbacks/deliveries`,
    {
      schema: {
        operationId: operationId('listCallbackDeliveries'),
        tags,
        security,
        summary: 'The log of deliveries to callback URLs named on jobs, newest first, every attempt included',
        querystring: callbackQuery,
        response: { 200: callbackDeliveryList, ...errors(400) },
      },
    },
    async (request) => {
      const page = await callbacks.deliveries(principalOf(request), request.query);
      return { data: page.data.map(callbackDeliveryOf), next_cursor: page.nextCursor };
    },
  );

  route.post(
    `${prefix}/callbacks/deliveries/:deliveryId/redeliver`,
    {
      schema: {
        operationId: operationId('redeliverCallback'),
        tags,
        security,
        summary: 'Send a callback delivery again now, with the same delivery id',
        params: redeliverParams,
        response: { 202: callbackDelivery, ...changeErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const d = await callbacks.redeliver(principalOf(request), request.params.deliveryId);
      reply.code(202);
      return callbackDeliveryOf(d);
    },
  );
};
