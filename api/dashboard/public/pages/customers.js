// The platform's own end users: every customer's default budget and rate limit, a customer's own,
// and what each spent (a chart, a table and a CSV to invoice them from).
import { html } from 'htm/preact';
import uPlot from 'uplot';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Alert, api, credits, formatNumber, Loading, may, PERIODS, periodWords, useLoad, when } from '../lib.js';

/** A budget as the forms send it: null when its credits are left empty. */
function budgetOf(form) {
  const max = String(form.get('maxCredits') ?? '').trim();
  return max === '' ? null : { maxCredits: Number(max), period: String(form.get('period')) };
}
const rateOf = (form) => {
  const rate = String(form.get('rate') ?? '').trim();
  return rate === '' ? null : Number(rate);
};

// Uncontrolled (defaultValue): a re-render of the page (a list loading) keeps what was typed.
function BudgetFields({ budget, rate }) {
  return html`<label
      >Budget (credits) <span class="muted small">(empty: none)</span>
      <input name="maxCredits" type="number" min="0" step="any" defaultValue=${budget?.maxCredits ?? ''}
    /></label>
    <label
      >Period
      <select name="period">
        ${PERIODS.map(([v, label]) => html`<option value=${v} selected=${(budget?.period ?? 'month') === v}>${label}</option>`)}
      </select></label
    >
    <label
      >Requests per minute <span class="muted small">(empty: none)</span>
      <input name="rate" type="number" min="1" step="1" defaultValue=${rate ?? ''}
    /></label>`;
}

