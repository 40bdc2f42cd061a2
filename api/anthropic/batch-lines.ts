import { ZodError } from 'zod';
import { InvalidRequestError } from '../../core/errors';
import type { AnthropicHeaders } from '../../core/generation/params';
import type { LineParser } from '../../service/batches/service';
import { fromZod } from '../shared/errors';
import { chatRequestOf, MESSAGE_FIELDS, messagesBody } from './body';

/**
 * A Message Batch's request is a Messages API request: its `params` are read by the same schema
 * and turned into the same chat request as `POST /v1/messages` does (unknown fields refused by
 * name), except that it cannot stream. The batch's `anthropic-version` and `anthropic-beta` go
 * with each request to an Anthropic upstream.
 */
export function messageLineParser(headers: AnthropicHeaders): LineParser {
  return async (params) => {
    const unknown = Object.keys(params).find((k) => !(MESSAGE_FIELDS as readonly string[]).includes(k));
    if (unknown !== undefined) throw new InvalidRequestError(`${unknown}: Extra inputs are not permitted`, unknown);
    let body;
    try {
      body = messagesBody.parse(params);
    } catch (err) {
      throw err instanceof ZodError ? fromZod(err) : err;
    }
    if (body.stream)
      throw new InvalidRequestError('stream: a request of a batch is answered whole; it cannot stream.', 'stream');
    return { request: chatRequestOf(body, headers), spendCap: body.max_credits ?? undefined };
  };
}
