import type { Health } from './admin-client';

/** What each command prints on stdout, given the API's answer. */

export const formatAccountCreated = (body: { id: string }) => body.id;

export const formatKeyCreated = (body: { id: string; key: string }) =>
  [
    `API key  ${body.key}`,
    `Key id   ${body.id}`,
    '',
    'The key is shown once only (the service keeps just its hash): store it now.',
    `Revoke it with: npx gensvc key revoke ${body.id}`,
  ].join('\n');

export const formatCreditsAdded = (body: { id: string; balance: number }) => `${body.balance} credits available on ${body.id}`;

export const formatUserCreated = (body: { id: string; setPasswordUrl: string; expiresAt: string }) =>
  [
    `Set-password link  ${body.setPasswordUrl}`,
    `User id            ${body.id}`,
    '',
    `Send the link to the user: it sets their password once and expires at ${body.expiresAt}.`,
    'Then they log in at /dashboard/login. Running this again for the same email gives a new link.',
  ].join('\n');

export const formatKeyRevoked = (body: { id: string }) => `Revoked key ${body.id}; requests made with it now get 401.`;

export function formatHealth(body: Health): string {
  const checks = Object.entries(body.checks ?? {}).map(([name, state]) => `${name}: ${state}`);
  return checks.length > 0 ? `${body.status} (${checks.join(', ')})` : body.status;
}

export const formatJson = (body: unknown) => JSON.stringify(body, null, 2);
