import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { MAX_PASSWORD_LENGTH } from '../../core/accounts/passwords';
import { emailAddress } from '../../service/accounts/operations';
import type { SignupService } from '../../service/accounts/signup';
import { assertSameOrigin, rateLimited } from '../shared/auth';
import { errorResponses } from '../shared/schemas';
import { countAttempt } from './session';
import type { AnonymousDeps } from './session';
import { tags } from './route-docs';

const signupBody = z
  .strictObject({
    email: emailAddress
      .transform((e) => e.trim().toLowerCase())
      .describe('The address to confirm; compared case-insensitively'),
    password: z
      .string()
      .max(MAX_PASSWORD_LENGTH)
      .describe('10 to 200 characters; not a commonly used password, nor the email address or its name part'),
  })
  .meta({ id: 'DashboardSignup' });

const SIGNUP_ANSWER =
  'If this address can be used, a link to confirm it is on its way: follow it within 24 hours to create your account.';

const hashed = (value: string) => createHash('sha256').update(value).digest('base64url');

/** Self-service sign-up (SIGNUP=open): asking for an account, and following the emailed link that creates it. */
export const signupRoutes: FastifyPluginAsyncZod<AnonymousDeps & { signup: SignupService }> = async (app, deps) => {
  const { sessions, limiter, limits, signup } = deps;
  const anonymous = app.withTypeProvider<ZodTypeProvider>();

  anonymous.post(
    '/dashboard/api/signup',
    {
      schema: {
        operationId: 'dashboardSignup',
        tags,
        security: [],
        summary: 'Ask for an account: a link to confirm the address is emailed',
        description: `Open when the service runs with SIGNUP=open. The answer is the same whether or not the address already has an account (that address gets a note instead of a link). Limited per email (${limits.loginsPerEmail} a minute) and per client address (${limits.loginsPerIp} a minute).`,
        body: signupBody,
        response: { 202: z.object({ message: z.string() }), ...errorResponses(400, 403, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      assertSameOrigin(request, sessions.origins);
      await rateLimited(limiter, reply, `signup:ip:${hashed(request.ip)}`, limits.loginsPerIp);
      await rateLimited(limiter, reply, `signup:email:${hashed(request.body.email)}`, limits.loginsPerEmail);
      await signup.request(request.body.email, request.body.password);
      reply.code(202);
      return { message: SIGNUP_ANSWER };
    },
  );

  anonymous.post(
    '/dashboard/api/signup/verify',
    {
      schema: {
        operationId: 'dashboardVerifySignup',
        tags,
        security: [],
        summary: 'Follow the emailed link: creates the account (plan free) and its user, then log in',
        body: z
          .strictObject({ token: z.string().max(200).describe('The token of the emailed link') })
          .meta({ id: 'DashboardVerifySignup' }),
        response: {
          200: z.object({ email: z.string(), accountId: z.string() }),
          ...errorResponses(400, 403, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      await countAttempt(deps, request, reply);
      return signup.verify(request.body.token);
    },
  );
};
