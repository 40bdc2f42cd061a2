import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import type { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { escapePointer, mediaTypeOf } from './openapi';

/**
 * OpenAI's own OpenAPI document (test/fixtures/openai-openapi, pinned) as a judge of what group B
 * answers: every exchange a test makes through `recordingFetch` is held, after the test, to the
 * schema the document declares for its operation, status and media type.
 */

const DOCUMENT_PATH = join(import.meta.dirname, '..', 'fixtures', 'openai-openapi', 'openapi.yaml');
const DOC_ID = 'https://openai.test/openapi.yaml';

interface OpenAiOperation {
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
interface OpenAiDocument {
  info: { version: string };
  paths: Record<string, Record<string, OpenAiOperation>>;
}

/** One answer as the client received it: what was asked, the status, the media type and the body's text. */
export interface Exchange {
  method: string;
  /** The URL's path below the API's base (`/chat/completions`), as the document names paths. */
  path: string;
  status: number;
  mediaType: string;
  body: string;
}

/**
 * A `fetch` for the openai SDK (and for raw requests) that keeps a copy of every answer's text,
 * streams included: the copy is read beside the client, which sees the answer unchanged.
 */
export function recordingFetch(base: string) {
  const pending: Promise<Exchange>[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(request);
    // The SDK also fetches `data:` URLs of its own (to learn what the runtime's FormData is).
    if (!request.url.startsWith(base)) return response;
    const copy = response.clone();
    pending.push(
      copy.text().then((body) => ({
        method: request.method.toLowerCase(),
        path: new URL(request.url).pathname.slice(new URL(base).pathname.length) || '/',
        status: response.status,
        mediaType: mediaTypeOf(response.headers.get('content-type') ?? undefined),
        body,
      })),
    );
    return response;
  };
  return { fetch: recording, exchanges: () => Promise.all(pending) };
}

/**
 * A way we answer otherwise than the document, on purpose. `normalise` first asserts our own
 * contract for what it covers (throwing where it does not hold), then returns the body as the
 * document would have it, so that the rest of the body is still held to the schema.
 */
export interface Divergence {
  what: string;
  why: string;
  normalise?: (body: unknown, exchange: Exchange) => unknown;
  /** Media types answered instead of the document's, by `method path` template. */
  mediaTypes?: Record<string, readonly string[]>;
}

export interface Violation {
  at: string;
  problem: string;
}

export async function loadOpenAiContract(divergences: readonly Divergence[]) {
  const doc = parse(await readFile(DOCUMENT_PATH, 'utf8'), { maxAliasCount: -1 }) as OpenAiDocument;
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  addFormats(ajv);
  // OpenAPI's formats (int64, unixtime, binary…) say how a value is encoded, not what it may be.
  for (const format of formatsIn(doc)) if (!ajv.formats[format]) ajv.addFormat(format, true);
  // The document still marks a hundred-odd schemas with OpenAPI 3.0's `nullable: true`, which 3.1
  // dropped (null is a type there): read as its authors mean it, the schema or null.
  ajv.addSchema(nullableAsNull(doc) as object, DOC_ID);

  const validators = new Map<string, ValidateFunction>();
  const validatorAt = (pointer: string): ValidateFunction => {
    let validate = validators.get(pointer);
    if (!validate) {
      const fragment = pointer.split('/').map(encodeURIComponent).join('/');
      validate = ajv.getSchema(`${DOC_ID}#${fragment}`);
      if (!validate) throw new Error(`the document has no schema at ${pointer}`);
      validators.set(pointer, validate);
    }
    return validate;
  };

  /** The document's path template for a concrete path (`/videos/{video_id}` for `/videos/video_1`). */
  const templates = Object.keys(doc.paths).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    // Literal segments outrank parameters: `/videos/{id}/content` before any wider match.
    literal: template.replace(/\{[^}]+\}/g, '').length,
  }));
  const templateOf = (path: string): string | undefined =>
    templates.filter((t) => t.pattern.test(path)).sort((a, b) => b.literal - a.literal)[0]?.template;

  const normalised = (body: unknown, exchange: Exchange): unknown =>
    divergences.reduce((b, d) => (d.normalise ? d.normalise(b, exchange) : b), body);

  /** Problems of one JSON value against the schema at `pointer` (after the listed divergences). */
  const problemsOf = (pointer: string, value: unknown, exchange: Exchange): string | undefined => {
    let candidate: unknown;
    try {
      candidate = normalised(value, exchange);
    } catch (err) {
      return (err as Error).message;
    }
    const validate = validatorAt(pointer);
    if (validate(candidate)) return undefined;
    return `${ajv.errorsText(validate.errors, { separator: '; ' })} in ${JSON.stringify(value).slice(0, 600)}`;
  };

  /** `method template status mediaType` of every exchange judged, for the test to say what it covered. */
  const judged = new Set<string>();

  /** Every way `exchange` departs from the document (nothing when it conforms). */
  function judge(exchange: Exchange): Violation[] {
    const template = templateOf(exchange.path);
    const at = `${exchange.method.toUpperCase()} ${exchange.path} → ${exchange.status} ${exchange.mediaType}`;
    const isError = exchange.status >= 400;
    const operation = template ? doc.paths[template]?.[exchange.method] : undefined;
    const declared = operation?.responses[String(exchange.status)];
    judged.add(`${exchange.method} ${template ?? exchange.path} ${exchange.status} ${exchange.mediaType}`);
    if (!declared && !isError) return [{ at, problem: 'the document declares no such answer' }];
    // The document declares few error answers per operation; every OpenAI error is its ErrorResponse.
    if (!declared?.content || (isError && !declared.content[exchange.mediaType]))
      return jsonProblems('/components/schemas/ErrorResponse', exchange, at);
    const schemaOf = declared.content[exchange.mediaType];
    if (!schemaOf) {
      const allowed = divergences.flatMap((d) => d.mediaTypes?.[`${exchange.method} ${template}`] ?? []);
      return allowed.includes(exchange.mediaType)
        ? []
        : [{ at, problem: `media type not in ${Object.keys(declared.content).join(', ')}` }];
    }
    const pointer = ['', 'paths', template!, exchange.method, 'responses', String(exchange.status), 'content']
      .map(escapePointer)
      .join('/');
    const schemaPointer = `${pointer}/${escapePointer(exchange.mediaType)}/schema`;
    if (exchange.mediaType === 'text/event-stream') return streamProblems(schemaPointer, exchange, at);
    if (exchange.mediaType === 'application/json') return jsonProblems(schemaPointer, exchange, at);
    return [];
  }

  function jsonProblems(pointer: string, exchange: Exchange, at: string): Violation[] {
    let body: unknown;
    try {
      body = JSON.parse(exchange.body);
    } catch {
      return [{ at, problem: `not JSON: ${exchange.body.slice(0, 200)}` }];
    }
    const problem = problemsOf(pointer, body, exchange);
    return problem ? [{ at, problem }] : [];
  }

  /** Each event's data of a stream against the schema of the stream's events; `[DONE]` ends a chat stream. */
  function streamProblems(pointer: string, exchange: Exchange, at: string): Violation[] {
    const events = exchange.body
      .split('\n\n')
      .map((block) =>
        block
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice('data: '.length))
          .join('\n'),
      )
      .filter((data) => data !== '' && data !== '[DONE]');
    if (events.length === 0) return [{ at, problem: 'a stream without events' }];
    return events.flatMap((data, i) => {
      const problem = problemsOf(pointer, JSON.parse(data), exchange);
      return problem ? [{ at: `${at} event ${i + 1}`, problem }] : [];
    });
  }

  /**
   * A batch's output or error file, line by line: each line's `response.body` is what the line's
   * endpoint answers, so it is held to that operation's schema (or ErrorResponse for an error).
   * The document declares no schema for the line itself.
   */
  function judgeBatchLines(endpoint: string, text: string): Violation[] {
    const path = endpoint.replace(/^\/v1/, '');
    return text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .flatMap((line, i) => {
        const parsed = JSON.parse(line) as { response: { status_code: number; body: unknown } | null };
        if (!parsed.response) return [];
        const answer: Exchange = {
          method: 'post',
          path,
          status: parsed.response.status_code,
          mediaType: 'application/json',
          body: JSON.stringify(parsed.response.body),
        };
        return judge(answer).map((v) => ({ at: `batch ${endpoint} line ${i + 1}: ${v.at}`, problem: v.problem }));
      });
  }

  return { version: doc.info.version, judge, judgeBatchLines, judged };
}

function formatsIn(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) formatsIn(v, found);
  else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'format' && typeof v === 'string') found.add(v);
      else formatsIn(v, found);
    }
  }
  return found;
}

function nullableAsNull(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(nullableAsNull);
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value);
  // Only the keyword: a property that happens to be called `nullable` is kept.
  const marked = entries.some(([k, v]) => k === 'nullable' && v === true);
  const converted = Object.fromEntries(
    entries.filter(([k, v]) => !(k === 'nullable' && typeof v === 'boolean')).map(([k, v]) => [k, nullableAsNull(v)]),
  );
  return marked ? { anyOf: [converted, { type: 'null' }] } : converted;
}