function Defaults({ onSaved }) {
  const state = useLoad(() => api('GET', '/dashboard/api/customer-defaults'));
  const [error, setError] = useState();
  const [saved, setSaved] = useState(false);
  const save = async (e) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    setError(undefined);
    try {
      const d = await api('PUT', '/dashboard/api/customer-defaults', {
        budget: budgetOf(form),
        rateLimitPerMinute: rateOf(form),
      });
      state.set(d);
      setSaved(true);
      onSaved();
    } catch (err) {
      setError(err);
    }
  };
  return html`<section aria-labelledby="defaults">
    <h2 id="defaults">Every customer</h2>
    <${Alert} error=${error} />
    ${saved ? html`<${Alert} kind="notice">Saved: it applies from the next request.<//>` : null}
    <${Loading} state=${state}
      >${(d) =>
        may('customers')
          ? html`<form class="stack" onSubmit=${save} aria-label="Default limits">
              <${BudgetFields} budget=${d.budget} rate=${d.rateLimitPerMinute} />
              <button type="submit">Save defaults</button>
            </form>`
          : html`<p data-testid="defaults">
              ${d.budget ? `${credits(d.budget.maxCredits)} ${periodWords(d.budget.period)}` : 'No budget'},
              ${d.rateLimitPerMinute ? `${d.rateLimitPerMinute} requests per minute` : 'no rate limit'}
            </p>`}<//
    >
  </section>`;
}

function OwnLimits({ onSaved }) {
  const [error, setError] = useState();
  const save = async (e) => {
    e.preventDefault();
    const formEl = e.currentTarget;
    const form = new FormData(formEl);
    const customer = String(form.get('customer')).trim();
    setError(undefined);
    try {
      await api('PUT', `/dashboard/api/customers/${encodeURIComponent(customer)}/limits`, {
        budget: budgetOf(form),
        rateLimitPerMinute: rateOf(form),
      });
      formEl.reset();
      onSaved();
    } catch (err) {
      setError(err);
    }
  };
  return html`<section aria-labelledby="own">
    <h2 id="own">One customer’s own limits</h2>
    <${Alert} error=${error} />
    <form class="stack" onSubmit=${save} aria-label="A customer's own limits">
      <label>Customer <input name="customer" required maxlength="256" placeholder="your id for your user" /></label>
      <${BudgetFields} />
      <button type="submit">Save for this customer</button>
    </form>
  </section>`;
}

function CustomerTable({ rows, onReset }) {
  if (rows.length === 0)
    return html`<p class="muted">No customer yet: name one with X-Customer-Id or the customer field.</p>`;
  return html`<table class="table">
    <caption class="visually-hidden">
      Customers and their limits
    </caption>
    <thead>
      <tr>
        <th scope="col">Customer</th>
        <th scope="col">Spent this period</th>
        <th scope="col">Budget</th>
        <th scope="col">Rate limit</th>
        <th scope="col">Since</th>
        <th scope="col"><span class="visually-hidden">Actions</span></th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (c) =>
          html`<tr key=${c.customer} data-customer=${c.customer}>
            <td data-label="Customer" class="mono">${c.customer}</td>
            <td data-label="Spent this period">${c.budget ? formatNumber(c.budget.spentCredits) : '—'}</td>
            <td data-label="Budget">
              ${c.budget ? `${credits(c.budget.maxCredits)} ${periodWords(c.budget.period)}` : 'none'}
              <span class="muted small"
                >${c.budget?.source === 'customer' ? ' (own)' : c.budget ? ' (default)' : ''}</span
              >
            </td>
            <td data-label="Rate limit">${c.rateLimitPerMinute ? `${c.rateLimitPerMinute}/min` : 'none'}</td>
            <td data-label="Since">${when(c.createdAt)}</td>
            <td>
              ${
                may('customers') && Object.keys(c.own).length > 0
                  ? html`<button type="button" class="secondary small" onClick=${() => onReset(c.customer)}>
                      Use defaults
                    </button>`
                  : null
              }
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

// Credits charged per customer over the chosen period, one bar each.
function CustomerChart({ rows, period }) {
  const box = useRef(null);
  useEffect(() => {
    const el = box.current;
    if (!el || rows.length === 0) return undefined;
    const plot = new uPlot(
      {
        width: Math.max(280, el.clientWidth),
        height: 220,
        scales: { x: { time: false } },
        series: [
          {},
          {
            label: 'Credits charged',
            stroke: '#2563eb',
            fill: 'rgba(37, 99, 235, 0.15)',
            paths: uPlot.paths.bars({ size: [0.6, 60] }),
          },
        ],
        axes: [{ values: (_, ticks) => ticks.map((t) => rows[t]?.group ?? '') }, { label: 'credits' }],
      },
      [rows.map((_, i) => i), rows.map((r) => r.creditsCharged)],
      el,
    );
    return () => plot.destroy();
  }, [rows]);
  return html`<div
    ref=${box}
    class="chart"
    role="img"
    aria-label=${`Credits charged per customer, ${period}`}
    data-testid="customer-chart"
  ></div>`;
}

const DAY_MS = 86_400_000;
const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);

/** A period of whole UTC days, `to` included, as the usage API takes it (`to` exclusive). */
function usageRange({ from, to }) {
  return `from=${from}T00:00:00Z&to=${isoDay(Date.parse(`${to}T00:00:00Z`) + DAY_MS)}T00:00:00Z`;
}

// The period a platform invoices its users for: the last 30 days until another is chosen. What is
// typed lives in the form's own state, so a re-render of the page (a list loading) keeps it.
function PeriodForm({ period, onChange }) {
  const [draft, setDraft] = useState(period);
  const set = (name) => (event) => setDraft((d) => ({ ...d, [name]: event.currentTarget.value }));
  const submit = (event) => {
    event.preventDefault();
    onChange(draft);
  };
  return html`<form class="threshold" aria-label="Spend period" onSubmit=${submit}>
    <label
      >From <input type="date" name="from" required value=${draft.from} max=${draft.to} onInput=${set('from')}
    /></label>
    <label>To (included) <input type="date" name="to" required value=${draft.to} onInput=${set('to')} /></label>
    <button type="submit">Show</button>
  </form>`;
}

function Spend() {
  const [period, setPeriod] = useState(() => ({ from: isoDay(Date.now() - 29 * DAY_MS), to: isoDay(Date.now()) }));
  const range = usageRange(period);
  const words = `${period.from} to ${period.to} (UTC)`;
  const state = useLoad(() => api('GET', `/dashboard/api/usage?group_by=customer&${range}`), [range]);
  return html`<section aria-labelledby="spend">
    <h2 id="spend">Spend per customer</h2>
    <${PeriodForm} period=${period} onChange=${setPeriod} />
    <p data-testid="spend-period">${words}</p>
    <${Loading} state=${state}
      >${(u) =>
        html`<${CustomerChart} rows=${u.data} period=${words} />
          <table class="table">
            <caption class="visually-hidden">
              Usage by customer
            </caption>
            <thead>
              <tr>
                <th scope="col">Customer</th>
                <th scope="col">Credits charged</th>
                <th scope="col">Generations</th>
                <th scope="col">Failed</th>
              </tr>
            </thead>
            <tbody>
              ${u.data.map(
                (r) =>
                  html`<tr key=${r.group} data-usage=${r.group}>
                    <td data-label="Customer" class="mono">${r.group}</td>
                    <td data-label="Credits charged">${formatNumber(r.creditsCharged)}</td>
                    <td data-label="Generations">${formatNumber(r.generations)}</td>
                    <td data-label="Failed">${formatNumber(r.failed)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
          <p>
            <a
              href=${`/dashboard/api/usage?group_by=customer&${range}&format=csv`}
              download=${`usage-by-customer-${period.from}-${period.to}.csv`}
              >Download as CSV</a
            >
          </p>`}<//
    >
  </section>`;
}

export function Customers() {
  const list = useLoad(() => api('GET', '/dashboard/api/customers?limit=200'));
  const [error, setError] = useState();
  const reset = async (customer) => {
    try {
      await api('DELETE', `/dashboard/api/customers/${encodeURIComponent(customer)}/limits`);
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  return html`<h1>Customers</h1>
    <p class="muted">
      Your own users, named on each request (X-Customer-Id, or customer / user). A request past a customer’s budget is
      refused with 402 customer_budget_exceeded; past its rate limit, with 429.
    </p>
    <${Defaults} onSaved=${() => list.reload()} />
    ${may('customers') ? html`<${OwnLimits} onSaved=${() => list.reload()} />` : null}
    <section aria-labelledby="list">
      <h2 id="list">Customers</h2>
      <${Alert} error=${error} />
      <${Loading} state=${list}>${(d) => html`<${CustomerTable} rows=${d.data} onReset=${reset} />`}<//>
    </section>
    <${Spend} />`;
}
