import multipart from '@fastify/multipart';
import type { MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidRequestError } from '../../core/errors';

/**
 * multipart/form-data, as OpenAI's SDK sends `client.videos.create`, for the routes registered
 * inside `forms` only: everywhere else in /v1 such a body has no parser and is a 400 like any body
 * that is not JSON. Fields become the body's values and a file its bytes; a body that is not the
 * multipart it says it is (no boundary, a broken part) is the client's mistake, a 400 in group B's
 * shape, and never a 5xx the SDK would send again.
 */
export async function acceptForms(forms: FastifyInstance, options: FormOptions = {}): Promise<void> {
  const { limits = { fileSize: 25 * 1024 * 1024, files: 1, fields: 20 }, fileValue = (part) => part.toBuffer() } =
    options;
  await forms.register(multipart, { limits });
  forms.addHook('preValidation', (request: FastifyRequest) => formFields(request, fileValue));
}

export interface FormOptions {
  limits?: { fileSize: number; files: number; fields: number };
  /** What a file part becomes in the body (its bytes when absent). */
  fileValue?: (part: MultipartFile) => Promise<unknown>;
}

async function formFields(
  request: FastifyRequest,
  fileValue: (part: MultipartFile) => Promise<unknown>,
): Promise<void> {
  if (!request.isMultipart()) return;
  const body: Record<string, unknown> = {};
  const add = (name: string, value: unknown) => {
    const before: unknown = body[name];
    body[name] = before === undefined ? value : [...(Array.isArray(before) ? (before as unknown[]) : [before]), value];
  };
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') add(part.fieldname, await fileValue(part));
      else add(part.fieldname, part.value);
    }
  } catch (err) {
    // The plugin's own limits (413) and refusals (400) keep their status; the parser's complaints are 400s.
    const status = (err as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500 && status !== 406) throw err;
    throw new InvalidRequestError(
      `The multipart/form-data body could not be read: ${(err as Error).message}. Send JSON, or a form with its boundary.`,
    );
  }
  request.body = body;
}
