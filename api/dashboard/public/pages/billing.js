// Buying credits through Stripe Checkout: the account is credited when Stripe reports the payment.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { Alert, api, formatNumber, Loading, may, useLoad } from '../lib.js';

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
    <${Loading} state=${limits}
      >${(l) =>
        html` <p>
            Buy credits with a card through Stripe: 1 credit = ${l.eurPerCredit.toFixed(2)} EUR,
            ${formatNumber(l.minCredits)} to ${formatNumber(l.maxCredits)} at a time. They are added to your balance
            once Stripe confirms the payment, and listed in the ledger as a top-up.
          </p>
          ${
            may('billing')
              ? html`<form class="threshold" onSubmit=${buy} aria-label="Buy credits">
                  <label
                    >Credits
                    <input
                      name="credits"
                      type="number"
                      min=${l.minCredits}
                      max=${l.maxCredits}
                      step="1"
                      required
                      value=${amount}
                      onInput=${(e) => setAmount(e.currentTarget.value)}
                  /></label>
                  <button type="submit" disabled=${busy}>
                    ${busy ? 'Opening Stripe…' : amount ? `Pay ${(Number(amount) * l.eurPerCredit).toFixed(2)} EUR` : 'Pay'}
                  </button>
                </form>`
              : html`<p class="muted">Your role does not buy credits: an owner or a billing member does.</p>`
          }`}<//
    >`;
}
