// The audit log: every change of a member, role, key, budget, webhook, threshold or customer limit.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { Alert, api, Loading, useLoad, when } from '../lib.js';

const who = (a) => (a.type === 'user' ? a.email : a.type === 'key' ? `key ${a.id}` : 'operator');
const detailsOf = (d) =>
  Object.entries(d)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(', ');

export function Audit() {
  const [pages, setPages] = useState([]);
  const [error, setError] = useState();
  const first = useLoad(() => api('GET', '/dashboard/api/audit-log?limit=50'));
  const last = pages.at(-1) ?? first.data;
  const more = async () => {
    try {
      setPages([
        ...pages,
        await api('GET', `/dashboard/api/audit-log?limit=50&cursor=${encodeURIComponent(last.next_cursor)}`),
      ]);
    } catch (err) {
      setError(err);
    }
  };
  return html`<h1>Audit log</h1>
    <p class="muted">Who changed what, when and from which address; newest first.</p>
    <${Alert} error=${error} />
    <${Loading} state=${first}
      >${(d) => {
        const rows = [d, ...pages].flatMap((p) => p.data);
        if (rows.length === 0) return html`<p>No change yet.</p>`;
        return html`<table class="table">
            <caption class="visually-hidden">
              Audit log
            </caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
                <th scope="col">On</th>
                <th scope="col">Details</th>
                <th scope="col">From</th>
              </tr>
            </thead>
            <tbody>
              ${rows.map(
                (e) =>
                  html`<tr key=${e.id} data-action=${e.action}>
                    <td data-label="When">${when(e.createdAt)}</td>
                    <td data-label="Who">${who(e.actor)}</td>
                    <td data-label="What" class="mono">${e.action}</td>
                    <td data-label="On" class="mono">${e.target ?? '—'}</td>
                    <td data-label="Details" class="small">${detailsOf(e.details)}</td>
                    <td data-label="From" class="mono">${e.actor.ip ?? '—'}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
          ${last?.next_cursor ? html`<button type="button" class="secondary" onClick=${more}>Older</button>` : null}`;
      }}<//
    >`;
}
