import { InvalidRequestError } from './errors';
import { GENERATION_ID_PATTERN } from './ids';

/**
 * List cursors are opaque to clients (base64url of a versioned position), so the position they
 * carry can change shape later without breaking anyone who stored one.
 */
const VERSION = 'g1:';

export function encodeCursor(lastId: string): string {
  return Buffer.from(`${VERSION}${lastId}`, 'utf8').toString('base64url');
}

/** The id a cursor points after; a cursor not made by `encodeCursor` (for ids of `pattern`) is a 400. */
export function decodeCursor(cursor: string, pattern: RegExp = GENERATION_ID_PATTERN): string {
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const id = text.startsWith(VERSION) ? text.slice(VERSION.length) : '';
  if (!pattern.test(id))
    throw new InvalidRequestError('cursor is not valid; use the next_cursor of a previous page.', 'cursor');
  return id;
}
