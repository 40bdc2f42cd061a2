import type pg from 'pg';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf } from '../../core/accounts/principal';
import {
  customerDefaults,
  customerDefaultsBody,
  customerLimitsBody,
  customerList,
  customerListQuery,
  customerOf,
  customersPage,
  customerView,
  removeCustomerLimits,
  setCustomerLimits,
  setDefaults,
} from '../../service/customers/limits';
import { principalOf } from '../shared/auth';
import { customerId } from '../shared/customers';
import { doorWords } from '../shared/door';
import type { ManagementDoor } from '../shared/door';

/**
 * The account's customers (the platform's own end users) and the limits it puts on them: group A
 * with a key holding the `customers` scope, and the dashboard (members whose role may) mount these
 * routes under their own base path.
 */

const params = z.object({
  customer: customerId('customer').describe('Your own id for your end user (URL-encoded in the path)'),
});

export const customerRoutes: FastifyPluginAsyncZod<{ door: ManagementDoor; pool: pg.Pool }> = async (
  app,
  { door, pool },
) => {
  app.addHook('onRequest', door.authenticate);
  const route = app.withTypeProvider<ZodTypeProvider>();
  const { security, tags, base } = door;
  const { operationId, errors, changeErrors } = doorWords(door);
  const accountOf = (request: Parameters<typeof principalOf>[0]) => principalOf(request).accountId;

  route.get(
    `${base}/customer-defaults`,
    {
      schema: {
        operationId: operationId('getCustomerDefaults'),
        tags,
        security,
        summary: 'The budget and rate limit every customer has unless it has its own',
        response: { 200: customerDefaultsBody, ...errors() },
      },
    },
    async (request) => customerDefaults(pool, accountOf(request)),
  );

  route.put(
    `${base}/customer-defaults`,
    {
      schema: {
        operationId: operationId('setCustomerDefaults'),
        tags,
        security,
        summary: 'Set every customer’s default budget (per day, week or month) and rate limit per minute',
        description:
          'A hold that would pass a customer’s budget is refused with 402 customer_budget_exceeded, decided in the hold’s own transaction; released holds give budget back. ' +
          'Requests for a customer past its rate limit are refused with 429, counted across every API instance.',
        body: customerDefaultsBody,
        response: { 200: customerDefaultsBody, ...changeErrors(400) },
      },
    },
    async (request) => setDefaults(pool, accountOf(request), request.body, actorOf(principalOf(request))),
  );

  route.get(
    `${base}/customers`,
    {
      schema: {
        operationId: operationId('listCustomers'),
        tags,
        security,
        summary: 'The account’s customers with the budget and rate limit that apply and what each spent this period',
        description: 'A customer is listed once a paid generation or a limit of its own has named it.',
        querystring: customerListQuery,
        response: { 200: customerList, ...errors(400) },
      },
    },
    async (request) => customersPage(pool, accountOf(request), request.query),
  );

  route.get(
    `${base}/customers/:customer`,
    {
      schema: {
        operationId: operationId('getCustomer'),
        tags,
        security,
        summary: 'One customer: its budget, what it spent this period, its rate limit',
        params,
        response: { 200: customerView, ...errors(400, 404) },
      },
    },
    async (request) => customerOf(pool, accountOf(request), request.params.customer),
  );

  route.put(
    `${base}/customers/:customer/limits`,
    {
      schema: {
        operationId: operationId('setCustomerLimits'),
        tags,
        security,
        summary: 'Give one customer its own budget or rate limit, in place of the defaults',
        description:
          'What the body leaves out follows the defaults; null means none for this customer. The customer need not have made a generation yet.',
        params,
        body: customerLimitsBody,
        response: { 200: customerView, ...changeErrors(400) },
      },
    },
    async (request) =>
      setCustomerLimits(pool, accountOf(request), request.params.customer, request.body, actorOf(principalOf(request))),
  );

  route.delete(
    `${base}/customers/:customer/limits`,
    {
      schema: {
        operationId: operationId('removeCustomerLimits'),
        tags,
        security,
        summary: 'The customer follows the defaults again',
        params,
        response: { 200: customerView, ...changeErrors(400, 404) },
      },
    },
    async (request) =>
      removeCustomerLimits(pool, accountOf(request), request.params.customer, actorOf(principalOf(request))),
  );
};
