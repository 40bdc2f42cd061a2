// The overview: the balance, what is on hold, the free allowance and the plan, followed live;
// the low-balance alert and the latest alerts; and the next steps.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import {
  Alert,
  api,
  credits,
  formatNumber,
  isoTitle,
  Loading,
  may,
  periodWords,
  useLive,
  useLoad,
  when,
} from '../lib.js';

export function Overview() {
  const state = useLoad(() => api('GET', '/dashboard/api/overview'));
  // Each move of the balance may have crossed the alert's threshold: the alerts are read again.
  const [moves, setMoves] = useState(0);
  useLive({
    overview: (o) => {
      state.set(o);
      setMoves((n) => n + 1);
    },
  });
  const checkout = new URLSearchParams(location.search).get('checkout');
  return html`<h1>Overview</h1>
    ${checkout === 'success' ? html`<${Alert} kind="notice">Thank you: the credits are added as soon as Stripe confirms the payment.<//>` : null}
    <${Loading} state=${state}
      >${(o) =>
        html` <dl class="cards">
          <div class="card">
            <dt>Balance</dt>
            <dd data-testid="balance">${credits(o.balance)}</dd>
            <dd class="muted small">Available to spend now</dd>
          </div>
          <div class="card">
            <dt>On hold</dt>
            <dd data-testid="holds">${credits(o.holdsActive)}</dd>
            <dd class="muted small">Held by generations in flight</dd>
          </div>
          <div class="card">
            <dt>Free chat replies</dt>
            <dd>${formatNumber(o.trial.chatLeft)} of ${formatNumber(o.trial.chatCap)} left</dd>
            <dd class="muted small">${formatNumber(o.trial.chatUsed)} used</dd>
          </div>
          <div class="card">
            <dt>Plan</dt>
            <dd class="capital">${o.plan}</dd>
            <dd class="muted small">${formatNumber(o.rateLimitPerMinute)} requests a minute per key</dd>
          </div>
        </dl>`}<//
    >
    <${Alerts} moves=${moves} />
    <h2>Next steps</h2>
    <ul class="links">
      <li><a href="/dashboard/keys">Create an API key</a> to call the API from your code.</li>
      <li><a href="/dashboard/playground">Try a model in the playground</a>, with its price before you submit.</li>
      <li><a href="/dashboard/webhooks">Register a webhook</a> to hear when generations finish.</li>
      <li><a href="/docs">Read the API reference</a>.</li>
    </ul>`;
}

// The low-balance threshold and the latest alerts (balance.low, key.budget_reached, customer.budget_reached).
function Alerts({ moves }) {
  const state = useLoad(() => api('GET', '/dashboard/api/alerts'), [moves]);
  const [error, setError] = useState();
  const save = async (e) => {
    e.preventDefault();
    const value = String(new FormData(e.currentTarget).get('threshold') ?? '').trim();
    try {
      state.set(
        await api('PUT', '/dashboard/api/low-balance', { thresholdCredits: value === '' ? null : Number(value) }),
      );
      setError(undefined);
    } catch (err) {
      setError(err);
    }
  };
  const describe = (a) =>
    a.event === 'balance.low'
      ? `Available credits fell to ${credits(a.amountCredits)}, below ${credits(a.limitCredits)}`
      : a.event === 'customer.budget_reached'
        ? `Customer ${a.customer} spent ${credits(a.amountCredits)} of its ${credits(a.limitCredits)} budget ${periodWords(a.period)}`
        : `Key ${a.keyId} spent ${credits(a.amountCredits)} of its ${credits(a.limitCredits)} budget ${periodWords(a.period)}`;
  return html`<section aria-labelledby="alerts">
    <h2 id="alerts">Alerts</h2>
    <${Alert} error=${error} />
    <${Loading} state=${state}
      >${(a) =>
        html` ${
            may('billing')
              ? html`<form class="threshold" onSubmit=${save} aria-label="Low-balance alert">
                  <label
                    >Alert me below (credits)
                    <input
                      name="threshold"
                      type="number"
                      min="0"
                      step="any"
                      placeholder="no alert"
                      defaultValue=${a.thresholdCredits ?? ''}
                  /></label>
                  <button type="submit" class="small">Save</button>
                </form>`
              : html`<p>
                  Low-balance alert: ${a.thresholdCredits === null ? 'none' : `below ${credits(a.thresholdCredits)}`}
                </p>`
          }
          <p class="muted small">
            Sent once each time the available credits fall below it, as <code>balance.low</code> to the webhooks that
            tick it; a key’s used-up budget is sent as <code>key.budget_reached</code>.
          </p>
          ${
            a.data.length === 0
              ? html`<p class="muted" data-testid="no-alerts">No alerts yet.</p>`
              : html`<ul class="alerts" data-testid="alerts">
                  ${a.data.map(
                    (x) =>
                      html`<li key=${x.id} data-alert=${x.event}>
                        <span class="badge">${x.event}</span> ${describe(x)}
                        <time class="muted small" datetime=${isoTitle(x.createdAt)}>${when(x.createdAt)}</time>
                      </li>`,
                  )}
                </ul>`
          }`}<//
    >
  </section>`;
}
