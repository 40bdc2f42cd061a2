import { readFileSync } from 'node:fs';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { apiError, errorResponses, PATH_PARAM_TOO_LONG } from './schemas';

/** The package version: the API's version in the OpenAPI document and the MCP server's. */
export const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/**
 * The OpenAPI 3.1 document is generated from the routes' own zod schemas (served at
 * /openapi.json) with a readable page at /docs; nothing about it is written by hand.
 */
/**
 * What the HTTP parser answers for any route before the route runs (api/shared/errors.ts,
 * answerClientError), added to each documented route's own answers.
 */
function answeredByEveryRoute<S extends { response?: unknown; hide?: boolean; params?: unknown }>(schema: S): S {
  if (schema.hide || typeof schema.response !== 'object' || schema.response === null) return schema;
  // A route with path parameters also meets the router's length limit; its own 400, if any, says more.
  const byRouter = schema.params === undefined ? {} : { 400: apiError.describe(PATH_PARAM_TOO_LONG) };
  return { ...schema, response: { ...errorResponses(431), ...byRouter, ...schema.response } };
}

export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Generation service',
        version,
        description:
          'A credit-metered API for image, video, chat and upscale generation. 1 credit = 0.01 EUR. ' +
          'Credits are held when a generation is submitted, charged when it succeeds and released when it fails. ' +
          'Group A lives under /api/v1, group C under /api (no version prefix). ' +
          'Errors always have the body `{ error: { message, type, code, param } }` with the HTTP status in `code` and the parameter at fault (or null) in `param`.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'An API key (gsk_…), shown once when created' },
          adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ADMIN_TOKEN)' },
          session: {
            type: 'apiKey',
            in: 'cookie',
            name: 'gensvc_session',
            description:
              'A dashboard session (log in at /dashboard/login). POST, PATCH and DELETE also need the session’s CSRF token in the X-CSRF-Token header.',
          },
        },
      },
      tags: [
        { name: 'Group A', description: 'The unified API: one generate endpoint, models, balance, history' },
        { name: 'Group C', description: 'Per-kind generate endpoint and credits' },
        { name: 'Dashboard', description: 'The web dashboard’s own calls, made with a session cookie (/dashboard)' },
        {
          name: 'Customers',
          description:
            'Your own end users (customer, user, safety_identifier or X-Customer-Id on every generate door): their budgets and rate limits (a key with the customers scope)',
        },
        {
          name: 'Audit log',
          description:
            'Every change of a member, role, key, budget, webhook endpoint, threshold or customer limit (a key with the audit scope)',
        },
        { name: 'Files', description: 'Generated files, reached through signed URLs' },
        { name: 'Operator', description: 'Health and the admin API' },
        {
          name: 'Billing',
          description:
            'Buying credits with Stripe Checkout (present when STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are set)',
        },
        {
          name: 'Upstreams',
          description:
            'Where upstreams (fal, Replicate) report a job we left waiting has ended; authenticated by their signatures',
        },
      ],
    },
    transform: (input) => jsonSchemaTransform({ ...input, schema: answeredByEveryRoute(input.schema) }),
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });

  app.get(
    '/openapi.json',
    {
      schema: {
        operationId: 'openapi',
        tags: ['Operator'],
        summary: 'This API described in OpenAPI 3.1, generated from the code',
        security: [],
        response: { 200: z.record(z.string(), z.unknown()) },
      },
    },
    async () => app.swagger(),
  );
}
