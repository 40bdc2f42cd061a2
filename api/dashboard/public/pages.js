// The dashboard's pages. Each reads and changes the account through /dashboard/api (the same
// services as the API's doors) and follows it live where things move.
import { html } from 'htm/preact';
import uPlot from 'uplot';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Alert, api, credits, formatNumber, isoTitle, Preview, Secret, StatusBadge, useLive, useLoad, when } from './lib.js';

// `words` (a prop of every page) are the service's kinds and statuses, from /dashboard/api/vocabulary.
const inFlight = (words, status) => words.inFlight.includes(status);

const CATALOGUES = {
  nested: ['generation.completed', 'generation.failed'],
  flat: ['generation.queued', 'generation.running', 'generation.succeeded', 'generation.failed'],
};
const PERIODS = [['day', 'per day'], ['week', 'per week'], ['month', 'per month'], ['none', 'in total']];
const periodWords = (p) => PERIODS.find(([v]) => v === p)?.[1] ?? p;
// Opt-in in either format: sent only to an endpoint that ticks them.
const ALERT_EVENTS = ['balance.low', 'key.budget_reached'];

function Loading({ state, children }) {
  if (state.error) return html`<${Alert} error=${state.error} />`;
  if (state.data === undefined) return html`<p class="muted" role="status">Loading…</p>`;
  return children(state.data);
}

// ---------------------------------------------------------------- overview

export function Overview() {
  const state = useLoad(() => api('GET', '/dashboard/api/overview'));
  // Each move of the balance may have crossed the alert's threshold: the alerts are read again.
  const [moves, setMoves] = useState(0);
  useLive({ overview: (o) => { state.set(o); setMoves((n) => n + 1); } });
  const checkout = new URLSearchParams(location.search).get('checkout');
  return html`<h1>Overview</h1>
    ${checkout === 'success' ? html`<${Alert} kind="notice">Thank you: the credits are added as soon as Stripe confirms the payment.<//>` : null}
    <${Loading} state=${state}>${(o) => html`
      <dl class="cards">
        <div class="card"><dt>Balance</dt><dd data-testid="balance">${credits(o.balance)}</dd><dd class="muted small">Available to spend now</dd></div>
        <div class="card"><dt>On hold</dt><dd data-testid="holds">${credits(o.holdsActive)}</dd><dd class="muted small">Held by generations in flight</dd></div>
        <div class="card"><dt>Free chat replies</dt><dd>${formatNumber(o.trial.chatLeft)} of ${formatNumber(o.trial.chatCap)} left</dd><dd class="muted small">${formatNumber(o.trial.chatUsed)} used</dd></div>
        <div class="card"><dt>Plan</dt><dd class="capital">${o.plan}</dd><dd class="muted small">${formatNumber(o.rateLimitPerMinute)} requests a minute per key</dd></div>
      </dl>`}<//>
    <${Alerts} moves=${moves} />
    <h2>Next steps</h2>
    <ul class="links">
      <li><a href="/dashboard/keys">Create an API key</a> to call the API from your code.</li>
      <li><a href="/dashboard/playground">Try a model in the playground</a>, with its price before you submit.</li>
      <li><a href="/dashboard/webhooks">Register a webhook</a> to hear when generations finish.</li>
      <li><a href="/docs">Read the API reference</a>.</li>
    </ul>`;
}

// The low-balance threshold and the latest balance.low and key.budget_reached alerts.
function Alerts({ moves }) {
  const state = useLoad(() => api('GET', '/dashboard/api/alerts'), [moves]);
  const [error, setError] = useState();
  const save = async (e) => {
    e.preventDefault();
    const value = String(new FormData(e.currentTarget).get('threshold') ?? '').trim();
    try {
      state.set(await api('PUT', '/dashboard/api/low-balance', { thresholdCredits: value === '' ? null : Number(value) }));
      setError(undefined);
    } catch (err) {
      setError(err);
    }
  };
  const describe = (a) => a.event === 'balance.low'
    ? `Available credits fell to ${credits(a.amountCredits)}, below ${credits(a.limitCredits)}`
    : `Key ${a.keyId} spent ${credits(a.amountCredits)} of its ${credits(a.limitCredits)} budget ${periodWords(a.period)}`;
  return html`<section aria-labelledby="alerts"><h2 id="alerts">Alerts</h2>
    <${Alert} error=${error} />
    <${Loading} state=${state}>${(a) => html`
      <form class="threshold" onSubmit=${save} aria-label="Low-balance alert">
        <label>Alert me below (credits) <input name="threshold" type="number" min="0" step="any" placeholder="no alert" value=${a.thresholdCredits ?? ''} /></label>
        <button type="submit" class="small">Save</button>
      </form>
      <p class="muted small">Sent once each time the available credits fall below it, as <code>balance.low</code> to the webhooks that tick it; a key’s used-up budget is sent as <code>key.budget_reached</code>.</p>
      ${a.data.length === 0 ? html`<p class="muted" data-testid="no-alerts">No alerts yet.</p>` : html`<ul class="alerts" data-testid="alerts">${a.data.map((x) => html`<li key=${x.id} data-alert=${x.event}>
        <span class="badge">${x.event}</span> ${describe(x)} <time class="muted small" datetime=${isoTitle(x.createdAt)}>${when(x.createdAt)}</time></li>`)}</ul>`}`}<//>
  </section>`;
}

// ---------------------------------------------------------------- billing

// Buying credits through Stripe Checkout: the account is credited when Stripe reports the payment.
export function Billing() {
  const limits = useLoad(() => api('GET', '/dashboard/api/billing'));
  const [error, setError] = useState();
  const [busy, setBusy] = useState(false);
  const [amount, setAmount] = useState('');
  const buy = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { url } = await api('POST', '/dashboard/api/billing/checkout', { credits: Number(amount) });
      location.assign(url);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return html`<h1>Billing</h1>
    <${Alert} error=${error} />
    <${Loading} state=${limits}>${(l) => html`
      <p>Buy credits with a card through Stripe: 1 credit = ${l.eurPerCredit.toFixed(2)} EUR, ${formatNumber(l.minCredits)} to ${formatNumber(l.maxCredits)} at a time. They are added to your balance once Stripe confirms the payment, and listed in the ledger as a top-up.</p>
      <form class="threshold" onSubmit=${buy} aria-label="Buy credits">
        <label>Credits <input name="credits" type="number" min=${l.minCredits} max=${l.maxCredits} step="1" required value=${amount} onInput=${(e) => setAmount(e.currentTarget.value)} /></label>
        <button type="submit" disabled=${busy}>${busy ? 'Opening Stripe…' : amount ? `Pay ${(Number(amount) * l.eurPerCredit).toFixed(2)} EUR` : 'Pay'}</button>
      </form>`}<//>`;
}

