// The settings of the shared state (REDIS_URL, S3_*): validated by the one config schema, a
// half-given S3 configuration refused rather than quietly falling back to local files.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, s3Settings } from '../../../core/config';

const S3 = { S3_BUCKET: 'outputs', S3_ACCESS_KEY_ID: 'gensvc', S3_SECRET_ACCESS_KEY: 'secret-0123456789' };

describe('REDIS_URL', () => {
  it('takes redis:// and rediss:// URLs, and nothing when empty', () => {
    expect(loadConfig({ REDIS_URL: 'redis://redis:6379' }).REDIS_URL).toBe('redis://redis:6379');
    expect(loadConfig({ REDIS_URL: 'rediss://:pw@cache.example:6380/2' }).REDIS_URL).toBe(
      'rediss://:pw@cache.example:6380/2',
    );
    expect(loadConfig({ REDIS_URL: '' }).REDIS_URL).toBeUndefined();
  });

  it('names REDIS_URL when it is not a Redis URL', () => {
    expect(() => loadConfig({ REDIS_URL: 'http://redis:6379' })).toThrow(
      /REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/,
    );
  });
});

describe('S3_* settings', () => {
  it('leave the outputs local when none is given', () => {
    expect(s3Settings(loadConfig({}))).toBeUndefined();
  });

  it('use path-style addressing with an endpoint (MinIO, SeaweedFS) unless told otherwise, and AWS host names without one', () => {
    expect(
      s3Settings(loadConfig({ ...S3, S3_ENDPOINT: 'http://minio:9000', S3_PUBLIC_ENDPOINT: 'http://localhost:9000' })),
    ).toEqual({
      bucket: 'outputs',
      region: 'us-east-1',
      endpoint: 'http://minio:9000',
      publicEndpoint: 'http://localhost:9000',
      forcePathStyle: true,
      accessKeyId: 'gensvc',
      secretAccessKey: 'secret-0123456789',
    });
    expect(
      s3Settings(loadConfig({ ...S3, S3_ENDPOINT: 'http://minio:9000', S3_FORCE_PATH_STYLE: 'false' }))?.forcePathStyle,
    ).toBe(false);
    expect(s3Settings(loadConfig({ ...S3, S3_REGION: 'eu-central-1' }))).toMatchObject({
      region: 'eu-central-1',
      forcePathStyle: false,
    });
    expect(s3Settings(loadConfig({ ...S3 }))).not.toHaveProperty('endpoint');
  });

  it('refuse a half-given configuration, naming every missing variable', () => {
    const attempt = () => loadConfig({ S3_ENDPOINT: 'http://minio:9000', S3_BUCKET: 'outputs' });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/S3_ACCESS_KEY_ID: is required when any S3_\* setting is given/);
    expect(attempt).toThrow(/S3_SECRET_ACCESS_KEY: is required/);
    expect(() => loadConfig({ S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 'b' })).toThrow(/S3_BUCKET: is required/);
  });

  it('refuse values that are not what they claim', () => {
    expect(() => loadConfig({ ...S3, S3_ENDPOINT: 'minio:9000' })).toThrow(
      /S3_ENDPOINT: must be an http:\/\/ or https:\/\/ URL/,
    );
    expect(() => loadConfig({ ...S3, S3_FORCE_PATH_STYLE: 'maybe' })).toThrow(/S3_FORCE_PATH_STYLE/);
  });

  it('make URL_SIGNING_SECRET unnecessary in production, since the bucket signs the URLs', () => {
    const production = { NODE_ENV: 'production', ADMIN_TOKEN: 'a'.repeat(20), WEBHOOK_SECRET_KEY: 'w'.repeat(20) };
    expect(loadConfig({ ...production, ...S3 }).URL_SIGNING_SECRET).toBeUndefined();
    expect(() => loadConfig(production)).toThrow(/URL_SIGNING_SECRET: is required/);
    expect(() => loadConfig({ NODE_ENV: 'production', ...S3 })).toThrow(/ADMIN_TOKEN: is required/);
  });

  it('make WEBHOOK_SECRET_KEY required in production: the API seals webhook secrets that every worker must open', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', ADMIN_TOKEN: 'a'.repeat(20), ...S3 })).toThrow(
      /WEBHOOK_SECRET_KEY: is required/,
    );
    expect(() => loadConfig({ WEBHOOK_SECRET_KEY: 'short' })).toThrow(
      /WEBHOOK_SECRET_KEY: must be at least 16 characters/,
    );
  });
});
