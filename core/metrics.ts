import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The service's Prometheus metrics (served at GET /metrics). One registry per process: `npm start`
 * runs API and worker in one process, so one scrape sees both; a worker on its own serves its
 * registry on METRICS_PORT. Counters of money and outcomes are incremented where the ledger
 * transaction actually moved (never for an idempotent repeat), so they count each event once.
 */
export const registry = new Registry();
// The event-loop lag histogram samples with a timer: at prom-client's default (every 10 ms) that
// timer alone woke an idle service 100 times a second, most of its idle CPU (docs/decisions/0058-metrics-and-logs.md). A stall that matters still delays the next sample.
const EVENT_LOOP_SAMPLE_MS = 250;
collectDefaultMetrics({ register: registry, prefix: 'gensvc_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

const seconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export const metrics = {
  httpRequests: new Counter({
    name: 'gensvc_http_requests_total',
    help: 'HTTP requests answered, by route pattern and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  }),
  httpDuration: new Histogram({
    name: 'gensvc_http_request_duration_seconds',
    help: 'Time to answer an HTTP request',
    labelNames: ['method', 'route'],
    buckets: seconds,
    registers: [registry],
  }),
  admissions: new Counter({
    name: 'gensvc_generations_admitted_total',
    help: 'Generations admitted (hold placed or free reply claimed)',
    labelNames: ['kind'],
    registers: [registry],
  }),
  admissionDuration: new Histogram({
    name: 'gensvc_admission_duration_seconds',
    help: 'From a priced request to its admission: hold placed, and the workflow started when the client waits for the result',
    labelNames: ['kind'],
    buckets: seconds,
    registers: [registry],
  }),
  finished: new Counter({
    name: 'gensvc_generations_finished_total',
    help: 'Generations that reached a final status, with the error code of failed ones',
    labelNames: ['kind', 'status', 'code'],
    registers: [registry],
  }),
  creditsHeld: new Counter({
    name: 'gensvc_credits_held_total',
    help: 'Credits placed on hold',
    registers: [registry],
  }),
  creditsCharged: new Counter({
    name: 'gensvc_credits_charged_total',
    help: 'Credits charged when holds settled',
    registers: [registry],
  }),
  creditsReleased: new Counter({
    name: 'gensvc_credits_released_total',
    help: 'Credits released back to balances (failures and unused parts of holds)',
    registers: [registry],
  }),
  providerDuration: new Histogram({
    name: 'gensvc_provider_duration_seconds',
    help: 'Time a provider took to run a job',
    labelNames: ['kind', 'outcome'],
    buckets: seconds,
    registers: [registry],
  }),
  providerActivitiesRunning: new Gauge({
    name: 'gensvc_provider_activities_running',
    help: 'Provider activities running in this process now: the provider worker slots in use',
    registers: [registry],
  }),
  upstreamWaits: new Counter({
    name: 'gensvc_upstream_waits_total',
    help: 'Looks at a waiting upstream job that found it running and left it waiting, holding no worker slot',
    labelNames: ['upstream'],
    registers: [registry],
  }),
  videoSlotParks: new Counter({
    name: 'gensvc_video_slot_parks_total',
    help: "Looks of a queued video at its account's slots that found none free and parked, holding no worker slot",
    registers: [registry],
  }),
  videoSlotWakes: new Counter({
    name: 'gensvc_video_slot_wakes_total',
    help: 'Parked video waits completed by whoever freed a slot: completed, stale (its attempt had timed out) or failed',
    labelNames: ['outcome'],
    registers: [registry],
  }),
  upstreamCallbacks: new Counter({
    name: 'gensvc_upstream_callbacks_total',
    help: 'Webhooks received from upstreams, by protocol and outcome',
    labelNames: ['protocol', 'outcome'],
    registers: [registry],
  }),
  webhookDeliveries: new Counter({
    name: 'gensvc_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  }),
  holdsActive: new Gauge({
    name: 'gensvc_holds_active',
    help: 'Holds currently held (read from PostgreSQL at scrape time)',
    registers: [registry],
  }),
  creditsOnHold: new Gauge({
    name: 'gensvc_credits_on_hold',
    help: 'Credits currently held (read from PostgreSQL at scrape time)',
    registers: [registry],
  }),
};
