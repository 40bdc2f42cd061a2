import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { markAfterAdmission, ProviderFailedError } from '../../core/errors';
import type { GenerationView } from '../../core/generation/view';
import { principalOf } from '../shared/auth';
import {
  answerFormatOf,
  imageGenerationBody,
  imageRequestOf,
  imagesResponse,
  imagesResponseOf,
} from '../shared/openai/media';
import { inGroupBWords } from '../shared/openai/words';
import { errorsB, idempotencyHeaders, refuseUnknownFields, security, submitOptionsOf, tags } from './common';
import type { GroupBDeps } from './common';
import { acceptForms } from './forms';
import { EDIT_PARAMS, editOf, editSizeOf, imageEditBody } from './image-edits';

/** Group B's images, generated and edited: each image is a generation like any other door's, answered once done. */
export const groupBImageRoutes: FastifyPluginAsyncZod<GroupBDeps> = async (app, deps) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  /**
   * The images response for a request's generations, the files read for a b64_json answer. Images
   * still running past the wait are the request's failure: they stay listed at GET /api/v1/generations.
   */
  const answerImages = async (
    generations: readonly GenerationView[],
    format: 'url' | 'b64_json',
    principal: ReturnType<typeof principalOf>,
    made: 'generated' | 'edited',
  ) => {
    try {
      if (!generations.some((g) => g.status === 'succeeded' || g.error))
        throw new ProviderFailedError(
          `The images are still being ${made}; they will be listed at GET /api/v1/generations.`,
        );
      return await imagesResponseOf(
        generations,
        format,
        async (id) => (await deps.service.output(principal, id)).file?.data,
      );
    } catch (err) {
      throw markAfterAdmission(err);
    }
  };

  route.post(
    '/v1/images/generations',
    {
      preValidation: refuseUnknownFields(Object.keys(imageGenerationBody.shape)),
      schema: {
        operationId: 'openaiGenerateImages',
        tags,
        security,
        summary: 'n images (1 to 4), each a generation of its own; answered when they are done',
        body: imageGenerationBody,
        headers: idempotencyHeaders,
        response: { 200: imagesResponse, ...errorsB(400, 401, 402, 403, 409, 413, 429, 500, 502, 503) },
      },
    },
    async (request) => {
      const body = request.body;
      const principal = principalOf(request);
      const { request: images, count } = imageRequestOf(body);
      const { generations } = await inGroupBWords(() =>
        deps.service.submitMany(images, principal, {
          ...submitOptionsOf(request, 'POST /v1/images/generations', body, body.deadline_seconds),
          count,
        }),
      );
      return answerImages(generations, answerFormatOf(body.model, body.response_format), principal, 'generated');
    },
  );

  // OpenAI's SDK sends image edits as multipart/form-data: up to 16 images (image, image[]) and a mask.
  await app.register(async (forms) => {
    await acceptForms(forms, { limits: { fileSize: 25 * 1024 * 1024, files: 17, fields: 20 } });
    forms.withTypeProvider<ZodTypeProvider>().post(
      '/v1/images/edits',
      {
        // A form is as strict as JSON: a field the edit does not take is a 400 naming it.
        preValidation: refuseUnknownFields(Object.keys(imageEditBody.shape)),
        schema: {
          operationId: 'openaiEditImages',
          tags,
          security,
          summary:
            'n edits (1 to 4) of an image (client.images.edit), each a generation of its own, priced as the model’s image',
          description:
            'Multipart (image or image[] files, mask) as the SDKs send it, or JSON with images and mask by image_url or file_id (the id of one of the account’s ' +
            'succeeded image generations). The inputs are fetched and checked before anything is held; a bad one is a 400 naming it. Models that edit list ' +
            'features: ["edit"] in GET /api/v1/models; others are a 400 naming model.',
          body: imageEditBody,
          headers: idempotencyHeaders,
          response: { 200: imagesResponse, ...errorsB(400, 401, 402, 403, 409, 413, 429, 500, 502, 503) },
        },
      },
      async (request) => {
        const body = request.body;
        const principal = principalOf(request);
        const edit = editOf(body);
        // Uploads are in the request: their hashes stand for them under an Idempotency-Key.
        const hash = (b: Buffer) => createHash('sha256').update(b).digest('hex');
        const keyed = {
          ...body,
          image: undefined,
          'image[]': undefined,
          mask: Buffer.isBuffer(body.mask) ? hash(body.mask) : body.mask,
          inputs: edit.images.map((i) => ('file' in i ? hash(i.file) : i)),
        };
        const { generations } = await inGroupBWords(
          () =>
            deps.service.submitMany(
              {
                kind: 'image',
                model: body.model,
                prompt: body.prompt,
                outputFormat: body.output_format ?? undefined,
                ...editSizeOf(body.size),
                edit,
              },
              principal,
              {
                ...submitOptionsOf(request, 'POST /v1/images/edits', keyed, body.deadline_seconds),
                count: body.n ?? 1,
              },
            ),
          EDIT_PARAMS,
        );
        return answerImages(generations, answerFormatOf(body.model, body.response_format), principal, 'edited');
      },
    );
  });
};
