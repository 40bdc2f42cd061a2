import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../../../../../core/errors';
import { lineParserFor } from '../../../../../api/shared/openai/batch-lines';

// A video line has no conversation: the Responses lines' builder is never asked.
const parse = lineParserFor('/v1/video/generations', () => Promise.reject(new Error('no conversation')));

describe('a batch line of /v1/video/generations', () => {
  it('is a new video of its own; an extension of a previous one is refused by name, not run as a new video', async () => {
    await expect(parse({ model: 'kling-2.1-pro', prompt: 'waves', duration: 5 })).resolves.toMatchObject({
      request: { kind: 'video', model: 'kling-2.1-pro', seconds: 5 },
    });
    const refused = await parse({ model: 'kling-2.1-pro', prompt: 'waves', previous_job_id: 'gen_x' }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect(refused).toMatchObject({ details: { param: 'previous_job_id' } });
  });
});
