import type { PrepareCallback } from '../generation/types';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { BatchRates } from '../../core/batches/pricing';
import type { OutputStore } from '../../core/storage/output-store';
import type { LiveEvents } from '../generation/live-events';
import type { Serves } from '../generation/requests';
import { createBatchCancel } from './cancel';
import { createBatchCreation } from './create';
import { createBatchDelete } from './delete';
import { createFileService } from './files';
import type { FileLimits } from './files';
import { createBatchReads } from './read';
import { createBatchGateway } from './temporal-gateway';
import { createBatchWatch } from './watch';

export type { BatchView, LineParser, LineResult, LineGenerationView } from './types';
export type { FileLimits } from './files';

export interface BatchServiceDeps {
  pool: pg.Pool;
  client: Client;
  taskQueue: string;
  store: OutputStore;
  /** Per kind, a batch's price as a percentage of its lines' synchronous prices. */
  rates: BatchRates;
  fileLimits: FileLimits;
  /** How long `completion_window: "24h"` lasts; 24 h (tests shorten it). */
  completionWindowMs?: number;
  serves: Serves;
  live: Pick<LiveEvents, 'subscribe'>;
  log: (message: string, err: unknown) => void;
  /** Checks a callback URL named on a batch (service/webhooks/job-callbacks.ts); without it such a batch is refused. */
  prepareCallback?: PrepareCallback | undefined;
}

export const COMPLETION_WINDOW_MS = 24 * 3_600_000;

/**
 * The batch service behind every door that shows batches (group B's Batch API, group A, MCP and
 * the dashboard): files for batches (files.ts), making one (create.ts: read, price, hold, start),
 * reading and following them (read.ts, watch.ts), cancelling (cancel.ts) and deleting an ended one
 * (delete.ts). Two formats, one engine: OpenAI's (a file) and Anthropic's (inline). A line's body is read,
 * and its result answered, by the door that speaks its endpoint; money moves only through core/ledger.
 */
export function createBatchService(deps: BatchServiceDeps) {
  const { pool, store } = deps;
  const gateway = createBatchGateway({ client: deps.client, taskQueue: deps.taskQueue });
  const files = createFileService({ pool, store, limits: deps.fileLimits });
  const reads = createBatchReads({ pool, store });
  return {
    files,
    rates: deps.rates,
    create: createBatchCreation({
      pool,
      files,
      gateway,
      rates: deps.rates,
      serves: deps.serves,
      prepareCallback: deps.prepareCallback,
      completionWindowMs: deps.completionWindowMs ?? COMPLETION_WINDOW_MS,
      log: deps.log,
    }),
    get: reads.get,
    list: reads.list,
    /** The account's batch as its row (a door rendering its files). */
    own: reads.own,
    /** A finished batch's lines for its output or error file, page by page. */
    lines: reads.lines,
    cancel: createBatchCancel({ pool, gateway, own: reads.own, log: deps.log }),
    remove: createBatchDelete({ pool, own: reads.own }),
    watch: createBatchWatch({ live: deps.live, get: reads.get }),
  };
}

export type BatchService = ReturnType<typeof createBatchService>;
