import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { NotFoundError } from '../../core/errors';
import { csrfTokenOf } from '../../service/accounts/sessions';
import { ROLE_PERMISSIONS } from '../../core/roles';
import { cookieOf, SESSION_COOKIE } from '../shared/auth';
import type { SessionCookies } from '../shared/auth';

/**
 * The dashboard's pages and assets. Every page is the same small HTML shell; the front end (Preact
 * and htm as ES modules, no build step) renders it from the JSON calls under /dashboard/api.
 * Everything is served by this app from files read once at start-up: no CDN, no third party.
 */

const require = createRequire(import.meta.url);
const PUBLIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'public');
const moduleFile = (specifier: string, file: string) => join(dirname(require.resolve(specifier)), file);

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function asset(path: string, type: string): Asset {
  const body = readFileSync(path);
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

const JS = 'text/javascript; charset=utf-8';
/** One module per page (public/pages/), each served under pages/<its file>. */
const PAGE_MODULES = readdirSync(join(PUBLIC_DIR, 'pages'))
  .filter((file) => file.endsWith('.js'))
  .map((file) => [`pages/${file}`, asset(join(PUBLIC_DIR, 'pages', file), JS)] as const);
const ASSETS: Record<string, Asset> = {
  'app.js': asset(join(PUBLIC_DIR, 'app.js'), JS),
  'pages.js': asset(join(PUBLIC_DIR, 'pages.js'), JS),
  ...Object.fromEntries(PAGE_MODULES),
  'lib.js': asset(join(PUBLIC_DIR, 'lib.js'), JS),
  'style.css': asset(join(PUBLIC_DIR, 'style.css'), 'text/css; charset=utf-8'),
  'vendor/preact.mjs': asset(moduleFile('preact', 'preact.mjs'), JS),
  'vendor/hooks.mjs': asset(moduleFile('preact/hooks', 'hooks.mjs'), JS),
  'vendor/htm.mjs': asset(moduleFile('htm', 'htm.mjs'), JS),
  'vendor/htm-preact.mjs': asset(moduleFile('htm/preact', 'index.mjs'), JS),
  // uPlot draws the usage chart: served from the installed package like the others, never a CDN.
  'vendor/uplot.mjs': asset(moduleFile('uplot', 'uPlot.esm.js'), JS),
  'vendor/uplot.css': asset(moduleFile('uplot', 'uPlot.min.css'), 'text/css; charset=utf-8'),
};

const IMPORT_MAP = JSON.stringify({
  imports: {
    preact: '/dashboard/assets/vendor/preact.mjs',
    'preact/hooks': '/dashboard/assets/vendor/hooks.mjs',
    htm: '/dashboard/assets/vendor/htm.mjs',
    'htm/preact': '/dashboard/assets/vendor/htm-preact.mjs',
    uplot: '/dashboard/assets/vendor/uplot.mjs',
  },
});
const IMPORT_MAP_HASH = createHash('sha256').update(IMPORT_MAP).digest('base64');

/** Only this app's scripts and styles run; previews may come from the output store (a bucket's own host). */
const CSP = [
  "default-src 'none'",
  `script-src 'self' 'sha256-${IMPORT_MAP_HASH}'`,
  "style-src 'self'",
  "img-src 'self' data: https: http:",
  "media-src 'self' https: http:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** The pages: path below /dashboard, title, and whether a session is needed. */
export const DASHBOARD_PAGES = [
  { path: '', page: 'overview', title: 'Overview', authed: true },
  { path: '/generations', page: 'generations', title: 'Generations', authed: true },
  { path: '/batches', page: 'batches', title: 'Batches', authed: true },
  { path: '/keys', page: 'keys', title: 'API keys', authed: true },
  { path: '/usage', page: 'usage', title: 'Usage', authed: true },
  { path: '/webhooks', page: 'webhooks', title: 'Webhooks', authed: true },
  { path: '/playground', page: 'playground', title: 'Playground', authed: true },
  { path: '/customers', page: 'customers', title: 'Customers', authed: true },
  { path: '/team', page: 'team', title: 'Team', authed: true },
  { path: '/audit', page: 'audit', title: 'Audit log', authed: true },
  { path: '/login', page: 'login', title: 'Log in', authed: false },
  { path: '/set-password', page: 'set-password', title: 'Set your password', authed: false },
] as const;
/** Served only when Stripe is configured: buying credits. */
export const BILLING_PAGES = [{ path: '/billing', page: 'billing', title: 'Billing', authed: true }] as const;

/** Served only when sign-up is open (SIGNUP=open): asking for an account, and following its emailed link. */
export const SIGNUP_PAGES = [
  { path: '/signup', page: 'signup', title: 'Sign up', authed: false },
  { path: '/verify', page: 'verify', title: 'Confirm your email', authed: false },
] as const;

const escapeJson = (value: unknown) => JSON.stringify(value).replaceAll('<', '\\u003c');
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function shell(title: string, boot: Record<string, unknown>): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Generation service</title>
<link rel="stylesheet" href="/dashboard/assets/vendor/uplot.css">
<link rel="stylesheet" href="/dashboard/assets/style.css">
<script type="importmap">${IMPORT_MAP}</script>
<script type="application/json" id="boot">${escapeJson(boot)}</script>
<script type="module" src="/dashboard/assets/app.js"></script>
</head>
<body>
<div id="app"><noscript><p>The dashboard needs JavaScript.</p></noscript></div>
</body>
</html>
`;
}

function pageHeaders(reply: FastifyReply): FastifyReply {
  return (
    reply
      .header('Content-Security-Policy', CSP)
      .header('X-Content-Type-Options', 'nosniff')
      // The set-password link carries its token: no page of ours passes its address on.
      .header('Referrer-Policy', 'no-referrer')
      .header('Cache-Control', 'no-store')
  );
}

export const dashboardPages: FastifyPluginAsync<{
  sessions: SessionCookies;
  signupOpen?: boolean;
  billingOpen?: boolean;
}> = async (app, { sessions, signupOpen = false, billingOpen = false }) => {
  for (const p of [...DASHBOARD_PAGES, ...(signupOpen ? SIGNUP_PAGES : []), ...(billingOpen ? BILLING_PAGES : [])]) {
    app.get(`/dashboard${p.path}`, { schema: { hide: true } }, async (request, reply) => {
      const token = cookieOf(request, SESSION_COOKIE);
      const session = token ? await sessions.service.authenticate(token) : undefined;
      if (p.authed && !session) return reply.redirect('/dashboard/login', 303);
      if (p.page === 'login' && session) return reply.redirect('/dashboard', 303);
      const boot =
        session && token
          ? {
              page: p.page,
              csrfToken: csrfTokenOf(token),
              email: session.email,
              accountId: session.accountId,
              // What the pages offer; the API decides again on every call (permissions.ts).
              role: session.role,
              permissions: ROLE_PERMISSIONS[session.role],
              billing: billingOpen,
            }
          : { page: p.page, signup: signupOpen };
      return pageHeaders(reply).type('text/html; charset=utf-8').send(shell(p.title, boot));
    });
  }

  app.get('/dashboard/assets/*', { schema: { hide: true } }, async (request, reply) => {
    const name = (request.params as { '*': string })['*'];
    const found = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (!found) throw new NotFoundError(`No dashboard asset ${name}.`);
    reply.header('ETag', found.etag).header('Cache-Control', 'no-cache').header('X-Content-Type-Options', 'nosniff');
    if (request.headers['if-none-match'] === found.etag) return reply.code(304).send();
    return reply.type(found.type).send(found.body);
  });
};
