import { ZodError } from 'zod';
import type { z } from 'zod';
import { DomainError, InvalidRequestError } from '../../../core/errors';
import type { OpenAiBatchEndpoint } from '../../../core/vocabulary';
import type { LineGenerationView, LineParser, LineResult } from '../../../service/batches/service';
import { errorBody, fromZod } from '../errors';
import { CHAT_FIELDS, chatCompletionBody, chatCompletionOf, chatRequestOf } from './chat';
import { choicesTokenUsage, tokenUsageOf } from '../../../core/providers/token-usage';
import { failedRunError } from './failures';
import {
  answerFormatOf,
  imageGenerationBody,
  imageRequestOf,
  imagesResponseOf,
  videoGenerationBody,
  videoGenerationOf,
  videoGenerationRequestOf,
  videoOf,
  videosCreateBody,
  videosRequestOf,
} from './media';
import { partsOfView, responseObject } from './response-shape';
import { RESPONSE_FIELDS, responseCreateBody, responseRequestOf } from './responses';
import type { ConversationOf } from './responses';
import { assertKnownFields, UNSUPPORTED, unixSeconds } from './words';

/**
 * A batch's lines are group B requests: each line's body is read by the same schema and turned into
 * the same service request as its endpoint's route does, and each line's result is what that route
 * would have answered (its error body for a failure), built from the line's generation records.
 */

/** Parses a body with `schema` as the route would, its unknown fields refused by name first. */
function parsed<S extends z.ZodType>(schema: S, fields: readonly string[], body: Record<string, unknown>): z.output<S> {
  assertKnownFields(body, fields);
  // A batch tells its end to its own callback; its lines send no events of their own.
  if (body.callback_url != null) throw notInBatch('callback_url', 'a callback URL (name it on the batch)');
  try {
    return schema.parse(body);
  } catch (err) {
    throw err instanceof ZodError ? fromZod(err) : err;
  }
}

const notInBatch = (param: string, what: string) =>
  new InvalidRequestError(`${param}: ${what} ${UNSUPPORTED} in a batch line.`, param);

/**
 * Reads a line's body for the batch's endpoint (throws the error the route would answer, or one
 * naming what a batch line cannot do: stream, run in the background, fetch a reference frame).
 * `conversation` builds a Responses line's conversation (its previous response's turns).
 */
export function lineParserFor(endpoint: OpenAiBatchEndpoint, conversation: ConversationOf): LineParser {
  switch (endpoint) {
    case '/v1/chat/completions':
      return async (raw) => {
        const body = parsed(chatCompletionBody, CHAT_FIELDS, raw);
        if (body.stream) throw notInBatch('stream', 'streaming');
        // A line's reply is run whole by a worker, which keeps no log probabilities to answer.
        if (body.logprobs) throw notInBatch('logprobs', 'log probabilities');
        return { request: chatRequestOf(body), count: body.n ?? 1, spendCap: body.max_credits ?? undefined };
      };
    case '/v1/responses':
      return async (raw) => {
        const body = parsed(responseCreateBody, RESPONSE_FIELDS, raw);
        if (body.stream) throw notInBatch('stream', 'streaming');
        if (body.background) throw notInBatch('background', 'a background response');
        return { request: await responseRequestOf(body, conversation), spendCap: body.max_credits ?? undefined };
      };
    case '/v1/images/generations':
      return async (raw) => {
        const body = parsed(imageGenerationBody, Object.keys(imageGenerationBody.shape), raw);
        const { request, count } = imageRequestOf(body);
        return {
          request,
          count,
          spendCap: body.max_credits ?? undefined,
          answer: { responseFormat: answerFormatOf(body.model, body.response_format) },
        };
      };
    case '/v1/videos':
      return async (raw) => {
        const body = parsed(videosCreateBody, Object.keys(videosCreateBody.shape), raw);
        if (body.input_reference !== undefined || body['input_reference[image_url]'] !== undefined)
          throw notInBatch('input_reference', 'a reference frame');
        return { request: videosRequestOf(body, undefined), spendCap: body.max_credits ?? undefined };
      };
    case '/v1/video/generations':
      return async (raw) => {
        const body = parsed(videoGenerationBody, Object.keys(videoGenerationBody.shape), raw);
        if (body.image_url) throw notInBatch('image_url', 'a reference frame');
        if (body.previous_job_id) throw notInBatch('previous_job_id', 'an extension of a previous video');
        return { request: videoGenerationRequestOf(body), spendCap: body.max_credits ?? undefined };
      };
  }
}

