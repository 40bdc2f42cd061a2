import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../../core/accounts/principal';
import { InvalidRequestError } from '../../../../core/errors';
import { mcToCredits } from '../../../../core/money';
import { priceRequest } from '../../../../service/generation/requests';
import type { GenerationRequest, Serves } from '../../../../service/generation/requests';

const principal: Principal = { accountId: 'acc_1', apiKeyId: 'key_1', scopes: ['video'], models: null };
const everything: Serves = () => true;
const nothing: Serves = () => false;

/** A request as the service makes it from a succeeded 6 s 1080p kling video. */
const derived = (how: 'extension' | 'edit', seconds: number): GenerationRequest => ({
  kind: 'video',
  model: 'kling',
  prompt: 'the waves calm down',
  quality: '1080p',
  aspect: '9:16',
  seconds,
  derivedFrom: { how, id: 'gen_source', seconds: 6, outputKey: 'gen_source/output.webm' },
});

describe('pricing a video made from another', () => {
  it('an extension: the added seconds at the source’s model and resolution, clamped; the source linked and its file kept internally', () => {
    // kling: 5 to 10 s, 13 credits a second in 1080p.
    const priced = priceRequest(derived('extension', 8), principal, 'group-a', everything);
    expect(mcToCredits(priced.quoteMc)).toBe(104);
    expect(priced.params).toMatchObject({
      seconds: 8,
      stitchedSeconds: 14,
      resolution: '1080p',
      aspect: '9:16',
      extendedFrom: 'gen_source',
    });
    expect(priced.params).not.toHaveProperty('editedFrom');
    expect(priced.internal).toMatchObject({ sourceVideoKey: 'gen_source/output.webm' });
    expect(priceRequest(derived('extension', 3), principal, 'group-a', everything).params).toMatchObject({
      seconds: 5,
      stitchedSeconds: 11,
    });
    expect(mcToCredits(priceRequest(derived('extension', 30), principal, 'group-a', everything).quoteMc)).toBe(130);
  });

  it('an edit: a run of the source’s length, even past the model’s range', () => {
    const priced = priceRequest(derived('edit', 14), principal, 'group-a', everything);
    expect(mcToCredits(priced.quoteMc)).toBe(182);
    expect(priced.params).toMatchObject({ seconds: 14, editedFrom: 'gen_source' });
    expect(priced.params).not.toHaveProperty('stitchedSeconds');
  });

  it('is refused, naming the video, where the model’s provider cannot make it', () => {
    for (const [how, verb] of [
      ['extension', 'extend'],
      ['edit', 'edit'],
    ] as const) {
      const refused = (() => {
        try {
          return priceRequest(derived(how, 6), principal, 'group-a', nothing);
        } catch (err) {
          return err;
        }
      })();
      expect(refused).toBeInstanceOf(InvalidRequestError);
      expect(refused).toMatchObject({
        details: { param: 'video' },
        message: expect.stringContaining(`cannot ${verb}`),
      });
    }
    // Only the feature asked for is needed.
    const onlyEdits: Serves = (_model, feature) => feature === 'video-edit';
    expect(() => priceRequest(derived('edit', 6), principal, 'group-a', onlyEdits)).not.toThrow();
    expect(() => priceRequest(derived('extension', 6), principal, 'group-a', onlyEdits)).toThrow(/cannot extend/);
  });
});
