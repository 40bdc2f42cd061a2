// The playground: a generation of any kind, priced before it is submitted, its result followed live.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Alert, api, credits, formatNumber, inFlight, Preview, StatusBadge, useLive, useLoad } from '../lib.js';

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
  const [form, setForm] = useState({
    model: '',
    prompt: '',
    seconds: '',
    quality: '',
    aspect: '',
    imageUrl: '',
    scale: '2',
  });
  const [quote, setQuote] = useState();
  const [quoteError, setQuoteError] = useState();
  const [submitError, setSubmitError] = useState();
  const [result, setResult] = useState();
  const [busy, setBusy] = useState(false);
  const resultRef = useRef(null);

  const choices = (models.data?.data ?? []).filter((m) => m.kind === kind && (kind !== 'chat' || m.unit === 'reply'));
  const model = choices.find((m) => m.id === form.model);
  // Decided on the form as it is when the effect runs, not as it was rendered: effects run after
  // paint, and a model picked in between must stand.
  useEffect(() => {
    if (!choices.length) return;
    setForm((f) =>
      choices.some((m) => m.id === f.model) ? f : { ...f, model: choices[0].id, quality: '', aspect: '', seconds: '' },
    );
  }, [kind, models.data]);

  const body = () => {
    const b = { kind, prompt: form.prompt.trim() || 'a lighthouse at dusk' };
    if (kind === 'chat') return { ...b, ...(form.model ? { model: form.model } : {}) };
    if (kind === 'upscale')
      return { kind, imageUrl: form.imageUrl, scale: Number(form.scale), ...(form.model ? { model: form.model } : {}) };
    return {
      ...b,
      model: form.model,
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
      api('POST', '/dashboard/api/quote', body()).then(
        (q) => {
          setQuote(q);
          setQuoteError(undefined);
        },
        (err) => {
          setQuote(undefined);
          setQuoteError(err);
        },
      );
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
          <div class="checks">
            ${words.kinds.map(
              (k) =>
                html`<label class="check"
                  ><input
                    type="radio"
                    name="kind"
                    value=${k}
                    checked=${kind === k}
                    onChange=${() => {
                      setKind(k);
                      setQuote(undefined);
                    }}
                  />
                  ${k}</label
                >`,
            )}
          </div>
        </fieldset>
        <label
          >Model<select name="model" value=${form.model} onChange=${set('model')}>
            ${choices.map((m) => html`<option value=${m.id}>${m.id}</option>`)}
          </select></label
        >
        ${
          kind === 'upscale'
            ? html`<label
                  >Image URL<input
                    name="imageUrl"
                    type="url"
                    required
                    value=${form.imageUrl}
                    onInput=${set('imageUrl')}
                    placeholder="https://…/image.png"
                /></label>
                <label
                  >Scale<select name="scale" value=${form.scale} onChange=${set('scale')}>
                    <option value="2">2×</option>
                    <option value="4">4×</option>
                  </select></label
                >`
            : html`<label
                >Prompt<textarea
                  name="prompt"
                  rows="3"
                  required
                  onInput=${set('prompt')}
                  value=${form.prompt}
                  placeholder="a lighthouse at dusk"
                ></textarea>
              </label>`
        }
        ${
          kind === 'video' && model
            ? html` <label
                  >Seconds
                  <span class="muted small"
                    >(${model.seconds.min}–${model.seconds.max}, default ${model.seconds.default})</span
                  >
                  <input
                    name="seconds"
                    type="number"
                    inputmode="numeric"
                    min=${model.seconds.min}
                    max=${model.seconds.max}
                    value=${form.seconds}
                    onInput=${set('seconds')}
                    placeholder=${String(model.seconds.default)}
                /></label>
                <label
                  >Resolution<select name="quality" value=${form.quality} onChange=${set('quality')}>
                    <option value="">Default (${model.defaults.resolution})</option>
                    ${model.options.resolutions.map((r) => html`<option value=${r}>${r} · ${formatNumber(model.prices[r])} credits/s</option>`)}
                  </select></label
                >`
            : null
        }
        ${
          (kind === 'video' || kind === 'image') && model
            ? html` <label
                >Aspect<select name="aspect" value=${form.aspect} onChange=${set('aspect')}>
                  <option value="">Default (${model.defaults.aspect})</option>
                  ${model.options.aspects.map((a) => html`<option value=${a}>${a}</option>`)}
                </select></label
              >`
            : null
        }
        ${
          kind === 'image' && model && model.options.qualities.length > 1
            ? html` <label
                >Quality<select name="quality" value=${form.quality} onChange=${set('quality')}>
                  <option value="">Default (${model.defaults.quality})</option>
                  ${model.options.qualities.map((q) => html`<option value=${q}>${q}</option>`)}
                </select></label
              >`
            : null
        }
        <div id="price" class="price" aria-live="polite">
          ${
            quote
              ? html`<p>
                    <strong data-testid="quote">${credits(quote.credits)}</strong>
                    <span class="muted">· ${quote.model} · ${describeQuote(quote)}</span>
                  </p>
                  ${quote.affordable ? null : html`<p class="warning">Your balance (${credits(quote.balance)}) does not cover it.</p>`}`
              : null
          }
          ${quoteError ? html`<p class="warning">${quoteError.message}</p>` : null}
        </div>
        <${Alert} error=${submitError} />
        <button type="submit" disabled=${busy || !quote}>
          ${busy ? 'Submitting…' : quote ? `Generate for ${credits(quote.credits)}` : 'Generate'}
        </button>
        <p class="muted small">
          Balance:
          <span data-testid="playground-balance">${overview.data ? credits(overview.data.balance) : '…'}</span
          >${overview.data?.holdsActive ? ` (${credits(overview.data.holdsActive)} on hold)` : ''}
        </p>
      </form>
      <section class="result" aria-labelledby="result-title" tabindex="-1" ref=${resultRef}>
        <h2 id="result-title">Result</h2>
        ${
          result
            ? html`<div data-result=${result.id} data-status=${result.status}>
                <p><${StatusBadge} status=${result.status} /> <span class="mono small">${result.id}</span></p>
                <p class="muted small">
                  ${result.status === 'succeeded' ? `${credits(result.creditsCharged)} charged` : result.status === 'failed' ? `${result.error?.message ?? 'failed'} Nothing was charged.` : 'Following it live…'}
                </p>
                <${Preview} g=${result} large=${true} />
                ${
                  inFlight(words, result.status)
                    ? html`<button
                        type="button"
                        class="danger small"
                        onClick=${async () => {
                          try {
                            setResult(await api('POST', `/dashboard/api/generations/${result.id}/cancel`));
                          } catch (err) {
                            setSubmitError(err);
                          }
                        }}
                      >
                        Cancel
                      </button>`
                    : null
                }
              </div>`
            : html`<p class="muted">Submit to see the result here, live.</p>`
        }
      </section>
    </div>`;
}
