import { z } from 'zod';

/** The shapes environment variables share: an empty value counts as unset. */
export const unsetIfEmpty = (v: unknown) => (v === '' ? undefined : v);
export const optionalUrl = z.preprocess(unsetIfEmpty, z.string().url().optional());
export const optionalText = z.preprocess(unsetIfEmpty, z.string().min(1).optional());
export const optionalHttpUrl = z.preprocess(
  unsetIfEmpty,
  z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
);
export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

/** A comma-separated list of web origins (`https://app.example.com`), as origins. */
export const originList = z
  .string()
  .default('')
  .transform((value, ctx) =>
    value
      .split(',')
      .map((o) => o.trim())
      .filter((o) => o !== '')
      .map((o) => {
        const url = URL.canParse(o) ? new URL(o) : undefined;
        if (!url || !/^https?:$/.test(url.protocol) || url.origin !== o.replace(/\/$/, '')) {
          ctx.addIssue({ code: 'custom', message: `'${o}' is not an origin such as https://app.example.com` });
        }
        return url?.origin ?? o;
      }),
  );
