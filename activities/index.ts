import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { createLedgerActivities } from './generation/ledger';
import type { createProviderActivities } from './generation/provider';
import { createReconcileActivities } from './generation/reconcile';
import type { ReconcileDeps } from './generation/reconcile';
import { createSlotActivities, createVideoSlotWaker } from './generation/slots';

export interface ActivityDeps {
  pool: pg.Pool;
  videoConcurrency: number;
  /** The reconciler asks Temporal about workflows. */
  client: Client;
  deadlines: ReconcileDeps['deadlines'];
}

/**
 * The activities of the workflows' own task queue, bound to real dependencies by the workflow
 * worker: ledger steps, video slot claims and the reconciler's. Provider runs have a queue of their
 * own (core/workflow-contract.ts, providerTaskQueueOf), served by createProviderActivities.
 */
export function createWorkflowQueueActivities(deps: ActivityDeps) {
  const wakeVideoWaiters = createVideoSlotWaker(deps);
  return {
    ...createLedgerActivities({ ...deps, wakeVideoWaiters }),
    ...createSlotActivities(deps),
    ...createReconcileActivities({ ...deps, wakeVideoWaiters }),
  };
}

/** Every activity the generation workflow calls, on either queue: what its proxies are typed with. */
export type GenerationActivities = ReturnType<typeof createWorkflowQueueActivities> &
  ReturnType<typeof createProviderActivities>;
