import type { z } from 'zod';
import { InvalidRequestError } from '../core/errors';
import { fromZod } from './errors';

/** Every POST body here is a JSON object: say so plainly before checking its fields. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  if (body === null || body === undefined || typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidRequestError('The request body must be a JSON object (Content-Type: application/json).');
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw fromZod(parsed.error);
  return parsed.data;
}
