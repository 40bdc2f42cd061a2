import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { Provider } from '../core/providers/types';
import type { OutputStore } from '../core/storage';
import { createLedgerActivities } from './ledger';
import { createProviderActivities } from './provider';
import { createReconcileActivities } from './reconcile';
import type { ReconcileDeps } from './reconcile';
import { createSlotActivities, createVideoSlotWaker } from './slots';

export interface ActivityDeps {
  pool: pg.Pool;
  provider: Provider;
  store: OutputStore;
  videoConcurrency: number;
  slotPollMs?: number;
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
