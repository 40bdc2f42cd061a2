import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3Settings } from '../config';
import { DEFAULT_URL_TTL_SECONDS, InvalidStorageKeyError, isValidKey } from './output-store';
import type { OutputStore } from './output-store';

export interface S3StoreOptions extends S3Settings {
  ttlSeconds?: number;
}

export interface S3Store extends OutputStore {
  /** Creates the bucket when it does not exist yet; any other failure (credentials, endpoint) is thrown. */
  ensureBucket(): Promise<void>;
  close(): void;
}

/** A request the store refused or could not reach; the SDK's message says which. */
export class S3StoreError extends Error {
  override readonly name = 'S3StoreError';
}

/**
 * Output files in an S3-compatible bucket (AWS S3, MinIO, SeaweedFS…), so every worker and API
 * instance, on any machine, sees the same files. Clients fetch them from the store itself through
 * presigned GET URLs (SigV4 query signing, valid 24 h by default); the API never serves them.
 */
export function createS3Store(opts: S3StoreOptions): S3Store {
  const ttl = opts.ttlSeconds ?? DEFAULT_URL_TTL_SECONDS;
  // SigV4 query signing allows at most seven days.
  if (!Number.isInteger(ttl) || ttl <= 0 || ttl > 7 * 24 * 3600)
    throw new Error(`ttlSeconds must be a whole number of seconds up to 7 days, got ${ttl}`);

  const clientFor = (endpoint: string | undefined) =>
    new S3Client({
      region: opts.region,
      credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey },
      forcePathStyle: opts.forcePathStyle,
      ...(endpoint ? { endpoint } : {}),
      // The SDK's default CRC checksums are refused by several S3-compatible stores, and on a
      // presigned GET they would add a signed header that a browser never sends.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
    });
  const client = clientFor(opts.endpoint);
  // The host is part of the signature: URLs for clients are signed for the address clients use.
  // This client only signs; it never sends a request.
  const signer = opts.publicEndpoint && opts.publicEndpoint !== opts.endpoint ? clientFor(opts.publicEndpoint) : client;

  const checked = (key: string): string => {
    if (!isValidKey(key)) throw new InvalidStorageKeyError(key);
    return key;
  };

  return {
    async put(key, data, contentType) {
      // A PUT replaces an object whole: readers see the old file or the new one, never a part.
      await client.send(
        new PutObjectCommand({
          Bucket: opts.bucket,
          Key: checked(key),
          Body: data,
          ContentType: contentType,
          CacheControl: 'private, max-age=3600',
        }),
      );
    },

    async get(key) {
      try {
        const object = await client.send(new GetObjectCommand({ Bucket: opts.bucket, Key: checked(key) }));
        return object.Body ? Buffer.from(await object.Body.transformToByteArray()) : undefined;
      } catch (err) {
        if (err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.$metadata.httpStatusCode === 404))
          return undefined;
        throw describe(err, `cannot read '${key}'`);
      }
    },

    async remove(key) {
      // S3 answers a delete of a missing key as a success.
      try {
        await client.send(new DeleteObjectCommand({ Bucket: opts.bucket, Key: checked(key) }));
      } catch (err) {
        throw describe(err, `cannot delete '${key}'`);
      }
    },

    async signedUrl(key, now = new Date()) {
      return getSignedUrl(signer, new GetObjectCommand({ Bucket: opts.bucket, Key: checked(key) }), {
        expiresIn: ttl,
        signingDate: now,
      });
    },

    // Clients fetch from the bucket: nothing is served under the API's /files/.
    open: () => Promise.resolve(undefined),

    async ensureBucket() {
      try {
        await client.send(new HeadBucketCommand({ Bucket: opts.bucket }));
        return;
      } catch (err) {
        if (!(err instanceof S3ServiceException && err.$metadata.httpStatusCode === 404))
          throw describe(err, `cannot reach bucket '${opts.bucket}'`);
      }
      try {
        await client.send(new CreateBucketCommand({ Bucket: opts.bucket }));
      } catch (err) {
        // Another instance starting at the same moment may have made it first.
        if (err instanceof S3ServiceException && ['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes(err.name))
          return;
        throw describe(err, `cannot create bucket '${opts.bucket}'`);
      }
    },

    close() {
      client.destroy();
      if (signer !== client) signer.destroy();
    },
  };

  function describe(err: unknown, what: string): S3StoreError {
    const status =
      err instanceof S3ServiceException ? ` (HTTP ${err.$metadata.httpStatusCode ?? '?'} ${err.name})` : '';
    const where = opts.endpoint ?? `AWS S3 in ${opts.region}`;
    return new S3StoreError(
      `S3 store at ${where}: ${what}${status}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}
