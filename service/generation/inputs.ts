import { readFile } from 'node:fs/promises';
import {
  FetchTimeoutError,
  OutboundRequestError,
  ResponseTooLargeError,
  TooManyRedirectsError,
  UnsafeAddressError,
  UnsafeUrlError,
} from '../../core/net/errors';
import { IMAGE_DOWNLOAD } from '../../core/net/safe-http';
import type { SafeHttpClient } from '../../core/net/safe-http';
import { InvalidRequestError } from '../../core/errors';
import { ImageInputError } from '../../core/media/image-errors';
import { inspectImage } from '../../core/media/image-input';
import type { ImageInfo } from '../../core/media/image-input';
import { MAX_UPSCALED_SIDE } from '../../core/media/upscale';
import type { PublicParams } from '../../core/generation/params';
import type { OutputStore } from '../../core/storage/output-store';
import type { EditSource, EditSources, PreparedInput } from './service';
import type { PricedGeneration } from '../../core/generation/workflow-input';

const CONTENT_TYPES: Record<ImageInfo['format'], string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  avif: 'image/avif',
};

export interface InputPreparerDeps {
  http: SafeHttpClient;
  store: OutputStore;
  /** Where the API serves its own files: a URL of ours is read from the store, not fetched over HTTP. */
  publicBaseUrl: string;
}

/**
 * Fetches an input image (an upscale's, or a video's reference frame) before anything is held, so that every way it can be wrong is a 400
 * with nothing charged: not http(s), a refused address (checked when connecting, redirects
 * included), too large, not an image, too large to upscale by this factor. Once the generation
 * exists the bytes are stored beside its output, where the job reads them.
 */
