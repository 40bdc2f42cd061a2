import { expect } from 'vitest';
import type { Harness } from './harness';

/** A dashboard user: created by the operator, password set through the one-time link. */
export interface DashboardUser {
  accountId: string;
  userId: string;
  email: string;
  password: string;
  setPasswordUrl: string;
}

let seq = 0;

/** An account with a user whose password is set (through the API, as the set-password page does). */
export async function dashboardUser(
  h: Harness,
  a: { credits: number; plan?: string; chatCap?: number } = { credits: 1_000 },
): Promise<DashboardUser & { key: string }> {
  const { accountId, key } = await h.account({
    credits: a.credits,
    plan: a.plan,
    chatCap: a.chatCap,
    scopes: ['image', 'video', 'chat', 'upscale', 'webhooks'],
  });
  return { ...(await userOf(h, accountId)), key };
}

/** A user of an existing account, password set; an owner unless another role is named. */
export async function userOf(h: Harness, accountId: string, role = 'owner'): Promise<DashboardUser> {
  const email = `user${++seq}-${Date.now()}@example.com`;
  const created = await h.admin('POST', '/admin/v1/users', { accountId, email, role });
  expect(created.statusCode, created.body).toBe(201);
  const { id, setPasswordUrl } = created.json<{ id: string; setPasswordUrl: string }>();
  const password = 'correct horse battery staple';
  const set = await h.app.inject({
    method: 'POST',
    url: '/dashboard/api/set-password',
    payload: { token: linkToken(setPasswordUrl), password },
  });
  expect(set.statusCode, set.body).toBe(200);
  return { accountId, userId: id, email, password, setPasswordUrl };
}

export const linkToken = (url: string): string => new URL(url).hash.replace(/^#token=/, '');

/** Logs in through the API: the session cookie (as a Cookie header value) and its CSRF token. */
export async function login(
  h: Harness,
  u: { email: string; password: string },
): Promise<{ cookie: string; csrf: string }> {
  const res = await h.app.inject({
    method: 'POST',
    url: '/dashboard/api/login',
    payload: { email: u.email, password: u.password },
  });
  expect(res.statusCode, res.body).toBe(200);
  const setCookie = String(res.headers['set-cookie']);
  return { cookie: setCookie.split(';')[0]!, csrf: res.json<{ csrfToken: string }>().csrfToken };
}
