// Usage over the last 30 days: spend per day (a chart), by model and by key, with chats' tokens in detail.
import { html } from 'htm/preact';
import uPlot from 'uplot';
import { useEffect, useRef } from 'preact/hooks';
import { api, credits, formatNumber, Loading, useLoad } from '../lib.js';

// Credits charged per day (UTC) over the last 30 days, drawn by uPlot on a canvas.
function SpendChart({ days }) {
  const box = useRef(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const xs = days.map((d) => Date.parse(`${d.group}T00:00:00Z`) / 1000);
    const plot = new uPlot(
      {
        width: Math.max(280, el.clientWidth),
        height: 240,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        series: [
          {},
          {
            label: 'Credits charged',
            stroke: '#2563eb',
            fill: 'rgba(37, 99, 235, 0.15)',
            width: 2,
            paths: uPlot.paths.bars({ size: [0.7, 40] }),
          },
        ],
        axes: [{}, { label: 'credits' }],
        legend: { show: true },
      },
      [xs, days.map((d) => d.creditsCharged)],
      el,
    );
    const resize = () => plot.setSize({ width: Math.max(280, el.clientWidth), height: 240 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [days]);
  return html`<div
    ref=${box}
    class="chart"
    role="img"
    aria-label="Credits charged per day, last 30 days"
    data-testid="spend-chart"
  ></div>`;
}

// A chat's tokens in detail, as its provider counted them: shown where some generation has any.
const TOKEN_DETAILS = [
  ['reasoningTokens', 'Reasoning tokens'],
  ['inputTokens', 'Input tokens'],
  ['cachedInputTokens', 'Cached input'],
  ['cacheWriteTokens', 'Cache writes'],
];
const hasTokens = (r) => r.outputTokens + r.inputTokens > 0;

function UsageTable({ caption, label, rows }) {
  if (rows.length === 0) return html`<p class="muted">Nothing in this period.</p>`;
  const details = rows.some(hasTokens) ? TOKEN_DETAILS : [];
  return html`<table class="table">
    <caption class="visually-hidden">
      ${caption}
    </caption>
    <thead>
      <tr>
        <th scope="col">${label}</th>
        <th scope="col">Credits charged</th>
        <th scope="col">Generations</th>
        <th scope="col">Failed</th>
        <th scope="col">Output tokens</th>
        ${details.map(([field, name]) => html`<th key=${field} scope="col">${name}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r) =>
          html`<tr key=${r.group} data-usage=${r.group}>
            <td data-label=${label} class="mono">${r.group}</td>
            <td data-label="Credits charged">${formatNumber(r.creditsCharged)}</td>
            <td data-label="Generations">${formatNumber(r.generations)}</td>
            <td data-label="Failed">${formatNumber(r.failed)}</td>
            <td data-label="Output tokens">${formatNumber(r.outputTokens)}</td>
            ${details.map(
              ([field, name]) =>
                html`<td key=${field} data-label=${name}>${hasTokens(r) ? formatNumber(r[field]) : '—'}</td>`,
            )}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

// The period's chat tokens in one sentence, as OpenAI counts them: the cache within the input, the reasoning within the output.
function TokenSummary({ total }) {
  if (!hasTokens(total)) return null;
  return html`<p class="muted" data-testid="token-summary">
    Chats read ${formatNumber(total.inputTokens)} input tokens (${formatNumber(total.cachedInputTokens)} from the prompt
    cache, ${formatNumber(total.cacheWriteTokens)} written to it) and wrote ${formatNumber(total.outputTokens)} output
    tokens (${formatNumber(total.reasoningTokens)} of them reasoning), charged per output token.
  </p>`;
}

export function Usage() {
  const state = useLoad(async () => {
    const [day, model, key] = await Promise.all(
      ['day', 'model', 'key'].map((g) => api('GET', `/dashboard/api/usage?group_by=${g}`)),
    );
    return { day, model, key };
  });
  return html`<h1>Usage</h1>
    <${Loading} state=${state}
      >${(u) =>
        html` <p class="muted">
            The last 30 days (UTC): ${credits(u.day.total.creditsCharged)} charged for
            ${formatNumber(u.day.total.generations)} generations, ${formatNumber(u.day.total.failed)} failed (free).
          </p>
          <${TokenSummary} total=${u.day.total} />
          <section aria-labelledby="per-day">
            <h2 id="per-day">Spend per day</h2>
            <${SpendChart} days=${u.day.data} />
          </section>
          <section aria-labelledby="per-model">
            <h2 id="per-model">By model</h2>
            <${UsageTable} caption="Usage by model" label="Model" rows=${u.model.data} />
          </section>
          <section aria-labelledby="per-key">
            <h2 id="per-key">By key</h2>
            <${UsageTable} caption="Usage by API key" label="Key" rows=${u.key.data} />
          </section>`}<//
    >`;
}
