// The account's generations, newest first, filtered by kind and status; in-flight ones update live.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import {
  Alert,
  api,
  formatNumber,
  inFlight,
  isoTitle,
  Loading,
  may,
  Preview,
  StatusBadge,
  useLive,
  useLoad,
  when,
} from '../lib.js';

export function Generations({ words }) {
  const [filters, setFilters] = useState({ kind: '', status: '' });
  const [error, setError] = useState();
  const [announce, setAnnounce] = useState('');
  const query = (cursor) => {
    const q = new URLSearchParams({ limit: '20' });
    if (filters.kind) q.set('kind', filters.kind);
    if (filters.status) q.set('status', filters.status);
    if (cursor) q.set('cursor', cursor);
    return api('GET', `/dashboard/api/generations?${q}`);
  };
  const state = useLoad(() => query(), [filters.kind, filters.status]);
  const matches = (g) => (!filters.kind || g.kind === filters.kind) && (!filters.status || g.status === filters.status);
  useLive({
    generation: (g) =>
      state.set((page) => {
        if (!page) return page;
        const known = page.data.some((x) => x.id === g.id);
        if (known) {
          if (!inFlight(words, g.status)) setAnnounce(`${g.kind} ${g.id} ${g.status}`);
          return { ...page, data: page.data.map((x) => (x.id === g.id ? g : x)) };
        }
        return matches(g) && (page.data.length === 0 || g.id > page.data[0].id)
          ? { ...page, data: [g, ...page.data] }
          : page;
      }),
  });
  const more = async () => {
    try {
      const next = await query(state.data.next_cursor);
      state.set((page) => ({ data: [...page.data, ...next.data], next_cursor: next.next_cursor }));
    } catch (err) {
      setError(err);
    }
  };
  const cancel = async (g) => {
    try {
      const after = await api('POST', `/dashboard/api/generations/${g.id}/cancel`);
      state.set((page) => ({ ...page, data: page.data.map((x) => (x.id === after.id ? after : x)) }));
    } catch (err) {
      setError(err);
    }
  };
  const onFilter = (e) => setFilters((f) => ({ ...f, [e.currentTarget.name]: e.currentTarget.value }));
  return html`<h1>Generations</h1>
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Filter generations">
      <label
        >Kind<select name="kind" value=${filters.kind} onChange=${onFilter}>
          <option value="">All kinds</option>
          ${words.kinds.map((k) => html`<option value=${k}>${k}</option>`)}
        </select></label
      >
      <label
        >Status<select name="status" value=${filters.status} onChange=${onFilter}>
          <option value="">All statuses</option>
          ${words.statuses.map((s) => html`<option value=${s}>${s}</option>`)}
        </select></label
      >
    </form>
    <p class="visually-hidden" aria-live="polite">${announce}</p>
    <${Alert} error=${error} />
    <${Loading} state=${state}
      >${(page) =>
        page.data.length === 0
          ? html`<p>No generations yet. <a href="/dashboard/playground">Make one in the playground.</a></p>`
          : html`<table class="table generations">
                <caption class="visually-hidden">
                  Generations, newest first; in-flight ones update live
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Preview</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Model</th>
                    <th scope="col">Status</th>
                    <th scope="col">Credits</th>
                    <th scope="col">Created</th>
                    <th scope="col">Finished</th>
                    <th scope="col"><span class="visually-hidden">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  ${page.data.map(
                    (g) =>
                      html`<tr key=${g.id} data-generation=${g.id} data-status=${g.status}>
                        <td data-label="Preview"><${Preview} g=${g} /></td>
                        <td data-label="Kind">${g.kind}</td>
                        <td data-label="Model" class="mono">${g.model}</td>
                        <td data-label="Status">
                          <${StatusBadge}
                            status=${g.status}
                          />${g.error ? html` <span class="muted small">${g.error.code}</span>` : null}
                        </td>
                        <td data-label="Credits">
                          ${g.status === 'succeeded' ? formatNumber(g.creditsCharged) : html`<span class="muted" title="Quoted and held">${formatNumber(g.creditsQuoted)} held</span>`}
                        </td>
                        <td data-label="Created">
                          <time datetime=${isoTitle(g.createdAt)}>${when(g.createdAt)}</time>
                        </td>
                        <td data-label="Finished">
                          <time datetime=${isoTitle(g.finishedAt)}>${when(g.finishedAt)}</time>
                        </td>
                        <td>
                          ${inFlight(words, g.status) && may('playground') ? html`<button type="button" class="danger small" onClick=${() => cancel(g)} aria-label=${`Cancel ${g.kind} ${g.id}`}>Cancel</button>` : null}
                        </td>
                      </tr>`,
                  )}
                </tbody>
              </table>
              ${page.next_cursor ? html`<button type="button" class="secondary" onClick=${more}>Load more</button>` : null}`}<//
    >`;
}
