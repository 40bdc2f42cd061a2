import type { Health, UsageReport } from './admin-client';

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

export const formatCreditsAdded = (body: { id: string; balance: number }) =>
  `${body.balance} credits available on ${body.id}`;

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

/** The margin report as a table: one line per model, upstream or day, then the total. */
export function formatUsage(body: UsageReport): string {
  const money = (x: number) => x.toFixed(4);
  const percent = (r: { revenueEur: number; marginEur: number }) =>
    r.revenueEur > 0 ? `${((r.marginEur / r.revenueEur) * 100).toFixed(1)}%` : '-';
  const lines = [
    ...body.rows.map((r) => [
      r.key,
      String(r.generations),
      money(r.revenueEur),
      money(r.costEur),
      money(r.marginEur),
      percent(r),
      String(r.uncosted),
    ]),
    [
      'total',
      String(body.total.generations),
      money(body.total.revenueEur),
      money(body.total.costEur),
      money(body.total.marginEur),
      percent(body.total),
      String(body.total.uncosted),
    ],
  ];
  const header = [body.groupBy, 'generations', 'revenue EUR', 'cost EUR', 'margin EUR', 'margin', 'uncosted'];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const row = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [`${body.from} to ${body.to}`, row(header), ...lines.map(row)].join('\n');
}
