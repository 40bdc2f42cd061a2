import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';
import { classifyDbError } from '../../core/db/errors';
import { DomainError } from '../../core/errors';
import type { GenerationView } from '../../core/generation/view';
import { databaseUnavailable, errorBody } from '../shared/errors';
import { generationOf } from '../shared/schemas';

/**
 * Tool results of the MCP door. Every result carries `structuredContent` that matches the tool's
 * output schema, mirrored as JSON text for clients that read only text (MCP 2025-11-25, "Structured
 * content"). A refusal carries the REST error body instead, so an agent reads the same `type` and
 * message a REST client would.
 */
export function structured(
  value: Record<string, unknown>,
  opts: { isError?: boolean; more?: ContentBlock[] } = {},
): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value) }, ...(opts.more ?? [])],
    structuredContent: value,
    ...(opts.isError ? { isError: true } : {}),
  };
}

/** A business refusal (402, 403, unknown model, policy, not found…) as a tool error; nothing was charged. */
export function refusal(err: DomainError): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(errorBody(err.type, err.status, err.message, err.details)) }],
    isError: true,
  };
}

/**
 * The refusal for an error the REST doors would answer with their error body, or undefined for one
 * they would answer 500 (a bug: the caller reports it as an internal error, without its message).
 */
export function refusalOf(err: unknown): CallToolResult | undefined {
  if (err instanceof DomainError) return refusal(err);
  if (classifyDbError(err) === 'transient') {
    return refusal(databaseUnavailable());
  }
  return undefined;
}

const MIME_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  webm: 'video/webm',
  mp4: 'video/mp4',
  txt: 'text/plain',
};

/** The media type of an output, from the file name the store keeps it under (`…/output.png?…`). */
export function mimeTypeOf(outputUrl: string): string {
  const extension = /\.([a-z0-9]+)$/i.exec(new URL(outputUrl).pathname)?.[1]?.toLowerCase();
  return (extension && MIME_TYPES[extension]) ?? 'application/octet-stream';
}

const IN_FLIGHT_HINT = (id: string) =>
  `Generation ${id} is still in flight. Follow it with get_generation {"id":"${id}"} (wait_seconds lets the call wait for the end).`;

/**
 * A generation as group A shows it, with a `resource_link` to its output once there is one. A
 * generation that failed is a tool error when the tool was asked to make it; reading one is not.
 */
export function generationResult(view: GenerationView, opts: { failedIsError: boolean }): CallToolResult {
  const g = generationOf(view);
  const more: ContentBlock[] = [];
  if (g.outputUrl) {
    more.push({
      type: 'resource_link',
      uri: g.outputUrl,
      name: `${g.id} output`,
      mimeType: mimeTypeOf(g.outputUrl),
      description: `The ${g.kind} made by ${g.model}; a signed URL, valid 24 hours.`,
    });
  }
  if (g.status === 'queued' || g.status === 'running') more.push({ type: 'text', text: IN_FLIGHT_HINT(g.id) });
  return structured(g, { isError: opts.failedIsError && g.status === 'failed', more });
}

/**
 * Runs a tool call whose refusal (402, 403, an unknown model…) is a tool error, nothing charged,
 * and whose other failures become the protocol's internal error; each SDK revision names that
 * error its own way, so the caller says how.
 */
export function guardedBy(internal: (err: unknown) => Error) {
  return async <T>(work: () => Promise<T>): Promise<T | CallToolResult> => {
    try {
      return await work();
    } catch (err) {
      const refused = refusalOf(err);
      if (refused) return refused;
      throw internal(err);
    }
  };
}