export function createInputPreparer(deps: InputPreparerDeps) {
  const ownPrefix = `${deps.publicBaseUrl.replace(/\/+$/, '')}/files/`;

  /** A signed URL of this service (e.g. the output of an earlier generation), read directly. */
  const readOwn = async (url: string): Promise<Buffer | undefined> => {
    if (!url.startsWith(ownPrefix)) return undefined;
    const parsed = new URL(url);
    const key = decodeURIComponent(parsed.pathname.slice(new URL(ownPrefix).pathname.length));
    const file = await deps.store.open(
      key,
      parsed.searchParams.get('expires') ?? '',
      parsed.searchParams.get('signature') ?? '',
    );
    if (!file)
      throw invalid(
        'imageUrl is a link of this service that is invalid or has expired; read the generation again for a fresh one.',
      );
    return readFile(file.path);
  };

  const download = async (url: string): Promise<Buffer> => {
    try {
      const res = await deps.http.request(url, IMAGE_DOWNLOAD);
      if (res.status < 200 || res.status > 299)
        throw invalid(`imageUrl answered HTTP ${res.status}; it must answer 200 with the image.`);
      return res.body;
    } catch (err) {
      throw refusal(err);
    }
  };

  /**
   * An edit's input images and mask, each fetched (or taken from the upload) and checked before
   * anything is held; a bad one is a 400 naming it (`editImages.<n>`, `editMask`). Stored beside the
   * generation once it exists, where the job reads them.
   */
  const prepareEdit = async (edit: EditSources): Promise<PreparedInput> => {
    const fetchOne = async (
      source: EditSource,
      field: string,
      which: string,
    ): Promise<{ data: Buffer; info: ImageInfo }> => {
      try {
        const data = 'file' in source ? source.file : ((await readOwn(source.url)) ?? (await download(source.url)));
        return { data, info: await inspectImage(data) };
      } catch (err) {
        if (err instanceof ImageInputError) throw new InvalidRequestError(`${field}${which}: ${err.message}`, field);
        if (err instanceof InvalidRequestError)
          throw new InvalidRequestError(err.message.replaceAll('imageUrl', `${field}${which}`), field);
        throw err;
      }
    };
    const images = await Promise.all(
      edit.images.map((source, i) => fetchOne(source, 'editImages', ` (image ${i + 1})`)),
    );
    const mask = edit.mask === undefined ? undefined : await fetchOne(edit.mask, 'editMask', '');
    const first = images[0]!.info;
    return {
      params: { inputWidth: first.width, inputHeight: first.height },
      store: async (generationId) => {
        const keyOf = (name: string, info: ImageInfo) =>
          `${generationId}/${name}.${info.format === 'jpeg' ? 'jpg' : info.format}`;
        const inputKeys = await Promise.all(
          images.map(async ({ data, info }, i) => {
            const key = keyOf(`input-${i}`, info);
            await deps.store.put(key, data, CONTENT_TYPES[info.format]);
            return key;
          }),
        );
        if (!mask) return { inputKeys };
        const maskKey = keyOf('mask', mask.info);
        await deps.store.put(maskKey, mask.data, CONTENT_TYPES[mask.info.format]);
        return { inputKeys, maskKey };
      },
    };
  };

  return async (priced: PricedGeneration, uploaded?: Buffer, edit?: EditSources): Promise<PreparedInput> => {
    if (edit) return prepareEdit(edit);
    const url = priced.params.imageUrl;
    const data = uploaded ?? (url === undefined ? undefined : ((await readOwn(url)) ?? (await download(url))));
    if (data === undefined) throw invalid('imageUrl is required.');
    let info: ImageInfo;
    try {
      info = await inspectImage(data);
    } catch (err) {
      // An uploaded file is named as the door named its field (group B: input_reference).
      if (err instanceof ImageInputError)
        throw uploaded
          ? new InvalidRequestError(`inputFile: ${err.message}`, 'inputFile')
          : invalid(`imageUrl: ${err.message}`);
      throw err;
    }
    const inputSize = { inputWidth: info.width, inputHeight: info.height };
    let params: PublicParams = inputSize;
    const scale = priced.params.scale;
    if (priced.kind === 'upscale' && scale !== undefined) {
      const maxSide = MAX_UPSCALED_SIDE / scale;
      if (Math.max(info.width, info.height) > maxSide) {
        throw invalid(
          `imageUrl: a ${scale}× upscale takes images up to ${maxSide} px on the long side; this one is ${info.width}×${info.height}.`,
        );
      }
      params = { ...inputSize, width: info.width * scale, height: info.height * scale };
    }
    // A video's reference frame (image-to-video) is any real image; the model scales it itself.
    return {
      params,
      store: async (generationId) => {
        const inputKey = `${generationId}/input.${info.format === 'jpeg' ? 'jpg' : info.format}`;
        await deps.store.put(inputKey, data, CONTENT_TYPES[info.format]);
        return { inputKey };
      },
    };
  };
}

function invalid(message: string): InvalidRequestError {
  return new InvalidRequestError(message, 'imageUrl');
}

/** What went wrong fetching the client's URL, said so the client can fix it; never an internal address. */
function refusal(err: unknown): Error {
  if (err instanceof InvalidRequestError) return err;
  if (err instanceof UnsafeUrlError) return invalid(`imageUrl is not a URL the service fetches: ${err.message}`);
  if (err instanceof UnsafeAddressError)
    return invalid(`imageUrl: ${err.message} The service fetches only public http(s) URLs.`);
  if (err instanceof ResponseTooLargeError)
    return invalid(`The image at imageUrl is larger than ${IMAGE_DOWNLOAD.maxResponseBytes / (1024 * 1024)} MiB.`);
  if (err instanceof TooManyRedirectsError) return invalid('imageUrl redirects too many times.');
  if (err instanceof FetchTimeoutError)
    return invalid(`imageUrl did not answer within ${IMAGE_DOWNLOAD.timeoutMs / 1000} s.`);
  if (err instanceof OutboundRequestError) return invalid(`imageUrl could not be fetched: ${err.message}`);
  return err instanceof Error ? err : new Error(String(err));
}
