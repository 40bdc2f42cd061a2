import { z } from 'zod';

/**
 * Text that every store and provider downstream can take. PostgreSQL refuses NUL in `text` and
 * `jsonb` ("invalid byte sequence for encoding UTF8: 0x00"); a lone UTF-16 surrogate cannot be
 * encoded as UTF-8 at all; other C0/C1 control characters are never meaningful in a prompt and
 * are how terminal-escape and log-forging payloads travel. Refusing them at the edge keeps a
 * request that cannot be stored from ever reaching the ledger or a workflow.
 */

// Tab, line feed and carriage return are ordinary in prompts and chat messages. Matching control
// characters is the point of this pattern.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `text` cannot be stored, or undefined when it can. */
export function unsafeTextReason(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL characters (\\u0000)';
  if (LONE_SURROGATE.test(text)) return 'must be valid Unicode (it contains an unpaired surrogate)';
  if (CONTROL.test(text)) return 'must not contain control characters other than tab and line breaks';
  return undefined;
}

/** A string schema that refuses what `unsafeTextReason` names, on top of the given length bounds. */
export function safeText(opts: { min?: number; max?: number; trim?: boolean; label?: string } = {}) {
  let schema = z.string();
  if (opts.trim) schema = schema.trim();
  if (opts.min !== undefined)
    schema = schema.min(
      opts.min,
      opts.min === 1 ? `${opts.label ?? 'value'} must not be empty` : `must be at least ${opts.min} characters`,
    );
  if (opts.max !== undefined) schema = schema.max(opts.max, `must be at most ${opts.max} characters`);
  return schema.superRefine((text, ctx) => {
    const reason = unsafeTextReason(text);
    if (reason) ctx.addIssue({ code: 'custom', message: reason });
  });
}
