import { UnsafeUrlError } from './errors';

const ALLOWED_PROTOCOLS: ReadonlySet<string> = new Set(['http:', 'https:']);

/**
 * Parses a URL the service is asked to fetch or deliver to, and refuses what it must never
 * request: another scheme (file:, ftp:, data:, gopher:) or embedded credentials, which would be
 * sent on to whoever the host turns out to be. The WHATWG parser also rewrites numeric hosts
 * such as `2130706433` or `0x7f.1` to `127.0.0.1`, so the connection guard sees the real address.
 */
export function parseSafeUrl(input: string | URL, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(input, base);
  } catch {
    throw new UnsafeUrlError('The URL is not valid.');
  }
  if (!ALLOWED_PROTOCOLS.has(url.protocol)) {
    throw new UnsafeUrlError(`The URL scheme "${url.protocol.slice(0, -1)}" is not allowed; use http or https.`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UnsafeUrlError('URLs with credentials (user:password@) are not allowed.');
  }
  if (url.hostname === '') {
    throw new UnsafeUrlError('The URL has no host.');
  }
  return url;
}