/** The body a line's endpoint would have answered; a failed run throws the error it would have answered. */
async function answerOf(
  endpoint: OpenAiBatchEndpoint,
  l: LineResult,
  readFile: (generationId: string) => Promise<Buffer | undefined>,
): Promise<unknown> {
  const g: LineGenerationView | undefined = l.generations[0];
  if (!g) throw failedRunError(endpoint === '/v1/images/generations' ? 'image' : 'reply', null);
  switch (endpoint) {
    case '/v1/chat/completions': {
      // Each choice (`n`) is a generation of the line; it answers once all have succeeded. A line
      // one of whose choices failed answers that failure, not the others' `choice_failed`.
      const failures = l.generations.filter((c) => c.status !== 'succeeded');
      const failed = failures.find((c) => c.error?.code !== 'choice_failed') ?? failures[0];
      if (failed) throw failedRunError('reply', failed.error);
      const usageOfChoice = (c: LineGenerationView) =>
        c.usage ?? tokenUsageOf(undefined, { prompt: c.prompt, charged: c.params.outputTokens ?? 0 });
      return chatCompletionOf({
        id: g.id,
        created: unixSeconds(g.createdAt),
        model: g.model,
        choices: l.generations.map((c) => ({
          text: c.text ?? '',
          toolCalls: c.toolCalls,
          finishReason:
            c.toolCalls.length > 0
              ? 'tool_calls'
              : (c.params.outputTokens ?? 0) >= (c.params.maxTokens ?? Infinity)
                ? 'length'
                : 'stop',
          logprobs: null,
        })),
        usage: choicesTokenUsage(l.generations.map(usageOfChoice)),
      });
    }
    case '/v1/responses':
      if (g.status !== 'succeeded') throw failedRunError('response', g.error);
      return responseObject(partsOfView(g));
    case '/v1/images/generations':
      return imagesResponseOf(l.generations, l.answer.responseFormat ?? 'url', readFile);
    case '/v1/videos':
      if (g.status !== 'succeeded') throw failedRunError('video', g.error);
      return videoOf(g);
    case '/v1/video/generations':
      if (g.status !== 'succeeded') throw failedRunError('video', g.error);
      return videoGenerationOf(g);
  }
}

/** A line of a batch's output or error file, as OpenAI's Batch API writes one. */
export interface OutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: unknown } | null;
  error: { code: string; message: string } | null;
}

const STOPPED = {
  cancelled: { code: 'batch_cancelled', message: 'This request was not completed: its batch was cancelled.' },
  expired: {
    code: 'batch_expired',
    message: 'This request could not be executed before the completion window expired.',
  },
} as const;

/**
 * A line as its batch's output or error file shows it: the response its endpoint would have
 * answered (200 and its body, or the error status and body of a failed run), or, for a line its
 * batch stopped before it ran or while it ran, `response: null` and the batch's reason.
 */
export async function outputLineOf(
  endpoint: OpenAiBatchEndpoint,
  batchId: string,
  l: LineResult,
  readFile: (generationId: string) => Promise<Buffer | undefined>,
): Promise<OutputLine> {
  const first = l.generations[0]?.id;
  const suffix = first ? first.replace(/^gen_/, '') : `${batchId.replace(/^batch_/, '')}_${l.line}`;
  const id = `batch_req_${suffix}`;
  if (l.state === 'failed' && l.stopped)
    return { id, custom_id: l.customId, response: null, error: STOPPED[l.stopped] };
  const requestId = `req_${suffix}`;
  try {
    const body = await answerOf(endpoint, l, readFile);
    return { id, custom_id: l.customId, response: { status_code: 200, request_id: requestId, body }, error: null };
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return {
      id,
      custom_id: l.customId,
      response: {
        status_code: err.status,
        request_id: requestId,
        body: errorBody(err.type, err.status, err.message, err.details),
      },
      error: null,
    };
  }
}
