import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { createBatchActivities, createBatchWaker, createChoiceStopper } from './batches/lines';
import type { BatchLineLimits } from './batches/lines';
import { createLedgerActivities } from './generation/ledger';
import { createInPlaceProviderActivities } from './generation/provider';
import type { createProviderActivities } from './generation/provider';
import type { Provider } from '../core/providers/types';
import type { ProviderRunPermits } from '../core/providers/run-permits';
import type { OutputStore } from '../core/storage/output-store';
import { createReconcileActivities } from './generation/reconcile';
import type { ReconcileDeps } from './generation/reconcile';
import { createSlotActivities, createVideoSlotWaker } from './generation/slots';

export interface ActivityDeps {
  pool: pg.Pool;
  videoConcurrency: number;
  /** The reconciler asks Temporal about workflows. */
  client: Client;
  deadlines: ReconcileDeps['deadlines'];
  /** How many of a batch's (and an account's batches') lines run at once. */
  batchLimits: BatchLineLimits;
  /** Provider runs in place (short ones, when a permit is free): the provider, where outputs go, and the process's permits. */
  provider: Provider;
  store: OutputStore;
  providerPermits: ProviderRunPermits;
  /** At most this many runs in place at once (each keeps its workflow task open while it runs). */
  providerInPlaceLimit: number;
}

/**
 * The activities of the workflows' own task queue, bound to real dependencies by the workflow
 * worker: ledger steps, video slot claims, the reconciler's and a batch's steps, and provider runs in
 * place. Other provider runs have a queue of their own (core/workflow-contract.ts,
 * providerTaskQueueOf), served by createProviderActivities.
 */
export function createWorkflowQueueActivities(deps: ActivityDeps) {
  const wakeVideoWaiters = createVideoSlotWaker(deps);
  const wakeBatch = createBatchWaker(deps.client);
  const stopChoices = createChoiceStopper(deps.client);
  return {
    ...createLedgerActivities({ ...deps, wakeVideoWaiters, wakeBatch, stopChoices }),
    ...createSlotActivities(deps),
    ...createReconcileActivities({ ...deps, wakeVideoWaiters, wakeBatch, stopChoices }),
    ...createBatchActivities({ ...deps, limits: deps.batchLimits }),
    ...createInPlaceProviderActivities({
      ...deps,
      permits: deps.providerPermits,
      inPlaceLimit: deps.providerInPlaceLimit,
    }),
  };
}

/** Every activity the generation workflow calls, on either queue: what its proxies are typed with. */
export type GenerationActivities = ReturnType<typeof createWorkflowQueueActivities> &
  ReturnType<typeof createProviderActivities>;
