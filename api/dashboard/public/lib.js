// Shared helpers of the dashboard: the JSON calls (with the session's CSRF token), live events,
// formatting, and small components. Plain ES modules: nothing is built.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export const boot = JSON.parse(document.getElementById('boot')?.textContent ?? '{}');

/** What the member's role allows (the pages offer only that; the API decides again on every call). */
export const may = (permission) => (boot.permissions ?? []).includes(permission);

export class ApiError extends Error {
  constructor(status, type, message, extra = {}) {
    super(message);
    this.status = status;
    this.type = type;
    this.extra = extra;
  }
}

/** A JSON call to this app. State-changing calls carry the CSRF token; a lost session goes back to the login page. */
export async function api(method, path, body, headers = {}) {
  const h = { accept: 'application/json', ...headers };
  if (body !== undefined) h['content-type'] = 'application/json';
  if (method !== 'GET' && boot.csrfToken) h['x-csrf-token'] = boot.csrfToken;
  const res = await fetch(path, {
    method,
    headers: h,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (res.status === 401 && boot.csrfToken) {
    location.assign('/dashboard/login');
  }
  if (!res.ok) {
    const e = json?.error ?? {};
    const retry = res.headers.get('retry-after');
    throw new ApiError(res.status, e.type ?? `http_${res.status}`, e.message ?? `The service answered ${res.status}.`, {
      ...e,
      retryAfter: retry ? Number(retry) : undefined,
    });
  }
  return json;
}

/**
 * Follows the account live (Server-Sent Events): `generation` when one changes, `overview` when the
 * balance moves. The browser reconnects by itself.
 */
export function useLive(handlers) {
  const ref = useRef(handlers);
  ref.current = handlers;
  useEffect(() => {
    const source = new EventSource('/dashboard/api/events');
    for (const name of ['generation', 'overview']) {
      source.addEventListener(name, (e) => ref.current[name]?.(JSON.parse(e.data)));
    }
    source.addEventListener('logout', () => location.assign('/dashboard/login'));
    return () => source.close();
  }, []);
}

/** Loads once (and again when `deps` change); `reload` loads again. */
export function useLoad(load, deps = []) {
  const [state, setState] = useState({ loading: true, data: undefined, error: undefined });
  const run = () => {
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => setState({ loading: false, data, error: undefined }),
      (error) => setState({ loading: false, data: undefined, error }),
    );
  };
  useEffect(run, deps);
  return {
    ...state,
    reload: run,
    set: (data) => setState((s) => ({ ...s, data: typeof data === 'function' ? data(s.data) : data })),
  };
}

const number = new Intl.NumberFormat(undefined, { maximumFractionDigits: 3 });
export const credits = (n) => `${number.format(n)} ${n === 1 ? 'credit' : 'credits'}`;
export const formatNumber = (n) => number.format(n);
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
export const when = (iso) => (iso ? dateTime.format(new Date(iso)) : '—');
export const isoTitle = (iso) => iso ?? '';

/** The periods of a key's budget, as the service names them and as the pages say them. */
export const PERIODS = [
  ['day', 'per day'],
  ['week', 'per week'],
  ['month', 'per month'],
  ['none', 'in total'],
];
export const periodWords = (p) => PERIODS.find(([v]) => v === p)?.[1] ?? p;

// `words` (a prop of every page) are the service's kinds and statuses, from /dashboard/api/vocabulary.
export const inFlight = (words, status) => words.inFlight.includes(status);

export function errorText(err) {
  if (!err) return '';
  if (err.status === 429)
    return `${err.message}${err.extra?.retryAfter ? ` Try again in ${err.extra.retryAfter} s.` : ''}`;
  return err.message ?? String(err);
}

/** An error or notice that screen readers announce. */
export function Alert({ error, children, kind = 'error' }) {
  if (!error && !children) return null;
  return html`<div class=${`alert alert-${kind}`} role=${kind === 'error' ? 'alert' : 'status'}>
    ${error ? errorText(error) : children}
  </div>`;
}

/** What `useLoad` gave: its error, a loading line, or `children` called with the data. */
export function Loading({ state, children }) {
  if (state.error) return html`<${Alert} error=${state.error} />`;
  if (state.data === undefined) return html`<p class="muted" role="status">Loading…</p>`;
  return children(state.data);
}

/** A secret shown once, with a copy button; it is never shown again once dismissed. */
export function Secret({ label, value, onDone, note }) {
  const [copied, setCopied] = useState(false);
  const input = useRef(null);
  useEffect(() => input.current?.focus(), []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
    } catch {
      input.current?.select();
      document.execCommand?.('copy');
    }
    setCopied(true);
  };
  return html`<div class="secret" role="region" aria-label=${label}>
    <p><strong>${label}</strong> ${note ?? 'This is the only time it is shown: copy it now and keep it safe.'}</p>
    <div class="secret-row">
      <input
        ref=${input}
        class="mono"
        readonly
        value=${value}
        aria-label=${label}
        onFocus=${(e) => e.currentTarget.select()}
        data-secret
      />
      <button type="button" onClick=${copy}>${copied ? 'Copied' : 'Copy'}</button>
    </div>
    <p aria-live="polite" class="muted">${copied ? 'Copied to the clipboard.' : ''}</p>
    <button type="button" class="secondary" onClick=${onDone}>I have saved it</button>
  </div>`;
}

export function StatusBadge({ status }) {
  return html`<span class=${`badge badge-${status}`}>${status}</span>`;
}

/** The output of a generation: images inline, videos playable, chat text. */
export function Preview({ g, large = false }) {
  if (g.status !== 'succeeded')
    return html`<span class="muted">${g.status === 'failed' ? (g.error?.code ?? 'failed') : '…'}</span>`;
  if (g.kind === 'chat') return html`<p class=${large ? 'chat-text' : 'chat-excerpt'}>${g.text ?? ''}</p>`;
  if (g.kind === 'video') {
    return html`<video
      class=${large ? 'preview-large' : 'preview'}
      src=${g.outputUrl}
      controls
      preload="metadata"
      playsinline
      aria-label=${`Video ${g.id}`}
    ></video>`;
  }
  return html`<a href=${g.outputUrl} target="_blank" rel="noopener"
    ><img
      class=${large ? 'preview-large' : 'preview'}
      src=${g.outputUrl}
      alt=${`${g.kind === 'upscale' ? 'Upscaled image' : 'Image'} ${g.id}`}
      loading="lazy"
  /></a>`;
}
