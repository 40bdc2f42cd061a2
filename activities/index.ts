import type pg from 'pg';
import type { Provider } from '../core/providers/types';
import type { OutputStore } from '../core/storage';
import { createLedgerActivities } from './ledger';
import { createProviderActivities } from './provider';
import { createSlotActivities } from './slots';

export interface ActivityDeps {
  pool: pg.Pool;
  provider: Provider;
  store: OutputStore;
  videoConcurrency: number;
  slotPollMs?: number;
}

/** Every activity the generation workflow uses, bound to real dependencies by the worker (or a test). */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createLedgerActivities(deps),
    ...createSlotActivities(deps),
    ...createProviderActivities(deps),
  };
}

export type GenerationActivities = ReturnType<typeof createActivities>;
