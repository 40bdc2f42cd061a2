import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { Provider } from '../core/providers/types';
import type { OutputStore } from '../core/storage/output-store';
import { createLedgerActivities } from './generation/ledger';
import { createProviderActivities } from './generation/provider';
import { createReconcileActivities } from './generation/reconcile';
import type { ReconcileDeps } from './generation/reconcile';
import { createSlotActivities, createVideoSlotWaker } from './generation/slots';

export interface ActivityDeps {
  pool: pg.Pool;
  provider: Provider;
  store: OutputStore;
  videoConcurrency: number;
  /** The reconciler asks Temporal about workflows. */
  client: Client;
  deadlines: ReconcileDeps['deadlines'];
}

/** Every activity the generation workflow uses, bound to real dependencies by the worker (or a test). */
export function createActivities(deps: ActivityDeps) {
  const wakeVideoWaiters = createVideoSlotWaker(deps);
  return {
    ...createLedgerActivities({ ...deps, wakeVideoWaiters }),
    ...createSlotActivities(deps),
    ...createProviderActivities(deps),
    ...createReconcileActivities({ ...deps, wakeVideoWaiters }),
  };
}

export type GenerationActivities = ReturnType<typeof createActivities>;