// ---------------------------------------------------------------- generations

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
    generation: (g) => state.set((page) => {
      if (!page) return page;
      const known = page.data.some((x) => x.id === g.id);
      if (known) {
        if (!inFlight(words, g.status)) setAnnounce(`${g.kind} ${g.id} ${g.status}`);
        return { ...page, data: page.data.map((x) => (x.id === g.id ? g : x)) };
      }
      return matches(g) && (page.data.length === 0 || g.id > page.data[0].id) ? { ...page, data: [g, ...page.data] } : page;
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
      <label>Kind<select name="kind" value=${filters.kind} onChange=${onFilter}><option value="">All kinds</option>${words.kinds.map((k) => html`<option value=${k}>${k}</option>`)}</select></label>
      <label>Status<select name="status" value=${filters.status} onChange=${onFilter}><option value="">All statuses</option>${words.statuses.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
    </form>
    <p class="visually-hidden" aria-live="polite">${announce}</p>
    <${Alert} error=${error} />
    <${Loading} state=${state}>${(page) => page.data.length === 0
      ? html`<p>No generations yet. <a href="/dashboard/playground">Make one in the playground.</a></p>`
      : html`<table class="table generations">
          <caption class="visually-hidden">Generations, newest first; in-flight ones update live</caption>
          <thead><tr><th scope="col">Preview</th><th scope="col">Kind</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col">Credits</th><th scope="col">Created</th><th scope="col">Finished</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${page.data.map((g) => html`<tr key=${g.id} data-generation=${g.id} data-status=${g.status}>
            <td data-label="Preview"><${Preview} g=${g} /></td>
            <td data-label="Kind">${g.kind}</td>
            <td data-label="Model" class="mono">${g.model}</td>
            <td data-label="Status"><${StatusBadge} status=${g.status} />${g.error ? html` <span class="muted small">${g.error.code}</span>` : null}</td>
            <td data-label="Credits">${g.status === 'succeeded' ? formatNumber(g.creditsCharged) : html`<span class="muted" title="Quoted and held">${formatNumber(g.creditsQuoted)} held</span>`}</td>
            <td data-label="Created"><time datetime=${isoTitle(g.createdAt)}>${when(g.createdAt)}</time></td>
            <td data-label="Finished"><time datetime=${isoTitle(g.finishedAt)}>${when(g.finishedAt)}</time></td>
            <td>${inFlight(words, g.status) ? html`<button type="button" class="danger small" onClick=${() => cancel(g)} aria-label=${`Cancel ${g.kind} ${g.id}`}>Cancel</button>` : null}</td>
          </tr>`)}</tbody>
        </table>
        ${page.next_cursor ? html`<button type="button" class="secondary" onClick=${more}>Load more</button>` : null}`}<//>`;
}

// ---------------------------------------------------------------- API keys


// A key's spending budget: what it spent this period, and a small form to set or remove it.
function KeyBudget({ k, onChange, onError }) {
  const [open, setOpen] = useState(false);
  const b = k.budget;
  const save = async (e) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    try {
      const budget = await api('PUT', `/dashboard/api/keys/${k.id}/budget`, { maxCredits: Number(form.get('maxCredits')), period: String(form.get('period')) });
      onChange(budget);
      setOpen(false);
    } catch (err) {
      onError(err);
    }
  };
  const remove = async () => {
    try {
      await api('DELETE', `/dashboard/api/keys/${k.id}/budget`);
      onChange(null);
      setOpen(false);
    } catch (err) {
      onError(err);
    }
  };
  return html`<div class="stack small">
    ${b
      ? html`<span data-testid="budget">${credits(b.spentCredits)} of ${credits(b.maxCredits)} ${periodWords(b.period)}</span>
        ${b.resetsAt ? html`<span class="muted">resets ${when(b.resetsAt)}</span>` : null}`
      : html`<span class="muted">no limit</span>`}
    ${open
      ? html`<form class="stack" onSubmit=${save} aria-label=${`Budget of ${k.hint}`}>
          <label>Max credits <input name="maxCredits" type="number" min="0" step="any" required value=${b?.maxCredits ?? ''} /></label>
          <label>Period <select name="period">${PERIODS.map(([v, label]) => html`<option value=${v} selected=${(b?.period ?? 'month') === v}>${label}</option>`)}</select></label>
          <div class="actions"><button type="submit" class="small">Save budget</button>
            ${b ? html`<button type="button" class="secondary small" onClick=${remove}>Remove budget</button>` : null}
            <button type="button" class="secondary small" onClick=${() => setOpen(false)}>Close</button></div>
        </form>`
      : html`<button type="button" class="secondary small" onClick=${() => setOpen(true)} aria-label=${`Set the budget of ${k.hint}`}>${b ? 'Change' : 'Set budget'}</button>`}
  </div>`;
}

export function Keys({ words }) {
  const state = useLoad(() => api('GET', '/dashboard/api/keys'));
  const [created, setCreated] = useState();
  const [error, setError] = useState();
  const [busy, setBusy] = useState(false);
  const create = async (e) => {
    e.preventDefault();
    const formEl = e.currentTarget;
    const form = new FormData(formEl);
    const scopes = form.getAll('scopes').map(String);
    const models = String(form.get('models') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    setError(undefined);
    if (scopes.length === 0) return setError(new Error('Choose at least one scope.'));
    setBusy(true);
    try {
      const key = await api('POST', '/dashboard/api/keys', { scopes, ...(models.length ? { models } : {}) });
      setCreated(key);
      formEl.reset();
      state.reload();
    } catch (err) {
      setError(err);
    }
    setBusy(false);
  };
  const revoke = async (k) => {
    if (!confirm(`Revoke ${k.hint}? Requests made with it are refused from now on.`)) return;
    try {
      await api('DELETE', `/dashboard/api/keys/${k.id}`);
      state.set((d) => ({ data: d.data.filter((x) => x.id !== k.id) }));
    } catch (err) {
      setError(err);
    }
  };
  return html`<h1>API keys</h1>
    <section aria-labelledby="new-key">
      <h2 id="new-key">New key</h2>
      ${created ? html`<${Secret} label="Your new API key" value=${created.key} onDone=${() => setCreated(undefined)} />` : null}
      <${Alert} error=${error} />
      <form class="stack" onSubmit=${create}>
        <fieldset>
          <legend>Scopes</legend>
          <div class="checks">${words.scopes.map((k) => html`<label class="check"><input type="checkbox" name="scopes" value=${k} checked=${k !== 'upscale' && k !== 'webhooks'} /> ${k}</label>`)}</div>
        </fieldset>
        <label>Models <span class="muted small">(optional)</span>
          <input name="models" placeholder="e.g. flux, kling" aria-describedby="models-hint" /></label>
        <p id="models-hint" class="muted small">A comma-separated allow-list of model ids; empty lets the key use every model.</p>
        <button type="submit" disabled=${busy}>Create key</button>
      </form>
    </section>
    <section aria-labelledby="keys">
      <h2 id="keys">Keys</h2>
      <${Loading} state=${state}>${(d) => d.data.length === 0 ? html`<p>No keys yet.</p>` : html`<table class="table">
        <caption class="visually-hidden">Live API keys</caption>
        <thead><tr><th scope="col">Key</th><th scope="col">Scopes</th><th scope="col">Models</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Budget</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
        <tbody>${d.data.map((k) => html`<tr key=${k.id} data-key=${k.id}>
          <td data-label="Key" class="mono">${k.hint}</td>
          <td data-label="Scopes">${k.scopes.join(', ')}</td>
          <td data-label="Models">${k.models ? k.models.join(', ') : html`<span class="muted">all</span>`}</td>
          <td data-label="Created">${when(k.createdAt)}</td>
          <td data-label="Last used">${k.lastUsedAt ? when(k.lastUsedAt) : html`<span class="muted">never</span>`}</td>
          <td data-label="Budget"><${KeyBudget} k=${k} onError=${setError}
            onChange=${(budget) => state.set((d) => ({ data: d.data.map((x) => (x.id === k.id ? { ...x, budget } : x)) }))} /></td>
          <td><button type="button" class="danger small" onClick=${() => revoke(k)} aria-label=${`Revoke ${k.hint}`}>Revoke</button></td>
        </tr>`)}</tbody></table>`}<//>
    </section>`;
}

// ---------------------------------------------------------------- usage

// Credits charged per day (UTC) over the last 30 days, drawn by uPlot on a canvas.
function SpendChart({ days }) {
  const box = useRef(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const xs = days.map((d) => Date.parse(`${d.group}T00:00:00Z`) / 1000);
    const plot = new uPlot({
      width: Math.max(280, el.clientWidth), height: 240, tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      series: [{}, { label: 'Credits charged', stroke: '#2563eb', fill: 'rgba(37, 99, 235, 0.15)', width: 2, paths: uPlot.paths.bars({ size: [0.7, 40] }) }],
      axes: [{}, { label: 'credits' }],
      legend: { show: true },
    }, [xs, days.map((d) => d.creditsCharged)], el);
    const resize = () => plot.setSize({ width: Math.max(280, el.clientWidth), height: 240 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [days]);
  return html`<div ref=${box} class="chart" role="img" aria-label="Credits charged per day, last 30 days" data-testid="spend-chart"></div>`;
}

function UsageTable({ caption, label, rows }) {
  if (rows.length === 0) return html`<p class="muted">Nothing in this period.</p>`;
  return html`<table class="table">
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr><th scope="col">${label}</th><th scope="col">Credits charged</th><th scope="col">Generations</th><th scope="col">Failed</th><th scope="col">Output tokens</th></tr></thead>
    <tbody>${rows.map((r) => html`<tr key=${r.group} data-usage=${r.group}>
      <td data-label=${label} class="mono">${r.group}</td>
      <td data-label="Credits charged">${formatNumber(r.creditsCharged)}</td>
      <td data-label="Generations">${formatNumber(r.generations)}</td>
      <td data-label="Failed">${formatNumber(r.failed)}</td>
      <td data-label="Output tokens">${formatNumber(r.outputTokens)}</td>
    </tr>`)}</tbody></table>`;
}

export function Usage() {
  const state = useLoad(async () => {
    const [day, model, key] = await Promise.all(['day', 'model', 'key'].map((g) => api('GET', `/dashboard/api/usage?group_by=${g}`)));
    return { day, model, key };
  });
  return html`<h1>Usage</h1>
    <${Loading} state=${state}>${(u) => html`
      <p class="muted">The last 30 days (UTC): ${credits(u.day.total.creditsCharged)} charged for ${formatNumber(u.day.total.generations)} generations, ${formatNumber(u.day.total.failed)} failed (free).</p>
      <section aria-labelledby="per-day"><h2 id="per-day">Spend per day</h2><${SpendChart} days=${u.day.data} /></section>
      <section aria-labelledby="per-model"><h2 id="per-model">By model</h2><${UsageTable} caption="Usage by model" label="Model" rows=${u.model.data} /></section>
      <section aria-labelledby="per-key"><h2 id="per-key">By key</h2><${UsageTable} caption="Usage by API key" label="Key" rows=${u.key.data} /></section>`}<//>`;
}

// ---------------------------------------------------------------- webhooks

function EventChoices({ format, chosen }) {
  return html`<fieldset>
    <legend>Events <span class="muted small">(none ticked: all of them)</span></legend>
    <div class="checks">${CATALOGUES[format].map((ev) => html`<label class="check"><input type="checkbox" name="events" value=${ev} checked=${chosen?.includes(ev) ?? false} /> ${ev}</label>`)}</div>
    <div class="checks">${ALERT_EVENTS.map((ev) => html`<label class="check"><input type="checkbox" name="events" value=${ev} checked=${chosen?.includes(ev) ?? false} /> ${ev} <span class="muted small">(only when ticked)</span></label>`)}</div>
  </fieldset>`;
}

function Deliveries({ endpoint, onError }) {
  const state = useLoad(() => api('GET', `/dashboard/api/webhooks/${endpoint.id}/deliveries?limit=20`));
  useEffect(() => {
    // Deliveries happen in the background: look again a few times while the log is open.
    const timer = setInterval(() => state.reload(), 3000);
    return () => clearInterval(timer);
  }, []);
  const redeliver = async (d) => {
    try {
      await api('POST', `/dashboard/api/webhooks/${endpoint.id}/deliveries/${d.id}/redeliver`);
      state.reload();
    } catch (err) {
      onError(err);
    }
  };
  return html`<${Loading} state=${state}>${(page) => page.data.length === 0 ? html`<p class="muted">No deliveries yet.</p>` : html`<table class="table deliveries">
    <caption class="visually-hidden">Deliveries to ${endpoint.url}, newest first</caption>
    <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Last answer</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${page.data.map((d) => {
      const last = d.attempts[d.attempts.length - 1];
      return html`<tr key=${d.id} data-delivery=${d.id} data-status=${d.status}>
        <td data-label="Event">${d.event}</td>
        <td data-label="Status"><span class=${`badge badge-${d.status}`}>${d.status}</span></td>
        <td data-label="Last answer" data-testid="status-code">${last ? (last.statusCode ?? last.error ?? '—') : '—'}</td>
        <td data-label="Attempts">${d.attempts.length}</td>
        <td data-label="Created">${when(d.createdAt)}</td>
        <td><button type="button" class="secondary small" onClick=${() => redeliver(d)} aria-label=${`Redeliver ${d.event} ${d.id}`}>Redeliver</button></td>
      </tr>`;
    })}</tbody></table>`}<//>`;
}

function Endpoint({ e, onChange, onRemove, onSecret, onError }) {
  const [editing, setEditing] = useState(false);
  const [log, setLog] = useState(false);
  const [logKey, setLogKey] = useState(0);
  const act = async (work) => {
    try {
      await work();
    } catch (err) {
      onError(err);
    }
  };
  const save = (ev) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget);
    const events = form.getAll('events').map(String);
    return act(async () => {
      onChange(await api('PATCH', `/dashboard/api/webhooks/${e.id}`, {
        url: String(form.get('url')),
        description: String(form.get('description') ?? '') || null,
        enabled: form.get('enabled') === 'on',
        events: events.length ? events : CATALOGUES[e.format],
      }));
      setEditing(false);
    });
  };
  const test = () => act(async () => {
    await api('POST', `/dashboard/api/webhooks/${e.id}/test`);
    setLog(true);
    setLogKey((k) => k + 1);
  });
  return html`<article class="card endpoint" data-endpoint=${e.id} aria-labelledby=${`ep-${e.id}`}>
    <h3 id=${`ep-${e.id}`} class="mono break">${e.url}</h3>
    <p class="muted small">${e.format} · ${e.events.join(', ')}${e.description ? ` · ${e.description}` : ''}</p>
    <p>${e.enabled ? html`<span class="badge badge-succeeded">enabled</span>` : html`<span class="badge badge-failed">disabled</span> <span class="muted small">${e.disabledReason}</span>`}
      ${e.previousSecretExpiresAt ? html` <span class="muted small">previous secret valid until ${when(e.previousSecretExpiresAt)}</span>` : null}</p>
    <div class="actions">
      <button type="button" class="secondary small" onClick=${() => setEditing(!editing)} aria-expanded=${editing}>Edit</button>
      <button type="button" class="secondary small" onClick=${test}>Send test event</button>
      <button type="button" class="secondary small" onClick=${() => act(async () => onSecret(await api('POST', `/dashboard/api/webhooks/${e.id}/rotate-secret`)))}>Rotate secret</button>
      <button type="button" class="secondary small" onClick=${() => setLog(!log)} aria-expanded=${log}>Delivery log</button>
      <button type="button" class="danger small" onClick=${() => confirm(`Delete the endpoint ${e.url} and its delivery log?`) && act(async () => { await api('DELETE', `/dashboard/api/webhooks/${e.id}`); onRemove(e.id); })}>Delete</button>
    </div>
    ${editing ? html`<form class="stack edit" onSubmit=${save} aria-label=${`Edit ${e.url}`}>
      <label>URL<input name="url" type="url" required value=${e.url} /></label>
      <label>Description<input name="description" value=${e.description ?? ''} maxlength="500" /></label>
      <${EventChoices} format=${e.format} chosen=${e.events} />
      <label class="check"><input type="checkbox" name="enabled" checked=${e.enabled} /> Enabled</label>
      <div class="actions"><button type="submit">Save</button><button type="button" class="secondary" onClick=${() => setEditing(false)}>Cancel</button></div>
    </form>` : null}
    ${log ? html`<${Deliveries} key=${logKey} endpoint=${e} onError=${onError} />` : null}
  </article>`;
}

export function Webhooks() {
  const state = useLoad(() => api('GET', '/dashboard/api/webhooks'));
  const [format, setFormat] = useState('nested');
  const [secret, setSecret] = useState();
  const [error, setError] = useState();
  const create = async (e) => {
    e.preventDefault();
    const formEl = e.currentTarget;
    const form = new FormData(formEl);
    const events = form.getAll('events').map(String);
    setError(undefined);
    try {
      const created = await api('POST', '/dashboard/api/webhooks', {
        url: String(form.get('url')), format, ...(events.length ? { events } : {}),
        ...(form.get('description') ? { description: String(form.get('description')) } : {}),
      });
      setSecret({ label: `Signing secret of ${created.url}`, value: created.secret });
      formEl.reset();
      state.reload();
    } catch (err) {
      setError(err);
    }
  };
  const replace = (e) => state.set((d) => ({ data: d.data.map((x) => (x.id === e.id ? { ...x, ...e } : x)) }));
  return html`<h1>Webhooks</h1>
    <p class="muted">Each delivery is signed with the endpoint’s secret (<a href="/docs">how to verify</a>) and retried for about three days.</p>
    ${secret ? html`<${Secret} label=${secret.label} value=${secret.value} onDone=${() => setSecret(undefined)} />` : null}
    <${Alert} error=${error} />
    <section aria-labelledby="new-endpoint">
      <h2 id="new-endpoint">New endpoint</h2>
      <form class="stack" onSubmit=${create}>
        <label>URL<input name="url" type="url" required placeholder="https://example.com/hooks/gensvc" /></label>
        <fieldset>
          <legend>Format</legend>
          <div class="checks">
            <label class="check"><input type="radio" name="format" value="nested" checked=${format === 'nested'} onChange=${() => setFormat('nested')} /> nested: generation.completed and .failed, every kind</label>
            <label class="check"><input type="radio" name="format" value="flat" checked=${format === 'flat'} onChange=${() => setFormat('flat')} /> flat: every state change of videos and upscales</label>
          </div>
        </fieldset>
        <${EventChoices} format=${format} />
        <label>Description <span class="muted small">(optional)</span><input name="description" maxlength="500" /></label>
        <button type="submit">Add endpoint</button>
      </form>
    </section>
    <section aria-labelledby="endpoints">
      <h2 id="endpoints">Endpoints</h2>
      <${Loading} state=${state}>${(d) => d.data.length === 0 ? html`<p>No endpoints yet (up to 5).</p>` : d.data.map((e) => html`<${Endpoint} key=${e.id} e=${e}
        onChange=${replace}
        onRemove=${(id) => state.set((x) => ({ data: x.data.filter((y) => y.id !== id) }))}
        onSecret=${(r) => { replace(r); setSecret({ label: `New signing secret of ${r.url}`, value: r.secret }); }}
        onError=${setError} />`)}<//>
    </section>`;
}

// ---------------------------------------------------------------- playground

function describeQuote(q) {
  const p = q.params;
  if (q.kind === 'video') return `${p.seconds} s at ${p.resolution}, ${p.aspect}`;
  if (q.kind === 'image') return `${p.width}×${p.height}, ${p.quality}`;
  if (q.kind === 'upscale') return `${p.scale}×`;
  return q.free ? 'covered by the free allowance' : 'per reply';
}

export function Playground({ words }) {
  const models = useLoad(() => api('GET', '/api/v1/models'));
  const overview = useLoad(() => api('GET', '/dashboard/api/overview'));
  const [kind, setKind] = useState('video');
  const [form, setForm] = useState({ model: '', prompt: '', seconds: '', quality: '', aspect: '', imageUrl: '', scale: '2' });
  const [quote, setQuote] = useState();
  const [quoteError, setQuoteError] = useState();
  const [submitError, setSubmitError] = useState();
  const [result, setResult] = useState();
  const [busy, setBusy] = useState(false);
  const resultRef = useRef(null);

  const choices = (models.data?.data ?? []).filter((m) => m.kind === kind && (kind !== 'chat' || m.unit === 'reply'));
  const model = choices.find((m) => m.id === form.model);
  useEffect(() => {
    if (choices.length && !model) setForm((f) => ({ ...f, model: choices[0].id, quality: '', aspect: '', seconds: '' }));
  }, [kind, models.data]);

  const body = () => {
    const b = { kind, prompt: form.prompt.trim() || 'a lighthouse at dusk' };
    if (kind === 'chat') return { ...b, ...(form.model ? { model: form.model } : {}) };
    if (kind === 'upscale') return { kind, imageUrl: form.imageUrl, scale: Number(form.scale), ...(form.model ? { model: form.model } : {}) };
    return {
      ...b, model: form.model,
      ...(form.quality ? { quality: form.quality } : {}),
      ...(form.aspect ? { aspect: form.aspect } : {}),
      ...(kind === 'video' && form.seconds ? { seconds: Number(form.seconds) } : {}),
    };
  };

  // The price before submitting: the service prices the same body as POST /api/generate, holding nothing.
  useEffect(() => {
    if (!form.model && kind !== 'chat') return undefined;
    if (kind === 'upscale' && !form.imageUrl) {
      setQuote(undefined);
      return undefined;
    }
    const timer = setTimeout(() => {
      api('POST', '/dashboard/api/quote', body()).then((q) => { setQuote(q); setQuoteError(undefined); }, (err) => { setQuote(undefined); setQuoteError(err); });
    }, 250);
    return () => clearTimeout(timer);
  }, [kind, form.model, form.seconds, form.quality, form.aspect, form.prompt, form.imageUrl, form.scale]);

  useLive({
    generation: (g) => setResult((r) => (r && r.id === g.id ? g : r)),
    overview: (o) => overview.set(o),
  });
  useEffect(() => {
    if (result && !inFlight(words, result.status)) resultRef.current?.focus();
  }, [result?.status]);

  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setSubmitError(undefined);
    try {
      // Group C's own endpoint, with the session: the answer comes at once and the result follows live.
      const { generation } = await api('POST', '/api/generate', body(), { prefer: 'respond-async' });
      setResult((r) => (r && r.id === generation.id ? r : generation));
    } catch (err) {
      setSubmitError(err);
    }
    setBusy(false);
  };
  const set = (name) => (e) => setForm((f) => ({ ...f, [name]: e.currentTarget.value }));

  return html`<h1>Playground</h1>
    <div class="playground">
      <form class="stack" onSubmit=${submit} aria-describedby="price">
        <fieldset>
          <legend>Kind</legend>
          <div class="checks">${words.kinds.map((k) => html`<label class="check"><input type="radio" name="kind" value=${k} checked=${kind === k} onChange=${() => { setKind(k); setQuote(undefined); }} /> ${k}</label>`)}</div>
        </fieldset>
        <label>Model<select name="model" value=${form.model} onChange=${set('model')}>${choices.map((m) => html`<option value=${m.id}>${m.id}</option>`)}</select></label>
        ${kind === 'upscale'
          ? html`<label>Image URL<input name="imageUrl" type="url" required value=${form.imageUrl} onInput=${set('imageUrl')} placeholder="https://…/image.png" /></label>
              <label>Scale<select name="scale" value=${form.scale} onChange=${set('scale')}><option value="2">2×</option><option value="4">4×</option></select></label>`
          : html`<label>Prompt<textarea name="prompt" rows="3" required onInput=${set('prompt')} value=${form.prompt} placeholder="a lighthouse at dusk"></textarea></label>`}
        ${kind === 'video' && model ? html`
          <label>Seconds <span class="muted small">(${model.seconds.min}–${model.seconds.max}, default ${model.seconds.default})</span>
            <input name="seconds" type="number" inputmode="numeric" min=${model.seconds.min} max=${model.seconds.max} value=${form.seconds} onInput=${set('seconds')} placeholder=${String(model.seconds.default)} /></label>
          <label>Resolution<select name="quality" value=${form.quality} onChange=${set('quality')}><option value="">Default (${model.defaults.resolution})</option>${model.options.resolutions.map((r) => html`<option value=${r}>${r} · ${formatNumber(model.prices[r])} credits/s</option>`)}</select></label>` : null}
        ${(kind === 'video' || kind === 'image') && model ? html`
          <label>Aspect<select name="aspect" value=${form.aspect} onChange=${set('aspect')}><option value="">Default (${model.defaults.aspect})</option>${model.options.aspects.map((a) => html`<option value=${a}>${a}</option>`)}</select></label>` : null}
        ${kind === 'image' && model && model.options.qualities.length > 1 ? html`
          <label>Quality<select name="quality" value=${form.quality} onChange=${set('quality')}><option value="">Default (${model.defaults.quality})</option>${model.options.qualities.map((q) => html`<option value=${q}>${q}</option>`)}</select></label>` : null}
        <div id="price" class="price" aria-live="polite">
          ${quote ? html`<p><strong data-testid="quote">${credits(quote.credits)}</strong> <span class="muted">· ${quote.model} · ${describeQuote(quote)}</span></p>
            ${quote.affordable ? null : html`<p class="warning">Your balance (${credits(quote.balance)}) does not cover it.</p>`}` : null}
          ${quoteError ? html`<p class="warning">${quoteError.message}</p>` : null}
        </div>
        <${Alert} error=${submitError} />
        <button type="submit" disabled=${busy || !quote}>${busy ? 'Submitting…' : quote ? `Generate for ${credits(quote.credits)}` : 'Generate'}</button>
        <p class="muted small">Balance: <span data-testid="playground-balance">${overview.data ? credits(overview.data.balance) : '…'}</span>${overview.data?.holdsActive ? ` (${credits(overview.data.holdsActive)} on hold)` : ''}</p>
      </form>
      <section class="result" aria-labelledby="result-title" tabindex="-1" ref=${resultRef}>
        <h2 id="result-title">Result</h2>
        ${result ? html`<div data-result=${result.id} data-status=${result.status}>
            <p><${StatusBadge} status=${result.status} /> <span class="mono small">${result.id}</span></p>
            <p class="muted small">${result.status === 'succeeded' ? `${credits(result.creditsCharged)} charged` : result.status === 'failed' ? `${result.error?.message ?? 'failed'} Nothing was charged.` : 'Following it live…'}</p>
            <${Preview} g=${result} large=${true} />
            ${inFlight(words, result.status) ? html`<button type="button" class="danger small" onClick=${async () => { try { setResult(await api('POST', `/dashboard/api/generations/${result.id}/cancel`)); } catch (err) { setSubmitError(err); } }}>Cancel</button>` : null}
          </div>`
          : html`<p class="muted">Submit to see the result here, live.</p>`}
      </section>
    </div>`;
}
